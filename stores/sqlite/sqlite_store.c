/* sqlite_store.c: the SQLite backend of the store interface.
 *
 * One connection per store_t, in WAL mode. Every statement is prepared once
 * (on first use, SQLITE_PREPARE_PERSISTENT) and reused; every value is
 * bound. Each operation runs in its own BEGIN IMMEDIATE transaction, which
 * takes SQLite's single write lock up front, so compare-and-set checks
 * inside a transaction cannot race another writer; the version checks stay
 * in the SQL anyway so the semantics match the PostgreSQL backend. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <pthread.h>
#include <sqlite3.h>

#include "alloc.h"
#include "iso8601.h"
#include "buf.h"
#include "sqlite_admin_sql.h"
#include "sqlite_batch_sql.h"
#include "sqlite_deps_sql.h"
#include "sqlite_recurring_sql.h"
#include "sqlite_flow_sql.h"
#include "sqlite_steps_sql.h"
#include "sqlite_alerts_sql.h"
#include <inttypes.h>
#include "sqlite_sql.h"
#include "store.h"

extern const store_migration_t pawl__store_sqlite_migrations[];
extern const size_t pawl__store_sqlite_migration_count;

/* Statement ids; their SQL is in sq_sql[]. */
enum {
  SQ_BEGIN,
  SQ_COMMIT,
  SQ_ROLLBACK,
  SQ_IDEM_FIND,
  SQ_IDEM_ADD,
  SQ_BIZ_FIND,
  SQ_INSERT,
  SQ_GET,
  SQ_LIST,
  SQ_LIST_FAILED,
  SQ_CLAIM,          /* every queue; some queues go by lanes */
  SQ_CLAIM_UNPAUSED, /* the same, for when a queue is paused */
  SQ_ANY_PAUSED,
  SQ_CLAIM_TAKE,
  SQ_PROMOTE, /* the rows due later that have come due join the ready ones */
  SQ_PROMOTE_ANY,
  SQ_LANE_QUEUE, /* lanes (sq_claim_lanes()) */
  SQ_LANE_NONE,
  SQ_LANE_RES,
  SQ_CLAIM_LANE,
  SQ_PAUSED_QUEUES,
  SQ_SUCCEED,
  SQ_SUCCEED_SEQ,
  SQ_ATTEMPT_ADD,
  SQ_EVENT_FROM_ROW,
  SQ_EVENT_ADD,
  SQ_FAIL,
  SQ_REQUEUE,
  SQ_EXTEND,
  SQ_EXPIRED,
  SQ_RECOVER,
  SQ_CRASHED,
  SQ_START,
  SQ_RUN_START,
  SQ_FORGET_START,
  SQ_TRANSITION,
  SQ_KEY_REFRESH,
  SQ_ATTEMPTS,
  SQ_EVENTS,
  SQ_LOCK_ACQUIRE,
  SQ_LOCK_EXTEND,
  SQ_LOCK_RELEASE,
  SQ_NODE_BEAT,
  SQ_NODE_LIST,
  SQ_NODE_REAP,
  SQ_NODE_STOP,
  SQ_SETTING_GET,
  SQ_SETTING_SET,
  SQ_RERANK,
  SQ_PROGRESS,
  SQ_EXISTS,
  SQ_LOGS,
  SQ_LOG_ADD,
  SQ_EXTEND_ONE,
  SQ_NEXT_DUE,
  SQ_NEXT_DUE_QUEUE,
  SQ_NEXT_DUE_QUEUES,
  SQ_DATA_VERSION,
  /* administration: see the section at the end of this file */
  SQ_ADM_BEGIN_READ,
  SQ_ADM_SAVEPOINT,
  SQ_ADM_RELEASE,
  SQ_ADM_ROLLBACK_TO,
  SQ_ADM_COUNT,
  SQ_ADM_COUNT_FAILED,
  SQ_ADM_PICK,
  SQ_ADM_PICK_FAILED,
  SQ_ADM_LIST,
  SQ_ADM_STATS_PENDING,
  SQ_ADM_STATS_RUNNING,
  SQ_ADM_STATS_DONE,
  SQ_ADM_STATS_TP,
  SQ_MET_TP,
  SQ_TP_ADD,
  SQ_TP_ADD_ID,
  SQ_TP_TRIM,
  SQ_ADM_RUNNING,
  SQ_ADM_LOCKS,
  /* recurring definitions: see the section at the end of this file */
  SQ_REC_ADD,
  SQ_REC_PUT_SCRIPT,
  SQ_REC_GET,
  SQ_REC_LIST,
  SQ_REC_UPDATE,
  SQ_REC_REMOVE,
  SQ_REC_DUE,
  SQ_REC_ADVANCE,
  SQ_REC_LAST_JOB,
  SQ_REC_DISABLE_GONE,
  SQ_REC_DISABLE_LISTED,
  SQ_REC_LOAD_ERROR,
  /* queues: see the section "queues" */
  SQ_QUEUE_BOOST,
  SQ_QUEUE_PAUSE,
  SQ_QUEUE_RESUME,
  SQ_QUEUE_SET_BOOST,
  SQ_QUEUE_LIST,
  /* limits: see "limits" below */
  SQ_CLAIM_LIM,          /* same order as SQ_CLAIM, SQ_CLAIM_UNPAUSED */
  SQ_CLAIM_LIM_UNPAUSED,
  SQ_LIMITS_READ,
  SQ_LIMIT_RUNNING_RES,
  SQ_LIMIT_RUNNING_QUEUE,
  SQ_LIMIT_WINDOW,
  SQ_LIMIT_SET,
  SQ_LIMIT_REMOVE,
  SQ_LIMIT_LIST,
  SQ_TYPES_SYNC, /* pawl_types */
  SQ_TYPE_REDACT,
  SQ_NEXT_DUE_LIM,
  SQ_NEXT_DUE_LIM_RES,
  SQ_NEXT_DUE_LIM_QUEUE,
  /* signals and replace (sqlite_flow_sql.h) */
  SQ_SIG_RELEASE,
  SQ_SIG_HOLDER,
  SQ_SIG_ADD,
  SQ_SIG_DELIVER,
  SQ_SIG_GET,
  SQ_SIG_DUE,
  SQ_SIG_EXPIRE,
  SQ_SIG_NEXT,
  SQ_REP_ADD,
  SQ_REP_CARRY,
  SQ_REP_INSTANCE,
  SQ_REP_BATCH,
  SQ_REP_LEAVE,
  SQ_REP_NEXT,
  SQ_REP_PREV,
  /* batches: see the section "batches" */
  SQ_BATCH_ADD,
  SQ_BATCH_CB_ADD,
  SQ_BATCH_COUNT,
  SQ_BATCH_COUNT_JOB,
  SQ_BATCH_GET,
  SQ_BATCH_CBS,
  SQ_BATCH_STATES,
  SQ_BATCH_ATTEMPTS,
  SQ_BATCH_OF,
  SQ_BATCH_OF_CB,
  SQ_BATCH_FIND,
  SQ_BATCH_CHILDREN,
  /* dependencies: see the section "dependencies" */
  SQ_DEPS_RELEASE,
  SQ_DEPS_CLOSE,
  SQ_DEPS_OPEN_SEQ,
  SQ_DEPS_PARENT,
  SQ_DEPS_EDGE,
  SQ_DEPS_MARK_OPEN,
  SQ_DEPS_COUNTS,
  SQ_DEPS_WHY,
  SQ_DEPS_UNCOUNT,
  SQ_DEPS_CANCELED,
  SQ_DEPS_RECOUNT,
  SQ_DEPS_REOPEN_SELF,
  SQ_DEPS_BRANCHES,
  SQ_DEPS_LIST,
  SQ_DEPS_HAND_PARENT,
  SQ_DEPS_HAND_CHILD,
  SQ_DEPS_HAND_CLOSE,
  SQ_DEPS_TAKE_OVER,
  /* steps and instances: see the section "steps" */
  SQ_STEP_READ_BEGIN,
  SQ_STEP_LIST,
  SQ_STEP_EXIT_GET,
  SQ_STEP_INSTANCE_OF,
  SQ_STEP_BEGIN,
  SQ_STEP_LOST,
  SQ_STEP_SAVE,
  SQ_STEP_END,
  SQ_STEP_EXIT,
  SQ_INSTANCE_FIND,
  SQ_INSTANCE_TAKE,
  /* pawl top: see the section "top" */
  SQ_TOP_TP,
  SQ_TOP_RUNNING,
  /* dead-letter alerts (sqlite_alerts_sql.h) */
  SQ_ALERT_ADD,
  SQ_ALERT_ROLL,
  SQ_ALERT_ROLL_DEL,
  SQ_ALERT_TAKE,
  SQ_ALERT_GET,
  SQ_ALERT_WINDOW,
  SQ_ALERT_VERDICT,
  SQ_ALERT_DONE,
  /* retention: the section "retention" at the end */
  SQ_RET_SCAN,
  SQ_RET_ARCHIVE_JOB,
  SQ_RET_ARCHIVE_ATTEMPTS,
  SQ_RET_ARCHIVE_EVENTS,
  SQ_RET_ARCHIVE_LOGS,
  SQ_RET_DELETE,
  SQ_RET_DEPS_PARENT,
  SQ_RET_DEPS_CHILD,
  SQ_COUNT
};

/* sq_claim() picks a variant by offsets from SQ_CLAIM: the limited ones
 * mirror the plain ones. */
_Static_assert(SQ_CLAIM_LIM_UNPAUSED - SQ_CLAIM_LIM ==
                   SQ_CLAIM_UNPAUSED - SQ_CLAIM,
               "SQ_CLAIM_LIM* mirror SQ_CLAIM*");

static const char *const sq_sql[SQ_COUNT] = {
    [SQ_BEGIN] = "BEGIN IMMEDIATE",
    [SQ_COMMIT] = "COMMIT",
    [SQ_ROLLBACK] = "ROLLBACK",
    [SQ_IDEM_FIND] = "SELECT job_id FROM pawl_idempotency WHERE key = ?1",
    [SQ_IDEM_ADD] = "INSERT INTO pawl_idempotency (key, job_id, created_at) "
                    "VALUES (?1, ?2, ?3)",
    [SQ_BIZ_FIND] = "SELECT id FROM pawl_jobs WHERE business_key = ?1 AND "
                    "state IN (0, 1, 5, 6)",
    [SQ_INSERT] = SQLITE_SQL_INSERT,
    [SQ_GET] = "SELECT " SQLITE_JOB_COLS " FROM pawl_jobs WHERE id = ?1",
    [SQ_LIST] = "SELECT " SQLITE_JOB_COLS " FROM pawl_jobs WHERE "
                "(?1 IS NULL OR state = ?1) AND (?2 IS NULL OR queue = ?2) "
                "AND (?3 IS NULL OR type = ?3) ORDER BY id DESC LIMIT ?4",
    /* The dead-letter set has its own index; list it through that. */
    [SQ_LIST_FAILED] = "SELECT " SQLITE_JOB_COLS " FROM pawl_jobs WHERE "
                       "state = 3 AND (?2 IS NULL OR queue = ?2) AND "
                       "(?3 IS NULL OR type = ?3) ORDER BY id DESC LIMIT ?4",
    [SQ_CLAIM] = SQLITE_SQL_CLAIM,
    [SQ_CLAIM_UNPAUSED] = SQLITE_SQL_CLAIM_UNPAUSED,
    [SQ_ANY_PAUSED] = SQLITE_SQL_ANY_PAUSED,
    [SQ_CLAIM_TAKE] = SQLITE_SQL_CLAIM_TAKE,
    [SQ_PROMOTE] = SQLITE_SQL_PROMOTE,
    [SQ_PROMOTE_ANY] = SQLITE_SQL_PROMOTE_ANY,
    [SQ_LANE_QUEUE] = SQLITE_SQL_LANE_QUEUE,
    [SQ_LANE_NONE] = SQLITE_SQL_LANE_NONE,
    [SQ_LANE_RES] = SQLITE_SQL_LANE_RES,
    [SQ_CLAIM_LANE] = SQLITE_SQL_CLAIM_LANE,
    [SQ_PAUSED_QUEUES] = SQLITE_SQL_PAUSED_QUEUES,
    [SQ_SUCCEED] = SQLITE_SQL_SUCCEED,
    [SQ_SUCCEED_SEQ] = SQLITE_SQL_SUCCEED_SEQ,
    /* Records the attempt being finished from the row as it is before the
     * change; with a token (?5) it only matches the holder's attempt ?6,
     * which is how a stale outcome is detected. ?7, ?8: the body's start
     * and end as its worker measured them (NULL: not measured); ?9 the
     * error's traceback (NULL: none). */
    [SQ_ATTEMPT_ADD] =
        "INSERT INTO pawl_attempts (job_id, attempt, node, scheduled_at, "
        "started_at, ended_at, outcome, error, trace) SELECT id, attempt, "
        "lease_owner, run_at, " SQLITE_SQL_RUN_START("?7") ", "
        SQLITE_SQL_RUN_END("?7", "?8", "?2") ", ?3, ?4, ?9 FROM pawl_jobs "
        "WHERE id = ?1 AND state = 1 AND (?5 IS NULL OR "
        "(lease_token = ?5 AND attempt = ?6))",
    /* An event whose actor is the node that held the job. */
    [SQ_EVENT_FROM_ROW] =
        "INSERT INTO pawl_events (job_id, at, from_state, to_state, actor, "
        "reason, attempt) SELECT id, ?2, state, ?3, lease_owner, ?4, attempt "
        "FROM pawl_jobs WHERE id = ?1",
    [SQ_EVENT_ADD] = "INSERT INTO pawl_events (job_id, at, from_state, "
                     "to_state, actor, reason, attempt) VALUES (?1, ?2, ?3, "
                     "?4, ?5, ?6, ?7)",
    /* pawl_dep_note(): a parent with children to release,
     * and the row's ordering key for its holds (sq_keys_flush()). */
    [SQ_FAIL] = "UPDATE pawl_jobs SET state = 3, last_error = ?1, "
                "finished_at = ?2, updated_at = pawl_dep_note(?2, CASE WHEN "
                "deps_open THEN seq END, ordering_key), lease_expires = NULL, "
                "held = 0, version = version + 1 WHERE id = ?3",
    /* Back to pending: retry (?3 = 0), snooze or release (?3 = 1: the
     * attempt is given back). ?7: the job lets later jobs of its ordering
     * key pass while it waits (a retry under ordering = "skip_failed").
     * Due later than now: early (V018); the key noted for its holds. */
    [SQ_REQUEUE] =
        "UPDATE pawl_jobs SET state = 0, run_at = ?1, rank = pawl_rank("
        "priority, ?1, " SQLITE_SQL_QUEUE_BOOST("?2") "), attempt = attempt - ?3, "
        "last_error = coalesce(?4, last_error), updated_at = "
        "pawl_key_note(?5, ordering_key), early = ?1 > ?5, "
        "lease_expires = NULL, ordering_skip = ?7, version = version + 1 "
        "WHERE id = ?6",
    [SQ_EXTEND] = "UPDATE pawl_jobs SET lease_expires = ?1 WHERE state = 1 "
                  "AND lease_token = ?2",
    /* Expired leases, with whether their attempt is known to have started
     * and how often the job was lost while running (pawl__store_plan_recovery()). */
    [SQ_EXPIRED] = "SELECT j.id, j.attempt, j.max_attempts, j.recoveries, "
                   "j.lease_owner, coalesce(s.crashes, 0), s.version IS "
                   "j.version FROM pawl_jobs AS j LEFT JOIN pawl_started AS s "
                   "ON s.job_id = j.id WHERE j.state = 1 AND "
                   "j.lease_expires < ?1 LIMIT 500",
    [SQ_RECOVER] =
        "UPDATE pawl_jobs SET state = 0, run_at = ?1, rank = pawl_rank("
        "priority, ?1, " SQLITE_SQL_QUEUE_BOOST("?2") "), last_error = ?3, "
        "recoveries = recoveries + 1, updated_at = pawl_key_note(?1, "
        "ordering_key), early = 0, lease_expires = NULL, "
        "version = version + 1 WHERE id = ?4",
    [SQ_CRASHED] = "UPDATE pawl_started SET crashes = crashes + 1 WHERE "
                   "job_id = ?1",
    /* The attempt `token` holds starts now: its version is recorded (the
     * job's next change bumps the version, which ends the record). */
    [SQ_START] = "INSERT INTO pawl_started (job_id, version) SELECT id, "
                 "version FROM pawl_jobs WHERE id = ?1 AND state = 1 AND "
                 "lease_token = ?2 AND attempt = ?3 ON CONFLICT (job_id) DO "
                 "UPDATE SET version = excluded.version",
    [SQ_FORGET_START] = "DELETE FROM pawl_started WHERE job_id = ?1",
    /* The body of a job claimed ahead started at ?4 (its started_at was
     * NULL); matches the held attempt whatever its started_at, so that
     * PAWL_ELEASE means "not held". */
    [SQ_RUN_START] = "UPDATE pawl_jobs SET started_at = coalesce(started_at, "
                     "?4) WHERE id = ?1 AND state = 1 AND lease_token = ?2 "
                     "AND attempt = ?3",
    /* Every operator transition: C decides the new values from the row it
     * read, the version check makes it a compare-and-set. A row leaving
     * pending drops its hold; one made pending due later is early (V018);
     * sq_tx_update() notes the key for its holds. */
    [SQ_TRANSITION] =
        "UPDATE pawl_jobs SET state = ?4, paused_from = ?5, run_at = ?6, "
        "rank = ?7, attempt = ?8, last_error = ?9, result = ?10, "
        "finished_at = ?11, recoveries = ?12, lease_expires = ?13, "
        "held = CASE WHEN ?4 = 0 THEN held ELSE 0 END, early = ?4 = 0 AND "
        "?6 > ?1, updated_at = ?1, version = version + 1 WHERE id = ?2 AND "
        "version = ?3",
    /* A key's holds computed again (V018's pawl_key_refresh). */
    [SQ_KEY_REFRESH] = "INSERT INTO pawl_key_refresh VALUES (?1)",
    [SQ_ATTEMPTS] = "SELECT attempt, node, scheduled_at, started_at, "
                    "ended_at, outcome, error, trace FROM pawl_attempts WHERE "
                    "job_id = ?1 ORDER BY seq",
    [SQ_EVENTS] = "SELECT at, from_state, to_state, actor, reason, attempt "
                  "FROM pawl_events WHERE job_id = ?1 ORDER BY seq",
    [SQ_LOCK_ACQUIRE] =
        "INSERT INTO pawl_locks (name, owner, acquired_at, expires_at) "
        "VALUES (?1, ?2, ?3, ?4) ON CONFLICT (name) DO UPDATE SET "
        "owner = excluded.owner, acquired_at = CASE WHEN pawl_locks.owner = "
        "excluded.owner THEN pawl_locks.acquired_at ELSE excluded.acquired_at "
        "END, expires_at = excluded.expires_at WHERE pawl_locks.owner = "
        "excluded.owner OR pawl_locks.expires_at <= ?3",
    [SQ_LOCK_EXTEND] = "UPDATE pawl_locks SET expires_at = ?3 WHERE name = ?1 "
                       "AND owner = ?2 AND expires_at > ?4",
    [SQ_LOCK_RELEASE] = "DELETE FROM pawl_locks WHERE name = ?1 AND "
                        "owner = ?2",
    [SQ_NODE_BEAT] =
        "INSERT INTO pawl_nodes (id, incarnation, version, queues, "
        "started_at, last_beat) VALUES (?1, ?2, ?3, ?4, ?5, ?6) "
        "ON CONFLICT (id) DO UPDATE SET incarnation = excluded.incarnation, "
        "version = excluded.version, queues = excluded.queues, "
        "started_at = excluded.started_at, last_beat = excluded.last_beat, "
        "stopped_at = NULL",
    [SQ_NODE_LIST] = "SELECT id, incarnation, version, queues, started_at, "
                     "last_beat, stopped_at FROM pawl_nodes ORDER BY id",
    [SQ_NODE_REAP] = "DELETE FROM pawl_nodes WHERE last_beat < ?1",
    /* The stop is the node's last beat too: listed as stopped from now,
     * removed five leases later like any silent node. */
    [SQ_NODE_STOP] = "UPDATE pawl_nodes SET stopped_at = ?3, last_beat = ?3 "
                     "WHERE id = ?1 AND incarnation = ?2",
    [SQ_SETTING_GET] = "SELECT value FROM pawl_settings WHERE name = ?1",
    [SQ_SETTING_SET] = "INSERT INTO pawl_settings (name, value) VALUES "
                       "(?1, ?2) ON CONFLICT (name) DO UPDATE SET "
                       "value = excluded.value",
    /* The database's boost changed: every pending job ranks anew, those of
     * a queue with a boost of its own (pawl_queues) as before. ?2: one
     * queue only (its boost changed), NULL: all. */
    [SQ_RERANK] = "UPDATE pawl_jobs SET rank = pawl_rank(priority, run_at, "
                  SQLITE_SQL_QUEUE_BOOST("?1") ") WHERE state = 0 AND "
                  "(?2 IS NULL OR queue = ?2)",
    /* Progress is not a transition: no version, no updated_at. */
    [SQ_PROGRESS] = "UPDATE pawl_jobs SET progress_done = ?1, "
                    "progress_total = ?2 WHERE id = ?3 AND state = 1 AND "
                    "lease_token = ?4 AND attempt = ?5",
    [SQ_EXISTS] = "SELECT 1 FROM pawl_jobs WHERE id = ?1",
    [SQ_LOGS] = "SELECT attempt, at, level, message, fields FROM pawl_logs "
                "WHERE job_id = ?1 ORDER BY seq",
    /* Through the job row, so that a line for a job that is gone (deleted
     * by retention) is dropped instead of breaking the batch. */
    [SQ_LOG_ADD] = "INSERT INTO pawl_logs (job_id, attempt, at, level, "
                   "message, fields) SELECT id, ?2, ?3, ?4, ?5, ?6 FROM "
                   "pawl_jobs WHERE id = ?1",
    [SQ_EXTEND_ONE] = "UPDATE pawl_jobs SET lease_expires = ?1 WHERE id = ?2 "
                      "AND state = 1 AND lease_token = ?3 AND attempt = ?4",
    [SQ_NEXT_DUE] = SQLITE_SQL_NEXT_DUE,
    [SQ_NEXT_DUE_QUEUE] = SQLITE_SQL_NEXT_DUE_QUEUE,
    [SQ_NEXT_DUE_QUEUES] = SQLITE_SQL_NEXT_DUE_QUEUES,
    /* Changes when another connection commits (SQLite's own counter: one
     * read of the write-ahead log's header, no table). */
    [SQ_DATA_VERSION] = "PRAGMA data_version",
    /* administration (sqlite_admin_sql.h) */
    [SQ_ADM_BEGIN_READ] = "BEGIN",
    [SQ_ADM_SAVEPOINT] = "SAVEPOINT pawl_bulk",
    [SQ_ADM_RELEASE] = "RELEASE pawl_bulk",
    [SQ_ADM_ROLLBACK_TO] = "ROLLBACK TO pawl_bulk",
    [SQ_ADM_COUNT] = SQLITE_ADM_COUNT,
    [SQ_ADM_COUNT_FAILED] = SQLITE_ADM_COUNT_FAILED,
    [SQ_ADM_PICK] = SQLITE_ADM_PICK,
    [SQ_ADM_PICK_FAILED] = SQLITE_ADM_PICK_FAILED,
    [SQ_ADM_LIST] = SQLITE_ADM_LIST,
    [SQ_ADM_STATS_PENDING] = SQLITE_ADM_STATS_PENDING,
    [SQ_ADM_STATS_RUNNING] = SQLITE_ADM_STATS_RUNNING,
    [SQ_ADM_STATS_DONE] = SQLITE_ADM_STATS_DONE,
    [SQ_ADM_STATS_TP] = SQLITE_ADM_STATS_TP,
    [SQ_MET_TP] = SQLITE_MET_TP,
    /* Throughput buckets (store.h, "Throughput"): ?1 the minute, ?2 the
     * state, ?3 the queue, ?4 how many; or by the job's id ?2 (its state
     * and queue as the row has them now: a failure); the trim of buckets
     * before minute ?1. */
    [SQ_TP_ADD] = "INSERT INTO pawl_throughput (minute, state, queue, count) "
                  "VALUES (?1, ?2, ?3, ?4)" SQLITE_SQL_TP_UPSERT,
    [SQ_TP_ADD_ID] = "INSERT INTO pawl_throughput (minute, state, queue, "
                     "count) SELECT ?1, state, queue, 1 FROM pawl_jobs WHERE "
                     "id = ?2" SQLITE_SQL_TP_UPSERT,
    [SQ_TP_TRIM] = "DELETE FROM pawl_throughput WHERE minute < ?1",
    [SQ_ADM_RUNNING] = SQLITE_ADM_RUNNING,
    [SQ_ADM_LOCKS] = SQLITE_ADM_LOCKS,
    /* recurring definitions (sqlite_recurring_sql.h) */
    [SQ_REC_ADD] = SQLITE_REC_ADD,
    [SQ_REC_PUT_SCRIPT] = SQLITE_REC_PUT_SCRIPT,
    [SQ_REC_GET] = SQLITE_REC_GET,
    [SQ_REC_LIST] = SQLITE_REC_LIST,
    [SQ_REC_UPDATE] = SQLITE_REC_UPDATE,
    [SQ_REC_REMOVE] = SQLITE_REC_REMOVE,
    [SQ_REC_DUE] = SQLITE_REC_DUE,
    [SQ_REC_ADVANCE] = SQLITE_REC_ADVANCE,
    [SQ_REC_LAST_JOB] = SQLITE_REC_LAST_JOB,
    [SQ_REC_DISABLE_GONE] = SQLITE_REC_DISABLE_GONE,
    [SQ_REC_DISABLE_LISTED] = SQLITE_REC_DISABLE_LISTED,
    [SQ_REC_LOAD_ERROR] = SQLITE_REC_LOAD_ERROR,
    /* queues */
    [SQ_QUEUE_BOOST] = "SELECT age_boost_ms FROM pawl_queues WHERE name = ?1",
    /* ?1 name, ?2 now, ?3 by, ?4 reason. Changes a row only when the queue
     * was not paused, so that changes() says whether it was. */
    [SQ_QUEUE_PAUSE] =
        "INSERT INTO pawl_queues (name, paused, paused_at, paused_by, reason, "
        "updated_at) VALUES (?1, 1, ?2, ?3, ?4, ?2) ON CONFLICT (name) DO "
        "UPDATE SET paused = 1, paused_at = ?2, paused_by = ?3, reason = ?4, "
        "updated_at = ?2 WHERE paused = 0",
    [SQ_QUEUE_RESUME] =
        "UPDATE pawl_queues SET paused = 0, paused_at = NULL, paused_by = "
        "NULL, reason = NULL, updated_at = ?2 WHERE name = ?1 AND paused = 1",
    /* ?1 name, ?2 now, ?3 boost (NULL: the database's). */
    [SQ_QUEUE_SET_BOOST] =
        "INSERT INTO pawl_queues (name, age_boost_ms, updated_at) VALUES "
        "(?1, ?3, ?2) ON CONFLICT (name) DO UPDATE SET age_boost_ms = ?3, "
        "updated_at = ?2",
    [SQ_QUEUE_LIST] = "SELECT name, paused, paused_at, paused_by, reason, "
                      "age_boost_ms FROM pawl_queues ORDER BY name",
    /* limits */
    [SQ_CLAIM_LIM] = SQLITE_SQL_CLAIM_LIM,
    [SQ_CLAIM_LIM_UNPAUSED] = SQLITE_SQL_CLAIM_LIM_UNPAUSED,
    [SQ_LIMITS_READ] = SQLITE_SQL_LIMITS_READ,
    [SQ_LIMIT_RUNNING_RES] = SQLITE_SQL_LIMIT_RUNNING_RES,
    [SQ_LIMIT_RUNNING_QUEUE] = SQLITE_SQL_LIMIT_RUNNING_QUEUE,
    [SQ_LIMIT_WINDOW] = "UPDATE pawl_limits SET window_start = ?2, "
                        "window_count = ?3 WHERE name = ?1",
    /* The window's count survives a change that keeps its length. */
    [SQ_LIMIT_SET] =
        "INSERT INTO pawl_limits (name, max_running, rate, rate_window_ms, "
        "updated_at) VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (name) DO "
        "UPDATE SET max_running = excluded.max_running, rate = excluded.rate, "
        "window_start = CASE WHEN rate_window_ms IS excluded.rate_window_ms "
        "THEN window_start ELSE 0 END, window_count = CASE WHEN "
        "rate_window_ms IS excluded.rate_window_ms THEN window_count ELSE 0 "
        "END, rate_window_ms = excluded.rate_window_ms, "
        "updated_at = excluded.updated_at",
    [SQ_LIMIT_REMOVE] = "DELETE FROM pawl_limits WHERE name = ?1",
    /* ?1: [[type, [field, ...], [branch, ...]], ...]; "WHERE true" keeps
     * the upsert's ON from being read as a join's. A type's redact list
     * only grows: the names a node's script lists are added to those
     * recorded, so a node with an older copy of the script (no `redact`)
     * cannot reveal a field that another node's copy hides. */
    [SQ_TYPES_SYNC] =
        "INSERT INTO pawl_types (type, redact, branches, updated_at) SELECT "
        "json_extract(value, '$[0]'), json(json_extract(value, '$[1]')), "
        "json(json_extract(value, '$[2]')), ?2 "
        "FROM json_each(?1) WHERE true ON CONFLICT (type) DO UPDATE SET "
        "redact = (SELECT json_group_array(value) FROM (SELECT 0 AS src, "
        "key, value FROM json_each(pawl_types.redact) UNION ALL SELECT 1, "
        "n.key, n.value FROM json_each(excluded.redact) AS n WHERE n.value "
        "NOT IN (SELECT value FROM json_each(pawl_types.redact)) ORDER BY "
        "src, key)), branches = excluded.branches, "
        "updated_at = excluded.updated_at WHERE EXISTS (SELECT 1 FROM "
        "json_each(excluded.redact) AS n WHERE n.value NOT IN (SELECT value "
        "FROM json_each(pawl_types.redact))) OR "
        "pawl_types.branches IS NOT excluded.branches",
    [SQ_TYPE_REDACT] = "SELECT redact, branches FROM pawl_types WHERE "
                       "type = ?1",
    [SQ_LIMIT_LIST] =
        "SELECT name, max_running, rate, rate_window_ms, window_start, "
        "window_count, updated_at, CASE WHEN substr(name, 1, 6) = 'queue:' "
        "THEN (SELECT count(*) FROM pawl_jobs WHERE state = 1 AND queue = "
        "substr(pawl_limits.name, 7)) ELSE (SELECT count(*) FROM pawl_jobs "
        "WHERE state = 1 AND resource = pawl_limits.name) END FROM "
        "pawl_limits ORDER BY name",
    /* next_due with limits (sqlite_sql.h) */
    [SQ_NEXT_DUE_LIM] = SQLITE_SQL_NEXT_DUE_LIM,
    [SQ_NEXT_DUE_LIM_RES] = SQLITE_SQL_NEXT_DUE_LIM_RES,
    [SQ_NEXT_DUE_LIM_QUEUE] = SQLITE_SQL_NEXT_DUE_LIM_QUEUE,
    /* signals and replace (sqlite_flow_sql.h) */
    [SQ_SIG_RELEASE] = SQLITE_SIG_RELEASE,
    [SQ_SIG_HOLDER] = SQLITE_SIG_HOLDER,
    [SQ_SIG_ADD] = SQLITE_SIG_ADD,
    [SQ_SIG_DELIVER] = SQLITE_SIG_DELIVER,
    [SQ_SIG_GET] = SQLITE_SIG_GET,
    [SQ_SIG_DUE] = SQLITE_SIG_DUE,
    [SQ_SIG_EXPIRE] = SQLITE_SIG_EXPIRE,
    [SQ_SIG_NEXT] = SQLITE_SIG_NEXT,
    [SQ_REP_ADD] = SQLITE_REP_ADD,
    [SQ_REP_CARRY] = SQLITE_REP_CARRY,
    [SQ_REP_INSTANCE] = SQLITE_REP_INSTANCE,
    [SQ_REP_BATCH] = SQLITE_REP_BATCH,
    [SQ_REP_LEAVE] = SQLITE_REP_LEAVE,
    [SQ_REP_NEXT] = SQLITE_REP_NEXT,
    [SQ_REP_PREV] = SQLITE_REP_PREV,
    /* batches (sqlite_batch_sql.h) */
    [SQ_BATCH_ADD] = SQLITE_BATCH_ADD,
    [SQ_BATCH_CB_ADD] = SQLITE_BATCH_CB_ADD,
    [SQ_BATCH_COUNT] = SQLITE_BATCH_COUNT,
    [SQ_BATCH_COUNT_JOB] = SQLITE_BATCH_COUNT_JOB,
    [SQ_BATCH_GET] = SQLITE_BATCH_GET,
    [SQ_BATCH_CBS] = SQLITE_BATCH_CBS,
    [SQ_BATCH_STATES] = SQLITE_BATCH_STATES,
    [SQ_BATCH_ATTEMPTS] = SQLITE_BATCH_ATTEMPTS,
    [SQ_BATCH_OF] = SQLITE_BATCH_OF,
    [SQ_BATCH_OF_CB] = SQLITE_BATCH_OF_CB,
    [SQ_BATCH_FIND] = SQLITE_BATCH_FIND,
    [SQ_BATCH_CHILDREN] = SQLITE_BATCH_CHILDREN,
    /* dependencies (sqlite_deps_sql.h) */
    [SQ_DEPS_RELEASE] = SQLITE_DEPS_RELEASE,
    [SQ_DEPS_CLOSE] = SQLITE_DEPS_CLOSE,
    [SQ_DEPS_OPEN_SEQ] = SQLITE_DEPS_OPEN_SEQ,
    [SQ_DEPS_PARENT] = SQLITE_DEPS_PARENT,
    [SQ_DEPS_EDGE] = SQLITE_DEPS_EDGE,
    [SQ_DEPS_MARK_OPEN] = SQLITE_DEPS_MARK_OPEN,
    [SQ_DEPS_COUNTS] = SQLITE_DEPS_COUNTS,
    [SQ_DEPS_WHY] = SQLITE_DEPS_WHY,
    [SQ_DEPS_UNCOUNT] = SQLITE_DEPS_UNCOUNT,
    [SQ_DEPS_CANCELED] = SQLITE_DEPS_CANCELED,
    [SQ_DEPS_RECOUNT] = SQLITE_DEPS_RECOUNT,
    [SQ_DEPS_REOPEN_SELF] = SQLITE_DEPS_REOPEN_SELF,
    [SQ_DEPS_BRANCHES] = SQLITE_DEPS_BRANCHES,
    [SQ_DEPS_LIST] = SQLITE_DEPS_LIST,
    [SQ_DEPS_HAND_PARENT] = SQLITE_DEPS_HAND_PARENT,
    [SQ_DEPS_HAND_CHILD] = SQLITE_DEPS_HAND_CHILD,
    [SQ_DEPS_HAND_CLOSE] = SQLITE_DEPS_HAND_CLOSE,
    [SQ_DEPS_TAKE_OVER] = SQLITE_DEPS_TAKE_OVER,
    /* steps and instances (sqlite_steps_sql.h) */
    /* A read transaction (deferred: no write lock, no gate). */
    [SQ_STEP_READ_BEGIN] = "BEGIN",
    [SQ_STEP_LIST] = SQLITE_STEP_LIST,
    [SQ_STEP_EXIT_GET] = SQLITE_STEP_EXIT_GET,
    [SQ_STEP_INSTANCE_OF] = SQLITE_STEP_INSTANCE_OF,
    [SQ_STEP_BEGIN] = SQLITE_STEP_BEGIN,
    [SQ_STEP_LOST] = SQLITE_STEP_LOST,
    [SQ_STEP_SAVE] = SQLITE_STEP_SAVE,
    [SQ_STEP_END] = SQLITE_STEP_END,
    [SQ_STEP_EXIT] = SQLITE_STEP_EXIT,
    [SQ_INSTANCE_FIND] = SQLITE_INSTANCE_FIND,
    [SQ_INSTANCE_TAKE] = SQLITE_INSTANCE_TAKE,
    /* pawl top: the buckets from minute ?1 on; the running
     * jobs through their partial index (the literal state = 1 lets the
     * planner use it), longest running first. */
    [SQ_TOP_TP] = "SELECT minute, state, queue, count FROM pawl_throughput "
                  "WHERE minute >= ?1 ORDER BY minute, state, queue",
    [SQ_TOP_RUNNING] = "SELECT " SQLITE_JOB_COLS " FROM pawl_jobs INDEXED BY "
                       "pawl_jobs_running WHERE state = 1 ORDER BY "
                       "started_at IS NULL, started_at, id LIMIT ?1",
    [SQ_ALERT_ADD] = SQLITE_ALERT_ADD,
    [SQ_ALERT_ROLL] = SQLITE_ALERT_ROLL,
    [SQ_ALERT_ROLL_DEL] = SQLITE_ALERT_ROLL_DEL,
    [SQ_ALERT_TAKE] = SQLITE_ALERT_TAKE,
    [SQ_ALERT_GET] = SQLITE_ALERT_GET,
    [SQ_ALERT_WINDOW] = SQLITE_ALERT_WINDOW,
    [SQ_ALERT_VERDICT] = SQLITE_ALERT_VERDICT,
    [SQ_ALERT_DONE] = SQLITE_ALERT_DONE,
    /* retention: the walk in insert order, any state (the
     * caller decides); the moves check the state, the version the walk read
     * and deps_open in the statement itself. ?1 id, ?2 version, ?3 now. */
    [SQ_RET_SCAN] = "SELECT seq, id, version, state, created_at, "
                    "finished_at, queue, type FROM pawl_jobs WHERE seq > ?1 "
                    "ORDER BY seq LIMIT ?2",
    [SQ_RET_ARCHIVE_JOB] = "INSERT INTO pawl_jobs_archive SELECT ?3, * FROM "
                           "pawl_jobs WHERE id = ?1 AND version = ?2 AND "
                           "state IN (2, 3, 4) AND deps_open = 0",
    [SQ_RET_ARCHIVE_ATTEMPTS] = "INSERT INTO pawl_attempts_archive SELECT * "
                                "FROM pawl_attempts WHERE job_id = ?1",
    [SQ_RET_ARCHIVE_EVENTS] = "INSERT INTO pawl_events_archive SELECT * "
                              "FROM pawl_events WHERE job_id = ?1",
    [SQ_RET_ARCHIVE_LOGS] = "INSERT INTO pawl_logs_archive SELECT * FROM "
                            "pawl_logs WHERE job_id = ?1",
    [SQ_RET_DELETE] = "DELETE FROM pawl_jobs WHERE id = ?1 AND version = ?2 "
                      "AND state IN (2, 3, 4) AND deps_open = 0",
    [SQ_RET_DEPS_PARENT] = "DELETE FROM pawl_deps WHERE parent = ?1",
    [SQ_RET_DEPS_CHILD] = "DELETE FROM pawl_deps WHERE child = ?1",
};

