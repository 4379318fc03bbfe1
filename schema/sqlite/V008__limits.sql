-- pawl schema, SQLite, version 8: resource and rate limits.
-- Shipped migrations are never edited: add V009__*.sql instead.
--
-- A job may name a resource (pawl_enqueue_opts_t.resource, a script's
-- `resource = "smtp"`): NULL for none, which is nearly every job. The
-- claim (stores/sqlite/limits.c) counts a resource's
-- permits from its running rows, so a permit is freed by whatever ends the
-- running state, lease recovery of a dead node's jobs included.
ALTER TABLE pawl_jobs ADD COLUMN resource TEXT;

-- No index on resource: the claim counts a limit's permits on the
-- running rows (pawl_jobs_running, a few per worker), and next_due() looks
-- at the pending ones only when a rate window is used up. Two partial
-- indexes (running, pending by resource) cost 4.6% more instructions on
-- claim + complete of jobs without a resource (SQLite evaluates a partial
-- index's WHERE for every row whose state changes; bench/RESULTS.md), for
-- nothing a limit-free database needs.

-- One row per limit: `name` is a resource name, or "queue:" and a queue
-- name for a limit on every job of that queue.
--   max_running: at most this many of its jobs running at once (NULL: no
--     bound);
--   rate, rate_window_ms: at most `rate` starts per fixed window of
--     rate_window_ms, windows aligned to the epoch of the store's clock
--     (NULL: no rate limit);
--   window_start, window_count: the window the last counted start fell
--     in, and how many starts it has had. A claim in a later window starts
--     counting again; a claim whose clock is behind window_start takes
--     nothing under this limit (so no window ever counts more than `rate`
--     starts, whatever the clocks of the claimers).
CREATE TABLE pawl_limits (
  name            TEXT PRIMARY KEY,
  max_running     INTEGER CHECK (max_running > 0),
  rate            INTEGER CHECK (rate > 0),
  rate_window_ms  INTEGER CHECK (rate_window_ms > 0),
  window_start    INTEGER NOT NULL DEFAULT 0,
  window_count    INTEGER NOT NULL DEFAULT 0,
  updated_at      INTEGER NOT NULL,
  CHECK (max_running IS NOT NULL OR rate IS NOT NULL),
  CHECK ((rate IS NULL) = (rate_window_ms IS NULL))
) WITHOUT ROWID;
