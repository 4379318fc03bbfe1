/* pg_store.c: the PostgreSQL backend of the store interface (libpq).
 *
 * One connection per store_t. Every statement is prepared once per
 * connection (on first use, and again after a reconnect) and run with bound
 * parameters in text form. Times cross the wire as epoch milliseconds; the
 * SQL converts (pawl_ms(), pawl_ts()) and takes "now" from the database
 * clock unless a test injected one (pawl_now($n) with the reading bound).
 *
 * Several nodes share one database: claims lock the rows they take with
 * FOR UPDATE SKIP LOCKED, every other write is a compare-and-set on the
 * row's state, lease token, attempt or version, and constraint violations
 * are told apart by SQLSTATE, never by message text.
 *
 * Losing the connection is not fatal. The operation during which it broke
 * fails with PAWL_EUNAVAIL (it may or may not have been committed: a
 * caller retrying it meets the compare-and-set checks, so nothing is
 * written twice); the next operation reconnects first, and fails with
 * PAWL_EUNAVAIL, changing nothing, while the database stays unreachable.
 * The host retries with backoff. Statements that must be
 * atomic together go out in one pipeline (one round trip, one implicit
 * transaction) or inside BEGIN/COMMIT. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libpq-fe.h>

#include "dbstats.h"
#include "alloc.h"
#include "iso8601.h"
#include "buf.h"
#include "pg_admin_sql.h"
#include "pg_recurring_sql.h"
#include "pg_flow_sql.h"
#include "pg_sql.h"
#include "pg_steps_sql.h"
#include "pg_alerts_sql.h"
#include "redact.h"
#include "store.h"

extern const store_migration_t pawl__store_postgres_migrations[];
extern const size_t pawl__store_postgres_migration_count;

/* Enqueues NOTIFY on "pawl_jobs:SCHEMA" (the trigger in V001__init.sql). */
#define PG_CHANNEL "'pawl_jobs:' || current_schema()"

/* Statement ids; their SQL is in pg_sql[]. */
enum {
  PG_IDEM_FIND,
  PG_IDEM_ADD,
  PG_IDEM_DROP,
  PG_BIZ_FIND,
  PG_INSERT,
  PG_GET,
  PG_GET_LOCKED,
  PG_LIST,
  PG_LIST_FAILED,
  PG_CLAIM,
  PG_CLAIM_QUEUE,
  PG_CLAIM_QUEUES,
  PG_SUCCEED_MANY,
  PG_END_ATTEMPT,
  PG_LOG_MANY,
  PG_ATTEMPT_ADD,
  PG_EVENT_ADD,
  PG_EXTEND,
  PG_EXPIRED,
  PG_CRASHED,
  PG_START,
  PG_RUN_START,
  PG_AHEAD,
  PG_FORGET_START,
  PG_TRANSITION,
  PG_ATTEMPTS,
  PG_EVENTS,
  PG_LOCK_ACQUIRE,
  PG_LOCK_EXTEND,
  PG_LOCK_RELEASE,
  PG_NODE_BEAT,
  PG_NODE_LIST,
  PG_NODE_REAP,
  PG_NODE_STOP,
  PG_SETTING_GET,
  PG_SETTING_SET,
  PG_RERANK,
  PG_PROGRESS,
  PG_EXISTS,
  PG_LOGS,
  PG_EXTEND_ONE,
  PG_NEXT_DUE,
  PG_CLAIM_PREPARE,
  PG_NEXT_DUE_QUEUE,
  PG_NEXT_DUE_QUEUES,
  PG_NOTIFY,
  /* administration: see the section at the end of this file */
  PG_ADM_COUNT_ST,
  PG_ADM_COUNT_FAILED_ST,
  PG_ADM_PICK_ST,
  PG_ADM_PICK_FAILED_ST,
  PG_ADM_LIST_ST,
  PG_ADM_STATS_PENDING_ST,
  PG_ADM_STATS_RUNNING_ST,
  PG_ADM_STATS_DONE_ST,
  PG_ADM_STATS_TP_ST,
  PG_MET_TP_ST,
  PG_TP_ADD,
  PG_TP_TRIM,
  PG_ADM_RUNNING_ST,
  PG_ADM_LOCKS_ST,
  /* recurring definitions: see the section at the end of this file */
  PG_REC_ADD,
  PG_REC_PUT_SCRIPT,
  PG_REC_GET,
  PG_REC_LIST,
  PG_REC_UPDATE,
  PG_REC_REMOVE,
  PG_REC_DUE,
  PG_REC_ADVANCE,
  PG_REC_KEYS,
  PG_REC_LAST_JOB,
  PG_REC_DISABLE_GONE,
  PG_REC_DISABLE_LISTED,
  PG_REC_LOAD_ERROR,
  /* queues: see the section "queues" */
  PG_QUEUE_BOOSTS,
  PG_QUEUE_PAUSE,
  PG_QUEUE_RESUME,
  PG_QUEUE_SET_BOOST,
  PG_QUEUE_LIST,
  /* limits: see "limits" below */
  PG_CLAIM_LIM_PICK,   /* same order as PG_CLAIM, _QUEUE, _QUEUES */
  PG_CLAIM_LIM_PICK_QUEUE,
  PG_CLAIM_LIM_PICK_QUEUES,
  PG_CLAIM_LIM_LANES, /* same order again */
  PG_CLAIM_LIM_LANES_QUEUE,
  PG_CLAIM_LIM_LANES_QUEUES,
  PG_CLAIM_LANES, /* same order as PG_CLAIM, _QUEUE, _QUEUES */
  PG_CLAIM_LANES_QUEUE,
  PG_CLAIM_LANES_QUEUES,
  PG_CLAIM_LIM_TAKE,
  PG_LIMITS_ANY,
  PG_LIMITS_LOCK,
  PG_LIMITS_RUNNING,
  PG_LIMITS_READ,
  PG_LIMITS_WINDOWS,
  PG_LIMIT_SET,
  PG_LIMIT_REMOVE,
  PG_LIMIT_LIST,
  PG_TYPES_SYNC, /* pawl_types */
  PG_TYPE_REDACT,
  PG_NEXT_DUE_LIM,
  PG_NEXT_DUE_LIM_RES,
  PG_NEXT_DUE_LIM_QUEUE,
  /* signals and replace (pg_flow_sql.h) */
  PG_SIG_RELEASE,
  PG_SIG_HOLDER,
  PG_SIG_NEXT,
  PG_SIG_ADD,
  PG_SIG_DELIVER,
  PG_SIG_GET,
  PG_SIG_DUE,
  PG_SIG_EXPIRE,
  PG_REP_ADD,
  PG_REP_CARRY,
  PG_REP_INSTANCE,
  PG_REP_BATCH,
  PG_REP_LEAVE,
  PG_REP_NEXT,
  PG_REP_PREV,
  /* batches: see the section "batches" */
  PG_BATCH_ADD,
  PG_BATCH_CB_ADD,
  PG_BATCH_COUNT_JOB,
  PG_BATCH_GET,
  PG_BATCH_CBS,
  PG_BATCH_STATES,
  PG_BATCH_ATTEMPTS,
  PG_BATCH_OF,
  PG_BATCH_OF_CB,
  PG_BATCH_FIND,
  PG_BATCH_CHILDREN,
  /* dependencies: see the section "dependencies" */
  PG_DEPS_RELEASE,
  PG_DEPS_LINK,
  PG_DEPS_LOCK_KIDS,
  PG_DEPS_UNCOUNT,
  PG_DEPS_CANCELED,
  PG_DEPS_RECOUNT,
  PG_DEPS_REOPEN_SELF,
  PG_DEPS_BRANCHES,
  PG_DEPS_LIST,
  PG_DEPS_HAND_LOCK,
  PG_DEPS_HAND_OVER,
  PG_DEPS_TAKE_OVER,
  /* steps and instances: see the section "steps" */
  PG_STEP_LIST_Q,
  PG_STEP_JOB_Q,
  PG_STEP_BEGIN_Q,
  PG_STEP_SAVE_Q,
  PG_STEP_END_Q,
  PG_STEP_EXIT_Q,
  PG_INSTANCE_FIND_Q,
  PG_INSTANCE_TAKE_Q,
  /* pawl top: see the section "top" */
  PG_TOP_TP_Q,
  PG_TOP_RUNNING_Q,
  /* dead-letter alerts (pg_alerts_sql.h) */
  PG_ALERT_ROLL_Q,
  PG_ALERT_TAKE_Q,
  PG_ALERT_GET_Q,
  PG_ALERT_WINDOW_Q,
  PG_ALERT_VERDICT_Q,
  PG_ALERT_DONE_Q,
  /* retention: the section "retention" at the end */
  PG_RET_SCAN,
  PG_RET_DELETE,
  PG_RET_ARCHIVE,
  PG_COUNT
};

