-- pawl schema, PostgreSQL, version 11: restartable steps, checkpoints and
-- job instances.
-- Shipped migrations are never edited: add V012__*.sql instead.
--
-- Nothing here is read or written by the claim or the finish: a job
-- without steps, exit code or identity costs what it cost before. See
-- schema/sqlite/V012__steps.sql for what each table holds.

-- One row per execution of a step (status: 0 running, 1 completed,
-- 2 failed, 3 stopped). Every write is guarded by the attempt's lease.
CREATE TABLE pawl_steps (
  seq            bigserial PRIMARY KEY,
  job_id         uuid NOT NULL REFERENCES pawl_jobs (id) ON DELETE CASCADE,
  attempt        integer NOT NULL,
  idx            integer NOT NULL,
  name           text NOT NULL,
  status         smallint NOT NULL CHECK (status BETWEEN 0 AND 3),
  started_at     timestamptz NOT NULL,
  ended_at       timestamptz,
  exit_code      text,
  exit_message   text,
  read_count     bigint NOT NULL DEFAULT 0,
  write_count    bigint NOT NULL DEFAULT 0,
  filter_count   bigint NOT NULL DEFAULT 0,
  skip_count     bigint NOT NULL DEFAULT 0,
  commit_count   bigint NOT NULL DEFAULT 0,
  rollback_count bigint NOT NULL DEFAULT 0,
  checkpoint     jsonb,
  checkpoint_at  timestamptz
);
CREATE INDEX pawl_steps_job ON pawl_steps (job_id, seq);

CREATE TABLE pawl_job_exits (
  job_id       uuid PRIMARY KEY REFERENCES pawl_jobs (id) ON DELETE CASCADE,
  exit_code    text NOT NULL,
  exit_message text,
  at           timestamptz NOT NULL
);

-- Job instances. Two enqueues of one instance on different nodes meet on
-- the primary key: the second waits for the first's transaction, then
-- finds its row (INSERT ... ON CONFLICT in stores/postgres/steps.c).
CREATE TABLE pawl_instances (
  type       text NOT NULL,
  key        text NOT NULL,
  job_id     uuid NOT NULL REFERENCES pawl_jobs (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL,
  PRIMARY KEY (type, key)
);
CREATE INDEX pawl_instances_job ON pawl_instances (job_id);
