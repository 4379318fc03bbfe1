-- pawl schema, PostgreSQL, version 8: signals and replace.
-- Shipped migrations are never edited: add V009__*.sql instead.
--
-- pawl_signals: a job enqueued with a signal key waits in `blocked` until
-- an operator (or a program) delivers a decision for the key, or until
-- timeout_at passes (then it fails). One row per such job.
--   state: 0 waiting, 1 delivered, 2 expired.
--   live: true while the row holds its key, NULL once it gave it up. A key
--     is unique among the rows that hold it, and a row holds it while its
--     job is live (pending, running, paused, blocked). The job's end paths
--     (finish, cancel) know nothing of signals, so a row whose job ended
--     gives the key up lazily: the next enqueue with the key releases it
--     first (flow.c: the signal's add), and an expiry releases it at
--     once. Two enqueues with one key at the same instant: the second
--     insert waits on the first's index entry, and once that commits it
--     finds the key taken (ON CONFLICT DO NOTHING inserts nothing).
CREATE TABLE pawl_signals (
  job_id       uuid PRIMARY KEY REFERENCES pawl_jobs (id) ON DELETE CASCADE,
  key          text NOT NULL,
  live         boolean,
  state        smallint NOT NULL DEFAULT 0 CHECK (state BETWEEN 0 AND 2),
  created_at   timestamptz NOT NULL,
  timeout_at   timestamptz,
  decision     text,
  payload      jsonb,
  delivered_at timestamptz,
  delivered_by text
);
CREATE UNIQUE INDEX pawl_signals_key ON pawl_signals (key) WHERE live;
CREATE INDEX pawl_signals_due ON pawl_signals (timeout_at)
  WHERE state = 0 AND timeout_at IS NOT NULL;

-- pawl_replacements: job old_id was replaced by job new_id (pawl replace):
-- old.superseded_by = new, new.supersedes = old. A job is replaced at most
-- once (the primary key), and a replacement replaces one job (unique).
CREATE TABLE pawl_replacements (
  old_id uuid PRIMARY KEY REFERENCES pawl_jobs (id) ON DELETE CASCADE,
  new_id uuid NOT NULL UNIQUE REFERENCES pawl_jobs (id) ON DELETE CASCADE,
  at     timestamptz NOT NULL,
  actor  text
);