static const char *const pg_sql[PG_COUNT] = {
    [PG_IDEM_FIND] = "SELECT job_id FROM pawl_idempotency WHERE key = $1::text",
    /* Unique forever: a second holder of the key finds the first one's row
     * (after waiting for its transaction, if it is not committed yet). */
    [PG_IDEM_ADD] = "INSERT INTO pawl_idempotency (key, job_id, created_at) "
                    "VALUES ($1::text, $2::uuid, pawl_now($3::bigint)) "
                    "ON CONFLICT (key) DO NOTHING",
    /* Takes back a key claimed above when no job was made under it. */
    [PG_IDEM_DROP] = "DELETE FROM pawl_idempotency WHERE key = $1::text AND "
                     "job_id = $2::uuid",
    [PG_BIZ_FIND] = "SELECT id FROM pawl_jobs WHERE business_key = $1::text "
                    "AND state IN (0, 1, 5, 6)",
    [PG_INSERT] = PG_SQL_INSERT,
    [PG_GET] = "SELECT " PG_JOB_COLS " FROM pawl_jobs AS j WHERE j.id = $1::uuid",
    [PG_GET_LOCKED] = "SELECT " PG_JOB_COLS " FROM pawl_jobs AS j WHERE "
                      "j.id = $1::uuid FOR UPDATE",
    [PG_LIST] = "SELECT " PG_JOB_COLS " FROM pawl_jobs AS j WHERE "
                "($1::smallint IS NULL OR j.state = $1::smallint) AND "
                "($2::text IS NULL OR j.queue = $2::text) AND "
                "($3::text IS NULL OR j.type = $3::text) "
                "ORDER BY j.id DESC LIMIT $4::int",
    /* The dead-letter set has its own index; list it through that. */
    [PG_LIST_FAILED] = "SELECT " PG_JOB_COLS " FROM pawl_jobs AS j WHERE "
                       "j.state = 3 AND ($2::text IS NULL OR j.queue = "
                       "$2::text) AND ($3::text IS NULL OR j.type = $3::text) "
                       /* $1 is the state filter, 3 here: bound like
                        * PG_LIST's so both take the same parameters. */
                       "AND $1::smallint = 3 "
                       "ORDER BY j.id DESC LIMIT $4::int",
    [PG_CLAIM] = PG_SQL_CLAIM,
    [PG_CLAIM_QUEUE] = PG_SQL_CLAIM_QUEUE,
    [PG_CLAIM_QUEUES] = PG_SQL_CLAIM_QUEUES,
    [PG_SUCCEED_MANY] = PG_SQL_SUCCEED_MANY,
    /* Ends a running attempt other than by success, in one statement: the
     * attempt row and the event come from the row as it was, then the row
     * moves on. With a token ($5) only the holder's attempt $6 matches, which
     * is how a stale outcome is detected (no row returned).
     * $1 now, $2 id, $3 attempt outcome, $4 attempt error, $5 token,
     * $6 attempt, $7 new state, $8 event reason, $9 run_at (NULL: now),
     * $10 attempts given back (0 or 1), $11 age boost, $12 last error (NULL:
     * keep), $13 recoveries added (0 or 1), $14 ordering_skip of a requeue
     * (a retry under ordering = "skip_failed"; a recovery keeps it), $15
     * and $16 the body's start and end as its worker measured them (NULL:
     * not measured: the claim's time and now), $17 the attempt's traceback
     * (NULL: none). A job
     * that fails for good ($7 = 3) is added to its throughput bucket, and
     * to its batch's counters if it has one. */
    [PG_END_ATTEMPT] =
        "WITH cur AS (SELECT id, queue, attempt, lease_owner, run_at, "
        "started_at, batch_id FROM pawl_jobs AS j WHERE j.id = $2::uuid AND "
        PG_RUNNING_BY_ID
        " AND ($5::uuid IS NULL OR (j.lease_token = $5::uuid AND j.attempt = "
        "$6::int)) FOR UPDATE), "
        "att AS (INSERT INTO pawl_attempts (job_id, attempt, node, "
        "scheduled_at, started_at, ended_at, outcome, error, trace) SELECT "
        "id, attempt, lease_owner, run_at, "
        PG_SQL_RUN_START("$15::bigint", "pawl_now($1::bigint)") ", "
        PG_SQL_RUN_END("$15::bigint", "$16::bigint", "pawl_now($1::bigint)")
        ", $3::text, $4::text, $17::text FROM cur AS j), "
        "ev AS (INSERT INTO pawl_events (job_id, at, from_state, to_state, "
        "actor, reason, attempt) SELECT id, pawl_now($1::bigint), 1, "
        "$7::smallint, lease_owner, $8::text, attempt FROM cur), "
        /* A job failing for good counts in its throughput bucket. */
        "tp AS (INSERT INTO pawl_throughput (minute, state, queue, count) "
        "SELECT " PG_SQL_TP_MINUTE ", 3, queue, 1 FROM cur WHERE "
        "$7::smallint = 3" PG_SQL_TP_UPSERT "), "
        /* A child failing for good counts in its batch. */
        "bt AS (UPDATE pawl_batches AS bb SET failed = bb.failed + 1, "
        "updated_at = pawl_now($1::bigint) FROM cur WHERE $7::smallint = 3 "
        "AND bb.id = cur.batch_id) "
        "UPDATE pawl_jobs AS j SET state = $7::smallint, run_at = CASE WHEN "
        "$7::smallint = 0 THEN coalesce(pawl_ts($9::bigint), "
        "pawl_now($1::bigint)) ELSE j.run_at END, rank = CASE WHEN "
        "$7::smallint = 0 THEN pawl_rank(j.priority, coalesce(pawl_ts("
        "$9::bigint), pawl_now($1::bigint)), " PG_SQL_QUEUE_BOOST("$11::bigint")
        ") ELSE j.rank END, "
        "attempt = j.attempt - $10::int, last_error = coalesce($12::text, "
        "j.last_error), finished_at = CASE WHEN $7::smallint = 3 THEN "
        "pawl_now($1::bigint) ELSE j.finished_at END, recoveries = "
        "j.recoveries + $13::int, updated_at = pawl_now($1::bigint), "
        "ordering_skip = CASE WHEN $7::smallint = 0 AND $13::int = 0 THEN "
        "$14::boolean ELSE j.ordering_skip END, "
        "lease_expires = NULL, version = j.version + 1 FROM cur WHERE "
        "j.id = cur.id RETURNING j.id",
    /* Log lines of a batch of outcomes: $1 now, then one array per column
     * ($4 at: NULL for "the time of the finish"). Lines of a job that is
     * gone (deleted by retention) are dropped instead of failing the batch. */
    [PG_LOG_MANY] =
        "INSERT INTO pawl_logs (job_id, attempt, at, level, message, fields) "
        "SELECT l.job_id, l.attempt, coalesce(pawl_ts(l.at), "
        "pawl_now($1::bigint)), l.level, l.message, l.fields FROM "
        "unnest($2::uuid[], $3::int[], $4::bigint[], $5::text[], $6::text[], "
        "$7::jsonb[]) WITH ORDINALITY AS l(job_id, attempt, at, level, "
        "message, fields, n) WHERE EXISTS (SELECT 1 FROM pawl_jobs WHERE "
        "id = l.job_id) ORDER BY l.n",
    [PG_ATTEMPT_ADD] =
        "INSERT INTO pawl_attempts (job_id, attempt, node, scheduled_at, "
        "started_at, ended_at, outcome, error) SELECT id, attempt, "
        "lease_owner, run_at, started_at, pawl_now($2::bigint), $3::text, "
        "$4::text FROM pawl_jobs AS j WHERE j.id = $1::uuid AND "
        PG_RUNNING_BY_ID,
    [PG_EVENT_ADD] = "INSERT INTO pawl_events (job_id, at, from_state, "
                     "to_state, actor, reason, attempt) VALUES ($1::uuid, "
                     "pawl_now($2::bigint), $3::smallint, $4::smallint, "
                     "$5::text, $6::text, $7::int)",
    [PG_EXTEND] = "UPDATE pawl_jobs SET lease_expires = pawl_now($1::bigint) "
                  "+ $2::float8 * interval '1 millisecond' WHERE state = 1 "
                  "AND lease_token = $3::uuid",
    /* Expired leases, locked so that two sweeping nodes never take back the
     * same job (the engine also sweeps under a lock). */
    [PG_EXPIRED] = "SELECT j.id, j.attempt, j.max_attempts, j.recoveries, "
                   "j.lease_owner, coalesce(s.crashes, 0), s.version IS NOT "
                   "DISTINCT FROM j.version FROM pawl_jobs AS j LEFT JOIN "
                   "pawl_started AS s ON s.job_id = j.id WHERE j.state = 1 "
                   "AND j.lease_expires < pawl_now($1::bigint) LIMIT 500 "
                   "FOR UPDATE OF j SKIP LOCKED",
    [PG_CRASHED] = "UPDATE pawl_started SET crashes = crashes + 1 WHERE "
                   "job_id = $1::uuid",
    /* The attempt `token` holds starts now: its version is recorded (the
     * job's next change bumps the version, which ends the record). */
    [PG_START] = "INSERT INTO pawl_started (job_id, version) SELECT j.id, "
                 "j.version FROM pawl_jobs AS j WHERE j.id = $1::uuid AND "
                 PG_RUNNING_BY_ID " AND j.lease_token = $2::uuid AND "
                 "j.attempt = $3::int ON CONFLICT (job_id) DO UPDATE SET "
                 "version = excluded.version",
    [PG_FORGET_START] = "DELETE FROM pawl_started WHERE job_id = $1::uuid",
    /* The body of a job claimed ahead started at $4 (capped at $1 now):
     * its started_at was NULL. Matches the held attempt whatever its
     * started_at, so that no row means "not held". */
    [PG_RUN_START] =
        "UPDATE pawl_jobs AS j SET started_at = coalesce(j.started_at, "
        "least(pawl_ts($4::bigint), pawl_now($1::bigint))) WHERE j.id = "
        "$2::uuid AND " PG_RUNNING_BY_ID " AND j.lease_token = $3::uuid AND "
        "j.attempt = $5::int RETURNING j.id",
    /* The jobs a claim took ahead of a free worker (store_claim_t.
     * ahead_from): not started, so not running, until their start is
     * recorded. */
    [PG_AHEAD] = "UPDATE pawl_jobs AS j SET started_at = NULL WHERE j.id = "
                 "ANY($1::uuid[]) AND " PG_RUNNING_BY_ID " AND j.lease_token "
                 "= $2::uuid",
    /* Every operator transition: C decides the new values from the row it
     * read, the version check makes it a compare-and-set. */
    [PG_TRANSITION] =
        "UPDATE pawl_jobs SET state = $4::smallint, paused_from = "
        "$5::smallint, run_at = pawl_ts($6::bigint), rank = pawl_rank("
        "priority, pawl_ts($6::bigint), pawl_queue_boost(queue, $7::bigint)), "
        "attempt = $8::int, "
        "last_error = $9::text, result = $10::jsonb, finished_at = "
        "pawl_ts($11::bigint), recoveries = $12::int, lease_expires = "
        "pawl_ts($13::bigint), updated_at = pawl_now($1::bigint), version = "
        "version + 1 WHERE id = $2::uuid AND version = $3::bigint",
    [PG_ATTEMPTS] = "SELECT attempt, node, pawl_ms(scheduled_at), "
                    "pawl_ms(started_at), pawl_ms(ended_at), outcome, error, "
                    "trace FROM pawl_attempts WHERE job_id = $1::uuid ORDER "
                    "BY seq",
    [PG_EVENTS] = "SELECT pawl_ms(at), from_state, to_state, actor, reason, "
                  "attempt FROM pawl_events WHERE job_id = $1::uuid "
                  "ORDER BY seq",
    [PG_LOCK_ACQUIRE] =
        "INSERT INTO pawl_locks AS l (name, owner, acquired_at, expires_at) "
        "VALUES ($1::text, $2::text, pawl_now($3::bigint), "
        "pawl_now($3::bigint) + $4::float8 * interval '1 millisecond') "
        "ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, "
        "acquired_at = CASE WHEN l.owner = excluded.owner THEN l.acquired_at "
        "ELSE excluded.acquired_at END, expires_at = excluded.expires_at "
        "WHERE l.owner = excluded.owner OR l.expires_at <= "
        "pawl_now($3::bigint)",
    [PG_LOCK_EXTEND] = "UPDATE pawl_locks SET expires_at = pawl_now($3::bigint) "
                       "+ $4::float8 * interval '1 millisecond' WHERE name = "
                       "$1::text AND owner = $2::text AND expires_at > "
                       "pawl_now($3::bigint)",
    [PG_LOCK_RELEASE] = "DELETE FROM pawl_locks WHERE name = $1::text AND "
                        "owner = $2::text",
    [PG_NODE_BEAT] =
        "INSERT INTO pawl_nodes (id, incarnation, version, queues, "
        "started_at, last_beat) VALUES ($1::text, $2::uuid, $3::text, "
        "$4::text, pawl_ts($5::bigint), pawl_now($6::bigint)) "
        "ON CONFLICT (id) DO UPDATE SET incarnation = excluded.incarnation, "
        "version = excluded.version, queues = excluded.queues, "
        "started_at = excluded.started_at, last_beat = excluded.last_beat, "
        "stopped_at = NULL",
    [PG_NODE_LIST] = "SELECT id, incarnation, version, queues, "
                     "pawl_ms(started_at), pawl_ms(last_beat), "
                     "pawl_ms(stopped_at) FROM pawl_nodes ORDER BY id",
    /* The stop is the node's last beat too: listed as stopped from now,
     * removed five leases later like any silent node. */
    [PG_NODE_STOP] = "UPDATE pawl_nodes SET stopped_at = pawl_now($3::bigint), "
                     "last_beat = pawl_now($3::bigint) WHERE id = $1::text "
                     "AND incarnation = $2::uuid",
    [PG_NODE_REAP] = "DELETE FROM pawl_nodes WHERE last_beat < "
                     "pawl_now($1::bigint) - $2::float8 * interval "
                     "'1 millisecond'",
    [PG_SETTING_GET] = "SELECT value FROM pawl_settings WHERE name = $1::text",
    [PG_SETTING_SET] = "INSERT INTO pawl_settings (name, value) VALUES "
                       "($1::text, $2::text) ON CONFLICT (name) DO UPDATE SET "
                       "value = excluded.value",
    /* The database's boost changed ($2 NULL): every pending job ranks
     * anew, those of a queue with a boost of its own (pawl_queues) as
     * before; or queue $2's boost did. */
    [PG_RERANK] = "UPDATE pawl_jobs SET rank = pawl_rank(priority, run_at, "
                  "pawl_queue_boost(queue, $1::bigint)) WHERE state = 0 AND "
                  "($2::text IS NULL OR queue = $2::text)",
    /* Progress is not a transition: no version, no updated_at. */
    [PG_PROGRESS] = "UPDATE pawl_jobs AS j SET progress_done = $1::float8, "
                    "progress_total = $2::float8 WHERE j.id = $3::uuid AND "
                    PG_RUNNING_BY_ID " AND j.lease_token = $4::uuid AND "
                    "j.attempt = $5::int",
    [PG_EXISTS] = "SELECT 1 FROM pawl_jobs WHERE id = $1::uuid",
    [PG_LOGS] = "SELECT attempt, pawl_ms(at), level, message, fields FROM "
                "pawl_logs WHERE job_id = $1::uuid ORDER BY seq",
    [PG_EXTEND_ONE] = "UPDATE pawl_jobs AS j SET lease_expires = "
                      "pawl_now($1::bigint) + $2::float8 * interval "
                      "'1 millisecond' WHERE j.id = $3::uuid AND "
                      PG_RUNNING_BY_ID " AND j.lease_token = $4::uuid AND "
                      "j.attempt = $5::int",
    [PG_NEXT_DUE] = PG_SQL_NEXT_DUE,
    [PG_CLAIM_PREPARE] = PG_SQL_CLAIM_PREPARE,
    [PG_NEXT_DUE_QUEUE] = PG_SQL_NEXT_DUE_QUEUE,
    [PG_NEXT_DUE_QUEUES] = PG_SQL_NEXT_DUE_QUEUES,
    /* A job made pending again by an operator wakes the nodes too. */
    [PG_NOTIFY] = "SELECT pg_notify(" PG_CHANNEL ", '')",
    /* administration (pg_admin_sql.h) */
    [PG_ADM_COUNT_ST] = PG_ADM_COUNT,
    [PG_ADM_COUNT_FAILED_ST] = PG_ADM_COUNT_FAILED,
    [PG_ADM_PICK_ST] = PG_ADM_PICK,
    [PG_ADM_PICK_FAILED_ST] = PG_ADM_PICK_FAILED,
    [PG_ADM_LIST_ST] = PG_ADM_LIST,
    [PG_ADM_STATS_PENDING_ST] = PG_ADM_STATS_PENDING,
    [PG_ADM_STATS_RUNNING_ST] = PG_ADM_STATS_RUNNING,
    [PG_ADM_STATS_DONE_ST] = PG_ADM_STATS_DONE,
    [PG_ADM_STATS_TP_ST] = PG_ADM_STATS_TP,
    [PG_MET_TP_ST] = PG_MET_TP,
    /* Throughput buckets (store.h, "Throughput"): $1 now, $2 the state,
     * $3 the queue; and the trim of buckets older than $2 minutes. */
    [PG_TP_ADD] = "INSERT INTO pawl_throughput (minute, state, queue, count) "
                  "VALUES (" PG_SQL_TP_MINUTE ", $2::smallint, $3::text, 1)"
                  PG_SQL_TP_UPSERT,
    [PG_TP_TRIM] = "DELETE FROM pawl_throughput WHERE minute < "
                   PG_SQL_TP_MINUTE " - $2::bigint",
    [PG_ADM_RUNNING_ST] = PG_ADM_RUNNING,
    [PG_ADM_LOCKS_ST] = PG_ADM_LOCKS,
    /* recurring definitions (pg_recurring_sql.h) */
    [PG_REC_ADD] = PG_REC_ADD_SQL,
    [PG_REC_PUT_SCRIPT] = PG_REC_PUT_SCRIPT_SQL,
    [PG_REC_GET] = PG_REC_GET_SQL,
    [PG_REC_LIST] = PG_REC_LIST_SQL,
    [PG_REC_UPDATE] = PG_REC_UPDATE_SQL,
    [PG_REC_REMOVE] = PG_REC_REMOVE_SQL,
    [PG_REC_DUE] = PG_REC_DUE_SQL,
    [PG_REC_ADVANCE] = PG_REC_ADVANCE_SQL,
    [PG_REC_KEYS] = PG_REC_KEYS_SQL,
    [PG_REC_LAST_JOB] = PG_REC_LAST_JOB_SQL,
    [PG_REC_DISABLE_GONE] = PG_REC_DISABLE_GONE_SQL,
    [PG_REC_DISABLE_LISTED] = PG_REC_DISABLE_LISTED_SQL,
    [PG_REC_LOAD_ERROR] = PG_REC_LOAD_ERROR_SQL,
    /* queues */
    [PG_QUEUE_BOOSTS] = "SELECT name, age_boost_ms FROM pawl_queues WHERE "
                        "age_boost_ms IS NOT NULL",
    /* $1 name, $2 now, $3 by, $4 reason. Changes a row only when the queue
     * was not paused, so that the count says whether it was. */
    [PG_QUEUE_PAUSE] =
        "INSERT INTO pawl_queues AS q (name, paused, paused_at, paused_by, "
        "reason, updated_at) VALUES ($1::text, true, pawl_now($2::bigint), "
        "$3::text, $4::text, pawl_now($2::bigint)) ON CONFLICT (name) DO "
        "UPDATE SET paused = true, paused_at = excluded.paused_at, "
        "paused_by = excluded.paused_by, reason = excluded.reason, "
        "updated_at = excluded.updated_at WHERE NOT q.paused",
    /* A resume wakes the nodes: the queue's jobs may be due. */
    [PG_QUEUE_RESUME] =
        "WITH r AS (UPDATE pawl_queues SET paused = false, paused_at = NULL, "
        "paused_by = NULL, reason = NULL, updated_at = pawl_now($2::bigint) "
        "WHERE name = $1::text AND paused RETURNING name) "
        "SELECT name, pg_notify(" PG_CHANNEL ", '') FROM r",
    /* $1 name, $2 now, $3 boost (NULL: the database's). */
    [PG_QUEUE_SET_BOOST] =
        "INSERT INTO pawl_queues (name, age_boost_ms, updated_at) VALUES "
        "($1::text, $3::bigint, pawl_now($2::bigint)) ON CONFLICT (name) DO "
        "UPDATE SET age_boost_ms = excluded.age_boost_ms, updated_at = "
        "excluded.updated_at",
    [PG_QUEUE_LIST] = "SELECT name, paused, pawl_ms(paused_at), paused_by, "
                      "reason, age_boost_ms FROM pawl_queues ORDER BY name",
    /* limits */
    [PG_CLAIM_LIM_PICK] = PG_SQL_CLAIM_LIM_PICK,
    [PG_CLAIM_LIM_PICK_QUEUE] = PG_SQL_CLAIM_LIM_PICK_QUEUE,
    [PG_CLAIM_LIM_PICK_QUEUES] = PG_SQL_CLAIM_LIM_PICK_QUEUES,
    [PG_CLAIM_LIM_LANES] = PG_SQL_CLAIM_LIM_LANES,
    [PG_CLAIM_LIM_LANES_QUEUE] = PG_SQL_CLAIM_LIM_LANES_QUEUE,
    [PG_CLAIM_LIM_LANES_QUEUES] = PG_SQL_CLAIM_LIM_LANES_QUEUES,
    [PG_CLAIM_LANES] = PG_SQL_CLAIM_LANES,
    [PG_CLAIM_LANES_QUEUE] = PG_SQL_CLAIM_LANES_QUEUE,
    [PG_CLAIM_LANES_QUEUES] = PG_SQL_CLAIM_LANES_QUEUES,
    [PG_CLAIM_LIM_TAKE] = PG_SQL_CLAIM_LIM_TAKE,
    [PG_LIMITS_ANY] = "SELECT 1 FROM pawl_limits LIMIT 1",
    /* Every limit, locked in name order (so claimers never deadlock on
     * them), with the claim's "now": see pg_claim_limited(). */
    [PG_LIMITS_LOCK] =
        "SELECT name, coalesce(max_running, 0), coalesce(rate, 0), "
        "coalesce(rate_window_ms, 0), window_start, window_count, "
        "pawl_ms(pawl_now($1::bigint)) FROM pawl_limits ORDER BY name "
        "FOR UPDATE",
    /* Permits in use of the limits $1: running rows (through
     * pawl_jobs_resource_running, or pawl_jobs_running for a queue's). */
    [PG_LIMITS_RUNNING] =
        "SELECT n, CASE WHEN left(n, 6) = 'queue:' THEN (SELECT count(*) "
        "FROM pawl_jobs WHERE state = 1 AND queue = substr(n, 7)) ELSE "
        "(SELECT count(*) FROM pawl_jobs WHERE state = 1 AND resource = n) "
        "END FROM unnest($1::text[]) AS n",
    /* The same in one statement, unlocked, for next_due(). */
    [PG_LIMITS_READ] =
        "SELECT name, coalesce(max_running, 0), coalesce(rate, 0), "
        "coalesce(rate_window_ms, 0), window_start, window_count, "
        "pawl_ms(pawl_now($1::bigint)), CASE WHEN max_running IS NULL THEN "
        "0 WHEN left(name, 6) = 'queue:' THEN (SELECT count(*) FROM "
        "pawl_jobs WHERE state = 1 AND queue = substr(name, 7)) ELSE "
        "(SELECT count(*) FROM pawl_jobs j WHERE j.state = 1 AND "
        "j.resource = pawl_limits.name) END FROM pawl_limits",
    [PG_LIMITS_WINDOWS] =
        "UPDATE pawl_limits AS l SET window_start = w.s, window_count = w.c "
        "FROM unnest($1::text[], $2::bigint[], $3::bigint[]) AS w(n, s, c) "
        "WHERE l.name = w.n",
    /* The window's count survives a change that keeps its length. */
    [PG_LIMIT_SET] =
        "INSERT INTO pawl_limits AS l (name, max_running, rate, "
        "rate_window_ms, updated_at) VALUES ($1::text, $2::bigint, "
        "$3::bigint, $4::bigint, pawl_now($5::bigint)) ON CONFLICT (name) "
        "DO UPDATE SET max_running = excluded.max_running, "
        "rate = excluded.rate, window_start = CASE WHEN l.rate_window_ms IS "
        "NOT DISTINCT FROM excluded.rate_window_ms THEN l.window_start ELSE "
        "0 END, window_count = CASE WHEN l.rate_window_ms IS NOT DISTINCT "
        "FROM excluded.rate_window_ms THEN l.window_count ELSE 0 END, "
        "rate_window_ms = excluded.rate_window_ms, "
        "updated_at = excluded.updated_at",
    [PG_LIMIT_REMOVE] = "DELETE FROM pawl_limits WHERE name = $1::text",
    /* $1: [[type, [field, ...], [branch, ...]], ...]. A type's redact
     * list only grows: the names a node's script lists are added to those
     * recorded, so a node with an older copy of the script (no `redact`)
     * cannot reveal a field that another node's copy hides. */
    [PG_TYPES_SYNC] =
        "INSERT INTO pawl_types AS t (type, redact, branches, updated_at) "
        "SELECT e->>0, e->1, e->2, pawl_now($2::bigint) FROM "
        "jsonb_array_elements($1::jsonb) AS e ON CONFLICT (type) DO UPDATE "
        "SET redact = t.redact || coalesce((SELECT jsonb_agg(n.v ORDER BY "
        "n.i) FROM jsonb_array_elements(excluded.redact) WITH ORDINALITY AS "
        "n(v, i) WHERE NOT t.redact @> jsonb_build_array(n.v)), '[]'), "
        "branches = excluded.branches, updated_at = excluded.updated_at "
        "WHERE EXISTS (SELECT 1 FROM jsonb_array_elements(excluded.redact) "
        "AS n(v) WHERE NOT t.redact @> jsonb_build_array(n.v)) OR "
        "t.branches IS DISTINCT FROM excluded.branches",
    [PG_TYPE_REDACT] = "SELECT redact::text, branches::text FROM pawl_types "
                       "WHERE type = $1::text",
    [PG_LIMIT_LIST] =
        "SELECT name, coalesce(max_running, 0), coalesce(rate, 0), "
        "coalesce(rate_window_ms, 0), window_start, window_count, "
        "pawl_ms(updated_at), CASE WHEN left(name, 6) = 'queue:' THEN "
        "(SELECT count(*) FROM pawl_jobs WHERE state = 1 AND queue = "
        "substr(name, 7)) ELSE (SELECT count(*) FROM pawl_jobs j WHERE "
        "j.state = 1 AND j.resource = pawl_limits.name) END FROM "
        "pawl_limits ORDER BY name COLLATE \"C\"",
    [PG_NEXT_DUE_LIM] = PG_SQL_NEXT_DUE_LIM,
    [PG_NEXT_DUE_LIM_RES] = PG_SQL_NEXT_DUE_LIM_RES,
    [PG_NEXT_DUE_LIM_QUEUE] = PG_SQL_NEXT_DUE_LIM_QUEUE,
    /* signals and replace (pg_flow_sql.h) */
    [PG_SIG_RELEASE] = PG_SQL_SIG_RELEASE,
    [PG_SIG_HOLDER] = PG_SQL_SIG_HOLDER,
    [PG_SIG_NEXT] = PG_SQL_SIG_NEXT,
    [PG_SIG_ADD] = PG_SQL_SIG_ADD,
    [PG_SIG_DELIVER] = PG_SQL_SIG_DELIVER,
    [PG_SIG_GET] = PG_SQL_SIG_GET,
    [PG_SIG_DUE] = PG_SQL_SIG_DUE,
    [PG_SIG_EXPIRE] = PG_SQL_SIG_EXPIRE,
    [PG_REP_ADD] = PG_SQL_REP_ADD,
    [PG_REP_CARRY] = PG_SQL_REP_CARRY,
    [PG_REP_INSTANCE] = PG_SQL_REP_INSTANCE,
    [PG_REP_BATCH] = PG_SQL_REP_BATCH,
    [PG_REP_LEAVE] = PG_SQL_REP_LEAVE,
    [PG_REP_NEXT] = PG_SQL_REP_NEXT,
    [PG_REP_PREV] = PG_SQL_REP_PREV,
    /* batches (schema/postgres/V009__batch.sql) */
    /* $1 id, $2 total, $3 enqueued_by, $4 now, $5 ident (V015). */
    [PG_BATCH_ADD] = "INSERT INTO pawl_batches (id, total, enqueued_by, "
                     "created_at, updated_at, ident) VALUES ($1::uuid, "
                     "$2::bigint, $3::text, pawl_now($4::bigint), "
                     "pawl_now($4::bigint), $5::text)",
    /* The batch of identity $1 (the partial unique index
     * pawl_batches_ident), and the children of batch $1 in enqueue order
     * (UUIDv7 ids, handed out in order). */
    [PG_BATCH_FIND] = "SELECT id, total FROM pawl_batches WHERE ident = "
                      "$1::text",
    [PG_BATCH_CHILDREN] = "SELECT id FROM pawl_jobs WHERE batch_id = "
                          "$1::uuid ORDER BY id",
    /* $1 id, $2 batch, $3 role, $4 type, $5 queue, $6 priority, $7 payload,
     * $8 tags, $9 max_attempts, $10 timeout_s, $11 correlation_id,
     * $12 enqueued_by. */
    [PG_BATCH_CB_ADD] =
        "INSERT INTO pawl_batch_callbacks (id, batch_id, role, type, queue, "
        "priority, payload, tags, max_attempts, timeout_s, correlation_id, "
        "enqueued_by) VALUES ($1::uuid, $2::uuid, $3::smallint, $4::text, "
        "$5::text, $6::int, $7::jsonb, $8::jsonb, $9::int, $10::int, "
        "$11::text, $12::text)",
    /* Adds $2 succeeded, $3 failed, $4 canceled at $5 to the batch of job
     * $1 (none: no row); an operator's transition of a child. The trigger
     * fires the callbacks when this completes the count. */
    [PG_BATCH_COUNT_JOB] =
        "UPDATE pawl_batches SET succeeded = succeeded + $2::bigint, failed "
        "= failed + $3::bigint, canceled = canceled + $4::bigint, updated_at "
        "= pawl_now($5::bigint) WHERE id = (SELECT batch_id FROM pawl_jobs "
        "WHERE id = $1::uuid)",
    [PG_BATCH_GET] = "SELECT total, succeeded, failed, canceled, "
                     "pawl_ms(created_at), pawl_ms(finished_at) FROM "
                     "pawl_batches WHERE id = $1::uuid",
    [PG_BATCH_CBS] = "SELECT role, id, pawl_ms(fired_at) FROM "
                     "pawl_batch_callbacks WHERE batch_id = $1::uuid",
    /* The children per state, with the run time of the successful attempts
     * (on the row) and the lifetimes of those that ended. */
    [PG_BATCH_STATES] =
        "SELECT state, count(*), coalesce(sum(CASE WHEN state = 2 THEN "
        "pawl_ms(finished_at) - pawl_ms(started_at) ELSE 0 END), 0), "
        "coalesce(sum(CASE WHEN state IN (2, 3, 4) THEN pawl_ms(finished_at) "
        "- pawl_ms(created_at) ELSE 0 END), 0) FROM pawl_jobs WHERE "
        "batch_id = $1::uuid GROUP BY state",
    /* The run time of the other attempts, of children that ended (true)
     * and of the others. */
    [PG_BATCH_ATTEMPTS] =
        "SELECT j.state IN (2, 3, 4), coalesce(sum(pawl_ms(a.ended_at) - "
        "pawl_ms(a.started_at)), 0) FROM pawl_jobs AS j JOIN pawl_attempts "
        "AS a ON a.job_id = j.id WHERE j.batch_id = $1::uuid AND "
        "a.started_at IS NOT NULL GROUP BY 1",
    [PG_BATCH_OF] = "SELECT batch_id FROM pawl_jobs WHERE id = $1::uuid",
    [PG_BATCH_OF_CB] = "SELECT batch_id, role FROM pawl_batch_callbacks "
                       "WHERE id = $1::uuid",
    /* dependencies (the functions are in
     * schema/postgres/V010__deps.sql) */
    [PG_DEPS_RELEASE] = "SELECT pawl_deps_release($1::uuid[], $2::bigint)",
    [PG_DEPS_LINK] = "SELECT pawl_deps_link($1::uuid, $2::uuid[], "
                     "$3::text[], $4::bigint)",
    /* A manual retry (pawl__store_deps_reopen; see SQLITE_DEPS_UNCOUNT
     * and the ones after it): the children of parent $1 that may change,
     * blocked or canceled, are locked first, in id order, as
     * pawl_deps_release locks them. $2: the state the parent's end was
     * counted in. */
    [PG_DEPS_LOCK_KIDS] =
        "SELECT 1 FROM pawl_jobs AS j JOIN pawl_deps AS d ON d.child = j.id "
        "WHERE d.parent = $1::uuid AND j.state IN (4, 6) ORDER BY j.id FOR "
        "NO KEY UPDATE OF j",
    [PG_DEPS_UNCOUNT] =
        "UPDATE pawl_jobs AS j SET deps_left = j.deps_left + 1, deps_unmet "
        "= j.deps_unmet - (NOT pawl_deps_met(d.cond, $2::smallint, "
        "NULL))::integer FROM pawl_deps AS d WHERE d.parent = $1::uuid AND "
        "j.id = d.child AND j.state = 6",
    [PG_DEPS_CANCELED] =
        "SELECT j.id FROM pawl_deps AS d JOIN pawl_jobs AS j ON j.id = "
        "d.child WHERE d.parent = $1::uuid AND j.state = 4 AND j.deps_left "
        "= 0 AND j.deps_unmet > 0 AND NOT pawl_deps_met(d.cond, "
        "$2::smallint, NULL) AND j.batch_id IS NULL AND NOT EXISTS (SELECT "
        "1 FROM pawl_signals AS s WHERE s.job_id = j.id) AND "
        "(j.business_key IS NULL OR NOT EXISTS (SELECT 1 FROM pawl_jobs AS "
        "o WHERE o.business_key = j.business_key AND o.state IN (0, 1, 5, "
        "6))) ORDER BY j.id",
    [PG_DEPS_RECOUNT] =
        "UPDATE pawl_jobs SET deps_left = deps_left + 1, deps_unmet = "
        "deps_unmet - 1 WHERE id = $1::uuid",
    [PG_DEPS_REOPEN_SELF] =
        "UPDATE pawl_jobs SET deps_open = EXISTS (SELECT 1 FROM pawl_deps "
        "WHERE parent = $1::uuid) WHERE id = $1::uuid",
    /* The branches that fired, for the batch's successes that
     * carry them: $1 ids, $2 JSON arrays, $3 the lease token. */
    [PG_DEPS_BRANCHES] =
        "UPDATE pawl_jobs AS j SET branches = b.br FROM unnest($1::uuid[], "
        "$2::jsonb[]) AS b(id, br) WHERE j.id = b.id AND j.state = 2 AND "
        "j.lease_token = $3::uuid",
    /* Replace: the replacement $2 of the live job $1 takes its
     * place in the graph (see SQLITE_DEPS_HAND_PARENT). The old job's
     * row is locked already (pg_replace); its parents are locked next, in
     * id order, so that none of them ends meanwhile: a parent's finish
     * holds its row from its state change to its commit, so its release
     * of children runs either before these (the counts copied include
     * it) or after this commits (and finds the edges moved). */
    [PG_DEPS_HAND_LOCK] =
        "SELECT 1 FROM pawl_jobs WHERE id IN (SELECT parent FROM pawl_deps "
        "WHERE child = $1::uuid) ORDER BY id FOR NO KEY UPDATE",
    [PG_DEPS_HAND_OVER] =
        "WITH a AS (UPDATE pawl_deps SET parent = $2::uuid WHERE parent = "
        "$1::uuid), b AS (UPDATE pawl_deps SET child = $2::uuid WHERE child "
        "= $1::uuid) UPDATE pawl_jobs SET deps_open = false WHERE id = "
        "$1::uuid AND deps_open",
    [PG_DEPS_TAKE_OVER] =
        "UPDATE pawl_jobs AS n SET deps_open = EXISTS (SELECT 1 FROM "
        "pawl_deps WHERE parent = $2::uuid), deps_left = o.deps_left, "
        "deps_unmet = o.deps_unmet FROM pawl_jobs AS o WHERE o.id = $1::uuid "
        "AND n.id = $2::uuid",
    [PG_DEPS_LIST] =
        "SELECT 1, p.id, p.type, p.state, d.cond FROM pawl_deps AS d JOIN "
        "pawl_jobs AS p ON p.id = d.parent WHERE d.child = $1::uuid UNION ALL "
        "SELECT 0, c.id, c.type, c.state, d.cond FROM pawl_deps AS d JOIN "
        "pawl_jobs AS c ON c.id = d.child WHERE d.parent = $1::uuid "
        "ORDER BY 1 DESC, 2",
    /* steps and instances (pg_steps_sql.h) */
    [PG_STEP_LIST_Q] = PG_STEP_LIST,
    [PG_STEP_JOB_Q] = PG_STEP_JOB,
    [PG_STEP_BEGIN_Q] = PG_STEP_BEGIN,
    [PG_STEP_SAVE_Q] = PG_STEP_SAVE,
    [PG_STEP_END_Q] = PG_STEP_END,
    [PG_STEP_EXIT_Q] = PG_STEP_EXIT,
    [PG_INSTANCE_FIND_Q] = PG_INSTANCE_FIND,
    [PG_INSTANCE_TAKE_Q] = PG_INSTANCE_TAKE,
    /* pawl top: the buckets from minute $1 on; the running
     * jobs (their partial index), longest running first. */
    [PG_TOP_TP_Q] = "SELECT minute, state, queue, count FROM pawl_throughput "
                    "WHERE minute >= $1::bigint ORDER BY minute, state, queue",
    [PG_TOP_RUNNING_Q] = "SELECT " PG_JOB_COLS " FROM pawl_jobs AS j WHERE "
                         "j.state = 1 ORDER BY j.started_at, j.id "
                         "LIMIT $1::int",
    [PG_ALERT_ROLL_Q] = PG_ALERT_ROLL,
    [PG_ALERT_TAKE_Q] = PG_ALERT_TAKE,
    [PG_ALERT_GET_Q] = PG_ALERT_GET,
    [PG_ALERT_WINDOW_Q] = PG_ALERT_WINDOW,
    [PG_ALERT_VERDICT_Q] = PG_ALERT_VERDICT,
    [PG_ALERT_DONE_Q] = PG_ALERT_DONE,
    /* retention: the walk by primary key (UUIDv7: time
     * ordered), any state (the caller decides). */
    [PG_RET_SCAN] = "SELECT id, version, state, pawl_ms(created_at), "
                    "pawl_ms(finished_at), queue, type FROM pawl_jobs WHERE "
                    "id > $1::uuid ORDER BY id LIMIT $2::bigint",
    /* $1 ids, $2 the versions the walk read. The state, version and
     * deps_open are checked by the DELETE itself; the foreign keys cascade
     * to the job's other rows; its dependency edges have none. */
    [PG_RET_DELETE] =
        "WITH p AS (SELECT * FROM unnest($1::uuid[], $2::bigint[]) AS "
        "p(id, version)), gone AS (DELETE FROM pawl_jobs AS j USING p WHERE "
        "j.id = p.id AND j.version = p.version AND j.state IN (2, 3, 4) AND "
        "NOT j.deps_open RETURNING j.id), e AS (DELETE FROM pawl_deps WHERE "
        "parent IN (SELECT id FROM gone) OR child IN (SELECT id FROM gone)) "
        "SELECT id FROM gone ORDER BY id",
    /* The same, the rows moved into the archive tables ($3: now): the
     * SELECTs of the job's attempts, events and logs read the statement's
     * snapshot, before the cascade deletes them at its end. */
    [PG_RET_ARCHIVE] =
        "WITH p AS (SELECT * FROM unnest($1::uuid[], $2::bigint[]) AS "
        "p(id, version)), gone AS (DELETE FROM pawl_jobs AS j USING p WHERE "
        "j.id = p.id AND j.version = p.version AND j.state IN (2, 3, 4) AND "
        "NOT j.deps_open RETURNING j.*), aj AS (INSERT INTO "
        "pawl_jobs_archive SELECT pawl_now($3::bigint), g.* FROM gone AS g), "
        "aa AS (INSERT INTO pawl_attempts_archive SELECT x.* FROM "
        "pawl_attempts AS x WHERE x.job_id IN (SELECT id FROM gone)), ae AS "
        "(INSERT INTO pawl_events_archive SELECT x.* FROM pawl_events AS x "
        "WHERE x.job_id IN (SELECT id FROM gone)), al AS (INSERT INTO "
        "pawl_logs_archive SELECT x.* FROM pawl_logs AS x WHERE x.job_id IN "
        "(SELECT id FROM gone)), e AS (DELETE FROM pawl_deps WHERE parent IN "
        "(SELECT id FROM gone) OR child IN (SELECT id FROM gone)) SELECT id "
        "FROM gone ORDER BY id",
};

typedef struct pg_store {
  store_t base;
  PGconn *conn;
  char *conninfo;          /* what the user gave, for messages and reconnects */
  char prepared[PG_COUNT]; /* prepared on this connection (reset on reconnect) */
  int listening;           /* LISTEN again after a reconnect */
  int64_t boost_ms;
  int64_t poison;
  int64_t tp_minute;       /* the minute this connection last trimmed the
                              throughput buckets at (0: not yet) */
  int limits_seen;         /* the last claim found limits: the
                              next goes straight to pg_claim_limited() */
  int paused;              /* a queue was paused at this claim's first step:
                              the claim goes by lanes (PG_SQL_LANE_IDS) */
} pg_store_t;

/* ---- parameters ----------------------------------------------------------- */

/* Bound values in text form; numbers and ids are formatted into `num`. */
#define PG_MAXP 20
typedef struct pg_params {
  const char *v[PG_MAXP];
  char num[PG_MAXP][40];
} pg_params_t;

static void pp_str(pg_params_t *pp, int i, const char *s) { pp->v[i] = s; }

static void pp_int(pg_params_t *pp, int i, int64_t x) {
  snprintf(pp->num[i], sizeof pp->num[i], "%" PRId64, x);
  pp->v[i] = pp->num[i];
}

/* x when `has`, else SQL NULL. */
static void pp_opt_int(pg_params_t *pp, int i, int has, int64_t x) {
  if (has)
    pp_int(pp, i, x);
  else
    pp->v[i] = NULL;
}

static void pp_dbl(pg_params_t *pp, int i, double x) {
  snprintf(pp->num[i], sizeof pp->num[i], "%.17g", x);
  pp->v[i] = pp->num[i];
}

static void pp_id(pg_params_t *pp, int i, const pawl_id_t *id) {
  if (!id) {
    pp->v[i] = NULL;
    return;
  }
  pawl_id_format(id, pp->num[i]);
  pp->v[i] = pp->num[i];
}

/* "Now" for the SQL: the injected clock's reading, or NULL for the
 * database's own clock. */
static void pp_now(pg_store_t *s, pg_params_t *pp, int i) {
  if (s->base.clock)
    pp_int(pp, i, s->base.clock(s->base.clock_data));
  else
    pp->v[i] = NULL;
}

/* A PostgreSQL array literal built element by element, for unnest(). */
static void arr_begin(pawl_buf_t *b) {
  pawl__buf_init(b);
  pawl__buf_putc(b, '{');
}

static void arr_sep(pawl_buf_t *b) {
  if (b->len > 1) pawl__buf_putc(b, ',');
}

static void arr_str(pawl_buf_t *b, const char *s) {
  arr_sep(b);
  if (!s) {
    pawl__buf_puts(b, "NULL");
    return;
  }
  pawl__buf_putc(b, '"');
  for (const char *p = s; *p; p++) {
    if (*p == '"' || *p == '\\') pawl__buf_putc(b, '\\');
    pawl__buf_putc(b, *p);
  }
  pawl__buf_putc(b, '"');
}

static void arr_int(pawl_buf_t *b, int64_t x) {
  arr_sep(b);
  pawl__buf_printf(b, "%" PRId64, x);
}

static void arr_opt_int(pawl_buf_t *b, int64_t x) {
  if (x)
    arr_int(b, x);
  else {
    arr_sep(b);
    pawl__buf_puts(b, "NULL");
  }
}

static void arr_id(pawl_buf_t *b, const pawl_id_t *id) {
  char text[PAWL_ID_STRLEN];
  pawl_id_format(id, text);
  arr_sep(b);
  pawl__buf_puts(b, text);
}

static void arr_end(pawl_buf_t *b) { pawl__buf_putc(b, '}'); }

/* ---- errors --------------------------------------------------------------- */

/* A PAWL_E* code for a failed result, by SQLSTATE. */
static int pg_code(pg_store_t *s, const PGresult *res) {
  if (PQstatus(s->conn) != CONNECTION_OK) return PAWL_EUNAVAIL;
  const char *st = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
  if (!st) return PAWL_EUNAVAIL; /* no answer from the server at all */
  if (strcmp(st, "23505") == 0) return PAWL_EKEY;       /* unique_violation */
  if (strcmp(st, "23503") == 0) return PAWL_ENOTFOUND;  /* foreign_key_violation */
  if (strncmp(st, "22", 2) == 0) return PAWL_EINVAL;    /* data exception */
  if (strncmp(st, "23", 2) == 0) return PAWL_EINVAL;    /* other integrity
                                                          constraints */
  if (strcmp(st, "40001") == 0 || strcmp(st, "40P01") == 0 ||
      strcmp(st, "55P03") == 0)
    return PAWL_EBUSY; /* serialization failure, deadlock, lock not available */
  if (strncmp(st, "08", 2) == 0 || strncmp(st, "57P", 3) == 0 ||
      strncmp(st, "53", 2) == 0)
    return PAWL_EUNAVAIL; /* connection, shutdown, insufficient resources */
  if (strcmp(st, "42P01") == 0 || strcmp(st, "42883") == 0)
    return PAWL_ESCHEMA; /* undefined table or function: not migrated */
  return PAWL_ESTORE;
}

/* The server's message without its trailing newline, and without the
 * password of our connection string wherever it might be quoted (libpq's
 * connection messages quote what they stumbled on). */
static void pg_message(pg_store_t *s, const PGresult *res, char *out,
                       size_t len) {
  const char *m = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
  if (!m || !*m) m = PQerrorMessage(s->conn);
  pawl__redact_message(s->conninfo, m && *m ? m : "no answer from the server", 0,
                 out, len);
  size_t n = strlen(out);
  while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == ' ')) out[--n] = 0;
}

static int pg_fail(pg_store_t *s, const PGresult *res, const char *what) {
  char msg[300];
  pg_message(s, res, msg, sizeof msg);
  int rc = pg_code(s, res);
  if (rc == PAWL_EUNAVAIL)
    return pawl__store_fail(&s->base, rc, "%s: database unreachable: %s", what, msg);
  return pawl__store_fail(&s->base, rc, "%s: %s", what, msg);
}

/* ---- connection ----------------------------------------------------------- */

static int pg_listen_now(pg_store_t *s);

/* Makes sure the connection is up: after a failure, one reconnect attempt
 * (bounded by connect_timeout). Statements are prepared again on the new
 * connection, and a listener listens again. */
static int pg_ready(pg_store_t *s) {
  if (PQstatus(s->conn) == CONNECTION_OK) return 0;
  PQreset(s->conn);
  memset(s->prepared, 0, sizeof s->prepared);
  if (PQstatus(s->conn) != CONNECTION_OK) {
    char msg[300];
    pg_message(s, NULL, msg, sizeof msg);
    return pawl__store_fail(&s->base, PAWL_EUNAVAIL, "database unreachable: %s", msg);
  }
  pawl__dbstats_reconnected(); /* the metrics endpoint counts them */
  if (s->listening) return pg_listen_now(s);
  return 0;
}

static int pg_prepare(pg_store_t *s, int id) {
  if (s->prepared[id]) return 0;
  char name[16];
  snprintf(name, sizeof name, "pawl_%d", id);
  PGresult *res = PQprepare(s->conn, name, pg_sql[id], 0, NULL);
  int rc = 0;
  if (PQresultStatus(res) != PGRES_COMMAND_OK)
    rc = pg_fail(s, res, "prepare statement");
  else
    s->prepared[id] = 1;
  PQclear(res);
  return rc;
}

/* Runs prepared statement `id` with n text parameters. On success *out (if
 * not NULL) holds the result, which the caller PQclear()s. */
static int pg_run(pg_store_t *s, int id, int n, const char *const *vals,
                  PGresult **out, const char *what) {
  if (out) *out = NULL;
  int rc = pg_ready(s);
  if (!rc) rc = pg_prepare(s, id);
  if (rc) return rc;
  char name[16];
  snprintf(name, sizeof name, "pawl_%d", id);
  PGresult *res = PQexecPrepared(s->conn, name, n, vals, NULL, NULL, 0);
  ExecStatusType st = PQresultStatus(res);
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
    rc = pg_fail(s, res, what);
    PQclear(res);
    return rc;
  }
  if (out)
    *out = res;
  else
    PQclear(res);
  return 0;
}

/* Rows changed by a command result. */
static long pg_changed(PGresult *res) { return atol(PQcmdTuples(res)); }

/* A plain command (BEGIN, COMMIT, ...), or a query whose rows we ignore. */
static int pg_cmd(pg_store_t *s, const char *sql, const char *what) {
  PGresult *res = PQexec(s->conn, sql);
  int rc = 0;
  ExecStatusType st = PQresultStatus(res);
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) rc = pg_fail(s, res, what);
  PQclear(res);
  return rc;
}

