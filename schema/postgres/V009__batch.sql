-- pawl schema, PostgreSQL, version 9: batches.
-- Shipped migrations are never edited: add V010__*.sql instead.
--
-- A batch is a set of jobs (its children) enqueued in one call, with
-- callbacks that are enqueued once, when the last child ends (README
-- "Batches"). Its row counts the children that ended: succeeded, failed
-- (dead: retries exhausted or fatal), canceled. A child waiting for a retry
-- has not ended. The store adds to the counters in the statement that
-- moves the child (stores/postgres/pg_sql.h, terminal.c, batch.c); the
-- trigger below enqueues the callbacks in the update that makes the
-- counters reach the total.
CREATE TABLE pawl_batches (
  id          uuid PRIMARY KEY,
  total       bigint NOT NULL,
  succeeded   bigint NOT NULL DEFAULT 0,
  failed      bigint NOT NULL DEFAULT 0,
  canceled    bigint NOT NULL DEFAULT 0,
  enqueued_by text,
  created_at  timestamptz NOT NULL,
  -- "now" of the last change of the counters (the trigger's clock).
  updated_at  timestamptz NOT NULL,
  -- When the last child ended and the callbacks were enqueued; NULL before.
  finished_at timestamptz
);

-- The callbacks of a batch, as given at its enqueue: the job each becomes
-- (with the id it will have) when it fires. role: 1 on_success (every
-- child succeeded), 2 on_failure (at least one failed), 3 on_complete
-- (always). fired_at: when it was enqueued; NULL: not (yet, or ever).
CREATE TABLE pawl_batch_callbacks (
  id             uuid PRIMARY KEY,
  batch_id       uuid NOT NULL REFERENCES pawl_batches (id) ON DELETE CASCADE,
  role           smallint NOT NULL CHECK (role BETWEEN 1 AND 3),
  type           text NOT NULL,
  queue          text NOT NULL,
  priority       int NOT NULL,
  payload        jsonb NOT NULL,
  tags           jsonb NOT NULL,
  max_attempts   int NOT NULL,
  timeout_s      int NOT NULL,
  correlation_id text,
  enqueued_by    text,
  fired_at       timestamptz,
  UNIQUE (batch_id, role)
);

-- The batch of a child; NULL (nearly every job) for none: no default that
-- rewrites the table, and the partial index holds children only (an update
-- of another job adds no entry to it).
ALTER TABLE pawl_jobs ADD COLUMN batch_id uuid;
CREATE INDEX pawl_jobs_batch ON pawl_jobs (batch_id) WHERE batch_id IS NOT NULL;

-- Fires the callbacks when an update makes the counters reach the total
-- for the first time (OLD.finished_at is NULL).
--
-- Why each callback is enqueued exactly once, with children ending on
-- several nodes at the same instant (READ COMMITTED): every change of the
-- counters is an UPDATE of the batch's one row (count = count + n, never
-- a value computed from an earlier read), in the transaction that moves
-- the children. An UPDATE takes the row's lock and holds it to the end of
-- its transaction; a second one waits for it, then (EvalPlanQual) applies
-- its own + n to the row as the first committed it, and this BEFORE
-- trigger runs on that row (OLD is the newest committed version, NEW has
-- both increments). So the updates of a batch are applied one after the
-- other, each on top of all before it: exactly one of them sees OLD with
-- finished_at NULL and NEW at the total, and sets finished_at, which every
-- later one sees. A transaction that rolls back takes its increment, its
-- finished_at and its callbacks with it, and the next one that completes
-- the count fires them. A child counts once: the move that counts it is
-- itself a compare-and-set on the child's row (state, lease, version).
-- Deadlocks: a finish that ends children of several batches locks their
-- rows in id order (PG_SQL_SUCCEED_MANY).
CREATE FUNCTION pawl_batch_fire() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF OLD.finished_at IS NOT NULL
     OR NEW.succeeded + NEW.failed + NEW.canceled < NEW.total THEN
    RETURN NEW;
  END IF;
  NEW.finished_at := NEW.updated_at;
  UPDATE pawl_batch_callbacks SET fired_at = NEW.updated_at
   WHERE batch_id = NEW.id
     AND (role = 3 OR (role = 1 AND NEW.failed = 0 AND NEW.canceled = 0)
          OR (role = 2 AND NEW.failed > 0));
  INSERT INTO pawl_jobs (id, type, queue, state, priority, rank, payload,
                         params, tags, run_at, max_attempts, timeout_s,
                         correlation_id, enqueued_by, created_at, updated_at)
  SELECT c.id, c.type, c.queue, 0, c.priority,
         pawl_rank(c.priority, NEW.updated_at, pawl_queue_boost(c.queue,
           (SELECT value::bigint FROM pawl_settings
             WHERE name = 'age_boost_ms'))),
         c.payload,
         jsonb_build_object('batch', NEW.id::text, 'callback',
                            CASE c.role WHEN 1 THEN 'on_success'
                            WHEN 2 THEN 'on_failure' ELSE 'on_complete' END,
                            'total', NEW.total, 'succeeded', NEW.succeeded,
                            'failed', NEW.failed, 'canceled', NEW.canceled),
         c.tags, NEW.updated_at, c.max_attempts, c.timeout_s,
         c.correlation_id, c.enqueued_by, NEW.updated_at, NEW.updated_at
    FROM pawl_batch_callbacks AS c
   WHERE c.batch_id = NEW.id
     AND (c.role = 3 OR (c.role = 1 AND NEW.failed = 0 AND NEW.canceled = 0)
          OR (c.role = 2 AND NEW.failed > 0));
  RETURN NEW;
END
$$;

CREATE TRIGGER pawl_batches_fire BEFORE UPDATE OF succeeded, failed, canceled
  ON pawl_batches FOR EACH ROW EXECUTE FUNCTION pawl_batch_fire();
