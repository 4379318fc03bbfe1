-- pawl schema, SQLite, version 4: what the admin console's statistics read.
-- Shipped migrations are never edited: add V005__*.sql instead.
--
-- Every row that has left the live queue (succeeded, failed, canceled,
-- paused, blocked), by state, queue and finish time. Claims never touch it
-- (pending and running rows are not in it); a finish adds one entry, as a
-- manual retry or a resume removes one. It serves:
--   * throughput: jobs finished in the last 1/5/15 minutes, one range per
--     (state, queue) on finished_at, whose cost grows with the jobs finished
--     in the window, never with the history kept;
--   * counts by state and queue of the rows above, read from this index
--     alone (its entries are a fraction of the table's rows' size);
--   * bulk actions and listings of paused and blocked jobs.
-- Queries must repeat "state >= 2" literally: SQLite uses a partial index
-- only for a query whose WHERE clause contains the index's own term.
CREATE INDEX pawl_jobs_done ON pawl_jobs (state, queue, finished_at)
  WHERE state >= 2;
