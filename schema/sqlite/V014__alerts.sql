-- pawl schema, SQLite, version 14: dead-letter alerts.
-- Shipped migrations are never edited: add V015__*.sql instead.
--
-- The alert outbox: one row for every job that lands in the dead-letter
-- set (state 3), written by the store in the same transaction as the move
-- to failed, on each path that makes it (stores/sqlite/terminal.c:
-- pawl__sq_fail_job, the finish and lease recovery of a poisoned job; and the
-- transitions into failed, a signal's wait that timed out). Not a trigger,
-- as on PostgreSQL: SQLite runs a trigger's program for every row whose
-- state an UPDATE sets (each claim, each success) before its WHEN can say
-- no, which cost about 11% of the CPU of claim + complete (bench:
-- pawl_store_bench, claim+complete b=10). A running host's alerter takes
-- rows under a lease (taken_by, taken_until: a node that dies holding one
-- loses it when the lease runs out), runs the global on_dead hook, and
-- deletes the row. kind 0: a dead job; kind 1: a dedup window that ended with
-- suppressed alerts (count, suppressed, first_at, last_at filled in).
-- verdict: the dedup decision once made (1 run the hook, 2 suppressed),
-- so that a row taken again after its node died is not counted twice.
CREATE TABLE pawl_alerts (
  seq         INTEGER PRIMARY KEY,
  kind        INTEGER NOT NULL DEFAULT 0,
  job_id      BLOB NOT NULL,
  type        TEXT NOT NULL,
  queue       TEXT NOT NULL,
  attempt     INTEGER NOT NULL,
  error       TEXT,
  created_at  INTEGER NOT NULL,
  taken_by    TEXT,
  taken_until INTEGER,
  verdict     INTEGER,
  count       INTEGER NOT NULL DEFAULT 1,
  suppressed  INTEGER NOT NULL DEFAULT 0,
  first_at    INTEGER,
  last_at     INTEGER
);


-- Dedup windows, shared by every node of the database: one row per job
-- type and error fingerprint (a hash of the normalized error text) while
-- its window is open. ends_at: first_at + the window; job_id, queue,
-- attempt, error: the last suppressed job's, for the summary alert.
CREATE TABLE pawl_alert_windows (
  type        TEXT NOT NULL,
  fp          INTEGER NOT NULL,
  first_at    INTEGER NOT NULL,
  last_at     INTEGER NOT NULL,
  ends_at     INTEGER NOT NULL,
  count       INTEGER NOT NULL,
  suppressed  INTEGER NOT NULL,
  job_id      BLOB NOT NULL,
  queue       TEXT NOT NULL,
  attempt     INTEGER NOT NULL,
  error       TEXT,
  PRIMARY KEY (type, fp)
) WITHOUT ROWID;
