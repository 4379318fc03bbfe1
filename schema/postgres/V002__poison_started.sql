-- pawl schema, PostgreSQL, version 2: which lost attempts count towards the
-- poison-job limit.
-- Shipped migrations are never edited: add V003__*.sql instead.
--
-- A node that dies takes the jobs it had claimed with it: the one it was
-- running, and others it had claimed ahead (prefetched) and never started.
-- Only a job that was running can be the poison that killed it, so only
-- the loss of an attempt known to have started counts towards the poison
-- limit (every loss still uses up its attempt: attempt numbers only go up).
-- Recording every start would cost a write per job; a start is recorded
-- only for a job that has been recovered before (rare): by its worker just
-- before it runs (pawl_begin()), or by pawl_claim() for a claimer that
-- runs what it claims. A job's first loss is therefore never counted, and
-- a poison job is caught one run later.
--
-- The record lives in a table of its own, so that the rows of pawl_jobs,
-- rewritten by every claim and every finish, do not grow:
--   version: pawl_jobs.version when the attempt was recorded as started;
--     every later change of the job bumps its version, so an old record
--     never matches a new attempt;
--   crashes: losses of attempts known to have started (the poison limit
--     counts these; pawl_jobs.recoveries counts every loss).
-- A manual retry of the job deletes its row: a clean slate.
CREATE TABLE pawl_started (
  job_id  uuid PRIMARY KEY REFERENCES pawl_jobs (id) ON DELETE CASCADE,
  version bigint NOT NULL,
  crashes integer NOT NULL DEFAULT 0
);
