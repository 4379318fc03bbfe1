-- pawl schema, SQLite, version 9: signals and replace.
-- Shipped migrations are never edited: add V010__*.sql instead.
--
-- pawl_signals: a job enqueued with a signal key waits in `blocked` until
-- an operator (or a program) delivers a decision for the key, or until
-- timeout_at passes (then it fails). One row per such job.
--   state: 0 waiting, 1 delivered, 2 expired.
--   live: 1 while the row holds its key, NULL once it gave it up. A key is
--     unique among the rows that hold it, and a row holds it while its job
--     is live (pending, running, paused, blocked). The job's end paths
--     (finish, cancel) know nothing of signals, so a row whose job ended
--     gives the key up lazily: the next enqueue with the key releases it
--     first (stores/*: the signal's add), and an expiry releases it at
--     once. A key therefore names at most one live job.
CREATE TABLE pawl_signals (
  job_id       BLOB PRIMARY KEY REFERENCES pawl_jobs (id) ON DELETE CASCADE,
  key          TEXT NOT NULL,
  live         INTEGER,
  state        INTEGER NOT NULL DEFAULT 0 CHECK (state BETWEEN 0 AND 2),
  created_at   INTEGER NOT NULL,
  timeout_at   INTEGER,
  decision     TEXT,
  payload      TEXT,
  delivered_at INTEGER,
  delivered_by TEXT
) WITHOUT ROWID;
CREATE UNIQUE INDEX pawl_signals_key ON pawl_signals (key) WHERE live = 1;
-- The sweep's question: which waits have run out? (Waiting rows with a
-- timeout only.)
CREATE INDEX pawl_signals_due ON pawl_signals (timeout_at)
  WHERE state = 0 AND timeout_at IS NOT NULL;

-- pawl_replacements: job old_id was replaced by job new_id (pawl replace):
-- old.superseded_by = new, new.supersedes = old. A job is replaced at most
-- once (the primary key), and a replacement replaces one job (unique).
CREATE TABLE pawl_replacements (
  old_id BLOB PRIMARY KEY REFERENCES pawl_jobs (id) ON DELETE CASCADE,
  new_id BLOB NOT NULL UNIQUE REFERENCES pawl_jobs (id) ON DELETE CASCADE,
  at     INTEGER NOT NULL,
  actor  TEXT
) WITHOUT ROWID;
