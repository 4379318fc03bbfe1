-- pawl schema, PostgreSQL, version 6: per-key ordering.
-- Shipped migrations are never edited: add V007__*.sql instead.
--
-- ordering_key: jobs with the same key run one at a time, in enqueue order,
-- across every node; NULL (nearly every job) for none.
-- ordering_seq: the enqueue order among jobs with a key, from a sequence
-- (ids are UUIDv7s, ordered by each node's clock: not an order across
-- nodes). Two enqueues on different connections that overlap in time may
-- take their numbers in either order; one that commits before the other
-- starts is always earlier.
-- ordering_skip: true while the job waits for a retry that its type's
-- `ordering = "skip_failed"` lets later jobs pass: it does not hold its
-- place until its retry is due. Set by every requeue (retry: the type's
-- choice; snooze, release: false); a recovery keeps it.
-- None has a default that needs a rewrite of the table.
ALTER TABLE pawl_jobs ADD COLUMN ordering_key text,
  ADD COLUMN ordering_seq bigint,
  ADD COLUMN ordering_skip boolean NOT NULL DEFAULT false;
CREATE SEQUENCE pawl_ordering_seq;

-- Live jobs with a key waiting in line, in enqueue order; and the running
-- ones. Jobs without a key are in neither. Each key ends in a unique
-- column, so that no two entries are equal (see pawl_jobs_running in
-- V001__init.sql: B-tree deduplication would keep dead entries alive).
CREATE INDEX pawl_jobs_ordering ON pawl_jobs (ordering_key, ordering_seq)
  WHERE ordering_key IS NOT NULL AND state IN (0, 5, 6);
CREATE INDEX pawl_jobs_ordering_running ON pawl_jobs (ordering_key, id)
  WHERE ordering_key IS NOT NULL AND state = 1;

-- May the pending job `seq` with key `k` start now (`now`)? Called by the
-- claim (pg_sql.h, PG_SQL_ORDERING_FREE) for each candidate with a key.
-- Yes when no job with the key is running and no job with the key
-- enqueued before it (lower ordering_seq) still holds its place in line:
-- pending, blocked, or paused from pending (paused from failed is dead),
-- unless it waits out a retry its type lets later jobs pass (ordering_skip,
-- until it is due). At most one job per key passes at a time: of two that
-- would, the earlier is pending and due and holds its place against the
-- later, so one claim never takes two jobs of a key.
--
-- Why this holds with several nodes claiming at once (READ COMMITTED,
-- FOR UPDATE SKIP LOCKED): the claim statement's own snapshot is taken
-- when it starts, and may predate another node's claim of a job of the
-- same key that has committed since; SKIP LOCKED only keeps two claims
-- off the same row, not off two rows of one key. So the test does not
-- use the claim's snapshot:
--  1. It first takes a transaction-level advisory lock on the key's hash
--     (try: a node that finds the key being claimed by another skips its
--     jobs this time, as SKIP LOCKED skips rows, instead of waiting). The
--     claim is one statement in its own transaction, so the lock is held
--     until the claim's update of the jobs it took has committed.
--  2. Then it reads the key's jobs in a query of its own. The function is
--     VOLATILE, so in READ COMMITTED each query in it takes a new
--     snapshot, taken after the lock was granted: it sees every claim of
--     the key that held the lock before, committed (running), and every
--     finish committed by then.
-- So two claims that start jobs of one key hold the key's lock one after
-- the other, and the second sees the first's job running and takes none.
-- A finish, a recovery or an operator action that frees the key needs no
-- lock: a claim that misses it (its snapshot is older) only takes the
-- next job later. A hash collision of two keys only makes them wait for
-- each other's claims. The lock's first key (0x7061776c, "pawl") keeps it
-- apart from the program's own advisory locks on one-key ids; the second
-- hashes the schema with the key, because advisory locks belong to the
-- whole database: two pawl schemas in one database (two installations,
-- or tests side by side) must not make each other's keys wait.
CREATE FUNCTION pawl_ordering_free(k text, seq bigint, now timestamptz)
  RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  IF NOT pg_try_advisory_xact_lock(1885435756,
                                   hashtext(current_schema() || chr(31) || k)) THEN
    RETURN false;
  END IF;
  RETURN NOT EXISTS (SELECT 1 FROM pawl_jobs AS o
                     WHERE o.ordering_key = k AND o.state = 1)
     AND NOT EXISTS (SELECT 1 FROM pawl_jobs AS o
                     WHERE o.ordering_key = k AND o.state IN (0, 5, 6)
                       AND o.ordering_seq < seq
                       AND NOT (o.state = 5 AND o.paused_from = 3)
                       AND (NOT o.ordering_skip
                            OR (o.state = 0 AND o.run_at <= now)));
END
$$;
