-- The claim's first step (V017) costs nothing when it has nothing to do.
--
-- pawl_claim_prepare() runs before every claim. Its UPDATE of the rows
-- held by time was planned again at every call (PL/pgSQL keeps custom
-- plans for it: its limit and time are parameters) and opened every index
-- of pawl_jobs to update no row, and its DELETE of the key log did the
-- same on an empty log: about 0.3 ms of server time per claim, three
-- claims per job on an idle node, with nothing held and nothing logged.
-- Each step now first asks whether it has anything to do, through the
-- index that holds exactly its rows (pawl_jobs_time_held, the key log's
-- primary key): one index probe each, a plan PL/pgSQL keeps, and no
-- write (nor a write's lock) when there is nothing to do. The probe asks
-- for the earliest due held row, in run_at order, as the UPDATE's own
-- pick does: an EXISTS would be planned as a scan of every row whenever
-- the statistics are stale (a burst of enqueues since the last analyze:
-- 20-150 ms a claim), since a scan stops at its first match; the first
-- row in order is what the index gives at once. (Turning sequential
-- scans off for the function instead priced the paused-queue test at
-- the penalty's 1e10, over jit_above_cost: 170 ms of JIT a claim.)
CREATE OR REPLACE FUNCTION pawl_claim_prepare(now timestamptz, max integer)
  RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  k text;
BEGIN
  IF (SELECT run_at FROM pawl_jobs WHERE time_held AND run_at <= now
      ORDER BY run_at LIMIT 1) IS NOT NULL THEN
    UPDATE pawl_jobs SET time_held = false WHERE id IN (
      SELECT id FROM pawl_jobs WHERE time_held AND run_at <= now
      ORDER BY run_at LIMIT max FOR UPDATE SKIP LOCKED);
  END IF;
  IF EXISTS (SELECT 1 FROM pawl_key_dirty) THEN
    FOR k IN WITH d AS (DELETE FROM pawl_key_dirty WHERE seq IN (
                          SELECT seq FROM pawl_key_dirty ORDER BY seq
                          LIMIT max FOR UPDATE SKIP LOCKED) RETURNING key)
             SELECT DISTINCT key FROM d LOOP
      IF NOT pawl_key_settle(k) THEN
        INSERT INTO pawl_key_dirty (key) VALUES (k);
      END IF;
    END LOOP;
  END IF;
  RETURN EXISTS (SELECT 1 FROM pawl_queues WHERE paused);
END
$$;
