-- pawl schema, PostgreSQL, version 17: claims that do not walk the jobs
-- that cannot run now (docs/design: "the live queue stays small and fast").
-- Shipped migrations are never edited: add V018__*.sql instead.
--
-- The claim walks an index of pending rows in claim order. Before this
-- version that index held every pending row, and the claim filtered out,
-- one by one and on every claim, the rows waiting behind their ordering
-- key (a call of pawl_ordering_free() each) and the rows due later (a
-- high-priority job due tomorrow sorts before today's jobs). Those rows now
-- carry a hold of their own and stay out of the claim's indexes:
--
-- ordering_held: true on a pending row with an ordering key that cannot be
--   the next of its key: a job of the key runs, or a job enqueued before it
--   keeps its place in line (pending, blocked, or paused from pending, and
--   not waiting out a retry that ordering = "skip_failed" lets later jobs
--   pass). False on every other row. The flag only narrows what the claim
--   looks at: pawl_ordering_free() (V006) still decides, under the key's
--   advisory lock, whether an unheld row may start, so a flag that is late
--   to rise costs a look, never a second job of a key at once.
-- time_held: true on a row whose run_at was in the future (by the database
--   clock) when it was written; the claim's first step clears it once the
--   row is due (pawl_claim_prepare()). A false flag on a row not yet due is
--   harmless: the claim tests run_at too.
ALTER TABLE pawl_jobs ADD COLUMN ordering_held boolean NOT NULL DEFAULT false,
  ADD COLUMN time_held boolean NOT NULL DEFAULT false;
ALTER TABLE pawl_jobs_archive ADD COLUMN ordering_held boolean,
  ADD COLUMN time_held boolean;

-- Keys whose line changed since the claim last looked: a job of the key was
-- enqueued, finished, retried, recovered, paused, resumed, canceled,
-- released by its dependencies, deleted... (any change of state, of
-- ordering_skip or paused_from, except the claim's own pending -> running,
-- which holds nothing new: the rows behind the job it took were held
-- already). Written by a trigger, read and emptied by pawl_claim_prepare().
-- An append-only log, not one row per key: a writer never waits for
-- another writer here, whatever keys and in whatever order two
-- transactions touch (a unique key would make two enqueuers of keys a, b
-- and b, a wait for each other in a circle).
CREATE TABLE pawl_key_dirty (
  seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  key text NOT NULL
);

-- An enqueue (the row comes in held: PG_SQL_INSERT) is logged only when
-- it may be its key's head. It is not when, under the key's settle lock
-- (tried, never waited for: two enqueuers of keys a, b and b, a must not
-- wait for each other), a job of the key is seen running, or one enqueued
-- before it keeping its place: then the row is rightly held, and whatever
-- ends that hold logs the key itself. A settle of the key meanwhile cannot
-- take the lock until this enqueue commits, and logs the key again, so no
-- settle misses the new row. Without this, enqueuing a million jobs of a
-- key would log it a million times.
--
-- Its probes (and pawl_key_settle()'s) run with enable_seqscan off: a
-- plan made while the table's statistics still said "empty" (right after
-- a large enqueue began) would scan the whole table for each row.
CREATE FUNCTION pawl_key_changed() RETURNS trigger
  LANGUAGE plpgsql VOLATILE SET enable_seqscan = off AS $$
BEGIN
  -- The lock first, the rows in a statement of their own after it: its
  -- snapshot is taken once the lock is held.
  IF TG_OP = 'INSERT' AND NEW.state = 0 AND NEW.ordering_held
     AND pg_try_advisory_xact_lock(1885435757, hashtext(current_schema()
                                   || chr(31) || NEW.ordering_key) & 255) THEN
    IF EXISTS (SELECT 1 FROM pawl_jobs
               WHERE ordering_key = NEW.ordering_key AND state = 1)
       OR EXISTS (SELECT 1 FROM pawl_jobs
                  WHERE ordering_key = NEW.ordering_key
                    AND state IN (0, 5, 6)
                    AND ordering_seq < NEW.ordering_seq
                    AND NOT (state = 5 AND paused_from = 3)
                    AND NOT ordering_skip) THEN
      RETURN NULL;
    END IF;
  END IF;
  IF TG_OP = 'DELETE' THEN
    INSERT INTO pawl_key_dirty (key) VALUES (OLD.ordering_key);
  ELSE
    INSERT INTO pawl_key_dirty (key) VALUES (NEW.ordering_key);
    IF TG_OP = 'UPDATE' AND OLD.ordering_key IS DISTINCT FROM NEW.ordering_key
       AND OLD.ordering_key IS NOT NULL THEN
      INSERT INTO pawl_key_dirty (key) VALUES (OLD.ordering_key);
    END IF;
  END IF;
  RETURN NULL;
END
$$;
-- WHEN is tested by the executor itself: jobs without a key (nearly all)
-- and the claim's own updates never call the function.
CREATE TRIGGER pawl_jobs_key_insert AFTER INSERT ON pawl_jobs FOR EACH ROW
  WHEN (NEW.ordering_key IS NOT NULL) EXECUTE FUNCTION pawl_key_changed();
CREATE TRIGGER pawl_jobs_key_update AFTER UPDATE ON pawl_jobs FOR EACH ROW
  WHEN ((NEW.ordering_key IS NOT NULL OR OLD.ordering_key IS NOT NULL)
        AND ((OLD.state, OLD.ordering_skip, OLD.paused_from, OLD.ordering_key,
              OLD.ordering_seq)
             IS DISTINCT FROM (NEW.state, NEW.ordering_skip, NEW.paused_from,
                               NEW.ordering_key, NEW.ordering_seq))
        AND NOT (OLD.state = 0 AND NEW.state = 1))
  EXECUTE FUNCTION pawl_key_changed();
CREATE TRIGGER pawl_jobs_key_delete AFTER DELETE ON pawl_jobs FOR EACH ROW
  WHEN (OLD.ordering_key IS NOT NULL AND OLD.state IN (0, 1, 5, 6))
  EXECUTE FUNCTION pawl_key_changed();

-- A row written pending with a run_at in the future is held by time. The
-- database clock decides (a trigger cannot see a test's injected clock):
-- a row it calls due is merely looked at by the claim until it is.
CREATE FUNCTION pawl_time_hold() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.time_held := true;
  RETURN NEW;
END
$$;
CREATE TRIGGER pawl_jobs_time_hold BEFORE INSERT OR UPDATE OF run_at, state
  ON pawl_jobs FOR EACH ROW
  WHEN (NEW.state = 0 AND NOT NEW.time_held AND NEW.run_at > now())
  EXECUTE FUNCTION pawl_time_hold();

-- Puts key k's flags right, reading its rows after taking the key's
-- settle lock (a second advisory lock class, 0x7061776d: never the
-- claim's, so a settle never makes a claim pass a key by). The lock is one
-- of 256, by the key's hash: an enqueue holds its key's to its commit
-- (pawl_key_changed()), and one transaction enqueuing jobs of 100,000 keys
-- must not hold 100,000 locks (the server's lock table is shared and
-- bounded); two keys of one bucket only make each other's settle wait for
-- the next claim. The function
-- is VOLATILE: in READ COMMITTED each query in it has a snapshot of its
-- own, taken after the lock, which sees every change logged before the
-- log entry that brought us here (a writer's change and its log entry
-- commit together). Two settles of one key never run at once (the lock),
-- so an older picture never overwrites a newer one. Rows another
-- transaction has locked are not waited for (a writer holding a job row
-- may be waiting for something we hold): false then, and the caller logs
-- the key again for the next claim. Costs the key's unheld rows plus the
-- rows before the first that keeps its place in line (skipped retries,
-- dead jobs paused), never the key's whole line.
CREATE FUNCTION pawl_key_settle(k text) RETURNS boolean
  LANGUAGE plpgsql VOLATILE SET enable_seqscan = off AS $$
DECLARE
  first bigint;
  want uuid[];
  done integer;
BEGIN
  IF NOT pg_try_advisory_xact_lock(1885435757,
                                   hashtext(current_schema() || chr(31) || k)
                                   & 255) THEN
    RETURN false;
  END IF;
  IF EXISTS (SELECT 1 FROM pawl_jobs WHERE ordering_key = k AND state = 1) THEN
    first := NULL;
  ELSE
    SELECT ordering_seq INTO first FROM pawl_jobs
    WHERE ordering_key = k AND state IN (0, 5, 6)
      AND NOT (state = 5 AND paused_from = 3) AND NOT ordering_skip
    ORDER BY ordering_seq LIMIT 1;
    IF first IS NULL THEN
      first := 9223372036854775807; -- nothing keeps its place: all may go
    END IF;
  END IF;
  -- Held rows that may go: at or before the first that keeps its place.
  want := ARRAY(SELECT id FROM pawl_jobs WHERE ordering_key = k AND state = 0
                  AND ordering_held AND ordering_seq <= first);
  WITH u AS (UPDATE pawl_jobs SET ordering_held = false WHERE id IN (
               SELECT id FROM pawl_jobs WHERE id = ANY(want) AND state = 0
                 AND ordering_held FOR UPDATE SKIP LOCKED) RETURNING 1)
  SELECT count(*) INTO done FROM u;
  IF done < cardinality(want) THEN
    RETURN false;
  END IF;
  -- Unheld rows that must wait: after it, or all while a job of k runs.
  want := ARRAY(SELECT id FROM pawl_jobs WHERE ordering_key = k AND state = 0
                  AND NOT ordering_held
                  AND (first IS NULL OR ordering_seq > first));
  WITH u AS (UPDATE pawl_jobs SET ordering_held = true WHERE id IN (
               SELECT id FROM pawl_jobs WHERE id = ANY(want) AND state = 0
                 AND NOT ordering_held FOR UPDATE SKIP LOCKED) RETURNING 1)
  SELECT count(*) INTO done FROM u;
  RETURN done = cardinality(want);
END
$$;

-- The claim's first step, a statement (and transaction) of its own so that
-- the claim that follows sees what it did: rows held by time that are due
-- by `now` lose their hold, and the keys logged since the last claim are
-- settled (at most `max` log entries each, oldest first; a key that could
-- not be settled now is logged again). Nothing here waits for a lock.
-- Returns whether a queue is paused: the claim then goes by lanes.
CREATE FUNCTION pawl_claim_prepare(now timestamptz, max integer)
  RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  k text;
BEGIN
  UPDATE pawl_jobs SET time_held = false WHERE id IN (
    SELECT id FROM pawl_jobs WHERE time_held AND run_at <= now
    ORDER BY run_at LIMIT max FOR UPDATE SKIP LOCKED);
  FOR k IN WITH d AS (DELETE FROM pawl_key_dirty WHERE seq IN (
                        SELECT seq FROM pawl_key_dirty ORDER BY seq LIMIT max
                        FOR UPDATE SKIP LOCKED) RETURNING key)
           SELECT DISTINCT key FROM d LOOP
    IF NOT pawl_key_settle(k) THEN
      INSERT INTO pawl_key_dirty (key) VALUES (k);
    END IF;
  END LOOP;
  RETURN EXISTS (SELECT 1 FROM pawl_queues WHERE paused);
END
$$;

-- Rows held by time, for the promotion above (and only while held: a row
-- leaves the index when its hold goes).
CREATE INDEX pawl_jobs_time_held ON pawl_jobs (run_at, id) WHERE time_held;
-- Each key's unheld pending rows (its head, and the few before it that
-- need not keep their place), for pawl_key_settle().
CREATE INDEX pawl_jobs_ordering_free ON pawl_jobs (ordering_key, ordering_seq)
  WHERE ordering_key IS NOT NULL AND state = 0 AND NOT ordering_held;

-- The claim's indexes: pending rows no hold of their own keeps back, in
-- claim order: all of them, a queue's, and a lane's. A lane is a queue and
-- a resource ('' for none): the rows of a paused queue, of a resource or a
-- queue limit with nothing left, wait without any change to their rows,
-- so the claim lists the lanes (one probe each), leaves the closed ones
-- and reads the open ones' first rows (stores/postgres/pg_sql.h,
-- PG_SQL_LANE_IDS). pawl_jobs_claim_queue (V001) stays for the readers of
-- every pending row of a queue (statistics, operator actions).
DROP INDEX pawl_jobs_claim;
CREATE INDEX pawl_jobs_ready ON pawl_jobs (rank DESC, run_at, id)
  WHERE state = 0 AND NOT ordering_held AND NOT time_held;
CREATE INDEX pawl_jobs_ready_queue ON pawl_jobs (queue, rank DESC, run_at, id)
  WHERE state = 0 AND NOT ordering_held AND NOT time_held;
CREATE INDEX pawl_jobs_ready_lane ON pawl_jobs
  (queue, (coalesce(resource, '')), rank DESC, run_at, id)
  WHERE state = 0 AND NOT ordering_held AND NOT time_held;
-- next_due(): pending rows no key holds (due or not), by lane and run_at.
-- "run_at > '-infinity'" is true of every row; it is there so that no
-- claim can use this index (a claim's conditions do not imply it, and
-- next_due()'s state it): a generic plan of the claim once took it, read
-- in full for its run_at, over the plain walk of pawl_jobs_ready.
CREATE INDEX pawl_jobs_due_lane ON pawl_jobs
  (queue, (coalesce(resource, '')), run_at, id)
  WHERE state = 0 AND NOT ordering_held AND run_at > '-infinity';

-- The rows already there.
UPDATE pawl_jobs SET time_held = true WHERE state = 0 AND run_at > now();
UPDATE pawl_jobs AS j SET ordering_held = true
WHERE j.state = 0 AND j.ordering_key IS NOT NULL
  AND (EXISTS (SELECT 1 FROM pawl_jobs AS o
               WHERE o.ordering_key = j.ordering_key AND o.state = 1)
       OR EXISTS (SELECT 1 FROM pawl_jobs AS o
                  WHERE o.ordering_key = j.ordering_key
                    AND o.state IN (0, 5, 6)
                    AND o.ordering_seq < j.ordering_seq
                    AND NOT (o.state = 5 AND o.paused_from = 3)
                    AND NOT o.ordering_skip));
