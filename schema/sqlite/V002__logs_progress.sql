-- pawl schema, SQLite, version 2: progress of running attempts, and the log
-- lines job code writes (ctx:log).
-- Shipped migrations are never edited: add V003__*.sql instead.

-- The last ctx:progress(done, total) of the current (or last) attempt; NULL
-- until the attempt reports. A claim clears them: progress belongs to an
-- attempt.
ALTER TABLE pawl_jobs ADD COLUMN progress_done REAL;
ALTER TABLE pawl_jobs ADD COLUMN progress_total REAL;

-- Log lines, written with the attempt's outcome in the finish transaction
-- (also when the outcome itself came too late to count). Read per job, in
-- the order they were written: the index on job_id holds the rowid (seq),
-- so it also gives that order without a sort.
CREATE TABLE pawl_logs (
  seq     INTEGER PRIMARY KEY,
  job_id  BLOB NOT NULL REFERENCES pawl_jobs (id) ON DELETE CASCADE,
  attempt INTEGER NOT NULL,
  at      INTEGER NOT NULL,
  level   TEXT NOT NULL,
  message TEXT NOT NULL,
  fields  TEXT
);
CREATE INDEX pawl_logs_job ON pawl_logs (job_id);

-- No index for the next due time (pawl_next_due): min(run_at) reads the
-- pending rows through pawl_jobs_claim (every queue) or the queue prefix of
-- pawl_jobs_claim_queue, never the finished history. A partial index on
-- (run_at) or (queue, run_at) would make it one tree descent, but measured
-- here it cost about 6-12% CPU on enqueue and 4-10% on claim+finish, paid
-- for every job, while the scan costs ~13 ms per 100,000 pending jobs and is
-- paid only by an idle poller.

-- The readable view, with the progress columns.
DROP VIEW pawl_jobs_v;
CREATE VIEW pawl_jobs_v AS
SELECT
  lower(substr(hex(id), 1, 8) || '-' || substr(hex(id), 9, 4) || '-' ||
        substr(hex(id), 13, 4) || '-' || substr(hex(id), 17, 4) || '-' ||
        substr(hex(id), 21, 12)) AS id,
  type,
  queue,
  CASE state WHEN 0 THEN 'pending' WHEN 1 THEN 'running'
             WHEN 2 THEN 'succeeded' WHEN 3 THEN 'failed'
             WHEN 4 THEN 'canceled' WHEN 5 THEN 'paused'
             WHEN 6 THEN 'blocked' END AS state,
  priority,
  payload,
  params,
  tags,
  strftime('%Y-%m-%dT%H:%M:%fZ', run_at / 1000.0, 'unixepoch') AS run_at,
  attempt,
  max_attempts,
  timeout_s,
  idempotency_key,
  business_key,
  correlation_id,
  enqueued_by,
  strftime('%Y-%m-%dT%H:%M:%fZ', created_at / 1000.0, 'unixepoch')
    AS created_at,
  strftime('%Y-%m-%dT%H:%M:%fZ', updated_at / 1000.0, 'unixepoch')
    AS updated_at,
  strftime('%Y-%m-%dT%H:%M:%fZ', started_at / 1000.0, 'unixepoch')
    AS started_at,
  strftime('%Y-%m-%dT%H:%M:%fZ', finished_at / 1000.0, 'unixepoch')
    AS finished_at,
  lease_owner,
  strftime('%Y-%m-%dT%H:%M:%fZ', lease_expires / 1000.0, 'unixepoch')
    AS lease_expires,
  last_error,
  result,
  recoveries,
  progress_done,
  progress_total,
  version
FROM pawl_jobs;
