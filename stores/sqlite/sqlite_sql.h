/* sqlite_sql.h: the SQL text of the SQLite store's hot path.
 *
 * Kept in one place so that the benchmark's plain-SQL ceiling runs exactly
 * the statements the store runs (bench/store_bench.c includes this file). */
#ifndef PAWL_SQLITE_SQL_H
#define PAWL_SQLITE_SQL_H

/* Columns read into a pawl_job_t, in sq_row_to_job()'s order; seq (the
 * rowid, handed out as the job's store_key) comes last. */
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
  "ordering_key, resource, batch_id, depth) VALUES (?1, ?2, ?3, ?4, ?5, "   \
  "?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?17, ?18, ?19, "  \
  "?20, ?21)"

/* Per-key ordering (issue 14; schema/sqlite/V007__ordering.sql): a pending
 * job with an ordering key is claimable only if no job with its key is
 * running, and no job with its key enqueued before it (lower seq) still
 * holds its place in line: pending, blocked, or paused from pending
 * (paused from failed is dead), unless it is waiting out a retry that its
 * type's ordering = "skip_failed" lets later jobs pass (ordering_skip,
 * until it is due: then it goes first). At most one job per key passes,
 * so a claimed batch never holds two of one key: of two that pass, the
 * earlier is pending and due, and so holds its place against the later.
 * Every claim runs under SQLite's one write lock (BEGIN IMMEDIATE), so no
 * other claim can start a job of the key between this test and the
 * take. Jobs without a key (nearly all) cost the test of one column; the
 * two probes read the partial index of live keyed rows only (O(log n));
 * ORDERING_LIVE repeats its WHERE, which SQLite must find in a query to
 * use a partial index. ?1 is now. */
#define SQLITE_SQL_ORDERING_LIVE "o.state IN (0, 1, 5, 6) AND "
#define SQLITE_SQL_ORDERING_FREE                                             \
  "(ordering_key IS NULL OR (NOT EXISTS (SELECT 1 FROM pawl_jobs AS o "      \
  "WHERE o.ordering_key = pawl_jobs.ordering_key AND "                       \
  SQLITE_SQL_ORDERING_LIVE "o.state = 1) AND "                               \
  "NOT EXISTS (SELECT 1 FROM pawl_jobs AS o WHERE o.ordering_key = "         \
  "pawl_jobs.ordering_key AND " SQLITE_SQL_ORDERING_LIVE "o.state IN "       \
  "(0, 5, 6) AND o.seq < pawl_jobs.seq AND NOT (o.state = 5 AND "            \
  "o.paused_from = 3) AND (o.ordering_skip = 0 OR (o.state = 0 AND "         \
  "o.run_at <= ?1)))))"

/* Queues (issue 14): the jobs of a paused queue are neither claimed nor
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

/* The age boost a row's jobs rank with (issue 14, queues): its queue's
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
 * CLAIM: ?1 now, ?2 limit, ?3 the queue (or a JSON array of queues). */
#define SQLITE_SQL_ANY_PAUSED "SELECT 1 FROM pawl_queues WHERE paused = 1"
#define SQLITE_SQL_CLAIM_HEAD                                                \
  "SELECT " SQLITE_JOB_COLS " FROM pawl_jobs WHERE state = 0 AND "
#define SQLITE_SQL_CLAIM_TAIL                                                \
  "run_at <= ?1 AND " SQLITE_SQL_ORDERING_FREE                               \
  " ORDER BY rank DESC, run_at, id LIMIT ?2"

#define SQLITE_SQL_CLAIM SQLITE_SQL_CLAIM_HEAD SQLITE_SQL_CLAIM_TAIL
#define SQLITE_SQL_CLAIM_QUEUE                                               \
  SQLITE_SQL_CLAIM_HEAD "queue = ?3 AND " SQLITE_SQL_CLAIM_TAIL
#define SQLITE_SQL_CLAIM_QUEUES                                              \
  SQLITE_SQL_CLAIM_HEAD                                                      \
  "queue IN (SELECT value FROM json_each(?3)) AND " SQLITE_SQL_CLAIM_TAIL
/* The same three with a queue paused (issue 14). */
#define SQLITE_SQL_CLAIM_UNPAUSED                                            \
  SQLITE_SQL_CLAIM_HEAD SQLITE_SQL_UNPAUSED SQLITE_SQL_CLAIM_TAIL
#define SQLITE_SQL_CLAIM_QUEUE_UNPAUSED                                      \
  SQLITE_SQL_CLAIM_HEAD SQLITE_SQL_UNPAUSED "queue = ?3 AND "                \
  SQLITE_SQL_CLAIM_TAIL
#define SQLITE_SQL_CLAIM_QUEUES_UNPAUSED                                     \
  SQLITE_SQL_CLAIM_HEAD SQLITE_SQL_UNPAUSED                                  \
  "queue IN (SELECT value FROM json_each(?3)) AND " SQLITE_SQL_CLAIM_TAIL

/* Limits (issue 14; stores/store.h, "limits"): on a database with
 * limits, the claim picks with these instead, which leave out the jobs of
 * the limits with nothing left: ?4 a JSON array of such resources, ?5 of
 * such queues (the other parameters as above). The resource comes after
 * the job's columns, for the admission of each picked job. */
#define SQLITE_SQL_CLAIM_LIM_HEAD                                            \
  "SELECT " SQLITE_JOB_COLS ", resource FROM pawl_jobs WHERE state = 0 AND " \
  "(resource IS NULL OR resource NOT IN (SELECT value FROM json_each(?4))) " \
  "AND queue NOT IN (SELECT value FROM json_each(?5)) AND "
