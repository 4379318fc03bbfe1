-- pawl schema, SQLite, version 4: what the admin console's statistics
-- read.
-- Shipped migrations are never edited: add V005__*.sql instead.
--
-- Throughput: how many jobs finished (succeeded, failed, canceled) in each
-- minute of the store's clock (minute = milliseconds / 60000), by state and
-- queue. The finish path adds its batch's counts, one UPSERT per distinct
-- state and queue of the batch, in the transaction that finishes the jobs;
-- recovery into failed and the operator's cancel and expire add theirs the
-- same way. Buckets older than 30 minutes are deleted by the next writer
-- that sees the minute change, so the table holds a few rows per queue.
-- It replaces an index of finished rows (state, queue, finished_at),
-- which cost every finished job an index entry (13% of the instructions of
-- claim + complete; bench/RESULTS.md). The counts by state of finished jobs
-- are read from the table itself (exact, one pass).
CREATE TABLE pawl_throughput (
  minute INTEGER NOT NULL,
  state  INTEGER NOT NULL,
  queue  TEXT NOT NULL,
  count  INTEGER NOT NULL,
  PRIMARY KEY (minute, state, queue)
) WITHOUT ROWID;