static int pg_begin(pg_store_t *s) {
  int rc = pg_ready(s);
  return rc ? rc : pg_cmd(s, "BEGIN", "begin transaction");
}

/* Ends a transaction: commit when rc == 0, else roll back. */
static int pg_end(pg_store_t *s, int rc) {
  if (rc == 0) return pg_cmd(s, "COMMIT", "commit");
  if (PQstatus(s->conn) == CONNECTION_OK &&
      PQtransactionStatus(s->conn) != PQTRANS_IDLE) {
    PGresult *res = PQexec(s->conn, "ROLLBACK");
    PQclear(res);
  }
  return rc;
}

/* ---- pipelines ------------------------------------------------------------ */

/* Statements sent together in one round trip. Up to the sync they form one
 * implicit transaction: if one fails, those before it are rolled back and
 * those after it are skipped. */
typedef struct pg_call {
  int stmt;
  int n;
  pg_params_t p;
  PGresult *res; /* filled by pg_pipeline() */
} pg_call_t;

static int pg_pipeline(pg_store_t *s, pg_call_t *calls, size_t n,
                       const char *what) {
  int rc = pg_ready(s);
  for (size_t i = 0; i < n && !rc; i++) rc = pg_prepare(s, calls[i].stmt);
  if (rc) return rc;
  if (!PQenterPipelineMode(s->conn))
    return pg_fail(s, NULL, "enter pipeline mode");
  size_t sent = 0;
  for (; sent < n; sent++) {
    char name[16];
    snprintf(name, sizeof name, "pawl_%d", calls[sent].stmt);
    if (!PQsendQueryPrepared(s->conn, name, calls[sent].n, calls[sent].p.v,
                             NULL, NULL, 0))
      break;
  }
  int synced = sent == n && PQpipelineSync(s->conn);
  if (!synced) rc = pg_fail(s, NULL, what);
  /* Read back whatever the server answers, up to the sync. */
  for (size_t i = 0; i < sent; i++) {
    PGresult *res = PQgetResult(s->conn);
    if (!res) break; /* connection lost */
    ExecStatusType st = PQresultStatus(res);
    if (!rc && st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
      rc = pg_fail(s, res, what);
    calls[i].res = res;
    PGresult *end = PQgetResult(s->conn); /* NULL after each query */
    if (end) PQclear(end);
  }
  if (synced) {
    PGresult *res;
    while ((res = PQgetResult(s->conn)) != NULL) {
      int done = PQresultStatus(res) == PGRES_PIPELINE_SYNC;
      PQclear(res);
      if (done) break;
    }
  }
  if (!PQexitPipelineMode(s->conn) && !rc)
    rc = pg_fail(s, NULL, "leave pipeline mode");
  if (PQstatus(s->conn) != CONNECTION_OK && !rc)
    rc = pg_fail(s, NULL, what);
  return rc;
}

static void pg_calls_free(pg_call_t *calls, size_t n) {
  for (size_t i = 0; i < n; i++) PQclear(calls[i].res);
  pawl__free(calls);
}

/* ---- rows ----------------------------------------------------------------- */

static const char *pg_val(const PGresult *r, int row, int col) {
  return PQgetisnull(r, row, col) ? NULL : PQgetvalue(r, row, col);
}

static int64_t pg_int(const PGresult *r, int row, int col) {
  return PQgetisnull(r, row, col) ? 0 : strtoll(PQgetvalue(r, row, col), NULL, 10);
}

static double pg_dbl(const PGresult *r, int row, int col) {
  return PQgetisnull(r, row, col) ? 0 : strtod(PQgetvalue(r, row, col), NULL);
}

static void pg_id(const PGresult *r, int row, int col, pawl_id_t *out) {
  const char *v = pg_val(r, row, col);
  if (!v || pawl_id_parse(out, v) != 0) memset(out->bytes, 0, 16);
}

/* The column accessors of row r->row of a result (store_row_t). */
static const char *pg_row_text(const store_row_t *r, int col, size_t *len) {
  const PGresult *res = r->res;
  const char *v = pg_val(res, r->row, col);
  *len = v ? (size_t)PQgetlength(res, r->row, col) : 0;
  return v;
}

static int64_t pg_row_int64(const store_row_t *r, int col) {
  return pg_int(r->res, r->row, col);
}

static double pg_row_dbl(const store_row_t *r, int col) {
  return pg_dbl(r->res, r->row, col);
}

static void pg_row_id(const store_row_t *r, int col, pawl_id_t *out) {
  pg_id(r->res, r->row, col, out);
}

static store_row_t pg_row(const PGresult *res, int row) {
  return (store_row_t){pg_row_text, pg_row_int64, pg_row_dbl, pg_row_id, res,
                       row};
}

/* A pawl_job_t from a row of PG_JOB_COLS. Rows are found by id, through
 * the primary key: store_key stays 0. NULL when out of memory. */
static pawl_job_t *pg_row_to_job(const PGresult *res, int row) {
  store_job_row_t r;
  for (int k = 0; k < STORE_JOB_NTEXT; k++) {
    int c = pawl__store_job_texts[k];
    r.text[c] = pg_val(res, row, c);
    r.len[c] = r.text[c] ? (size_t)PQgetlength(res, row, c) : 0;
  }
  for (int k = 0; k < STORE_JOB_NINT; k++) {
    int c = pawl__store_job_ints[k];
    r.num[c] = pg_int(res, row, c);
  }
  pg_id(res, row, STORE_JOB_ID, &r.id);
  r.progress_done = pg_dbl(res, row, STORE_JOB_PROGRESS_DONE);
  r.progress_total = pg_dbl(res, row, STORE_JOB_PROGRESS_TOTAL);
  return pawl__store_job_from_row(&r, NULL);
}

/* Reads job `id` (locked for update inside a transaction when `lock`). */
static int pg_read_job(pg_store_t *s, const pawl_id_t *id, int lock,
                       pawl_job_t **out) {
  pg_params_t pp;
  pp_id(&pp, 0, id);
  PGresult *res;
  int rc = pg_run(s, lock ? PG_GET_LOCKED : PG_GET, 1, pp.v, &res, "read job");
  if (rc) return rc;
  if (PQntuples(res) == 0) {
    PQclear(res);
    return pawl__store_no_job(&s->base, id);
  }
  pawl_job_t *j = pg_row_to_job(res, 0);
  PQclear(res);
  if (!j) return pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
  *out = j;
  return 0;
}

/* ---- settings ------------------------------------------------------------- */

static int pg_setting_get(pg_store_t *s, const char *name, int64_t *out) {
  const char *v[1] = {name};
  PGresult *res;
  int rc = pg_run(s, PG_SETTING_GET, 1, v, &res, name);
  if (rc) return rc;
  if (PQntuples(res) == 1) *out = pg_int(res, 0, 0);
  PQclear(res);
  return 0;
}

/* Stores a new age boost and re-ranks the pending rows, in one
 * transaction, so every node orders the queue the same way. */
static int pg_set_age_boost(pg_store_t *s, int64_t ms) {
  int rc = pg_begin(s);
  if (rc) return rc;
  pg_params_t pp;
  pp_str(&pp, 0, "age_boost_ms");
  pp_int(&pp, 1, ms);
  rc = pg_run(s, PG_SETTING_SET, 2, pp.v, NULL, "store age boost");
  pp_str(&pp, 2, NULL);
  if (!rc) rc = pg_run(s, PG_RERANK, 2, &pp.v[1], NULL, "re-rank pending jobs");
  rc = pg_end(s, rc);
  if (!rc) s->boost_ms = ms;
  return rc;
}

static int pg_age_boost(store_t *base, int64_t *ms) {
  pg_store_t *s = (pg_store_t *)base;
  int rc = pg_setting_get(s, "age_boost_ms", &s->boost_ms);
  if (!rc) *ms = s->boost_ms;
  return rc;
}

/* ---- schema and migrations ------------------------------------------------ */

/* The advisory lock that serializes migrations of one database: every pawl
 * starting at once takes it in turn, and the first applies what is
 * pending. ('pawl' in ASCII.) */
#define PG_MIGRATE_LOCK "1885435756"

/* Runs a query with no parameters that returns one integer. */
static int pg_query_int(pg_store_t *s, const char *sql, int64_t *out,
                        const char *what) {
  PGresult *res = PQexec(s->conn, sql);
  int rc = 0;
  if (PQresultStatus(res) != PGRES_TUPLES_OK)
    rc = pg_fail(s, res, what);
  else
    *out = PQntuples(res) ? pg_int(res, 0, 0) : 0;
  PQclear(res);
  return rc;
}

static int pg_has_schema_table(pg_store_t *s, int *exists) {
  int64_t v = 0;
  int rc = pg_query_int(s,
                        "SELECT count(*) FROM pg_tables WHERE schemaname = "
                        "current_schema() AND tablename = 'pawl_schema'",
                        &v, "read schema");
  *exists = v > 0;
  return rc;
}

/* Checks what is recorded in pawl_schema against the migrations this build
 * carries: an applied script whose checksum changed, or a version newer than
 * we know, is refused. *applied receives the highest applied version. */
static int pg_check_applied(pg_store_t *s, int *applied) {
  PGresult *res = PQexec(s->conn, "SELECT version, name, checksum FROM "
                                  "pawl_schema ORDER BY version");
  if (PQresultStatus(res) != PGRES_TUPLES_OK) {
    int rc = pg_fail(s, res, "read pawl_schema");
    PQclear(res);
    return rc;
  }
  *applied = 0;
  int err = 0;
  for (int i = 0; i < PQntuples(res) && !err; i++) {
    int v = (int)pg_int(res, i, 0);
    const char *name = pg_val(res, i, 1), *sum = pg_val(res, i, 2);
    *applied = v;
    if ((size_t)v > pawl__store_postgres_migration_count || v < 1) {
      err = pawl__store_fail(&s->base, PAWL_ESCHEMA,
                       "database %s is at schema version %d, newer than this "
                       "pawl knows (%zu): upgrade pawl",
                       PQdb(s->conn), v, pawl__store_postgres_migration_count);
      break;
    }
    const store_migration_t *m = &pawl__store_postgres_migrations[v - 1];
    char want[16];
    if (!pawl__store_sum_ok("postgres", m, sum, want))
      err = pawl__store_fail(&s->base, PAWL_ESCHEMA,
                       "migration %s was changed after it was applied to "
                       "database %s (checksum recorded %s, file now %s)",
                       name ? name : m->name, PQdb(s->conn),
                       sum ? sum : "(none)", want);
  }
  PQclear(res);
  return err;
}

/* Creates pawl_schema in an empty schema; refuses a schema that holds other
 * tables but no pawl_schema (not a pawl database). */
static int pg_check_schema_table(pg_store_t *s, int create) {
  int exists = 0, rc = pg_has_schema_table(s, &exists);
  if (rc || exists) return rc;
  int64_t ntables = 0;
  if ((rc = pg_query_int(s,
                         "SELECT count(*) FROM pg_tables WHERE schemaname = "
                         "current_schema()",
                         &ntables, "read schema")))
    return rc;
  if (ntables > 0) {
    PGresult *res = PQexec(s->conn, "SELECT current_schema()");
    const char *schema = PQresultStatus(res) == PGRES_TUPLES_OK &&
                                 PQntuples(res) == 1 && !PQgetisnull(res, 0, 0)
                             ? PQgetvalue(res, 0, 0)
                             : "?";
    int rc = pawl__store_fail(&s->base, PAWL_ESCHEMA,
                        "database %s is not a pawl database (schema %s has "
                        "%lld table%s but no pawl_schema)",
                        PQdb(s->conn), schema, (long long)ntables,
                        ntables == 1 ? "" : "s");
    PQclear(res);
    return rc;
  }
  if (!create)
    return pawl__store_fail(&s->base, PAWL_ESCHEMA,
                      "no pawl database in PostgreSQL database %s (its "
                      "current schema has no pawl tables): create it with "
                      "`pawl migrate`",
                      PQdb(s->conn));
  return pg_cmd(s,
                "CREATE TABLE pawl_schema (version integer PRIMARY KEY, "
                "name text NOT NULL, checksum text NOT NULL, applied_at "
                "timestamptz NOT NULL DEFAULT now())",
                "create pawl_schema");
}

/* Applies one migration in its own transaction. */
static int pg_apply(pg_store_t *s, const store_migration_t *m) {
  int rc = pg_cmd(s, "BEGIN", "begin migration");
  if (rc) return rc;
  char *sql = pawl__strndup(m->sql, m->len);
  if (!sql) return pg_end(s, pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory"));
  PGresult *res = PQexec(s->conn, sql);
  pawl__free(sql);
  if (PQresultStatus(res) != PGRES_COMMAND_OK &&
      PQresultStatus(res) != PGRES_TUPLES_OK) {
    char msg[300];
    pg_message(s, res, msg, sizeof msg);
    rc = pawl__store_fail(&s->base, pg_code(s, res), "migration %s failed: %s",
                    m->name, msg);
    PQclear(res);
    return pg_end(s, rc);
  }
  PQclear(res);
  char version[16], sum[16];
  snprintf(version, sizeof version, "%d", m->version);
  snprintf(sum, sizeof sum, "%08x", pawl__store_crc32(m->sql, m->len));
  const char *v[3] = {version, m->name, sum};
  res = PQexecParams(s->conn,
                     "INSERT INTO pawl_schema (version, name, checksum) "
                     "VALUES ($1::int, $2::text, $3::text)",
                     3, NULL, v, NULL, NULL, 0);
  if (PQresultStatus(res) != PGRES_COMMAND_OK)
    rc = pg_fail(s, res, "record migration");
  PQclear(res);
  return pg_end(s, rc);
}

/* Migrations run under a session advisory lock: concurrent starts queue
 * on it, and each re-reads the applied versions once it holds it. */
/* create: make pawl's tables in a database without them; migrate: apply
 * pending migrations to one that has them. */
static int pg_migrate_locked(pg_store_t *s, int create, int migrate) {
  int rc = pg_check_schema_table(s, create && migrate);
  if (rc) return rc;
  int applied = 0;
  if ((rc = pg_check_applied(s, &applied))) return rc;
  if (!migrate) return 0;
  for (size_t i = (size_t)applied; i < pawl__store_postgres_migration_count && !rc; i++)
    rc = pg_apply(s, &pawl__store_postgres_migrations[i]);
  return rc;
}

static int pg_migrate_with(pg_store_t *s, int create, int migrate) {
  int rc = pg_ready(s);
  if (rc) return rc;
  if ((rc = pg_cmd(s, "SELECT pg_advisory_lock(" PG_MIGRATE_LOCK ")",
                   "lock for migration")))
    return rc;
  rc = pg_migrate_locked(s, create, migrate);
  PGresult *res = PQexec(s->conn, "SELECT pg_advisory_unlock(" PG_MIGRATE_LOCK ")");
  PQclear(res);
  return rc;
}

static int pg_migrate(store_t *base) {
  return pg_migrate_with((pg_store_t *)base, 1, 1);
}

static int pg_version(store_t *base, int *current, int *latest) {
  pg_store_t *s = (pg_store_t *)base;
  int rc = pg_ready(s);
  int exists = 0, applied = 0;
  if (!rc) rc = pg_has_schema_table(s, &exists);
  if (!rc && exists) rc = pg_check_applied(s, &applied);
  if (rc) return rc;
  *current = applied;
  *latest = (int)pawl__store_postgres_migration_count;
  return 0;
}

/* ---- jobs ----------------------------------------------------------------- */

static int pg_find_id(pg_store_t *s, int stmt, const char *key,
                      pawl_id_t *out) {
  const char *v[1] = {key};
  PGresult *res;
  int rc = pg_run(s, stmt, 1, v, &res, "look up key");
  if (rc) return rc;
  int found = PQntuples(res) > 0;
  if (found) pg_id(res, 0, 0, out);
  PQclear(res);
  return found ? 0 : PAWL_ENOTFOUND;
}

static int pg_sig_add(pg_store_t *s, const store_new_job_t *j);

static int pg_deps_link(pg_store_t *s, const store_new_job_t *j,
                        const pawl_id_t *prev);

/* `prev`: the id the job before it in this insert got (NULL: none), for
 * j->after_prev. */
static int pg_instance_take(pg_store_t *s, const store_new_job_t *j);

static int pg_insert_one(pg_store_t *s, const store_new_job_t *j,
                         const pawl_id_t *prev, pawl_id_t *id_out,
                         int *status) {
  int rc;
  pg_params_t pp;
  int deps = j->nafter || (j->after_prev && prev);
  if (j->idempotency_key) {
    /* Claim the key first: a concurrent enqueue with the same key waits
     * here for ours to commit or roll back, then finds it. */
    pp_str(&pp, 0, j->idempotency_key);
    pp_id(&pp, 1, &j->id);
    pp_now(s, &pp, 2);
    PGresult *res;
    if ((rc = pg_run(s, PG_IDEM_ADD, 3, pp.v, &res, "record idempotency key")))
      return rc;
    long added = pg_changed(res);
    PQclear(res);
    if (!added) {
      rc = pg_find_id(s, PG_IDEM_FIND, j->idempotency_key, id_out);
      if (rc == 0) *status = PAWL_ENQ_DUPLICATE;
      return rc;
    }
  }
  pp_id(&pp, 0, &j->id);
  pp_str(&pp, 1, j->type);
  pp_str(&pp, 2, j->queue ? j->queue : "default");
  pp_int(&pp, 3, j->blocked || deps ? PAWL_BLOCKED : PAWL_PENDING);
  pp_int(&pp, 4, j->priority);
  pp_str(&pp, 5, j->payload ? j->payload : "{}");
  pp_str(&pp, 6, j->params);
  pp_str(&pp, 7, j->tags ? j->tags : "[]");
  pp_opt_int(&pp, 8, j->run_at != 0, j->run_at);
  pp_int(&pp, 9, j->max_attempts);
  pp_int(&pp, 10, j->timeout_s);
  pp_str(&pp, 11, j->idempotency_key);
  pp_str(&pp, 12, j->business_key);
  pp_str(&pp, 13, j->correlation_id);
  pp_str(&pp, 14, j->enqueued_by);
  pp_now(s, &pp, 15);
  pp_int(&pp, 16, s->boost_ms);
  pp_str(&pp, 17, j->ordering_key);
  pp_str(&pp, 18, j->resource);
  pp_int(&pp, 19, j->depth);
  PGresult *res;
  if ((rc = pg_run(s, PG_INSERT, 20, pp.v, &res, "insert job"))) return rc;
  int inserted = PQntuples(res) == 1;
  PQclear(res);
  if (inserted && j->signal_key && (rc = pg_sig_add(s, j))) /* signals */
    return rc;
  if (inserted && j->instance_key && (rc = pg_instance_take(s, j))) return rc;
  if (inserted) {
    if (deps && (rc = pg_deps_link(s, j, prev))) return rc;
    *id_out = j->id;
    *status = PAWL_ENQ_NEW;
    return 0;
  }
  /* Nothing inserted: the business key is held by a live job. */
  rc = j->business_key ? pg_find_id(s, PG_BIZ_FIND, j->business_key, id_out)
                       : PAWL_ENOTFOUND;
  if (rc == PAWL_ENOTFOUND)
    return pawl__store_fail(&s->base, PAWL_ECONFLICT,
                      "job not inserted: a live job took its business key "
                      "and finished meanwhile; try again");
  if (rc) return rc;
  if (j->return_existing) {
    /* No job was made under the idempotency key claimed above: give it
     * back, or it would stay recorded for an id that names no job, and
     * every later enqueue with it would be a "duplicate" of nothing. (A
     * refusal needs nothing: the caller rolls the transaction back.) */
    if (j->idempotency_key) {
      pp_str(&pp, 0, j->idempotency_key);
      pp_id(&pp, 1, &j->id);
      if ((rc = pg_run(s, PG_IDEM_DROP, 2, pp.v, NULL,
                       "give back idempotency key")))
        return rc;
    }
    *status = PAWL_ENQ_EXISTING;
    return 0;
  }
  char text[PAWL_ID_STRLEN];
  pawl_id_format(id_out, text);
  return pawl__store_fail(&s->base, PAWL_EKEY,
                    "business key \"%s\" is held by live job %s",
                    j->business_key, text);
}

/* ---- bulk enqueue: COPY in binary format -------------------------------- */

/* Keyless jobs (and the recurring tick's, whose keys it records first) go
 * in with COPY ... (FORMAT binary): ids, numbers and times
 * reach the server as their binary values, so it parses nothing but the
 * JSON, which is most of what a multi-row INSERT of arrays costs it. The
 * layout (PostgreSQL manual, COPY, "Binary Format"): a signature, flags and
 * header extension; per row a 16-bit field count, then per field a 32-bit
 * length (-1 for NULL) and the value in network byte order. */

/* Microseconds between the Unix epoch and PostgreSQL's (2000-01-01). */
#define PG_EPOCH_US INT64_C(946684800000000)

static void cp_u32(pawl_buf_t *b, uint32_t x) {
  unsigned char v[4] = {x >> 24, x >> 16, x >> 8, x};
  pawl__buf_append(b, v, 4);
}

static void cp_u64(pawl_buf_t *b, uint64_t x) {
  cp_u32(b, (uint32_t)(x >> 32));
  cp_u32(b, (uint32_t)x);
}

static void cp_null(pawl_buf_t *b) { cp_u32(b, UINT32_MAX); }

static void cp_i16(pawl_buf_t *b, int16_t x) {
  unsigned char v[2] = {(uint16_t)x >> 8, (uint16_t)x};
  cp_u32(b, 2);
  pawl__buf_append(b, v, 2);
}

static void cp_i32(pawl_buf_t *b, int32_t x) {
  cp_u32(b, 4);
  cp_u32(b, (uint32_t)x);
}

static void cp_i64(pawl_buf_t *b, int64_t x) {
  cp_u32(b, 8);
  cp_u64(b, (uint64_t)x);
}

/* timestamptz: microseconds since 2000-01-01 UTC. */
static void cp_time(pawl_buf_t *b, int64_t ms) {
  cp_i64(b, ms * 1000 - PG_EPOCH_US);
}

static void cp_text(pawl_buf_t *b, const char *s) {
  if (!s) {
    cp_null(b);
    return;
  }
  size_t n = strlen(s);
  cp_u32(b, (uint32_t)n);
  pawl__buf_append(b, s, n);
}

/* jsonb: a version byte (1), then the JSON text. */
static void cp_jsonb(pawl_buf_t *b, const char *s) {
  if (!s) {
    cp_null(b);
    return;
  }
  size_t n = strlen(s);
  cp_u32(b, (uint32_t)n + 1);
  pawl__buf_putc(b, 1);
  pawl__buf_append(b, s, n);
}

static void cp_uuid(pawl_buf_t *b, const pawl_id_t *id) {
  cp_u32(b, 16);
  pawl__buf_append(b, id->bytes, 16);
}

/* One row in PG_SQL_COPY_JOBS's column order. */
/* The boost jobs of `queue` rank with, from the rows of PG_QUEUE_BOOSTS
 * (`boosts`: the queues that have one of their own; NULL: none), else
 * `dflt`. */
static int64_t pg_boost_of(const PGresult *boosts, const char *queue,
                           int64_t dflt) {
  for (int i = 0; boosts && i < PQntuples(boosts); i++)
    if (strcmp(PQgetvalue(boosts, i, 0), queue) == 0)
      return strtoll(PQgetvalue(boosts, i, 1), NULL, 10);
  return dflt;
}

static void cp_job(pawl_buf_t *b, const store_new_job_t *j, int64_t now,
                   int64_t boost_ms, int with_batch) {
  int64_t run_at = j->run_at ? j->run_at : now;
  unsigned char nfields[2] = {0, with_batch ? 20 : 19};
  pawl__buf_append(b, nfields, 2);
  cp_uuid(b, &j->id);
  cp_text(b, j->type);
  cp_text(b, j->queue ? j->queue : "default");
  /* A batch's child may wait for parents: linked after the
   * COPY (pg_batch_create()). */
  cp_i16(b, j->blocked || j->nafter ? PAWL_BLOCKED : PAWL_PENDING);
  cp_i32(b, j->priority);
  cp_i64(b, store_rank(j->priority, run_at, boost_ms));
  cp_jsonb(b, j->payload ? j->payload : "{}");
  cp_jsonb(b, j->params);
  cp_jsonb(b, j->tags ? j->tags : "[]");
  cp_time(b, run_at);
  cp_i32(b, j->max_attempts);
  cp_i32(b, j->timeout_s);
  cp_text(b, j->idempotency_key);
  cp_text(b, j->correlation_id);
  cp_text(b, j->enqueued_by);
  cp_time(b, now);
  cp_time(b, now);
  cp_text(b, j->resource);
  cp_i32(b, j->depth);
  if (with_batch) {
    if (j->batch_id)
      cp_uuid(b, j->batch_id);
    else
      cp_null(b);
  }
}

/* The rows go out in pieces of this size while the next ones are being
 * written, so that the server parses one piece while we build the next. */
#define PG_COPY_PIECE (256 * 1024)

/* Streams jobs[0..n) into a COPY under way, then ends it; the COPY's result
 * says whether the server took them. */
static int pg_copy_rows(pg_store_t *s, const store_new_job_t *jobs, size_t n,
                        int64_t now, int with_batch) {
  /* The queues' own age boosts, read in this transaction. */
  PGresult *boosts = NULL;
  int brc = pg_run(s, PG_QUEUE_BOOSTS, 0, NULL, &boosts,
                   "read the queues' age boosts");
  if (brc) return brc;
  if (PQntuples(boosts) == 0) {
    PQclear(boosts);
    boosts = NULL;
  }
  PGresult *res = PQexec(s->conn, with_batch ? PG_SQL_COPY_BATCH_JOBS
                                             : PG_SQL_COPY_JOBS);
  if (PQresultStatus(res) != PGRES_COPY_IN) {
    int rc = pg_fail(s, res, "insert jobs");
    PQclear(res);
    PQclear(boosts);
    return rc;
  }
  PQclear(res);
  pawl_buf_t b;
  pawl__buf_init(&b);
  static const char head[] = "PGCOPY\n\377\r\n";
  pawl__buf_append(&b, head, sizeof head); /* with its NUL, as the format says */
  cp_u32(&b, 0);                     /* flags */
  cp_u32(&b, 0);                     /* header extension length */
  int ok = 1;
  for (size_t i = 0; ok && i < n; i++) {
    cp_job(&b, &jobs[i], now,
           pg_boost_of(boosts, jobs[i].queue ? jobs[i].queue : "default",
                       s->boost_ms),
           with_batch);
    if (i + 1 == n) {
      unsigned char trailer[2] = {0xff, 0xff};
      pawl__buf_append(&b, trailer, 2);
    }
    if (b.oom) break;
    if (b.len >= PG_COPY_PIECE || i + 1 == n) {
      ok = PQputCopyData(s->conn, b.data, (int)b.len) == 1;
      pawl__buf_reset(&b);
    }
  }
  int oom = b.oom;
  pawl__buf_free(&b);
  PQclear(boosts);
  /* A COPY ended with an error message is rolled back by the server. */
  const char *abort = oom ? "out of memory" : !ok ? "sending failed" : NULL;
  ok = PQputCopyEnd(s->conn, abort) == 1 && ok;
  int rc = 0;
  /* Read every result, also after a failed send, so the connection is
   * ready for the next command. */
  while ((res = PQgetResult(s->conn)) != NULL) {
    if (!rc && !oom && PQresultStatus(res) != PGRES_COMMAND_OK)
      rc = pg_fail(s, res, "insert jobs");
    PQclear(res);
  }
  if (oom) return pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
  if (!ok && !rc) rc = pg_fail(s, NULL, "insert jobs");
  return rc;
}

/* Jobs without keys, in one COPY: the bulk path. "Now" is the transaction's
 * (as a multi-row INSERT would see it), read in the round trip that begins
 * it, or the injected clock's reading. */
static int pg_insert_many(pg_store_t *s, const store_new_job_t *jobs, size_t n,
                          pawl_id_t *ids, int *status) {
  int64_t now = 0;
  int rc = pg_ready(s);
  if (!rc && s->base.clock) {
    now = s->base.clock(s->base.clock_data);
    rc = pg_cmd(s, "BEGIN", "begin transaction");
  } else if (!rc) {
    rc = pg_query_int(s, "BEGIN; SELECT pawl_ms(now())", &now,
                      "begin transaction");
  }
  if (!rc) rc = pg_copy_rows(s, jobs, n, now, 0);
  rc = pg_end(s, rc);
  if (rc) return rc;
  for (size_t i = 0; i < n; i++) {
    ids[i] = jobs[i].id;
    status[i] = PAWL_ENQ_NEW;
  }
  return 0;
}

static int pg_insert(store_t *base, const store_new_job_t *jobs, size_t n,
                     pawl_id_t *ids, int *status) {
  pg_store_t *s = (pg_store_t *)base;
  if (n == 0) return 0;
  int keyed = 0;
  for (size_t i = 0; i < n && !keyed; i++)
    keyed = jobs[i].idempotency_key || jobs[i].business_key ||
            jobs[i].ordering_key || /* ordering_seq: not in the COPY */
            jobs[i].signal_key ||   /* its row of pawl_signals */
            jobs[i].nafter || jobs[i].after_prev || /* dependencies */
            jobs[i].instance_key;   /* pawl_instances */
  if (!keyed && n > 1) return pg_insert_many(s, jobs, n, ids, status);
  /* One statement needs no transaction of its own. */
  if (n == 1 && !jobs[0].idempotency_key && !jobs[0].signal_key &&
      !jobs[0].nafter && !jobs[0].instance_key)
    return pg_insert_one(s, &jobs[0], NULL, &ids[0], &status[0]);
  int rc = pg_begin(s);
  for (size_t i = 0; i < n && !rc; i++)
    rc = pg_insert_one(s, &jobs[i], i ? &ids[i - 1] : NULL, &ids[i],
                       &status[i]);
  return pg_end(s, rc);
}

static int pg_get(store_t *base, const pawl_id_t *id, pawl_job_t **out) {
  return pg_read_job((pg_store_t *)base, id, 0, out);
}

/* Shows each job of a listing's result to `cb` (the result is complete
 * before the first callback, so a callback may call anything on this
 * handle); frees the result. */
static int pg_list_rows(pg_store_t *s, PGresult *res, pawl_job_cb cb,
                        void *data) {
  int rc = 0;
  for (int i = 0; i < PQntuples(res); i++) {
    pawl_job_t *j = pg_row_to_job(res, i);
    if (!j) {
      rc = pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
      break;
    }
    int stop = cb(j, data);
    pawl_job_free(j);
    if (stop) break;
  }
  PQclear(res);
  return rc;
}

static int pg_adm_list(store_t *base, const pawl_filter_t *f, pawl_job_cb cb,
                       void *data);

static int pg_list(store_t *base, const pawl_filter_t *f, pawl_job_cb cb,
                   void *data) {
  pg_store_t *s = (pg_store_t *)base;
  if (f->tag || f->older_than_ms) return pg_adm_list(base, f, cb, data);
  pg_params_t pp;
  pp_opt_int(&pp, 0, f->state >= 0, f->state);
  pp_str(&pp, 1, f->queue);
  pp_str(&pp, 2, f->type);
  pp_int(&pp, 3, f->limit > 0 ? f->limit : 100);
  PGresult *res;
  int rc = pg_run(s, f->state == PAWL_FAILED ? PG_LIST_FAILED : PG_LIST, 4,
                  pp.v, &res, "list jobs");
  return rc ? rc : pg_list_rows(s, res, cb, data);
}

static int pg_find_idempotent(store_t *base, const char *key, pawl_id_t *out) {
  return pg_find_id((pg_store_t *)base, PG_IDEM_FIND, key, out);
}

static int pg_find_business(store_t *base, const char *key, pawl_id_t *out) {
  return pg_find_id((pg_store_t *)base, PG_BIZ_FIND, key, out);
}

static int pg_progress(store_t *base, const pawl_id_t *id,
                       const pawl_id_t *token, int32_t attempt, double done,
                       double total) {
  pg_store_t *s = (pg_store_t *)base;
  pg_params_t pp;
  pp_dbl(&pp, 0, done);
  pp_dbl(&pp, 1, total);
  pp_id(&pp, 2, id);
  pp_id(&pp, 3, token);
  pp_int(&pp, 4, attempt);
  PGresult *res;
  int rc = pg_run(s, PG_PROGRESS, 5, pp.v, &res, "record progress");
  if (rc) return rc;
  long n = pg_changed(res);
  PQclear(res);
  return n == 1 ? 0 : pawl__store_not_held(&s->base, id, attempt);
}

/* ---- claim and leases ----------------------------------------------------- */

typedef struct pg_ranked {
  pawl_job_t *job;
  int64_t rank;
} pg_ranked_t;

/* Claim order: rank descending, then run_at, then id. RETURNING does not
 * keep the subquery's order, so the batch is sorted here. */
static int pg_ranked_cmp(const void *a, const void *b) {
  const pg_ranked_t *x = a, *y = b;
  if (x->rank != y->rank) return x->rank > y->rank ? -1 : 1;
  if (x->job->run_at != y->job->run_at)
    return x->job->run_at < y->job->run_at ? -1 : 1;
  return memcmp(x->job->id.bytes, y->job->id.bytes, 16);
}

/* A text[] literal of queue names; NULL when out of memory (pawl__free() it). */
static char *pg_queues_array(const char *const *queues, size_t n) {
  pawl_buf_t b;
  arr_begin(&b);
  for (size_t i = 0; i < n; i++) arr_str(&b, queues[i]);
  arr_end(&b);
  if (b.oom) {
    pawl__buf_free(&b);
    return NULL;
  }
  return b.data;
}

/* ---- limits --------------------------------------------------------------
 *
 * The claim's steps are in stores/store.h ("limits"). A database without
 * limits keeps the one-statement claim (PG_SQL_CLAIM), which takes nothing
 * when limits exist (PG_SQL_CLAIM_NO_LIMITS); the claim then runs
 * pg_claim_limited(), and goes on doing so while limits are there
 * (limits_seen).
 *
 * Why locking every limit row (PG_LIMITS_LOCK) is enough to keep each
 * limit's bounds with any number of nodes claiming at once:
 * - every claim that may start a job under a limit holds the locks of all
 *   limit rows from before it counts the running jobs until it commits
 *   the jobs it took and the windows it counted. Two such claims are
 *   therefore serialized, and the second one's counting statements, each
 *   with a snapshot of its own (READ COMMITTED) taken after its lock
 *   wait, see the first one's running jobs and window counts;
 * - a claim that saw no limits at all (the one-statement claim, whose
 *   snapshot had no limit row) may start jobs while a limit is being set:
 *   a limit binds the claims that begin after it was committed, as it
 *   binds nothing that was already running;
 * - nothing else makes a job running (lease recovery, finishes, operator
 *   actions only end running states), so nothing else can raise a count;
 *   what lowers one without the lock (a finish) only makes a claim that
 *   misses it take fewer;
 * - the picked jobs are locked (FOR UPDATE SKIP LOCKED) and taken in the
 *   same transaction; they cannot be taken twice.
 * Claims on a database with limits wait for each other for the length of
 * a claim transaction (a few round trips), which bounds how many claims a
 * second the cluster makes then, not how many jobs each takes. Claimers
 * lock in name order and lock nothing else they wait for (job rows are
 * skipped when locked), so they never deadlock. */

/* *none = 1 when the database has no limits. */
static int pg_limits_any(pg_store_t *s, int *none) {
  PGresult *res;
  int rc = pg_run(s, PG_LIMITS_ANY, 0, NULL, &res, "read limits");
  if (rc) return rc;
  *none = PQntuples(res) == 0;
  PQclear(res);
  return 0;
}

/* The limits of a PG_LIMITS_LOCK or PG_LIMITS_READ result into l, with
 * the "now" they were read at. */
static int pg_limits_rows(pg_store_t *s, PGresult *res, int with_running,
                          store_limits_t *l, int64_t *now) {
  int rows = PQntuples(res);
  for (int i = 0; i < rows; i++) {
    if (pawl__store_limits_add(l, pg_val(res, i, 0), pg_int(res, i, 1),
                               pg_int(res, i, 2), pg_int(res, i, 3),
                               pg_int(res, i, 4), pg_int(res, i, 5)))
      return pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
    if (with_running) l->v[l->n - 1].running = pg_int(res, i, 7);
    *now = pg_int(res, i, 6);
  }
  return 0;
}

/* The running jobs of the limits with a max_running (after the lock). */
static int pg_limits_running(pg_store_t *s, store_limits_t *l) {
  pawl_buf_t names;
  arr_begin(&names);
  for (size_t i = 0; i < l->n; i++)
    if (l->v[i].max_running) arr_str(&names, l->v[i].name);
  arr_end(&names);
  if (names.len <= 2) {
    pawl__buf_free(&names);
    return 0;
  }
  if (names.oom) {
    pawl__buf_free(&names);
    return pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
  }
  const char *v[1] = {names.data};
  PGresult *res;
  int rc = pg_run(s, PG_LIMITS_RUNNING, 1, v, &res, "count running jobs");
  pawl__buf_free(&names);
  if (rc) return rc;
  for (int r = 0; r < PQntuples(res); r++)
    for (size_t i = 0; i < l->n; i++)
      if (!strcmp(l->v[i].name, pg_val(res, r, 0)))
        l->v[i].running = pg_int(res, r, 1);
  PQclear(res);
  return 0;
}

/* A text[] literal of the limits with nothing left: their queues
 * (`queues` set) or their resources. */
static void pg_limits_blocked(const store_limits_t *l, int queues,
                              pawl_buf_t *b) {
  arr_begin(b);
  for (size_t i = 0; i < l->n; i++) {
    const char *q = pawl__store_limit_queue(&l->v[i]);
    if (pawl__store_limit_blocked(&l->v[i]) && !q == !queues)
      arr_str(b, queues ? q : l->v[i].name);
  }
  arr_end(b);
}

/* Step 5: the rate windows of the limits that counted starts. */
static int pg_limits_save(pg_store_t *s, const store_limits_t *l) {
  pawl_buf_t names, starts, counts;
  arr_begin(&names);
  arr_begin(&starts);
  arr_begin(&counts);
  int any = 0;
  for (size_t i = 0; i < l->n; i++) {
    int64_t start, count;
    if (!pawl__store_limit_window(&l->v[i], &start, &count)) continue;
    arr_str(&names, l->v[i].name);
    arr_int(&starts, start);
    arr_int(&counts, count);
    any = 1;
  }
  arr_end(&names);
  arr_end(&starts);
  arr_end(&counts);
  int rc = 0;
  if (names.oom || starts.oom || counts.oom)
    rc = pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
  else if (any) {
    const char *v[3] = {names.data, starts.data, counts.data};
    rc = pg_run(s, PG_LIMITS_WINDOWS, 3, v, NULL,
                "count starts under a rate limit");
  }
  pawl__buf_free(&names);
  pawl__buf_free(&starts);
  pawl__buf_free(&counts);
  return rc;
}

static int pg_claimed_jobs(pg_store_t *s, PGresult *res, pawl_job_t ***out,
                           size_t *n);

/* Steps 3 to 5 with the limits locked and planned: picks, admits, takes
 * and counts. */
static int pg_claim_admit(pg_store_t *s, const store_claim_t *c,
                          store_limits_t *l, const char *queues,
                          pawl_job_t ***out, size_t *n) {
  pawl_buf_t res_b, qs_b, ids;
  pg_limits_blocked(l, 0, &res_b);
  pg_limits_blocked(l, 1, &qs_b);
  arr_begin(&ids);
  int rc = 0;
  if (res_b.oom || qs_b.oom)
    rc = pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
  pg_params_t pp;
  /* A closed lane (a limit with nothing left, a paused queue), or a claim
   * for several queues: pick by lanes, so that the jobs of closed lanes and
   * of other queues are not walked (PG_SQL_LANE_IDS). */
  int closed = s->paused || res_b.len > 2 || qs_b.len > 2 || c->nqueues > 1;
  int which = closed ? PG_CLAIM_LIM_LANES : PG_CLAIM_LIM_PICK, np = 4;
  if (c->nqueues) {
    which += c->nqueues == 1 ? 1 : 2;
    pp_str(&pp, 4, c->nqueues == 1 ? c->queues[0] : queues);
    np = 5;
  }
  pp_now(s, &pp, 0);
  pp_str(&pp, 1, res_b.data);
  pp_str(&pp, 2, qs_b.data);
  pp_int(&pp, 3, (int64_t)c->max);
  PGresult *res = NULL;
  if (!rc) rc = pg_run(s, which, np, pp.v, &res, "pick jobs to claim");
  size_t taken = 0;
  for (int i = 0; !rc && i < PQntuples(res); i++) {
    if (!pawl__store_limits_admit(l, pg_val(res, i, 1), pg_val(res, i, 2)))
      continue;
    arr_sep(&ids);
    pawl__buf_puts(&ids, pg_val(res, i, 0));
    taken++;
  }
  arr_end(&ids);
  PQclear(res);
  pawl__buf_free(&res_b);
  pawl__buf_free(&qs_b);
  if (!rc && ids.oom) rc = pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
  if (rc || taken == 0) {
    pawl__buf_free(&ids);
    return rc;
  }
  pp_now(s, &pp, 0);
  pp_str(&pp, 1, c->owner);
  pp_id(&pp, 2, c->token);
  pp_int(&pp, 3, c->lease_ms);
  pp_int(&pp, 4, (int64_t)taken);
  pp_str(&pp, 5, ids.data);
  rc = pg_run(s, PG_CLAIM_LIM_TAKE, 6, pp.v, &res, "claim jobs");
  pawl__buf_free(&ids);
  if (rc) return rc;
  if ((size_t)PQntuples(res) != taken) {
    PQclear(res);
    return pawl__store_fail(&s->base, PAWL_ESTORE,
                            "claim: %zu jobs picked and locked, but not all "
                            "were taken", taken);
  }
  if ((rc = pg_limits_save(s, l))) {
    PQclear(res);
    return rc;
  }
  return pg_claimed_jobs(s, res, out, n);
}

/* The claim on a database with limits, in one transaction (see above).
 * *none = 1 (and nothing claimed) when there are no limits after all. */
static int pg_claim_limited(pg_store_t *s, const store_claim_t *c,
                            pawl_job_t ***out, size_t *n, int *none) {
  *none = 0;
  char *queues = NULL;
  if (c->nqueues > 1 && !(queues = pg_queues_array(c->queues, c->nqueues)))
    return pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
  store_limits_t l = {0};
  int64_t now = 0;
  pg_params_t pp;
  pp_now(s, &pp, 0);
  PGresult *res = NULL;
  int rc = pg_begin(s);
  if (!rc) rc = pg_run(s, PG_LIMITS_LOCK, 1, pp.v, &res, "lock limits");
  if (!rc) {
    *none = PQntuples(res) == 0;
    rc = pg_limits_rows(s, res, 0, &l, &now);
    PQclear(res);
  }
  if (!rc && !*none) rc = pg_limits_running(s, &l);
  if (!rc && !*none) {
    pawl__store_limits_plan(&l, now, c->limited_max);
    rc = pg_claim_admit(s, c, &l, queues, out, n);
  }
  pawl__store_limits_free(&l);
  pawl__free(queues);
  rc = pg_end(s, rc);
  if (rc && *out) {
    /* Not committed: the jobs are not ours. */
    pawl_jobs_free(*out, *n);
    *out = NULL;
    *n = 0;
  }
  return rc;
}

/* next_due() on a database with limits: as sq_next_due_limited(). */
static int pg_next_due_limited(pg_store_t *s, store_limits_t *l,
                               const char *const *queues, size_t nqueues,
                               const char *arr, int64_t *run_at) {
  pawl_buf_t res_b, qs_b;
  pg_limits_blocked(l, 0, &res_b);
  pg_limits_blocked(l, 1, &qs_b);
  int rc = 0;
  int64_t at = 0;
  if (res_b.oom || qs_b.oom)
    rc = pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
  for (size_t i = 0; !rc && i <= l->n; i++) {
    const store_limit_t *lim = i ? &l->v[i - 1] : NULL;
    const char *v[3] = {arr, res_b.data, qs_b.data};
    int which = PG_NEXT_DUE_LIM, np = 3;
    int64_t floor = 0;
    if (lim) {
      if (!lim->rate_blocked) continue;
      const char *q = pawl__store_limit_queue(lim);
      int mine = !q || nqueues == 0;
      for (size_t k = 0; !mine && k < nqueues; k++)
        mine = !strcmp(q, queues[k]);
      if (!mine) continue;
      which = q ? PG_NEXT_DUE_LIM_QUEUE : PG_NEXT_DUE_LIM_RES;
      v[0] = q ? q : lim->name;
      v[1] = arr;
      np = q ? 1 : 2;
      floor = pawl__store_limit_window_end(lim);
    }
    PGresult *res;
    if ((rc = pg_run(s, which, np, v, &res, "find next due job"))) break;
    if (PQntuples(res) && !PQgetisnull(res, 0, 0)) {
      int64_t due = pg_int(res, 0, 0);
      if (due < floor) due = floor;
      if (!at || due < at) at = due;
    }
    PQclear(res);
  }
  pawl__buf_free(&res_b);
  pawl__buf_free(&qs_b);
  if (!rc) *run_at = at;
  return rc;
}

static int pg_limit_set(store_t *base, const char *name, int64_t max_running,
                        int64_t rate, int64_t window_ms) {
  pg_store_t *s = (pg_store_t *)base;
  pg_params_t pp;
  pp_str(&pp, 0, name);
  pp_opt_int(&pp, 1, max_running > 0, max_running);
  pp_opt_int(&pp, 2, rate > 0, rate);
  pp_opt_int(&pp, 3, rate > 0, window_ms);
  pp_now(s, &pp, 4);
  return pg_run(s, PG_LIMIT_SET, 5, pp.v, NULL, "set limit");
}

/* ---- job types ----------------------------------------------------------- */

static int pg_types_sync(store_t *base, const char *types) {
  pg_store_t *s = (pg_store_t *)base;
  pg_params_t pp;
  pp_str(&pp, 0, types);
  pp_now(s, &pp, 1);
  return pg_run(s, PG_TYPES_SYNC, 2, pp.v, NULL, "record job types");
}

static int pg_type_get(store_t *base, const char *type, char **out,
                       char **branches) {
  pg_store_t *s = (pg_store_t *)base;
  *out = NULL;
  if (branches) *branches = NULL;
  const char *v[1] = {type};
  PGresult *res;
  int rc = pg_run(s, PG_TYPE_REDACT, 1, v, &res, "read a job type");
  if (rc) return rc;
  if (PQntuples(res) == 1 &&
      (pawl__store_dup(out, pg_val(res, 0, 0)) ||
       (branches && !PQgetisnull(res, 0, 1) &&
        pawl__store_dup(branches, pg_val(res, 0, 1))))) {
    pawl__free(*out);
    *out = NULL;
    rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
  }
  PQclear(res);
  return rc;
}

static int pg_limit_remove(store_t *base, const char *name) {
  pg_store_t *s = (pg_store_t *)base;
  const char *v[1] = {name};
  PGresult *res;
  int rc = pg_run(s, PG_LIMIT_REMOVE, 1, v, &res, "remove limit");
  if (rc) return rc;
  long n = pg_changed(res);
  PQclear(res);
  if (n == 0)
    return pawl__store_fail(base, PAWL_ENOTFOUND, "no limit named \"%s\"",
                            name);
  return 0;
}

static int pg_limit_list(store_t *base, pawl_limit_t **out, size_t *n) {
  pg_store_t *s = (pg_store_t *)base;
  *out = NULL;
  *n = 0;
  PGresult *res;
  int rc = pg_run(s, PG_LIMIT_LIST, 0, NULL, &res, "list limits");
  if (rc) return rc;
  pawl_limit_t *v = NULL;
  size_t count = 0;
  for (int i = 0; i < PQntuples(res); i++) {
    pawl_limit_t *lim = pawl__store_push((void **)&v, &count, sizeof *lim);
    if (!lim || pawl__store_dup(&lim->name, pg_val(res, i, 0))) {
      rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
      break;
    }
    lim->max_running = pg_int(res, i, 1);
    lim->rate = pg_int(res, i, 2);
    lim->rate_window_ms = pg_int(res, i, 3);
    lim->window_start = pg_int(res, i, 4);
    lim->window_count = pg_int(res, i, 5);
    lim->updated_at = pg_int(res, i, 6);
    lim->running = pg_int(res, i, 7);
  }
  PQclear(res);
  if (rc) {
    pawl_limits_free(v, count);
    return rc;
  }
  *out = v;
  *n = count;
  return 0;
}

/* How many rows held by time, and how many logged key changes, one claim's
 * first step settles at most (pawl_claim_prepare(), V017): bounds the
 * step's cost when a million future jobs come due at once; the next
 * claims do the rest. */
#define PG_PREPARE_MAX "1000"

static int pg_claim_pick(store_t *base, const store_claim_t *c,
                         pawl_job_t ***out, size_t *n) {
  pg_store_t *s = (pg_store_t *)base;
  *out = NULL;
  *n = 0;
  if (c->max == 0) return 0;
  {
    pg_params_t pp;
    pp_now(s, &pp, 0);
    pp_str(&pp, 1, PG_PREPARE_MAX);
    PGresult *res;
    int rc = pg_run(s, PG_CLAIM_PREPARE, 2, pp.v, &res, "prepare the claim");
    if (rc) return rc;
    s->paused = PQntuples(res) == 1 && !strcmp(pg_val(res, 0, 0), "t");
    PQclear(res);
  }
  if (s->limits_seen) {
    /* The last claim found limits: likely still there. */
    int none = 0;
    int rc = pg_claim_limited(s, c, out, n, &none);
    if (rc || !none) return rc;
    s->limits_seen = 0;
  }
  char *queues = NULL;
  /* A paused queue, or several queues: claim by lanes (PG_SQL_LANE_IDS),
   * so that the jobs of the paused queue or of other queues, which the
   * claim's index has among the others, are not walked. */
  int which = s->paused || c->nqueues > 1 ? PG_CLAIM_LANES : PG_CLAIM, np = 5;
  pg_params_t pp;
  if (c->nqueues == 1) {
    which += 1;
    pp_str(&pp, 5, c->queues[0]);
    np = 6;
  } else if (c->nqueues > 1) {
    if (!(queues = pg_queues_array(c->queues, c->nqueues)))
      return pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
    which += 2;
    pp_str(&pp, 5, queues);
    np = 6;
  }
  pp_now(s, &pp, 0);
  pp_str(&pp, 1, c->owner);
  pp_id(&pp, 2, c->token);
  pp_int(&pp, 3, c->lease_ms);
  pp_int(&pp, 4, (int64_t)c->max);
  PGresult *res;
  int rc = pg_run(s, which, np, pp.v, &res, "claim jobs");
  pawl__free(queues);
  if (rc) return rc;
  /* Limits: nothing claimed may mean that the database has
   * limits (PG_SQL_CLAIM_NO_LIMITS); then the claim that applies them. */
  if (PQntuples(res) == 0) {
    PQclear(res);
    int none = 0;
    if ((rc = pg_limits_any(s, &none)) || none) return rc;
    s->limits_seen = 1;
    return pg_claim_limited(s, c, out, n, &none);
  }
  return pg_claimed_jobs(s, res, out, n);
}

/* Claims (pg_claim_pick), then marks the jobs claimed ahead of a free
 * worker (from c->ahead_from on, in claim order) as not started, in a
 * statement of their own: until it commits they show as running since
 * their claim, as every claimed job did before. If it fails they stay so
 * (the claim holds); their outcomes carry their true start anyway. */
static int pg_claim(store_t *base, const store_claim_t *c, pawl_job_t ***out,
                    size_t *n) {
  pg_store_t *s = (pg_store_t *)base;
  int rc = pg_claim_pick(base, c, out, n);
  if (rc || *n <= c->ahead_from) return rc;
  pawl_buf_t ids;
  arr_begin(&ids);
  for (size_t i = c->ahead_from; i < *n; i++) arr_id(&ids, &(*out)[i]->id);
  arr_end(&ids);
  if (!ids.oom) {
    pg_params_t pp;
    pp_str(&pp, 0, ids.data);
    pp_id(&pp, 1, c->token);
    if (pg_run(s, PG_AHEAD, 2, pp.v, NULL, "mark jobs claimed ahead") == 0)
      for (size_t i = c->ahead_from; i < *n; i++) (*out)[i]->started_at = 0;
  }
  pawl__buf_free(&ids);
  return 0;
}

/* The jobs of a claim's result (RETURNING PG_JOB_COLS), in claim order;
 * frees the result. */
static int pg_claimed_jobs(pg_store_t *s, PGresult *res, pawl_job_t ***out,
                           size_t *n) {
  store_t *base = &s->base;
  int rc = 0;
  size_t got = (size_t)PQntuples(res);
  pg_ranked_t *ranked = pawl__calloc(got ? got : 1, sizeof *ranked);
  pawl_job_t **jobs = pawl__malloc((got ? got : 1) * sizeof *jobs);
  if (!ranked || !jobs) rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
  size_t built = 0;
  for (; !rc && built < got; built++) {
    ranked[built].job = pg_row_to_job(res, (int)built);
    ranked[built].rank = pg_int(res, (int)built, PG_JOB_RANK_COL);
    if (!ranked[built].job) rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
  }
  PQclear(res);
  if (rc) {
    /* The jobs are claimed but cannot be handed out: their leases expire
     * and recovery takes them back. */
    for (size_t i = 0; ranked && i < built; i++) pawl_job_free(ranked[i].job);
    pawl__free(ranked);
    pawl__free(jobs);
    return rc;
  }
  qsort(ranked, got, sizeof *ranked, pg_ranked_cmp);
  for (size_t i = 0; i < got; i++) jobs[i] = ranked[i].job;
  pawl__free(ranked);
  if (got == 0) {
    pawl__free(jobs);
    jobs = NULL;
  }
  *out = jobs;
  *n = got;
  return 0;
}

static int pg_extend(store_t *base, const pawl_id_t *token, int64_t lease_ms,
                     size_t *n) {
  pg_store_t *s = (pg_store_t *)base;
  pg_params_t pp;
  pp_now(s, &pp, 0);
  pp_int(&pp, 1, lease_ms);
  pp_id(&pp, 2, token);
  PGresult *res;
  int rc = pg_run(s, PG_EXTEND, 3, pp.v, &res, "extend leases");
  if (rc) return rc;
  if (n) *n = (size_t)pg_changed(res);
  PQclear(res);
  return 0;
}

static int pg_extend_one(store_t *base, const pawl_id_t *id,
                         const pawl_id_t *token, int32_t attempt,
                         int64_t lease_ms, int *held) {
  pg_store_t *s = (pg_store_t *)base;
  pg_params_t pp;
  pp_now(s, &pp, 0);
  pp_int(&pp, 1, lease_ms);
  pp_id(&pp, 2, id);
  pp_id(&pp, 3, token);
  pp_int(&pp, 4, attempt);
  PGresult *res;
  int rc = pg_run(s, PG_EXTEND_ONE, 5, pp.v, &res, "extend lease");
  if (rc) return rc;
  *held = pg_changed(res) == 1;
  PQclear(res);
  return 0;
}

static int pg_next_due(store_t *base, const char *const *queues,
                       size_t nqueues, int64_t *run_at) {
  pg_store_t *s = (pg_store_t *)base;
  char *arr = NULL;
  int which = PG_NEXT_DUE, np = 0;
  const char *v[1] = {NULL};
  /* Limits: a job held back by one is not due. */
  {
    pg_params_t pp;
    pp_now(s, &pp, 0);
    PGresult *lr;
    int rc = pg_run(s, PG_LIMITS_READ, 1, pp.v, &lr, "read limits");
    if (rc) return rc;
    store_limits_t l = {0};
    int64_t now = 0;
    rc = pg_limits_rows(s, lr, 1, &l, &now);
    PQclear(lr);
    if (!rc && l.n) {
      pawl__store_limits_plan(&l, now, SIZE_MAX);
      if (nqueues && !(arr = pg_queues_array(queues, nqueues)))
        rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
      else
        rc = pg_next_due_limited(s, &l, queues, nqueues, arr, run_at);
    }
    int had = l.n > 0;
    pawl__store_limits_free(&l);
    pawl__free(arr);
    arr = NULL;
    if (rc || had) return rc;
  }
  if (nqueues == 1) {
    which = PG_NEXT_DUE_QUEUE;
    v[0] = queues[0];
    np = 1;
  } else if (nqueues > 1) {
    if (!(arr = pg_queues_array(queues, nqueues)))
      return pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
    which = PG_NEXT_DUE_QUEUES;
    v[0] = arr;
    np = 1;
  }
  PGresult *res;
  int rc = pg_run(s, which, np, v, &res, "find next due job");
  pawl__free(arr);
  if (rc) return rc;
  /* min() over no rows is one NULL row: 0, "none pending". */
  *run_at = PQntuples(res) ? pg_int(res, 0, 0) : 0;
  PQclear(res);
  return 0;
}

/* ---- finishing attempts --------------------------------------------------- */

/* Fills an END_ATTEMPT call (see its SQL for the parameters). */
/* The parameters of PG_RUN_START. */
static void pg_run_start_params(pg_store_t *s, pg_params_t *pp,
                                const pawl_id_t *id, const pawl_id_t *token,
                                int32_t attempt, int64_t at) {
  pp_now(s, pp, 0);
  pp_id(pp, 1, id);
  pp_id(pp, 2, token);
  pp_int(pp, 3, at);
  pp_int(pp, 4, attempt);
}

static void pg_end_attempt_call(pg_store_t *s, pg_call_t *c,
                                const pawl_id_t *id, const char *outcome,
                                const char *error, const pawl_id_t *token,
                                int32_t attempt, int to, const char *reason,
                                int64_t run_at, int give_back,
                                const char *last_error, int recovered,
                                int ordering_skip, int64_t started_at,
                                int64_t ended_at, const char *trace) {
  pg_params_t *p = &c->p;
  c->stmt = PG_END_ATTEMPT;
  c->n = 17;
  pp_now(s, p, 0);
  pp_id(p, 1, id);
  pp_str(p, 2, outcome);
  pp_str(p, 3, error);
  pp_id(p, 4, token);
  pp_int(p, 5, attempt);
  pp_int(p, 6, to);
  pp_str(p, 7, reason);
  if (run_at)
    pp_int(p, 8, run_at);
  else
    pp_str(p, 8, NULL);
  pp_int(p, 9, give_back);
  pp_int(p, 10, s->boost_ms);
  pp_str(p, 11, last_error);
  pp_int(p, 12, recovered);
  pp_str(p, 13, ordering_skip ? "true" : "false");
  if (started_at)
    pp_int(p, 14, started_at);
  else
    pp_str(p, 14, NULL);
  if (ended_at)
    pp_int(p, 15, ended_at);
  else
    pp_str(p, 15, NULL);
  pp_str(p, 16, trace);
}

static int pg_id_cmp(const void *a, const void *b) {
  return memcmp(((const pawl_id_t *)a)->bytes, ((const pawl_id_t *)b)->bytes,
                16);
}

/* One finish call's batch: the pipeline's calls, and the arrays the
 * successes and the log lines travel in (one statement each). */
typedef struct pg_batch {
  size_t n;                  /* outcomes */
  int *local;                /* rcs when the caller gave none */
  /* At most: one call for the logs, one for the successes, one per other
   * outcome, one for the trim of old throughput buckets. Reasons with numbers in them need storage that outlives the
   * loop: one per outcome. */
  pg_call_t *calls;
  size_t ncalls;
  char (*why)[96];
  size_t *call_of;           /* each outcome's call; SIZE_MAX: none */
  size_t succ_call;          /* the successes' call; SIZE_MAX: none */
  size_t nsucc, nlogs;
  pawl_buf_t ids, attempts, results, starts, ends;
  pawl_buf_t lids, latt, lat, llevel, lmsg, lfields;
  /* Dependencies: the jobs the batch ends (succeeded, failed),
   * whose children it releases; the successes with fired branches. */
  size_t nended, nbranches;
  pawl_buf_t ended, bids, branches;
} pg_batch_t;

#define PG_BATCH_BUFS(b)                                                     \
  {&(b)->ids, &(b)->attempts, &(b)->results, &(b)->lids, &(b)->latt,         \
   &(b)->lat, &(b)->llevel, &(b)->lmsg, &(b)->lfields, &(b)->ended,          \
   &(b)->bids, &(b)->branches, &(b)->starts, &(b)->ends}

static void pg_batch_free(pg_batch_t *b) {
  pawl_buf_t *bufs[] = PG_BATCH_BUFS(b);
  pg_calls_free(b->calls, b->ncalls);
  pawl__free(b->why);
  pawl__free(b->call_of);
  pawl__free(b->local);
  for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) pawl__buf_free(bufs[i]);
}

/* Allocates the batch for n outcomes; -1 when out of memory (freed). */
static int pg_batch_init(pg_batch_t *b, size_t n, int need_rcs) {
  memset(b, 0, sizeof *b);
  pawl_buf_t *bufs[] = PG_BATCH_BUFS(b);
  for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) arr_begin(bufs[i]);
  b->n = n;
  b->succ_call = SIZE_MAX;
  b->local = need_rcs ? pawl__calloc(n ? n : 1, sizeof *b->local) : NULL;
  b->calls = pawl__calloc(n + 5, sizeof *b->calls);
  b->why = pawl__calloc(n ? n : 1, sizeof *b->why);
  b->call_of = pawl__calloc(n ? n : 1, sizeof *b->call_of);
  if ((need_rcs && !b->local) || !b->calls || !b->why || !b->call_of) {
    pg_batch_free(b);
    return -1;
  }
  return 0;
}