#define SQLITE_JOB_RESOURCE_COL (SQLITE_JOB_SEQ_COL + 1)
#define SQLITE_SQL_CLAIM_LIM SQLITE_SQL_CLAIM_LIM_HEAD SQLITE_SQL_CLAIM_TAIL
#define SQLITE_SQL_CLAIM_LIM_QUEUE                                           \
  SQLITE_SQL_CLAIM_LIM_HEAD "queue = ?3 AND " SQLITE_SQL_CLAIM_TAIL
#define SQLITE_SQL_CLAIM_LIM_QUEUES                                          \
  SQLITE_SQL_CLAIM_LIM_HEAD                                                  \
  "queue IN (SELECT value FROM json_each(?3)) AND " SQLITE_SQL_CLAIM_TAIL
/* The same three with a queue paused (issue 14, queues): the limited claim
 * filters paused queues and keeps per-key ordering (CLAIM_TAIL) as the
 * plain one does. */
#define SQLITE_SQL_CLAIM_LIM_UNPAUSED                                        \
  SQLITE_SQL_CLAIM_LIM_HEAD SQLITE_SQL_UNPAUSED SQLITE_SQL_CLAIM_TAIL
#define SQLITE_SQL_CLAIM_LIM_QUEUE_UNPAUSED                                  \
  SQLITE_SQL_CLAIM_LIM_HEAD SQLITE_SQL_UNPAUSED "queue = ?3 AND "            \
  SQLITE_SQL_CLAIM_TAIL
#define SQLITE_SQL_CLAIM_LIM_QUEUES_UNPAUSED                                 \
  SQLITE_SQL_CLAIM_LIM_HEAD SQLITE_SQL_UNPAUSED                              \
  "queue IN (SELECT value FROM json_each(?3)) AND " SQLITE_SQL_CLAIM_TAIL

/* CLAIM_TAKE: ?1 now, ?2 owner, ?3 lease token, ?4 lease expiry, ?5 a JSON
 * array of the picked seqs. Progress belongs to an attempt, so a new
 * attempt starts without any. sq_claim() applies the same changes to the
 * jobs it hands out. */
#define SQLITE_SQL_CLAIM_TAKE                                                \
  "UPDATE pawl_jobs SET state = 1, attempt = attempt + 1, started_at = ?1, " \
  "lease_owner = ?2, lease_token = ?3, lease_expires = ?4, updated_at = ?1, "\
  "progress_done = NULL, progress_total = NULL, version = version + 1 "      \
  "WHERE seq IN (SELECT value FROM json_each(?5)) AND state = 0"

/* Success, the common path: one UPDATE per job, its history on the row.
 * ?1 result, ?2 now, ?3 id, ?4 lease token, ?5 attempt; SUCCEED_SEQ finds
 * the row by its rowid ?6 (the store_key the claim handed out) and still
 * checks the id, so a stale or foreign key cannot complete another job.
 * One UPDATE per row by rowid costs less than one UPDATE for the whole
 * batch with the outcomes in a JSON array: parsing that array was most of
 * the finish's CPU (bench/RESULTS.md). updated_at goes through
 * pawl_tp_note(), the store's SQL function (sqlite_store.c) that notes the
 * row's queue for the throughput count, its batch (issue 15; NULL for
 * nearly every job) for the batch's counters, and its seq when it has
 * children to release (deps_open, issue 15), once per row written. */
#define SQLITE_SQL_SUCCEED_SET                                               \
  "UPDATE pawl_jobs SET state = 2, result = ?1, last_error = NULL, "         \
  "finished_at = ?2, "                                                       \
  "updated_at = pawl_tp_note(queue, ?2, batch_id, CASE WHEN deps_open "      \
  "THEN seq END), lease_expires = NULL, version = version + 1 WHERE "
#define SQLITE_SQL_SUCCEED                                                   \
  SQLITE_SQL_SUCCEED_SET                                                     \
  "id = ?3 AND state = 1 AND lease_token = ?4 AND attempt = ?5"
#define SQLITE_SQL_SUCCEED_SEQ                                               \
  SQLITE_SQL_SUCCEED_SET                                                     \
  "seq = ?6 AND id = ?3 AND state = 1 AND lease_token = ?4 AND attempt = ?5"

/* Throughput (stores/store.h, "Throughput"): how a finish adds to a
 * minute's bucket, one UPSERT per distinct state and queue of the batch. */
#define SQLITE_SQL_TP_UPSERT                                                 \
  " ON CONFLICT (minute, state, queue) DO UPDATE SET count = "               \
  "count + excluded.count"

/* The earliest run_at among pending jobs, for a poller with nothing due:
 * all queues, one (?1), or a JSON array of them (?1). A min() over the
 * pending rows' partial indexes (pawl_jobs_claim, or the queue prefix of
 * pawl_jobs_claim_queue), never the finished history: its cost grows with
 * the pending jobs only (see V002__logs_progress.sql for why no index of
 * its own). */
#define SQLITE_SQL_NEXT_DUE                                                  \
  "SELECT min(run_at) FROM pawl_jobs WHERE " SQLITE_SQL_UNPAUSED "state = 0"
#define SQLITE_SQL_NEXT_DUE_QUEUE SQLITE_SQL_NEXT_DUE " AND queue = ?1"
#define SQLITE_SQL_NEXT_DUE_QUEUES                                           \
  SQLITE_SQL_NEXT_DUE " AND queue IN (SELECT value FROM json_each(?1))"

#endif
