/* sqlite_batch_sql.h: the SQLite store's statements for batches
 * (schema/sqlite/V010__batch.sql). */
#ifndef PAWL_SQLITE_BATCH_SQL_H
#define PAWL_SQLITE_BATCH_SQL_H

/* ?1 id, ?2 total, ?3 enqueued_by, ?4 now, ?5 ident (V016). */
#define SQLITE_BATCH_ADD                                                     \
  "INSERT INTO pawl_batches (id, total, enqueued_by, created_at, "           \
  "updated_at, ident) VALUES (?1, ?2, ?3, ?4, ?4, ?5)"

/* The batch of identity ?1 (the partial unique index pawl_batches_ident),
 * and the children of batch ?1 in enqueue order (ids are UUIDv7s handed
 * out in order; the index pawl_jobs_batch finds them). */
#define SQLITE_BATCH_FIND "SELECT id, total FROM pawl_batches WHERE ident = ?1"
#define SQLITE_BATCH_CHILDREN                                                \
  "SELECT id FROM pawl_jobs WHERE batch_id = ?1 ORDER BY id"

/* ?1 id, ?2 batch, ?3 role, ?4 type, ?5 queue, ?6 priority, ?7 payload,
 * ?8 tags, ?9 max_attempts, ?10 timeout_s, ?11 correlation_id,
 * ?12 enqueued_by. */
#define SQLITE_BATCH_CB_ADD                                                  \
  "INSERT INTO pawl_batch_callbacks (id, batch_id, role, type, queue, "      \
  "priority, payload, tags, max_attempts, timeout_s, correlation_id, "       \
  "enqueued_by) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)"

/* Adds ?2 succeeded, ?3 failed, ?4 canceled at ?5 to batch ?1, or (_JOB)
 * to the batch of job ?1 (none: no row, one probe of the primary key).
 * The trigger pawl_batches_fire fires the callbacks when this completes
 * the count. */
#define SQLITE_BATCH_COUNT_SET                                               \
  "UPDATE pawl_batches SET succeeded = succeeded + ?2, failed = failed + "   \
  "?3, canceled = canceled + ?4, updated_at = ?5 WHERE id = "
#define SQLITE_BATCH_COUNT SQLITE_BATCH_COUNT_SET "?1"
#define SQLITE_BATCH_COUNT_JOB                                               \
  SQLITE_BATCH_COUNT_SET "(SELECT batch_id FROM pawl_jobs WHERE id = ?1)"

#define SQLITE_BATCH_GET                                                     \
  "SELECT total, succeeded, failed, canceled, created_at, finished_at "      \
  "FROM pawl_batches WHERE id = ?1"
#define SQLITE_BATCH_CBS                                                     \
  "SELECT role, id, fired_at FROM pawl_batch_callbacks WHERE batch_id = ?1"

/* The children per state, with the run time of the successful attempts
 * (on the row) and the lifetimes of those that ended. */
#define SQLITE_BATCH_STATES                                                  \
  "SELECT state, count(*), sum(CASE WHEN state = 2 THEN finished_at - "      \
  "started_at ELSE 0 END), sum(CASE WHEN state IN (2, 3, 4) THEN "           \
  "finished_at - created_at ELSE 0 END) FROM pawl_jobs WHERE batch_id = ?1 " \
  "GROUP BY state"

/* The run time of the other attempts (pawl_attempts), of children that
 * ended (1) and of the others (0). */
#define SQLITE_BATCH_ATTEMPTS                                                \
  "SELECT j.state IN (2, 3, 4), sum(a.ended_at - a.started_at) FROM "        \
  "pawl_jobs AS j JOIN pawl_attempts AS a ON a.job_id = j.id WHERE "         \
  "j.batch_id = ?1 AND a.started_at IS NOT NULL GROUP BY 1"

#define SQLITE_BATCH_OF "SELECT batch_id FROM pawl_jobs WHERE id = ?1"
#define SQLITE_BATCH_OF_CB                                                   \
  "SELECT batch_id, role FROM pawl_batch_callbacks WHERE id = ?1"

#endif
