-- pawl schema, PostgreSQL, version 10: dependencies between jobs (issue
-- 15: after/when, chains, branches).
-- Shipped migrations are never edited: add V011__*.sql instead.
--
-- pawl_deps: one row per edge, parent -> child, with the child's condition
-- on that parent: 'success', 'failure', 'done' or 'branch:NAME'. A child
-- names parents that exist already (its own id is new), so an edge always
-- points from an older job to a newer one: no cycle can form.
CREATE TABLE pawl_deps (
  parent uuid NOT NULL,
  child  uuid NOT NULL,
  cond   text NOT NULL,
  PRIMARY KEY (parent, child)
);
CREATE INDEX pawl_deps_child ON pawl_deps (child);

-- On the child: deps_left, its parents that have not ended yet;
-- deps_unmet, the ended ones whose condition failed. It leaves `blocked`
-- when deps_left reaches 0: pending if deps_unmet is 0, else canceled.
-- On the parent: deps_open, true while it has children that have not
-- counted its end yet (set when a child names it, cleared when its end is
-- counted, set again by a manual retry). branches: the branch names that
-- fired when it succeeded (a JSON array; NULL: none).
-- None has a default that needs a rewrite of the table.
ALTER TABLE pawl_jobs ADD COLUMN deps_left integer NOT NULL DEFAULT 0,
  ADD COLUMN deps_unmet integer NOT NULL DEFAULT 0,
  ADD COLUMN deps_open boolean NOT NULL DEFAULT false,
  ADD COLUMN branches jsonb;
-- The parents whose end is still to be counted: the finish path probes it
-- with the ids of a batch, and nearly every job is not in it.
CREATE INDEX pawl_jobs_deps_open ON pawl_jobs (id) WHERE deps_open;

-- Does a parent that ended in `state` (with the fired `branches`) meet the
-- condition `cond`? 'failure' asks for failed (a canceled parent meets
-- only 'done').
CREATE FUNCTION pawl_deps_met(cond text, state smallint, branches jsonb)
  RETURNS boolean LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN CASE cond WHEN 'success' THEN state = 2
                   WHEN 'failure' THEN state = 3
                   WHEN 'done' THEN true
                   ELSE state = 2 AND coalesce(branches ? substr(cond, 8),
                                               false) END;

-- Why child `c` is canceled: the first parent whose condition failed.
CREATE FUNCTION pawl_deps_why(c uuid) RETURNS text LANGUAGE sql STABLE
  RETURN coalesce((
    SELECT format('dependency not met: parent %s %s (when = %s)', p.id,
                  CASE p.state WHEN 2 THEN 'succeeded' WHEN 3 THEN 'failed'
                               ELSE 'was canceled' END, d.cond)
    FROM pawl_deps d JOIN pawl_jobs p ON p.id = d.parent
    WHERE d.child = c AND p.state IN (2, 3, 4)
      AND NOT pawl_deps_met(d.cond, p.state, p.branches)
    ORDER BY p.id LIMIT 1), 'dependency not met');

