-- pawl schema, SQLite, version 15: retention and archival.
-- Shipped migrations are never edited: add V016__*.sql instead.
--
-- Retention (host/api/retention.c) deletes finished jobs that are old
-- enough, or, with `archive`, moves them here first: the job row
-- (archived_at, then every column of pawl_jobs in its order), its attempts,
-- events and logs (every column of theirs, in their order). The move copies
-- the rows whole (`SELECT *`), so a migration that adds a column to one of
-- those tables adds it to its archive too, at the end as ADD COLUMN does on
-- both (the test store_sqlite_ret_archive, spec/unit/test_retention.c, fails
-- otherwise). The job's other rows (steps, exits, instances, signals,
-- replacement links, recorded starts, dependency edges) are deleted with it,
-- not archived. No index of finished jobs is added to pawl_jobs: the walk
-- follows seq (insert order).
CREATE TABLE pawl_jobs_archive AS
  SELECT CAST(NULL AS INTEGER) AS archived_at, * FROM pawl_jobs WHERE 0;
CREATE INDEX pawl_jobs_archive_id ON pawl_jobs_archive (id);
CREATE TABLE pawl_attempts_archive AS SELECT * FROM pawl_attempts WHERE 0;
CREATE INDEX pawl_attempts_archive_job ON pawl_attempts_archive (job_id);
CREATE TABLE pawl_events_archive AS SELECT * FROM pawl_events WHERE 0;
CREATE INDEX pawl_events_archive_job ON pawl_events_archive (job_id);
CREATE TABLE pawl_logs_archive AS SELECT * FROM pawl_logs WHERE 0;
CREATE INDEX pawl_logs_archive_job ON pawl_logs_archive (job_id);
