-- pawl schema, SQLite, version 12: restartable steps, checkpoints and job
-- instances.
-- Shipped migrations are never edited: add V013__*.sql instead.
--
-- Nothing here is read or written by the claim or the finish: a job
-- without steps, exit code or identity costs what it cost before.

-- One row per execution of a step of a script's `steps`: written by the
-- worker running the attempt (begin, checkpoints, end), each write
-- guarded by the attempt's lease (the job running, same lease token and
-- attempt), so a node that lost the job cannot write over its successor.
-- A later attempt skips the steps with a completed row and starts the
-- first other one with the checkpoint of that step's latest row.
-- status: 0 running, 1 completed, 2 failed, 3 stopped (snoozed, released
-- at a stop); a row left running by an attempt that never came back (its
-- node died) is marked failed when the next attempt begins a step.
-- Counters: what ctx:count added in this execution.
CREATE TABLE pawl_steps (
  seq           INTEGER PRIMARY KEY,
  job_id        BLOB NOT NULL REFERENCES pawl_jobs (id) ON DELETE CASCADE,
  attempt       INTEGER NOT NULL,
  idx           INTEGER NOT NULL,
  name          TEXT NOT NULL,
  status        INTEGER NOT NULL,
  started_at    INTEGER NOT NULL,
  ended_at      INTEGER,
  exit_code     TEXT,
  exit_message  TEXT,
  read_count    INTEGER NOT NULL DEFAULT 0,
  write_count   INTEGER NOT NULL DEFAULT 0,
  filter_count  INTEGER NOT NULL DEFAULT 0,
  skip_count    INTEGER NOT NULL DEFAULT 0,
  commit_count  INTEGER NOT NULL DEFAULT 0,
  rollback_count INTEGER NOT NULL DEFAULT 0,
  checkpoint    TEXT,
  checkpoint_at INTEGER
);
CREATE INDEX pawl_steps_job ON pawl_steps (job_id, seq);

-- The exit code and message job code set with ctx:exit (the last one).
CREATE TABLE pawl_job_exits (
  job_id       BLOB PRIMARY KEY REFERENCES pawl_jobs (id) ON DELETE CASCADE,
  exit_code    TEXT NOT NULL,
  exit_message TEXT,
  at           INTEGER NOT NULL
);

-- Job instances: the job of each (type, identifying values) whose script
-- declares `identity`. key is the JSON object of the identifying payload
-- fields (host/api/steps.c builds it). A canceled or deleted job gives its
-- instance up: the next enqueue of it makes a new job and takes the row.
CREATE TABLE pawl_instances (
  type       TEXT NOT NULL,
  key        TEXT NOT NULL,
  job_id     BLOB NOT NULL REFERENCES pawl_jobs (id) ON DELETE CASCADE,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (type, key)
);
CREATE INDEX pawl_instances_job ON pawl_instances (job_id);