/* The trim of the throughput buckets too old to be read (store.h,
 * "Throughput"), as the batch's first call when this connection sees the
 * minute change. The minute is decided by this node's corrected clock, the
 * cutoff by the database's (the statement's pawl_now()). Rolled back with
 * a failed batch, and then simply done at the next minute. */
static void pg_tp_trim_call(pg_store_t *s, pg_batch_t *b) {
  int64_t minute = store_tp_minute(pawl__store_now(&s->base));
  if (minute == s->tp_minute) return;
  s->tp_minute = minute;
  pg_call_t *c = &b->calls[b->ncalls++];
  c->stmt = PG_TP_TRIM;
  c->n = 2;
  pp_now(s, &c->p, 0);
  pp_int(&c->p, 1, STORE_TP_KEEP);
}

/* Puts each outcome into the batch: its log lines and, for a success, its
 * id, attempt and result into the arrays; any other outcome gets a call of
 * its own (END_ATTEMPT, as pawl__store_plan_ending() decides). rcs[i] is 0,
 * or the refusal of an outcome of unknown kind. `now`: the batch's clock
 * reading (0: the database's). */
static void pg_batch_plan(pg_store_t *s, pg_batch_t *b, const pawl_id_t *token,
                          const pawl_outcome_t *outs, int64_t now, int *rcs) {
  for (size_t i = 0; i < b->n; i++) {
    const pawl_outcome_t *o = &outs[i];
    for (size_t k = 0; k < o->nlogs; k++, b->nlogs++) {
      const pawl_log_entry_t *l = &o->logs[k];
      arr_id(&b->lids, &o->id);
      arr_int(&b->latt, o->attempt);
      arr_opt_int(&b->lat, l->at);
      arr_str(&b->llevel, l->level);
      arr_str(&b->lmsg, l->message);
      arr_str(&b->lfields, l->fields);
    }
    rcs[i] = 0;
    if (o->kind == PAWL_OUT_SUCCEEDED) {
      arr_id(&b->ids, &o->id);
      arr_int(&b->attempts, o->attempt);
      arr_str(&b->results, o->result);
      arr_opt_int(&b->starts, o->started_at);
      arr_opt_int(&b->ends, o->ended_at);
      b->nsucc++;
      arr_id(&b->ended, &o->id);
      b->nended++;
      if (o->branches) {
        arr_id(&b->bids, &o->id);
        arr_str(&b->branches, o->branches);
        b->nbranches++;
      }
      continue;
    }
    if (o->kind == PAWL_OUT_STARTED) {
      /* Not an end: the body of a job claimed ahead started. */
      b->call_of[i] = b->ncalls;
      pg_call_t *c = &b->calls[b->ncalls++];
      c->stmt = PG_RUN_START;
      c->n = 5;
      pg_run_start_params(s, &c->p, &o->id, token, o->attempt, o->started_at);
      continue;
    }
    /* Delays in reasons are measured from the batch's clock reading; with
     * the database clock, from this node's corrected clock. */
    store_ending_t e;
    rcs[i] = pawl__store_plan_ending(&s->base, o,
                                     now ? now : pawl__store_now(&s->base), &e);
    if (rcs[i]) {
      b->call_of[i] = SIZE_MAX;
      continue;
    }
    memcpy(b->why[i], e.why, sizeof b->why[i]);
    if (e.to == PAWL_FAILED) {
      arr_id(&b->ended, &o->id);
      b->nended++;
    }
    b->call_of[i] = b->ncalls;
    pg_end_attempt_call(s, &b->calls[b->ncalls++], &o->id, e.outcome, e.error,
                        token, o->attempt, e.to, b->why[i],
                        e.run_at < 0 ? 0 : e.run_at, e.give_back, e.error, 0,
                        o->kind == PAWL_OUT_RETRY && o->ordering_skip,
                        o->started_at, o->ended_at,
                        o->kind == PAWL_OUT_FAILED || o->kind == PAWL_OUT_RETRY
                            ? o->trace
                            : NULL);
  }
}