typedef struct sq_store {
  store_t base;
  sqlite3 *db;
  char *path;
  sqlite3_stmt *stmt[SQ_COUNT];
  int64_t boost_ms;
  int64_t poison;
  pthread_mutex_t *gate;   /* borrowed; see store_config_t.write_gate */
  int gated;               /* this connection holds the gate */
  int64_t tp_minute;       /* the minute this connection last trimmed the
                              throughput buckets at (0: not yet) */
  /* A finish's successes by queue, for the throughput buckets: entries
   * (and their queue names) are kept from batch to batch, counts zeroed. */
  struct sq_tp {
    char *queue;
    int64_t n;
  } *tp;
  size_t ntp, tpcap, tp_last;
  int tp_oom;              /* pawl_tp_note() ran out of memory */
  /* A finish's successes by batch, noted by pawl_tp_note() like
   * the queues: entries kept from finish to finish, nbn reset. */
  struct sq_bn {
    pawl_id_t id;
    int64_t n;
  } *bn;
  size_t nbn, bncap;
  /* sq_queue_boost()'s memory of the last queue it read, valid within the
   * write transaction numbered qb_tx (tx_seq counts sq_begin()s). */
  uint64_t tx_seq, qb_tx;
  char *qb_queue;
  int64_t qb_boost;        /* -1: none of its own */
  /* Dependencies: the seqs of the jobs that ended in this
   * write transaction with children still to count their end (deps_open),
   * released by sq_deps_flush() before the commit. */
  int64_t *dep_seq;
  size_t ndep, depcap;
  int dep_oom;
  /* Holds (V020__holds_by_store.sql): the ordering keys of the rows this
   * write transaction changed, owned copies, refreshed by sq_keys_flush()
   * before the commit. */
  char **keys;
  size_t nkeys, keycap;
  int key_oom;
} sq_store_t;

static int sq_deps_flush(sq_store_t *s);
static int sq_keys_flush(sq_store_t *s);
static void sq_key_note(sq_store_t *s, const char *key);
static void sq_keys_clear(sq_store_t *s);

/* ---- errors ------------------------------------------------------------- */

static int sq_rc_to_err(int rc) {
  switch (rc & 0xff) {
  case SQLITE_OK:
  case SQLITE_ROW:
  case SQLITE_DONE:
    return PAWL_OK;
  case SQLITE_BUSY:
  case SQLITE_LOCKED:
    return PAWL_EBUSY;
  case SQLITE_NOMEM:
    return PAWL_ENOMEM;
  case SQLITE_READONLY:
  case SQLITE_CANTOPEN:
  case SQLITE_IOERR:
  case SQLITE_PERM:
  case SQLITE_FULL:
    return PAWL_EIO;
  case SQLITE_NOTADB:
  case SQLITE_CORRUPT:
    return PAWL_ESCHEMA;
  default:
    return PAWL_ESTORE;
  }
}

/* Records the connection's error, naming what we were doing. */
static int sq_fail(sq_store_t *s, int rc, const char *what) {
  return pawl__store_fail(&s->base, sq_rc_to_err(rc), "%s: %s (sqlite:%s)", what,
                    sqlite3_errmsg(s->db), s->path);
}

/* ---- statements --------------------------------------------------------- */

/* The statement `id`, prepared on first use, reset and unbound. NULL on
 * failure (errmsg set). */
static sqlite3_stmt *sq_stmt(sq_store_t *s, int id) {
  sqlite3_stmt *st = s->stmt[id];
  if (st == NULL) {
    int rc = sqlite3_prepare_v3(s->db, sq_sql[id], -1,
                                SQLITE_PREPARE_PERSISTENT, &st, NULL);
    if (rc != SQLITE_OK) {
      sq_fail(s, rc, "prepare");
      return NULL;
    }
    s->stmt[id] = st;
    return st;
  }
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  return st;
}

/* Runs a statement that returns no rows to completion. */
static int sq_exec(sq_store_t *s, sqlite3_stmt *st, const char *what) {
  int rc = sqlite3_step(st);
  sqlite3_reset(st);
  if (rc != SQLITE_DONE) return sq_fail(s, rc, what);
  return 0;
}

static void sq_bind_text(sqlite3_stmt *st, int i, const char *v) {
  if (v)
    sqlite3_bind_text(st, i, v, -1, SQLITE_STATIC);
  else
    sqlite3_bind_null(st, i);
}

static void sq_bind_id(sqlite3_stmt *st, int i, const pawl_id_t *id) {
  if (id)
    sqlite3_bind_blob(st, i, id->bytes, 16, SQLITE_STATIC);
  else
    sqlite3_bind_null(st, i);
}

static void sq_bind_opt_int(sqlite3_stmt *st, int i, int64_t v) {
  if (v)
    sqlite3_bind_int64(st, i, v);
  else
    sqlite3_bind_null(st, i);
}

static void sq_gate(sq_store_t *s) {
  if (s->gate && !s->gated) {
    pthread_mutex_lock(s->gate);
    s->gated = 1;
  }
}

static void sq_ungate(sq_store_t *s) {
  if (s->gated) {
    s->gated = 0;
    pthread_mutex_unlock(s->gate);
  }
}

/* Every write transaction: sq_begin(), then sq_end() (or sq_commit() /
 * sq_rollback()), which also release the write gate. */
static int sq_begin(sq_store_t *s) {
  s->tx_seq++; /* what sq_queue_boost() remembers is for one transaction */
  if (s->nkeys || s->key_oom) sq_keys_clear(s); /* a rollback's leftovers */
  sqlite3_stmt *st = sq_stmt(s, SQ_BEGIN);
  if (!st) return s->base.errmsg[0] ? PAWL_ESTORE : PAWL_ENOMEM;
  sq_gate(s);
  int rc = sq_exec(s, st, "begin transaction");
  if (rc) sq_ungate(s);
  return rc;
}

static int sq_commit(sq_store_t *s) {
  sqlite3_stmt *st = sq_stmt(s, SQ_COMMIT);
  int rc = st ? sq_exec(s, st, "commit") : PAWL_ESTORE;
  if (rc) {
    /* A failed COMMIT may leave the transaction open; end it so the next
     * operation starts clean. */
    if (!sqlite3_get_autocommit(s->db)) sqlite3_exec(s->db, "ROLLBACK", 0, 0, 0);
  }
  sq_ungate(s);
  return rc;
}

static void sq_rollback(sq_store_t *s) {
  if (!sqlite3_get_autocommit(s->db)) {
    sqlite3_stmt *st = sq_stmt(s, SQ_ROLLBACK);
    if (st) {
      sqlite3_step(st);
      sqlite3_reset(st);
    } else {
      sqlite3_exec(s->db, "ROLLBACK", 0, 0, 0);
    }
  }
  sq_ungate(s);
}

/* A single write statement outside a transaction, under the gate. */
static int sq_exec_write(sq_store_t *s, sqlite3_stmt *st, const char *what) {
  sq_gate(s);
  int rc = sq_exec(s, st, what);
  sq_ungate(s);
  return rc;
}

/* Ends a transaction: commit when rc == 0, else roll back. */
static int sq_end(sq_store_t *s, int rc) {
  s->tx_seq++;
  /* Dependencies: the jobs this transaction ended release their
   * children in it. Nothing noted: one test. */
  if (rc == 0 && (s->ndep || s->dep_oom)) rc = sq_deps_flush(s);
  s->ndep = 0;
  s->dep_oom = 0;
  /* Holds: after the dependencies, whose releases move keyed rows too. */
  if (rc == 0 && (s->nkeys || s->key_oom)) rc = sq_keys_flush(s);
  sq_keys_clear(s);
  if (rc == 0) return sq_commit(s);
  sq_rollback(s);
  return rc;
}

/* ---- rows --------------------------------------------------------------- */

static void sq_col_id(sqlite3_stmt *st, int i, pawl_id_t *out) {
  const void *b = sqlite3_column_blob(st, i);
  if (b && sqlite3_column_bytes(st, i) == 16)
    memcpy(out->bytes, b, 16);
  else
    memset(out->bytes, 0, 16);
}

/* The column accessors of a row of a stepped statement (store_row_t). */
static const char *sq_row_text(const store_row_t *r, int col, size_t *len) {
  sqlite3_stmt *st = (sqlite3_stmt *)r->res;
  const char *t = (const char *)sqlite3_column_text(st, col);
  *len = t ? (size_t)sqlite3_column_bytes(st, col) : 0;
  return t;
}

static int64_t sq_row_int64(const store_row_t *r, int col) {
  return sqlite3_column_int64((sqlite3_stmt *)r->res, col);
}

static double sq_row_dbl(const store_row_t *r, int col) {
  return sqlite3_column_double((sqlite3_stmt *)r->res, col);
}

static void sq_row_id(const store_row_t *r, int col, pawl_id_t *out) {
  sq_col_id((sqlite3_stmt *)r->res, col, out);
}

static store_row_t sq_row(sqlite3_stmt *st) {
  return (store_row_t){sq_row_text, sq_row_int64, sq_row_dbl, sq_row_id, st, 0};
}

/* A pawl_job_t from a row of SQLITE_JOB_COLS, with `owner` (when not NULL)
 * as its lease owner instead of the row's. NULL when out of memory. */
static pawl_job_t *sq_row_to_job(sqlite3_stmt *st, const char *owner) {
  store_job_row_t r;
  for (int k = 0; k < STORE_JOB_NTEXT; k++) {
    int c = pawl__store_job_texts[k];
    /* The owner given replaces the row's: no need to read it. */
    r.text[c] = owner && c == STORE_JOB_LEASE_OWNER
                    ? NULL
                    : (const char *)sqlite3_column_text(st, c);
    r.len[c] = r.text[c] ? (size_t)sqlite3_column_bytes(st, c) : 0;
  }
  for (int k = 0; k < STORE_JOB_NINT; k++) {
    int c = pawl__store_job_ints[k];
    r.num[c] = sqlite3_column_int64(st, c);
  }
  sq_col_id(st, STORE_JOB_ID, &r.id);
  r.progress_done = sqlite3_column_double(st, STORE_JOB_PROGRESS_DONE);
  r.progress_total = sqlite3_column_double(st, STORE_JOB_PROGRESS_TOTAL);
  pawl_job_t *j = pawl__store_job_from_row(&r, owner);
  if (j) j->store_key = sqlite3_column_int64(st, SQLITE_JOB_SEQ_COL);
  return j;
}

/* Reads job `id` inside the current transaction. */
static int sq_read_job(sq_store_t *s, const pawl_id_t *id, pawl_job_t **out) {
  sqlite3_stmt *st = sq_stmt(s, SQ_GET);
  if (!st) return PAWL_ESTORE;
  sq_bind_id(st, 1, id);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_DONE) {
    sqlite3_reset(st);
    return pawl__store_no_job(&s->base, id);
  }
  if (rc != SQLITE_ROW) {
    sqlite3_reset(st);
    return sq_fail(s, rc, "read job");
  }
  pawl_job_t *j = sq_row_to_job(st, NULL);
  sqlite3_reset(st);
  if (!j) return pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
  *out = j;
  return 0;
}

/* ---- settings ----------------------------------------------------------- */

static int sq_setting_get(sq_store_t *s, const char *name, int64_t *out) {
  sqlite3_stmt *st = sq_stmt(s, SQ_SETTING_GET);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) *out = sqlite3_column_int64(st, 0);
  sqlite3_reset(st);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) return sq_fail(s, rc, name);
  return 0;
}

/* Stores a new age boost and re-ranks the pending rows, in one
 * transaction, so every node orders the queue the same way. */
static int sq_set_age_boost(sq_store_t *s, int64_t ms) {
  int rc = sq_begin(s);
  if (rc) return rc;
  sqlite3_stmt *st = sq_stmt(s, SQ_SETTING_SET);
  if (!st) return sq_end(s, PAWL_ESTORE);
  char v[32];
  snprintf(v, sizeof v, "%lld", (long long)ms);
  sqlite3_bind_text(st, 1, "age_boost_ms", -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 2, v, -1, SQLITE_TRANSIENT);
  rc = sq_exec(s, st, "store age boost");
  if (!rc) {
    st = sq_stmt(s, SQ_RERANK);
    if (!st) return sq_end(s, PAWL_ESTORE);
    sqlite3_bind_int64(st, 1, ms);
    sqlite3_bind_null(st, 2);
    rc = sq_exec(s, st, "re-rank pending jobs");
  }
  rc = sq_end(s, rc);
  if (!rc) s->boost_ms = ms;
  return rc;
}

static int sq_age_boost(store_t *base, int64_t *ms) {
  sq_store_t *s = (sq_store_t *)base;
  int rc = sq_setting_get(s, "age_boost_ms", &s->boost_ms);
  if (!rc) *ms = s->boost_ms;
  return rc;
}

/* ---- schema and migrations ---------------------------------------------- */

static int sq_table_exists(sq_store_t *s, const char *name, int *exists) {
  sqlite3_stmt *st;
  int rc = sqlite3_prepare_v2(
      s->db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1",
      -1, &st, NULL);
  if (rc != SQLITE_OK) return sq_fail(s, rc, "read schema");
  sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
  rc = sqlite3_step(st);
  *exists = rc == SQLITE_ROW;
  sqlite3_finalize(st);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) return sq_fail(s, rc, "read schema");
  return 0;
}

static int sq_count_tables(sq_store_t *s, int *n) {
  sqlite3_stmt *st;
  int rc = sqlite3_prepare_v2(
      s->db, "SELECT count(*) FROM sqlite_master WHERE type = 'table'", -1,
      &st, NULL);
  if (rc != SQLITE_OK) return sq_fail(s, rc, "read schema");
  rc = sqlite3_step(st);
  *n = rc == SQLITE_ROW ? sqlite3_column_int(st, 0) : 0;
  sqlite3_finalize(st);
  if (rc != SQLITE_ROW) return sq_fail(s, rc, "read schema");
  return 0;
}

/* Checks what is recorded in pawl_schema against the migrations this build
 * carries: an applied script whose checksum changed, or a version newer than
 * we know, is refused. *applied receives the highest applied version. */
static int sq_check_applied(sq_store_t *s, int *applied) {
  sqlite3_stmt *st;
  int rc = sqlite3_prepare_v2(
      s->db, "SELECT version, name, checksum FROM pawl_schema ORDER BY version",
      -1, &st, NULL);
  if (rc != SQLITE_OK) return sq_fail(s, rc, "read pawl_schema");
  *applied = 0;
  int err = 0;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    int v = sqlite3_column_int(st, 0);
    const char *name = (const char *)sqlite3_column_text(st, 1);
    const char *sum = (const char *)sqlite3_column_text(st, 2);
    *applied = v;
    if ((size_t)v > pawl__store_sqlite_migration_count || v < 1) {
      err = pawl__store_fail(&s->base, PAWL_ESCHEMA,
                       "database sqlite:%s is at schema version %d, newer "
                       "than this pawl knows (%zu): upgrade pawl",
                       s->path, v, pawl__store_sqlite_migration_count);
      break;
    }
    const store_migration_t *m = &pawl__store_sqlite_migrations[v - 1];
    char want[16];
    if (!pawl__store_sum_ok("sqlite", m, sum, want)) {
      err = pawl__store_fail(&s->base, PAWL_ESCHEMA,
                       "migration %s was changed after it was applied to "
                       "sqlite:%s (checksum recorded %s, file now %s)",
                       name ? name : m->name, s->path, sum ? sum : "(none)",
                       want);
      break;
    }
  }
  if (!err && rc != SQLITE_DONE) err = sq_fail(s, rc, "read pawl_schema");
  sqlite3_finalize(st);
  return err;
}

/* Applies one migration in its own transaction, unless another process got
 * there first: BEGIN IMMEDIATE serializes concurrent starts, and the version
 * is re-read under the lock. */
static int sq_apply(sq_store_t *s, const store_migration_t *m) {
  int rc = sqlite3_exec(s->db, "BEGIN IMMEDIATE", 0, 0, 0);
  if (rc != SQLITE_OK) return sq_fail(s, rc, "begin migration");
  int applied = 0, err = sq_check_applied(s, &applied);
  if (err || applied >= m->version) {
    sqlite3_exec(s->db, "ROLLBACK", 0, 0, 0);
    return err;
  }
  if (applied != m->version - 1) {
    sqlite3_exec(s->db, "ROLLBACK", 0, 0, 0);
    return pawl__store_fail(&s->base, PAWL_ESCHEMA,
                      "cannot apply %s: database is at version %d",
                      m->name, applied);
  }
  char *sql = pawl__strndup(m->sql, m->len), *msg = NULL;
  if (!sql) {
    sqlite3_exec(s->db, "ROLLBACK", 0, 0, 0);
    return pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
  }
  rc = sqlite3_exec(s->db, sql, 0, 0, &msg);
  pawl__free(sql);
  if (rc != SQLITE_OK) {
    err = pawl__store_fail(&s->base, sq_rc_to_err(rc), "migration %s failed: %s",
                     m->name, msg ? msg : sqlite3_errstr(rc));
    sqlite3_free(msg);
    sqlite3_exec(s->db, "ROLLBACK", 0, 0, 0);
    return err;
  }
  sqlite3_stmt *st;
  rc = sqlite3_prepare_v2(s->db,
                          "INSERT INTO pawl_schema (version, name, checksum, "
                          "applied_at) VALUES (?1, ?2, ?3, ?4)",
                          -1, &st, NULL);
  if (rc == SQLITE_OK) {
    char sum[16];
    snprintf(sum, sizeof sum, "%08x", pawl__store_crc32(m->sql, m->len));
    sqlite3_bind_int(st, 1, m->version);
    sqlite3_bind_text(st, 2, m->name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, sum, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 4, pawl__store_now(&s->base));
    rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc == SQLITE_DONE) rc = SQLITE_OK;
  }
  if (rc != SQLITE_OK) {
    err = sq_fail(s, rc, "record migration");
    sqlite3_exec(s->db, "ROLLBACK", 0, 0, 0);
    return err;
  }
  rc = sqlite3_exec(s->db, "COMMIT", 0, 0, 0);
  if (rc != SQLITE_OK) {
    err = sq_fail(s, rc, "commit migration");
    sqlite3_exec(s->db, "ROLLBACK", 0, 0, 0);
    return err;
  }
  return 0;
}

/* Makes sure this is a pawl database (or an empty file we may claim) with a
 * pawl_schema table. */
static int sq_check_schema_table(sq_store_t *s, int create);

/* The check and the creation happen under one write lock, so a process
 * starting at the same moment sees either no tables or pawl_schema, never
 * half of one and half of the other. */
static int sq_prepare_schema_table(sq_store_t *s, int create) {
  int rc = sqlite3_exec(s->db, create ? "BEGIN IMMEDIATE" : "BEGIN", 0, 0, 0);
  if (rc != SQLITE_OK) return sq_fail(s, rc, "begin");
  int err = sq_check_schema_table(s, create);
  rc = sqlite3_exec(s->db, err ? "ROLLBACK" : "COMMIT", 0, 0, 0);
  if (!err && rc != SQLITE_OK) {
    err = sq_fail(s, rc, "create pawl_schema");
    sqlite3_exec(s->db, "ROLLBACK", 0, 0, 0);
  }
  return err;
}

static int sq_check_schema_table(sq_store_t *s, int create) {
  int exists = 0, rc = sq_table_exists(s, "pawl_schema", &exists);
  if (rc) return rc;
  if (exists) return 0;
  int ntables = 0;
  if ((rc = sq_count_tables(s, &ntables))) return rc;
  if (ntables > 0)
    return pawl__store_fail(&s->base, PAWL_ESCHEMA,
                      "sqlite:%s is not a pawl database (it has %d "
                      "table%s but no pawl_schema)",
                      s->path, ntables, ntables == 1 ? "" : "s");
  if (!create)
    return pawl__store_fail(&s->base, PAWL_ESCHEMA,
                      "sqlite:%s has no pawl schema yet: run `pawl migrate`",
                      s->path);
  rc = sqlite3_exec(s->db,
                    "CREATE TABLE pawl_schema ("
                    "version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
                    "checksum TEXT NOT NULL, applied_at INTEGER NOT NULL)",
                    0, 0, 0);
  if (rc != SQLITE_OK) return sq_fail(s, rc, "create pawl_schema");
  return 0;
}

/* Every command opens the store this way, so a database already at this
 * pawl's version is checked with reads alone: a write lock per migration
 * would queue `pawl show` behind a busy host's writers, where SQLite's
 * busy handler can lose the race for the lock until its timeout. */
static int sq_migrate(store_t *base) {
  sq_store_t *s = (sq_store_t *)base;
  int exists = 0, applied = 0;
  int rc = sq_table_exists(s, "pawl_schema", &exists);
  if (rc) return rc;
  if (exists) {
    if ((rc = sq_check_applied(s, &applied))) return rc;
    if ((size_t)applied == pawl__store_sqlite_migration_count) return 0;
  }
  rc = sq_prepare_schema_table(s, 1);
  if (rc) return rc;
  for (size_t i = 0; i < pawl__store_sqlite_migration_count; i++)
    if ((rc = sq_apply(s, &pawl__store_sqlite_migrations[i]))) return rc;
  return 0;
}

static int sq_version(store_t *base, int *current, int *latest) {
  sq_store_t *s = (sq_store_t *)base;
  int exists = 0, rc = sq_table_exists(s, "pawl_schema", &exists);
  if (rc) return rc;
  int applied = 0;
  if (exists && (rc = sq_check_applied(s, &applied))) return rc;
  *current = applied;
  *latest = (int)pawl__store_sqlite_migration_count;
  return 0;
}

/* ---- jobs --------------------------------------------------------------- */

static int sq_find_id(sq_store_t *s, int stmt_id, const char *key,
                      pawl_id_t *out) {
  sqlite3_stmt *st = sq_stmt(s, stmt_id);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) sq_col_id(st, 0, out);
  sqlite3_reset(st);
  if (rc == SQLITE_ROW) return 0;
  if (rc == SQLITE_DONE) return PAWL_ENOTFOUND;
  return sq_fail(s, rc, "look up key");
}

/* The age boost jobs of `queue` rank with: the queue's
 * own, else the database's. Read in the caller's transaction, so a boost
 * another process set is seen; the last queue asked about is remembered
 * for the rest of the transaction (a batch of one queue costs one read). */
static int sq_queue_boost(sq_store_t *s, const char *queue, int64_t *boost) {
  if (s->qb_tx == s->tx_seq && s->qb_queue && strcmp(s->qb_queue, queue) == 0) {
    *boost = s->qb_boost >= 0 ? s->qb_boost : s->boost_ms;
    return 0;
  }
  sqlite3_stmt *st = sq_stmt(s, SQ_QUEUE_BOOST);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_text(st, 1, queue, -1, SQLITE_STATIC);
  int rc = sqlite3_step(st);
  int64_t own = -1;
  if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
    own = sqlite3_column_int64(st, 0);
  sqlite3_reset(st);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE)
    return sq_fail(s, rc, "read the queue's age boost");
  char *copy = pawl__strdup(queue);
  if (copy) {
    pawl__free(s->qb_queue);
    s->qb_queue = copy;
    s->qb_boost = own;
    s->qb_tx = s->tx_seq;
  }
  *boost = own >= 0 ? own : s->boost_ms;
  return 0;
}

static int sq_sig_add(sq_store_t *s, const store_new_job_t *j, int64_t now);