-- Moves the blocked jobs `ids` whose parents have all ended (deps_left 0)
-- out of `blocked`: pending when every condition held, else canceled
-- (finished, counted in the throughput and, for a batch's child, in its
-- batch's counters (V009__batch.sql), with the reason). Each with its
-- event. Returns the canceled ones: their own children count their end
-- next. The caller holds their row locks.
CREATE FUNCTION pawl_deps_settle(ids uuid[], t timestamptz) RETURNS uuid[]
LANGUAGE plpgsql AS $$
DECLARE
  ready uuid[];
  doomed uuid[];
BEGIN
  SELECT array_agg(id) FILTER (WHERE deps_unmet = 0),
         array_agg(id) FILTER (WHERE deps_unmet > 0)
    INTO ready, doomed
    FROM pawl_jobs WHERE id = ANY(ids) AND state = 6 AND deps_left <= 0;
  IF ready IS NOT NULL THEN
    INSERT INTO pawl_events (job_id, at, from_state, to_state, actor,
                             reason, attempt)
      SELECT id, t, 6, 0, 'pawl', 'its parents ended as it asks', attempt
      FROM pawl_jobs WHERE id = ANY(ready);
    UPDATE pawl_jobs SET state = 0, updated_at = t, version = version + 1
      WHERE id = ANY(ready);
    PERFORM pg_notify('pawl_jobs:' || current_schema(), '');
  END IF;
  IF doomed IS NOT NULL THEN
    INSERT INTO pawl_events (job_id, at, from_state, to_state, actor,
                             reason, attempt)
      SELECT id, t, 6, 4, 'pawl', pawl_deps_why(id), attempt
      FROM pawl_jobs WHERE id = ANY(doomed);
    UPDATE pawl_jobs SET state = 4, finished_at = t, updated_at = t,
                         version = version + 1
      WHERE id = ANY(doomed);
    INSERT INTO pawl_throughput (minute, state, queue, count)
      SELECT pawl_ms(t) / 60000, 4, queue, count(*) FROM pawl_jobs
      WHERE id = ANY(doomed) GROUP BY queue
      ON CONFLICT (minute, state, queue, writer)
      DO UPDATE SET count = pawl_throughput.count + excluded.count;
    -- A batch's child that is canceled counts as canceled (its batch's
    -- trigger fires the callbacks when this completes the count). The
    -- batch rows are locked in id order, as the finish path locks them.
    PERFORM 1 FROM pawl_batches WHERE id IN (
        SELECT batch_id FROM pawl_jobs WHERE id = ANY(doomed))
      ORDER BY id FOR UPDATE;
    UPDATE pawl_batches AS b SET canceled = b.canceled + x.n, updated_at = t
      FROM (SELECT batch_id, count(*) AS n FROM pawl_jobs
            WHERE id = ANY(doomed) AND batch_id IS NOT NULL
            GROUP BY batch_id) AS x
      WHERE b.id = x.batch_id;
  END IF;
  RETURN doomed;
END
$$;

-- Counts the end of the parents `parents` that just ended (succeeded,
-- failed or canceled), each exactly once, and settles the children whose
-- last parent it was; a child canceled for it passes the cancellation on
-- to its own children (the loop). Returns how many children it settled.
--
-- Exactly once, on any number of nodes at the same instant, in READ
-- COMMITTED: a parent's end is counted by the transaction that clears its
-- deps_open, a compare-and-set under the row's lock (a concurrent one
-- waits for it, then sees false and skips the row). Each child's counter
-- moves by `deps_left - n` under its row lock, taken in id order (so two
-- nodes releasing children of a common fan-in never deadlock), and an
-- UPDATE that waited re-reads the row: the decrements add up, and exactly
-- one transaction sees deps_left reach 0 in its RETURNING and settles the
-- child, still holding its lock. A child enqueued meanwhile locks its
-- parents first (pawl_deps_link), so a parent ends either before (the
-- child sees it ended) or after the child's edges commit (and counts
-- them).
CREATE FUNCTION pawl_deps_release(parents uuid[], injected bigint)
  RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
  t timestamptz := pawl_now(injected);
  kids uuid[];
  ns integer[];
  unmets integer[];
  done uuid[];
  total integer := 0;
BEGIN
  LOOP
    WITH p AS (
      UPDATE pawl_jobs SET deps_open = false
      WHERE id = ANY(parents) AND deps_open AND state IN (2, 3, 4)
      RETURNING id, state, branches),
    x AS (
      SELECT d.child, count(*)::integer AS n,
             (count(*) FILTER (WHERE NOT pawl_deps_met(d.cond, p.state,
                                                       p.branches)))::integer
               AS unmet
      FROM p JOIN pawl_deps d ON d.parent = p.id GROUP BY d.child)
    SELECT array_agg(child ORDER BY child), array_agg(n ORDER BY child),
           array_agg(unmet ORDER BY child)
      INTO kids, ns, unmets FROM x;
    EXIT WHEN kids IS NULL;
    PERFORM 1 FROM pawl_jobs WHERE id = ANY(kids) AND state = 6
      ORDER BY id FOR NO KEY UPDATE;
    WITH c AS (
      UPDATE pawl_jobs AS j SET deps_left = j.deps_left - u.n,
                                deps_unmet = j.deps_unmet + u.unmet
      FROM unnest(kids, ns, unmets) AS u(child, n, unmet)
      WHERE j.id = u.child AND j.state = 6
      RETURNING j.id, j.deps_left)
    SELECT array_agg(id) INTO done FROM c WHERE deps_left <= 0;
    EXIT WHEN done IS NULL;
    total := total + cardinality(done);
    parents := pawl_deps_settle(done, t);
    EXIT WHEN parents IS NULL;
  END LOOP;
  RETURN total;
