/* sqlite_sql.h: the SQL text of the SQLite store's hot path.
 *
 * Kept in one place so that the benchmark's plain-SQL ceiling runs exactly
 * the statements the store runs (bench/store_bench.c includes this file). */
#ifndef PAWL_SQLITE_SQL_H
#define PAWL_SQLITE_SQL_H

/* Columns read into a pawl_job_t, in pawl__sq_row_to_job()'s order; seq
 * (the rowid, handed out as the job's store_key) comes last. */
#define SQLITE_JOB_COLS                                                      \
  "id, type, queue, state, paused_from, priority, payload, params, tags, "   \
  "run_at, attempt, max_attempts, timeout_s, idempotency_key, "              \
  "business_key, correlation_id, enqueued_by, created_at, updated_at, "      \
  "started_at, finished_at, lease_owner, lease_expires, last_error, "        \
  "result, recoveries, progress_done, progress_total, version, "            \
  "ordering_key, depth, seq"
#define SQLITE_JOB_SEQ_COL 31

#define SQLITE_SQL_INSERT                                                    \
  "INSERT INTO pawl_jobs (id, type, queue, state, priority, rank, payload, " \
  "params, tags, run_at, max_attempts, timeout_s, idempotency_key, "         \
  "business_key, correlation_id, enqueued_by, created_at, updated_at, "     \
  "ordering_key, resource, batch_id, depth, early) VALUES (?1, ?2, ?3, ?4, " \
  "?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?17, ?18, "   \
  "?19, ?20, ?21, ?22)"

/* Per-key ordering (schema/sqlite/V007__ordering.sql,
 * V018__claim_holds.sql, V020__holds_by_store.sql): a pending job with an ordering key is claimable
 * only if no job with its key is running, and no job with its key enqueued
 * before it (lower seq) still holds its place in line: pending, blocked,
 * or paused from pending (paused from failed is dead), unless it is
 * waiting out a retry that its type's ordering = "skip_failed" lets later
 * jobs pass (ordering_skip, until it is due: then it goes first).
 * The store keeps every part of that rule that does not depend on the
 * time in the row (pawl__sq_keys_flush()): a pending job that is not one
 * of its key's candidates has held = 1 and is in none of the claim's
 * indexes, so the claim never reads it. What is left for the claim is the
 * time: a candidate waits for an earlier candidate (one waiting out a
 * skip_failed retry) that has come due. That probe seeks the key's
 * unheld pending rows in pawl_jobs_key (ordering_key, state, held, seq)
 * and reads the candidates before this one: nearly always none. At most
 * one job per key passes, so a claimed batch never holds two of one key.
 * Every claim runs under SQLite's one write lock (BEGIN IMMEDIATE), so no
 * other claim can start a job of the key between this test and the take.
 * Jobs without a key (nearly all) cost the test of one column. ?1 is now. */
#define SQLITE_SQL_ORDERING_FREE                                             \
  "(ordering_key IS NULL OR NOT EXISTS (SELECT 1 FROM pawl_jobs AS o "       \
  "INDEXED BY pawl_jobs_key WHERE o.ordering_key = pawl_jobs.ordering_key "  \
  "AND o.state = 0 AND o.held = 0 AND o.seq < pawl_jobs.seq AND "            \
  "o.ordering_skip = 1 AND o.run_at <= ?1))"

/* The rows a claim may take (V018__claim_holds.sql): pending, not held
 * behind their key, due when written. A claim first promotes the rows of
 * pawl_jobs_early that have come due (PROMOTE, ?1 now), so that they
 * join these. The claim's statements name their index: the planner could
 * otherwise take pawl_jobs_lane (every pending row by lane, held ones
 * included) and sort. */
#define SQLITE_SQL_READY "state = 0 AND held = 0 AND early = 0 AND "
#define SQLITE_SQL_PROMOTE                                                   \
  "UPDATE pawl_jobs SET early = 0 WHERE state = 0 AND held = 0 AND "         \
  "early = 1 AND run_at <= ?1"
/* Whether any row is there to promote: a read of one index entry, where
 * the UPDATE opens a cursor on every index the column is in (about a
 * quarter of a claim's cost on a database with nothing due later). */