static int sq_deps_link(sq_store_t *s, const store_new_job_t *j,
                        const pawl_id_t *prev, int64_t now);

/* `prev`: the id the job before it in this insert got (NULL: none), for
 * j->after_prev. */
static int sq_instance_take(sq_store_t *s, const store_new_job_t *j,
                            int64_t now);

static int sq_insert_one(sq_store_t *s, const store_new_job_t *j, int64_t now,
                         const pawl_id_t *prev, pawl_id_t *id_out,
                         int *status) {
  int rc;
  if (j->idempotency_key) {
    rc = sq_find_id(s, SQ_IDEM_FIND, j->idempotency_key, id_out);
    if (rc == 0) {
      *status = PAWL_ENQ_DUPLICATE;
      return 0;
    }
    if (rc != PAWL_ENOTFOUND) return rc;
  }
  if (j->business_key) {
    rc = sq_find_id(s, SQ_BIZ_FIND, j->business_key, id_out);
    if (rc == 0) {
      if (j->return_existing) {
        *status = PAWL_ENQ_EXISTING;
        return 0;
      }
      char text[PAWL_ID_STRLEN];
      pawl_id_format(id_out, text);
      return pawl__store_fail(&s->base, PAWL_EKEY,
                        "business key \"%s\" is held by live job %s",
                        j->business_key, text);
    }
    if (rc != PAWL_ENOTFOUND) return rc;
  }
  sqlite3_stmt *st = sq_stmt(s, SQ_INSERT);
  if (!st) return PAWL_ESTORE;
  int64_t run_at = j->run_at ? j->run_at : now;
  sq_bind_id(st, 1, &j->id);
  sqlite3_bind_text(st, 2, j->type, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 3, j->queue ? j->queue : "default", -1, SQLITE_STATIC);
  int deps = j->nafter || (j->after_prev && prev);
  sqlite3_bind_int(st, 4, j->blocked || deps ? PAWL_BLOCKED : PAWL_PENDING);
  sqlite3_bind_int(st, 5, j->priority);
  int64_t boost;
  if ((rc = sq_queue_boost(s, j->queue ? j->queue : "default", &boost)))
    return rc;
  sqlite3_bind_int64(st, 6, store_rank(j->priority, run_at, boost));
  sqlite3_bind_text(st, 7, j->payload ? j->payload : "{}", -1, SQLITE_STATIC);
  sq_bind_text(st, 8, j->params);
  sqlite3_bind_text(st, 9, j->tags ? j->tags : "[]", -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 10, run_at);
  sqlite3_bind_int(st, 11, j->max_attempts);
  sqlite3_bind_int(st, 12, j->timeout_s);
  sq_bind_text(st, 13, j->idempotency_key);
  sq_bind_text(st, 14, j->business_key);
  sq_bind_text(st, 15, j->correlation_id);
  sq_bind_text(st, 16, j->enqueued_by);
  sqlite3_bind_int64(st, 17, now);
  sq_bind_text(st, 18, j->ordering_key);
  sq_bind_text(st, 19, j->resource);
  if (j->batch_id) sq_bind_id(st, 20, j->batch_id);
  sqlite3_bind_int(st, 21, j->depth);
  /* Pending and due later: early (V018), promoted by the claim when due. */
  sqlite3_bind_int(st, 22, !(j->blocked || deps) && run_at > now);
  if ((rc = sq_exec(s, st, "insert job"))) return rc;
  if (j->ordering_key) sq_key_note(s, j->ordering_key);
  if (j->signal_key && (rc = sq_sig_add(s, j, now))) return rc; /* signals */
  if (j->instance_key && (rc = sq_instance_take(s, j, now))) return rc;
  if (j->idempotency_key) {
    st = sq_stmt(s, SQ_IDEM_ADD);
    if (!st) return PAWL_ESTORE;
    sqlite3_bind_text(st, 1, j->idempotency_key, -1, SQLITE_STATIC);
    sq_bind_id(st, 2, &j->id);
    sqlite3_bind_int64(st, 3, now);
    if ((rc = sq_exec(s, st, "record idempotency key"))) return rc;
  }
  if (deps && (rc = sq_deps_link(s, j, prev, now))) return rc;
  *id_out = j->id;
  *status = PAWL_ENQ_NEW;
  return 0;
}

static int sq_insert(store_t *base, const store_new_job_t *jobs, size_t n,
                     pawl_id_t *ids, int *status) {
  sq_store_t *s = (sq_store_t *)base;
  int rc = sq_begin(s);
  if (rc) return rc;
  /* Read under the write lock, as every transaction here: the times of
   * transactions follow their order of commit. */
  int64_t now = pawl__store_now(base);
  for (size_t i = 0; i < n && !rc; i++)
    rc = sq_insert_one(s, &jobs[i], now, i ? &ids[i - 1] : NULL, &ids[i],
                       &status[i]);
  return sq_end(s, rc);
}

static int sq_get(store_t *base, const pawl_id_t *id, pawl_job_t **out) {
  return sq_read_job((sq_store_t *)base, id, out);
}

/* Steps the bound statement `st` of a listing and shows each job to `cb`.
 * The matching rows are read, and the statement reset, before the first
 * callback: a callback may then call anything on this handle (pawl_list
 * again, which reuses this statement; a write, which would change the
 * index the walk is on), and the walk is the rows that matched when it
 * started, as on PostgreSQL, whose result is complete before the first
 * callback too. The rows take memory up to the filter's limit. */
static int sq_list_rows(sq_store_t *s, sqlite3_stmt *st, pawl_job_cb cb,
                        void *data) {
  pawl_job_t **jobs = NULL;
  size_t n = 0;
  int rc, err = 0;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    pawl_job_t **slot = pawl__store_push((void **)&jobs, &n, sizeof *jobs);
    if (!slot || !(*slot = sq_row_to_job(st, NULL))) {
      err = pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
      break;
    }
  }
  if (!err && rc != SQLITE_DONE) err = sq_fail(s, rc, "list jobs");
  sqlite3_reset(st);
  for (size_t i = 0; !err && i < n; i++) {
    int stop = cb(jobs[i], data);
    pawl_job_free(jobs[i]);
    jobs[i] = NULL;
    if (stop) break;
  }
  pawl_jobs_free(jobs, n); /* what the callbacks were not shown */
  return err;
}

static int sq_adm_list(store_t *base, const pawl_filter_t *f, pawl_job_cb cb,
                       void *data);

static int sq_list(store_t *base, const pawl_filter_t *f, pawl_job_cb cb,
                   void *data) {
  sq_store_t *s = (sq_store_t *)base;
  if (f->tag || f->older_than_ms) return sq_adm_list(base, f, cb, data);
  sqlite3_stmt *st = sq_stmt(s, f->state == PAWL_FAILED ? SQ_LIST_FAILED
                                                        : SQ_LIST);
  if (!st) return PAWL_ESTORE;
  if (f->state >= 0) sqlite3_bind_int(st, 1, f->state);
  sq_bind_text(st, 2, f->queue);
  sq_bind_text(st, 3, f->type);
  sqlite3_bind_int(st, 4, f->limit > 0 ? f->limit : 100);
  return sq_list_rows(s, st, cb, data);
}

static int sq_find_idempotent(store_t *base, const char *key, pawl_id_t *out) {
  return sq_find_id((sq_store_t *)base, SQ_IDEM_FIND, key, out);
}

static int sq_find_business(store_t *base, const char *key, pawl_id_t *out) {
  return sq_find_id((sq_store_t *)base, SQ_BIZ_FIND, key, out);
}

static int sq_progress(store_t *base, const pawl_id_t *id,
                       const pawl_id_t *token, int32_t attempt, double done,
                       double total) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_PROGRESS);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_double(st, 1, done);
  sqlite3_bind_double(st, 2, total);
  sq_bind_id(st, 3, id);
  sq_bind_id(st, 4, token);
  sqlite3_bind_int(st, 5, attempt);
  int rc = sq_exec_write(s, st, "record progress");
  if (rc) return rc;
  return sqlite3_changes(s->db) == 1 ? 0 : pawl__store_not_held(&s->base, id, attempt);
}

/* ---- claim and leases --------------------------------------------------- */

/* A JSON array of queue names, bound as one value for json_each(). NULL
 * when out of memory; pawl__free() it. Names never hold control characters
 * (pawl.c checks them), so escaping quotes and backslashes is enough. */
static char *sq_queues_json(const char *const *queues, size_t n) {
  size_t len = 3;
  for (size_t i = 0; i < n; i++) len += 2 * strlen(queues[i]) + 3;
  char *json = pawl__malloc(len);
  if (!json) return NULL;
  char *p = json;
  *p++ = '[';
  for (size_t i = 0; i < n; i++) {
    if (i) *p++ = ',';
    *p++ = '"';
    for (const char *q = queues[i]; *q; q++) {
      if (*q == '"' || *q == '\\') *p++ = '\\';
      *p++ = *q;
    }
    *p++ = '"';
  }
  *p++ = ']';
  *p = 0;
  return json;
}

/* ---- limits --------------------------------------------------------------
 *
 * The claim's steps are in stores/store.h ("limits"). SQLite needs no lock
 * of its own: the claim's BEGIN IMMEDIATE holds the one write lock from the
 * reading of the limits and their running jobs to the commit of the jobs
 * taken and the windows counted, so no other claim (of this process or
 * another) can start a job in between. A database without limits pays one
 * step of SQ_LIMITS_READ over an empty table per claim. */

/* Reads the limits, with the running jobs of those with a max_running,
 * and plans them at `now` for up to `limited_max` jobs under a limit.
 * l->n is 0 when the database has none. */
static int sq_limits_read(sq_store_t *s, int64_t now, size_t limited_max,
                          store_limits_t *l) {
  sqlite3_stmt *st = sq_stmt(s, SQ_LIMITS_READ);
  if (!st) return PAWL_ESTORE;
  int step, rc = 0;
  while ((step = sqlite3_step(st)) == SQLITE_ROW) {
    if (pawl__store_limits_add(l, (const char *)sqlite3_column_text(st, 0),
                               sqlite3_column_int64(st, 1),
                               sqlite3_column_int64(st, 2),
                               sqlite3_column_int64(st, 3),
                               sqlite3_column_int64(st, 4),
                               sqlite3_column_int64(st, 5))) {
      rc = pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
      break;
    }
  }
  if (!rc && step != SQLITE_DONE) rc = sq_fail(s, step, "read limits");
  sqlite3_reset(st);
  for (size_t i = 0; !rc && i < l->n; i++) {
    store_limit_t *lim = &l->v[i];
    if (!lim->max_running) continue;
    const char *q = pawl__store_limit_queue(lim);
    st = sq_stmt(s, q ? SQ_LIMIT_RUNNING_QUEUE : SQ_LIMIT_RUNNING_RES);
    if (!st) return PAWL_ESTORE;
    sqlite3_bind_text(st, 1, q ? q : lim->name, -1, SQLITE_STATIC);
    step = sqlite3_step(st);
    if (step == SQLITE_ROW) lim->running = sqlite3_column_int64(st, 0);
    sqlite3_reset(st);
    if (step != SQLITE_ROW) rc = sq_fail(s, step, "count running jobs");
  }
  if (!rc) pawl__store_limits_plan(l, now, limited_max);
  return rc;
}

/* A JSON array of the limits with nothing left: their queues (`queues`
 * set) or their resources. NULL when out of memory; pawl__free() it. */
static char *sq_limits_blocked(const store_limits_t *l, int queues) {
  const char **names = pawl__calloc(l->n ? l->n : 1, sizeof *names);
  if (!names) return NULL;
  size_t n = 0;
  for (size_t i = 0; i < l->n; i++) {
    const char *q = pawl__store_limit_queue(&l->v[i]);
    if (pawl__store_limit_blocked(&l->v[i]) && !q == !queues)
      names[n++] = queues ? q : l->v[i].name;
  }
  char *json = sq_queues_json(names, n);
  pawl__free(names);
  return json;
}

/* Step 4 for the picked row `st` (SQ_CLAIM_LIM*). */
static int sq_limits_admit(store_limits_t *l, sqlite3_stmt *st) {
  return pawl__store_limits_admit(
      l, (const char *)sqlite3_column_text(st, STORE_JOB_QUEUE),
      (const char *)sqlite3_column_text(st, SQLITE_JOB_RESOURCE_COL));
}

/* Step 5: the rate windows of the limits that counted starts. */
static int sq_limits_save(sq_store_t *s, const store_limits_t *l) {
  for (size_t i = 0; i < l->n; i++) {
    int64_t start, count;
    if (!pawl__store_limit_window(&l->v[i], &start, &count)) continue;
    sqlite3_stmt *st = sq_stmt(s, SQ_LIMIT_WINDOW);
    if (!st) return PAWL_ESTORE;
    sqlite3_bind_text(st, 1, l->v[i].name, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, start);
    sqlite3_bind_int64(st, 3, count);
    int rc = sq_exec(s, st, "count starts under a rate limit");
    if (rc) return rc;
  }
  return 0;
}

/* min(run_at) of a SQ_NEXT_DUE_LIM* statement bound by the caller, into
 * *at when earlier (0: none yet); `floor` raises it (a window's end). */
static int sq_limits_due(sq_store_t *s, sqlite3_stmt *st, int64_t floor,
                         int64_t *at) {
  int step = sqlite3_step(st);
  int none = step != SQLITE_ROW || sqlite3_column_type(st, 0) == SQLITE_NULL;
  int64_t v = none ? 0 : sqlite3_column_int64(st, 0);
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  if (step != SQLITE_ROW) return sq_fail(s, step, "find next due job");
  if (none) return 0;
  if (v < floor) v = floor;
  if (!*at || v < *at) *at = v;
  return 0;
}

/* next_due() on a database with limits: the earliest pending job under no
 * limit with nothing left; and, for a limit whose rate window is used up
 * (and that has a start left by its max_running), the end of its window
 * if it has jobs pending. Jobs of a limit at its max_running wait for a
 * finish, which wakes the poller of the node that ran it (others look at
 * their next poll). `queues_json` is the claimer's queues, NULL for all. */
static int sq_next_due_limited(sq_store_t *s, store_limits_t *l,
                               const char *const *queues, size_t nqueues,
                               const char *queues_json, int later_only,
                               int64_t *run_at) {
  char *res = sq_limits_blocked(l, 0), *qs = sq_limits_blocked(l, 1);
  int rc = 0;
  int64_t at = 0;
  sqlite3_stmt *st = NULL;
  if (!res || !qs) rc = pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
  else if (!(st = sq_stmt(s, SQ_NEXT_DUE_LIM))) rc = PAWL_ESTORE;
  if (!rc) {
    sq_bind_text(st, 1, queues_json);
    sqlite3_bind_text(st, 2, res, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, qs, -1, SQLITE_STATIC);
    if (later_only) sqlite3_bind_int(st, 9, 1);
    rc = sq_limits_due(s, st, 0, &at);
  }
  for (size_t i = 0; !rc && i < l->n; i++) {
    const store_limit_t *lim = &l->v[i];
    if (!lim->rate_blocked) continue;
    const char *q = pawl__store_limit_queue(lim);
    int mine = !q || nqueues == 0;
    for (size_t k = 0; !mine && k < nqueues; k++) mine = !strcmp(q, queues[k]);
    if (!mine) continue;
    if (!(st = sq_stmt(s, q ? SQ_NEXT_DUE_LIM_QUEUE : SQ_NEXT_DUE_LIM_RES))) {
      rc = PAWL_ESTORE;
      break;
    }
    sqlite3_bind_text(st, 1, q ? q : lim->name, -1, SQLITE_STATIC);
    if (!q) sq_bind_text(st, 2, queues_json);
    rc = sq_limits_due(s, st, pawl__store_limit_window_end(lim), &at);
  }
  pawl__free(res);
  pawl__free(qs);
  if (!rc) *run_at = at;
  return rc;
}

static int sq_limit_set(store_t *base, const char *name, int64_t max_running,
                        int64_t rate, int64_t window_ms) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_LIMIT_SET);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
  sq_bind_opt_int(st, 2, max_running);
  sq_bind_opt_int(st, 3, rate);
  sq_bind_opt_int(st, 4, window_ms);
  sqlite3_bind_int64(st, 5, pawl__store_now(base));
  return sq_exec_write(s, st, "set limit");
}

static int sq_limit_remove(store_t *base, const char *name) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_LIMIT_REMOVE);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
  int rc = sq_exec_write(s, st, "remove limit");
  if (!rc && sqlite3_changes(s->db) == 0)
    rc = pawl__store_fail(base, PAWL_ENOTFOUND, "no limit named \"%s\"",
                          name);
  return rc;
}

static int sq_limit_list(store_t *base, pawl_limit_t **out, size_t *n) {
  sq_store_t *s = (sq_store_t *)base;
  *out = NULL;
  *n = 0;
  sqlite3_stmt *st = sq_stmt(s, SQ_LIMIT_LIST);
  if (!st) return PAWL_ESTORE;
  pawl_limit_t *v = NULL;
  size_t count = 0;
  int step, rc = 0;
  while ((step = sqlite3_step(st)) == SQLITE_ROW) {
    pawl_limit_t *lim = pawl__store_push((void **)&v, &count, sizeof *lim);
    if (!lim || pawl__store_dup(&lim->name,
                                (const char *)sqlite3_column_text(st, 0))) {
      rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
      break;
    }
    lim->max_running = sqlite3_column_int64(st, 1);
    lim->rate = sqlite3_column_int64(st, 2);
    lim->rate_window_ms = sqlite3_column_int64(st, 3);
    lim->window_start = sqlite3_column_int64(st, 4);
    lim->window_count = sqlite3_column_int64(st, 5);
    lim->updated_at = sqlite3_column_int64(st, 6);
    lim->running = sqlite3_column_int64(st, 7);
  }
  if (!rc && step != SQLITE_DONE) rc = sq_fail(s, step, "list limits");
  sqlite3_reset(st);
  if (rc) {
    pawl_limits_free(v, count);
    return rc;
  }
  *out = v;
  *n = count;
  return 0;
}

/* ---- job types ----------------------------------------------------------- */

static int sq_types_sync(store_t *base, const char *types) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_TYPES_SYNC);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_text(st, 1, types, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 2, pawl__store_now(base));
  return sq_exec_write(s, st, "record job types");
}

static int sq_type_get(store_t *base, const char *type, char **out,
                       char **branches) {
  sq_store_t *s = (sq_store_t *)base;
  *out = NULL;
  if (branches) *branches = NULL;
  sqlite3_stmt *st = sq_stmt(s, SQ_TYPE_REDACT);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_text(st, 1, type, -1, SQLITE_STATIC);
  int rc = 0, step = sqlite3_step(st);
  if (step == SQLITE_ROW) {
    const char *b = (const char *)sqlite3_column_text(st, 1);
    if (pawl__store_dup(out, (const char *)sqlite3_column_text(st, 0)) ||
        (branches && b && pawl__store_dup(branches, b))) {
      pawl__free(*out);
      *out = NULL;
      rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
    }
  } else if (step != SQLITE_DONE) {
    rc = sq_fail(s, step, "read a job type");
  }
  sqlite3_reset(st);
  return rc;
}

/* Leases the `n` picked rows whose seqs `seqs` holds as a JSON array. All
 * must still be pending: the transaction has held the write lock since
 * they were picked. */
static int sq_claim_take(sq_store_t *s, const store_claim_t *c, int64_t now,
                         const pawl_buf_t *seqs, const pawl_buf_t *ahead,
                         size_t n) {
  if (seqs->oom || ahead->oom)
    return pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
  sqlite3_stmt *st = sq_stmt(s, SQ_CLAIM_TAKE);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_int64(st, 1, now);
  sqlite3_bind_text(st, 2, c->owner, -1, SQLITE_STATIC);
  sq_bind_id(st, 3, c->token);
  sqlite3_bind_int64(st, 4, now + c->lease_ms);
  sqlite3_bind_text(st, 5, seqs->data, (int)seqs->len, SQLITE_STATIC);
  if (ahead->len)
    sqlite3_bind_text(st, 6, ahead->data, (int)ahead->len, SQLITE_STATIC);
  else
    sqlite3_bind_null(st, 6);
  int rc = sq_exec(s, st, "claim jobs");
  if (!rc && (size_t)sqlite3_changes(s->db) != n)
    rc = pawl__store_fail(&s->base, PAWL_ESTORE,
                    "claim: %d of %zu picked jobs were still pending",
                    sqlite3_changes(s->db), n);
  return rc;
}

/* Whether any queue is paused, into *paused. */
static int sq_any_paused(sq_store_t *s, int *paused) {
  sqlite3_stmt *st = sq_stmt(s, SQ_ANY_PAUSED);
  if (!st) return PAWL_ESTORE;
  int step = sqlite3_step(st);
  sqlite3_reset(st);
  *paused = step == SQLITE_ROW;
  if (step != SQLITE_ROW && step != SQLITE_DONE)
    return sq_fail(s, step, "read paused queues");
  return 0;
}

/* Queues: with a queue paused, the claim `*which` becomes its
 * variant that leaves paused queues alone. Read in the claim's transaction;
 * with none paused (one step over an empty table) the claim costs what it
 * did before queues could be paused. */
static int sq_claim_paused(sq_store_t *s, int *which) {
  sqlite3_stmt *st = sq_stmt(s, SQ_ANY_PAUSED);
  if (!st) return PAWL_ESTORE;
  int step = sqlite3_step(st);
  sqlite3_reset(st);
  if (step == SQLITE_ROW) *which += SQ_CLAIM_UNPAUSED - SQ_CLAIM;
  else if (step != SQLITE_DONE) return sq_fail(s, step, "read paused queues");
  return 0;
}

/* The jobs written with a later run_at that are due by `now` become ready
 * (SQLITE_SQL_PROMOTE): a seek of pawl_jobs_early, in the claim's
 * transaction. */
static int sq_promote(sq_store_t *s, int64_t now) {
  sqlite3_stmt *st = sq_stmt(s, SQ_PROMOTE_ANY);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_int64(st, 1, now);
  int step = sqlite3_step(st);
  sqlite3_reset(st);
  if (step == SQLITE_DONE) return 0;
  if (step != SQLITE_ROW) return sq_fail(s, step, "find due jobs to promote");
  st = sq_stmt(s, SQ_PROMOTE);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_int64(st, 1, now);
  return sq_exec(s, st, "promote due jobs");
}

/* ---- lanes (V018__claim_holds.sql) --------------------------------------
 *
 * A paused queue or a limit with nothing left holds its jobs without
 * touching their rows. Walking the claim's index past them would cost a
 * claim as much as they are many, so a claim with any such lane blocked
 * picks from each open lane (queue, resource) of pawl_jobs_lane instead,
 * at most c->max jobs each, and merges the picks in claim order: its cost
 * grows with the lanes, not with the jobs in the blocked ones. */

/* One job picked from a lane, for the merge. */
typedef struct sq_pick {
  pawl_job_t *job;
  char *resource; /* NULL: none */
  int64_t rank;
} sq_pick_t;

/* Claim order: rank descending, then run_at, then id. */
static int sq_pick_cmp(const void *a, const void *b) {
  const sq_pick_t *x = a, *y = b;
  if (x->rank != y->rank) return x->rank > y->rank ? -1 : 1;
  if (x->job->run_at != y->job->run_at)
    return x->job->run_at < y->job->run_at ? -1 : 1;
  return memcmp(x->job->id.bytes, y->job->id.bytes, sizeof x->job->id.bytes);
}

typedef struct sq_lanes {
  sq_store_t *s;
  const store_claim_t *c;
  const store_limits_t *lim;
  char **paused;
  size_t npaused;
  sq_pick_t *picks;
  size_t npicks;
  int64_t now;
} sq_lanes_t;

/* Whether limit `name` (a resource, or a queue when `queue`) is blocked. */
static int sq_lane_blocked(const sq_lanes_t *ln, const char *name, int queue) {
  for (size_t i = 0; i < ln->lim->n; i++) {
    const store_limit_t *l = &ln->lim->v[i];
    const char *q = pawl__store_limit_queue(l);
    if (!q != !queue || !pawl__store_limit_blocked(l)) continue;
    if (!strcmp(queue ? q : l->name, name)) return 1;
  }
  return 0;
}

static int sq_lane_queue_open(const sq_lanes_t *ln, const char *q) {
  for (size_t i = 0; i < ln->npaused; i++)
    if (!strcmp(ln->paused[i], q)) return 0;
  return !sq_lane_blocked(ln, q, 1);
}

/* Picks the first c->max due jobs of lane (q, res). */
static int sq_lane_pick(sq_lanes_t *ln, const char *q, const char *res) {
  sq_store_t *s = ln->s;
  sqlite3_stmt *st = sq_stmt(s, SQ_CLAIM_LANE);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_int64(st, 1, ln->now);
  sqlite3_bind_int64(st, 2, (sqlite3_int64)ln->c->max);
  sqlite3_bind_text(st, 3, q, -1, SQLITE_TRANSIENT);
  sq_bind_text(st, 4, res);
  int step, rc = 0;
  while ((step = sqlite3_step(st)) == SQLITE_ROW) {
    sq_pick_t *pk = pawl__store_push((void **)&ln->picks, &ln->npicks, sizeof *pk);
    if (!pk || !(pk->job = sq_row_to_job(st, ln->c->owner)) ||
        pawl__store_dup(&pk->resource, (const char *)sqlite3_column_text(
                                           st, SQLITE_JOB_RESOURCE_COL))) {
      rc = pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
      break;
    }
    pk->rank = sqlite3_column_int64(st, SQLITE_JOB_RESOURCE_COL + 1);
  }
  if (!rc && step != SQLITE_DONE) rc = sq_fail(s, step, "pick jobs of a lane");
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  return rc;
}

/* The text of a one-column, one-row statement `id` bound with a and b
 * (b may be NULL), copied into *out (NULL: none). */
static int sq_lane_text(sq_store_t *s, int id, const char *a, const char *b,
                        char **out) {
  *out = NULL;
  sqlite3_stmt *st = sq_stmt(s, id);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_text(st, 1, a, -1, SQLITE_TRANSIENT);
  if (b) sqlite3_bind_text(st, 2, b, -1, SQLITE_TRANSIENT);
  int step = sqlite3_step(st), rc = 0;
  if (step == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL &&
      pawl__store_dup(out, (const char *)sqlite3_column_text(st, 0)))
    rc = pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
  else if (step != SQLITE_ROW && step != SQLITE_DONE)
    rc = sq_fail(s, step, "find lanes");
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  return rc;
}

/* Every open lane of queue q. */
static int sq_lanes_of_queue(sq_lanes_t *ln, const char *q) {
  if (!sq_lane_queue_open(ln, q)) return 0;
  char *one = NULL;
  int rc = sq_lane_text(ln->s, SQ_LANE_NONE, q, NULL, &one);
  if (!rc && one) rc = sq_lane_pick(ln, q, NULL);
  pawl__free(one);
  char *res = pawl__strdup("");
  if (!res) return pawl__store_fail(&ln->s->base, PAWL_ENOMEM, "out of memory");
  while (!rc) {
    char *next = NULL;
    rc = sq_lane_text(ln->s, SQ_LANE_RES, q, res, &next);
    pawl__free(res);
    res = next;
    if (rc || !res) break;
    if (!sq_lane_blocked(ln, res, 0)) rc = sq_lane_pick(ln, q, res);
  }
  pawl__free(res);
  return rc;
}

/* The queues paused now, into ln->paused. */
static int sq_lanes_paused(sq_lanes_t *ln) {
  sqlite3_stmt *st = sq_stmt(ln->s, SQ_PAUSED_QUEUES);
  if (!st) return PAWL_ESTORE;
  int step, rc = 0;
  while ((step = sqlite3_step(st)) == SQLITE_ROW) {
    char **slot = pawl__store_push((void **)&ln->paused, &ln->npaused, sizeof *slot);
    if (!slot || pawl__store_dup(slot, (const char *)sqlite3_column_text(st, 0))) {
      rc = pawl__store_fail(&ln->s->base, PAWL_ENOMEM, "out of memory");
      break;
    }
  }
  if (!rc && step != SQLITE_DONE) rc = sq_fail(ln->s, step, "read paused queues");
  sqlite3_reset(st);
  return rc;
}

/* Applies to `j`, the got-th job of a claim, what CLAIM_TAKE writes to
 * its row, and lists its seq in `seqs` (and in `ahead` when it is claimed
 * ahead of a free worker: CLAIM_TAKE leaves its start NULL). A job of a
 * key that starts holds the key's other jobs: its key is noted. */
static void sq_claim_mark(sq_store_t *s, const store_claim_t *c,
                          pawl_job_t *j, int64_t now, size_t got,
                          pawl_buf_t *seqs, pawl_buf_t *ahead) {
  if (j->ordering_key) sq_key_note(s, j->ordering_key);
  j->state = PAWL_RUNNING;
  j->attempt++;
  j->started_at = j->updated_at = now;
  if (got >= c->ahead_from) {
    j->started_at = 0;
    pawl__buf_printf(ahead, "%s%lld", ahead->len ? "," : "[",
                     (long long)j->store_key);
  }
  j->lease_expires = now + c->lease_ms;
  j->progress_done = j->progress_total = 0;
  j->version++;
  pawl__buf_printf(seqs, "%s%lld", got ? "," : "", (long long)j->store_key);
}

/* Picks from every open lane of `queues` (every queue with ready jobs
 * when none) into ln->picks: at most ln->c->max jobs each. */
static int sq_lanes_collect(sq_lanes_t *ln, const char *const *queues,
                            size_t nqueues) {
  int rc = sq_lanes_paused(ln);
  if (nqueues) {
    for (size_t i = 0; !rc && i < nqueues; i++) {
      int dup = 0; /* a queue named twice is one lane */
      for (size_t k = 0; k < i; k++) dup |= !strcmp(queues[k], queues[i]);
      if (!dup) rc = sq_lanes_of_queue(ln, queues[i]);
    }
    return rc;
  }
  char *q = rc ? NULL : pawl__strdup("");
  if (!rc && !q) rc = pawl__store_fail(&ln->s->base, PAWL_ENOMEM, "out of memory");
  while (!rc && q) {
    char *next = NULL;
    rc = sq_lane_text(ln->s, SQ_LANE_QUEUE, q, NULL, &next);
    pawl__free(q);
    q = next;
    if (!rc && q) rc = sq_lanes_of_queue(ln, q);
  }
  pawl__free(q);
  return rc;
}

static void sq_lanes_free(sq_lanes_t *ln) {
  for (size_t i = 0; i < ln->npicks; i++) {
    pawl_job_free(ln->picks[i].job);
    pawl__free(ln->picks[i].resource);
  }
  pawl__free(ln->picks);
  for (size_t i = 0; i < ln->npaused; i++) pawl__free(ln->paused[i]);
  pawl__free(ln->paused);
}

/* Picks from every open lane of the claimer's queues (every queue with
 * ready jobs when it names none) and keeps, in claim order, the first
 * c->max jobs its limits admit: into jobs[], their seqs into `seqs`
 * (and `ahead`, sq_claim_mark()). */