/* Closes the arrays and adds the calls that carry them: the successes
 * (SUCCEED_MANY) and the log lines (LOG_MANY). -1 when out of memory. */
static int pg_batch_arrays(pg_store_t *s, pg_batch_t *b,
                           const pawl_id_t *token) {
  pawl_buf_t *bufs[] = PG_BATCH_BUFS(b);
  int oom = 0;
  for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) {
    arr_end(bufs[i]);
    oom |= bufs[i]->oom;
  }
  if (b->nsucc) {
    b->succ_call = b->ncalls;
    pg_call_t *c = &b->calls[b->ncalls++];
    c->stmt = PG_SUCCEED_MANY;
    c->n = 7;
    pp_now(s, &c->p, 0);
    pp_str(&c->p, 1, b->ids.data);
    pp_str(&c->p, 2, b->attempts.data);
    pp_str(&c->p, 3, b->results.data);
    pp_id(&c->p, 4, token);
    pp_str(&c->p, 5, b->starts.data);
    pp_str(&c->p, 6, b->ends.data);
  }
  if (b->nlogs) {
    pg_call_t *c = &b->calls[b->ncalls++];
    c->stmt = PG_LOG_MANY;
    c->n = 7;
    pp_now(s, &c->p, 0);
    pp_str(&c->p, 1, b->lids.data);
    pp_str(&c->p, 2, b->latt.data);
    pp_str(&c->p, 3, b->lat.data);
    pp_str(&c->p, 4, b->llevel.data);
    pp_str(&c->p, 5, b->lmsg.data);
    pp_str(&c->p, 6, b->lfields.data);
  }
  /* Dependencies: after the rows are written, the branches
   * that fired, then the release of the ended jobs' children (one
   * statement per batch; a job without children costs a probe of the
   * small index of open parents). */
  if (b->nbranches) {
    pg_call_t *c = &b->calls[b->ncalls++];
    c->stmt = PG_DEPS_BRANCHES;
    c->n = 3;
    pp_str(&c->p, 0, b->bids.data);
    pp_str(&c->p, 1, b->branches.data);
    pp_id(&c->p, 2, token);
  }
  if (b->nended) {
    pg_call_t *c = &b->calls[b->ncalls++];
    c->stmt = PG_DEPS_RELEASE;
    c->n = 2;
    pp_str(&c->p, 0, b->ended.data);
    pp_now(s, &c->p, 1);
  }
  return oom ? -1 : 0;
}

/* Each outcome's verdict from the pipeline's results: written, or stale
 * (PAWL_ELEASE: the job is no longer held under that attempt). */
static int pg_batch_verdicts(pg_store_t *s, pg_batch_t *b,
                             const pawl_outcome_t *outs, int *rcs) {
  int rc = 0;
  if (b->succ_call != SIZE_MAX) {
    /* The rows written, sorted, so that each outcome is looked up in
     * log time: batches are large. */
    PGresult *res = b->calls[b->succ_call].res;
    size_t nrows = (size_t)PQntuples(res);
    pawl_id_t *got = pawl__malloc((nrows ? nrows : 1) * sizeof *got);
    if (!got) {
      rc = pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
      nrows = 0;
    }
    for (size_t r = 0; r < nrows; r++) pg_id(res, (int)r, 0, &got[r]);
    if (nrows) qsort(got, nrows, sizeof *got, pg_id_cmp);
    for (size_t i = 0; i < b->n && got; i++) {
      if (outs[i].kind != PAWL_OUT_SUCCEEDED) continue;
      int hit = nrows && bsearch(&outs[i].id, got, nrows, sizeof *got,
                                 pg_id_cmp) != NULL;
      rcs[i] = hit ? 0 : PAWL_ELEASE;
    }
    pawl__free(got);
  }
  for (size_t i = 0; i < b->n; i++) {
    if (outs[i].kind == PAWL_OUT_SUCCEEDED || b->call_of[i] == SIZE_MAX)
      continue;
    rcs[i] = PQntuples(b->calls[b->call_of[i]].res) == 1 ? 0 : PAWL_ELEASE;
  }
  return rc;
}

/* A batch of outcomes in one pipeline (one round trip, one transaction):
 * the successes in one UPDATE joined with arrays of ids, the log lines in
 * one INSERT, each other outcome in a call of its own. */
static int pg_finish(store_t *base, const pawl_id_t *token,
                     const pawl_outcome_t *outs, size_t n, int *rcs) {
  pg_store_t *s = (pg_store_t *)base;
  pg_batch_t b;
  if (pg_batch_init(&b, n, rcs == NULL) != 0)
    return pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
  if (!rcs) rcs = b.local;
  /* The clock is read once: one batch, one "now" (as in one SQLite
   * transaction). With the database clock, now() is the transaction's. */
  int64_t now = s->base.clock ? s->base.clock(s->base.clock_data) : 0;
  pg_tp_trim_call(s, &b);
  pg_batch_plan(s, &b, token, outs, now, rcs);
  int rc = pg_batch_arrays(s, &b, token) != 0
               ? pawl__store_fail(base, PAWL_ENOMEM, "out of memory")
               : 0;
  if (!rc && b.ncalls) rc = pg_pipeline(s, b.calls, b.ncalls, "finish jobs");
  if (!rc) rc = pg_batch_verdicts(s, &b, outs, rcs);
  pg_batch_free(&b);
  return rc;
}

/* Takes back expired leases, each as pawl__store_plan_recovery() decides: back
 * to pending with the attempt counted, or failed when that was its last
 * attempt or it has been lost while running too often (a poison job that
 * keeps killing its node; only losses of attempts known to have started
 * count). */
static int pg_recover(store_t *base, size_t *n) {
  pg_store_t *s = (pg_store_t *)base;
  int rc = pg_begin(s);
  if (rc) return rc;
  pg_params_t pp;
  pp_now(s, &pp, 0);
  PGresult *lost;
  if ((rc = pg_run(s, PG_EXPIRED, 1, pp.v, &lost, "find expired leases")))
    return pg_end(s, rc);
  size_t count = 0;
  /* Dependencies: the jobs recovered into failed. */
  pawl_buf_t ended;
  arr_begin(&ended);
  size_t nended = 0;
  for (int i = 0; i < PQntuples(lost) && !rc; i++) {
    pawl_id_t id;
    pg_id(lost, i, 0, &id);
    const char *started = pg_val(lost, i, 6);
    store_lost_t row = {
        .attempt = (int32_t)pg_int(lost, i, 1),
        .max_attempts = (int32_t)pg_int(lost, i, 2),
        .recoveries = (int32_t)pg_int(lost, i, 3),
        .owner = pg_val(lost, i, 4),
        .crashes = (int32_t)pg_int(lost, i, 5),
        .started = started && started[0] == 't',
    };
    store_recovery_t plan;
    pawl__store_plan_recovery(&row, s->poison, &plan);
    pg_call_t c;
    memset(&c, 0, sizeof c);
    pg_end_attempt_call(s, &c, &id, "lost", plan.why, NULL, 0, plan.to,
                        plan.why, 0, 0, plan.why, 1, 0, 0, 0, NULL);
    PGresult *res;
    rc = pg_run(s, PG_END_ATTEMPT, c.n, c.p.v, &res, "recover job");
    if (!rc) {
      count += PQntuples(res) == 1;
      if (PQntuples(res) == 1 && plan.to == PAWL_FAILED) {
        arr_id(&ended, &id);
        nended++;
      }
      PQclear(res);
    }
    if (!rc && plan.crashed) {
      pg_params_t cp;
      pp_id(&cp, 0, &id);
      if (!(rc = pg_run(s, PG_CRASHED, 1, cp.v, &res, "count a crash")))
        PQclear(res);
    }
  }
  PQclear(lost);
  arr_end(&ended);
  if (!rc && ended.oom)
    rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
  if (!rc && nended) {
    pg_params_t dp;
    pp_str(&dp, 0, ended.data);
    pp_now(s, &dp, 1);
    rc = pg_run(s, PG_DEPS_RELEASE, 2, dp.v, NULL,
                "release the children of ended jobs");
  }
  pawl__buf_free(&ended);
  rc = pg_end(s, rc);
  if (!rc && n) *n = count;
  return rc;
}

static int pg_start(store_t *base, const pawl_id_t *id, const pawl_id_t *token,
                    int32_t attempt, int64_t at, int poison) {
  pg_store_t *s = (pg_store_t *)base;
  if (at) {
    pg_params_t rp;
    pg_run_start_params(s, &rp, id, token, attempt, at);
    PGresult *res;
    int rc = pg_run(s, PG_RUN_START, 5, rp.v, &res,
                    "record the start of an attempt");
    if (rc) return rc;
    int held = PQntuples(res) == 1;
    PQclear(res);
    if (!held) return pawl__store_not_held(base, id, attempt);
    if (!poison) return 0;
  }
  pg_params_t pp;
  pp_id(&pp, 0, id);
  pp_id(&pp, 1, token);
  pp_int(&pp, 2, attempt);
  PGresult *res;
  int rc = pg_run(s, PG_START, 3, pp.v, &res, "record the start of an attempt");
  if (rc) return rc;
  long changed = pg_changed(res);
  PQclear(res);
  return changed == 1 ? 0 : pawl__store_not_held(base, id, attempt);
}

/* ---- operator transitions ------------------------------------------------- */


/* The steps of pawl__store_transition() (see store.h), in PostgreSQL. */
static int pg_tx_begin(store_t *base) { return pg_begin((pg_store_t *)base); }

static int pg_tx_end(store_t *base, int rc) {
  return pg_end((pg_store_t *)base, rc);
}

/* Locked for update: the row stays as read until commit. */
static int pg_tx_read(store_t *base, const pawl_id_t *id, int for_update,
                      pawl_job_t **out) {
  return pg_read_job((pg_store_t *)base, id, for_update, out);
}

/* "Now" as the database sees it in this transaction. */
static int pg_tx_now(store_t *base, int64_t *now) {
  pg_store_t *s = (pg_store_t *)base;
  if (s->base.clock) {
    *now = s->base.clock(s->base.clock_data);
    return 0;
  }
  return pg_query_int(s, "SELECT pawl_ms(now())", now, "read clock");
}

static int pg_tx_end_attempt(store_t *base, const pawl_id_t *id, int64_t now,
                             const char *reason) {
  (void)now; /* the statement reads the transaction's clock (pp_now) */
  pg_store_t *s = (pg_store_t *)base;
  pg_params_t pp;
  pp_id(&pp, 0, id);
  pp_now(s, &pp, 1);
  pp_str(&pp, 2, "canceled");
  pp_str(&pp, 3, reason);
  return pg_run(s, PG_ATTEMPT_ADD, 4, pp.v, NULL, "record attempt");
}

static int pg_tx_event(store_t *base, const pawl_id_t *id, int64_t now,
                       int from, int to, const char *actor,
                       const char *reason, int32_t attempt) {
  (void)now;
  pg_store_t *s = (pg_store_t *)base;
  pg_params_t pp;
  pp_id(&pp, 0, id);
  pp_now(s, &pp, 1);
  pp_int(&pp, 2, from);
  pp_int(&pp, 3, to);
  pp_str(&pp, 4, actor);
  pp_str(&pp, 5, reason);
  pp_int(&pp, 6, attempt);
  return pg_run(s, PG_EVENT_ADD, 7, pp.v, NULL, "record event");
}

static int pg_batch_count_job(pg_store_t *s, const pawl_id_t *id,
                              const int64_t d[3]);

static int pg_tx_update(store_t *base, const pawl_job_t *j,
                        const store_plan_t *plan, int64_t now, int *changed) {
  (void)now;
  pg_store_t *s = (pg_store_t *)base;
  pg_params_t pp;
  pp_now(s, &pp, 0);
  pp_id(&pp, 1, &j->id);
  pp_int(&pp, 2, j->version);
  pp_int(&pp, 3, plan->to);
  pp_opt_int(&pp, 4, plan->paused_from >= 0, plan->paused_from);
  pp_int(&pp, 5, plan->run_at);
  pp_int(&pp, 6, s->boost_ms);
  pp_int(&pp, 7, plan->attempt);
  pp_str(&pp, 8, plan->last_error);
  pp_str(&pp, 9, plan->result);
  pp_opt_int(&pp, 10, plan->finished_at != 0, plan->finished_at);
  pp_int(&pp, 11, plan->recoveries);
  pp_opt_int(&pp, 12, plan->to == PAWL_RUNNING, j->lease_expires);
  PGresult *res;
  int rc = pg_run(s, PG_TRANSITION, 13, pp.v, &res, "update job");
  if (rc) return rc;
  *changed = pg_changed(res) == 1;
  PQclear(res);
  /* A child that ends or is taken back moves its batch's counters. */
  int64_t d[3];
  if (*changed && store_batch_delta(j->state, j->paused_from, plan->to,
                                    plan->paused_from, d))
    return pg_batch_count_job(s, &j->id, d);
  return 0;
}

static int pg_deps_release_one(pg_store_t *s, const pawl_id_t *id);

/* The job finished now (cancel, expire): into its throughput bucket, and
 * its children released. */
static int pg_tx_finished(store_t *base, const pawl_job_t *j, int to,
                          int64_t now) {
  (void)now; /* the statement reads the transaction's clock (pp_now) */
  pg_store_t *s = (pg_store_t *)base;
  pg_params_t pp;
  pp_now(s, &pp, 0);
  pp_int(&pp, 1, to);
  pp_str(&pp, 2, j->queue);
  int rc = pg_run(s, PG_TP_ADD, 3, pp.v, NULL, "count finished job");
  return rc ? rc : pg_deps_release_one(s, &j->id);
}

static int pg_tx_forget_starts(store_t *base, const pawl_id_t *id) {
  pg_store_t *s = (pg_store_t *)base;
  pg_params_t fp;
  pp_id(&fp, 0, id);
  return pg_run(s, PG_FORGET_START, 1, fp.v, NULL, "forget recorded starts");
}

/* Back to pending: other nodes hear of it at commit (NOTIFY). */
static int pg_tx_pending(store_t *base) {
  return pg_run((pg_store_t *)base, PG_NOTIFY, 0, NULL, NULL, "wake nodes");
}

static int pg_deps_reopen(store_t *base, const pawl_id_t *id, int64_t now,
                          const char *actor);

static const store_transition_steps_t pg_transition_steps = {
    .begin = pg_tx_begin,
    .end = pg_tx_end,
    .read = pg_tx_read,
    .now = pg_tx_now,
    .end_attempt = pg_tx_end_attempt,
    .add_event = pg_tx_event,
    .update = pg_tx_update,
    .forget_starts = pg_tx_forget_starts,
    .finished = pg_tx_finished,
    .pending = pg_tx_pending,
    .reopen = pg_deps_reopen,
};

static int pg_transition(store_t *base, const pawl_id_t *id, store_op_t op,
                         const char *actor, const char *owner,
                         const char *reason, pawl_job_t **out) {
  return pawl__store_transition(base, &pg_transition_steps, id, op, actor,
                                owner, reason, out);
}

/* ---- signals and replace ---------------------------------------------------
 * pawl_signals and pawl_replacements (schema/postgres/V008__signal.sql), in
 * READ COMMITTED. Exactly once: a delivery and an expiry each lock the
 * signal's row first (FOR UPDATE) and write it only from state 0 (waiting);
 * the job's own move is a compare-and-set on its locked row
 * (pawl__store_transition_in), so of two that race, one moves the job and
 * the other finds it done. */

/* The row of pawl_signals for a new job j (inserted just before, in the
 * caller's transaction). */
static int pg_sig_add(pg_store_t *s, const store_new_job_t *j) {
  pg_params_t pp;
  pp_str(&pp, 0, j->signal_key);
  int rc = pg_run(s, PG_SIG_RELEASE, 1, pp.v, NULL, "release signal key");
  if (rc) return rc;
  pp_id(&pp, 0, &j->id);
  pp_str(&pp, 1, j->signal_key);
  pp_now(s, &pp, 2);
  pp_opt_int(&pp, 3, j->signal_timeout_at != 0, j->signal_timeout_at);
  PGresult *res;
  if ((rc = pg_run(s, PG_SIG_ADD, 4, pp.v, &res, "record signal wait")))
    return rc;
  long added = pg_changed(res);
  PQclear(res);
  if (added) return 0;
  pp_str(&pp, 0, j->signal_key);
  if ((rc = pg_run(s, PG_SIG_HOLDER, 1, pp.v, &res, "look up signal key")))
    return rc;
  char text[PAWL_ID_STRLEN] = "?";
  if (PQntuples(res) > 0) {
    pawl_id_t holder;
    pg_id(res, 0, 0, &holder);
    pawl_id_format(&holder, text);
  }
  PQclear(res);
  return pawl__store_fail(&s->base, PAWL_EKEY,
                          "signal key \"%s\" is held by live job %s",
                          j->signal_key, text);
}

/* Expires the wait of job `id` for `key` whose deadline was `deadline`
 * (in the caller's transaction, its row locked by the caller): the row
 * leaves state waiting and the job goes blocked -> failed. *done: 1 if
 * this call ended the wait (0: it had ended already). A job that stopped
 * waiting otherwise (canceled) keeps its state; its wait is over all the
 * same. */
static int pg_sig_expire_one(pg_store_t *s, int64_t now, const pawl_id_t *id,
                             const char *key, int64_t deadline, int *done) {
  *done = 0;
  pg_params_t pp;
  pp_id(&pp, 0, id);
  PGresult *res;
  int rc = pg_run(s, PG_SIG_EXPIRE, 1, pp.v, &res, "expire signal wait");
  if (rc) return rc;
  long changed = pg_changed(res);
  PQclear(res);
  if (!changed) return 0;
  *done = 1;
  char why[300];
  pawl__store_signal_why(why, sizeof why, key, deadline);
  rc = pawl__store_transition_in(&s->base, &pg_transition_steps, now, id,
                                 STORE_OP_EXPIRE, "timeout", why, -1);
  if (rc == PAWL_ESTATE) {
    rc = 0;
    s->base.errmsg[0] = 0;
  }
  return rc;
}

static int pg_sig_deliver(store_t *base, const char *key,
                          const char *decision, const char *payload,
                          const char *actor, const char *owner,
                          pawl_id_t *job, int *already) {
  pg_store_t *s = (pg_store_t *)base;
  int rc = pg_begin(s);
  if (rc) return rc;
  int64_t now = 0;
  pg_params_t pp;
  pp_str(&pp, 0, key);
  PGresult *res = NULL;
  if (!(rc = pg_tx_now(base, &now)))
    rc = pg_run(s, PG_SIG_HOLDER, 1, pp.v, &res, "look up signal key");
  if (rc) return pg_end(s, rc);
  pawl_id_t id;
  int found = PQntuples(res) > 0, sstate = 0, jstate = 0, was = 0, late = 0;
  int64_t deadline = 0;
  char text[PAWL_ID_STRLEN] = "";
  if (found) {
    pg_id(res, 0, 0, &id);
    sstate = (int)pg_int(res, 0, 1);
    jstate = (int)pg_int(res, 0, 2);
    deadline = pg_int(res, 0, 5); /* NULL reads 0: none */
    pawl_id_format(&id, text);
    /* Job code signals only the jobs it enqueued, unless granted: decided
     * on the row locked above, before anything is written. */
    rc = pawl__store_owner_check(base, &id, pg_val(res, 0, 3),
                                 pg_val(res, 0, 4), owner);
  }
  PQclear(res);
  if (rc)
    ;
  else if (!found)
    rc = pawl__store_fail(base, PAWL_ENOTFOUND,
                          "no live job waits for signal \"%s\"", key);
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
     * it yet (the row is locked: a sweep at this instant skips it). The
     * wait expires here, as the sweep would have expired it, and that is
     * committed; the decision is refused. */
    int done = 0;
    rc = pg_end(s, pg_sig_expire_one(s, now, &id, key, deadline, &done));
    return rc ? rc
              : pawl__store_signal_late(base, &id, key, deadline,
                                        done ? PAWL_FAILED : jstate);
  }
  if (!rc && !was) {
    pp_id(&pp, 0, &id);
    pp_str(&pp, 1, decision);
    pp_str(&pp, 2, payload);
    pp_now(s, &pp, 3);
    pp_str(&pp, 4, actor);
    rc = pg_run(s, PG_SIG_DELIVER, 5, pp.v, NULL, "record signal");
    char why[300];
    snprintf(why, sizeof why, "signal %s: %s", key, decision);
    if (!rc)
      rc = pawl__store_transition_in(base, &pg_transition_steps, now, &id,
                                     STORE_OP_UNBLOCK, actor, why, -1);
  }
  rc = pg_end(s, rc);
  if (rc) return rc;
  *job = id;
  *already = was;
  return 0;
}

static int pg_sig_get(store_t *base, const pawl_id_t *id,
                      pawl_signal_info_t **out) {
  pg_store_t *s = (pg_store_t *)base;
  pg_params_t pp;
  pp_id(&pp, 0, id);
  PGresult *res;
  int rc = pg_run(s, PG_SIG_GET, 1, pp.v, &res, "read signal");
  if (rc) return rc;
  if (PQntuples(res) == 0) {
    PQclear(res);
    return pawl__store_fail(base, PAWL_ENOTFOUND, "the job has no signal");
  }
  pawl_signal_info_t *sig = pawl__store_signal_new(
      id, pg_val(res, 0, 0), (int)pg_int(res, 0, 1), pg_int(res, 0, 2),
      pg_int(res, 0, 3), pg_val(res, 0, 4), pg_val(res, 0, 5),
      pg_int(res, 0, 6), pg_val(res, 0, 7));
  PQclear(res);
  if (!sig) return pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
  *out = sig;
  return 0;
}

