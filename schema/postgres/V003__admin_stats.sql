-- pawl schema, PostgreSQL, version 3: what the admin console's statistics
-- read.
-- Shipped migrations are never edited: add V004__*.sql instead.
--
-- Every row that has left the live queue (succeeded, failed, canceled,
-- paused, blocked), by state, queue and finish time. Claims never touch it
-- (pending and running rows are not in it); a finish adds one entry. It
-- serves throughput (jobs finished in the last 1/5/15 minutes: one range
-- per state and queue on finished_at, whose cost grows with the jobs
-- finished in the window, never with the history kept), and the counts by
-- state and queue of these rows (an index-only scan).
CREATE INDEX pawl_jobs_done ON pawl_jobs (state, queue, finished_at)
  WHERE state >= 2;