static int sq_claim_lanes(sq_store_t *s, const store_claim_t *c, int64_t now,
                          store_limits_t *lim, pawl_job_t **jobs, size_t *got,
                          pawl_buf_t *seqs, pawl_buf_t *ahead) {
  sq_lanes_t ln = {.s = s, .c = c, .lim = lim, .now = now};
  int rc = sq_lanes_collect(&ln, c->queues, c->nqueues);
  if (!rc && ln.npicks)
    qsort(ln.picks, ln.npicks, sizeof *ln.picks, sq_pick_cmp);
  pawl__buf_putc(seqs, '[');
  for (size_t i = 0; i < ln.npicks; i++) {
    sq_pick_t *pk = &ln.picks[i];
    if (!rc && *got < c->max &&
        (!lim->n || pawl__store_limits_admit(lim, pk->job->queue, pk->resource))) {
      pawl_job_t *j = pk->job;
      sq_claim_mark(s, c, j, now, *got, seqs, ahead);
      jobs[(*got)++] = j;
      pk->job = NULL;
    }
  }
  pawl__buf_putc(seqs, ']');
  sq_lanes_free(&ln);
  return rc;
}

/* next_due() with a lane blocked: the run_at of a job an open lane would
 * give a claim now, into *at (0: none), one row per open lane. */
static int sq_next_due_lanes(sq_store_t *s, const char *const *queues,
                             size_t nqueues, store_limits_t *lim,
                             int64_t now, int64_t *at) {
  store_claim_t one = {.queues = queues, .nqueues = nqueues, .max = 1};
  sq_lanes_t ln = {.s = s, .c = &one, .lim = lim, .now = now};
  int rc = sq_lanes_collect(&ln, queues, nqueues);
  *at = 0;
  for (size_t i = 0; !rc && i < ln.npicks; i++)
    if (!*at || ln.picks[i].job->run_at < *at) *at = ln.picks[i].job->run_at;
  sq_lanes_free(&ln);
  return rc;
}

/* Whether a claim must go by lanes: it names its queues, a queue is
 * paused or a limit has nothing left. */
static int sq_lanes_needed(size_t nqueues, int paused,
                           const store_limits_t *lim) {
  if (nqueues || paused) return 1;
  for (size_t i = 0; i < lim->n; i++)
    if (pawl__store_limit_blocked(&lim->v[i])) return 1;
  return 0;
}

/* Picks the due jobs in claim order and leases them, in one transaction
 * (see SQLITE_SQL_CLAIM). The jobs come out as CLAIM_TAKE leaves their
 * rows. */
static int sq_claim(store_t *base, const store_claim_t *c, pawl_job_t ***out,
                    size_t *n) {
  sq_store_t *s = (sq_store_t *)base;
  *out = NULL;
  *n = 0;
  if (c->max == 0) return 0;
  int which = SQ_CLAIM;
  pawl_job_t **jobs = pawl__calloc(c->max, sizeof *jobs);
  pawl_buf_t seqs, ahead; /* ahead: empty, or a JSON array */
  pawl__buf_init(&seqs);
  pawl__buf_init(&ahead);
  if (!jobs) return pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
  int rc = sq_begin(s);
  /* The time is read once the write lock is held: a claim that waited for
   * a finish to commit (the finish that released the job it takes) must
   * not record its start before that finish. */
  int64_t now = pawl__store_now(base);
  size_t got = 0;
  int unpaused_which = which;
  if (!rc) rc = sq_claim_paused(s, &which);
  if (!rc) rc = sq_promote(s, now);
  /* Limits: with any, the pick leaves out the jobs of limits
   * with nothing left, and each picked job is admitted or skipped. */
  store_limits_t lim = {0};
  char *lim_res = NULL, *lim_qs = NULL;
  if (!rc) rc = sq_limits_read(s, now, c->limited_max, &lim);
  if (!rc && lim.n) {
    which += SQ_CLAIM_LIM - SQ_CLAIM;
    lim_res = sq_limits_blocked(&lim, 0);
    lim_qs = sq_limits_blocked(&lim, 1);
    if (!lim_res || !lim_qs)
      rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
  }
  if (rc) {
    rc = sq_end(s, rc);
  } else if (sq_lanes_needed(c->nqueues,
                             which != unpaused_which &&
                                 which != unpaused_which + SQ_CLAIM_LIM - SQ_CLAIM,
                             &lim)) {
    rc = sq_claim_lanes(s, c, now, &lim, jobs, &got, &seqs, &ahead);
    if (ahead.len) pawl__buf_putc(&ahead, ']');
    if (!rc && got > 0) rc = sq_claim_take(s, c, now, &seqs, &ahead, got);
    if (!rc && got > 0 && lim.n) rc = sq_limits_save(s, &lim);
    rc = sq_end(s, rc);
  } else {
    sqlite3_stmt *st = sq_stmt(s, which);
    if (!st) {
      rc = PAWL_ESTORE;
    } else {
      sqlite3_bind_int64(st, 1, now);
      sqlite3_bind_int64(st, 2, (sqlite3_int64)c->max);
      if (lim.n) {
        sqlite3_bind_text(st, 4, lim_res, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 5, lim_qs, -1, SQLITE_STATIC);
      }
      pawl__buf_putc(&seqs, '[');
      int step;
      while ((step = sqlite3_step(st)) == SQLITE_ROW && got < c->max) {
        if (lim.n && !sq_limits_admit(&lim, st)) continue;
        pawl_job_t *j = sq_row_to_job(st, c->owner);
        if (!j) {
          rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
          break;
        }
        sq_claim_mark(s, c, j, now, got, &seqs, &ahead);
        jobs[got++] = j;
      }
      pawl__buf_putc(&seqs, ']');
      if (ahead.len) pawl__buf_putc(&ahead, ']');
      if (!rc && step != SQLITE_DONE && step != SQLITE_ROW)
        rc = sq_fail(s, step, "pick jobs to claim");
      sqlite3_reset(st);
    }
    if (!rc && got > 0) rc = sq_claim_take(s, c, now, &seqs, &ahead, got);
    if (!rc && got > 0 && lim.n) rc = sq_limits_save(s, &lim);
    rc = sq_end(s, rc);
  }
  pawl__store_limits_free(&lim);
  pawl__free(lim_res);
  pawl__free(lim_qs);
  pawl__buf_free(&seqs);
  pawl__buf_free(&ahead);
  if (rc || got == 0) {
    /* Nothing was committed (or the commit failed): drop what we read. */
    for (size_t i = 0; i < got; i++) pawl_job_free(jobs[i]);
    pawl__free(jobs);
    return rc;
  }
  *out = jobs;
  *n = got;
  return 0;
}

static int sq_extend(store_t *base, const pawl_id_t *token, int64_t lease_ms,
                     size_t *n) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_EXTEND);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_int64(st, 1, pawl__store_now(base) + lease_ms);
  sq_bind_id(st, 2, token);
  int rc = sq_exec_write(s, st, "extend leases");
  if (!rc && n) *n = (size_t)sqlite3_changes(s->db);
  return rc;
}

static int sq_extend_one(store_t *base, const pawl_id_t *id,
                         const pawl_id_t *token, int32_t attempt,
                         int64_t lease_ms, int *held) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_EXTEND_ONE);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_int64(st, 1, pawl__store_now(base) + lease_ms);
  sq_bind_id(st, 2, id);
  sq_bind_id(st, 3, token);
  sqlite3_bind_int(st, 4, attempt);
  int rc = sq_exec_write(s, st, "extend lease");
  if (!rc) *held = sqlite3_changes(s->db) == 1;
  return rc;
}

static int sq_next_due(store_t *base, const char *const *queues,
                       size_t nqueues, int64_t *run_at) {
  sq_store_t *s = (sq_store_t *)base;
  char *json = NULL;
  int which = SQ_NEXT_DUE;
  /* Limits: a job held back by one is not due. */
  store_limits_t lim = {0};
  int64_t now = pawl__store_now(base);
  int rc = sq_limits_read(s, now, SIZE_MAX, &lim);
  /* For some queues, or with a lane blocked (a paused queue, a limit with
   * nothing left), a ready job is looked for lane by lane, as a claim
   * picks; when there is none, the statements below look at the jobs due
   * later only (?9). */
  int paused = 0, later_only = 0;
  if (!rc) rc = sq_any_paused(s, &paused);
  if (!rc && sq_lanes_needed(nqueues, paused, &lim)) {
    int64_t at = 0;
    rc = sq_next_due_lanes(s, queues, nqueues, &lim, now, &at);
    if (!rc && at) {
      pawl__store_limits_free(&lim);
      *run_at = at;
      return 0;
    }
    later_only = 1;
  }
  if (!rc && lim.n) {
    json = nqueues ? sq_queues_json(queues, nqueues) : NULL;
    if (nqueues && !json)
      rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
    else
      rc = sq_next_due_limited(s, &lim, queues, nqueues, json, later_only,
                               run_at);
  }
  if (rc || lim.n) {
    pawl__store_limits_free(&lim);
    pawl__free(json);
    return rc;
  }
  if (nqueues == 1) {
    which = SQ_NEXT_DUE_QUEUE;
  } else if (nqueues > 1) {
    json = sq_queues_json(queues, nqueues);
    if (!json) return pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
    which = SQ_NEXT_DUE_QUEUES;
  }
  sqlite3_stmt *st = sq_stmt(s, which);
  if (!st) {
    pawl__free(json);
    return PAWL_ESTORE;
  }
  if (which == SQ_NEXT_DUE_QUEUE)
    sqlite3_bind_text(st, 1, queues[0], -1, SQLITE_STATIC);
  else if (which == SQ_NEXT_DUE_QUEUES)
    sqlite3_bind_text(st, 1, json, -1, SQLITE_STATIC);
  if (later_only) sqlite3_bind_int(st, 9, 1);
  int step = sqlite3_step(st);
  /* min() over no rows is one NULL row: 0, "none pending". */
  int64_t v = step == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  pawl__free(json);
  if (step != SQLITE_ROW) return sq_fail(s, step, "find next due job");
  *run_at = v;
  return 0;
}

/* The body's start and end an outcome carries, capped at the finish's
 * `now` (SQLITE_SQL_RUN_START keeps the start after the claim); an end
 * before the start is the start. 0: not measured (bound as NULL). */
static void sq_run_times(const pawl_outcome_t *o, int64_t now, int64_t *start,
                         int64_t *end) {
  *start = o && o->started_at ? (o->started_at < now ? o->started_at : now)
                              : 0;
  *end = o && o->ended_at ? (o->ended_at < now ? o->ended_at : now) : 0;
  if (*end && *start && *end < *start) *end = *start;
}

static void sq_bind_time(sqlite3_stmt *st, int i, int64_t v) {
  if (v)
    sqlite3_bind_int64(st, i, v);
  else
    sqlite3_bind_null(st, i);
}

static int sq_add_attempt_run(sq_store_t *s, const pawl_id_t *id,
                              int64_t now, const char *outcome,
                              const char *error, const pawl_id_t *token,
                              int32_t attempt, const pawl_outcome_t *o);

static int sq_add_attempt(sq_store_t *s, const pawl_id_t *id, int64_t now,
                          const char *outcome, const char *error,
                          const pawl_id_t *token, int32_t attempt) {
  return sq_add_attempt_run(s, id, now, outcome, error, token, attempt, NULL);
}

/* sq_add_attempt() for an outcome `o` that may carry the body's times. */
static int sq_add_attempt_run(sq_store_t *s, const pawl_id_t *id,
                              int64_t now, const char *outcome,
                              const char *error, const pawl_id_t *token,
                              int32_t attempt, const pawl_outcome_t *o) {
  sqlite3_stmt *st = sq_stmt(s, SQ_ATTEMPT_ADD);
  if (!st) return PAWL_ESTORE;
  int64_t start, end;
  sq_run_times(o, now, &start, &end);
  sq_bind_time(st, 7, start);
  sq_bind_time(st, 8, end);
  sq_bind_id(st, 1, id);
  sqlite3_bind_int64(st, 2, now);
  sqlite3_bind_text(st, 3, outcome, -1, SQLITE_STATIC);
  sq_bind_text(st, 4, error);
  sq_bind_id(st, 5, token);
  sqlite3_bind_int(st, 6, attempt);
  /* Only a failure or a retry has a traceback of its error. */
  sq_bind_text(st, 9,
               o && (o->kind == PAWL_OUT_FAILED || o->kind == PAWL_OUT_RETRY)
                   ? o->trace
                   : NULL);
  int rc = sq_exec(s, st, "record attempt");
  if (rc) return rc;
  return sqlite3_changes(s->db) == 1 ? 0 : PAWL_ELEASE;
}

static int sq_event_from_row(sq_store_t *s, const pawl_id_t *id, int64_t now,
                             int to, const char *reason) {
  sqlite3_stmt *st = sq_stmt(s, SQ_EVENT_FROM_ROW);
  if (!st) return PAWL_ESTORE;
  sq_bind_id(st, 1, id);
  sqlite3_bind_int64(st, 2, now);
  sqlite3_bind_int(st, 3, to);
  sq_bind_text(st, 4, reason);
  return sq_exec(s, st, "record event");
}

static int sq_add_event(sq_store_t *s, const pawl_id_t *id, int64_t now,
                        int from, int to, const char *actor,
                        const char *reason, int32_t attempt) {
  sqlite3_stmt *st = sq_stmt(s, SQ_EVENT_ADD);
  if (!st) return PAWL_ESTORE;
  sq_bind_id(st, 1, id);
  sqlite3_bind_int64(st, 2, now);
  sqlite3_bind_int(st, 3, from);
  sqlite3_bind_int(st, 4, to);
  sq_bind_text(st, 5, actor);
  sq_bind_text(st, 6, reason);
  sqlite3_bind_int(st, 7, attempt);
  return sq_exec(s, st, "record event");
}

static int sq_requeue(sq_store_t *s, const pawl_id_t *id, int64_t run_at,
                      int give_back, const char *error, int64_t now,
                      int ordering_skip) {
  sqlite3_stmt *st = sq_stmt(s, SQ_REQUEUE);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_int64(st, 1, run_at);
  sqlite3_bind_int64(st, 2, s->boost_ms);
  sqlite3_bind_int(st, 3, give_back);
  sq_bind_text(st, 4, error);
  sqlite3_bind_int64(st, 5, now);
  sq_bind_id(st, 6, id);
  sqlite3_bind_int(st, 7, ordering_skip);
  return sq_exec(s, st, "requeue job");
}

/* ---- throughput (store.h, "Throughput") -------------------------------- */

/* Deletes the buckets too old to be read, once per minute change seen by
 * this connection (inside the caller's write transaction: rolled back
 * with it, and then simply done again at the next write). */
static int sq_tp_trim(sq_store_t *s, int64_t minute) {
  if (minute == s->tp_minute) return 0;
  sqlite3_stmt *st = sq_stmt(s, SQ_TP_TRIM);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_int64(st, 1, minute - STORE_TP_KEEP);
  int rc = sq_exec(s, st, "trim throughput");
  if (!rc) s->tp_minute = minute;
  return rc;
}

/* Job `id`, just finished at `now`, added to its bucket (its state and
 * queue as the row has them now). */
static int sq_tp_add_id(sq_store_t *s, const pawl_id_t *id, int64_t now) {
  int64_t minute = store_tp_minute(now);
  int rc = sq_tp_trim(s, minute);
  if (rc) return rc;
  sqlite3_stmt *st = sq_stmt(s, SQ_TP_ADD_ID);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_int64(st, 1, minute);
  sq_bind_id(st, 2, id);
  return sq_exec(s, st, "count finished job");
}

/* One success of queue `q` in this finish (copied). -1 when out of
 * memory. */
static int sq_tp_note(sq_store_t *s, const char *q) {
  if (!q) return -1;
  /* Batches are mostly of one queue: the last entry noted first. */
  if (s->ntp && s->tp_last < s->ntp && strcmp(s->tp[s->tp_last].queue, q) == 0) {
    s->tp[s->tp_last].n++;
    return 0;
  }
  for (size_t i = 0; i < s->ntp; i++)
    if (strcmp(s->tp[i].queue, q) == 0) {
      s->tp[s->tp_last = i].n++;
      return 0;
    }
  if (s->ntp == s->tpcap) {
    size_t cap = s->tpcap ? s->tpcap * 2 : 4;
    struct sq_tp *g = pawl__realloc(s->tp, cap * sizeof *g);
    if (!g) return -1;
    s->tp = g;
    s->tpcap = cap;
  }
  if (!(s->tp[s->ntp].queue = pawl__strdup(q))) return -1;
  s->tp[s->tp_last = s->ntp++].n = 1;
  return 0;
}

/* pawl_rank(priority, run_at, boost_ms): store_rank(). The arguments are
 * the rows' own (bounded when they were stored) and a boost the store
 * binds. */
static void sq_rank_fn(sqlite3_context *ctx, int argc, sqlite3_value **v) {
  (void)argc;
  int64_t prio = sqlite3_value_int64(v[0]);
  if (prio > INT32_MAX) prio = INT32_MAX;
  if (prio < INT32_MIN) prio = INT32_MIN;
  sqlite3_result_int64(ctx, store_rank((int32_t)prio, sqlite3_value_int64(v[1]),
                                       sqlite3_value_int64(v[2])));
}

static int sq_batch_note(sq_store_t *s, sqlite3_value *v);

/* Notes job `seq` (it ended with children to release) for
 * sq_deps_flush(). */
static void sq_deps_note(sq_store_t *s, int64_t seq) {
  if (s->ndep == s->depcap) {
    size_t cap = s->depcap ? s->depcap * 2 : 16;
    int64_t *g = pawl__realloc(s->dep_seq, cap * sizeof *g);
    if (!g) {
      s->dep_oom = 1;
      return;
    }
    s->dep_seq = g;
    s->depcap = cap;
  }
  s->dep_seq[s->ndep++] = seq;
}

/* ---- holds (V020__holds_by_store.sql) ----------------------------------
 *
 * A pending job with an ordering key is held (held = 1, in none of the
 * claim's indexes) unless it is one of its key's candidates; which ones
 * are depends on every live row of the key. So each statement that
 * changes a keyed row's state, ordering_skip or paused_from notes the
 * row's key (from C when C has the row, else through pawl_key_note() or
 * pawl_tp_note() in the statement), and sq_end() has the holds of every
 * noted key computed again (pawl_key_refresh, a few seeks of
 * pawl_jobs_key each) before the transaction commits. Rows without a key,
 * nearly all, cost the test of one NULL. */

/* Notes `key` (not NULL) for sq_keys_flush(). */
static void sq_key_note(sq_store_t *s, const char *key) {
  /* A batch of one key notes it once per row: skip the repeat. */
  if (s->nkeys && !strcmp(s->keys[s->nkeys - 1], key)) return;
  if (s->nkeys == s->keycap) {
    size_t cap = s->keycap ? s->keycap * 2 : 16;
    char **g = pawl__realloc(s->keys, cap * sizeof *g);
    if (!g) {
      s->key_oom = 1;
      return;
    }
    s->keys = g;
    s->keycap = cap;
  }
  if (!(s->keys[s->nkeys] = pawl__strdup(key))) {
    s->key_oom = 1;
    return;
  }
  s->nkeys++;
}

static void sq_keys_clear(sq_store_t *s) {
  for (size_t i = 0; i < s->nkeys; i++) pawl__free(s->keys[i]);
  s->nkeys = 0;
  s->key_oom = 0;
}

static int sq_key_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Computes the holds of every key noted in this transaction again, each
 * once. */
static int sq_keys_flush(sq_store_t *s) {
  if (s->key_oom) return pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
  qsort(s->keys, s->nkeys, sizeof *s->keys, sq_key_cmp);
  int rc = 0;
  for (size_t i = 0; i < s->nkeys && !rc; i++) {
    if (i && !strcmp(s->keys[i], s->keys[i - 1])) continue;
    sqlite3_stmt *st = sq_stmt(s, SQ_KEY_REFRESH);
    if (!st) return PAWL_ESTORE;
    sqlite3_bind_text(st, 1, s->keys[i], -1, SQLITE_STATIC);
    rc = sq_exec(s, st, "hold the jobs of an ordering key");
    sqlite3_clear_bindings(st);
  }
  return rc;
}

/* pawl_key_note(v, key) [SQL]: notes `key` when not NULL, returns v. */
static void sq_key_note_fn(sqlite3_context *ctx, int argc, sqlite3_value **v) {
  (void)argc;
  sq_store_t *s = sqlite3_user_data(ctx);
  if (sqlite3_value_type(v[1]) != SQLITE_NULL)
    sq_key_note(s, (const char *)sqlite3_value_text(v[1]));
  sqlite3_result_value(ctx, v[0]);
}

/* pawl_tp_note(queue, v, batch, seq, key) [SQL]: notes one success of `queue` for
 * this finish's throughput count (and of `batch`, when not NULL, for its
 * counters: sq_batch_flush()) and returns v. The success UPDATE
 * (SQLITE_SQL_SUCCEED_SET) sets updated_at through it, so it runs exactly
 * once per row written, with the row's queue at hand: counting a batch by
 * queue costs a function call per row, where reading the rows back (or
 * RETURNING, which stages each row in a temporary table) costs a
 * statement (bench/RESULTS.md). A failure to note is reported after the
 * statement (s->tp_oom): the finish then fails and rolls back. `seq`
 * (dependencies): the row's seq when it has children to
 * release (deps_open), noted for sq_deps_flush(); NULL for every other
 * row, so a job without children costs a CASE. `key`: the row's ordering
 * key (NULL for nearly every job), noted for its holds. */
static void sq_tp_note_fn(sqlite3_context *ctx, int argc, sqlite3_value **v) {
  (void)argc;
  sq_store_t *s = sqlite3_user_data(ctx);
  if (sq_tp_note(s, (const char *)sqlite3_value_text(v[0])) != 0)
    s->tp_oom = 1;
  /* The row's batch: NULL for nearly every job. */
  if (sqlite3_value_type(v[2]) != SQLITE_NULL && sq_batch_note(s, v[2]) != 0)
    s->tp_oom = 1;
  /* Dependencies: NULL for a job without children. */
  if (sqlite3_value_type(v[3]) != SQLITE_NULL)
    sq_deps_note(s, sqlite3_value_int64(v[3]));
  if (sqlite3_value_type(v[4]) != SQLITE_NULL)
    sq_key_note(s, (const char *)sqlite3_value_text(v[4]));
  sqlite3_result_value(ctx, v[1]);
}

/* pawl_dep_note(v, seq, key) [SQL]: notes `seq` when not NULL (a failed
 * job with children to release) and `key` when not NULL, returns v. */
static void sq_dep_note_fn(sqlite3_context *ctx, int argc, sqlite3_value **v) {
  (void)argc;
  sq_store_t *s = sqlite3_user_data(ctx);
  if (sqlite3_value_type(v[1]) != SQLITE_NULL)
    sq_deps_note(s, sqlite3_value_int64(v[1]));
  if (sqlite3_value_type(v[2]) != SQLITE_NULL)
    sq_key_note(s, (const char *)sqlite3_value_text(v[2]));
  sqlite3_result_value(ctx, v[0]);
}

/* The finish's successes noted by sq_tp_note(), added to their buckets:
 * one UPSERT per queue. */
static int sq_tp_flush(sq_store_t *s, int64_t now) {
  int64_t minute = store_tp_minute(now);
  int rc = 0;
  for (size_t i = 0; i < s->ntp && !rc; i++) {
    if (!s->tp[i].n) continue;
    if ((rc = sq_tp_trim(s, minute))) break;
    sqlite3_stmt *st = sq_stmt(s, SQ_TP_ADD);
    if (!st) return PAWL_ESTORE;
    sqlite3_bind_int64(st, 1, minute);
    sqlite3_bind_int(st, 2, PAWL_SUCCEEDED);
    sqlite3_bind_text(st, 3, s->tp[i].queue, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 4, s->tp[i].n);
    rc = sq_exec(s, st, "count finished jobs");
    s->tp[i].n = 0;
  }
  return rc;
}

static int sq_batch_count_job(sq_store_t *s, const pawl_id_t *id, int64_t ds,
                              int64_t df, int64_t dc, int64_t now);
static int sq_batch_flush(sq_store_t *s, int64_t now);

/* The alert outbox row of job `id`, which moved to failed in this
 * transaction (schema V014 says why this is no trigger). */
static int sq_alert_add(sq_store_t *s, const pawl_id_t *id, int64_t now) {
  sqlite3_stmt *st = sq_stmt(s, SQ_ALERT_ADD);
  if (!st) return PAWL_ESTORE;
  sq_bind_id(st, 1, id);
  sqlite3_bind_int64(st, 2, now);
  return sq_exec(s, st, "write the job's alert");
}

static int sq_fail_job(sq_store_t *s, const pawl_id_t *id, const char *error,
                       int64_t now) {
  sqlite3_stmt *st = sq_stmt(s, SQ_FAIL);
  if (!st) return PAWL_ESTORE;
  sq_bind_text(st, 1, error);
  sqlite3_bind_int64(st, 2, now);
  sq_bind_id(st, 3, id);
  int rc = sq_exec(s, st, "fail job");
  if (!rc) rc = sq_alert_add(s, id, now);
  if (!rc) rc = sq_batch_count_job(s, id, 0, 1, 0, now);
  return rc ? rc : sq_tp_add_id(s, id, now);
}

/* The branches that fired when a job succeeded, written only
 * for the outcomes that carry them. */
static int sq_deps_branches(sq_store_t *s, const pawl_outcome_t *o) {
  sqlite3_stmt *st = sq_stmt(s, SQ_DEPS_BRANCHES);
  if (!st) return PAWL_ESTORE;
  sq_bind_id(st, 1, &o->id);
  sqlite3_bind_text(st, 2, o->branches, -1, SQLITE_STATIC);
  return sq_exec(s, st, "record fired branches");
}

static int sq_run_start(sq_store_t *s, const pawl_id_t *id,
                        const pawl_id_t *token, int32_t attempt, int64_t at,
                        int64_t now);

/* One outcome inside the finish transaction. PAWL_ELEASE when the job is not
 * held by `token` under that attempt any more. A success is noted for the
 * batch's throughput count (sq_tp_note()); a failure is counted here. */
static int sq_finish_one(sq_store_t *s, const pawl_id_t *token,
                         const pawl_outcome_t *o, int64_t now) {
  int rc;
  if (o->kind == PAWL_OUT_STARTED)
    return sq_run_start(s, &o->id, token, o->attempt, o->started_at, now);
  if (o->kind == PAWL_OUT_SUCCEEDED) {
    /* The claim's store_key finds the row without the id index. It is a
     * hint, the id is the truth: a key that names another row falls back
     * to the id. */
    int by_key = o->store_key > 0;
    for (;;) {
      sqlite3_stmt *st = sq_stmt(s, by_key ? SQ_SUCCEED_SEQ : SQ_SUCCEED);
      if (!st) return PAWL_ESTORE;
      sq_bind_text(st, 1, o->result);
      sqlite3_bind_int64(st, 2, now);
      sq_bind_id(st, 3, &o->id);
      sq_bind_id(st, 4, token);
      sqlite3_bind_int(st, 5, o->attempt);
      if (by_key) sqlite3_bind_int64(st, 6, o->store_key);
      int64_t start, end;
      sq_run_times(o, now, &start, &end);
      sq_bind_time(st, 7, start);
      sq_bind_time(st, 8, end);
      /* The statement notes the row's queue (pawl_tp_note()). */
      if ((rc = sq_exec(s, st, "complete job"))) return rc;
      if (s->tp_oom)
        return pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
      if (sqlite3_changes(s->db) == 1)
        return o->branches ? sq_deps_branches(s, o) : 0;
      if (!by_key) return PAWL_ELEASE;
      by_key = 0;
    }
  }
  store_ending_t e;
  if ((rc = pawl__store_plan_ending(&s->base, o, now, &e))) return rc;
  rc = sq_add_attempt_run(s, &o->id, now, e.outcome, e.error, token,
                          o->attempt, o);
  if (!rc) rc = sq_event_from_row(s, &o->id, now, e.to, e.why);
  if (rc) return rc;
  if (e.to == PAWL_FAILED) return sq_fail_job(s, &o->id, e.error, now);
  return sq_requeue(s, &o->id, e.run_at < 0 ? now : e.run_at, e.give_back,
                    e.error, now,
                    o->kind == PAWL_OUT_RETRY && o->ordering_skip);
}

/* The log lines of one outcome, under its attempt. They were written by
 * the job whatever became of the outcome, so they are kept even when it is
 * refused as stale; a job that no longer exists takes none. */
static int sq_add_logs(sq_store_t *s, const pawl_outcome_t *o, int64_t now) {
  for (size_t i = 0; i < o->nlogs; i++) {
    const pawl_log_entry_t *l = &o->logs[i];
    sqlite3_stmt *st = sq_stmt(s, SQ_LOG_ADD);
    if (!st) return PAWL_ESTORE;
    sq_bind_id(st, 1, &o->id);
    sqlite3_bind_int(st, 2, o->attempt);
    sqlite3_bind_int64(st, 3, l->at ? l->at : now);
    sqlite3_bind_text(st, 4, l->level, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 5, l->message, -1, SQLITE_STATIC);
    sq_bind_text(st, 6, l->fields);
    int rc = sq_exec(s, st, "record log line");
    if (rc) return rc;
  }
  return 0;
}

static int sq_finish(store_t *base, const pawl_id_t *token,
                     const pawl_outcome_t *outs, size_t n, int *rcs) {
  sq_store_t *s = (sq_store_t *)base;
  for (size_t i = 0; i < s->ntp; i++) s->tp[i].n = 0; /* a failed finish's */
  s->tp_oom = 0;
  s->nbn = 0;
  int rc = sq_begin(s);
  /* Read under the write lock, as the claim's: the times of transactions
   * then follow their order of commit. */
  int64_t now = pawl__store_now(base);
  for (size_t i = 0; i < n && !rc; i++) {
    if ((rc = sq_add_logs(s, &outs[i], now))) break;
    int r = sq_finish_one(s, token, &outs[i], now);
    if (r == PAWL_ELEASE || r == PAWL_EINVAL) {
      if (rcs) rcs[i] = r;
      continue;
    }
    if (r) rc = r;
    else if (rcs) rcs[i] = 0;
  }
  if (!rc) rc = sq_batch_flush(s, now);
  if (!rc) rc = sq_tp_flush(s, now);
  return sq_end(s, rc);
}

/* Takes back expired leases, each as pawl__store_plan_recovery() decides: back
 * to pending with the attempt counted, or failed when that was its last
 * attempt or it has been lost while running too often (a poison job that
 * keeps killing its node; only losses of attempts known to have started
 * count). */