#define SQLITE_SQL_PROMOTE_ANY                                               \
  "SELECT 1 FROM pawl_jobs INDEXED BY pawl_jobs_early WHERE state = 0 AND "  \
  "held = 0 AND early = 1 AND run_at <= ?1 LIMIT 1"

/* Queues: the jobs of a paused queue are neither claimed nor
 * waited for (next_due). The subquery does not depend on the row, so
 * SQLite runs it once per statement into an in-memory index and probes
 * that for each row the statement walks. The claim reads the paused set in
 * its own transaction (a pause that has returned is seen by every claim
 * that starts after it), first with SQLITE_SQL_ANY_PAUSED: with no queue
 * paused, the common case, it runs the statements without the filter,
 * whose probe cost about 800 instructions per job claimed (+1.3% on claim
 * + complete; bench/RESULTS.md). */
#define SQLITE_SQL_UNPAUSED                                                  \
  "queue NOT IN (SELECT name FROM pawl_queues WHERE paused = 1) AND "

/* The age boost a row's jobs rank with: its queue's
 * own (pawl_queues.age_boost_ms), else `dflt` (the database's, bound by
 * the caller). For statements on pawl_jobs that compute a rank with
 * pawl_rank(), the store's SQL function (store_rank()). */
#define SQLITE_SQL_QUEUE_BOOST(dflt)                                         \
  "coalesce((SELECT q.age_boost_ms FROM pawl_queues AS q WHERE q.name = "    \
  "pawl_jobs.queue), " dflt ")"

/* Claim, in one BEGIN IMMEDIATE transaction: CLAIM picks the due rows in
 * claim order, walking the partial index of pending rows; CLAIM_TAKE then
 * leases exactly those. Picking then taking costs less than one
 * UPDATE ... RETURNING, which stages every returned row in a temporary
 * table (bench/RESULTS.md); the write lock held since BEGIN IMMEDIATE
 * keeps the picked rows pending in between.
 * CLAIM: ?1 now, ?2 limit. */
#define SQLITE_SQL_ANY_PAUSED "SELECT 1 FROM pawl_queues WHERE paused = 1"
#define SQLITE_SQL_CLAIM_HEAD                                                \
  "SELECT " SQLITE_JOB_COLS " FROM pawl_jobs INDEXED BY pawl_jobs_claim "   \
  "WHERE " SQLITE_SQL_READY
#define SQLITE_SQL_CLAIM_TAIL                                                \
  "run_at <= ?1 AND " SQLITE_SQL_ORDERING_FREE                               \
  " ORDER BY rank DESC, run_at, id LIMIT ?2"

/* A claim of every queue; a claim of some queues picks by lanes
 * (SQLITE_SQL_CLAIM_LANE). */
#define SQLITE_SQL_CLAIM SQLITE_SQL_CLAIM_HEAD SQLITE_SQL_CLAIM_TAIL
/* The same with a queue paused. */
#define SQLITE_SQL_CLAIM_UNPAUSED                                            \
  SQLITE_SQL_CLAIM_HEAD SQLITE_SQL_UNPAUSED SQLITE_SQL_CLAIM_TAIL

/* Limits (stores/store.h, "limits"): on a database with limits, the claim
 * picks with these instead, which leave out the jobs of the limits with
 * nothing left: ?4 a JSON array of such resources, ?5 of such queues (the
 * other parameters as above). The resource comes after the job's
 * columns, for the admission of each picked job. */
#define SQLITE_SQL_CLAIM_LIM_HEAD                                            \
  "SELECT " SQLITE_JOB_COLS ", resource FROM pawl_jobs INDEXED BY "          \
  "pawl_jobs_claim WHERE " SQLITE_SQL_READY                                  \
  "(resource IS NULL OR resource NOT IN (SELECT value FROM json_each(?4))) " \
  "AND queue NOT IN (SELECT value FROM json_each(?5)) AND "
#define SQLITE_JOB_RESOURCE_COL (SQLITE_JOB_SEQ_COL + 1)
#define SQLITE_SQL_CLAIM_LIM SQLITE_SQL_CLAIM_LIM_HEAD SQLITE_SQL_CLAIM_TAIL
/* The same with a queue paused: the limited claim filters paused queues
 * and keeps per-key ordering (CLAIM_TAIL) as the plain one does. */
