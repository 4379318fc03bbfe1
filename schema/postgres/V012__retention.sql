-- pawl schema, PostgreSQL, version 12: retention and archival (issue 16).
-- Shipped migrations are never edited: add V013__*.sql instead.
--
-- Retention (host/api/retention.c) deletes finished jobs that are old
-- enough, or, with `archive`, moves them here first: the job row (every
-- column of pawl_jobs, in its order, then archived_at), its attempts,
-- events and logs (every column of theirs, in their order). The move
-- inserts `j.*` of the deleted rows, so a migration that adds a column to
-- one of those tables adds it here too, at the same place (the contract
-- test "retention_archive" fails otherwise). Its other rows (steps,
-- exits, instances, signals, replacement links, recorded starts,
-- dependency edges) are deleted with it, not archived. No index of
-- finished jobs is added to pawl_jobs: the walk follows the primary key
-- (UUIDv7 ids are time ordered).
CREATE TABLE pawl_jobs_archive (LIKE pawl_jobs);
ALTER TABLE pawl_jobs_archive ADD COLUMN archived_at timestamptz;
CREATE INDEX pawl_jobs_archive_id ON pawl_jobs_archive (id);
CREATE TABLE pawl_attempts_archive (LIKE pawl_attempts);
CREATE INDEX pawl_attempts_archive_job ON pawl_attempts_archive (job_id);
CREATE TABLE pawl_events_archive (LIKE pawl_events);
CREATE INDEX pawl_events_archive_job ON pawl_events_archive (job_id);
CREATE TABLE pawl_logs_archive (LIKE pawl_logs);
CREATE INDEX pawl_logs_archive_job ON pawl_logs_archive (job_id);