static int pg_sig_expire(store_t *base, size_t max, size_t *n) {
  pg_store_t *s = (pg_store_t *)base;
  int rc = pg_begin(s);
  if (rc) return rc;
  int64_t now = 0;
  PGresult *due = NULL;
  pg_params_t pp;
  if (!(rc = pg_tx_now(base, &now))) {
    pp_now(s, &pp, 0);
    pp_int(&pp, 1, (int64_t)max);
    rc = pg_run(s, PG_SIG_DUE, 2, pp.v, &due, "find expired signal waits");
  }
  size_t done = 0;
  for (int i = 0; !rc && i < PQntuples(due); i++) {
    pawl_id_t id;
    pg_id(due, i, 0, &id);
    int one = 0;
    rc = pg_sig_expire_one(s, now, &id, pg_val(due, i, 1), pg_int(due, i, 2),
                           &one);
    done += (size_t)one;
  }
  PQclear(due);
  rc = pg_end(s, rc);
  if (!rc) *n = done;
  return rc;
}

static int pg_sig_next(store_t *base, int64_t *at) {
  pg_store_t *s = (pg_store_t *)base;
  PGresult *res;
  int rc = pg_run(s, PG_SIG_NEXT, 0, NULL, &res, "read signal deadlines");
  if (rc) return rc;
  *at = PQntuples(res) > 0 ? pg_int(res, 0, 0) : 0;
  PQclear(res);
  return 0;
}

/* The job linked to `id` by statement `which` (PG_REP_NEXT, PG_REP_PREV):
 * 1 with *out, 0 when none, or a negative code. */
static int pg_rep_link(pg_store_t *s, int which, const pawl_id_t *id,
                       pawl_id_t *out) {
  pg_params_t pp;
  pp_id(&pp, 0, id);
  PGresult *res;
  int rc = pg_run(s, which, 1, pp.v, &res, "read replacement");
  if (rc) return rc;
  int found = PQntuples(res) > 0;
  if (found) pg_id(res, 0, 0, out);
  PQclear(res);
  return found;
}

/* The old job's row is locked first (FOR UPDATE): two replacements of one
 * job at once run one after the other, and the second finds the first's
 * link (each statement reads what committed before it started) or the
 * changed version. */
static int pg_replace(store_t *base, const store_replace_t *r) {
  pg_store_t *s = (pg_store_t *)base;
  int rc = pg_begin(s);
  if (rc) return rc;
  int64_t now = 0;
  pawl_job_t *old = NULL;
  char text[PAWL_ID_STRLEN], ntext[PAWL_ID_STRLEN];
  pawl_id_format(r->old_id, text);
  if ((rc = pg_tx_now(base, &now)) ||
      (rc = pg_read_job(s, r->old_id, 1, &old)))
    return pg_end(s, rc);
  pawl_id_t next;
  int linked = 0;
  /* Job code replaces only the jobs it enqueued, unless granted: decided
   * on the row locked above. */
  if ((rc = pawl__store_owner_check(base, r->old_id, old->type,
                                    old->enqueued_by, r->owner)))
    ;
  else if (old->version != r->expect_version)
    rc = pawl__store_fail(base, PAWL_ECONFLICT,
                          "job %s changed meanwhile; try again", text);
  else if ((linked = pg_rep_link(s, PG_REP_NEXT, r->old_id, &next)) < 0)
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
   * see sq_replace(). The old row is locked (above) before its batch
   * row (pg_batch_count_job), the order every path that counts follows. */
  int64_t d[3];
  int take_back = store_batch_delta(old->state, old->paused_from,
                                    PAWL_PENDING, 0, d);
  pawl_job_free(old);
  pawl_id_t batch;
  int in_batch = 0;
  if (!rc && (in_batch = pg_rep_link(s, PG_REP_BATCH, r->old_id, &batch)) < 0)
    rc = in_batch;
  if (!rc && in_batch && take_back) rc = pg_batch_count_job(s, r->old_id, d);
  if (!rc && in_batch) {
    pg_params_t pp;
    pp_id(&pp, 0, r->old_id);
    rc = pg_run(s, PG_REP_LEAVE, 1, pp.v, NULL, "leave the batch");
  }
  /* Dependencies: a live job's edges go to the replacement
   * before its cancel (see sq_replace()). */
  pg_params_t dp;
  pp_id(&dp, 0, r->old_id);
  pp_id(&dp, 1, &r->job->id);
  if (!rc && live)
    rc = pg_run(s, PG_DEPS_HAND_LOCK, 1, dp.v, NULL, "lock the parents");
  if (!rc && live)
    rc = pg_run(s, PG_DEPS_HAND_OVER, 2, dp.v, NULL,
                "hand dependencies to the replacement");
  /* The old job ends first: its business key and signal key are free for
   * the replacement. */
  if (!rc && live)
    rc = pawl__store_transition_in(base, &pg_transition_steps, now,
                                   r->old_id, STORE_OP_CANCEL, r->actor,
                                   r->reason, version);
  pawl_id_t id;
  int status = 0;
  if (!rc) rc = pg_insert_one(s, r->job, NULL, &id, &status);
  if (!rc && live)
    rc = pg_run(s, PG_DEPS_TAKE_OVER, 2, dp.v, NULL,
                "hand dependencies to the replacement");
  if (!rc) /* steps: the replacement is the job of the old one's instance */
    rc = pg_run(s, PG_REP_INSTANCE, 2, dp.v, NULL,
                "hand the job instance to the replacement");
  if (!rc) {
    pg_params_t pp;
    pp_id(&pp, 0, r->old_id);
    pp_id(&pp, 1, &r->job->id);
    pp_now(s, &pp, 2);
    pp_str(&pp, 3, r->actor);
    rc = pg_run(s, PG_REP_ADD, 4, pp.v, NULL, "link replacement");
  }
  if (!rc) {
    pg_params_t pp;
    pp_id(&pp, 0, r->old_id);
    pp_id(&pp, 1, &r->job->id);
    pp_id(&pp, 2, in_batch ? &batch : NULL);
    rc = pg_run(s, PG_REP_CARRY, 3, pp.v, NULL,
                "carry over to the replacement");
  }
  /* (The insert's statement trigger wakes the other nodes.) */
  return pg_end(s, rc);
}

static int pg_replace_links(store_t *base, const pawl_id_t *id,
                            pawl_replace_links_t *out) {
  pg_store_t *s = (pg_store_t *)base;
  pawl_replace_links_t l;
  memset(&l, 0, sizeof l);
  int rc = pg_rep_link(s, PG_REP_NEXT, id, &l.superseded_by);
  if (rc < 0) return rc;
  l.has_superseded_by = rc;
  if ((rc = pg_rep_link(s, PG_REP_PREV, id, &l.supersedes)) < 0) return rc;
  l.has_supersedes = rc;
  if (!l.has_superseded_by && !l.has_supersedes) {
    pg_params_t pp;
    pp_id(&pp, 0, id);
    PGresult *res;
    if ((rc = pg_run(s, PG_EXISTS, 1, pp.v, &res, "read job"))) return rc;
    int found = PQntuples(res) > 0;
    PQclear(res);
    if (!found) return pawl__store_no_job(base, id);
  }
  *out = l;
  return 0;
}

/* ---- history -------------------------------------------------------------- */

/* History: the rows written for failures and operator actions, put
 * together with what the success path keeps on the job row by
 * pawl__store_history_assemble(). One snapshot for the three reads. */
static int pg_history(store_t *base, const pawl_id_t *id,
                      pawl_history_t **out) {
  pg_store_t *s = (pg_store_t *)base;
  pawl_history_t *h = pawl__calloc(1, sizeof *h);
  pawl_job_t *j = NULL;
  PGresult *att = NULL, *ev = NULL;
  if (!h) return pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
  int rc = pg_ready(s);
  if (!rc)
    rc = pg_cmd(s, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
                "begin read");
  if (rc) {
    pawl__free(h);
    return rc;
  }
  pg_params_t pp;
  pp_id(&pp, 0, id);
  rc = pg_read_job(s, id, 0, &j);
  if (!rc) rc = pg_run(s, PG_ATTEMPTS, 1, pp.v, &att, "read attempts");
  if (!rc) rc = pg_run(s, PG_EVENTS, 1, pp.v, &ev, "read events");
  pg_end(s, rc ? rc : 0);
  int oom = 0;
  pawl_event_t *rows = NULL;
  size_t nrows = 0;
  for (int r = 0; !rc && !oom && r < PQntuples(att); r++) {
    pawl_attempt_t *a =
        pawl__store_push((void **)&h->attempts, &h->nattempts, sizeof *a);
    if (!a) {
      oom = 1;
      break;
    }
    store_row_t sr = pg_row(att, r);
    oom |= pawl__store_attempt_fill(a, &sr) != 0;
  }
  for (int r = 0; !rc && !oom && r < PQntuples(ev); r++) {
    pawl_event_t *e = pawl__store_push((void **)&rows, &nrows, sizeof *e);
    if (!e) {
      oom = 1;
      break;
    }
    store_row_t sr = pg_row(ev, r);
    oom |= pawl__store_event_fill(e, &sr) != 0;
  }
  if (!rc && !oom)
    oom = pawl__store_history_assemble(h, j, rows, nrows) != 0;
  else
    pawl__store_events_free(rows, nrows);
  PQclear(att);
  PQclear(ev);
  pawl_job_free(j);
  if (!rc && oom) rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
  if (rc) {
    pawl_history_free(h);
    return rc;
  }
  *out = h;
  return 0;
}

/* ---- logs ----------------------------------------------------------------- */

static int pg_logs(store_t *base, const pawl_id_t *id, pawl_log_record_t **out,
                   size_t *n) {
  pg_store_t *s = (pg_store_t *)base;
  pg_params_t pp;
  pp_id(&pp, 0, id);
  PGresult *res;
  int rc = pg_run(s, PG_LOGS, 1, pp.v, &res, "read logs");
  if (rc) return rc;
  size_t count = (size_t)PQntuples(res);
  if (count == 0) {
    PQclear(res);
    /* No lines: say whether that is because there is no such job. */
    if ((rc = pg_run(s, PG_EXISTS, 1, pp.v, &res, "read job"))) return rc;
    int exists = PQntuples(res) > 0;
    PQclear(res);
    if (!exists) return pawl__store_no_job(&s->base, id);
    *out = NULL;
    *n = 0;
    return 0;
  }
  pawl_log_record_t *recs = pawl__calloc(count, sizeof *recs);
  int oom = !recs;
  for (size_t i = 0; !oom && i < count; i++) {
    store_row_t sr = pg_row(res, (int)i);
    oom = pawl__store_log_fill(&recs[i], &sr) != 0;
  }
  PQclear(res);
  if (oom) {
    pawl_logs_free(recs, recs ? count : 0);
    return pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
  }
  *out = recs;
  *n = count;
  return 0;
}

/* ---- locks ---------------------------------------------------------------- */

static int pg_lock_write(pg_store_t *s, int stmt, const char *name,
                         const char *owner, int64_t ttl_ms, int *changed,
                         const char *what) {
  pg_params_t pp;
  pp_str(&pp, 0, name);
  pp_str(&pp, 1, owner);
  pp_now(s, &pp, 2);
  pp_int(&pp, 3, ttl_ms);
  PGresult *res;
  int rc = pg_run(s, stmt, stmt == PG_LOCK_RELEASE ? 2 : 4, pp.v, &res, what);
  if (rc) return rc;
  if (changed) *changed = pg_changed(res) == 1;
  PQclear(res);
  return 0;
}

static int pg_lock_acquire(store_t *base, const char *name, const char *owner,
                           int64_t ttl_ms, int *got) {
  return pg_lock_write((pg_store_t *)base, PG_LOCK_ACQUIRE, name, owner,
                       ttl_ms, got, "acquire lock");
}

static int pg_lock_extend(store_t *base, const char *name, const char *owner,
                          int64_t ttl_ms, int *ok) {
  return pg_lock_write((pg_store_t *)base, PG_LOCK_EXTEND, name, owner, ttl_ms,
                       ok, "extend lock");
}

static int pg_lock_release(store_t *base, const char *name, const char *owner) {
  return pg_lock_write((pg_store_t *)base, PG_LOCK_RELEASE, name, owner, 0,
                       NULL, "release lock");
}

/* ---- nodes ---------------------------------------------------------------- */

static int pg_node_beat(store_t *base, const store_node_t *nd) {
  pg_store_t *s = (pg_store_t *)base;
  pg_params_t pp;
  pp_str(&pp, 0, nd->id);
  pp_id(&pp, 1, nd->incarnation);
  pp_str(&pp, 2, nd->version ? nd->version : PAWL_VERSION);
  pp_str(&pp, 3, nd->queues ? nd->queues : "");
  pp_int(&pp, 4, nd->started_at);
  pp_now(s, &pp, 5);
  return pg_run(s, PG_NODE_BEAT, 6, pp.v, NULL, "record node heartbeat");
}

static int pg_node_list(store_t *base, store_node_cb cb, void *data) {
  pg_store_t *s = (pg_store_t *)base;
  PGresult *res;
  int rc = pg_run(s, PG_NODE_LIST, 0, NULL, &res, "list nodes");
  if (rc) return rc;
  for (int i = 0; i < PQntuples(res); i++) {
    pawl_id_t inc;
    pg_id(res, i, 1, &inc);
    store_node_t nd = {
        .id = pg_val(res, i, 0),
        .incarnation = &inc,
        .version = pg_val(res, i, 2),
        .queues = pg_val(res, i, 3),
        .started_at = pg_int(res, i, 4),
        .last_beat = pg_int(res, i, 5),
        .stopped_at = PQgetisnull(res, i, 6) ? 0 : pg_int(res, i, 6),
    };
    if (cb(&nd, data)) break;
  }
  PQclear(res);
  return 0;
}

static int pg_node_reap(store_t *base, int64_t silent_ms, size_t *n) {
  pg_store_t *s = (pg_store_t *)base;
  pg_params_t pp;
  pp_now(s, &pp, 0);
  pp_int(&pp, 1, silent_ms);
  PGresult *res;
  int rc = pg_run(s, PG_NODE_REAP, 2, pp.v, &res, "remove silent nodes");
  if (rc) return rc;
  if (n) *n = (size_t)pg_changed(res);
  PQclear(res);
  return 0;
}

static int pg_node_stop(store_t *base, const char *id,
                        const pawl_id_t *incarnation) {
  pg_store_t *s = (pg_store_t *)base;
  pg_params_t pp;
  pp_str(&pp, 0, id);
  pp_id(&pp, 1, incarnation);
  pp_now(s, &pp, 2);
  return pg_run(s, PG_NODE_STOP, 3, pp.v, NULL, "record node stop");
}

/* ---- wakeup --------------------------------------------------------------- */

/* LISTEN takes a channel name, not a value: it cannot be bound, so the
 * name (read from the server) is quoted as an identifier. */
static int pg_listen_now(pg_store_t *s) {
  PGresult *res = PQexec(s->conn, "SELECT " PG_CHANNEL);
  if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1) {
    int rc = pg_fail(s, res, "listen for new jobs");
    PQclear(res);
    return rc;
  }
  const char *name = PQgetvalue(res, 0, 0);
  char *quoted = PQescapeIdentifier(s->conn, name, strlen(name));
  PQclear(res);
  if (!quoted) return pg_fail(s, NULL, "listen for new jobs");
  pawl_buf_t sql;
  pawl__buf_init(&sql);
  pawl__buf_printf(&sql, "LISTEN %s", quoted);
  PQfreemem(quoted);
  int rc = sql.oom ? pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory")
                   : pg_cmd(s, sql.data, "listen for new jobs");
  pawl__buf_free(&sql);
  return rc;
}

static int pg_listen(store_t *base) {
  pg_store_t *s = (pg_store_t *)base;
  int rc = pg_ready(s);
  if (!rc) rc = pg_listen_now(s);
  if (!rc) s->listening = 1;
  return rc;
}

/* Waits up to timeout_ms for a notification; *woke says whether one came
 * (all pending ones are consumed). */
static int pg_wait(store_t *base, int timeout_ms, int *woke) {
  pg_store_t *s = (pg_store_t *)base;
  *woke = 0;
  int rc = pg_ready(s);
  if (rc) return rc;
  for (int round = 0; round < 2; round++) {
    if (!PQconsumeInput(s->conn)) return pg_fail(s, NULL, "wait for new jobs");
    PGnotify *nt;
    while ((nt = PQnotifies(s->conn)) != NULL) {
      *woke = 1;
      PQfreemem(nt);
    }
    if (*woke || round == 1) return 0;
    struct pollfd pfd = {.fd = PQsocket(s->conn), .events = POLLIN};
    if (pfd.fd < 0) return pg_fail(s, NULL, "wait for new jobs");
    int pr = poll(&pfd, 1, timeout_ms);
    if (pr < 0 && errno != EINTR)
      return pawl__store_fail(base, PAWL_EUNAVAIL, "wait for new jobs: %s",
                        strerror(errno));
    if (pr <= 0) return 0;
  }
  return 0;
}

/* ---- open and close ------------------------------------------------------- */

static void pg_close(store_t *base) {
  pg_store_t *s = (pg_store_t *)base;
  if (!s) return;
  PQfinish(s->conn);
  pawl__free(s->conninfo);
  pawl__free(s);
}

/* administration: defined at the end of this file */
static int pg_adm_count(store_t *base, const store_match_t *m, int64_t max,
                        int64_t *n);
static int pg_adm_pick(store_t *base, const store_match_t *m,
                       const store_pick_t *after, size_t max,
                       store_pick_t *out, size_t *n);
static int pg_adm_apply(store_t *base, store_op_t op, const char *actor,
                        const char *reason, const store_pick_t *picks,
                        size_t n, pawl_bulk_result_t *r);
static int pg_adm_stats(store_t *base, int64_t now, store_stat_cb cb,
                        void *data);
static int pg_adm_locks(store_t *base, store_lock_cb cb, void *data);
static int pg_adm_running(store_t *base, store_owner_cb cb, void *data);
static int pg_top_throughput(store_t *base, int64_t since, store_tp_cb cb,
                             void *data);
static int pg_top_running(store_t *base, int limit, pawl_job_cb cb,
                          void *data);
static int pg_met_gauges(store_t *base, int64_t now, int64_t since, int full,
                         store_stat_cb cb, void *data);

/* recurring definitions: defined at the end of this file */
static int pg_batch_create(store_t *base, const store_batch_new_t *b,
                           const store_new_job_t *jobs, size_t n);
static int pg_batch_get(store_t *base, const pawl_id_t *id, int64_t now,
                        pawl_batch_t *out);
static int pg_batch_of(store_t *base, const pawl_id_t *id, pawl_id_t *batch,
                       int *role);
static int pg_rec_put(store_t *base, const pawl_recurring_t *d, int how,
                      int *done);
static int pg_rec_get(store_t *base, const char *name,
                      pawl_recurring_t **out);
static int pg_rec_list(store_t *base, pawl_recurring_t **out, size_t *n);
static int pg_rec_update(store_t *base, const pawl_recurring_t *d,
                         int *changed);
static int pg_rec_remove(store_t *base, const char *name);
static int pg_rec_due(store_t *base, int64_t now, size_t max,
                      pawl_recurring_t **out, size_t *n);
static int pg_rec_advance(store_t *base, store_rec_advance_t *a, size_t n);
static int pg_rec_disable_gone(store_t *base, const char *const *scripts,
                               size_t n, int listed, size_t *count);
static int pg_rec_load_error(store_t *base, const char *script,
                             const char *error);
/* ---- queues (pause, resume, per-queue age boost) -------------------------- */

static int pg_queue_pause(store_t *base, const char *name, int paused,
                          const char *by, const char *reason, int *changed) {
  pg_store_t *s = (pg_store_t *)base;
  pg_params_t pp;
  pp_str(&pp, 0, name);
  pp_now(s, &pp, 1);
  pp_str(&pp, 2, by);
  pp_str(&pp, 3, reason);
  PGresult *res;
  int rc = paused ? pg_run(s, PG_QUEUE_PAUSE, 4, pp.v, &res, "pause queue")
                  : pg_run(s, PG_QUEUE_RESUME, 2, pp.v, &res, "resume queue");
  if (rc) return rc;
  if (changed) *changed = paused ? pg_changed(res) > 0 : PQntuples(res) > 0;
  PQclear(res);
  return 0;
}

/* The queue's boost and its pending jobs' ranks change together. */
static int pg_queue_set_boost(store_t *base, const char *name,
                              int64_t boost_ms) {
  pg_store_t *s = (pg_store_t *)base;
  int rc = pg_begin(s);
  if (rc) return rc;
  pg_params_t pp;
  pp_str(&pp, 0, name);
  pp_now(s, &pp, 1);
  pp_opt_int(&pp, 2, boost_ms >= 0, boost_ms);
  rc = pg_run(s, PG_QUEUE_SET_BOOST, 3, pp.v, NULL,
              "set the queue's age boost");
  if (!rc) rc = pg_setting_get(s, "age_boost_ms", &s->boost_ms);
  if (!rc) {
    pg_params_t rr;
    pp_int(&rr, 0, s->boost_ms);
    pp_str(&rr, 1, name);
    rc = pg_run(s, PG_RERANK, 2, rr.v, NULL,
                "re-rank the queue's pending jobs");
  }
  return pg_end(s, rc);
}

static int pg_queue_list(store_t *base, store_queue_cb cb, void *data) {
  pg_store_t *s = (pg_store_t *)base;
  PGresult *res;
  int rc = pg_run(s, PG_QUEUE_LIST, 0, NULL, &res, "list queues");
  if (rc) return rc;
  for (int i = 0; i < PQntuples(res) && !rc; i++) {
    const char *paused = pg_val(res, i, 1);
    store_queue_row_t r = {
        .name = pg_val(res, i, 0),
        .paused = paused && paused[0] == 't',
        .paused_at = pg_int(res, i, 2),
        .paused_by = pg_val(res, i, 3),
        .reason = pg_val(res, i, 4),
        .age_boost_ms = pg_val(res, i, 5) ? pg_int(res, i, 5) : -1,
    };
    int stop = cb(&r, data);
    if (stop < 0) rc = stop;
    if (stop) break;
  }
  PQclear(res);
  return rc;
}

static int pg_deps_list(store_t *base, const pawl_id_t *id, pawl_dep_cb cb,
                        void *data);
/* steps and instances: the section "steps" at the end */
static int pg_steps_get(store_t *base, const pawl_id_t *id, pawl_steps_t **out);
static int pg_step_begin(store_t *base, const pawl_id_t *id,
                         const pawl_id_t *token, int32_t attempt,
                         int32_t index, const char *name,
                         const char *checkpoint, int64_t *exec);
static int pg_step_save(store_t *base, const pawl_id_t *id,
                        const pawl_id_t *token, int32_t attempt, int64_t exec,
                        const char *checkpoint, const int64_t *counts);
static int pg_step_end(store_t *base, const pawl_id_t *id,
                       const pawl_id_t *token, int32_t attempt, int64_t exec,
                       int status, const char *exit_code,
                       const char *exit_message, const int64_t *counts);
static int pg_step_exit(store_t *base, const pawl_id_t *id,
                        const pawl_id_t *token, int32_t attempt,
                        const char *exit_code, const char *exit_message);
static int pg_instance_find(store_t *base, const char *type, const char *key,
                            pawl_id_t *id, int *state);

/* ---- dead-letter alerts --------------------------------------------------- */

static int pg_alert_take(store_t *base, const char *owner, int64_t lease_ms,
                         size_t max, store_alert_t **out, size_t *n) {
  pg_store_t *s = (pg_store_t *)base;
  *out = NULL;
  *n = 0;
  int rc = pg_begin(s);
  if (rc) return rc;
  pg_params_t pp;
  pp_now(s, &pp, 0);
  rc = pg_run(s, PG_ALERT_ROLL_Q, 1, pp.v, NULL, "end alert windows");
  PGresult *res = NULL;
  if (!rc) {
    pp_str(&pp, 0, owner);
    pp_now(s, &pp, 1);
    pp_int(&pp, 2, lease_ms);
    pp_int(&pp, 3, (int64_t)max);
    rc = pg_run(s, PG_ALERT_TAKE_Q, 4, pp.v, &res, "take alerts");
  }
  store_alert_t *v = NULL;
  size_t count = 0;
  for (int i = 0; !rc && i < PQntuples(res); i++) {
    store_alert_t *a = pawl__store_push((void **)&v, &count, sizeof *a);
    if (!a) {
      rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
      break;
    }
    a->seq = pg_int(res, i, 0);
    a->kind = (int)pg_int(res, i, 1);
    pg_id(res, i, 2, &a->job_id);
    int oom = pawl__store_dup(&a->type, pg_val(res, i, 3));
    oom |= pawl__store_dup(&a->queue, pg_val(res, i, 4));
    a->attempt = (int32_t)pg_int(res, i, 5);
    oom |= pawl__store_dup(&a->error, pg_val(res, i, 6));
    a->created_at = pg_int(res, i, 7);
    a->verdict = (int)pg_int(res, i, 8);
    a->count = pg_int(res, i, 9);
    a->suppressed = pg_int(res, i, 10);
    a->first_at = pg_int(res, i, 11);
    a->last_at = pg_int(res, i, 12);
    if (oom) rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
  }
  PQclear(res);
  rc = pg_end(s, rc);
  if (rc) {
    pawl__store_alerts_free(v, count);
    return rc;
  }
  *out = v;
  *n = count;
  return 0;
}

static int pg_alert_note(store_t *base, const char *owner, int64_t fp,
                         int64_t window_ms, store_alert_t *a) {
  pg_store_t *s = (pg_store_t *)base;
  int rc = pg_begin(s);
  if (rc) return rc;
  pg_params_t pp;
  pp_int(&pp, 0, a->seq);
  PGresult *res = NULL;
  rc = pg_run(s, PG_ALERT_GET_Q, 1, pp.v, &res, "read alert");
  int decided = 0;
  if (!rc) {
    const char *by = PQntuples(res) ? pg_val(res, 0, 0) : NULL;
    if (!by || strcmp(by, owner) != 0) {
      rc = pawl__store_fail(base, PAWL_ELEASE,
                            "alert %" PRId64 " is no longer held by %s",
                            a->seq, owner);
    } else if (!PQgetisnull(res, 0, 1)) {
      decided = 1;
      a->verdict = (int)pg_int(res, 0, 1);
      a->count = pg_int(res, 0, 2);
      a->first_at = pg_int(res, 0, 3);
      a->last_at = pg_int(res, 0, 4);
    }
  }
  PQclear(res);
  res = NULL;
  if (!rc && !decided) {
    pp_now(s, &pp, 0);
    rc = pg_run(s, PG_ALERT_ROLL_Q, 1, pp.v, NULL, "end alert windows");
  }
  if (!rc && !decided) {
    pp_str(&pp, 0, a->type);
    pp_int(&pp, 1, fp);
    pp_now(s, &pp, 2);
    pp_int(&pp, 3, window_ms);
    pp_id(&pp, 4, &a->job_id);
    pp_str(&pp, 5, a->queue);
    pp_int(&pp, 6, a->attempt);
    pp_str(&pp, 7, a->error);
    rc = pg_run(s, PG_ALERT_WINDOW_Q, 8, pp.v, &res, "count alert");
    if (!rc && PQntuples(res) == 1) {
      a->count = pg_int(res, 0, 0);
      a->first_at = pg_int(res, 0, 1);
      a->last_at = pg_int(res, 0, 2);
      a->verdict = a->count == 1 ? 1 : 2;
    } else if (!rc) {
      rc = pawl__store_fail(base, PAWL_ESTORE, "count alert: no row");
    }
    PQclear(res);
  }
  if (!rc && !decided) {
    pp_int(&pp, 0, a->seq);
    pp_int(&pp, 1, a->verdict);
    pp_int(&pp, 2, a->count);
    pp_int(&pp, 3, a->first_at);
    pp_int(&pp, 4, a->last_at);
    rc = pg_run(s, PG_ALERT_VERDICT_Q, 5, pp.v, NULL,
                "record alert decision");
  }
  return pg_end(s, rc);
}

static int pg_alert_done(store_t *base, const char *owner, int64_t seq) {
  pg_store_t *s = (pg_store_t *)base;
  pg_params_t pp;
  pp_int(&pp, 0, seq);
  pp_str(&pp, 1, owner);
  return pg_run(s, PG_ALERT_DONE_Q, 2, pp.v, NULL, "remove alert");
}
/* retention: the section "retention" at the end */
static int pg_ret_scan(store_t *base, const store_pick_t *after, size_t max,
                       store_retain_row_t *out, size_t *n);
static int pg_ret_remove(store_t *base, const store_retain_row_t *rows,
                         size_t n, int archive, int *removed);