#define SQLITE_SQL_CLAIM_LIM_UNPAUSED                                        \
  SQLITE_SQL_CLAIM_LIM_HEAD SQLITE_SQL_UNPAUSED SQLITE_SQL_CLAIM_TAIL

/* Lanes (V018, V020): a claim of some queues, and any claim with a queue
 * paused or a limit with nothing left, picks per lane, a (queue,
 * resource) pair, from pawl_jobs_lane, skipping the blocked lanes as
 * ranges, and merges the picks in claim order in C (sq_claim_lanes()).
 * LANE_QUEUE: the next queue with pending jobs after ?1 (held ones too: a
 * seek, where the next queue with ready jobs would walk the held ones);
 * LANE_NONE: whether queue ?1 has ready jobs without a resource;
 * LANE_RES: its next resource with ready jobs after ?2; CLAIM_LANE: the
 * first ?2 due jobs of lane (?3, ?4), with their resource and rank. Each
 * is a seek; names are never empty, so '' comes before every one. */
#define SQLITE_SQL_LANE_QUEUE                                                \
  "SELECT min(queue) FROM pawl_jobs INDEXED BY pawl_jobs_lane WHERE "        \
  "state = 0 AND queue > ?1"
#define SQLITE_SQL_LANE_NONE                                                 \
  "SELECT 1 FROM pawl_jobs INDEXED BY pawl_jobs_lane WHERE " SQLITE_SQL_READY \
  "queue = ?1 AND resource IS NULL LIMIT 1"
#define SQLITE_SQL_LANE_RES                                                  \
  "SELECT min(resource) FROM pawl_jobs INDEXED BY pawl_jobs_lane WHERE "     \
  SQLITE_SQL_READY "queue = ?1 AND resource > ?2"
#define SQLITE_SQL_CLAIM_LANE                                                \
  "SELECT " SQLITE_JOB_COLS ", resource, rank FROM pawl_jobs INDEXED BY "    \
  "pawl_jobs_lane WHERE " SQLITE_SQL_READY "queue = ?3 AND resource IS ?4 "  \
  "AND " SQLITE_SQL_CLAIM_TAIL
#define SQLITE_SQL_PAUSED_QUEUES "SELECT name FROM pawl_queues WHERE paused = 1"

/* CLAIM_TAKE: ?1 now, ?2 owner, ?3 lease token, ?4 lease expiry, ?5 a JSON
 * array of picked seqs, ?6 their started_at: ?1 for jobs that start now,
 * NULL for those claimed ahead of a free worker (store_claim_t.ahead_from),
 * whose start is recorded when their body starts. A claim with both runs
 * it twice, once for each list: a per-row test of the ahead list cost
 * every claimed job a probe (bench/RESULTS.md). Progress belongs to an
 * attempt, so a new attempt starts without any. OR ROLLBACK: a constraint
 * that fails ends the transaction, as every error of a claim does anyway
 * (pawl__sq_end()), so SQLite keeps no statement journal for this
 * many-row UPDATE. pawl__sq_claim() applies the same changes to the jobs
 * it hands out. */
#define SQLITE_SQL_CLAIM_TAKE                                                \
  "UPDATE OR ROLLBACK pawl_jobs SET state = 1, attempt = attempt + 1, "      \
  "started_at = ?6, lease_owner = ?2, lease_token = ?3, lease_expires = ?4, "\
  "updated_at = ?1, progress_done = NULL, progress_total = NULL, "           \
  "version = version + 1 "                                                   \
  "WHERE seq IN (SELECT value FROM json_each(?5)) AND state = 0"

