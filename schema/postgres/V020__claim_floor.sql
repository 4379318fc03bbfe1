-- pawl schema, PostgreSQL, version 20: wakeups that say how far back a
-- claim must look.
-- Shipped migrations are never edited: add V021__*.sql instead.
--
-- A claim walks the index of claimable rows (pawl_jobs_ready and
-- pawl_jobs_ready_queue) in claim order: rank descending. The rows it
-- took stay in that index, dead, until vacuum removes them, and vacuum
-- cannot while some transaction anywhere still might see them (a
-- forgotten BEGIN, a long report, a replication slot). A claim that
-- starts at the index's head then walks every job taken since that
-- transaction began: at thousands of jobs a second, a claim of a
-- millisecond took 400 ms after a few minutes.
--
-- So a node's claims start at a floor instead: the rank of the last row
-- its previous claim took (stores/postgres/claim.c, "floors"). The rows
-- before it were taken, or passed over because another node was taking
-- them. A row that becomes claimable later with a rank above a floor must
-- send it back: every statement that makes a row claimable sends the
-- highest rank it made claimable as its wakeup's payload, and each node's
-- listener lowers its floors to it (NOTIFY is delivered at commit, so the
-- row is there for every claim that starts after). A row with a higher
-- rank than the jobs claimed before it: a higher priority, a run time in
-- the past, a job handed back that keeps its place, a retry or a delayed
-- job that came due, a key's next job, a job whose parents ended, a
-- resumed job, a transaction that enqueued and committed late.
--
-- Inserts: the statement trigger reads the rows it inserted (a transition
-- table) for their highest rank, once per statement, as before it sent
-- one NOTIFY per statement. A row inserted held (by time, by its key) or
-- blocked is not claimable yet: its own change later says so.
CREATE OR REPLACE FUNCTION pawl_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('pawl_jobs:' || TG_TABLE_SCHEMA,
                    coalesce((SELECT max(rank) FROM pawl_inserted
                              WHERE state = 0 AND NOT ordering_held
                                AND NOT time_held)::text, ''));
  RETURN NULL;
END
$$;
DROP TRIGGER pawl_jobs_notify ON pawl_jobs;
CREATE TRIGGER pawl_jobs_notify AFTER INSERT ON pawl_jobs
  REFERENCING NEW TABLE AS pawl_inserted
  FOR EACH STATEMENT EXECUTE FUNCTION pawl_notify();

-- Updates: a row that becomes claimable, or whose rank rises while it is
-- (an age boost changed), sends its rank. WHEN is tested by the executor
-- itself: a claim, a heartbeat or a finish (their rows are not claimable
-- afterwards) never calls the function. Two rows of one rank in one
-- transaction make one notification: PostgreSQL folds identical ones.
CREATE FUNCTION pawl_floor_wake() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('pawl_jobs:' || TG_TABLE_SCHEMA, NEW.rank::text);
  RETURN NULL;
END
$$;
CREATE TRIGGER pawl_jobs_floor_wake AFTER UPDATE ON pawl_jobs FOR EACH ROW
  WHEN (NEW.state = 0 AND NOT NEW.ordering_held AND NOT NEW.time_held
        AND (OLD.state <> 0 OR OLD.ordering_held OR OLD.time_held
             OR NEW.rank > OLD.rank))
  EXECUTE FUNCTION pawl_floor_wake();

-- A queue resumed: its rows, passed by while it was paused, become
-- claimable without a change of their own. Every floor goes back to the
-- top ("*"), once per resume.
CREATE FUNCTION pawl_queue_wake() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('pawl_jobs:' || TG_TABLE_SCHEMA, '*');
  RETURN NULL;
END
$$;
CREATE TRIGGER pawl_queues_resume_wake AFTER UPDATE OF paused ON pawl_queues
  FOR EACH ROW WHEN (OLD.paused AND NOT NEW.paused)
  EXECUTE FUNCTION pawl_queue_wake();
CREATE TRIGGER pawl_queues_delete_wake AFTER DELETE ON pawl_queues
  FOR EACH ROW WHEN (OLD.paused) EXECUTE FUNCTION pawl_queue_wake();