static int sq_recover(store_t *base, size_t *n) {
  sq_store_t *s = (sq_store_t *)base;
  size_t count = 0;
  int rc = sq_begin(s);
  if (rc) return rc;
  int64_t now = pawl__store_now(base); /* under the write lock */
  sqlite3_stmt *sel = sq_stmt(s, SQ_EXPIRED);
  if (!sel) return sq_end(s, PAWL_ESTORE);
  sqlite3_bind_int64(sel, 1, now);
  /* Collect first: the statements below write to the table we read. */
  struct lost {
    pawl_id_t id;
    store_lost_t row;
    char owner[128];
  } *lost = NULL;
  size_t nlost = 0, cap = 0;
  int step;
  while ((step = sqlite3_step(sel)) == SQLITE_ROW) {
    if (nlost == cap) {
      cap = cap ? cap * 2 : 16;
      void *p = pawl__realloc(lost, cap * sizeof *lost);
      if (!p) {
        sqlite3_reset(sel);
        pawl__free(lost);
        return sq_end(s, pawl__store_fail(base, PAWL_ENOMEM, "out of memory"));
      }
      lost = p;
    }
    struct lost *l = &lost[nlost++];
    sq_col_id(sel, 0, &l->id);
    l->row.attempt = sqlite3_column_int(sel, 1);
    l->row.max_attempts = sqlite3_column_int(sel, 2);
    l->row.recoveries = sqlite3_column_int(sel, 3);
    const unsigned char *o = sqlite3_column_text(sel, 4);
    snprintf(l->owner, sizeof l->owner, "%s", o ? (const char *)o : "?");
    l->row.crashes = sqlite3_column_int(sel, 5);
    l->row.started = sqlite3_column_int(sel, 6);
  }
  sqlite3_reset(sel);
  if (step != SQLITE_DONE) {
    pawl__free(lost);
    return sq_end(s, sq_fail(s, step, "find expired leases"));
  }
  for (size_t i = 0; i < nlost && !rc; i++) {
    struct lost *l = &lost[i];
    l->row.owner = l->owner;
    store_recovery_t plan;
    pawl__store_plan_recovery(&l->row, s->poison, &plan);
    rc = sq_add_attempt(s, &l->id, now, "lost", plan.why, NULL, 0);
    if (rc == PAWL_ELEASE) {
      rc = 0; /* already gone: finished within this transaction's view */
      continue;
    }
    if (!rc) rc = sq_event_from_row(s, &l->id, now, plan.to, plan.why);
    if (!rc && plan.to == PAWL_FAILED) {
      rc = sq_fail_job(s, &l->id, plan.why, now);
    } else if (!rc) {
      sqlite3_stmt *st = sq_stmt(s, SQ_RECOVER);
      if (!st) {
        rc = PAWL_ESTORE;
        break;
      }
      sqlite3_bind_int64(st, 1, now);
      sqlite3_bind_int64(st, 2, s->boost_ms);
      sqlite3_bind_text(st, 3, plan.why, -1, SQLITE_TRANSIENT);
      sq_bind_id(st, 4, &l->id);
      rc = sq_exec(s, st, "recover job");
    }
    if (!rc && plan.crashed) {
      sqlite3_stmt *st = sq_stmt(s, SQ_CRASHED);
      if (!st) {
        rc = PAWL_ESTORE;
        break;
      }
      sq_bind_id(st, 1, &l->id);
      rc = sq_exec(s, st, "count a crash");
    }
    if (!rc) count++;
  }
  pawl__free(lost);
  rc = sq_end(s, rc);
  if (!rc && n) *n = count;
  return rc;
}

/* The body of a job claimed ahead started at `at` (capped at `now`):
 * inside a write transaction. PAWL_ELEASE if the attempt is not held. */
static int sq_run_start(sq_store_t *s, const pawl_id_t *id,
                        const pawl_id_t *token, int32_t attempt, int64_t at,
                        int64_t now) {
  sqlite3_stmt *st = sq_stmt(s, SQ_RUN_START);
  if (!st) return PAWL_ESTORE;
  sq_bind_id(st, 1, id);
  sq_bind_id(st, 2, token);
  sqlite3_bind_int(st, 3, attempt);
  sqlite3_bind_int64(st, 4, at < now ? at : now);
  int rc = sq_exec(s, st, "record the start of an attempt");
  if (!rc && sqlite3_changes(s->db) != 1) rc = PAWL_ELEASE;
  return rc;
}

static int sq_start(store_t *base, const pawl_id_t *id, const pawl_id_t *token,
                    int32_t attempt, int64_t at, int poison) {
  sq_store_t *s = (sq_store_t *)base;
  int rc = sq_begin(s);
  if (rc) return rc;
  int64_t now = pawl__store_now(base); /* under the write lock */
  if (at) rc = sq_run_start(s, id, token, attempt, at, now);
  if (!rc && poison) {
    sqlite3_stmt *st = sq_stmt(s, SQ_START);
    if (!st) return sq_end(s, PAWL_ESTORE);
    sq_bind_id(st, 1, id);
    sq_bind_id(st, 2, token);
    sqlite3_bind_int(st, 3, attempt);
    rc = sq_exec(s, st, "record the start of an attempt");
    if (!rc && sqlite3_changes(s->db) != 1) rc = PAWL_ELEASE;
  }
  if (rc == PAWL_ELEASE) {
    sq_end(s, 0);
    return pawl__store_not_held(base, id, attempt);
  }
  return sq_end(s, rc);
}

/* ---- operator transitions ----------------------------------------------- */


/* The steps of pawl__store_transition() (see store.h), in SQLite. */
static int sq_tx_begin(store_t *base) { return sq_begin((sq_store_t *)base); }

static int sq_tx_end(store_t *base, int rc) {
  return sq_end((sq_store_t *)base, rc);
}

/* BEGIN IMMEDIATE holds the write lock: the row read is the row written. */
static int sq_tx_read(store_t *base, const pawl_id_t *id, int for_update,
                      pawl_job_t **out) {
  (void)for_update;
  return sq_read_job((sq_store_t *)base, id, out);
}

static int sq_tx_now(store_t *base, int64_t *now) {
  *now = pawl__store_now(base);
  return 0;
}

static int sq_tx_end_attempt(store_t *base, const pawl_id_t *id, int64_t now,
                             const char *reason) {
  int rc = sq_add_attempt((sq_store_t *)base, id, now, "canceled", reason,
                          NULL, 0);
  return rc == PAWL_ELEASE ? 0 : rc;
}

static int sq_tx_event(store_t *base, const pawl_id_t *id, int64_t now,
                       int from, int to, const char *actor,
                       const char *reason, int32_t attempt) {
  return sq_add_event((sq_store_t *)base, id, now, from, to, actor, reason,
                      attempt);
}

static int sq_tx_update(store_t *base, const pawl_job_t *j,
                        const store_plan_t *plan, int64_t now, int *changed) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_TRANSITION);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_int64(st, 1, now);
  sq_bind_id(st, 2, &j->id);
  sqlite3_bind_int64(st, 3, j->version);
  sqlite3_bind_int(st, 4, plan->to);
  if (plan->paused_from >= 0)
    sqlite3_bind_int(st, 5, plan->paused_from);
  else
    sqlite3_bind_null(st, 5);
  sqlite3_bind_int64(st, 6, plan->run_at);
  int64_t boost;
  int brc = sq_queue_boost(s, j->queue, &boost);
  if (brc) return brc;
  sqlite3_bind_int64(st, 7, store_rank(j->priority, plan->run_at, boost));
  sqlite3_bind_int(st, 8, plan->attempt);
  sq_bind_text(st, 9, plan->last_error);
  sq_bind_text(st, 10, plan->result);
  sq_bind_opt_int(st, 11, plan->finished_at);
  sqlite3_bind_int(st, 12, plan->recoveries);
  if (plan->to == PAWL_RUNNING)
    sqlite3_bind_int64(st, 13, j->lease_expires);
  else
    sqlite3_bind_null(st, 13);
  int step = sqlite3_step(st);
  sqlite3_reset(st);
  if (step == SQLITE_CONSTRAINT) return PAWL_EKEY;
  if (step != SQLITE_DONE) return sq_fail(s, step, "update job");
  *changed = sqlite3_changes(s->db) == 1;
  if (*changed && j->ordering_key) sq_key_note(s, j->ordering_key);
  /* Into the dead-letter set (a signal's wait that expired): its alert. A
   * dead job paused and resumed is not a new one. */
  if (*changed && plan->to == PAWL_FAILED && j->state != PAWL_FAILED &&
      j->state != PAWL_PAUSED) {
    int rc = sq_alert_add(s, &j->id, now);
    if (rc) return rc;
  }
  /* A child that ends or is taken back moves its batch's counters. */
  int64_t d[3];
  if (*changed && store_batch_delta(j->state, j->paused_from, plan->to,
                                    plan->paused_from, d))
    return sq_batch_count_job(s, &j->id, d[0], d[1], d[2], now);
  return 0;
}

static int sq_deps_note_id(sq_store_t *s, const pawl_id_t *id);

static int sq_tx_finished(store_t *base, const pawl_job_t *j, int to,
                          int64_t now) {
  sq_store_t *s = (sq_store_t *)base;
  int64_t minute = store_tp_minute(now);
  int rc = sq_tp_trim(s, minute);
  if (rc) return rc;
  sqlite3_stmt *st = sq_stmt(s, SQ_TP_ADD);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_int64(st, 1, minute);
  sqlite3_bind_int(st, 2, to);
  sqlite3_bind_text(st, 3, j->queue, -1, SQLITE_STATIC);
  sqlite3_bind_int(st, 4, 1);
  if ((rc = sq_exec(s, st, "count finished job"))) return rc;
  return sq_deps_note_id(s, &j->id);
}

static int sq_tx_forget_starts(store_t *base, const pawl_id_t *id) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *fs = sq_stmt(s, SQ_FORGET_START);
  if (!fs) return PAWL_ESTORE;
  sq_bind_id(fs, 1, id);
  return sq_exec(s, fs, "forget recorded starts");
}

static int sq_deps_reopen(store_t *base, const pawl_id_t *id, int64_t now,
                          const char *actor);

static const store_transition_steps_t sq_transition_steps = {
    .begin = sq_tx_begin,
    .end = sq_tx_end,
    .read = sq_tx_read,
    .now = sq_tx_now,
    .end_attempt = sq_tx_end_attempt,
    .add_event = sq_tx_event,
    .update = sq_tx_update,
    .forget_starts = sq_tx_forget_starts,
    .finished = sq_tx_finished,
    .pending = NULL,
    .reopen = sq_deps_reopen,
};

static int sq_transition(store_t *base, const pawl_id_t *id, store_op_t op,
                         const char *actor, const char *owner,
                         const char *reason, pawl_job_t **out) {
  return pawl__store_transition(base, &sq_transition_steps, id, op, actor,
                                owner, reason, out);
}

/* ---- signals and replace ---------------------------------------------------
 * pawl_signals and pawl_replacements (schema/sqlite/V009__signal.sql). Every
 * write runs under SQLite's one write lock (BEGIN IMMEDIATE): a key's holder
 * read here is the holder when the transaction commits. */

/* The row of pawl_signals for a new job j (inserted just before, in the
 * caller's transaction): its key is released by a row whose job ended,
 * then refused if a live job still holds it. */
static int sq_sig_add(sq_store_t *s, const store_new_job_t *j, int64_t now) {
  sqlite3_stmt *st = sq_stmt(s, SQ_SIG_RELEASE);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_text(st, 1, j->signal_key, -1, SQLITE_STATIC);
  int rc = sq_exec(s, st, "release signal key");
  if (rc) return rc;
  if (!(st = sq_stmt(s, SQ_SIG_HOLDER))) return PAWL_ESTORE;
  sqlite3_bind_text(st, 1, j->signal_key, -1, SQLITE_STATIC);
  int step = sqlite3_step(st);
  pawl_id_t holder;
  if (step == SQLITE_ROW) sq_col_id(st, 0, &holder);
  sqlite3_reset(st);
  if (step == SQLITE_ROW) {
    char text[PAWL_ID_STRLEN];
    pawl_id_format(&holder, text);
    return pawl__store_fail(&s->base, PAWL_EKEY,
                            "signal key \"%s\" is held by live job %s",
                            j->signal_key, text);
  }
  if (step != SQLITE_DONE) return sq_fail(s, step, "look up signal key");
  if (!(st = sq_stmt(s, SQ_SIG_ADD))) return PAWL_ESTORE;
  sq_bind_id(st, 1, &j->id);
  sqlite3_bind_text(st, 2, j->signal_key, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 3, now);
  sq_bind_opt_int(st, 4, j->signal_timeout_at);
  return sq_exec(s, st, "record signal wait");
}

/* Expires the wait of job `id` for `key` whose deadline was `deadline`
 * (in the caller's transaction): the row leaves state waiting and the job
 * goes blocked -> failed. *done: 1 if this call ended the wait (0: it had
 * ended already). A job that stopped waiting otherwise (canceled) keeps
 * its state; its wait is over all the same. */
static int sq_sig_expire_one(sq_store_t *s, int64_t now, const pawl_id_t *id,
                             const char *key, int64_t deadline, int *done) {
  *done = 0;
  sqlite3_stmt *st = sq_stmt(s, SQ_SIG_EXPIRE);
  if (!st) return PAWL_ESTORE;
  sq_bind_id(st, 1, id);
  int rc = sq_exec(s, st, "expire signal wait");
  if (rc || sqlite3_changes(s->db) != 1) return rc;
  *done = 1;
  char why[300];
  pawl__store_signal_why(why, sizeof why, key, deadline);
  rc = pawl__store_transition_in(&s->base, &sq_transition_steps, now, id,
                                 STORE_OP_EXPIRE, "timeout", why, -1);
  if (rc == PAWL_ESTATE) {
    rc = 0;
    s->base.errmsg[0] = 0;
  }
  return rc;
}

static int sq_sig_deliver(store_t *base, const char *key,
                          const char *decision, const char *payload,
                          const char *actor, const char *owner,
                          pawl_id_t *job, int *already) {
  sq_store_t *s = (sq_store_t *)base;
  int rc = sq_begin(s);
  if (rc) return rc;
  int64_t now = pawl__store_now(base);
  sqlite3_stmt *st = sq_stmt(s, SQ_SIG_HOLDER);
  if (!st) return sq_end(s, PAWL_ESTORE);
  sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
  int step = sqlite3_step(st);
  pawl_id_t id;
  int sstate = 0, jstate = 0, was = 0, late = 0;
  int64_t deadline = 0;
  if (step == SQLITE_ROW) {
    sq_col_id(st, 0, &id);
    sstate = sqlite3_column_int(st, 1);
    jstate = sqlite3_column_int(st, 2);
    deadline = sqlite3_column_int64(st, 5); /* NULL reads 0: none */
    /* Job code signals only the jobs it enqueued, unless granted: decided
     * on the row read in this write transaction, before anything is
     * written. */
    rc = pawl__store_owner_check(base, &id,
                                 (const char *)sqlite3_column_text(st, 3),
                                 (const char *)sqlite3_column_text(st, 4),
                                 owner);
  }
  sqlite3_reset(st);
  char text[PAWL_ID_STRLEN] = "";
  if (step == SQLITE_ROW) pawl_id_format(&id, text);
  if (rc)
    ;
  else if (step == SQLITE_DONE)
    rc = pawl__store_fail(base, PAWL_ENOTFOUND,
                          "no live job waits for signal \"%s\"", key);
  else if (step != SQLITE_ROW)
    rc = sq_fail(s, step, "look up signal key");
  else if (sstate == PAWL_SIGNAL_DELIVERED)
    was = 1;
  else if (sstate == PAWL_SIGNAL_EXPIRED)
    rc = pawl__store_signal_late(base, &id, key, deadline, jstate);
  else if (jstate != PAWL_BLOCKED)
    rc = pawl__store_fail(base, PAWL_ESTATE,
                          "job %s no longer waits for signal \"%s\": it is %s",
                          text, key, pawl_state_name(jstate));
  else if (deadline && deadline <= now)
    late = 1;
  if (late) {
    /* Too late: the deadline decided, whether or not a sweep has got to
     * it yet. The wait expires here, as the sweep would have expired it,
     * and that is committed; the decision is refused. */
    int done = 0;
    rc = sq_end(s, sq_sig_expire_one(s, now, &id, key, deadline, &done));
    return rc ? rc
              : pawl__store_signal_late(base, &id, key, deadline,
                                        done ? PAWL_FAILED : jstate);
  }
  if (!rc && !was) {
    if (!(st = sq_stmt(s, SQ_SIG_DELIVER))) return sq_end(s, PAWL_ESTORE);
    sq_bind_id(st, 1, &id);
    sqlite3_bind_text(st, 2, decision, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, payload, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 4, now);
    sq_bind_text(st, 5, actor);
    rc = sq_exec(s, st, "record signal");
    char why[300];
    snprintf(why, sizeof why, "signal %s: %s", key, decision);
    if (!rc)
      rc = pawl__store_transition_in(base, &sq_transition_steps, now, &id,
                                     STORE_OP_UNBLOCK, actor, why, -1);
  }
  rc = sq_end(s, rc);
  if (rc) return rc;
  *job = id;
  *already = was;
  return 0;
}

static int sq_sig_get(store_t *base, const pawl_id_t *id,
                      pawl_signal_info_t **out) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_SIG_GET);
  if (!st) return PAWL_ESTORE;
  sq_bind_id(st, 1, id);
  int step = sqlite3_step(st);
  if (step != SQLITE_ROW) {
    sqlite3_reset(st);
    if (step == SQLITE_DONE)
      return pawl__store_fail(base, PAWL_ENOTFOUND, "the job has no signal");
    return sq_fail(s, step, "read signal");
  }
  pawl_signal_info_t *sig = pawl__store_signal_new(
      id, (const char *)sqlite3_column_text(st, 0), sqlite3_column_int(st, 1),
      sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3),
      (const char *)sqlite3_column_text(st, 4),
      (const char *)sqlite3_column_text(st, 5), sqlite3_column_int64(st, 6),
      (const char *)sqlite3_column_text(st, 7));
  sqlite3_reset(st);
  if (!sig) return pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
  *out = sig;
  return 0;
}

/* A wait that ran out, read before its row is written. */
typedef struct sq_sig_due {
  pawl_id_t id;
  char key[201];
  int64_t timeout_at;
} sq_sig_due_t;

static int sq_sig_expire(store_t *base, size_t max, size_t *n) {
  sq_store_t *s = (sq_store_t *)base;
  sq_sig_due_t *due = pawl__calloc(max ? max : 1, sizeof *due);
  if (!due) return pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
  int rc = sq_begin(s);
  if (rc) {
    pawl__free(due);
    return rc;
  }
  int64_t now = pawl__store_now(base);
  size_t ndue = 0, done = 0;
  sqlite3_stmt *st = sq_stmt(s, SQ_SIG_DUE);
  if (!st) rc = PAWL_ESTORE;
  int step = SQLITE_DONE;
  if (!rc) {
    sqlite3_bind_int64(st, 1, now);
    sqlite3_bind_int64(st, 2, (int64_t)max);
    while (ndue < max && (step = sqlite3_step(st)) == SQLITE_ROW) {
      sq_col_id(st, 0, &due[ndue].id);
      snprintf(due[ndue].key, sizeof due[ndue].key, "%s",
               (const char *)sqlite3_column_text(st, 1));
      due[ndue].timeout_at = sqlite3_column_int64(st, 2);
      ndue++;
    }
    sqlite3_reset(st);
    if (step != SQLITE_DONE && step != SQLITE_ROW)
      rc = sq_fail(s, step, "find expired signal waits");
  }
  for (size_t i = 0; i < ndue && !rc; i++) {
    int one = 0;
    rc = sq_sig_expire_one(s, now, &due[i].id, due[i].key, due[i].timeout_at,
                           &one);
    done += (size_t)one;
  }
  pawl__free(due);
  rc = sq_end(s, rc);
  if (!rc) *n = done;
  return rc;
}

static int sq_sig_next(store_t *base, int64_t *at) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_SIG_NEXT);
  if (!st) return PAWL_ESTORE;
  int step = sqlite3_step(st);
  *at = step == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
  sqlite3_reset(st);
  return step == SQLITE_ROW ? 0 : sq_fail(s, step, "read signal deadlines");
}

/* The job linked to `id` by statement `which` (SQ_REP_NEXT, SQ_REP_PREV):
 * 1 with *out, 0 when none, or a negative code. */
static int sq_rep_link(sq_store_t *s, int which, const pawl_id_t *id,
                       pawl_id_t *out) {
  sqlite3_stmt *st = sq_stmt(s, which);
  if (!st) return PAWL_ESTORE;
  sq_bind_id(st, 1, id);
  int step = sqlite3_step(st);
  if (step == SQLITE_ROW) sq_col_id(st, 0, out);
  sqlite3_reset(st);
  if (step == SQLITE_ROW) return 1;
  if (step == SQLITE_DONE) return 0;
  return sq_fail(s, step, "read replacement");
}

/* Runs each statement of ids[0..n) with ?1 old, ?2 new (dependencies:
 * a replacement takes the old job's place in the graph). */
static int sq_deps_replace(sq_store_t *s, const int *ids, size_t n,
                           const pawl_id_t *old_id, const pawl_id_t *new_id) {
  int rc = 0;
  for (size_t i = 0; i < n && !rc; i++) {
    sqlite3_stmt *st = sq_stmt(s, ids[i]);
    if (!st) return PAWL_ESTORE;
    sq_bind_id(st, 1, old_id);
    sq_bind_id(st, 2, new_id);
    rc = sq_exec(s, st, "hand dependencies to the replacement");
  }
  return rc;
}

static int sq_replace(store_t *base, const store_replace_t *r) {
  sq_store_t *s = (sq_store_t *)base;
  int rc = sq_begin(s);
  if (rc) return rc;
  int64_t now = pawl__store_now(base);
  pawl_job_t *old = NULL;
  pawl_id_t next;
  char text[PAWL_ID_STRLEN], ntext[PAWL_ID_STRLEN];
  pawl_id_format(r->old_id, text);
  if ((rc = sq_read_job(s, r->old_id, &old))) return sq_end(s, rc);
  int linked = 0;
  /* Job code replaces only the jobs it enqueued, unless granted: decided
   * on the row read in this write transaction. */
  if ((rc = pawl__store_owner_check(base, r->old_id, old->type,
                                    old->enqueued_by, r->owner)))
    ;
  else if (old->version != r->expect_version)
    rc = pawl__store_fail(base, PAWL_ECONFLICT,
                          "job %s changed meanwhile; try again", text);
  else if ((linked = sq_rep_link(s, SQ_REP_NEXT, r->old_id, &next)) < 0)
    rc = linked;
  else if (linked) {
    pawl_id_format(&next, ntext);
    rc = pawl__store_fail(base, PAWL_ESTATE,
                          "job %s was already replaced by job %s", text,
                          ntext);
  }
  int live = old->state == PAWL_PENDING || old->state == PAWL_RUNNING ||
             old->state == PAWL_PAUSED || old->state == PAWL_BLOCKED;
  int64_t version = old->version;
  /* A batch's child hands its place to the replacement (batches):
   * it leaves the batch before it is canceled, so its cancel is not
   * counted, and an end it was counted for (failed, canceled) is taken
   * back as a manual retry takes it back; the replacement counts when it
   * ends. */
  int64_t d[3];
  int take_back = store_batch_delta(old->state, old->paused_from,
                                    PAWL_PENDING, 0, d);
  pawl_job_free(old);
  pawl_id_t batch;
  int in_batch = 0;
  if (!rc && (in_batch = sq_rep_link(s, SQ_REP_BATCH, r->old_id, &batch)) < 0)
    rc = in_batch;
  if (!rc && in_batch && take_back)
    rc = sq_batch_count_job(s, r->old_id, d[0], d[1], d[2], now);
  if (!rc && in_batch) {
    sqlite3_stmt *st = sq_stmt(s, SQ_REP_LEAVE);
    if (!st) return sq_end(s, PAWL_ESTORE);
    sq_bind_id(st, 1, r->old_id);
    rc = sq_exec(s, st, "leave the batch");
  }
  /* Dependencies: a live job's edges go to the replacement
   * before its cancel, which therefore releases none of its children
   * (README "Dependencies and chains"). A terminal one's children have
   * counted its end already: its edges stay. */
  static const int hand[] = {SQ_DEPS_HAND_PARENT, SQ_DEPS_HAND_CHILD,
                             SQ_DEPS_HAND_CLOSE};
  if (!rc && live)
    rc = sq_deps_replace(s, hand, 3, r->old_id, &r->job->id);
  /* The old job ends first: its business key and signal key are free for
   * the replacement. */
  if (!rc && live)
    rc = pawl__store_transition_in(base, &sq_transition_steps, now,
                                   r->old_id, STORE_OP_CANCEL, r->actor,
                                   r->reason, version);
  pawl_id_t id;
  int status = 0;
  if (!rc) rc = sq_insert_one(s, r->job, now, NULL, &id, &status);
  static const int take[] = {SQ_DEPS_TAKE_OVER};
  if (!rc && live) rc = sq_deps_replace(s, take, 1, r->old_id, &r->job->id);
  static const int instance[] = {SQ_REP_INSTANCE}; /* steps, identity */
  if (!rc) rc = sq_deps_replace(s, instance, 1, r->old_id, &r->job->id);
  if (!rc) {
    sqlite3_stmt *st = sq_stmt(s, SQ_REP_ADD);
    if (!st) return sq_end(s, PAWL_ESTORE);
    sq_bind_id(st, 1, r->old_id);
    sq_bind_id(st, 2, &r->job->id);
    sqlite3_bind_int64(st, 3, now);
    sq_bind_text(st, 4, r->actor);
    rc = sq_exec(s, st, "link replacement");
  }
  if (!rc) {
    sqlite3_stmt *st = sq_stmt(s, SQ_REP_CARRY);
    if (!st) return sq_end(s, PAWL_ESTORE);
    sq_bind_id(st, 1, r->old_id);
    sq_bind_id(st, 2, &r->job->id);
    if (in_batch) sq_bind_id(st, 3, &batch);
    rc = sq_exec(s, st, "carry over to the replacement");
  }
  return sq_end(s, rc);
}

static int sq_replace_links(store_t *base, const pawl_id_t *id,
                            pawl_replace_links_t *out) {
  sq_store_t *s = (sq_store_t *)base;
  pawl_replace_links_t l;
  memset(&l, 0, sizeof l);
  int rc = sq_rep_link(s, SQ_REP_NEXT, id, &l.superseded_by);
  if (rc < 0) return rc;
  l.has_superseded_by = rc;
  if ((rc = sq_rep_link(s, SQ_REP_PREV, id, &l.supersedes)) < 0) return rc;
  l.has_supersedes = rc;
  if (!l.has_superseded_by && !l.has_supersedes) {
    sqlite3_stmt *st = sq_stmt(s, SQ_EXISTS);
    if (!st) return PAWL_ESTORE;
    sq_bind_id(st, 1, id);
    int step = sqlite3_step(st);
    sqlite3_reset(st);
    if (step == SQLITE_DONE) return pawl__store_no_job(base, id);
    if (step != SQLITE_ROW) return sq_fail(s, step, "read job");
  }
  *out = l;
  return 0;
}

/* ---- history ------------------------------------------------------------ */

/* History: the rows written for failures and operator actions, put
 * together with what the success path keeps on the job row by
 * pawl__store_history_assemble(). */
static int sq_history(store_t *base, const pawl_id_t *id,
                      pawl_history_t **out) {
  sq_store_t *s = (sq_store_t *)base;
  pawl_history_t *h = pawl__calloc(1, sizeof *h);
  pawl_job_t *j = NULL;
  pawl_event_t *rows = NULL;
  size_t nrows = 0;
  if (!h) return pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
  /* A read transaction gives one consistent snapshot of the three tables. */
  int rc = sqlite3_exec(s->db, "BEGIN", 0, 0, 0);
  if (rc != SQLITE_OK) {
    pawl__free(h);
    return sq_fail(s, rc, "begin read");
  }
  rc = sq_read_job(s, id, &j);
  int oom = 0, step;
  sqlite3_stmt *st = NULL;
  if (!rc && !(st = sq_stmt(s, SQ_ATTEMPTS))) rc = PAWL_ESTORE;
  if (!rc) {
    sq_bind_id(st, 1, id);
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
      pawl_attempt_t *a =
          pawl__store_push((void **)&h->attempts, &h->nattempts, sizeof *a);
      if (!a) {
        oom = 1;
        break;
      }
      store_row_t r = sq_row(st);
      if ((oom = pawl__store_attempt_fill(a, &r) != 0)) break;
    }
    if (!oom && step != SQLITE_DONE) rc = sq_fail(s, step, "read attempts");
    sqlite3_reset(st);
  }
  if (!rc && !oom && !(st = sq_stmt(s, SQ_EVENTS))) rc = PAWL_ESTORE;
  if (!rc && !oom) {
    sq_bind_id(st, 1, id);
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
      pawl_event_t *e = pawl__store_push((void **)&rows, &nrows, sizeof *e);
      if (!e) {
        oom = 1;
        break;
      }
      store_row_t r = sq_row(st);
      if ((oom = pawl__store_event_fill(e, &r) != 0)) break;
    }
    if (!oom && step != SQLITE_DONE) rc = sq_fail(s, step, "read events");
    sqlite3_reset(st);
  }
  sqlite3_exec(s->db, "COMMIT", 0, 0, 0);
  if (!rc && !oom)
    oom = pawl__store_history_assemble(h, j, rows, nrows) != 0;
  else
    pawl__store_events_free(rows, nrows);
  pawl_job_free(j);
  if (!rc && oom) rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
  if (rc) {
    pawl_history_free(h);
    return rc;
  }
  *out = h;
  return 0;
}

/* ---- logs --------------------------------------------------------------- */

static int sq_logs(store_t *base, const pawl_id_t *id, pawl_log_record_t **out,
                   size_t *n) {
  sq_store_t *s = (sq_store_t *)base;
  pawl_log_record_t *recs = NULL;
  size_t count = 0;
  int rc = 0, step, oom = 0;
  /* One read transaction: the lines and the job's existence agree. */
  int src = sqlite3_exec(s->db, "BEGIN", 0, 0, 0);
  if (src != SQLITE_OK) return sq_fail(s, src, "begin read");
  sqlite3_stmt *st = sq_stmt(s, SQ_LOGS);
  if (!st) rc = PAWL_ESTORE;
  if (!rc) {
    sq_bind_id(st, 1, id);
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
      pawl_log_record_t *r = pawl__store_push((void **)&recs, &count, sizeof *recs);
      if (!r) {
        oom = 1;
        break;
      }
      store_row_t row = sq_row(st);
      if (pawl__store_log_fill(r, &row) != 0) oom = 1;
    }
    if (!oom && step != SQLITE_DONE) rc = sq_fail(s, step, "read logs");
    sqlite3_reset(st);
  }
  if (!rc && !oom && count == 0) {
    /* No lines: say whether that is because there is no such job. */
    st = sq_stmt(s, SQ_EXISTS);
    if (!st) {
      rc = PAWL_ESTORE;
    } else {
      sq_bind_id(st, 1, id);
      step = sqlite3_step(st);
      sqlite3_reset(st);
      if (step == SQLITE_DONE) {
        rc = pawl__store_no_job(base, id);
      } else if (step != SQLITE_ROW) {
        rc = sq_fail(s, step, "read job");
      }
    }
  }
  sqlite3_exec(s->db, "COMMIT", 0, 0, 0);
  if (!rc && oom) rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
  if (rc) {
    pawl_logs_free(recs, count);
    return rc;
  }
  *out = recs;
  *n = count;
  return 0;
}

/* ---- locks -------------------------------------------------------------- */

static int sq_lock_acquire(store_t *base, const char *name, const char *owner,
                           int64_t ttl_ms, int *got) {
  sq_store_t *s = (sq_store_t *)base;
  int64_t now = pawl__store_now(base);
  sqlite3_stmt *st = sq_stmt(s, SQ_LOCK_ACQUIRE);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 2, owner, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 3, now);
  sqlite3_bind_int64(st, 4, now + ttl_ms);
  int rc = sq_exec_write(s, st, "acquire lock");
  if (!rc) *got = sqlite3_changes(s->db) == 1;
  return rc;
}