/* Success, its history on the row: a success alone, and an outcome a
 * run of them (SQLITE_SQL_SUCCEED_MANY) did not write.
 * ?1 result, ?2 now, ?3 id, ?4 lease token, ?5 attempt, ?7 and ?8 the
 * body's start and end (its run: started_at to finished_at); SUCCEED_SEQ finds
 * the row by its rowid ?6 (the store_key the claim handed out) and still
 * checks the id, so a stale or foreign key cannot complete another job.
 * An UPDATE for a whole batch with the outcomes in a JSON array read by
 * `->>` for each column cost more than one UPDATE per row: parsing that
 * array was most of the finish's CPU (bench/RESULTS.md); SUCCEED_MANY
 * reads the per-row values from C instead. updated_at goes through
 * pawl_tp_note(), the store's SQL function (terminal.c) that notes the
 * row's queue for the throughput count, its batch (NULL for
 * nearly every job) for the batch's counters, its seq when it has
 * children to release (deps_open), and its ordering key (NULL
 * for nearly every job) for the key's holds, once per row written. */
/* The run time of the attempt ending, as the worker measured it (?7 its
 * start, ?8 its end; NULL: not measured), kept within the claim (the
 * row's started_at) and the finish (?2, which the store caps them at). */
#define SQLITE_SQL_RUN_START(start)                                          \
  "CASE WHEN " start " IS NULL THEN started_at ELSE max(coalesce("           \
  "started_at, " start "), " start ") END"
#define SQLITE_SQL_RUN_END(start, end, now)                                  \
  "CASE WHEN " end " IS NULL THEN " now " ELSE max(" end ", coalesce("       \
  SQLITE_SQL_RUN_START(start) ", " end ")) END"
#define SQLITE_SQL_SUCCEED_SET                                               \
  "UPDATE pawl_jobs SET state = 2, result = ?1, last_error = NULL, "         \
  "started_at = "                                                          \
  SQLITE_SQL_RUN_START("?7") ", finished_at = "                              \
  SQLITE_SQL_RUN_END("?7", "?8", "?2") ", "                                  \
  "updated_at = pawl_tp_note(queue, ?2, batch_id, CASE WHEN deps_open "      \
  "THEN seq END, ordering_key), lease_expires = NULL, version = version + 1 WHERE "
#define SQLITE_SQL_SUCCEED                                                   \
  SQLITE_SQL_SUCCEED_SET                                                     \
  "id = ?3 AND state = 1 AND lease_token = ?4 AND attempt = ?5"
#define SQLITE_SQL_SUCCEED_SEQ                                               \
  SQLITE_SQL_SUCCEED_SET                                                     \
  "seq = ?6 AND id = ?3 AND state = 1 AND lease_token = ?4 AND attempt = ?5"

/* A run of two or more successes of one finish that carry their row key,
 * written by one statement: ?1 a JSON array of their seqs, ?2 now, ?3
 * the lease token. Each row's outcome is found by its seq through the
 * store's SQL functions (terminal.c): pawl_fin_ok() checks the job's id
 * and attempt as SUCCEED_SEQ does, pawl_fin_result() hands over the
 * result (and marks the outcome written), pawl_fin_start() and
 * pawl_fin_end() compute the run as SQLITE_SQL_RUN_START and _END do
 * from the row's started_at. One statement opens the cursors of the
 * table's indexes once for the run instead of once per job, which was
 * about a sixth of a success's cost (bench/RESULTS.md); the per-row
 * values come from C, not from JSON parsed again for each column (the
 * reason the one-statement finish was dropped before). An outcome it
 * does not write (a stale attempt, a foreign key) goes the way of
 * SUCCEED_SEQ's fallback, by its id; a run with two outcomes of one job
 * is written one by one (sq_finish_run()). OR ROLLBACK: an error ends the finish's
 * transaction anyway, so no statement journal is kept. */
#define SQLITE_SQL_SUCCEED_MANY                                              \
  "UPDATE OR ROLLBACK pawl_jobs SET state = 2, result = pawl_fin_result("    \
  "seq), last_error = NULL, started_at = pawl_fin_start(seq, started_at), "  \
  "finished_at = pawl_fin_end(seq, started_at), "                            \
  "updated_at = pawl_tp_note(queue, ?2, batch_id, CASE WHEN deps_open "      \
  "THEN seq END, ordering_key), lease_expires = NULL, version = version + 1 "\
  "WHERE seq IN (SELECT value FROM json_each(?1)) AND state = 1 AND "        \
  "lease_token = ?3 AND pawl_fin_ok(seq, id, attempt)"

