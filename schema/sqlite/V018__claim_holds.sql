-- pawl schema, SQLite, version 18: the claim walks no held job.
-- Shipped migrations are never edited: add V019__*.sql instead.
--
-- Before this version the claim walked its partial index of pending rows
-- in claim order and tested each row: a job waiting behind the running,
-- blocked or failed head of its ordering key, or due later than it ranks,
-- was read and skipped by every claim (with a probe of the key that walked
-- the key's pending jobs: quadratic). Now such rows are kept out of the
-- claim's indexes by two columns of the row:
--
-- held: 1 on a pending job with an ordering key that is not one of its
--   key's candidates. A key's candidates are its pending jobs up to and
--   including its first live job (pending, blocked, or paused from
--   pending) that holds its place in line (ordering_skip = 0); none while
--   a job of the key is running. Nearly always that is the key's head
--   alone; jobs waiting out a retry that their type's ordering =
--   "skip_failed" lets later jobs pass add themselves and the next job.
--   The claim still tests a candidate against the earlier candidates that
--   have come due (SQLITE_SQL_ORDERING_FREE), which is the time-dependent
--   part of that rule. 0 on every other row. Kept by the triggers below,
--   whatever statement changes a keyed row (the store's, or an operator's
--   in the sqlite3 shell), each with a few probes of pawl_jobs_key.
-- early: 1 on a pending job written with a run_at after the time of the
--   write (updated_at): due later. The claim and next_due() promote the
--   rows that have come due (early = 0) through pawl_jobs_early, an index
--   of such rows by run_at, so a future job of high priority is not in
--   the claim's index until it is due. Set by a trigger; a row with
--   early = 1 that is in fact due (a run_at moved back) is promoted by
--   the next claim.
ALTER TABLE pawl_jobs ADD COLUMN held INTEGER NOT NULL DEFAULT 0;
ALTER TABLE pawl_jobs ADD COLUMN early INTEGER NOT NULL DEFAULT 0;
-- Retention archives rows with SELECT *: the archive has every column.
ALTER TABLE pawl_jobs_archive ADD COLUMN held INTEGER;
ALTER TABLE pawl_jobs_archive ADD COLUMN early INTEGER;

-- The keyed rows by key, state, held and enqueue order: every probe of a
-- key (is one running? the first job holding its place; the candidates)
-- is a seek on an equality prefix of it. All keyed rows, history
-- included, so that "ordering_key = ?" alone implies its WHERE.
DROP INDEX pawl_jobs_ordering;
CREATE INDEX pawl_jobs_key ON pawl_jobs (ordering_key, state, held, seq)
  WHERE ordering_key IS NOT NULL;

-- Existing rows: candidates and holds as the triggers would keep them.
UPDATE pawl_jobs SET held = 1 WHERE state = 0 AND ordering_key IS NOT NULL
  AND (EXISTS (SELECT 1 FROM pawl_jobs AS r WHERE r.ordering_key =
               pawl_jobs.ordering_key AND r.state = 1)
       OR EXISTS (SELECT 1 FROM pawl_jobs AS b WHERE b.ordering_key =
                  pawl_jobs.ordering_key AND b.state IN (0, 5, 6) AND
                  b.seq < pawl_jobs.seq AND b.ordering_skip = 0 AND
                  NOT (b.state = 5 AND b.paused_from IS 3)));
UPDATE pawl_jobs SET early = 1 WHERE state = 0 AND run_at > updated_at;

-- The claim's index (every queue): pending, not held, due when written.
DROP INDEX pawl_jobs_claim;
CREATE INDEX pawl_jobs_claim ON pawl_jobs (rank DESC, run_at, id)
  WHERE state = 0 AND held = 0 AND early = 0;
-- The same led by queue, for a claim of some queues. pawl_jobs_claim_queue
-- (every pending row) stays for the counts per queue and the age boost.
CREATE INDEX pawl_jobs_ready_queue ON pawl_jobs (queue, rank DESC, run_at, id)
  WHERE state = 0 AND held = 0 AND early = 0;
-- The same by lane (queue, resource), for a claim with a lane blocked (a
-- paused queue, a limit with nothing left): it picks from each open lane
-- and never walks a blocked one.
CREATE INDEX pawl_jobs_lane ON pawl_jobs
  (queue, resource, rank DESC, run_at, id)
  WHERE state = 0 AND held = 0 AND early = 0;
-- Not held, due later: promoted by the claim when due; next_due()'s min.
CREATE INDEX pawl_jobs_early ON pawl_jobs (run_at)
  WHERE state = 0 AND held = 0 AND early = 1;

-- A keyed row changed: its key's candidates again, as a "procedure" (an
-- insert into the empty view pawl_key_refresh, which its INSTEAD OF
-- trigger turns into two updates of the key K):
-- the first holds the pending rows of K that are not candidates (a job of
-- K runs, or an earlier job holds its place): it reads the unheld pending
-- rows of K, the candidates, a few; the second frees the held rows that
-- are candidates: the held pending rows of K up to B, a few. B, the first
-- job of K holding its place, is the least of four LIMIT 1 probes in
-- enqueue order (pending held and not, blocked, paused from pending), each
-- stopping at its first match.
CREATE VIEW pawl_key_refresh (ordering_key) AS SELECT NULL WHERE 0;
CREATE TRIGGER pawl_key_refresh_do INSTEAD OF INSERT ON pawl_key_refresh
BEGIN
  UPDATE pawl_jobs SET held = 1 WHERE ordering_key = NEW.ordering_key AND
    state = 0 AND held = 0 AND
    (EXISTS (SELECT 1 FROM pawl_jobs AS r WHERE r.ordering_key =
             NEW.ordering_key AND r.state = 1) OR seq > (
     SELECT min(b) FROM (
       SELECT (SELECT x.seq FROM pawl_jobs AS x WHERE x.ordering_key =
               NEW.ordering_key AND x.state = 0 AND x.held = 0 AND
               x.ordering_skip = 0 ORDER BY x.seq LIMIT 1) AS b
       UNION ALL SELECT (SELECT x.seq FROM pawl_jobs AS x WHERE
               x.ordering_key = NEW.ordering_key AND x.state = 0 AND
               x.held = 1 AND x.ordering_skip = 0 ORDER BY x.seq LIMIT 1)
       UNION ALL SELECT (SELECT x.seq FROM pawl_jobs AS x WHERE
               x.ordering_key = NEW.ordering_key AND x.state = 6 AND
               x.held = 0 AND x.ordering_skip = 0 ORDER BY x.seq LIMIT 1)
       UNION ALL SELECT (SELECT x.seq FROM pawl_jobs AS x WHERE
               x.ordering_key = NEW.ordering_key AND x.state = 5 AND
               x.held = 0 AND x.ordering_skip = 0 AND x.paused_from IS NOT 3
               ORDER BY x.seq LIMIT 1))));
  UPDATE pawl_jobs SET held = 0 WHERE ordering_key = NEW.ordering_key AND
    state = 0 AND held = 1 AND
    NOT EXISTS (SELECT 1 FROM pawl_jobs AS r WHERE r.ordering_key =
                NEW.ordering_key AND r.state = 1) AND seq <= coalesce((
     SELECT min(b) FROM (
       SELECT (SELECT x.seq FROM pawl_jobs AS x WHERE x.ordering_key =
               NEW.ordering_key AND x.state = 0 AND x.held = 0 AND
               x.ordering_skip = 0 ORDER BY x.seq LIMIT 1) AS b
       UNION ALL SELECT (SELECT x.seq FROM pawl_jobs AS x WHERE
               x.ordering_key = NEW.ordering_key AND x.state = 0 AND
               x.held = 1 AND x.ordering_skip = 0 ORDER BY x.seq LIMIT 1)
       UNION ALL SELECT (SELECT x.seq FROM pawl_jobs AS x WHERE
               x.ordering_key = NEW.ordering_key AND x.state = 6 AND
               x.held = 0 AND x.ordering_skip = 0 ORDER BY x.seq LIMIT 1)
       UNION ALL SELECT (SELECT x.seq FROM pawl_jobs AS x WHERE
               x.ordering_key = NEW.ordering_key AND x.state = 5 AND
               x.held = 0 AND x.ordering_skip = 0 AND x.paused_from IS NOT 3
               ORDER BY x.seq LIMIT 1))), 9223372036854775807);
