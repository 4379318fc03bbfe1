-- pawl schema, PostgreSQL, version 4: recurring definitions
-- (cron). Shipped migrations are never edited: add V005__*.sql instead.
--
-- One row per definition: its cron expression and zone, what a missed
-- occurrence does (misfire: run_once, catch_up up to catch_up_limit, skip),
-- the job each occurrence enqueues (type, payload, queue, priority,
-- max_attempts and timeout_s, 0 meaning the script's), where it came from
-- (source 'script' with the script's name, or 'operator'), and its
-- schedule: next_fire_at (NULL: never again), last_fire_at, last_job_id.
-- enabled = false: a script-born definition whose script is gone (kept,
-- not firing); paused = true: an operator paused it.
-- version: bumped by every change; changes are compare-and-sets on it, and
-- a tick's advance a compare-and-set on next_fire_at.
CREATE TABLE pawl_recurring (
  name           text PRIMARY KEY,
  expr           text NOT NULL,
  tz             text NOT NULL DEFAULT 'UTC',
  misfire        text NOT NULL DEFAULT 'run_once'
                   CHECK (misfire IN ('run_once', 'catch_up', 'skip')),
  catch_up_limit integer NOT NULL DEFAULT 10,
  type           text NOT NULL,
  payload        text NOT NULL DEFAULT '{}',  -- as given (checked JSON)
  queue          text,
  priority       integer NOT NULL DEFAULT 0,
  max_attempts   integer NOT NULL DEFAULT 0,
  timeout_s      integer NOT NULL DEFAULT 0,
  enabled        boolean NOT NULL DEFAULT true,
  paused         boolean NOT NULL DEFAULT false,
  source         text NOT NULL CHECK (source IN ('script', 'operator')),
  script         text,
  next_fire_at   timestamptz,
  last_fire_at   timestamptz,
  last_job_id    uuid,
  created_at     timestamptz NOT NULL,
  updated_at     timestamptz NOT NULL,
  version        bigint NOT NULL DEFAULT 1
);

-- What a tick reads: the due definitions, earliest first, through this
-- partial index (only those that can fire are in it), in bounded batches.
CREATE INDEX pawl_recurring_due ON pawl_recurring (next_fire_at)
  WHERE enabled AND NOT paused AND next_fire_at IS NOT NULL;