/* Throughput (stores/store.h, "Throughput"): how a finish adds to a
 * minute's bucket, one UPSERT per distinct state and queue of the batch. */
#define SQLITE_SQL_TP_UPSERT                                                 \
  " ON CONFLICT (minute, state, queue) DO UPDATE SET count = "               \
  "count + excluded.count"

/* When the next job a claim could take is due, for a poller with nothing
 * due: the run_at of any ready row (all are due), else the earliest of
 * the rows due later (pawl_jobs_early; min() reads its first match in
 * run_at order). Held jobs are not due: a keyed job behind a running,
 * blocked or paused head is not waited for (`pawl run --until-idle` ends).
 * `filter` ends in "AND "; ?1 the queue or a JSON array of queues. */
#define SQLITE_SQL_NEXT_DUE_OF(idx, filter)                                  \
  "SELECT min(t) FROM (SELECT (SELECT run_at FROM pawl_jobs INDEXED BY "     \
  idx " WHERE ?9 IS NULL AND " filter SQLITE_SQL_READY "1 LIMIT 1) AS t "    \
  "UNION ALL SELECT "                                                        \
  "(SELECT min(run_at) FROM pawl_jobs INDEXED BY pawl_jobs_early WHERE "     \
  filter "state = 0 AND held = 0 AND early = 1))"
#define SQLITE_SQL_NEXT_DUE                                                  \
  SQLITE_SQL_NEXT_DUE_OF("pawl_jobs_claim", SQLITE_SQL_UNPAUSED)
#define SQLITE_SQL_NEXT_DUE_QUEUE                                            \
  SQLITE_SQL_NEXT_DUE_OF("pawl_jobs_lane",                                   \
                         SQLITE_SQL_UNPAUSED "queue = ?1 AND ")
#define SQLITE_SQL_NEXT_DUE_QUEUES                                           \
  SQLITE_SQL_NEXT_DUE_OF("pawl_jobs_claim", SQLITE_SQL_UNPAUSED              \
                         "queue IN (SELECT value FROM json_each(?1)) AND ")
/* next_due with limits: the next due job of ?1's queues (NULL: all)
 * under no limit with nothing left (?2 resources, ?3 queues, JSON
 * arrays); and that of one resource (?1) or queue (?1) whose rate window
 * is used up. Paused queues' jobs are not due (queues). */
#define SQLITE_SQL_NEXT_DUE_LIM                                              \
  SQLITE_SQL_NEXT_DUE_OF(                                                    \
      "pawl_jobs_claim", SQLITE_SQL_UNPAUSED "(?1 IS NULL "                  \
      "OR queue IN (SELECT value FROM json_each(?1))) AND (resource IS "     \
      "NULL OR resource NOT IN (SELECT value FROM json_each(?2))) AND "      \
      "queue NOT IN (SELECT value FROM json_each(?3)) AND ")
#define SQLITE_SQL_NEXT_DUE_LIM_RES                                          \
  SQLITE_SQL_NEXT_DUE_OF(                                                    \
      "pawl_jobs_claim", SQLITE_SQL_UNPAUSED "resource = ?1 AND (?2 IS "     \
      "NULL OR queue IN (SELECT value FROM json_each(?2))) AND ")
#define SQLITE_SQL_NEXT_DUE_LIM_QUEUE                                        \
  SQLITE_SQL_NEXT_DUE_OF("pawl_jobs_lane",                                   \
                         SQLITE_SQL_UNPAUSED "queue = ?1 AND ")

/* The limits a claim reads first; the permits in use, on the running
 * rows through pawl_jobs_running (a few per worker; no index of their
 * own: see V008__limits.sql). */
#define SQLITE_SQL_LIMITS_READ                                               \
  "SELECT name, max_running, rate, rate_window_ms, window_start, "           \
  "window_count FROM pawl_limits"
#define SQLITE_SQL_LIMIT_RUNNING_RES                                         \
  "SELECT count(*) FROM pawl_jobs WHERE state = 1 AND resource = ?1"
#define SQLITE_SQL_LIMIT_RUNNING_QUEUE                                       \
  "SELECT count(*) FROM pawl_jobs WHERE state = 1 AND queue = ?1"

#endif