static const struct store_ops pg_ops = {
    .name = "postgres",
    .schema = {pg_migrate, pg_version},
    .jobs = {pg_insert, pg_get, pg_list, pg_progress, pg_logs},
    .keys = {pg_find_idempotent, pg_find_business},
    .claim = {pg_claim, pg_extend, pg_recover, pg_start, pg_extend_one,
              pg_next_due},
    .terminal = {pg_finish},
    .control = {pg_transition},
    .history = {pg_history},
    .locks = {pg_lock_acquire, pg_lock_extend, pg_lock_release},
    .nodes = {pg_node_beat, pg_node_list, pg_node_reap, pg_node_stop},
    .settings = {pg_age_boost},
    .maintenance = {NULL, NULL},
    .wakeup = {pg_listen, pg_wait},
    .close = pg_close,
    .admin = {pg_adm_count, pg_adm_pick, pg_adm_apply, pg_adm_stats,
              pg_adm_locks, pg_adm_running},
    .recurring = {pg_rec_put, pg_rec_get, pg_rec_list, pg_rec_update,
                  pg_rec_remove, pg_rec_due, pg_rec_advance,
                  pg_rec_disable_gone, pg_rec_load_error},
    .queues = {pg_queue_pause, pg_queue_set_boost, pg_queue_list},
    .limits = {pg_limit_set, pg_limit_remove, pg_limit_list},
    .types = {pg_types_sync, pg_type_get},
    .flow = {pg_sig_deliver, pg_sig_get, pg_sig_expire, pg_replace,
             pg_replace_links, pg_sig_next},
    .batch = {pg_batch_create, pg_batch_get, pg_batch_of},
    .deps = {pg_deps_list},
    .steps = {pg_steps_get, pg_step_begin, pg_step_save, pg_step_end,
              pg_step_exit, pg_instance_find},
    .top = {pg_top_throughput, pg_top_running},
    .alerts = {pg_alert_take, pg_alert_note, pg_alert_done},
    .retention = {pg_ret_scan, pg_ret_remove},
    .metrics = {pg_met_gauges},
};

/* The connection of a PostgreSQL store, for tests and the benchmark's
 * plain-SQL loop; NULL if `st` is not one. */
PGconn *pawl__store_postgres_conn(store_t *st);
PGconn *pawl__store_postgres_conn(store_t *st) {
  return st && st->ops == &pg_ops ? ((pg_store_t *)st)->conn : NULL;
}

/* Server notices (and the FATAL a killed session gets) would go to
 * stderr: the store reports errors through its results instead. */
static void pg_quiet(void *arg, const char *message) {
  (void)arg;
  (void)message;
}

/* Where a connection goes, for messages: host, port, database and user,
 * never the password the connection string may carry (not even the pieces
 * of one that libpq read as something else). */
static void pg_describe(const char *conninfo, char *out, size_t len) {
  PQconninfoOption *opts = PQconninfoParse(conninfo, NULL);
  const char *host = NULL, *port = NULL, *db = NULL, *user = NULL;
  for (PQconninfoOption *o = opts; o && o->keyword; o++) {
    if (!o->val) continue;
    if (strcmp(o->keyword, "host") == 0) host = o->val;
    if (strcmp(o->keyword, "port") == 0) port = o->val;
    if (strcmp(o->keyword, "dbname") == 0) db = o->val;
    if (strcmp(o->keyword, "user") == 0) user = o->val;
  }
  char text[600];
  snprintf(text, sizeof text, "host=%s port=%s dbname=%s user=%s",
           host ? host : "(default)", port ? port : "(default)",
           db ? db : "(default)", user ? user : "(default)");
  PQconninfoFree(opts);
  /* A password with a '/' or an '@' makes libpq read part of it as the
   * host, port or database. */
  pawl__redact_message(conninfo, text, 0, out, len);
}

static int64_t pg_wall_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* How far the database clock is ahead of ours (negative: behind), from one
 * round trip, taking its midpoint as the moment the server read its clock. */
static int pg_measure_skew(pg_store_t *s, int64_t *skew) {
  int64_t before = pg_wall_ms(), db = 0;
  int rc = pg_query_int(s,
                        "SELECT floor(extract(epoch FROM clock_timestamp()) "
                        "* 1000)::bigint",
                        &db, "read database clock");
  int64_t after = pg_wall_ms();
  if (!rc) *skew = db - (before + after) / 2;
  return rc;
}

int pawl__store_postgres_open(store_t **out, const store_config_t *cfg,
                        const char *conninfo, char *errbuf, size_t errlen);

int pawl__store_postgres_open(store_t **out, const store_config_t *cfg,
                        const char *conninfo, char *errbuf, size_t errlen) {
  pg_store_t *s = pawl__calloc(1, sizeof *s);
  if (!s || !(s->conninfo = pawl__strdup(conninfo))) {
    pawl__free(s);
    snprintf(errbuf, errlen, "out of memory");
    return PAWL_ENOMEM;
  }
  s->base.ops = &pg_ops;
  s->base.clock = cfg->clock;
  s->base.clock_data = cfg->clock_data;
  s->poison = cfg->poison_recoveries > 0 ? cfg->poison_recoveries : 3;
  /* Defaults that the connection string may override (later wins): a
   * bounded connect, and keepalives so that a dropped network is noticed
   * in seconds rather than after the kernel's two hours. */
  const char *const keys[] = {"connect_timeout", "keepalives_idle",
                              "keepalives_interval", "keepalives_count",
                              "application_name", "dbname", NULL};
  /* A connection string libpq cannot read is refused before connecting,
   * as bad input, with libpq's reason cleaned: it quotes the string or the
   * piece it stumbled on, which may be the password. */
  char *perr = NULL;
  PQconninfoOption *parsed = PQconninfoParse(conninfo, &perr);
  if (!parsed) {
    char msg[300];
    pawl__redact_message(conninfo, perr ? perr : "out of memory", 1, msg, sizeof msg);
    size_t n = strlen(msg);
    while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == ' ')) msg[--n] = 0;
    int prc = perr ? PAWL_EINVAL : PAWL_ENOMEM;
    PQfreemem(perr);
    snprintf(errbuf, errlen, "database URL is malformed: %s", msg);
    pg_close(&s->base);
    return prc;
  }
  PQconninfoFree(parsed);
  const char *const vals[] = {"5", "5", "2", "3", "pawl", conninfo, NULL};
  s->conn = PQconnectdbParams(keys, vals, 1);
  int rc = 0;
  if (!s->conn) {
    snprintf(errbuf, errlen, "out of memory");
    rc = PAWL_ENOMEM;
    goto fail;
  }
  if (PQstatus(s->conn) != CONNECTION_OK) {
    char msg[300], where[300];
    pg_message(s, NULL, msg, sizeof msg);
    pg_describe(conninfo, where, sizeof where);
    snprintf(errbuf, errlen, "cannot connect to PostgreSQL (%s): %s", where,
             msg);
    rc = PAWL_EUNAVAIL;
    goto fail;
  }
  PQsetNoticeProcessor(s->conn, pg_quiet, NULL);
  if (!s->base.clock && (rc = pg_measure_skew(s, &s->base.skew_ms))) {
    snprintf(errbuf, errlen, "%s", s->base.errmsg);
    goto fail;
  }
  rc = pg_migrate_with(s, cfg->create, !cfg->no_migrate);
  if (!rc && cfg->no_migrate) {
    int cur = 0, latest = 0;
    rc = pg_version(&s->base, &cur, &latest);
    if (!rc && cur < latest)
      rc = pawl__store_fail(&s->base, PAWL_ESCHEMA,
                      "database %s is at schema version %d, this pawl needs "
                      "%d: run `pawl migrate`",
                      PQdb(s->conn), cur, latest);
  }
  if (!rc) rc = pg_setting_get(s, "age_boost_ms", &s->boost_ms);
  if (!rc && cfg->age_boost_ms >= 0 && cfg->age_boost_ms != s->boost_ms)
    rc = pg_set_age_boost(s, cfg->age_boost_ms);
  if (rc) {
    snprintf(errbuf, errlen, "%s", s->base.errmsg);
    goto fail;
  }
  *out = &s->base;
  return 0;
fail:
  pg_close(&s->base);
  return rc;
}

/* ---- administration (host/api/admin.c) ------------------------------------
 * Bulk actions, filtered listings, statistics, locks and running jobs per
 * node. The SQL is in pg_admin_sql.h. */

/* Sets $1..$5 of PG_ADM_MATCH. */
static void pg_adm_match(pg_params_t *pp, const store_match_t *m) {
  pp_int(pp, 0, (int64_t)m->states);
  pp_str(pp, 1, m->f->queue);
  pp_str(pp, 2, m->f->type);
  pp_str(pp, 3, m->f->tag);
  if (m->cutoff)
    pp_int(pp, 4, m->cutoff);
  else
    pp_str(pp, 4, NULL);
}

static int pg_adm_failed_only(const store_match_t *m) {
  return m->states == (1u << PAWL_FAILED);
}

static int pg_adm_count(store_t *base, const store_match_t *m, int64_t max,
                        int64_t *n) {
  pg_store_t *s = (pg_store_t *)base;
  pg_params_t pp;
  pg_adm_match(&pp, m);
  pp_int(&pp, 5, max);
  PGresult *res;
  int rc = pg_run(s, pg_adm_failed_only(m) ? PG_ADM_COUNT_FAILED_ST
                                           : PG_ADM_COUNT_ST,
                  6, pp.v, &res, "count jobs");
  if (rc) return rc;
  *n = PQntuples(res) == 1 ? pg_int(res, 0, 0) : 0;
  PQclear(res);
  return 0;
}

static int pg_adm_pick(store_t *base, const store_match_t *m,
                       const store_pick_t *after, size_t max,
                       store_pick_t *out, size_t *n) {
  pg_store_t *s = (pg_store_t *)base;
  static const pawl_id_t zero; /* ids are UUIDv7s: never all zero */
  pg_params_t pp;
  pg_adm_match(&pp, m);
  pp_id(&pp, 5, after ? &after->id : &zero);
  pp_int(&pp, 6, (int64_t)max);
  PGresult *res;
  int rc = pg_run(s, pg_adm_failed_only(m) ? PG_ADM_PICK_FAILED_ST
                                           : PG_ADM_PICK_ST,
                  7, pp.v, &res, "pick jobs");
  if (rc) return rc;
  size_t k = 0;
  for (int i = 0; i < PQntuples(res) && k < max; i++, k++) {
    pg_id(res, i, 0, &out[k].id);
    out[k].version = pg_int(res, i, 1);
    out[k].key = 0;
  }
  PQclear(res);
  *n = k;
  return 0;
}

/* One transaction for the batch, the rows locked in id order (the order
 * finishing batches lock theirs in, so the two never deadlock); each job
 * under a savepoint, so that a job refused halfway (a business key held)
 * is undone alone and the batch goes on. */
static int pg_adm_apply(store_t *base, store_op_t op, const char *actor,
                        const char *reason, const store_pick_t *picks,
                        size_t n, pawl_bulk_result_t *r) {
  pg_store_t *s = (pg_store_t *)base;
  pawl_bulk_result_t got = {0, 0, 0};
  int64_t now = 0;
  int rc = pg_begin(s);
  if (!rc) rc = pg_tx_now(base, &now);
  for (size_t i = 0; i < n && !rc; i++) {
    if ((rc = pg_cmd(s, "SAVEPOINT pawl_bulk", "savepoint"))) break;
    int one = pawl__store_transition_in(
        base, &pg_transition_steps, now, &picks[i].id, op, actor, reason,
        picks[i].version);
    if (one == 0) {
      got.changed++;
      rc = pg_cmd(s, "RELEASE SAVEPOINT pawl_bulk", "release savepoint");
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
      rc = pg_cmd(s, "ROLLBACK TO SAVEPOINT pawl_bulk",
                  "roll back to savepoint");
    }
  }
  rc = pg_end(s, rc);
  if (!rc) {
    r->changed += got.changed;
    r->skipped += got.skipped;
    r->refused += got.refused;
  }
  return rc;
}

static int pg_adm_list(store_t *base, const pawl_filter_t *f, pawl_job_cb cb,
                       void *data) {
  pg_store_t *s = (pg_store_t *)base;
  pg_params_t pp;
  pp_opt_int(&pp, 0, f->state >= 0, f->state);
  pp_str(&pp, 1, f->queue);
  pp_str(&pp, 2, f->type);
  pp_str(&pp, 3, f->tag);
  if (f->older_than_ms)
    pp_int(&pp, 4, pawl__store_now(base) - f->older_than_ms);
  else
    pp_str(&pp, 4, NULL);
  pp_int(&pp, 5, f->limit > 0 ? f->limit : 100);
  PGresult *res;
  int rc = pg_run(s, PG_ADM_LIST_ST, 6, pp.v, &res, "list jobs");
  return rc ? rc : pg_list_rows(s, res, cb, data);
}

static int pg_adm_stats(store_t *base, int64_t now, store_stat_cb cb,
                        void *data) {
  pg_store_t *s = (pg_store_t *)base;
  static const int ids[4] = {PG_ADM_STATS_PENDING_ST, PG_ADM_STATS_RUNNING_ST,
                             PG_ADM_STATS_DONE_ST, PG_ADM_STATS_TP_ST};
  PGresult *res[4] = {NULL, NULL, NULL, NULL};
  /* One snapshot for every statement. */
  int rc = pg_ready(s);
  if (!rc)
    rc = pg_cmd(s, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
                "begin read");
  if (rc) return rc;
  int64_t minute = store_tp_minute(now);
  for (int q = 0; q < 4 && !rc; q++) {
    pg_params_t pp;
    int np = q == 0 ? 1 : q == 3 ? 3 : 0;
    if (q == 3) {
      pp_int(&pp, 0, minute - 15);
      pp_int(&pp, 1, minute - 5);
      pp_int(&pp, 2, minute - 1);
    } else {
      pp_int(&pp, 0, now);
    }
    rc = pg_run(s, ids[q], np, pp.v, &res[q], "read statistics");
  }
  for (int q = 0; q < 4 && !rc; q++) {
    for (int i = 0; i < PQntuples(res[q]) && !rc; i++) {
      store_stat_row_t row = {0};
      int c = 0;
      if (q >= 2) row.state = (int)pg_int(res[q], i, c++);
      else row.state = q == 0 ? PAWL_PENDING : PAWL_RUNNING;
      row.queue = pg_val(res[q], i, c++);
      if (q == 3) {
        row.in_15m = pg_int(res[q], i, c++);
        row.in_5m = pg_int(res[q], i, c++);
        row.in_1m = pg_int(res[q], i, c++);
      } else {
        row.count = pg_int(res[q], i, c++);
      }
      if (q == 0) row.oldest_due = pg_int(res[q], i, c++);
      if (!row.queue) continue;
      if (cb(&row, data)) rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
    }
  }
  for (int q = 0; q < 4; q++) PQclear(res[q]);
  return pg_end(s, rc);
}

/* The metrics' gauges (store.h, "metrics"): one snapshot, the live rows
 * as pg_adm_stats reads them, the throughput since `since`, the exact
 * counts of the other states when `full`. */
static int pg_met_gauges(store_t *base, int64_t now, int64_t since, int full,
                         store_stat_cb cb, void *data) {
  pg_store_t *s = (pg_store_t *)base;
  static const int ids[4] = {PG_ADM_STATS_PENDING_ST, PG_ADM_STATS_RUNNING_ST,
                             PG_MET_TP_ST, PG_ADM_STATS_DONE_ST};
  PGresult *res[4] = {NULL, NULL, NULL, NULL};
  int rc = pg_ready(s);
  if (!rc)
    rc = pg_cmd(s, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
                "begin read");
  if (rc) return rc;
  int nq = full ? 4 : 3;
  for (int q = 0; q < nq && !rc; q++) {
    pg_params_t pp;
    pp_int(&pp, 0, q == 2 ? since : now);
    rc = pg_run(s, ids[q], q == 0 || q == 2 ? 1 : 0, pp.v, &res[q],
                "read gauges");
  }
  for (int q = 0; q < nq && !rc; q++) {
    for (int i = 0; i < PQntuples(res[q]) && !rc; i++) {
      store_stat_row_t row = {0};
      int c = 0;
      if (q >= 2) row.state = (int)pg_int(res[q], i, c++);
      else row.state = q == 0 ? PAWL_PENDING : PAWL_RUNNING;
      row.queue = pg_val(res[q], i, c++);
      if (q == 2) row.since = pg_int(res[q], i, c++);
      else row.count = pg_int(res[q], i, c++);
      if (q == 0) row.oldest_due = pg_int(res[q], i, c++);
      if (!row.queue) continue;
      if (cb(&row, data))
        rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
    }
  }
  for (int q = 0; q < 4; q++) PQclear(res[q]);
  return pg_end(s, rc);
}

static int pg_adm_locks(store_t *base, store_lock_cb cb, void *data) {
  pg_store_t *s = (pg_store_t *)base;
  PGresult *res;
  int rc = pg_run(s, PG_ADM_LOCKS_ST, 0, NULL, &res, "list locks");
  if (rc) return rc;
  for (int i = 0; i < PQntuples(res) && !rc; i++) {
    pawl_lock_info_t l = {
        .name = (char *)pg_val(res, i, 0),
        .owner = (char *)pg_val(res, i, 1),
        .acquired_at = pg_int(res, i, 2),
        .expires_at = pg_int(res, i, 3),
    };
    if (cb(&l, data)) rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
  }
  PQclear(res);
  return rc;
}

static int pg_adm_running(store_t *base, store_owner_cb cb, void *data) {
  pg_store_t *s = (pg_store_t *)base;
  PGresult *res;
  int rc = pg_run(s, PG_ADM_RUNNING_ST, 0, NULL, &res, "count running jobs");
  if (rc) return rc;
  for (int i = 0; i < PQntuples(res) && !rc; i++) {
    const char *owner = pg_val(res, i, 0);
    if (cb(owner ? owner : "", pg_int(res, i, 1), data))
      rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
  }
  PQclear(res);
  return rc;
}

/* ---- top (store.h, "top") -------------------------------------------------- */

static int pg_top_throughput(store_t *base, int64_t since, store_tp_cb cb,
                             void *data) {
  pg_store_t *s = (pg_store_t *)base;
  pg_params_t pp;
  pp_int(&pp, 0, since);
  PGresult *res;
  int rc = pg_run(s, PG_TOP_TP_Q, 1, pp.v, &res, "read throughput");
  if (rc) return rc;
  for (int i = 0; i < PQntuples(res) && !rc; i++) {
    const char *q = pg_val(res, i, 2);
    if (!q || cb(pg_int(res, i, 0), (int)pg_int(res, i, 1), q,
                 pg_int(res, i, 3), data))
      rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
  }
  PQclear(res);
  return rc;
}

static int pg_top_running(store_t *base, int limit, pawl_job_cb cb,
                          void *data) {
  pg_store_t *s = (pg_store_t *)base;
  pg_params_t pp;
  pp_int(&pp, 0, limit);
  PGresult *res;
  int rc = pg_run(s, PG_TOP_RUNNING_Q, 1, pp.v, &res, "list running jobs");
  return rc ? rc : pg_list_rows(s, res, cb, data);
}

/* ---- recurring definitions (store.h, "recurring") ------------------------- */

static void pg_rec_params(pg_params_t *pp, const pawl_recurring_t *d) {
  pp_str(pp, 0, d->name);
  pp_str(pp, 1, d->expr);
  pp_str(pp, 2, d->tz ? d->tz : "UTC");
  pp_str(pp, 3, pawl_misfire_name(d->misfire));
  pp_int(pp, 4, d->catch_up_limit);
  pp_str(pp, 5, d->type);
  pp_str(pp, 6, d->payload ? d->payload : "{}");
  pp_str(pp, 7, d->queue);
  pp_int(pp, 8, d->priority);
  pp_int(pp, 9, d->max_attempts);
  pp_int(pp, 10, d->timeout_s);
  pp_int(pp, 11, d->enabled ? 1 : 0);
  pp_int(pp, 12, d->paused ? 1 : 0);
  pp_str(pp, 13, d->from_script ? "script" : "operator");
  pp_str(pp, 14, d->script);
  pp_opt_int(pp, 15, d->next_fire_at != 0, d->next_fire_at);
}

static int pg_rec_put(store_t *base, const pawl_recurring_t *d, int how,
                      int *done) {
  pg_store_t *s = (pg_store_t *)base;
  pg_params_t pp;
  pg_rec_params(&pp, d);
  pp_now(s, &pp, 16);
  PGresult *res;
  int rc = pg_run(s, how == STORE_REC_SCRIPT ? PG_REC_PUT_SCRIPT : PG_REC_ADD,
                  17, pp.v, &res, "write recurring definition");
  if (rc) return rc;
  *done = pg_changed(res) == 1;
  PQclear(res);
  if (!*done && how == STORE_REC_ADD)
    return pawl__store_fail(base, PAWL_EKEY,
                            "recurring definition \"%s\" already exists",
                            d->name);
  return 0;
}

static int pg_rec_rows(pg_store_t *s, PGresult *res, pawl_recurring_t **out,
                       size_t *n) {
  int rows = PQntuples(res);
  pawl_recurring_t *defs = rows ? pawl__calloc((size_t)rows, sizeof *defs)
                                : NULL;
  if (rows && !defs) {
    PQclear(res);
    return pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
  }
  for (int i = 0; i < rows; i++) {
    store_row_t r = pg_row(res, i);
    if (pawl__store_rec_fill(&defs[i], &r) != 0) {
      PQclear(res);
      pawl_recurring_free(defs, (size_t)rows);
      return pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
    }
  }
  PQclear(res);
  *out = defs;
  *n = (size_t)rows;
  return 0;
}

static int pg_rec_get(store_t *base, const char *name,
                      pawl_recurring_t **out) {
  pg_store_t *s = (pg_store_t *)base;
  const char *v[1] = {name};
  PGresult *res;
  int rc = pg_run(s, PG_REC_GET, 1, v, &res, "read recurring definition");
  if (rc) return rc;
  pawl_recurring_t *d = NULL;
  size_t n = 0;
  if ((rc = pg_rec_rows(s, res, &d, &n))) return rc;
  if (n == 0)
    return pawl__store_fail(base, PAWL_ENOTFOUND,
                            "no recurring definition \"%s\"", name);
  *out = d;
  return 0;
}

static int pg_rec_list(store_t *base, pawl_recurring_t **out, size_t *n) {
  pg_store_t *s = (pg_store_t *)base;
  PGresult *res;
  int rc = pg_run(s, PG_REC_LIST, 0, NULL, &res, "list recurring definitions");
  return rc ? rc : pg_rec_rows(s, res, out, n);
}

static int pg_rec_update(store_t *base, const pawl_recurring_t *d,
                         int *changed) {
  pg_store_t *s = (pg_store_t *)base;
  pg_params_t pp;
  pg_rec_params(&pp, d);
  pp_opt_int(&pp, 16, d->last_fire_at != 0, d->last_fire_at);
  pp_id(&pp, 17, d->has_last_job ? &d->last_job_id : NULL);
  pp_now(s, &pp, 18);
  pp_int(&pp, 19, d->version);
  PGresult *res;
  int rc = pg_run(s, PG_REC_UPDATE, 20, pp.v, &res,
                  "change recurring definition");
  if (rc) return rc;
  *changed = pg_changed(res) == 1;
  PQclear(res);
  return 0;
}

static int pg_rec_remove(store_t *base, const char *name) {
  pg_store_t *s = (pg_store_t *)base;
  const char *v[1] = {name};
  PGresult *res;
  int rc = pg_run(s, PG_REC_REMOVE, 1, v, &res,
                  "remove recurring definition");
  if (rc) return rc;
  long n = pg_changed(res);
  PQclear(res);
  if (n == 0)
    return pawl__store_fail(base, PAWL_ENOTFOUND,
                            "no recurring definition \"%s\"", name);
  return 0;
}

static int pg_rec_due(store_t *base, int64_t now, size_t max,
                      pawl_recurring_t **out, size_t *n) {
  pg_store_t *s = (pg_store_t *)base;
  pg_params_t pp;
  pp_int(&pp, 0, now);
  pp_int(&pp, 1, (int64_t)max);
  PGresult *res;
  int rc = pg_run(s, PG_REC_DUE, 2, pp.v, &res, "read due recurring definitions");
  return rc ? rc : pg_rec_rows(s, res, out, n);
}

/* Closes array literals; -1 when one ran out of memory. */
static int pg_arr_close(pawl_buf_t **bufs, size_t n) {
  int oom = 0;
  for (size_t i = 0; i < n; i++) {
    arr_end(bufs[i]);
    oom |= bufs[i]->oom;
  }
  return oom ? -1 : 0;
}

static void pg_arr_free(pawl_buf_t **bufs, size_t n) {
  for (size_t i = 0; i < n; i++) pawl__buf_free(bufs[i]);
}

/* A definition of a batch in name order (pg_rec_cas()). */
typedef struct pg_rec_by_name {
  const char *name;
  size_t i;
} pg_rec_by_name_t;

static int pg_rec_name_cmp(const void *x, const void *y) {
  const pg_rec_by_name_t *a = x, *b = y;
  int c = strcmp(a->name, b->name);
  return c ? c : (a->i > b->i) - (a->i < b->i);
}

/* The batch's compare-and-sets in one statement, in name order (see
 * PG_REC_ADVANCE_SQL): sets a[i].advanced, and *now to the transaction's
 * now (or the injected clock's) in ms. Each definition's last job is
 * written as its own, corrected by pg_rec_fix_last() if its key was seen
 * before. */
static int pg_rec_cas(pg_store_t *s, store_rec_advance_t *a, size_t n,
                      int64_t *now) {
  pg_rec_by_name_t *by = pawl__calloc(n, sizeof *by);
  if (!by) return pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
  for (size_t i = 0; i < n; i++) by[i] = (pg_rec_by_name_t){a[i].name, i};
  qsort(by, n, sizeof *by, pg_rec_name_cmp);
  pawl_buf_t names, expect, next, last, job;
  pawl_buf_t *bufs[] = {&names, &expect, &next, &last, &job};
  const size_t nb = sizeof bufs / sizeof *bufs;
  for (size_t i = 0; i < nb; i++) arr_begin(bufs[i]);
  for (size_t k = 0; k < n; k++) {
    const store_rec_advance_t *d = &a[by[k].i];
    arr_str(&names, d->name);
    arr_int(&expect, d->expect_next);
    arr_opt_int(&next, d->next);
    arr_opt_int(&last, d->last_fire);
    if (d->njobs)
      arr_id(&job, &d->jobs[d->njobs - 1].id);
    else
      arr_str(&job, NULL);
  }
  int rc = 0;
  PGresult *res = NULL;
  if (pg_arr_close(bufs, nb)) {
    rc = pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
  } else {
    pg_params_t pp;
    for (size_t i = 0; i < nb; i++) pp_str(&pp, (int)i, bufs[i]->data);
    pp_now(s, &pp, 5);
    rc = pg_run(s, PG_REC_ADVANCE, 6, pp.v, &res,
                "advance recurring definitions");
  }
  pg_arr_free(bufs, nb);
  for (int r = 0; !rc && r < PQntuples(res); r++) {
    int64_t k = pg_int(res, r, 0);
    if (k >= 1 && (uint64_t)k <= n) a[by[k - 1].i].advanced = 1;
    *now = pg_int(res, r, 1);
  }
  PQclear(res);
  pawl__free(by);
  return rc;
}

/* Records the idempotency keys of the advanced definitions' jobs in one
 * statement: fresh[k] = 1 for the k-th of those jobs (in a's order) whose
 * key was not seen before, and a[i].made counted. */
static int pg_rec_keys(pg_store_t *s, store_rec_advance_t *a, size_t n,
                       unsigned char *fresh, size_t total) {
  size_t *def = pawl__calloc(total, sizeof *def);
  if (!def) return pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
  pawl_buf_t keys, ids;
  pawl_buf_t *bufs[] = {&keys, &ids};
  arr_begin(&keys);
  arr_begin(&ids);
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; a[i].advanced && j < a[i].njobs; j++) {
      arr_str(&keys, a[i].jobs[j].idempotency_key);
      arr_id(&ids, &a[i].jobs[j].id);
      def[k++] = i;
    }
  int rc = 0;
  PGresult *res = NULL;
  if (pg_arr_close(bufs, 2)) {
    rc = pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
  } else {
    pg_params_t pp;
    pp_str(&pp, 0, keys.data);
    pp_str(&pp, 1, ids.data);
    pp_now(s, &pp, 2);
    rc = pg_run(s, PG_REC_KEYS, 3, pp.v, &res, "record idempotency keys");
  }
  pg_arr_free(bufs, 2);
  for (int r = 0; !rc && r < PQntuples(res); r++) {
    int64_t x = pg_int(res, r, 0);
    if (x < 1 || (uint64_t)x > total || fresh[x - 1]) continue;
    fresh[x - 1] = 1;
    a[def[x - 1]].made++;
  }
  PQclear(res);
  pawl__free(def);
  return rc;
}

/* The definitions whose last job's key was seen before (a crash between
 * an enqueue and the advance, another node): last_job_id = the job the
 * key names, in one statement; none when every last key was new. */
static int pg_rec_fix_last(pg_store_t *s, store_rec_advance_t *a, size_t n,
                           const unsigned char *fresh) {
  pawl_buf_t names, keys;
  pawl_buf_t *bufs[] = {&names, &keys};
  arr_begin(&names);
  arr_begin(&keys);
  size_t k = 0, count = 0;
  for (size_t i = 0; i < n; i++) {
    if (!a[i].advanced || a[i].njobs == 0) continue;
    k += a[i].njobs;
    if (fresh[k - 1]) continue;
    arr_str(&names, a[i].name);
    arr_str(&keys, a[i].jobs[a[i].njobs - 1].idempotency_key);
    count++;
  }
  int rc = 0;
  if (pg_arr_close(bufs, 2)) {
    rc = pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
  } else if (count) {
    const char *v[2] = {names.data, keys.data};
    rc = pg_run(s, PG_REC_LAST_JOB, 2, v, NULL,
                "record the last jobs of recurring definitions");
  }
  pg_arr_free(bufs, 2);
  return rc;
}

