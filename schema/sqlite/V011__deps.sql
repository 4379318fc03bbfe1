-- pawl schema, SQLite, version 11: dependencies between jobs
-- (after/when, chains, branches).
-- Shipped migrations are never edited: add V012__*.sql instead.
--
-- pawl_deps: one row per edge, parent -> child, with the child's
-- condition on that parent: 'success', 'failure', 'done' or
-- 'branch:NAME'. A child is enqueued `blocked` after its parents exist,
-- so an edge always points from an older job to a newer one: no cycle can
-- form.
CREATE TABLE pawl_deps (
  parent BLOB NOT NULL,
  child  BLOB NOT NULL,
  cond   TEXT NOT NULL,
  PRIMARY KEY (parent, child)
) WITHOUT ROWID;
CREATE INDEX pawl_deps_child ON pawl_deps (child);

-- On the child: deps_left, the parents that have not ended yet; deps_unmet,
-- the ended ones whose condition failed. The child leaves `blocked` when
-- deps_left reaches 0: pending if deps_unmet is 0, else canceled. One
-- UPDATE per finished batch decrements every child of the batch's parents
-- (SQLITE_SQL_DEPS_RELEASE in stores/sqlite/sqlite_sql.h).
-- On the parent: deps_open, 1 while it has children that have not counted
-- its end yet (set when a child names it, cleared when its end is counted,
-- set again by a manual retry); the success path asks the row for it, so
-- a job without children pays nothing else. branches: the JSON array of
-- the branch names that fired when it succeeded (NULL: none).
ALTER TABLE pawl_jobs ADD COLUMN deps_left INTEGER NOT NULL DEFAULT 0;
ALTER TABLE pawl_jobs ADD COLUMN deps_unmet INTEGER NOT NULL DEFAULT 0;
ALTER TABLE pawl_jobs ADD COLUMN deps_open INTEGER NOT NULL DEFAULT 0;
ALTER TABLE pawl_jobs ADD COLUMN branches TEXT;
