-- pawl schema, SQLite, version 5: recurring definitions (cron).
-- Shipped migrations are never edited: add V006__*.sql instead.
--
-- One row per definition: its cron expression and zone, what a missed
-- occurrence does (misfire: run_once, catch_up up to catch_up_limit, skip),
-- the job each occurrence enqueues (type, payload, queue, priority,
-- max_attempts and timeout_s, 0 meaning the script's), where it came from
-- (source 'script' with the script's name, or 'operator'), and its
-- schedule: next_fire_at (NULL: never again), last_fire_at, last_job_id.
-- Times are milliseconds since the epoch, as in pawl_jobs.
-- enabled = 0: a script-born definition whose script is gone (kept, not
-- firing); paused = 1: an operator paused it.
-- version: bumped by every change; changes are compare-and-sets on it, and
-- a tick's advance a compare-and-set on next_fire_at.
CREATE TABLE pawl_recurring (
  name           TEXT PRIMARY KEY,
  expr           TEXT NOT NULL,
  tz             TEXT NOT NULL DEFAULT 'UTC',
  misfire        TEXT NOT NULL DEFAULT 'run_once'
                   CHECK (misfire IN ('run_once', 'catch_up', 'skip')),
  catch_up_limit INTEGER NOT NULL DEFAULT 10,
  type           TEXT NOT NULL,
  payload        TEXT NOT NULL DEFAULT '{}',
  queue          TEXT,
  priority       INTEGER NOT NULL DEFAULT 0,
  max_attempts   INTEGER NOT NULL DEFAULT 0,
  timeout_s      INTEGER NOT NULL DEFAULT 0,
  enabled        INTEGER NOT NULL DEFAULT 1,
  paused         INTEGER NOT NULL DEFAULT 0,
  source         TEXT NOT NULL CHECK (source IN ('script', 'operator')),
  script         TEXT,
  next_fire_at   INTEGER,
  last_fire_at   INTEGER,
  last_job_id    BLOB,
  created_at     INTEGER NOT NULL,
  updated_at     INTEGER NOT NULL,
  version        INTEGER NOT NULL DEFAULT 1
) WITHOUT ROWID;

-- What a tick reads: the due definitions, earliest first, through this
-- partial index (only those that can fire are in it), in bounded batches.
CREATE INDEX pawl_recurring_due ON pawl_recurring (next_fire_at)
  WHERE enabled = 1 AND paused = 0 AND next_fire_at IS NOT NULL;
