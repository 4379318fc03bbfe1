-- pawl schema, PostgreSQL, version 3: what the admin console's statistics
-- read.
-- Shipped migrations are never edited: add V004__*.sql instead.
--
-- Throughput: how many jobs finished (succeeded, failed, canceled) in each
-- minute (pawl_ms(pawl_now()) / 60000), by state and queue. The finish
-- path adds its batch's counts (one UPSERT per distinct state and queue,
-- inside the statement that finishes the batch), as do recovery into
-- failed and the operator's cancel and expire, in their transactions.
-- Buckets older than 30 minutes are deleted by the next writer that sees
-- the minute change.
-- `writer` is the connection's backend pid: each connection adds to rows
-- of its own, so that nodes finishing jobs of one queue at the same time
-- never wait for each other's row lock until commit (the statistics add
-- the writers up). It replaces an index of finished rows (state, queue,
-- finished_at), which cost every finished job an index entry.
-- fillfactor 50: the counts are updated in place (HOT) between vacuums.
CREATE TABLE pawl_throughput (
  minute bigint NOT NULL,
  state  smallint NOT NULL,
  queue  text NOT NULL,
  writer integer NOT NULL DEFAULT pg_backend_pid(),
  count  bigint NOT NULL,
  PRIMARY KEY (minute, state, queue, writer)
) WITH (fillfactor = 50);