/* The jobs whose keys were new, in one COPY (the bulk enqueue's path: they
 * have no business key, and their fresh ids conflict with nothing). */
static int pg_rec_copy(pg_store_t *s, store_rec_advance_t *a, size_t n,
                       const unsigned char *fresh, size_t total, int64_t now) {
  size_t nfresh = 0;
  for (size_t k = 0; k < total; k++) nfresh += fresh[k];
  if (nfresh == 0) return 0;
  store_new_job_t *jobs = pawl__calloc(nfresh, sizeof *jobs);
  if (!jobs) return pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
  size_t k = 0, m = 0;
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; a[i].advanced && j < a[i].njobs; j++)
      if (fresh[k++]) jobs[m++] = a[i].jobs[j];
  int rc = pg_copy_rows(s, jobs, m, now, 0);
  pawl__free(jobs);
  return rc;
}

/* A batch in a fixed number of statements whatever n (pg_recurring_sql.h):
 * the compare-and-sets, the keys of the advanced ones' jobs, the jobs
 * whose key is new in one COPY, and only when some definition's last key
 * was seen before, its last job. */
static int pg_rec_advance(store_t *base, store_rec_advance_t *a, size_t n) {
  pg_store_t *s = (pg_store_t *)base;
  if (n == 0) return 0;
  for (size_t i = 0; i < n; i++) a[i].advanced = 0, a[i].made = 0;
  int64_t now = 0;
  unsigned char *fresh = NULL;
  size_t total = 0;
  int rc = pg_begin(s);
  if (!rc) rc = pg_rec_cas(s, a, n, &now);
  for (size_t i = 0; !rc && i < n; i++)
    if (a[i].advanced) total += a[i].njobs;
  if (!rc && total) {
    fresh = pawl__calloc(total, 1);
    if (!fresh) rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
    if (!rc) rc = pg_rec_keys(s, a, n, fresh, total);
    if (!rc) rc = pg_rec_fix_last(s, a, n, fresh);
    if (!rc) rc = pg_rec_copy(s, a, n, fresh, total, now);
  }
  pawl__free(fresh);
  rc = pg_end(s, rc);
  if (rc)
    for (size_t i = 0; i < n; i++) a[i].advanced = 0, a[i].made = 0;
  return rc;
}

static int pg_rec_disable_gone(store_t *base, const char *const *scripts,
                               size_t n, int listed, size_t *count) {
  pg_store_t *s = (pg_store_t *)base;
  pawl_buf_t b;
  arr_begin(&b);
  for (size_t i = 0; i < n; i++) arr_str(&b, scripts[i]);
  arr_end(&b);
  if (b.oom) {
    pawl__buf_free(&b);
    return pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
  }
  pg_params_t pp;
  pp_str(&pp, 0, pawl__buf_cstr(&b));
  pp_now(s, &pp, 1);
  PGresult *res;
  int rc = pg_run(s, listed ? PG_REC_DISABLE_LISTED : PG_REC_DISABLE_GONE, 2,
                  pp.v, &res,
                  "disable recurring definitions");
  pawl__buf_free(&b);
  if (rc) return rc;
  if (count) *count = (size_t)pg_changed(res);
  PQclear(res);
  return 0;
}

static int pg_rec_load_error(store_t *base, const char *script,
                             const char *error) {
  pg_store_t *s = (pg_store_t *)base;
  pg_params_t pp;
  pp_str(&pp, 0, script);
  pp_str(&pp, 1, error);
  pp_now(s, &pp, 2);
  return pg_run(s, PG_REC_LOAD_ERROR, 3, pp.v, NULL,
                "note a script's load error");
}

/* ---- batches (schema/postgres/V009__batch.sql) ---------------------------- */

/* Adds d (succeeded, failed, canceled) to the counters of job id's batch,
 * if it has one; the trigger fires the callbacks when this completes the
 * count (exactly once: see the migration). */
static int pg_batch_count_job(pg_store_t *s, const pawl_id_t *id,
                              const int64_t d[3]) {
  pg_params_t pp;
  pp_id(&pp, 0, id);
  pp_int(&pp, 1, d[0]);
  pp_int(&pp, 2, d[1]);
  pp_int(&pp, 3, d[2]);
  pp_now(s, &pp, 4);
  return pg_run(s, PG_BATCH_COUNT_JOB, 5, pp.v, NULL,
                "count the batch's children");
}

/* The batch row, its callbacks, then its children in one COPY, in one
 * transaction. "Now" is the transaction's (or the injected clock's), as
 * in pg_insert_many(). */
/* The batch of b->ident, if one was made: *found = 1 and its id and its
 * children's into b->found_id, b->found_ids (in the caller's
 * transaction). One with another number of children than `n` is
 * PAWL_ECONFLICT. Two parents never share an identity (it holds the
 * parent's id) and one job runs on one node at a time, so no other
 * transaction races this one for it; if one did, the unique index
 * refuses the second insert. */
static int pg_batch_find(pg_store_t *s, const store_batch_new_t *b, size_t n,
                         int *found) {
  const char *v[1] = {b->ident};
  PGresult *res;
  int rc = pg_run(s, PG_BATCH_FIND, 1, v, &res, "find the batch");
  if (rc) return rc;
  if (PQntuples(res) == 0) {
    PQclear(res);
    return 0;
  }
  pawl_id_t id;
  pg_id(res, 0, 0, &id);
  long long total = strtoll(PQgetvalue(res, 0, 1), NULL, 10);
  PQclear(res);
  char text[PAWL_ID_STRLEN];
  pawl_id_format(&id, text);
  if (total != (long long)n)
    return pawl__store_fail(&s->base, PAWL_ECONFLICT,
                            "batch %s was made under the identity \"%.200s\" "
                            "with %lld jobs; this call has %zu",
                            text, b->ident, total, n);
  v[0] = text;
  if ((rc = pg_run(s, PG_BATCH_CHILDREN, 1, v, &res, "read the batch's jobs")))
    return rc;
  size_t k = (size_t)PQntuples(res);
  for (size_t i = 0; i < k && i < n; i++) pg_id(res, (int)i, 0, &b->found_ids[i]);
  PQclear(res);
  if (k != n)
    return pawl__store_fail(&s->base, PAWL_ECONFLICT,
                            "batch %s made under the identity \"%.200s\" "
                            "has %zu of its %zu jobs left",
                            text, b->ident, k, n);
  *b->found_id = id;
  *b->found = *found = 1;
  return 0;
}

static int pg_batch_create(store_t *base, const store_batch_new_t *b,
                           const store_new_job_t *jobs, size_t n) {
  pg_store_t *s = (pg_store_t *)base;
  int64_t now = 0;
  int rc = pg_ready(s);
  if (!rc && s->base.clock) {
    now = s->base.clock(s->base.clock_data);
    rc = pg_cmd(s, "BEGIN", "begin transaction");
  } else if (!rc) {
    rc = pg_query_int(s, "BEGIN; SELECT pawl_ms(now())", &now,
                      "begin transaction");
  }
  pg_params_t pp;
  if (!rc && b->ident) {
    int found = 0;
    rc = pg_batch_find(s, b, n, &found);
    if (rc || found) return pg_end(s, rc);
  }
  if (!rc) {
    pp_id(&pp, 0, &b->id);
    pp_int(&pp, 1, (int64_t)n);
    pp_str(&pp, 2, b->enqueued_by);
    pp_int(&pp, 3, now);
    pp_str(&pp, 4, b->ident);
    rc = pg_run(s, PG_BATCH_ADD, 5, pp.v, NULL, "record the batch");
  }
  for (int r = 0; r < 3 && !rc; r++) {
    const store_new_job_t *c = b->callbacks[r];
    if (!c) continue;
    pp_id(&pp, 0, &c->id);
    pp_id(&pp, 1, &b->id);
    pp_int(&pp, 2, r + 1);
    pp_str(&pp, 3, c->type);
    pp_str(&pp, 4, c->queue ? c->queue : "default");
    pp_int(&pp, 5, c->priority);
    pp_str(&pp, 6, c->payload ? c->payload : "{}");
    pp_str(&pp, 7, c->tags ? c->tags : "[]");
    pp_int(&pp, 8, c->max_attempts);
    pp_int(&pp, 9, c->timeout_s);
    pp_str(&pp, 10, c->correlation_id);
    pp_str(&pp, 11, c->enqueued_by);
    rc = pg_run(s, PG_BATCH_CB_ADD, 12, pp.v, NULL, "record a callback");
  }
  if (!rc) rc = pg_copy_rows(s, jobs, n, now, 1);
  /* Children that wait for a signal: their rows of
   * pawl_signals, as pg_insert_one() writes them; a key held twice fails
   * the batch (PAWL_EKEY). */
  for (size_t i = 0; i < n && !rc; i++)
    if (jobs[i].signal_key) rc = pg_sig_add(s, &jobs[i]);
  /* Children that wait for parents (dependencies): their edges,
   * as pg_insert_one() links them; one whose parents have all ended is
   * settled at once (and, canceled, counted in the batch by
   * pawl_deps_settle()). */
  for (size_t i = 0; i < n && !rc; i++)
    if (jobs[i].nafter) rc = pg_deps_link(s, &jobs[i], NULL);
  return pg_end(s, rc);
}

static int pg_batch_get(store_t *base, const pawl_id_t *id, int64_t now,
                        pawl_batch_t *out) {
  pg_store_t *s = (pg_store_t *)base;
  pawl_batch_t b;
  memset(&b, 0, sizeof b);
  b.id = *id;
  /* One snapshot: the counters and the children agree. */
  int rc = pg_ready(s);
  if (!rc)
    rc = pg_cmd(s, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
                "begin read");
  if (rc) return rc;
  pg_params_t pp;
  pp_id(&pp, 0, id);
  PGresult *res;
  if (!(rc = pg_run(s, PG_BATCH_GET, 1, pp.v, &res, "read batch"))) {
    if (PQntuples(res) == 1) {
      b.total = pg_int(res, 0, 0);
      b.succeeded = pg_int(res, 0, 1);
      b.failed = pg_int(res, 0, 2);
      b.canceled = pg_int(res, 0, 3);
      b.created_at = pg_int(res, 0, 4);
      b.finished_at = pg_int(res, 0, 5);
    } else {
      char text[PAWL_ID_STRLEN];
      pawl_id_format(id, text);
      rc = pawl__store_fail(base, PAWL_ENOTFOUND, "no batch %s", text);
    }
    PQclear(res);
  }
  if (!rc && !(rc = pg_run(s, PG_BATCH_CBS, 1, pp.v, &res, "read callbacks"))) {
    for (int i = 0; i < PQntuples(res); i++) {
      int64_t role = pg_int(res, i, 0);
      if (role < 1 || role > 3) continue;
      pawl_batch_callback_t *c = &b.callbacks[role - 1];
      c->set = 1;
      pg_id(res, i, 1, &c->id);
      c->fired_at = pg_int(res, i, 2);
    }
    PQclear(res);
  }
  int64_t life_ended = 0, exec_ended = 0;
  if (!rc && !(rc = pg_run(s, PG_BATCH_STATES, 1, pp.v, &res,
                           "read children"))) {
    for (int i = 0; i < PQntuples(res); i++) {
      int64_t state = pg_int(res, i, 0);
      if (state >= 0 && state < PAWL_STATE_COUNT)
        b.states[state] = pg_int(res, i, 1);
      b.exec_ms += pg_int(res, i, 2);
      exec_ended += pg_int(res, i, 2); /* successes: ended */
      life_ended += pg_int(res, i, 3);
    }
    PQclear(res);
  }
  if (!rc && !(rc = pg_run(s, PG_BATCH_ATTEMPTS, 1, pp.v, &res,
                           "read attempts"))) {
    for (int i = 0; i < PQntuples(res); i++) {
      const char *ended = pg_val(res, i, 0);
      int64_t ran = pg_int(res, i, 1);
      b.exec_ms += ran;
      if (ended && ended[0] == 't') exec_ended += ran;
    }
    PQclear(res);
  }
  rc = pg_end(s, rc);
  if (rc) return rc;
  b.wall_ms = (b.finished_at ? b.finished_at : now) - b.created_at;
  if (b.wall_ms < 0) b.wall_ms = 0;
  b.overhead_ms = life_ended - exec_ended;
  *out = b;
  return 0;
}

static int pg_batch_of(store_t *base, const pawl_id_t *id, pawl_id_t *batch,
                       int *role) {
  pg_store_t *s = (pg_store_t *)base;
  pg_params_t pp;
  pp_id(&pp, 0, id);
  PGresult *res;
  *role = -1;
  int rc = pg_run(s, PG_BATCH_OF, 1, pp.v, &res, "read the job's batch");
  if (rc) return rc;
  if (PQntuples(res) == 1 && !PQgetisnull(res, 0, 0)) {
    pg_id(res, 0, 0, batch);
    *role = PAWL_BATCH_CHILD;
  }
  PQclear(res);
  if (*role >= 0) return 0;
  rc = pg_run(s, PG_BATCH_OF_CB, 1, pp.v, &res, "read the job's batch");
  if (rc) return rc;
  if (PQntuples(res) == 1) {
    pg_id(res, 0, 0, batch);
    *role = (int)pg_int(res, 0, 1);
  }
  PQclear(res);
  return 0;
}

/* ---- dependencies --------------------------------------------------------- */

/* The children of job `id`, just ended by an operator transition, counted
 * and settled in its transaction (pawl_deps_release() in
 * schema/postgres/V010__deps.sql, which argues why each end counts once). */
static int pg_deps_release_one(pg_store_t *s, const pawl_id_t *id) {
  char text[PAWL_ID_STRLEN], arr[PAWL_ID_STRLEN + 2];
  pawl_id_format(id, text);
  snprintf(arr, sizeof arr, "{%s}", text);
  pg_params_t pp;
  pp_str(&pp, 0, arr);
  pp_now(s, &pp, 1);
  return pg_run(s, PG_DEPS_RELEASE, 2, pp.v, NULL,
                "release the children of an ended job");
}

/* Links the new blocked job j to its parents (and `prev`, for a chain),
 * inside the insert's transaction (pawl_deps_link()). */
static int pg_deps_link(pg_store_t *s, const store_new_job_t *j,
                        const pawl_id_t *prev) {
  pawl_buf_t ids, conds;
  arr_begin(&ids);
  arr_begin(&conds);
  const char *when = j->when ? j->when : "success";
  for (size_t i = 0; i < j->nafter; i++) {
    arr_id(&ids, &j->after[i]);
    arr_str(&conds, when);
  }
  if (j->after_prev && prev) {
    int dup = 0;
    for (size_t i = 0; i < j->nafter && !dup; i++)
      dup = memcmp(&j->after[i], prev, sizeof *prev) == 0;
    if (!dup) {
      arr_id(&ids, prev);
      arr_str(&conds, "success");
    }
  }
  arr_end(&ids);
  arr_end(&conds);
  int rc = 0;
  if (ids.oom || conds.oom)
    rc = pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
  PGresult *res = NULL;
  if (!rc) {
    pg_params_t pp;
    pp_id(&pp, 0, &j->id);
    pp_str(&pp, 1, ids.data);
    pp_str(&pp, 2, conds.data);
    pp_now(s, &pp, 3);
    rc = pg_run(s, PG_DEPS_LINK, 4, pp.v, &res, "link a job to its parents");
  }
  if (!rc && PQntuples(res) == 1 && !PQgetisnull(res, 0, 0))
    rc = pawl__store_fail(&s->base, PAWL_ENOTFOUND, "unknown parent job %s",
                          PQgetvalue(res, 0, 0));
  PQclear(res);
  pawl__buf_free(&ids);
  pawl__buf_free(&conds);
  return rc;
}

static int pg_deps_uncount(store_t *base, const pawl_id_t *parent,
                           int state) {
  pg_store_t *s = (pg_store_t *)base;
  pg_params_t pp;
  pp_id(&pp, 0, parent);
  pp_int(&pp, 1, state);
  int rc = pg_run(s, PG_DEPS_LOCK_KIDS, 1, pp.v, NULL, "lock the children");
  if (!rc)
    rc = pg_run(s, PG_DEPS_UNCOUNT, 2, pp.v, NULL, "reopen a retried parent");
  return rc;
}

static int pg_deps_canceled(store_t *base, const pawl_id_t *parent,
                            int state, pawl_id_t **out, size_t *n) {
  pg_store_t *s = (pg_store_t *)base;
  *out = NULL;
  *n = 0;
  pg_params_t pp;
  pp_id(&pp, 0, parent);
  pp_int(&pp, 1, state);
  PGresult *res;
  int rc = pg_run(s, PG_DEPS_CANCELED, 2, pp.v, &res,
                  "find the children a failure canceled");
  if (rc) return rc;
  int rows = PQntuples(res);
  if (rows > 0) {
    *out = pawl__calloc((size_t)rows, sizeof **out);
    if (!*out) rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
    for (int i = 0; !rc && i < rows; i++) pg_id(res, i, 0, &(*out)[i]);
    if (!rc) *n = (size_t)rows;
  }
  PQclear(res);
  return rc;
}

static int pg_deps_recount(store_t *base, const pawl_id_t *child) {
  pg_params_t pp;
  pp_id(&pp, 0, child);
  return pg_run((pg_store_t *)base, PG_DEPS_RECOUNT, 1, pp.v, NULL,
                "reopen a child");
}

static int pg_deps_open(store_t *base, const pawl_id_t *parent) {
  pg_params_t pp;
  pp_id(&pp, 0, parent);
  return pg_run((pg_store_t *)base, PG_DEPS_REOPEN_SELF, 1, pp.v, NULL,
                "reopen a retried parent");
}

static const store_reopen_steps_t pg_reopen_steps = {
    .uncount = pg_deps_uncount,
    .canceled = pg_deps_canceled,
    .recount = pg_deps_recount,
    .open = pg_deps_open,
};

static int pg_deps_reopen(store_t *base, const pawl_id_t *id, int64_t now,
                          const char *actor) {
  return pawl__store_deps_reopen(base, &pg_transition_steps, &pg_reopen_steps,
                                 id, now, actor);
}

static int pg_deps_list(store_t *base, const pawl_id_t *id, pawl_dep_cb cb,
                        void *data) {
  pg_store_t *s = (pg_store_t *)base;
  pg_params_t pp;
  pp_id(&pp, 0, id);
  PGresult *res;
  int rc = pg_run(s, PG_DEPS_LIST, 1, pp.v, &res, "list dependencies");
  if (rc) return rc;
  /* The result is whole before the first call: the callback may use the
   * store. */
  for (int i = 0; i < PQntuples(res); i++) {
    pawl_dep_t d;
    memset(&d, 0, sizeof d);
    d.parent = pg_int(res, i, 0) != 0;
    pg_id(res, i, 1, &d.id);
    d.type = pg_val(res, i, 2);
    d.state = (int)pg_int(res, i, 3);
    d.when = pg_val(res, i, 4);
    if (cb(&d, data)) break;
  }
  PQclear(res);
  return 0;
}

/* ---- steps (restartable steps, job instances) ----------------------------- */

static int pg_steps_get(store_t *base, const pawl_id_t *id, pawl_steps_t **out) {
  pg_store_t *s = (pg_store_t *)base;
  *out = NULL;
  pg_params_t pp;
  pp_id(&pp, 0, id);
  PGresult *res;
  /* One snapshot (REPEATABLE READ): the rows, the exit and the instance
   * agree. */
  int rc = pg_ready(s);
  if (!rc) rc = pg_cmd(s, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
                       "begin transaction");
  if (rc) return rc;
  rc = pg_run(s, PG_STEP_JOB_Q, 1, pp.v, &res, "read steps");
  pawl_steps_t *st = NULL;
  if (!rc) {
    int exists = PQntuples(res) == 1 && strcmp(pg_val(res, 0, 0), "t") == 0;
    if (!exists) {
      rc = pawl__store_no_job(base, id);
    } else if (!(st = pawl__calloc(1, sizeof *st)) ||
               pawl__store_dup(&st->exit_code, pg_val(res, 0, 1)) ||
               pawl__store_dup(&st->exit_message, pg_val(res, 0, 2)) ||
               pawl__store_dup(&st->instance, pg_val(res, 0, 3))) {
      rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
    }
    PQclear(res);
  }
  if (!rc) rc = pg_run(s, PG_STEP_LIST_Q, 1, pp.v, &res, "read steps");
  if (!rc) {
    for (int i = 0; !rc && i < PQntuples(res); i++) {
      pawl_step_exec_t *e = pawl__store_step_push(st);
      store_row_t sr = pg_row(res, i);
      if (!e || pawl__store_step_fill(e, &sr) != 0)
        rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
    }
    PQclear(res);
  }
  /* A read: ending it cannot lose anything; keep the first error. */
  int end = pg_end(s, 0);
  if (!rc) rc = end;
  if (rc) {
    pawl_steps_free(st);
    return rc;
  }
  *out = st;
  return 0;
}

/* Binds the attempt ($1 job, $2 token, $3 attempt) of PG_STEP_HELD. */
static void pg_step_held(pg_params_t *pp, const pawl_id_t *id,
                         const pawl_id_t *token, int32_t attempt) {
  pp_id(pp, 0, id);
  pp_id(pp, 1, token);
  pp_int(pp, 2, attempt);
}

static void pg_step_counts(pg_params_t *pp, int first, const int64_t *counts) {
  for (int k = 0; k < PAWL_STEP_NCOUNTS; k++)
    pp_int(pp, first + k, counts ? counts[k] : 0);
}

/* Runs a guarded write: PAWL_ELEASE when it changed no row. */
static int pg_step_write(pg_store_t *s, int stmt, int n, pg_params_t *pp,
                         const pawl_id_t *id, int32_t attempt,
                         const char *what) {
  PGresult *res;
  int rc = pg_run(s, stmt, n, pp->v, &res, what);
  if (rc) return rc;
  long changed = pg_changed(res);
  PQclear(res);
  return changed == 1 ? 0 : pawl__store_not_held(&s->base, id, attempt);
}

static int pg_step_begin(store_t *base, const pawl_id_t *id,
                         const pawl_id_t *token, int32_t attempt,
                         int32_t index, const char *name,
                         const char *checkpoint, int64_t *exec) {
  pg_store_t *s = (pg_store_t *)base;
  pg_params_t pp;
  pg_step_held(&pp, id, token, attempt);
  pp_int(&pp, 3, index);
  pp_str(&pp, 4, name);
  pp_now(s, &pp, 5);
  pp_str(&pp, 6, checkpoint);
  PGresult *res;
  int rc = pg_run(s, PG_STEP_BEGIN_Q, 7, pp.v, &res, "begin step");
  if (rc) return rc;
  int got = PQntuples(res) == 1;
  if (got) *exec = pg_int(res, 0, 0);
  PQclear(res);
  return got ? 0 : pawl__store_not_held(base, id, attempt);
}

static int pg_step_save(store_t *base, const pawl_id_t *id,
                        const pawl_id_t *token, int32_t attempt, int64_t exec,
                        const char *checkpoint, const int64_t *counts) {
  pg_store_t *s = (pg_store_t *)base;
  pg_params_t pp;
  pg_step_held(&pp, id, token, attempt);
  pp_int(&pp, 3, exec);
  pp_str(&pp, 4, checkpoint);
  pp_now(s, &pp, 5);
  pg_step_counts(&pp, 6, counts);
  return pg_step_write(s, PG_STEP_SAVE_Q, 12, &pp, id, attempt,
                       "save checkpoint");
}

static int pg_step_end(store_t *base, const pawl_id_t *id,
                       const pawl_id_t *token, int32_t attempt, int64_t exec,
                       int status, const char *exit_code,
                       const char *exit_message, const int64_t *counts) {
  pg_store_t *s = (pg_store_t *)base;
  pg_params_t pp;
  pg_step_held(&pp, id, token, attempt);
  pp_int(&pp, 3, exec);
  pp_int(&pp, 4, status);
  pp_now(s, &pp, 5);
  pp_str(&pp, 6, exit_code);
  pp_str(&pp, 7, exit_message);
  pg_step_counts(&pp, 8, counts);
  return pg_step_write(s, PG_STEP_END_Q, 14, &pp, id, attempt, "end step");
}

static int pg_step_exit(store_t *base, const pawl_id_t *id,
                        const pawl_id_t *token, int32_t attempt,
                        const char *exit_code, const char *exit_message) {
  pg_store_t *s = (pg_store_t *)base;
  pg_params_t pp;
  pg_step_held(&pp, id, token, attempt);
  pp_str(&pp, 3, exit_code);
  pp_str(&pp, 4, exit_message);
  pp_now(s, &pp, 5);
  return pg_step_write(s, PG_STEP_EXIT_Q, 6, &pp, id, attempt,
                       "set exit code");
}

static int pg_instance_find(store_t *base, const char *type, const char *key,
                            pawl_id_t *id, int *state) {
  pg_store_t *s = (pg_store_t *)base;
  const char *v[2] = {type, key};
  PGresult *res;
  int rc = pg_run(s, PG_INSTANCE_FIND_Q, 2, v, &res, "look up job instance");
  if (rc) return rc;
  int found = PQntuples(res) > 0;
  if (found) {
    pg_id(res, 0, 0, id);
    *state = (int)pg_int(res, 0, 1);
  }
  PQclear(res);
  return found ? 0 : PAWL_ENOTFOUND;
}

/* In the insert's transaction, after the job's row (pg_insert_one). */
static int pg_instance_take(pg_store_t *s, const store_new_job_t *j) {
  pg_params_t pp;
  pp_str(&pp, 0, j->type);
  pp_str(&pp, 1, j->instance_key);
  pp_id(&pp, 2, &j->id);
  pp_now(s, &pp, 3);
  PGresult *res;
  int rc = pg_run(s, PG_INSTANCE_TAKE_Q, 4, pp.v, &res, "record job instance");
  if (rc) return rc;
  long changed = pg_changed(res);
  PQclear(res);
  if (changed == 1) return 0;
  return pawl__store_fail(&s->base, PAWL_ECONFLICT,
                          "job instance %s of %s is held by another job",
                          j->instance_key, j->type);
}

/* ---- retention ------------------------------------------------------------
 * The walk reads pages by primary key; a page's removal is one statement
 * (its own transaction), the ids and versions passed as arrays. */

static int pg_ret_scan(store_t *base, const store_pick_t *after, size_t max,
                       store_retain_row_t *out, size_t *n) {
  pg_store_t *s = (pg_store_t *)base;
  static const pawl_id_t zero; /* ids are UUIDv7s: never all zero */
  pg_params_t pp;
  pp_id(&pp, 0, after ? &after->id : &zero);
  pp_int(&pp, 1, (int64_t)max);
  PGresult *res;
  int rc = pg_run(s, PG_RET_SCAN, 2, pp.v, &res, "scan jobs for retention");
  if (rc) return rc;
  size_t k = 0;
  for (int i = 0; i < PQntuples(res) && k < max; i++, k++) {
    store_retain_row_t *r = &out[k];
    pg_id(res, i, 0, &r->pick.id);
    r->pick.version = pg_int(res, i, 1);
    r->pick.key = 0;
    r->state = (int)pg_int(res, i, 2);
    r->created_at = pg_int(res, i, 3);
    r->finished_at = pg_int(res, i, 4);
    const char *q = pg_val(res, i, 5), *t = pg_val(res, i, 6);
    snprintf(r->queue, sizeof r->queue, "%s", q ? q : "");
    snprintf(r->type, sizeof r->type, "%s", t ? t : "");
  }
  PQclear(res);
  *n = k;
  return 0;
}

static int pg_ret_remove(store_t *base, const store_retain_row_t *rows,
                         size_t n, int archive, int *removed) {
  pg_store_t *s = (pg_store_t *)base;
  for (size_t i = 0; i < n; i++) removed[i] = 0;
  if (n == 0) return 0;
  pawl_buf_t ids, vers;
  arr_begin(&ids);
  arr_begin(&vers);
  for (size_t i = 0; i < n; i++) {
    arr_id(&ids, &rows[i].pick.id);
    arr_int(&vers, rows[i].pick.version);
  }
  arr_end(&ids);
  arr_end(&vers);
  int rc = 0;
  if (ids.oom || vers.oom)
    rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
  PGresult *res = NULL;
  if (!rc) {
    pg_params_t pp;
    pp_str(&pp, 0, ids.data);
    pp_str(&pp, 1, vers.data);
    pp_now(s, &pp, 2);
    rc = archive ? pg_run(s, PG_RET_ARCHIVE, 3, pp.v, &res, "archive jobs")
                 : pg_run(s, PG_RET_DELETE, 2, pp.v, &res, "delete jobs");
  }
  pawl__buf_free(&ids);
  pawl__buf_free(&vers);
  if (rc) return rc;
  /* Both lists are in the walk's order (by id, as the uuid compares:
   * its bytes): one merge marks the rows that went. */
  size_t k = 0;
  for (int i = 0; i < PQntuples(res); i++) {
    pawl_id_t id;
    pg_id(res, i, 0, &id);
    while (k < n && memcmp(rows[k].pick.id.bytes, id.bytes, 16) < 0) k++;
    if (k < n && memcmp(rows[k].pick.id.bytes, id.bytes, 16) == 0)
      removed[k++] = 1;
  }
  PQclear(res);
  return 0;
}
