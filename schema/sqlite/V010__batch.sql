-- pawl schema, SQLite, version 10: batches.
-- Shipped migrations are never edited: add V011__*.sql instead.
--
-- A batch is a set of jobs (its children) enqueued in one call, with
-- callbacks that are enqueued once, when the last child ends (README
-- "Batches"). Its row counts the children that ended: succeeded, failed
-- (dead: retries exhausted or fatal), canceled. A child waiting for a retry
-- has not ended. The store adds to the counters in the transaction that
-- moves the child (stores/sqlite/batch.c); the trigger
-- below enqueues the callbacks in the statement that makes the counters
-- reach the total, once (finished_at goes from NULL to the time).
CREATE TABLE pawl_batches (
  id          BLOB PRIMARY KEY CHECK (length(id) = 16),
  total       INTEGER NOT NULL,
  succeeded   INTEGER NOT NULL DEFAULT 0,
  failed      INTEGER NOT NULL DEFAULT 0,
  canceled    INTEGER NOT NULL DEFAULT 0,
  enqueued_by TEXT,
  created_at  INTEGER NOT NULL,
  -- "now" of the last change of the counters (the trigger's clock).
  updated_at  INTEGER NOT NULL,
  -- When the last child ended and the callbacks were enqueued; NULL before.
  finished_at INTEGER
) WITHOUT ROWID;

-- The callbacks of a batch, as given at its enqueue: the job each becomes
-- (with the id it will have) when it fires. role: 1 on_success (every
-- child succeeded), 2 on_failure (at least one failed), 3 on_complete
-- (always). fired_at: when it was enqueued; NULL: not (yet, or ever).
CREATE TABLE pawl_batch_callbacks (
  id             BLOB PRIMARY KEY CHECK (length(id) = 16),
  batch_id       BLOB NOT NULL REFERENCES pawl_batches (id) ON DELETE CASCADE,
  role           INTEGER NOT NULL CHECK (role BETWEEN 1 AND 3),
  type           TEXT NOT NULL,
  queue          TEXT NOT NULL,
  priority       INTEGER NOT NULL,
  payload        TEXT NOT NULL,
  tags           TEXT NOT NULL,
  max_attempts   INTEGER NOT NULL,
  timeout_s      INTEGER NOT NULL,
  correlation_id TEXT,
  enqueued_by    TEXT,
  fired_at       INTEGER,
  UNIQUE (batch_id, role)
) WITHOUT ROWID;

-- The batch of a child; NULL (nearly every job) for none. Claims and
-- finishes never write it, so its index costs them nothing.
ALTER TABLE pawl_jobs ADD COLUMN batch_id BLOB;
CREATE INDEX pawl_jobs_batch ON pawl_jobs (batch_id) WHERE batch_id IS NOT NULL;

-- Fires the callbacks: the counters reached the total for the first time
-- (finished_at still NULL). SQLite has one writer at a time, so two
-- children ending "at once" are two transactions one after the other: the
-- second sees finished_at set. The params of a fired callback name its
-- batch and the counters; its rank is store_rank()'s (stores/store.h)
-- with its queue's age boost, else the database's, written out here:
-- pawl_rank() is registered for top-level SQL only, not for triggers.
CREATE TRIGGER pawl_batches_fire AFTER UPDATE OF succeeded, failed, canceled
  ON pawl_batches
  WHEN OLD.finished_at IS NULL
   AND NEW.succeeded + NEW.failed + NEW.canceled >= NEW.total
BEGIN
  UPDATE pawl_batches SET finished_at = NEW.updated_at WHERE id = NEW.id;
  UPDATE pawl_batch_callbacks SET fired_at = NEW.updated_at
   WHERE batch_id = NEW.id
     AND (role = 3 OR (role = 1 AND NEW.failed = 0 AND NEW.canceled = 0)
          OR (role = 2 AND NEW.failed > 0));
  INSERT INTO pawl_jobs (id, type, queue, state, priority, rank, payload,
                         params, tags, run_at, max_attempts, timeout_s,
                         correlation_id, enqueued_by, created_at, updated_at)
  SELECT c.id, c.type, c.queue, 0, c.priority,
         c.priority * coalesce(
           (SELECT CASE WHEN b > 0 THEN b ELSE 9000000000000 END FROM
             (SELECT coalesce((SELECT q.age_boost_ms FROM pawl_queues AS q
                               WHERE q.name = c.queue),
                              (SELECT CAST(value AS INTEGER)
                                 FROM pawl_settings
                                WHERE name = 'age_boost_ms')) AS b)),
           9000000000000) - NEW.updated_at,
         c.payload,
         json_object('batch', lower(substr(hex(NEW.id), 1, 8) || '-' ||
                                    substr(hex(NEW.id), 9, 4) || '-' ||
                                    substr(hex(NEW.id), 13, 4) || '-' ||
                                    substr(hex(NEW.id), 17, 4) || '-' ||
                                    substr(hex(NEW.id), 21)),
                     'callback', CASE c.role WHEN 1 THEN 'on_success'
                                 WHEN 2 THEN 'on_failure'
                                 ELSE 'on_complete' END,
                     'total', NEW.total, 'succeeded', NEW.succeeded,
                     'failed', NEW.failed, 'canceled', NEW.canceled),
         c.tags, NEW.updated_at, c.max_attempts, c.timeout_s,
         c.correlation_id, c.enqueued_by, NEW.updated_at, NEW.updated_at
    FROM pawl_batch_callbacks AS c
   WHERE c.batch_id = NEW.id
     AND (c.role = 3 OR (c.role = 1 AND NEW.failed = 0 AND NEW.canceled = 0)
          OR (c.role = 2 AND NEW.failed > 0));
END;