END;

-- The row triggers. Rows without a key, due when written (nearly all),
-- cost the test of their WHEN. A row leaving pending drops its hold
-- first (held is 0 off pending), so that the probes of B see it.
CREATE TRIGGER pawl_jobs_insert_hold AFTER INSERT ON pawl_jobs
  WHEN NEW.ordering_key IS NOT NULL OR (NEW.state = 0 AND
                                         NEW.run_at > NEW.updated_at)
BEGIN
  UPDATE pawl_jobs SET early = 1 WHERE seq = NEW.seq AND NEW.state = 0
    AND NEW.run_at > NEW.updated_at;
  INSERT INTO pawl_key_refresh SELECT NEW.ordering_key
    WHERE NEW.ordering_key IS NOT NULL;
END;
CREATE TRIGGER pawl_jobs_update_early AFTER UPDATE OF state, run_at
  ON pawl_jobs WHEN NEW.state = 0 AND NEW.early = 0 AND
                    NEW.run_at > NEW.updated_at
BEGIN
  UPDATE pawl_jobs SET early = 1 WHERE seq = NEW.seq;
END;
CREATE TRIGGER pawl_jobs_update_hold
  AFTER UPDATE OF state, ordering_skip, paused_from, ordering_key ON pawl_jobs
  WHEN (NEW.ordering_key IS NOT NULL OR OLD.ordering_key IS NOT NULL) AND
       (OLD.state IS NOT NEW.state OR OLD.ordering_skip IS NOT
        NEW.ordering_skip OR OLD.paused_from IS NOT NEW.paused_from OR
        OLD.ordering_key IS NOT NEW.ordering_key)
BEGIN
  UPDATE pawl_jobs SET held = 0 WHERE seq = NEW.seq AND held = 1 AND
    (NEW.state <> 0 OR NEW.ordering_key IS NULL);
  INSERT INTO pawl_key_refresh SELECT NEW.ordering_key
    WHERE NEW.ordering_key IS NOT NULL;
  INSERT INTO pawl_key_refresh SELECT OLD.ordering_key
    WHERE OLD.ordering_key IS NOT NULL AND
          OLD.ordering_key IS NOT NEW.ordering_key;
END;
CREATE TRIGGER pawl_jobs_delete_hold AFTER DELETE ON pawl_jobs
  WHEN OLD.ordering_key IS NOT NULL
BEGIN
  INSERT INTO pawl_key_refresh VALUES (OLD.ordering_key);
END;