static int sq_lock_extend(store_t *base, const char *name, const char *owner,
                          int64_t ttl_ms, int *ok) {
  sq_store_t *s = (sq_store_t *)base;
  int64_t now = pawl__store_now(base);
  sqlite3_stmt *st = sq_stmt(s, SQ_LOCK_EXTEND);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 2, owner, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 3, now + ttl_ms);
  sqlite3_bind_int64(st, 4, now);
  int rc = sq_exec_write(s, st, "extend lock");
  if (!rc) *ok = sqlite3_changes(s->db) == 1;
  return rc;
}

static int sq_lock_release(store_t *base, const char *name, const char *owner) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_LOCK_RELEASE);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 2, owner, -1, SQLITE_STATIC);
  return sq_exec_write(s, st, "release lock");
}

/* ---- nodes -------------------------------------------------------------- */

static int sq_node_beat(store_t *base, const store_node_t *nd) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_NODE_BEAT);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_text(st, 1, nd->id, -1, SQLITE_STATIC);
  sq_bind_id(st, 2, nd->incarnation);
  sqlite3_bind_text(st, 3, nd->version ? nd->version : PAWL_VERSION, -1,
                    SQLITE_STATIC);
  sqlite3_bind_text(st, 4, nd->queues ? nd->queues : "", -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 5, nd->started_at);
  sqlite3_bind_int64(st, 6, pawl__store_now(base));
  return sq_exec_write(s, st, "record node heartbeat");
}

static int sq_node_list(store_t *base, store_node_cb cb, void *data) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_NODE_LIST);
  if (!st) return PAWL_ESTORE;
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    pawl_id_t inc;
    sq_col_id(st, 1, &inc);
    store_node_t nd = {
        .id = (const char *)sqlite3_column_text(st, 0),
        .incarnation = &inc,
        .version = (const char *)sqlite3_column_text(st, 2),
        .queues = (const char *)sqlite3_column_text(st, 3),
        .started_at = sqlite3_column_int64(st, 4),
        .last_beat = sqlite3_column_int64(st, 5),
        .stopped_at = sqlite3_column_int64(st, 6), /* NULL: 0 */
    };
    if (cb(&nd, data)) break;
  }
  int err = rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : sq_fail(s, rc, "list nodes");
  sqlite3_reset(st);
  return err;
}

static int sq_node_reap(store_t *base, int64_t silent_ms, size_t *n) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_NODE_REAP);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_int64(st, 1, pawl__store_now(base) - silent_ms);
  int rc = sq_exec_write(s, st, "remove silent nodes");
  if (!rc && n) *n = (size_t)sqlite3_changes(s->db);
  return rc;
}

static int sq_node_stop(store_t *base, const char *id,
                        const pawl_id_t *incarnation) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_NODE_STOP);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
  sq_bind_id(st, 2, incarnation);
  sqlite3_bind_int64(st, 3, pawl__store_now(base));
  return sq_exec_write(s, st, "record node stop");
}

/* ---- open and close ----------------------------------------------------- */

static void sq_close(store_t *base) {
  sq_store_t *s = (sq_store_t *)base;
  if (!s) return;
  for (int i = 0; i < SQ_COUNT; i++) sqlite3_finalize(s->stmt[i]);
  sqlite3_close(s->db);
  for (size_t i = 0; i < s->ntp; i++) pawl__free(s->tp[i].queue);
  pawl__free(s->tp);
  pawl__free(s->bn);
  pawl__free(s->qb_queue);
  pawl__free(s->dep_seq);
  sq_keys_clear(s);
  pawl__free(s->keys);
  pawl__free(s->path);
  pawl__free(s);
}

static int sq_checkpoint(store_t *base) {
  sq_store_t *s = (sq_store_t *)base;
  int rc = sqlite3_wal_checkpoint_v2(s->db, NULL, SQLITE_CHECKPOINT_PASSIVE,
                                     NULL, NULL);
  /* Busy only means readers or a writer got there first: try next time. */
  if (rc != SQLITE_OK && (rc & 0xff) != SQLITE_BUSY)
    return sq_fail(s, rc, "checkpoint");
  return 0;
}

static int sq_data_version(store_t *base, uint64_t *v) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_DATA_VERSION);
  if (!st) return PAWL_ESTORE;
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) *v = (uint64_t)sqlite3_column_int64(st, 0);
  sqlite3_reset(st);
  if (rc != SQLITE_ROW) return sq_fail(s, rc, "read the data version");
  return 0;
}

/* ---- queues (pause, resume, per-queue age boost) ------------------------ */

static int sq_queue_pause(store_t *base, const char *name, int paused,
                          const char *by, const char *reason, int *changed) {
  sq_store_t *s = (sq_store_t *)base;
  int rc = sq_begin(s);
  if (rc) return rc;
  sqlite3_stmt *st = sq_stmt(s, paused ? SQ_QUEUE_PAUSE : SQ_QUEUE_RESUME);
  if (!st) return sq_end(s, PAWL_ESTORE);
  sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 2, pawl__store_now(base));
  if (paused) {
    sq_bind_text(st, 3, by);
    sq_bind_text(st, 4, reason);
  }
  rc = sq_exec(s, st, paused ? "pause queue" : "resume queue");
  if (!rc && changed) *changed = sqlite3_changes(s->db) > 0;
  return sq_end(s, rc);
}

/* The queue's boost and its pending jobs' ranks change together. */
static int sq_queue_set_boost(store_t *base, const char *name,
                              int64_t boost_ms) {
  sq_store_t *s = (sq_store_t *)base;
  int rc = sq_begin(s);
  if (rc) return rc;
  sqlite3_stmt *st = sq_stmt(s, SQ_QUEUE_SET_BOOST);
  if (!st) return sq_end(s, PAWL_ESTORE);
  sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 2, pawl__store_now(base));
  if (boost_ms >= 0)
    sqlite3_bind_int64(st, 3, boost_ms);
  else
    sqlite3_bind_null(st, 3);
  rc = sq_exec(s, st, "set the queue's age boost");
  if (!rc) rc = sq_setting_get(s, "age_boost_ms", &s->boost_ms);
  if (!rc) {
    st = sq_stmt(s, SQ_RERANK);
    if (!st) return sq_end(s, PAWL_ESTORE);
    sqlite3_bind_int64(st, 1, s->boost_ms);
    sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
    rc = sq_exec(s, st, "re-rank the queue's pending jobs");
  }
  return sq_end(s, rc);
}

static int sq_queue_list(store_t *base, store_queue_cb cb, void *data) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_QUEUE_LIST);
  if (!st) return PAWL_ESTORE;
  int rc = SQLITE_DONE, stop = 0;
  while (!stop && (rc = sqlite3_step(st)) == SQLITE_ROW) {
    store_queue_row_t r = {
        .name = (const char *)sqlite3_column_text(st, 0),
        .paused = sqlite3_column_int(st, 1) != 0,
        .paused_at = sqlite3_column_int64(st, 2),
        .paused_by = (const char *)sqlite3_column_text(st, 3),
        .reason = (const char *)sqlite3_column_text(st, 4),
        .age_boost_ms = sqlite3_column_type(st, 5) == SQLITE_NULL
                            ? -1
                            : sqlite3_column_int64(st, 5),
    };
    if (!r.name) continue;
    stop = cb(&r, data);
  }
  int err = stop < 0 ? stop
            : stop || rc == SQLITE_DONE ? 0
                                        : sq_fail(s, rc, "list queues");
  sqlite3_reset(st);
  return err;
}

/* administration: defined at the end of this file */
static int sq_adm_count(store_t *base, const store_match_t *m, int64_t max,
                        int64_t *n);
static int sq_adm_pick(store_t *base, const store_match_t *m,
                       const store_pick_t *after, size_t max,
                       store_pick_t *out, size_t *n);
static int sq_adm_apply(store_t *base, store_op_t op, const char *actor,
                        const char *reason, const store_pick_t *picks,
                        size_t n, pawl_bulk_result_t *r);
static int sq_adm_stats(store_t *base, int64_t now, store_stat_cb cb,
                        void *data);
static int sq_adm_locks(store_t *base, store_lock_cb cb, void *data);
static int sq_adm_running(store_t *base, store_owner_cb cb, void *data);
static int sq_top_throughput(store_t *base, int64_t since, store_tp_cb cb,
                             void *data);
static int sq_top_running(store_t *base, int limit, pawl_job_cb cb,
                          void *data);
static int sq_met_gauges(store_t *base, int64_t now, int64_t since, int full,
                         store_stat_cb cb, void *data);

/* recurring definitions: defined at the end of this file */
static int sq_batch_create(store_t *base, const store_batch_new_t *b,
                           const store_new_job_t *jobs, size_t n);
static int sq_batch_get(store_t *base, const pawl_id_t *id, int64_t now,
                        pawl_batch_t *out);
static int sq_batch_of(store_t *base, const pawl_id_t *id, pawl_id_t *batch,
                       int *role);
static int sq_rec_put(store_t *base, const pawl_recurring_t *d, int how,
                      int *done);
static int sq_rec_get(store_t *base, const char *name,
                      pawl_recurring_t **out);
static int sq_rec_list(store_t *base, pawl_recurring_t **out, size_t *n);
static int sq_rec_update(store_t *base, const pawl_recurring_t *d,
                         int *changed);
static int sq_rec_remove(store_t *base, const char *name);
static int sq_rec_due(store_t *base, int64_t now, size_t max,
                      pawl_recurring_t **out, size_t *n);
static int sq_rec_advance(store_t *base, store_rec_advance_t *a, size_t n);
static int sq_rec_disable_gone(store_t *base, const char *const *scripts,
                               size_t n, int listed, size_t *count);
static int sq_rec_load_error(store_t *base, const char *script,
                             const char *error);

static int sq_deps_list(store_t *base, const pawl_id_t *id, pawl_dep_cb cb,
                        void *data);
/* steps and instances: the section "steps" at the end */
static int sq_steps_get(store_t *base, const pawl_id_t *id, pawl_steps_t **out);
static int sq_step_begin(store_t *base, const pawl_id_t *id,
                         const pawl_id_t *token, int32_t attempt,
                         int32_t index, const char *name,
                         const char *checkpoint, int64_t *exec);
static int sq_step_save(store_t *base, const pawl_id_t *id,
                        const pawl_id_t *token, int32_t attempt, int64_t exec,
                        const char *checkpoint, const int64_t *counts);
static int sq_step_end(store_t *base, const pawl_id_t *id,
                       const pawl_id_t *token, int32_t attempt, int64_t exec,
                       int status, const char *exit_code,
                       const char *exit_message, const int64_t *counts);
static int sq_step_exit(store_t *base, const pawl_id_t *id,
                        const pawl_id_t *token, int32_t attempt,
                        const char *exit_code, const char *exit_message);
static int sq_instance_find(store_t *base, const char *type, const char *key,
                            pawl_id_t *id, int *state);
/* retention: the section "retention" at the end */
static int sq_ret_scan(store_t *base, const store_pick_t *after, size_t max,
                       store_retain_row_t *out, size_t *n);
static int sq_ret_remove(store_t *base, const store_retain_row_t *rows,
                         size_t n, int archive, int *removed);

/* ---- dead-letter alerts ------------------------------------------------- */

/* Ends the windows whose time is up at `now` (in the caller's
 * transaction). */
static int sq_alert_roll(sq_store_t *s, int64_t now) {
  int ids[2] = {SQ_ALERT_ROLL, SQ_ALERT_ROLL_DEL};
  for (int i = 0; i < 2; i++) {
    sqlite3_stmt *st = sq_stmt(s, ids[i]);
    if (!st) return PAWL_ESTORE;
    sqlite3_bind_int64(st, 1, now);
    int rc = sq_exec(s, st, "end alert windows");
    if (rc) return rc;
  }
  return 0;
}

static int sq_alert_take(store_t *base, const char *owner, int64_t lease_ms,
                         size_t max, store_alert_t **out, size_t *n) {
  sq_store_t *s = (sq_store_t *)base;
  *out = NULL;
  *n = 0;
  int rc = sq_begin(s);
  if (rc) return rc;
  int64_t now = pawl__store_now(base); /* under the write lock */
  rc = sq_alert_roll(s, now);
  sqlite3_stmt *st = rc ? NULL : sq_stmt(s, SQ_ALERT_TAKE);
  if (!rc && !st) rc = PAWL_ESTORE;
  store_alert_t *v = NULL;
  size_t count = 0;
  if (!rc) {
    sqlite3_bind_text(st, 1, owner, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, now + lease_ms);
    sqlite3_bind_int64(st, 3, now);
    sqlite3_bind_int64(st, 4, (int64_t)max);
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
      store_alert_t *a = pawl__store_push((void **)&v, &count, sizeof *a);
      if (!a) {
        rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
        break;
      }
      a->seq = sqlite3_column_int64(st, 0);
      a->kind = sqlite3_column_int(st, 1);
      sq_col_id(st, 2, &a->job_id);
      int oom =
          pawl__store_dup(&a->type, (const char *)sqlite3_column_text(st, 3));
      oom |=
          pawl__store_dup(&a->queue, (const char *)sqlite3_column_text(st, 4));
      a->attempt = sqlite3_column_int(st, 5);
      oom |=
          pawl__store_dup(&a->error, (const char *)sqlite3_column_text(st, 6));
      a->created_at = sqlite3_column_int64(st, 7);
      a->verdict = sqlite3_column_int(st, 8);
      a->count = sqlite3_column_int64(st, 9);
      a->suppressed = sqlite3_column_int64(st, 10);
      a->first_at = sqlite3_column_int64(st, 11);
      a->last_at = sqlite3_column_int64(st, 12);
      if (oom) {
        rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
        break;
      }
    }
    if (!rc && step != SQLITE_DONE) rc = sq_fail(s, step, "take alerts");
    sqlite3_reset(st);
  }
  rc = sq_end(s, rc);
  if (rc) {
    pawl__store_alerts_free(v, count);
    return rc;
  }
  *out = v;
  *n = count;
  return 0;
}

static int sq_alert_note(store_t *base, const char *owner, int64_t fp,
                         int64_t window_ms, store_alert_t *a) {
  sq_store_t *s = (sq_store_t *)base;
  int rc = sq_begin(s);
  if (rc) return rc;
  int64_t now = pawl__store_now(base); /* under the write lock */
  sqlite3_stmt *st = sq_stmt(s, SQ_ALERT_GET);
  if (!st) rc = PAWL_ESTORE;
  int step = SQLITE_DONE, decided = 0;
  if (!rc) {
    sqlite3_bind_int64(st, 1, a->seq);
    step = sqlite3_step(st);
    const char *by = step == SQLITE_ROW
                         ? (const char *)sqlite3_column_text(st, 0) : NULL;
    if (step == SQLITE_ROW && by && strcmp(by, owner) == 0) {
      if (sqlite3_column_type(st, 1) != SQLITE_NULL) {
        decided = 1;
        a->verdict = sqlite3_column_int(st, 1);
        a->count = sqlite3_column_int64(st, 2);
        a->first_at = sqlite3_column_int64(st, 3);
        a->last_at = sqlite3_column_int64(st, 4);
      }
    } else if (step == SQLITE_ROW || step == SQLITE_DONE) {
      rc = pawl__store_fail(base, PAWL_ELEASE,
                            "alert %" PRId64 " is no longer held by %s",
                            a->seq, owner);
    } else {
      rc = sq_fail(s, step, "read alert");
    }
    sqlite3_reset(st);
  }
  if (!rc && !decided) rc = sq_alert_roll(s, now);
  if (!rc && !decided) {
    st = sq_stmt(s, SQ_ALERT_WINDOW);
    if (!st) rc = PAWL_ESTORE;
  }
  if (!rc && !decided) {
    sqlite3_bind_text(st, 1, a->type, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, fp);
    sqlite3_bind_int64(st, 3, now);
    sqlite3_bind_int64(st, 4, window_ms);
    sq_bind_id(st, 5, &a->job_id);
    sqlite3_bind_text(st, 6, a->queue, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 7, a->attempt);
    sq_bind_text(st, 8, a->error);
    step = sqlite3_step(st);
    if (step == SQLITE_ROW) {
      a->count = sqlite3_column_int64(st, 0);
      a->first_at = sqlite3_column_int64(st, 1);
      a->last_at = sqlite3_column_int64(st, 2);
      a->verdict = a->count == 1 ? 1 : 2;
    } else {
      rc = sq_fail(s, step, "count alert");
    }
    sqlite3_reset(st);
  }
  if (!rc && !decided) {
    st = sq_stmt(s, SQ_ALERT_VERDICT);
    if (!st) rc = PAWL_ESTORE;
  }
  if (!rc && !decided) {
    sqlite3_bind_int64(st, 1, a->seq);
    sqlite3_bind_int(st, 2, a->verdict);
    sqlite3_bind_int64(st, 3, a->count);
    sqlite3_bind_int64(st, 4, a->first_at);
    sqlite3_bind_int64(st, 5, a->last_at);
    rc = sq_exec(s, st, "record alert decision");
  }
  return sq_end(s, rc);
}

static int sq_alert_done(store_t *base, const char *owner, int64_t seq) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_ALERT_DONE);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_int64(st, 1, seq);
  sqlite3_bind_text(st, 2, owner, -1, SQLITE_STATIC);
  return sq_exec_write(s, st, "remove alert");
}

static const struct store_ops sq_ops = {
    .name = "sqlite",
    .schema = {sq_migrate, sq_version},
    .jobs = {sq_insert, sq_get, sq_list, sq_progress, sq_logs},
    .keys = {sq_find_idempotent, sq_find_business},
    .claim = {sq_claim, sq_extend, sq_recover, sq_start, sq_extend_one,
              sq_next_due},
    .terminal = {sq_finish},
    .control = {sq_transition},
    .history = {sq_history},
    .locks = {sq_lock_acquire, sq_lock_extend, sq_lock_release},
    .nodes = {sq_node_beat, sq_node_list, sq_node_reap, sq_node_stop},
    .settings = {sq_age_boost},
    .maintenance = {sq_checkpoint, sq_data_version},
    .wakeup = {NULL, NULL},
    .close = sq_close,
    .admin = {sq_adm_count, sq_adm_pick, sq_adm_apply, sq_adm_stats,
              sq_adm_locks, sq_adm_running},
    .recurring = {sq_rec_put, sq_rec_get, sq_rec_list, sq_rec_update,
                  sq_rec_remove, sq_rec_due, sq_rec_advance,
                  sq_rec_disable_gone, sq_rec_load_error},
    .queues = {sq_queue_pause, sq_queue_set_boost, sq_queue_list},
    .limits = {sq_limit_set, sq_limit_remove, sq_limit_list},
    .types = {sq_types_sync, sq_type_get},
    .flow = {sq_sig_deliver, sq_sig_get, sq_sig_expire, sq_replace,
             sq_replace_links, sq_sig_next},
    .batch = {sq_batch_create, sq_batch_get, sq_batch_of},
    .deps = {sq_deps_list},
    .steps = {sq_steps_get, sq_step_begin, sq_step_save, sq_step_end,
              sq_step_exit, sq_instance_find},
    .top = {sq_top_throughput, sq_top_running},
    .alerts = {sq_alert_take, sq_alert_note, sq_alert_done},
    .retention = {sq_ret_scan, sq_ret_remove},
    .metrics = {sq_met_gauges},
};

/* Switches to WAL. Changing the journal mode needs an exclusive lock and
 * SQLite may answer SQLITE_BUSY at once instead of calling the busy handler
 * (several processes opening a new file together), so retry until the busy
 * timeout runs out. */
static int sq_set_wal(sqlite3 *db, int timeout_ms, char **msg) {
  for (int waited = 0;; waited += 5) {
    int rc = sqlite3_exec(db, "PRAGMA journal_mode = WAL", 0, 0, msg);
    int base = rc & 0xff;
    if ((base != SQLITE_BUSY && base != SQLITE_LOCKED) || waited >= timeout_ms)
      return rc;
    sqlite3_free(*msg);
    *msg = NULL;
    struct timespec ts = {0, 5 * 1000000};
    nanosleep(&ts, NULL);
  }
}

/* Checks the file's directory before SQLite does, to name the problem. */
static int sq_check_path(const char *path, char *errbuf, size_t errlen) {
  char *copy = pawl__strdup(path);
  if (!copy) return PAWL_ENOMEM;
  const char *dir = dirname(copy);
  struct stat sb;
  int rc = 0;
  if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
    snprintf(errbuf, errlen, "cannot open sqlite:%s: directory %s does not exist",
             path, dir);
    rc = PAWL_EIO;
  } else if (access(path, F_OK) != 0 && access(dir, W_OK) != 0) {
    snprintf(errbuf, errlen,
             "cannot create sqlite:%s: directory %s is not writable", path, dir);
    rc = PAWL_EIO;
  } else if (access(path, F_OK) == 0 && access(dir, W_OK) != 0) {
    /* WAL mode needs to create -wal and -shm files beside the database. */
    snprintf(errbuf, errlen,
             "cannot open sqlite:%s: directory %s is not writable (SQLite "
             "needs it for the write-ahead log)",
             path, dir);
    rc = PAWL_EIO;
  } else if (access(path, F_OK) == 0 && access(path, R_OK | W_OK) != 0) {
    snprintf(errbuf, errlen, "cannot open sqlite:%s: file is not writable",
             path);
    rc = PAWL_EIO;
  }
  pawl__free(copy);
  return rc;
}

int pawl__store_sqlite_open(store_t **out, const store_config_t *cfg,
                      const char *path, char *errbuf, size_t errlen);

/* The store's connection, for tests and the benchmark's plain-SQL loop;
 * NULL if `st` is not an SQLite store. */
sqlite3 *pawl__store_sqlite_db(store_t *st);
sqlite3 *pawl__store_sqlite_db(store_t *st) {
  return st && st->ops == &sq_ops ? ((sq_store_t *)st)->db : NULL;
}

/* Refuses what is not a file path: each connection to ":memory:" is a
 * database of its own, gone when it closes (an enqueue there is lost, and
 * the host's other connections would never see it); SQLite's "file:" URIs
 * can ask for the same (and name a file other than the path we check). */
static int sq_check_url(const char *path, char *errbuf, size_t errlen) {
  if (!path || !*path) {
    snprintf(errbuf, errlen, "database URL sqlite: has an empty path");
    return PAWL_EINVAL;
  }
  if (strcmp(path, ":memory:") == 0) {
    snprintf(errbuf, errlen,
             "sqlite::memory: keeps nothing (each connection has its own "
             "database, gone when it closes): give a file path");
    return PAWL_EINVAL;
  }
  if (strncmp(path, "file:", 5) == 0) {
    snprintf(errbuf, errlen,
             "sqlite:%s: SQLite URIs are not supported: give a file path",
             path);
    return PAWL_EINVAL;
  }
  return 0;
}

/* Only a handle allowed to create makes the file, with the operator's
 * permission bits (0600 by default, exactly: the umask would let a
 * database full of payloads be world-readable). SQLite gives the -wal,
 * -shm and journal files the main file's bits. An empty file is an empty
 * SQLite database. */
static int sq_create_file(const store_config_t *cfg, const char *path,
                          char *errbuf, size_t errlen) {
  struct stat sb;
  if (stat(path, &sb) == 0) return 0;
  if (!cfg->create || cfg->no_migrate) {
    snprintf(errbuf, errlen,
             "no database at sqlite:%s: create it with `pawl migrate`", path);
    return PAWL_EIO;
  }
  mode_t mode = cfg->file_mode ? (mode_t)cfg->file_mode : 0600;
  int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd >= 0) {
    int bad = fchmod(fd, mode) != 0;
    close(fd);
    if (bad) {
      snprintf(errbuf, errlen, "cannot set the mode of sqlite:%s: %s", path,
               strerror(errno));
      unlink(path);
      return PAWL_EIO;
    }
  } else if (errno != EEXIST) { /* EEXIST: another process was first */
    snprintf(errbuf, errlen, "cannot create sqlite:%s: %s", path,
             strerror(errno));
    return PAWL_EIO;
  }
  return 0;
}

/* The message for SQLite's refusal `src` (with its text `msg`, freed) to
 * read the file; returns the PAWL_E* code. */
static int sq_refused(const char *path, int src, char *msg, char *errbuf,
                      size_t errlen) {
  if ((src & 0xff) == SQLITE_NOTADB)
    snprintf(errbuf, errlen, "sqlite:%s is not a pawl database (%s)", path,
             msg ? msg : sqlite3_errstr(src));
  else
    snprintf(errbuf, errlen, "cannot open sqlite:%s: %s", path,
             msg ? msg : sqlite3_errstr(src));
  sqlite3_free(msg);
  return sq_rc_to_err(src);
}

/* Looks before changing anything: a file that is not a database, or a
 * database that is not pawl's, is refused before the switch to WAL (which
 * would rewrite its header); so is an empty file for a handle that may not
 * create. */
static int sq_look(sq_store_t *s, const store_config_t *cfg, const char *path,
                   char *errbuf, size_t errlen) {
  char *msg = NULL;
  int src = sqlite3_exec(s->db, "SELECT count(*) FROM sqlite_master", 0, 0, &msg);
  if (src != SQLITE_OK) return sq_refused(path, src, msg, errbuf, errlen);
  int has_schema = 0, ntables = 0, rc;
  /* Both looks in one read transaction: another process creating the file
   * right now (pawl_schema first, then the migrations) is seen before or
   * after, never between the two queries as "tables but no pawl_schema". */
  sqlite3_exec(s->db, "BEGIN", 0, 0, 0);
  if ((rc = sq_table_exists(s, "pawl_schema", &has_schema)) ||
      (!has_schema && (rc = sq_count_tables(s, &ntables)))) {
    snprintf(errbuf, errlen, "%s", s->base.errmsg);
    sqlite3_exec(s->db, "ROLLBACK", 0, 0, 0);
    return rc;
  }
  sqlite3_exec(s->db, "COMMIT", 0, 0, 0);
  if (!has_schema && ntables > 0) {
    snprintf(errbuf, errlen,
             "sqlite:%s is not a pawl database (it has %d table%s but no "
             "pawl_schema)",
             path, ntables, ntables == 1 ? "" : "s");
    return PAWL_ESCHEMA;
  }
  if (!has_schema && !cfg->create && !cfg->no_migrate) {
    snprintf(errbuf, errlen,
             "no database at sqlite:%s (the file is empty): create it with "
             "`pawl migrate`",
             path);
    return PAWL_EIO;
  }
  return 0;
}

/* WAL, and the pragmas. temp_store = MEMORY: a claim or a finish changes
 * many rows in one statement, so SQLite keeps a statement journal to undo
 * it alone. With temporary files, a journal past 64 KiB spills into a file
 * created, unlinked and closed again for every batch: about 12% of a
 * claim+complete cycle at batch 100 (bench/RESULTS.md). Temporary data
 * here is bounded by a batch or a LIMIT, so memory is the place for it. */
static int sq_configure(sq_store_t *s, const store_config_t *cfg,
                        const char *path, char *errbuf, size_t errlen) {
  char *msg = NULL;
  int src = sq_set_wal(s->db,
                       cfg->busy_timeout_ms > 0 ? cfg->busy_timeout_ms : 5000,
                       &msg);
  if (src != SQLITE_OK) return sq_refused(path, src, msg, errbuf, errlen);
  const char *sync = cfg->sync_full ? "PRAGMA synchronous = FULL"
                                    : "PRAGMA synchronous = NORMAL";
  if (sqlite3_exec(s->db, sync, 0, 0, &msg) != SQLITE_OK ||
      sqlite3_exec(s->db, "PRAGMA foreign_keys = ON", 0, 0, &msg) != SQLITE_OK ||
      sqlite3_exec(s->db, "PRAGMA temp_store = MEMORY", 0, 0, &msg) !=
          SQLITE_OK ||
      (cfg->no_autocheckpoint &&
       sqlite3_exec(s->db, "PRAGMA wal_autocheckpoint = 0", 0, 0, &msg) !=
           SQLITE_OK)) {
    snprintf(errbuf, errlen, "cannot configure sqlite:%s: %s", path,
             msg ? msg : "?");
    sqlite3_free(msg);
    return PAWL_ESTORE;
  }
  /* store_rank() for SQL (the requeue, recover and rerank statements),
   * so that one formula ranks jobs everywhere. */
  if (sqlite3_create_function_v2(s->db, "pawl_rank", 3,
                                 SQLITE_UTF8 | SQLITE_DETERMINISTIC |
                                     SQLITE_DIRECTONLY,
                                 NULL, sq_rank_fn, NULL, NULL,
                                 NULL) != SQLITE_OK) {
    snprintf(errbuf, errlen, "cannot configure sqlite:%s: %s", path,
             sqlite3_errmsg(s->db));
    return PAWL_ESTORE;
  }
  /* Not deterministic: called once per row written, for its effect. */
  if (sqlite3_create_function_v2(s->db, "pawl_tp_note", 5,
                                 SQLITE_UTF8 | SQLITE_DIRECTONLY, s,
                                 sq_tp_note_fn, NULL, NULL,
                                 NULL) != SQLITE_OK ||
      sqlite3_create_function_v2(s->db, "pawl_dep_note", 3,
                                 SQLITE_UTF8 | SQLITE_DIRECTONLY, s,
                                 sq_dep_note_fn, NULL, NULL,
                                 NULL) != SQLITE_OK ||
      sqlite3_create_function_v2(s->db, "pawl_key_note", 2,
                                 SQLITE_UTF8 | SQLITE_DIRECTONLY, s,
                                 sq_key_note_fn, NULL, NULL,
                                 NULL) != SQLITE_OK) {
    snprintf(errbuf, errlen, "cannot configure sqlite:%s: %s", path,
             sqlite3_errmsg(s->db));
    return PAWL_ESTORE;
  }
  return 0;
}

/* The schema as this pawl needs it: migrated (or, for a handle that may
 * not migrate, checked to be current), and the age boost read or set. */
static int sq_ready_schema(sq_store_t *s, const store_config_t *cfg,
                           const char *path, char *errbuf, size_t errlen) {
  int rc = cfg->no_migrate ? sq_prepare_schema_table(s, 0) : sq_migrate(&s->base);
  if (!rc && cfg->no_migrate) {
    int cur = 0, latest = 0;
    rc = sq_version(&s->base, &cur, &latest);
    if (!rc && cur < latest)
      rc = pawl__store_fail(&s->base, PAWL_ESCHEMA,
                      "sqlite:%s is at schema version %d, this pawl needs %d: "
                      "run `pawl migrate`",
                      path, cur, latest);
  }
  if (!rc) rc = sq_setting_get(s, "age_boost_ms", &s->boost_ms);
  if (!rc && cfg->age_boost_ms >= 0 && cfg->age_boost_ms != s->boost_ms)
    rc = sq_set_age_boost(s, cfg->age_boost_ms);
  if (!rc && cfg->check_writable) {
    int src = sqlite3_exec(s->db, "BEGIN IMMEDIATE", 0, 0, 0);
    if (src != SQLITE_OK) rc = sq_fail(s, src, "take the write lock");
    else sqlite3_exec(s->db, "ROLLBACK", 0, 0, 0);
  }
  if (rc) snprintf(errbuf, errlen, "%s", s->base.errmsg);
  return rc;
}

