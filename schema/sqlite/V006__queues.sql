-- pawl schema, SQLite, version 6: queues an operator
-- paused or gave an age boost of their own.
-- Shipped migrations are never edited: add V007__*.sql instead.
--
-- A row exists only for a queue someone paused or configured: a queue is
-- otherwise just the name jobs carry. Every claim reads the paused ones
-- (`queue NOT IN (SELECT name ... WHERE paused = 1)`: the subquery is run
-- once per claim into a small in-memory index), so a pause is seen by the
-- next claim of every node. age_boost_ms NULL: the database's setting
-- (pawl_settings 'age_boost_ms'); 0: none; else the interval.
CREATE TABLE pawl_queues (
  name         TEXT PRIMARY KEY,
  paused       INTEGER NOT NULL DEFAULT 0,
  paused_at    INTEGER,
  paused_by    TEXT,
  reason       TEXT,
  age_boost_ms INTEGER,
  updated_at   INTEGER NOT NULL
) WITHOUT ROWID;

-- The rank of a job without an age boost used to be its priority; it is
-- now a virtual time like the boosted ones' (store_rank() in
-- stores/store.h: priority x 9e12 - run_at, the same order within a
-- queue), so that queues with and without a boost can be claimed together.
UPDATE pawl_jobs SET rank = priority * 9000000000000 - run_at
WHERE state = 0 AND (SELECT CAST(value AS INTEGER) FROM pawl_settings
                     WHERE name = 'age_boost_ms') <= 0;
