-- pawl schema, PostgreSQL, version 7: resource and rate limits.
-- Shipped migrations are never edited: add V008__*.sql instead.
--
-- A job may name a resource (pawl_enqueue_opts_t.resource, a script's
-- `resource = "smtp"`): NULL for none, which is nearly every job. The
-- claim (stores/postgres/limits.c) counts a resource's
-- permits from its running rows, so a permit is freed by whatever ends the
-- running state, lease recovery of a dead node's jobs included.
ALTER TABLE pawl_jobs ADD COLUMN resource text;

-- Running jobs by resource, for the claim's permit count, which runs
-- while the claimers of every node wait for the limit rows' locks.
-- Partial on resource IS NOT NULL: jobs without a resource (the common
-- path) cost no entry in it. Keys end in the id for the reason
-- pawl_jobs_running's do (V001). (SQLite has no such index: there a
-- claim holds the only write lock anyway, and the index's upkeep cost the
-- common path 4.6% of its instructions.)
CREATE INDEX pawl_jobs_resource_running ON pawl_jobs (resource, id)
  WHERE state = 1 AND resource IS NOT NULL;

-- One row per limit: `name` is a resource name, or "queue:" and a queue
-- name for a limit on every job of that queue.
--   max_running: at most this many of its jobs running at once (NULL: no
--     bound);
--   rate, rate_window_ms: at most `rate` starts per fixed window of
--     rate_window_ms, windows aligned to the epoch of the database clock
--     (NULL: no rate limit);
--   window_start, window_count: the window the last counted start fell
--     in (ms since the epoch), and how many starts it has had. A claim in a
--     later window starts counting again; a claim whose clock is behind
--     window_start takes nothing under this limit (so no window ever counts
--     more than `rate` starts, whatever the clocks of the claimers).
-- Claimers lock the rows they count under (FOR UPDATE) for the length of
-- their claim transaction: see stores/postgres/limits.c for why that is
-- enough.
CREATE TABLE pawl_limits (
  name            text PRIMARY KEY,
  max_running     bigint CHECK (max_running > 0),
  rate            bigint CHECK (rate > 0),
  rate_window_ms  bigint CHECK (rate_window_ms > 0),
  window_start    bigint NOT NULL DEFAULT 0,
  window_count    bigint NOT NULL DEFAULT 0,
  updated_at      timestamptz NOT NULL,
  CHECK (max_running IS NOT NULL OR rate IS NOT NULL),
  CHECK ((rate IS NULL) = (rate_window_ms IS NULL))
);
