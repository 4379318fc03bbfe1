-- pawl schema, SQLite, version 20: the holds are written by the store's
-- own statements, and a pending row is in two indexes again.
-- Shipped migrations are never edited: add V021__*.sql instead.
--
-- V018 kept `held` and `early` by row triggers. SQLite runs a trigger's
-- program for every row its statement writes and tests the WHEN inside
-- it, so every job without a key paid for them at its enqueue, its claim
-- and its finish; and a pending row sat in four indexes (the claim's, the
-- one by queue, the ready one by queue and the one by lane) where two
-- serve. bench/RESULTS.md, "What the claim holds cost jobs without a
-- key", has the figures.
--
-- Now the store writes them (stores/sqlite/claim.c, "holds"):
-- early: computed by the statement that makes a row pending (its run_at
--   after the time it writes); the claim promotes the rows that have come
--   due, as before.
-- held: every statement that changes a keyed row's state, its
--   ordering_skip or its paused_from notes the row's key, and the store
--   refreshes each noted key before the transaction commits, through the
--   "procedure" pawl_key_refresh of V018 (kept). A row leaving pending
--   drops its hold in the same statement. A program that writes keyed
--   rows of pawl_jobs with plain SQL refreshes their keys the same way:
--   INSERT INTO pawl_key_refresh VALUES ('the key');
DROP TRIGGER pawl_jobs_insert_hold;
DROP TRIGGER pawl_jobs_update_early;
DROP TRIGGER pawl_jobs_update_hold;
DROP TRIGGER pawl_jobs_delete_hold;

-- Every pending row by lane (queue, resource), the rows a claim may take
-- first in each lane (held = 0 AND early = 0 is an equality prefix after
-- the queue), in claim order within a lane. It replaces three indexes:
-- pawl_jobs_claim_queue (every pending row by queue: the counts per queue
-- and the rank updates of a queue use its queue prefix), and
-- pawl_jobs_ready_queue and the old pawl_jobs_lane (a claim of some
-- queues now picks lane by lane, each a seek).
DROP INDEX pawl_jobs_claim_queue;
DROP INDEX pawl_jobs_ready_queue;
DROP INDEX pawl_jobs_lane;
CREATE INDEX pawl_jobs_lane ON pawl_jobs
  (queue, held, early, resource, rank DESC, run_at, id) WHERE state = 0;