END
$$;

-- Links the new blocked job `child` to its parents (conds[i] for
-- parents[i]): returns the first parent that does not exist (nothing is
-- linked then: the caller rolls back), else NULL. Parents that ended
-- already are counted at once; the others are marked deps_open. Their
-- rows are locked first, in id order, so that none ends uncounted
-- meanwhile (see pawl_deps_release). A child whose parents have all ended
-- is settled here.
CREATE FUNCTION pawl_deps_link(child uuid, parents uuid[], conds text[],
                               injected bigint)
  RETURNS uuid LANGUAGE plpgsql AS $$
DECLARE
  missing uuid;
  nleft integer;
  nunmet integer;
BEGIN
  PERFORM 1 FROM pawl_jobs WHERE id = ANY(parents) ORDER BY id
    FOR NO KEY UPDATE;
  SELECT u.p INTO missing FROM unnest(parents) AS u(p)
    WHERE NOT EXISTS (SELECT 1 FROM pawl_jobs WHERE id = u.p) LIMIT 1;
  IF missing IS NOT NULL THEN
    RETURN missing;
  END IF;
  INSERT INTO pawl_deps (parent, child, cond)
    SELECT u.p, child, u.c FROM unnest(parents, conds) AS u(p, c);
  WITH e AS (
    SELECT CASE WHEN j.state = 5 THEN j.paused_from ELSE j.state END AS st,
           j.branches, u.c
    FROM pawl_jobs j JOIN unnest(parents, conds) AS u(p, c) ON j.id = u.p)
  SELECT count(*) FILTER (WHERE st NOT IN (2, 3, 4)),
         count(*) FILTER (WHERE st IN (2, 3, 4)
                          AND NOT pawl_deps_met(c, st, branches))
    INTO nleft, nunmet FROM e;
  UPDATE pawl_jobs SET deps_open = true
    WHERE id = ANY(parents) AND NOT deps_open
      AND (CASE WHEN state = 5 THEN paused_from ELSE state END)
          NOT IN (2, 3, 4);
  UPDATE pawl_jobs SET deps_left = nleft, deps_unmet = nunmet
    WHERE id = child;
  IF nleft = 0 THEN
    PERFORM pawl_deps_settle(ARRAY[child], pawl_now(injected));
  END IF;
  RETURN NULL;
END
$$;

-- A manual retry of the failed `parent`: the children still blocked stop
-- counting its end (they count its next one); it is open again if it has
-- children. Children that left `blocked` stay as they are.
CREATE FUNCTION pawl_deps_reopen(parent uuid) RETURNS void
  LANGUAGE plpgsql AS $$
BEGIN
  PERFORM 1 FROM pawl_jobs j JOIN pawl_deps d ON d.child = j.id
    WHERE d.parent = pawl_deps_reopen.parent AND j.state = 6 ORDER BY j.id
    FOR NO KEY UPDATE OF j;
  UPDATE pawl_jobs AS j SET deps_left = j.deps_left + 1,
    deps_unmet = j.deps_unmet
                 - (NOT pawl_deps_met(d.cond, 3::smallint, NULL))::integer
  FROM pawl_deps d
  WHERE d.parent = pawl_deps_reopen.parent AND j.id = d.child AND j.state = 6;
  UPDATE pawl_jobs SET deps_open = EXISTS (
      SELECT 1 FROM pawl_deps d WHERE d.parent = pawl_deps_reopen.parent)
    WHERE id = pawl_deps_reopen.parent;
END
$$;
