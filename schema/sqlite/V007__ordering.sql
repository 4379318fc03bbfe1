-- pawl schema, SQLite, version 7: per-key ordering.
-- Shipped migrations are never edited: add V008__*.sql instead.
--
-- ordering_key: jobs with the same key run one at a time, in enqueue order
-- (seq), across every node; NULL (nearly every job) for none. The claim
-- decides it (SQLITE_SQL_ORDERING_FREE in stores/sqlite/sqlite_sql.h): a
-- pending job with a key is claimable only when no job with its key is
-- running and no earlier job with its key still holds its place in line
-- (pending, blocked, or paused from pending).
-- ordering_skip: 1 while the job waits for a retry that its type's
-- `ordering = "skip_failed"` lets later jobs pass: it does not hold its
-- place until its retry is due. Set by every requeue (retry: the type's
-- choice; snooze, release: 0), left alone otherwise.
ALTER TABLE pawl_jobs ADD COLUMN ordering_key TEXT;
ALTER TABLE pawl_jobs ADD COLUMN ordering_skip INTEGER NOT NULL DEFAULT 0;

-- Live jobs with a key, by key, state and enqueue order: "is one of this
-- key running?" and "is an earlier one still in line?" are each a probe
-- of it. One index, not one per question: every claim and finish changes
-- a row's state, so SQLite tests each partial index's WHERE on the row it
-- writes, even for jobs without a key (that test is what this feature
-- costs them; bench/RESULTS.md).
CREATE INDEX pawl_jobs_ordering ON pawl_jobs (ordering_key, state, seq)
  WHERE ordering_key IS NOT NULL AND state IN (0, 1, 5, 6);
