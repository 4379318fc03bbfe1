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
  "result, recoveries, progress_done, progress_total, version, seq"
#define SQLITE_JOB_SEQ_COL 29

#define SQLITE_SQL_INSERT                                                    \
  "INSERT INTO pawl_jobs (id, type, queue, state, priority, rank, payload, " \
  "params, tags, run_at, max_attempts, timeout_s, idempotency_key, "         \
  "business_key, correlation_id, enqueued_by, created_at, updated_at, "     \
  "resource) "                                                               \
  "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, "    \
  "?15, ?16, ?17, ?17, ?18)"

/* Claim, in one BEGIN IMMEDIATE transaction: CLAIM picks the due rows in
 * claim order, walking the partial index of pending rows; CLAIM_TAKE then
 * leases exactly those. Picking then taking costs less than one
 * UPDATE ... RETURNING, which stages every returned row in a temporary
 * table (bench/RESULTS.md); the write lock held since BEGIN IMMEDIATE
 * keeps the picked rows pending in between.
 * CLAIM: ?1 now, ?2 limit, ?3 the queue (or a JSON array of queues). */
#define SQLITE_SQL_CLAIM_HEAD                                                \
  "SELECT " SQLITE_JOB_COLS " FROM pawl_jobs WHERE state = 0 AND "
#define SQLITE_SQL_CLAIM_TAIL                                                \
  "run_at <= ?1 ORDER BY rank DESC, run_at, id LIMIT ?2"

#define SQLITE_SQL_CLAIM SQLITE_SQL_CLAIM_HEAD SQLITE_SQL_CLAIM_TAIL
#define SQLITE_SQL_CLAIM_QUEUE                                               \
  SQLITE_SQL_CLAIM_HEAD "queue = ?3 AND " SQLITE_SQL_CLAIM_TAIL
#define SQLITE_SQL_CLAIM_QUEUES                                              \
  SQLITE_SQL_CLAIM_HEAD                                                      \
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
#define SQLITE_JOB_RESOURCE_COL 30
#define SQLITE_SQL_CLAIM_LIM SQLITE_SQL_CLAIM_LIM_HEAD SQLITE_SQL_CLAIM_TAIL
#define SQLITE_SQL_CLAIM_LIM_QUEUE                                           \
  SQLITE_SQL_CLAIM_LIM_HEAD "queue = ?3 AND " SQLITE_SQL_CLAIM_TAIL
#define SQLITE_SQL_CLAIM_LIM_QUEUES                                          \
  SQLITE_SQL_CLAIM_LIM_HEAD                                                  \
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
 * row's queue for the throughput count, once per row written. */
#define SQLITE_SQL_SUCCEED_SET                                               \
  "UPDATE pawl_jobs SET state = 2, result = ?1, finished_at = ?2, "          \
  "updated_at = pawl_tp_note(queue, ?2), lease_expires = NULL, "             \
  "version = version + 1 WHERE "
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
  "SELECT min(run_at) FROM pawl_jobs WHERE state = 0"
#define SQLITE_SQL_NEXT_DUE_QUEUE SQLITE_SQL_NEXT_DUE " AND queue = ?1"
#define SQLITE_SQL_NEXT_DUE_QUEUES                                           \
  SQLITE_SQL_NEXT_DUE " AND queue IN (SELECT value FROM json_each(?1))"

#endif