int pawl__store_sqlite_open(store_t **out, const store_config_t *cfg,
                      const char *path, char *errbuf, size_t errlen) {
  int rc = sq_check_url(path, errbuf, errlen);
  if (!rc) rc = sq_check_path(path, errbuf, errlen);
  if (!rc) rc = sq_create_file(cfg, path, errbuf, errlen);
  if (rc) return rc;
  sq_store_t *s = pawl__calloc(1, sizeof *s);
  if (!s || !(s->path = pawl__strdup(path))) {
    pawl__free(s);
    snprintf(errbuf, errlen, "out of memory");
    return PAWL_ENOMEM;
  }
  s->base.ops = &sq_ops;
  s->base.clock = cfg->clock;
  s->base.clock_data = cfg->clock_data;
  s->poison = cfg->poison_recoveries > 0 ? cfg->poison_recoveries : 3;
  s->gate = cfg->write_gate;
  /* NOMUTEX: a store is used by one thread at a time, so SQLite's own
   * connection mutex would only cost. */
  int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX;
  int src = sqlite3_open_v2(path, &s->db, flags, NULL);
  if (src != SQLITE_OK) {
    snprintf(errbuf, errlen, "cannot open sqlite:%s: %s", path,
             s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(src));
    rc = sq_rc_to_err(src);
  } else {
    sqlite3_extended_result_codes(s->db, 0);
    sqlite3_busy_timeout(s->db, cfg->busy_timeout_ms > 0 ? cfg->busy_timeout_ms
                                                         : 5000);
    rc = sq_look(s, cfg, path, errbuf, errlen);
  }
  if (!rc) rc = sq_configure(s, cfg, path, errbuf, errlen);
  if (!rc) rc = sq_ready_schema(s, cfg, path, errbuf, errlen);
  if (rc) {
    sq_close(&s->base);
    return rc;
  }
  *out = &s->base;
  return 0;
}

/* ---- administration (host/api/admin.c) ------------------------------------
 * Bulk actions, filtered listings, statistics, locks and running jobs per
 * node. The SQL is in sqlite_admin_sql.h. */

/* Binds ?1..?5 of SQLITE_ADM_MATCH. */
static void sq_adm_bind_match(sqlite3_stmt *st, const store_match_t *m) {
  sqlite3_bind_int64(st, 1, (int64_t)m->states);
  sq_bind_text(st, 2, m->f->queue);
  sq_bind_text(st, 3, m->f->type);
  sq_bind_text(st, 4, m->f->tag);
  sq_bind_opt_int(st, 5, m->cutoff);
}

/* Only failed jobs: their index serves the walk. */
static int sq_adm_failed_only(const store_match_t *m) {
  return m->states == (1u << PAWL_FAILED);
}

static int sq_adm_count(store_t *base, const store_match_t *m, int64_t max,
                        int64_t *n) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st =
      sq_stmt(s, sq_adm_failed_only(m) ? SQ_ADM_COUNT_FAILED : SQ_ADM_COUNT);
  if (!st) return PAWL_ESTORE;
  sq_adm_bind_match(st, m);
  sqlite3_bind_int64(st, 6, max);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) *n = sqlite3_column_int64(st, 0);
  sqlite3_reset(st);
  return rc == SQLITE_ROW ? 0 : sq_fail(s, rc, "count jobs");
}

static int sq_adm_pick(store_t *base, const store_match_t *m,
                       const store_pick_t *after, size_t max,
                       store_pick_t *out, size_t *n) {
  sq_store_t *s = (sq_store_t *)base;
  int failed = sq_adm_failed_only(m);
  sqlite3_stmt *st = sq_stmt(s, failed ? SQ_ADM_PICK_FAILED : SQ_ADM_PICK);
  if (!st) return PAWL_ESTORE;
  sq_adm_bind_match(st, m);
  static const pawl_id_t zero; /* ids are UUIDv7s: never all zero */
  if (failed)
    sq_bind_id(st, 6, after ? &after->id : &zero);
  else
    sqlite3_bind_int64(st, 6, after ? after->key : 0);
  sqlite3_bind_int64(st, 7, (int64_t)max);
  size_t k = 0;
  int rc;
  while (k < max && (rc = sqlite3_step(st)) == SQLITE_ROW) {
    out[k].key = sqlite3_column_int64(st, 0);
    sq_col_id(st, 1, &out[k].id);
    out[k].version = sqlite3_column_int64(st, 2);
    k++;
  }
  if (k == max) rc = SQLITE_DONE;
  sqlite3_reset(st);
  if (rc != SQLITE_DONE) return sq_fail(s, rc, "pick jobs");
  *n = k;
  return 0;
}

/* Runs one of the savepoint statements. */
static int sq_adm_exec(sq_store_t *s, int id, const char *what) {
  sqlite3_stmt *st = sq_stmt(s, id);
  return st ? sq_exec(s, st, what) : PAWL_ESTORE;
}

/* One write transaction for the batch; each job under a savepoint, so
 * that a job refused halfway (its event written, its update refused by the
 * business key) is undone alone and the batch goes on. */
static int sq_adm_apply(store_t *base, store_op_t op, const char *actor,
                        const char *reason, const store_pick_t *picks,
                        size_t n, pawl_bulk_result_t *r) {
  sq_store_t *s = (sq_store_t *)base;
  pawl_bulk_result_t got = {0, 0, 0};
  int rc = sq_begin(s);
  if (rc) return rc;
  int64_t now = pawl__store_now(base); /* under the write lock */
  for (size_t i = 0; i < n && !rc; i++) {
    if ((rc = sq_adm_exec(s, SQ_ADM_SAVEPOINT, "savepoint"))) break;
    int one = pawl__store_transition_in(
        base, &sq_transition_steps, now, &picks[i].id, op, actor, reason,
        picks[i].version);
    if (one == 0) {
      got.changed++;
      rc = sq_adm_exec(s, SQ_ADM_RELEASE, "release savepoint");
      continue;
    }
    if (one == PAWL_ECONFLICT || one == PAWL_ENOTFOUND)
      got.skipped++;
    else if (one == PAWL_EKEY || one == PAWL_ESTATE)
      got.refused++;
    else
      rc = one; /* the database failed: the whole batch goes */
    if (!rc) {
      base->errmsg[0] = 0;
      rc = sq_adm_exec(s, SQ_ADM_ROLLBACK_TO, "roll back to savepoint");
      if (!rc) rc = sq_adm_exec(s, SQ_ADM_RELEASE, "release savepoint");
    }
  }
  rc = sq_end(s, rc);
  if (!rc) {
    r->changed += got.changed;
    r->skipped += got.skipped;
    r->refused += got.refused;
  }
  return rc;
}

static int sq_adm_list(store_t *base, const pawl_filter_t *f, pawl_job_cb cb,
                       void *data) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_ADM_LIST);
  if (!st) return PAWL_ESTORE;
  if (f->state >= 0) sqlite3_bind_int(st, 1, f->state);
  sq_bind_text(st, 2, f->queue);
  sq_bind_text(st, 3, f->type);
  sq_bind_text(st, 4, f->tag);
  sq_bind_opt_int(st, 5,
                  f->older_than_ms ? pawl__store_now(base) - f->older_than_ms : 0);
  sqlite3_bind_int(st, 6, f->limit > 0 ? f->limit : 100);
  return sq_list_rows(s, st, cb, data);
}

/* The finished counts: one pass over the table, each row's (state, queue)
 * tallied here. Queues are few, so a short list searched from the last hit
 * (rows of one queue tend to come together) beats a sort. */
typedef struct sq_tally {
  char *queue;
  int64_t n[PAWL_STATE_COUNT];
} sq_tally_t;

static int sq_adm_tally(sq_store_t *s, store_stat_cb cb, void *data) {
  sqlite3_stmt *st = sq_stmt(s, SQ_ADM_STATS_DONE);
  if (!st) return PAWL_ESTORE;
  sq_tally_t *t = NULL;
  size_t nt = 0, cap = 0, hint = 0;
  int rc = 0, step;
  while ((step = sqlite3_step(st)) == SQLITE_ROW) {
    int state = sqlite3_column_int(st, 0);
    const char *q = (const char *)sqlite3_column_text(st, 1);
    if (!q) {
      rc = pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
      break;
    }
    if (state < 0 || state >= PAWL_STATE_COUNT) continue;
    if (hint >= nt || strcmp(t[hint].queue, q) != 0) {
      for (hint = 0; hint < nt && strcmp(t[hint].queue, q) != 0; hint++) {}
      if (hint == nt) {
        if (nt == cap) {
          size_t nc = cap ? cap * 2 : 8;
          sq_tally_t *g = pawl__realloc(t, nc * sizeof *g);
          if (!g) {
            rc = pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
            break;
          }
          t = g;
          cap = nc;
        }
        memset(&t[nt], 0, sizeof t[nt]);
        if (!(t[nt].queue = pawl__strdup(q))) {
          rc = pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
          break;
        }
        nt++;
      }
    }
    t[hint].n[state]++;
  }
  if (!rc && step != SQLITE_DONE) rc = sq_fail(s, step, "read statistics");
  sqlite3_reset(st);
  for (size_t i = 0; i < nt; i++) {
    for (int k = PAWL_SUCCEEDED; k < PAWL_STATE_COUNT && !rc; k++) {
      if (!t[i].n[k]) continue;
      store_stat_row_t row = {.queue = t[i].queue, .state = k,
                              .count = t[i].n[k]};
      if (cb(&row, data))
        rc = pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
    }
    pawl__free(t[i].queue);
  }
  pawl__free(t);
  return rc;
}

/* Throughput: the buckets of the last 15 minutes (and one more, see
 * store.h), summed per state and queue into rows of count 0. */
static int sq_adm_throughput(sq_store_t *s, int64_t now, store_stat_cb cb,
                             void *data) {
  sqlite3_stmt *st = sq_stmt(s, SQ_ADM_STATS_TP);
  if (!st) return PAWL_ESTORE;
  int64_t minute = store_tp_minute(now);
  sqlite3_bind_int64(st, 1, minute - 15);
  sqlite3_bind_int64(st, 2, minute - 5);
  sqlite3_bind_int64(st, 3, minute - 1);
  int rc = 0, step;
  while ((step = sqlite3_step(st)) == SQLITE_ROW) {
    const char *q = (const char *)sqlite3_column_text(st, 1);
    if (!q) {
      rc = pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
      break;
    }
    store_stat_row_t row = {.state = sqlite3_column_int(st, 0),
                            .queue = q,
                            .in_15m = sqlite3_column_int64(st, 2),
                            .in_5m = sqlite3_column_int64(st, 3),
                            .in_1m = sqlite3_column_int64(st, 4)};
    if (cb(&row, data)) {
      rc = pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
      break;
    }
  }
  if (!rc && step != SQLITE_DONE) rc = sq_fail(s, step, "read throughput");
  sqlite3_reset(st);
  return rc;
}

static int sq_adm_stats(store_t *base, int64_t now, store_stat_cb cb,
                        void *data) {
  sq_store_t *s = (sq_store_t *)base;
  static const int ids[2] = {SQ_ADM_STATS_PENDING, SQ_ADM_STATS_RUNNING};
  /* One read transaction: the statements see one snapshot. */
  int rc = sq_adm_exec(s, SQ_ADM_BEGIN_READ, "begin read"), step = SQLITE_DONE;
  for (int q = 0; q < 2 && !rc; q++) {
    sqlite3_stmt *st = sq_stmt(s, ids[q]);
    if (!st) {
      rc = PAWL_ESTORE;
      break;
    }
    if (q == 0) sqlite3_bind_int64(st, 1, now);
    while (!rc && (step = sqlite3_step(st)) == SQLITE_ROW) {
      store_stat_row_t row = {0};
      row.state = q == 0 ? PAWL_PENDING : PAWL_RUNNING;
      /* Valid until the next step: the callback copies what it keeps. */
      const char *queue = (const char *)sqlite3_column_text(st, 0);
      if (!queue) {
        rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
        break;
      }
      row.queue = queue;
      row.count = sqlite3_column_int64(st, 1);
      if (q == 0) row.oldest_due = sqlite3_column_int64(st, 2);
      if (cb(&row, data))
        rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
    }
    if (!rc && step != SQLITE_DONE) rc = sq_fail(s, step, "read statistics");
    sqlite3_reset(st);
  }
  if (!rc) rc = sq_adm_tally(s, cb, data);
  if (!rc) rc = sq_adm_throughput(s, now, cb, data);
  if (!sqlite3_get_autocommit(s->db)) {
    int end = sq_adm_exec(s, SQ_COMMIT, "end read");
    if (!rc) rc = end;
  }
  return rc;
}

/* The metrics' gauges (store.h, "metrics"): the live rows as sq_adm_stats
 * reads them, the throughput since `since`, the tally when `full`. */
static int sq_met_gauges(store_t *base, int64_t now, int64_t since, int full,
                         store_stat_cb cb, void *data) {
  sq_store_t *s = (sq_store_t *)base;
  static const int ids[2] = {SQ_ADM_STATS_PENDING, SQ_ADM_STATS_RUNNING};
  int rc = sq_adm_exec(s, SQ_ADM_BEGIN_READ, "begin read"), step = SQLITE_DONE;
  for (int q = 0; q < 3 && !rc; q++) {
    sqlite3_stmt *st = sq_stmt(s, q < 2 ? ids[q] : SQ_MET_TP);
    if (!st) {
      rc = PAWL_ESTORE;
      break;
    }
    if (q == 0) sqlite3_bind_int64(st, 1, now);
    if (q == 2) sqlite3_bind_int64(st, 1, since);
    while (!rc && (step = sqlite3_step(st)) == SQLITE_ROW) {
      store_stat_row_t row = {0};
      int c = 0;
      row.state = q == 0 ? PAWL_PENDING : q == 1 ? PAWL_RUNNING
                                                 : sqlite3_column_int(st, c++);
      /* Valid until the next step: the callback copies what it keeps. */
      row.queue = (const char *)sqlite3_column_text(st, c++);
      if (!row.queue) {
        rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
        break;
      }
      if (q == 2)
        row.since = sqlite3_column_int64(st, c++);
      else
        row.count = sqlite3_column_int64(st, c++);
      if (q == 0) row.oldest_due = sqlite3_column_int64(st, c++);
      if (cb(&row, data))
        rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
    }
    if (!rc && step != SQLITE_DONE) rc = sq_fail(s, step, "read gauges");
    sqlite3_reset(st);
  }
  if (!rc && full) rc = sq_adm_tally(s, cb, data);
  if (!sqlite3_get_autocommit(s->db)) {
    int end = sq_adm_exec(s, SQ_COMMIT, "end read");
    if (!rc) rc = end;
  }
  return rc;
}

static int sq_adm_locks(store_t *base, store_lock_cb cb, void *data) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_ADM_LOCKS);
  if (!st) return PAWL_ESTORE;
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    pawl_lock_info_t l = {
        .name = (char *)sqlite3_column_text(st, 0),
        .owner = (char *)sqlite3_column_text(st, 1),
        .acquired_at = sqlite3_column_int64(st, 2),
        .expires_at = sqlite3_column_int64(st, 3),
    };
    if (cb(&l, data)) {
      sqlite3_reset(st);
      return pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
    }
  }
  int err = rc == SQLITE_DONE ? 0 : sq_fail(s, rc, "list locks");
  sqlite3_reset(st);
  return err;
}

static int sq_adm_running(store_t *base, store_owner_cb cb, void *data) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_ADM_RUNNING);
  if (!st) return PAWL_ESTORE;
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    const char *owner = (const char *)sqlite3_column_text(st, 0);
    if (cb(owner ? owner : "", sqlite3_column_int64(st, 1), data)) {
      sqlite3_reset(st);
      return pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
    }
  }
  int err = rc == SQLITE_DONE ? 0 : sq_fail(s, rc, "count running jobs");
  sqlite3_reset(st);
  return err;
}

/* ---- top (store.h, "top") -------------------------------------------------- */

static int sq_top_throughput(store_t *base, int64_t since, store_tp_cb cb,
                             void *data) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_TOP_TP);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_int64(st, 1, since);
  int rc, err = 0;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    const char *q = (const char *)sqlite3_column_text(st, 2);
    if (!q || cb(sqlite3_column_int64(st, 0), sqlite3_column_int(st, 1), q,
                 sqlite3_column_int64(st, 3), data)) {
      err = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
      break;
    }
  }
  if (!err && rc != SQLITE_DONE) err = sq_fail(s, rc, "read throughput");
  sqlite3_reset(st);
  return err;
}

static int sq_top_running(store_t *base, int limit, pawl_job_cb cb,
                          void *data) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_TOP_RUNNING);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_int(st, 1, limit);
  return sq_list_rows(s, st, cb, data);
}

/* ---- recurring definitions (store.h, "recurring") ------------------------- */

static void sq_rec_bind(sqlite3_stmt *st, const pawl_recurring_t *d) {
  sqlite3_bind_text(st, 1, d->name, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 2, d->expr, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 3, d->tz ? d->tz : "UTC", -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 4, pawl_misfire_name(d->misfire), -1, SQLITE_STATIC);
  sqlite3_bind_int(st, 5, d->catch_up_limit);
  sqlite3_bind_text(st, 6, d->type, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 7, d->payload ? d->payload : "{}", -1, SQLITE_STATIC);
  sq_bind_text(st, 8, d->queue);
  sqlite3_bind_int(st, 9, d->priority);
  sqlite3_bind_int(st, 10, d->max_attempts);
  sqlite3_bind_int(st, 11, d->timeout_s);
  sqlite3_bind_int(st, 12, d->enabled ? 1 : 0);
  sqlite3_bind_int(st, 13, d->paused ? 1 : 0);
  sqlite3_bind_text(st, 14, d->from_script ? "script" : "operator", -1,
                    SQLITE_STATIC);
  sq_bind_text(st, 15, d->script);
  sq_bind_opt_int(st, 16, d->next_fire_at);
}

static int sq_rec_put(store_t *base, const pawl_recurring_t *d, int how,
                      int *done) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st =
      sq_stmt(s, how == STORE_REC_SCRIPT ? SQ_REC_PUT_SCRIPT : SQ_REC_ADD);
  if (!st) return PAWL_ESTORE;
  sq_rec_bind(st, d);
  sqlite3_bind_int64(st, 17, pawl__store_now(base));
  int rc = sq_exec_write(s, st, "write recurring definition");
  if (rc) return rc;
  *done = sqlite3_changes(s->db) == 1;
  if (!*done && how == STORE_REC_ADD)
    return pawl__store_fail(base, PAWL_EKEY,
                            "recurring definition \"%s\" already exists",
                            d->name);
  return 0;
}

/* Reads the rows of a bound statement into an array. */
static int sq_rec_rows(sq_store_t *s, sqlite3_stmt *st, pawl_recurring_t **out,
                       size_t *n) {
  pawl_recurring_t *defs = NULL;
  size_t count = 0;
  int rc, err = 0;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    pawl_recurring_t *d = pawl__store_push((void **)&defs, &count, sizeof *d);
    store_row_t r = sq_row(st);
    if (!d || pawl__store_rec_fill(d, &r) != 0) {
      err = pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
      break;
    }
  }
  if (!err && rc != SQLITE_DONE) err = sq_fail(s, rc, "read recurring definitions");
  sqlite3_reset(st);
  if (err) {
    pawl_recurring_free(defs, count);
    return err;
  }
  *out = defs;
  *n = count;
  return 0;
}

static int sq_rec_get(store_t *base, const char *name,
                      pawl_recurring_t **out) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_REC_GET);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
  pawl_recurring_t *d = NULL;
  size_t n = 0;
  int rc = sq_rec_rows(s, st, &d, &n);
  if (rc) return rc;
  if (n == 0)
    return pawl__store_fail(base, PAWL_ENOTFOUND,
                            "no recurring definition \"%s\"", name);
  *out = d;
  return 0;
}

static int sq_rec_list(store_t *base, pawl_recurring_t **out, size_t *n) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_REC_LIST);
  if (!st) return PAWL_ESTORE;
  return sq_rec_rows(s, st, out, n);
}

static int sq_rec_update(store_t *base, const pawl_recurring_t *d,
                         int *changed) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_REC_UPDATE);
  if (!st) return PAWL_ESTORE;
  sq_rec_bind(st, d);
  sq_bind_opt_int(st, 17, d->last_fire_at);
  if (d->has_last_job)
    sq_bind_id(st, 18, &d->last_job_id);
  else
    sqlite3_bind_null(st, 18);
  sqlite3_bind_int64(st, 19, pawl__store_now(base));
  sqlite3_bind_int64(st, 20, d->version);
  int rc = sq_exec_write(s, st, "change recurring definition");
  if (!rc) *changed = sqlite3_changes(s->db) == 1;
  return rc;
}

static int sq_rec_remove(store_t *base, const char *name) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_REC_REMOVE);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
  int rc = sq_exec_write(s, st, "remove recurring definition");
  if (!rc && sqlite3_changes(s->db) == 0)
    rc = pawl__store_fail(base, PAWL_ENOTFOUND,
                          "no recurring definition \"%s\"", name);
  return rc;
}

static int sq_rec_due(store_t *base, int64_t now, size_t max,
                      pawl_recurring_t **out, size_t *n) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_REC_DUE);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_int64(st, 1, now);
  sqlite3_bind_int64(st, 2, (int64_t)max);
  return sq_rec_rows(s, st, out, n);
}

/* One definition's advance, inside the caller's transaction. */
static int sq_rec_advance_one(sq_store_t *s, store_rec_advance_t *a,
                              int64_t now) {
  sqlite3_stmt *st = sq_stmt(s, SQ_REC_ADVANCE);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_text(st, 1, a->name, -1, SQLITE_STATIC);
  sq_bind_opt_int(st, 2, a->next);
  sq_bind_opt_int(st, 3, a->last_fire);
  sqlite3_bind_int64(st, 4, now);
  sqlite3_bind_int64(st, 5, a->expect_next);
  int rc = sq_exec(s, st, "advance recurring definition");
  if (rc) return rc;
  a->advanced = sqlite3_changes(s->db) == 1;
  a->made = 0;
  if (!a->advanced || a->njobs == 0) return 0;
  pawl_id_t id;
  for (size_t i = 0; i < a->njobs; i++) {
    int status;
    if ((rc = sq_insert_one(s, &a->jobs[i], now, NULL, &id, &status)))
      return rc;
    if (status == PAWL_ENQ_NEW) a->made++;
  }
  st = sq_stmt(s, SQ_REC_LAST_JOB);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_text(st, 1, a->name, -1, SQLITE_STATIC);
  sq_bind_id(st, 2, &id);
  return sq_exec(s, st, "record the last job of a recurring definition");
}

static int sq_rec_advance(store_t *base, store_rec_advance_t *a, size_t n) {
  sq_store_t *s = (sq_store_t *)base;
  if (n == 0) return 0;
  int rc = sq_begin(s);
  int64_t now = rc ? 0 : pawl__store_now(base); /* under the write lock */
  for (size_t i = 0; i < n && !rc; i++) rc = sq_rec_advance_one(s, &a[i], now);
  rc = sq_end(s, rc);
  if (rc)
    for (size_t i = 0; i < n; i++) a[i].advanced = 0, a[i].made = 0;
  return rc;
}

static int sq_rec_disable_gone(store_t *base, const char *const *scripts,
                               size_t n, int listed, size_t *count) {
  sq_store_t *s = (sq_store_t *)base;
  pawl_buf_t b;
  pawl__buf_init(&b);
  pawl__buf_putc(&b, '[');
  for (size_t i = 0; i < n; i++) {
    if (i) pawl__buf_putc(&b, ',');
    pawl__buf_json_string(&b, scripts[i], strlen(scripts[i]));
  }
  pawl__buf_putc(&b, ']');
  if (b.oom) {
    pawl__buf_free(&b);
    return pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
  }
  sqlite3_stmt *st =
      sq_stmt(s, listed ? SQ_REC_DISABLE_LISTED : SQ_REC_DISABLE_GONE);
  int rc = PAWL_ESTORE;
  if (st) {
    sqlite3_bind_text(st, 1, pawl__buf_cstr(&b), -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, pawl__store_now(base));
    rc = sq_exec_write(s, st, "disable recurring definitions");
    if (!rc && count) *count = (size_t)sqlite3_changes(s->db);
  }
  pawl__buf_free(&b);
  return rc;
}

static int sq_rec_load_error(store_t *base, const char *script,
                             const char *error) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_REC_LOAD_ERROR);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_text(st, 1, script, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 2, error, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 3, pawl__store_now(base));
  return sq_exec_write(s, st, "note a script's load error");
}

/* ---- batches (schema/sqlite/V010__batch.sql) ------------------------------ */

/* One success of a child of batch `v` (a 16-byte blob) in this finish; -1
 * when out of memory. Batches are few per finish: the last one first. */
static int sq_batch_note(sq_store_t *s, sqlite3_value *v) {
  if (sqlite3_value_bytes(v) != 16) return 0; /* not a pawl id: ignore */
  const void *blob = sqlite3_value_blob(v);
  if (!blob) return -1;
  for (size_t i = s->nbn; i-- > 0;)
    if (memcmp(s->bn[i].id.bytes, blob, 16) == 0) {
      s->bn[i].n++;
      return 0;
    }
  if (s->nbn == s->bncap) {
    size_t cap = s->bncap ? s->bncap * 2 : 4;
    struct sq_bn *g = pawl__realloc(s->bn, cap * sizeof *g);
    if (!g) return -1;
    s->bn = g;
    s->bncap = cap;
  }
  memcpy(s->bn[s->nbn].id.bytes, blob, 16);
  s->bn[s->nbn++].n = 1;
  return 0;
}

/* Adds to the counters of batch `id` (or, with by_job, of job id's batch,
 * if any); the trigger pawl_batches_fire fires the callbacks when this
 * completes the count. SQLite's one writer makes each such update see
 * every earlier one: only one can find finished_at still NULL. */
static int sq_batch_count(sq_store_t *s, int stmt, const pawl_id_t *id,
                          int64_t ds, int64_t df, int64_t dc, int64_t now) {
  sqlite3_stmt *st = sq_stmt(s, stmt);
  if (!st) return PAWL_ESTORE;
  sq_bind_id(st, 1, id);
  sqlite3_bind_int64(st, 2, ds);
  sqlite3_bind_int64(st, 3, df);
  sqlite3_bind_int64(st, 4, dc);
  sqlite3_bind_int64(st, 5, now);
  return sq_exec(s, st, "count the batch's children");
}

static int sq_batch_count_job(sq_store_t *s, const pawl_id_t *id, int64_t ds,
                              int64_t df, int64_t dc, int64_t now) {
  return sq_batch_count(s, SQ_BATCH_COUNT_JOB, id, ds, df, dc, now);
}

/* The finish's successes noted by sq_batch_note(): one UPDATE per batch. */
static int sq_batch_flush(sq_store_t *s, int64_t now) {
  int rc = 0;
  for (size_t i = 0; i < s->nbn && !rc; i++)
    rc = sq_batch_count(s, SQ_BATCH_COUNT, &s->bn[i].id, s->bn[i].n, 0, 0,
                        now);
  s->nbn = 0;
  return rc;
}

/* The batch of b->ident, if one was made: *found = 1 and its id and its
 * children's into b->found_id, b->found_ids (in the caller's
 * transaction). One with another number of children than `n` (another
 * call, or children retention removed) is PAWL_ECONFLICT. */
static int sq_batch_find(sq_store_t *s, const store_batch_new_t *b, size_t n,
                         int *found) {
  sqlite3_stmt *st = sq_stmt(s, SQ_BATCH_FIND);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_text(st, 1, b->ident, -1, SQLITE_STATIC);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_DONE) {
    sqlite3_reset(st);
    return 0;
  }
  if (rc != SQLITE_ROW) {
    sqlite3_reset(st);
    return sq_fail(s, rc, "find the batch");
  }
  pawl_id_t id;
  sq_col_id(st, 0, &id);
  int64_t total = sqlite3_column_int64(st, 1);
  sqlite3_reset(st);
  char text[PAWL_ID_STRLEN];
  pawl_id_format(&id, text);
  if (total != (int64_t)n)
    return pawl__store_fail(&s->base, PAWL_ECONFLICT,
                            "batch %s was made under the identity \"%.200s\" "
                            "with %lld jobs; this call has %zu",
                            text, b->ident, (long long)total, n);
  if (!(st = sq_stmt(s, SQ_BATCH_CHILDREN))) return PAWL_ESTORE;
  sq_bind_id(st, 1, &id);
  size_t k = 0;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW)
    if (k < n) sq_col_id(st, 0, &b->found_ids[k++]);
  sqlite3_reset(st);
  if (rc != SQLITE_DONE) return sq_fail(s, rc, "read the batch's jobs");
  if (k != n)
    return pawl__store_fail(&s->base, PAWL_ECONFLICT,
                            "batch %s made under the identity \"%.200s\" "
                            "has %zu of its %zu jobs left",
                            text, b->ident, k, n);
  *b->found_id = id;
  *b->found = *found = 1;
  return 0;
}

static int sq_batch_create(store_t *base, const store_batch_new_t *b,
                           const store_new_job_t *jobs, size_t n) {
  sq_store_t *s = (sq_store_t *)base;
  int rc = sq_begin(s);
  if (rc) return rc;
  int64_t now = pawl__store_now(base); /* under the write lock */
  if (b->ident) {
    int found = 0;
    rc = sq_batch_find(s, b, n, &found);
    if (rc || found) return sq_end(s, rc);
  }
  sqlite3_stmt *st = sq_stmt(s, SQ_BATCH_ADD);
  if (!st) return sq_end(s, PAWL_ESTORE);
  sq_bind_id(st, 1, &b->id);
  sqlite3_bind_int64(st, 2, (int64_t)n);
  sq_bind_text(st, 3, b->enqueued_by);
  sqlite3_bind_int64(st, 4, now);
  sq_bind_text(st, 5, b->ident);
  rc = sq_exec(s, st, "record the batch");
  for (int r = 0; r < 3 && !rc; r++) {
    const store_new_job_t *c = b->callbacks[r];
    if (!c) continue;
    if (!(st = sq_stmt(s, SQ_BATCH_CB_ADD))) {
      rc = PAWL_ESTORE;
      break;
    }
    sq_bind_id(st, 1, &c->id);
    sq_bind_id(st, 2, &b->id);
    sqlite3_bind_int(st, 3, r + 1);
    sqlite3_bind_text(st, 4, c->type, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 5, c->queue ? c->queue : "default", -1,
                      SQLITE_STATIC);
    sqlite3_bind_int(st, 6, c->priority);
    sqlite3_bind_text(st, 7, c->payload ? c->payload : "{}", -1,
                      SQLITE_STATIC);
    sqlite3_bind_text(st, 8, c->tags ? c->tags : "[]", -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 9, c->max_attempts);
    sqlite3_bind_int(st, 10, c->timeout_s);
    sq_bind_text(st, 11, c->correlation_id);
    sq_bind_text(st, 12, c->enqueued_by);
    rc = sq_exec(s, st, "record a callback");
  }
  for (size_t i = 0; i < n && !rc; i++) {
    pawl_id_t id;
    int status;
    rc = sq_insert_one(s, &jobs[i], now, NULL, &id, &status);
  }
  return sq_end(s, rc);
}

