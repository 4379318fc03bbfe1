-- pawl schema, PostgreSQL, version 5: queues an
-- operator paused or gave an age boost of their own.
-- Shipped migrations are never edited: add V006__*.sql instead.
--
-- A row exists only for a queue someone paused or configured: a queue is
-- otherwise just the name jobs carry. Every claim reads the paused ones
-- once (`queue <> ALL (ARRAY(SELECT name ... WHERE paused))`, an InitPlan)
-- in its own snapshot, so a pause is seen by the next claim of every node.
-- age_boost_ms NULL: the database's setting (pawl_settings
-- 'age_boost_ms'); 0: none; else the interval.
CREATE TABLE pawl_queues (
  name         text PRIMARY KEY,
  paused       boolean NOT NULL DEFAULT false,
  paused_at    timestamptz,
  paused_by    text,
  reason       text,
  age_boost_ms bigint,
  updated_at   timestamptz NOT NULL
);

-- The age boost a job of queue q ranks with: the queue's own, else the
-- database's (`boost_ms`, which the caller binds).
CREATE FUNCTION pawl_queue_boost(q text, boost_ms bigint) RETURNS bigint
  LANGUAGE sql STABLE PARALLEL SAFE
  RETURN coalesce((SELECT age_boost_ms FROM pawl_queues WHERE name = q),
                  boost_ms);

-- Claim order key (store_rank() in stores/store.h). Without an age boost
-- the rank used to be the priority; it is now a virtual time like the
-- boosted ones' (priority x 9e12 - run_at: the same order within a
-- queue), so that queues with and without a boost can be claimed together.
CREATE OR REPLACE FUNCTION pawl_rank(priority integer, run_at timestamptz,
                                     boost_ms bigint)
  RETURNS bigint LANGUAGE sql STABLE PARALLEL SAFE
  RETURN priority::bigint * CASE WHEN boost_ms > 0 THEN boost_ms
                                 ELSE 9000000000000 END - pawl_ms(run_at);

UPDATE pawl_jobs SET rank = pawl_rank(priority, run_at, 0)
WHERE state = 0 AND (SELECT value::bigint FROM pawl_settings
                     WHERE name = 'age_boost_ms') <= 0;