static int sq_batch_get(store_t *base, const pawl_id_t *id, int64_t now,
                        pawl_batch_t *out) {
  sq_store_t *s = (sq_store_t *)base;
  pawl_batch_t b;
  memset(&b, 0, sizeof b);
  b.id = *id;
  /* One read transaction: the counters and the children agree. */
  int rc = sqlite3_exec(s->db, "BEGIN", 0, 0, 0);
  if (rc != SQLITE_OK) return sq_fail(s, rc, "begin read");
  sqlite3_stmt *st = sq_stmt(s, SQ_BATCH_GET);
  rc = st ? 0 : PAWL_ESTORE;
  if (!rc) {
    sq_bind_id(st, 1, id);
    int step = sqlite3_step(st);
    if (step == SQLITE_ROW) {
      b.total = sqlite3_column_int64(st, 0);
      b.succeeded = sqlite3_column_int64(st, 1);
      b.failed = sqlite3_column_int64(st, 2);
      b.canceled = sqlite3_column_int64(st, 3);
      b.created_at = sqlite3_column_int64(st, 4);
      b.finished_at = sqlite3_column_int64(st, 5);
    } else if (step == SQLITE_DONE) {
      char text[PAWL_ID_STRLEN];
      pawl_id_format(id, text);
      rc = pawl__store_fail(base, PAWL_ENOTFOUND, "no batch %s", text);
    } else {
      rc = sq_fail(s, step, "read batch");
    }
    sqlite3_reset(st);
  }
  if (!rc && !(st = sq_stmt(s, SQ_BATCH_CBS))) rc = PAWL_ESTORE;
  if (!rc) {
    sq_bind_id(st, 1, id);
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
      int role = sqlite3_column_int(st, 0);
      if (role < 1 || role > 3) continue;
      pawl_batch_callback_t *c = &b.callbacks[role - 1];
      c->set = 1;
      sq_col_id(st, 1, &c->id);
      c->fired_at = sqlite3_column_int64(st, 2);
    }
    if (step != SQLITE_DONE) rc = sq_fail(s, step, "read callbacks");
    sqlite3_reset(st);
  }
  int64_t life_ended = 0, exec_ended = 0;
  if (!rc && !(st = sq_stmt(s, SQ_BATCH_STATES))) rc = PAWL_ESTORE;
  if (!rc) {
    sq_bind_id(st, 1, id);
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
      int state = sqlite3_column_int(st, 0);
      if (state >= 0 && state < PAWL_STATE_COUNT)
        b.states[state] = sqlite3_column_int64(st, 1);
      int64_t ran = sqlite3_column_int64(st, 2);
      b.exec_ms += ran;
      exec_ended += ran; /* successes: ended */
      life_ended += sqlite3_column_int64(st, 3);
    }
    if (step != SQLITE_DONE) rc = sq_fail(s, step, "read children");
    sqlite3_reset(st);
  }
  if (!rc && !(st = sq_stmt(s, SQ_BATCH_ATTEMPTS))) rc = PAWL_ESTORE;
  if (!rc) {
    sq_bind_id(st, 1, id);
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
      int64_t ran = sqlite3_column_int64(st, 1);
      b.exec_ms += ran;
      if (sqlite3_column_int(st, 0)) exec_ended += ran;
    }
    if (step != SQLITE_DONE) rc = sq_fail(s, step, "read attempts");
    sqlite3_reset(st);
  }
  sqlite3_exec(s->db, "COMMIT", 0, 0, 0);
  if (rc) return rc;
  b.wall_ms = (b.finished_at ? b.finished_at : now) - b.created_at;
  if (b.wall_ms < 0) b.wall_ms = 0;
  b.overhead_ms = life_ended - exec_ended;
  *out = b;
  return 0;
}

static int sq_batch_of(store_t *base, const pawl_id_t *id, pawl_id_t *batch,
                       int *role) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_BATCH_OF);
  if (!st) return PAWL_ESTORE;
  sq_bind_id(st, 1, id);
  int step = sqlite3_step(st);
  *role = -1;
  if (step == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
    sq_col_id(st, 0, batch);
    *role = PAWL_BATCH_CHILD;
  }
  sqlite3_reset(st);
  if (step != SQLITE_ROW && step != SQLITE_DONE)
    return sq_fail(s, step, "read the job's batch");
  if (*role >= 0) return 0;
  if (!(st = sq_stmt(s, SQ_BATCH_OF_CB))) return PAWL_ESTORE;
  sq_bind_id(st, 1, id);
  step = sqlite3_step(st);
  if (step == SQLITE_ROW) {
    sq_col_id(st, 0, batch);
    *role = sqlite3_column_int(st, 1);
  }
  sqlite3_reset(st);
  if (step != SQLITE_ROW && step != SQLITE_DONE)
    return sq_fail(s, step, "read the job's batch");
  return 0;
}
/* ---- dependencies ------------------------------------------------------ */

/* Job `id`, just ended by an operator transition (cancel, expire): noted
 * if it has children to release. */
static int sq_deps_note_id(sq_store_t *s, const pawl_id_t *id) {
  sqlite3_stmt *st = sq_stmt(s, SQ_DEPS_OPEN_SEQ);
  if (!st) return PAWL_ESTORE;
  sq_bind_id(st, 1, id);
  int step = sqlite3_step(st);
  if (step == SQLITE_ROW) sq_deps_note(s, sqlite3_column_int64(st, 0));
  sqlite3_reset(st);
  if (step != SQLITE_ROW && step != SQLITE_DONE)
    return sq_fail(s, step, "find a job's children");
  return 0;
}

/* Moves the blocked job `id`, whose parents have all ended, out of
 * `blocked` through an operator transition (its event, and for a cancel
 * the throughput count and the note that releases its own children):
 * pending when `unmet` is 0, else canceled with the first parent whose
 * condition failed as the reason. */
static int sq_deps_settle(sq_store_t *s, const pawl_id_t *id, int64_t unmet,
                          int64_t now) {
  if (!unmet)
    return pawl__store_transition_in(&s->base, &sq_transition_steps, now, id,
                                     STORE_OP_UNBLOCK, "pawl",
                                     "its parents ended as it asks", -1);
  char why[200] = "dependency not met";
  sqlite3_stmt *st = sq_stmt(s, SQ_DEPS_WHY);
  if (!st) return PAWL_ESTORE;
  sq_bind_id(st, 1, id);
  int step = sqlite3_step(st);
  if (step == SQLITE_ROW) {
    pawl_id_t pid;
    char text[PAWL_ID_STRLEN];
    sq_col_id(st, 0, &pid);
    pawl_id_format(&pid, text);
    int state = sqlite3_column_int(st, 1);
    snprintf(why, sizeof why, "dependency not met: parent %s %s (when = %s)",
             text,
             state == PAWL_SUCCEEDED ? "succeeded"
             : state == PAWL_FAILED  ? "failed"
                                     : "was canceled",
             (const char *)sqlite3_column_text(st, 2));
  }
  sqlite3_reset(st);
  if (step != SQLITE_ROW && step != SQLITE_DONE)
    return sq_fail(s, step, "find why a job is canceled");
  return pawl__store_transition_in(&s->base, &sq_transition_steps, now, id,
                                   STORE_OP_CANCEL, "pawl", why, -1);
}

/* Releases the children of the jobs noted in this transaction, before it
 * commits: one UPDATE for the whole batch counts their ends in every
 * blocked child (SQLITE_DEPS_RELEASE), one closes them, then each child
 * whose last parent it was is settled (sq_deps_settle()); a child canceled
 * for it is noted in turn, and the loop releases its children next.
 * SQLite's one writer makes each end counted once. */
static int sq_deps_flush(sq_store_t *s) {
  if (s->dep_oom) return pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
  int64_t now = pawl__store_now(&s->base);
  int rc = 0;
  pawl_buf_t js;
  pawl__buf_init(&js);
  struct settle {
    pawl_id_t id;
    int64_t unmet;
  } *ready = NULL;
  size_t nready = 0, cap = 0;
  while (!rc && s->ndep) {
    pawl__buf_reset(&js);
    pawl__buf_putc(&js, '[');
    for (size_t i = 0; i < s->ndep; i++)
      pawl__buf_printf(&js, i ? ",%lld" : "%lld", (long long)s->dep_seq[i]);
    pawl__buf_putc(&js, ']');
    s->ndep = 0;
    if (js.oom) {
      rc = pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
      break;
    }
    sqlite3_stmt *st = sq_stmt(s, SQ_DEPS_RELEASE);
    if (!st) {
      rc = PAWL_ESTORE;
      break;
    }
    sqlite3_bind_text(st, 1, pawl__buf_cstr(&js), -1, SQLITE_STATIC);
    nready = 0;
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
      if (sqlite3_column_int64(st, 1) > 0) continue;
      if (nready == cap) {
        size_t ncap = cap ? cap * 2 : 16;
        struct settle *g = pawl__realloc(ready, ncap * sizeof *g);
        if (!g) {
          step = SQLITE_NOMEM;
          break;
        }
        ready = g;
        cap = ncap;
      }
      sq_col_id(st, 0, &ready[nready].id);
      ready[nready++].unmet = sqlite3_column_int64(st, 2);
    }
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (step == SQLITE_NOMEM) {
      rc = pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
      break;
    }
    if (step != SQLITE_DONE) {
      rc = sq_fail(s, step, "release the children of ended jobs");
      break;
    }
    if (!(st = sq_stmt(s, SQ_DEPS_CLOSE))) {
      rc = PAWL_ESTORE;
      break;
    }
    sqlite3_bind_text(st, 1, pawl__buf_cstr(&js), -1, SQLITE_STATIC);
    rc = sq_exec(s, st, "close ended parents");
    sqlite3_clear_bindings(st);
    for (size_t i = 0; i < nready && !rc; i++)
      rc = sq_deps_settle(s, &ready[i].id, ready[i].unmet, now);
  }
  pawl__free(ready);
  pawl__buf_free(&js);
  if (!rc && s->dep_oom)
    rc = pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
  return rc;
}

/* One edge of the new blocked job j: parent `pid` on condition `cond`.
 * A parent that ended already is counted now (*unmet when its condition
 * failed); one that has not is marked open (*left). */
static int sq_deps_edge(sq_store_t *s, const store_new_job_t *j,
                        const pawl_id_t *pid, const char *cond, int64_t *left,
                        int64_t *unmet) {
  sqlite3_stmt *st = sq_stmt(s, SQ_DEPS_PARENT);
  if (!st) return PAWL_ESTORE;
  sq_bind_id(st, 1, pid);
  sqlite3_bind_text(st, 2, cond, -1, SQLITE_STATIC);
  int step = sqlite3_step(st);
  int state = step == SQLITE_ROW ? sqlite3_column_int(st, 0) : -1;
  int met = step == SQLITE_ROW && sqlite3_column_int(st, 1);
  sqlite3_reset(st);
  if (step == SQLITE_DONE) {
    char text[PAWL_ID_STRLEN];
    pawl_id_format(pid, text);
    return pawl__store_fail(&s->base, PAWL_ENOTFOUND,
                            "unknown parent job %s", text);
  }
  if (step != SQLITE_ROW) return sq_fail(s, step, "read a parent job");
  int ended = state == PAWL_SUCCEEDED || state == PAWL_FAILED ||
              state == PAWL_CANCELED;
  int rc;
  if (ended) {
    *unmet += !met;
  } else {
    (*left)++;
    if (!(st = sq_stmt(s, SQ_DEPS_MARK_OPEN))) return PAWL_ESTORE;
    sq_bind_id(st, 1, pid);
    if ((rc = sq_exec(s, st, "mark a parent job"))) return rc;
  }
  if (!(st = sq_stmt(s, SQ_DEPS_EDGE))) return PAWL_ESTORE;
  sq_bind_id(st, 1, pid);
  sq_bind_id(st, 2, &j->id);
  sqlite3_bind_text(st, 3, cond, -1, SQLITE_STATIC);
  return sq_exec(s, st, "record a dependency");
}

/* Links the new blocked job j to its parents (and `prev`, for a chain);
 * settled at once if they have all ended. */
static int sq_deps_link(sq_store_t *s, const store_new_job_t *j,
                        const pawl_id_t *prev, int64_t now) {
  int64_t left = 0, unmet = 0;
  int rc = 0;
  const char *when = j->when ? j->when : "success";
  for (size_t i = 0; i < j->nafter && !rc; i++)
    rc = sq_deps_edge(s, j, &j->after[i], when, &left, &unmet);
  if (!rc && j->after_prev && prev) {
    int dup = 0;
    for (size_t i = 0; i < j->nafter && !dup; i++)
      dup = memcmp(&j->after[i], prev, sizeof *prev) == 0;
    if (!dup) rc = sq_deps_edge(s, j, prev, "success", &left, &unmet);
  }
  if (rc) return rc;
  sqlite3_stmt *st = sq_stmt(s, SQ_DEPS_COUNTS);
  if (!st) return PAWL_ESTORE;
  sq_bind_id(st, 1, &j->id);
  sqlite3_bind_int64(st, 2, left);
  sqlite3_bind_int64(st, 3, unmet);
  if ((rc = sq_exec(s, st, "count a job's parents"))) return rc;
  return left ? 0 : sq_deps_settle(s, &j->id, unmet, now);
}

/* Runs statement `which` with ?1 the job `id` and ?2 `state` (-1: none). */
static int sq_deps_run(store_t *base, int which, const pawl_id_t *id,
                       int state, const char *what) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, which);
  if (!st) return PAWL_ESTORE;
  sq_bind_id(st, 1, id);
  if (state >= 0) sqlite3_bind_int(st, 2, state);
  return sq_exec(s, st, what);
}

static int sq_deps_uncount(store_t *base, const pawl_id_t *parent,
                           int state) {
  return sq_deps_run(base, SQ_DEPS_UNCOUNT, parent, state,
                     "reopen a retried parent");
}

static int sq_deps_canceled(store_t *base, const pawl_id_t *parent,
                            int state, pawl_id_t **out, size_t *n) {
  sq_store_t *s = (sq_store_t *)base;
  *out = NULL;
  *n = 0;
  sqlite3_stmt *st = sq_stmt(s, SQ_DEPS_CANCELED);
  if (!st) return PAWL_ESTORE;
  sq_bind_id(st, 1, parent);
  sqlite3_bind_int(st, 2, state);
  size_t cap = 0;
  int step, rc = 0;
  while ((step = sqlite3_step(st)) == SQLITE_ROW) {
    if (*n == cap) {
      size_t ncap = cap ? cap * 2 : 8;
      pawl_id_t *g = pawl__realloc(*out, ncap * sizeof *g);
      if (!g) {
        rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
        break;
      }
      *out = g;
      cap = ncap;
    }
    sq_col_id(st, 0, &(*out)[(*n)++]);
  }
  sqlite3_reset(st);
  if (!rc && step != SQLITE_DONE)
    rc = sq_fail(s, step, "find the children a failure canceled");
  if (rc) {
    pawl__free(*out);
    *out = NULL;
    *n = 0;
  }
  return rc;
}

static int sq_deps_recount(store_t *base, const pawl_id_t *child) {
  return sq_deps_run(base, SQ_DEPS_RECOUNT, child, -1, "reopen a child");
}

static int sq_deps_open(store_t *base, const pawl_id_t *parent) {
  return sq_deps_run(base, SQ_DEPS_REOPEN_SELF, parent, -1,
                     "reopen a retried parent");
}

static const store_reopen_steps_t sq_reopen_steps = {
    .uncount = sq_deps_uncount,
    .canceled = sq_deps_canceled,
    .recount = sq_deps_recount,
    .open = sq_deps_open,
};

static int sq_deps_reopen(store_t *base, const pawl_id_t *id, int64_t now,
                          const char *actor) {
  return pawl__store_deps_reopen(base, &sq_transition_steps, &sq_reopen_steps,
                                 id, now, actor);
}

static int sq_deps_list(store_t *base, const pawl_id_t *id, pawl_dep_cb cb,
                        void *data) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_DEPS_LIST);
  if (!st) return PAWL_ESTORE;
  sq_bind_id(st, 1, id);
  /* Read whole before the first call: the callback may use the store. */
  struct row {
    pawl_dep_t d;
    char *type, *when;
  } *rows = NULL;
  size_t n = 0, cap = 0;
  int step, oom = 0;
  while ((step = sqlite3_step(st)) == SQLITE_ROW) {
    if (n == cap) {
      size_t ncap = cap ? cap * 2 : 8;
      struct row *g = pawl__realloc(rows, ncap * sizeof *g);
      if (!g) {
        oom = 1;
        break;
      }
      rows = g;
      cap = ncap;
    }
    struct row *r = &rows[n++];
    memset(r, 0, sizeof *r);
    r->d.parent = sqlite3_column_int(st, 0);
    sq_col_id(st, 1, &r->d.id);
    r->d.state = sqlite3_column_int(st, 3);
    r->type = pawl__strdup((const char *)sqlite3_column_text(st, 2));
    r->when = pawl__strdup((const char *)sqlite3_column_text(st, 4));
    if (!r->type || !r->when) {
      oom = 1;
      break;
    }
  }
  sqlite3_reset(st);
  int rc = oom ? pawl__store_fail(base, PAWL_ENOMEM, "out of memory")
           : step != SQLITE_DONE ? sq_fail(s, step, "list dependencies")
                                 : 0;
  for (size_t i = 0; i < n; i++) {
    rows[i].d.type = rows[i].type;
    rows[i].d.when = rows[i].when;
    if (!rc && cb(&rows[i].d, data)) rc = 1;
  }
  for (size_t i = 0; i < n; i++) {
    pawl__free(rows[i].type);
    pawl__free(rows[i].when);
  }
  pawl__free(rows);
  return rc == 1 ? 0 : rc;
}

/* ---- steps (restartable steps, job instances) --------------------------- */

/* Binds the attempt (?1 job, ?2 token, ?3 attempt) of SQLITE_STEP_HELD. */
static void sq_step_bind_held(sqlite3_stmt *st, const pawl_id_t *id,
                              const pawl_id_t *token, int32_t attempt) {
  sq_bind_id(st, 1, id);
  sq_bind_id(st, 2, token);
  sqlite3_bind_int(st, 3, attempt);
}

/* One text column of the first row of a statement reading by job id ?1,
 * copied into *out (NULL for no row or NULL). */
static int sq_step_text(sq_store_t *s, int stmt, const pawl_id_t *id, int ncol,
                        char **out) {
  sqlite3_stmt *st = sq_stmt(s, stmt);
  if (!st) return PAWL_ESTORE;
  sq_bind_id(st, 1, id);
  int rc = sqlite3_step(st), err = 0;
  for (int c = 0; c < ncol; c++) out[c] = NULL;
  if (rc == SQLITE_ROW) {
    for (int c = 0; c < ncol && !err; c++)
      if (pawl__store_dup(&out[c], (const char *)sqlite3_column_text(st, c)))
        err = pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
  } else if (rc != SQLITE_DONE) {
    err = sq_fail(s, rc, "read steps");
  }
  sqlite3_reset(st);
  return err;
}

static int sq_steps_get(store_t *base, const pawl_id_t *id, pawl_steps_t **out) {
  sq_store_t *s = (sq_store_t *)base;
  *out = NULL;
  /* One read transaction: the rows, the exit and the instance agree. */
  sqlite3_stmt *st = sq_stmt(s, SQ_STEP_READ_BEGIN);
  int rc = st ? sq_exec(s, st, "read steps") : PAWL_ESTORE;
  if (rc) return rc;
  st = sq_stmt(s, SQ_EXISTS);
  if (!st) rc = PAWL_ESTORE;
  if (!rc) {
    sq_bind_id(st, 1, id);
    int r = sqlite3_step(st);
    sqlite3_reset(st);
    if (r == SQLITE_DONE)
      rc = pawl__store_no_job(base, id);
    else if (r != SQLITE_ROW)
      rc = sq_fail(s, r, "read steps");
  }
  pawl_steps_t *out_s = rc ? NULL : pawl__calloc(1, sizeof *out_s);
  if (!rc && !out_s) rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
  if (!rc && !(st = sq_stmt(s, SQ_STEP_LIST))) rc = PAWL_ESTORE;
  if (!rc) {
    sq_bind_id(st, 1, id);
    int r;
    while (!rc && (r = sqlite3_step(st)) == SQLITE_ROW) {
      pawl_step_exec_t *e = pawl__store_step_push(out_s);
      store_row_t row = sq_row(st);
      if (!e || pawl__store_step_fill(e, &row) != 0)
        rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
    }
    if (!rc && r != SQLITE_DONE) rc = sq_fail(s, r, "read steps");
    sqlite3_reset(st);
  }
  char *exit[2] = {NULL, NULL};
  if (!rc) rc = sq_step_text(s, SQ_STEP_EXIT_GET, id, 2, exit);
  if (out_s) {
    out_s->exit_code = exit[0];
    out_s->exit_message = exit[1];
  }
  if (!rc) rc = sq_step_text(s, SQ_STEP_INSTANCE_OF, id, 1, &out_s->instance);
  /* A read: its end cannot lose anything; keep the first error. */
  sqlite3_stmt *end = sq_stmt(s, SQ_COMMIT);
  if (end) {
    sqlite3_step(end);
    sqlite3_reset(end);
  }
  if (!sqlite3_get_autocommit(s->db)) sqlite3_exec(s->db, "ROLLBACK", 0, 0, 0);
  if (rc) {
    pawl_steps_free(out_s);
    return rc;
  }
  *out = out_s;
  return 0;
}

static int sq_step_begin(store_t *base, const pawl_id_t *id,
                         const pawl_id_t *token, int32_t attempt,
                         int32_t index, const char *name,
                         const char *checkpoint, int64_t *exec) {
  sq_store_t *s = (sq_store_t *)base;
  int rc = sq_begin(s);
  if (rc) return rc;
  int64_t now = pawl__store_now(base); /* under the write lock */
  sqlite3_stmt *st = sq_stmt(s, SQ_STEP_BEGIN);
  if (!st) rc = PAWL_ESTORE;
  if (!rc) {
    sq_step_bind_held(st, id, token, attempt);
    sqlite3_bind_int(st, 4, index);
    sqlite3_bind_text(st, 5, name, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 6, now);
    sq_bind_text(st, 7, checkpoint);
    rc = sq_exec(s, st, "begin step");
  }
  if (!rc && sqlite3_changes(s->db) != 1)
    rc = pawl__store_not_held(base, id, attempt);
  int64_t seq = rc ? 0 : sqlite3_last_insert_rowid(s->db);
  if (!rc && !(st = sq_stmt(s, SQ_STEP_LOST))) rc = PAWL_ESTORE;
  if (!rc) {
    sq_bind_id(st, 1, id);
    sqlite3_bind_int64(st, 2, seq);
    sqlite3_bind_int64(st, 3, now);
    rc = sq_exec(s, st, "end lost steps");
  }
  rc = sq_end(s, rc);
  if (!rc) *exec = seq;
  return rc;
}

static void sq_step_bind_counts(sqlite3_stmt *st, int first,
                                const int64_t *counts) {
  for (int k = 0; k < PAWL_STEP_NCOUNTS; k++)
    sqlite3_bind_int64(st, first + k, counts ? counts[k] : 0);
}

/* Runs a bound guarded write: PAWL_ELEASE when it changed no row. */
static int sq_step_write(sq_store_t *s, sqlite3_stmt *st, const pawl_id_t *id,
                         int32_t attempt, const char *what) {
  int rc = sq_exec_write(s, st, what);
  if (rc) return rc;
  return sqlite3_changes(s->db) == 1 ? 0
                                     : pawl__store_not_held(&s->base, id, attempt);
}

static int sq_step_save(store_t *base, const pawl_id_t *id,
                        const pawl_id_t *token, int32_t attempt, int64_t exec,
                        const char *checkpoint, const int64_t *counts) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_STEP_SAVE);
  if (!st) return PAWL_ESTORE;
  sq_step_bind_held(st, id, token, attempt);
  sqlite3_bind_int64(st, 4, exec);
  sq_bind_text(st, 5, checkpoint);
  sqlite3_bind_int64(st, 6, pawl__store_now(base));
  sq_step_bind_counts(st, 7, counts);
  return sq_step_write(s, st, id, attempt, "save checkpoint");
}

static int sq_step_end(store_t *base, const pawl_id_t *id,
                       const pawl_id_t *token, int32_t attempt, int64_t exec,
                       int status, const char *exit_code,
                       const char *exit_message, const int64_t *counts) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_STEP_END);
  if (!st) return PAWL_ESTORE;
  sq_step_bind_held(st, id, token, attempt);
  sqlite3_bind_int64(st, 4, exec);
  sqlite3_bind_int(st, 5, status);
  sqlite3_bind_int64(st, 6, pawl__store_now(base));
  sq_bind_text(st, 7, exit_code);
  sq_bind_text(st, 8, exit_message);
  sq_step_bind_counts(st, 9, counts);
  return sq_step_write(s, st, id, attempt, "end step");
}

static int sq_step_exit(store_t *base, const pawl_id_t *id,
                        const pawl_id_t *token, int32_t attempt,
                        const char *exit_code, const char *exit_message) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_STEP_EXIT);
  if (!st) return PAWL_ESTORE;
  sq_step_bind_held(st, id, token, attempt);
  sqlite3_bind_text(st, 4, exit_code, -1, SQLITE_STATIC);
  sq_bind_text(st, 5, exit_message);
  sqlite3_bind_int64(st, 6, pawl__store_now(base));
  return sq_step_write(s, st, id, attempt, "set exit code");
}

static int sq_instance_find(store_t *base, const char *type, const char *key,
                            pawl_id_t *id, int *state) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_INSTANCE_FIND);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_text(st, 1, type, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) {
    sq_col_id(st, 0, id);
    *state = sqlite3_column_int(st, 1);
  }
  sqlite3_reset(st);
  if (rc == SQLITE_ROW) return 0;
  if (rc == SQLITE_DONE) return PAWL_ENOTFOUND;
  return sq_fail(s, rc, "look up job instance");
}

/* In the insert's transaction, after the job's row (sq_insert_one). */
static int sq_instance_take(sq_store_t *s, const store_new_job_t *j,
                            int64_t now) {
  sqlite3_stmt *st = sq_stmt(s, SQ_INSTANCE_TAKE);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_text(st, 1, j->type, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 2, j->instance_key, -1, SQLITE_STATIC);
  sq_bind_id(st, 3, &j->id);
  sqlite3_bind_int64(st, 4, now);
  int rc = sq_exec(s, st, "record job instance");
  if (rc) return rc;
  if (sqlite3_changes(s->db) == 1) return 0;
  return pawl__store_fail(&s->base, PAWL_ECONFLICT,
                          "job instance %s of %s is held by another job",
                          j->instance_key, j->type);
}

/* ---- retention ------------------------------------------------------------
 * The walk reads pages of rows by seq (the rowid: insert order, no index
 * to keep); the removal is one write transaction per page, a statement per
 * job so that each checks its own row. ON DELETE CASCADE (foreign keys are
 * on) takes the job's attempts, events, logs, steps, exit, instance,
 * signal, replacement links and recorded start; its dependency edges have
 * no foreign key and are deleted here. */

static void sq_ret_name(sqlite3_stmt *st, int col, char *out, size_t len) {
  const char *t = (const char *)sqlite3_column_text(st, col);
  snprintf(out, len, "%s", t ? t : "");
}

static int sq_ret_scan(store_t *base, const store_pick_t *after, size_t max,
                       store_retain_row_t *out, size_t *n) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_RET_SCAN);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_int64(st, 1, after ? after->key : 0);
  sqlite3_bind_int64(st, 2, (int64_t)max);
  size_t k = 0;
  int rc;
  while (k < max && (rc = sqlite3_step(st)) == SQLITE_ROW) {
    store_retain_row_t *r = &out[k++];
    r->pick.key = sqlite3_column_int64(st, 0);
    sq_col_id(st, 1, &r->pick.id);
    r->pick.version = sqlite3_column_int64(st, 2);
    r->state = sqlite3_column_int(st, 3);
    r->created_at = sqlite3_column_int64(st, 4);
    r->finished_at = sqlite3_column_int64(st, 5);
    sq_ret_name(st, 6, r->queue, sizeof r->queue);
    sq_ret_name(st, 7, r->type, sizeof r->type);
  }
  if (k == max) rc = SQLITE_DONE;
  sqlite3_reset(st);
  if (rc != SQLITE_DONE) return sq_fail(s, rc, "scan jobs for retention");
  *n = k;
  return 0;
}

/* Runs statement `id` with the job's id (?1), and version and now when
 * `full`; *changes: rows it changed. */
static int sq_ret_run(sq_store_t *s, int id, const store_retain_row_t *r,
                      int full, int64_t now, const char *what,
                      int *changes) {
  sqlite3_stmt *st = sq_stmt(s, id);
  if (!st) return PAWL_ESTORE;
  sq_bind_id(st, 1, &r->pick.id);
  if (full) {
    sqlite3_bind_int64(st, 2, r->pick.version);
    if (id == SQ_RET_ARCHIVE_JOB) sqlite3_bind_int64(st, 3, now);
  }
  int rc = sq_exec(s, st, what);
  if (!rc && changes) *changes = sqlite3_changes(s->db);
  return rc;
}

static int sq_ret_remove(store_t *base, const store_retain_row_t *rows,
                         size_t n, int archive, int *removed) {
  sq_store_t *s = (sq_store_t *)base;
  for (size_t i = 0; i < n; i++) removed[i] = 0;
  int rc = sq_begin(s);
  if (rc) return rc;
  int64_t now = pawl__store_now(base); /* under the write lock */
  for (size_t i = 0; i < n && !rc; i++) {
    const store_retain_row_t *r = &rows[i];
    int ch = 0;
    if (archive) {
      rc = sq_ret_run(s, SQ_RET_ARCHIVE_JOB, r, 1, now, "archive job", &ch);
      if (rc || !ch) continue; /* not (any more) one to remove */
      if (!(rc = sq_ret_run(s, SQ_RET_ARCHIVE_ATTEMPTS, r, 0, now,
                            "archive attempts", NULL)) &&
          !(rc = sq_ret_run(s, SQ_RET_ARCHIVE_EVENTS, r, 0, now,
                            "archive events", NULL)))
        rc = sq_ret_run(s, SQ_RET_ARCHIVE_LOGS, r, 0, now, "archive logs",
                        NULL);
      if (rc) continue;
    }
    rc = sq_ret_run(s, SQ_RET_DELETE, r, 1, now, "delete job", &ch);
    if (rc) continue;
    if (archive && ch != 1) {
      /* Archived above under the same check in this transaction: the row
       * cannot have changed in between. */
      rc = pawl__store_fail(base, PAWL_ESTORE,
                            "retention: an archived job was not deleted");
      continue;
    }
    if (!ch) continue;
    removed[i] = 1;
    if (!(rc = sq_ret_run(s, SQ_RET_DEPS_PARENT, r, 0, now,
                          "delete dependency edges", NULL)))
      rc = sq_ret_run(s, SQ_RET_DEPS_CHILD, r, 0, now,
                      "delete dependency edges", NULL);
  }
  rc = sq_end(s, rc);
  if (rc)
    for (size_t i = 0; i < n; i++) removed[i] = 0;
  return rc;
}
