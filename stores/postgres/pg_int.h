/* pg_int.h: what the files of the PostgreSQL store share (private to
 * stores/postgres/).
 *
 * The PostgreSQL backend of the store interface (libpq). One connection
 * per store_t. Every statement is prepared once per connection (on first
 * use, and again after a reconnect) and run with bound parameters in text
 * form. Times cross the wire as epoch milliseconds; the SQL converts
 * (pawl_ms(), pawl_ts()) and takes "now" from the database clock unless a
 * test injected one (pawl_now($n) with the reading bound).
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
 * transaction) or inside BEGIN/COMMIT.
 *
 * One file per group of the interface (stores/store.h, struct store_ops),
 * the same names as the SQLite store's files (stores/sqlite/sqlite_int.h),
 * each with the SQL of its statements beside its code:
 *   store.c      open and close, the vtable, the connection and its
 *                reconnect, statements and pipelines, errors,
 *                transactions, rows, settings; and the wakeup (LISTEN and
 *                the wait for NOTIFY), because a reconnect must LISTEN
 *                again before anything else runs on the new connection
 *   schema.c     migrations and the schema version
 *   jobs.c       insert (one by one, or COPY in binary format for a bulk
 *                enqueue), get, list, progress; the keys' look-ups
 *   claim.c      claim (lanes, the prepared pick), leases, recovery,
 *                start, next_due
 *   limits.c     concurrency and rate limits, in the claim and for the
 *                operator
 *   terminal.c   the finish (one pipeline per batch of outcomes)
 *   control.c    operator transitions
 *   history.c    history and log lines
 *   locks.c      named locks
 *   nodes.c      nodes
 *   queues.c     pause, resume, a queue's age boost
 *   types.c      job types
 *   recurring.c  recurring definitions
 *   flow.c       signals and replace
 *   batch.c      batches
 *   deps.c       dependencies
 *   steps.c      restartable steps, job instances
 *   alerts.c     dead-letter alerts
 *   retention.c  retention
 *   admin.c      administration (its SQL in pg_admin_sql.h, which the plan
 *                tests include)
 *   metrics.c    the metrics gauges and `pawl top`
 * The hot path's SQL stays in pg_sql.h, which the tests and the
 * benchmark's plain-SQL loop include so that they run exactly the store's
 * text. schema.c has no numbered statements (a migration's text is run as
 * it is), so it has no group below.
 *
 * Names: what a file keeps to itself is static (pg_...); what crosses
 * files is pawl__pg_... (libpawl's rule for internal symbols), declared
 * below by the file that defines it; the small helpers every file calls
 * to bind parameters and read rows are static inline here. The calls
 * that cross files (pawl__pg_run() and the like) each wait for a round
 * trip to the server, beside which a function call costs nothing.
 *
 * Statements. As in the SQLite store, one enum numbers every statement,
 * grouped by the file that owns its SQL: each group opens with a marker
 * PG__FILE (the group's first id) and ends where the next marker begins.
 * Each file defines pawl__pg_sql_FILE[], its SQL indexed from its marker
 * (PG_AT(id) inside the table), and store.c stitches the tables together
 * (pawl__pg_sql()). A statement is prepared on a connection under the
 * name "pawl_<id>", and the connection remembers which ids it prepared in
 * one array indexed by id (pg_store_t.prepared): the check on every use
 * stays one load from an array, as it was when the store was one file;
 * only the first use on a connection goes through the tables to find the
 * text. A statement used by several files has its SQL in one of them;
 * any file may use any id. */
#ifndef PAWL_PG_INT_H
#define PAWL_PG_INT_H

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
#include "pg_sql.h"
#include "redact.h"
#include "store.h"

/* Statement ids, grouped by the file whose table holds their SQL. */
enum {
  /* store.c */
  PG__STORE,
  PG_GET = PG__STORE,
  PG_GET_LOCKED,
  PG_SETTING_GET,
  PG_SETTING_SET,
  PG_RERANK,
  /* jobs.c */
  PG__JOBS,
  PG_IDEM_FIND = PG__JOBS,
  PG_IDEM_ADD,
  PG_IDEM_DROP,
  PG_BIZ_FIND,
  PG_INSERT,
  PG_LIST,
  PG_LIST_FAILED,
  PG_PROGRESS,
  PG_QUEUE_BOOSTS,
  /* claim.c */
  PG__CLAIM,
  PG_CLAIM = PG__CLAIM,
  PG_CLAIM_QUEUE,
  PG_CLAIM_QUEUES,
  PG_EXTEND,
  PG_EXPIRED,
  PG_CRASHED,
  PG_START,
  PG_RUN_START,
  PG_AHEAD,
  PG_EXTEND_ONE,
  PG_NEXT_DUE,
  PG_CLAIM_PREPARE,
  PG_NEXT_DUE_QUEUE,
  PG_NEXT_DUE_QUEUES,
  PG_CLAIM_LANES, /* same order as PG_CLAIM, _QUEUE, _QUEUES */
  PG_CLAIM_LANES_QUEUE,
  PG_CLAIM_LANES_QUEUES,
  PG_CLAIM_PLAN,
  PG_BY_ID_PLAN,
  PG_CLAIM_FLOOR, /* then _QUEUE, as PG_CLAIM, _QUEUE */
  PG_CLAIM_FLOOR_QUEUE,
  PG_NEXT_DUE_FLOOR,
  PG_NEXT_DUE_FLOOR_QUEUE,
  PG_FLOORS_RESET,
  /* limits.c */
  PG__LIMITS,
  PG_CLAIM_LIM_PICK = PG__LIMITS, /* same order as PG_CLAIM, _QUEUE, _QUEUES */
  PG_CLAIM_LIM_PICK_QUEUE,
  PG_CLAIM_LIM_PICK_QUEUES,
  PG_CLAIM_LIM_LANES, /* same order again */
  PG_CLAIM_LIM_LANES_QUEUE,
  PG_CLAIM_LIM_LANES_QUEUES,
  PG_CLAIM_LIM_TAKE,
  PG_LIMITS_ANY,
  PG_LIMITS_LOCK,
  PG_LIMITS_RUNNING,
  PG_LIMITS_READ,
  PG_LIMITS_WINDOWS,
  PG_LIMIT_SET,
  PG_LIMIT_REMOVE,
  PG_LIMIT_LIST,
  PG_NEXT_DUE_LIM,
  PG_NEXT_DUE_LIM_RES,
  PG_NEXT_DUE_LIM_QUEUE,
  /* terminal.c */
  PG__TERMINAL,
  PG_SUCCEED_MANY = PG__TERMINAL,
  PG_END_ATTEMPT,
  PG_LOG_MANY,
  PG_TP_TRIM,
  PG_DEPS_BRANCHES,
  /* control.c */
  PG__CONTROL,
  PG_ATTEMPT_ADD = PG__CONTROL,
  PG_EVENT_ADD,
  PG_FORGET_START,
  PG_TRANSITION,
  PG_NOTIFY,
  PG_TP_ADD,
  /* history.c */
  PG__HISTORY,
  PG_ATTEMPTS = PG__HISTORY,
  PG_EVENTS,
  PG_EXISTS,
  PG_LOGS,
  /* locks.c */
  PG__LOCKS,
  PG_LOCK_ACQUIRE = PG__LOCKS,
  PG_LOCK_EXTEND,
  PG_LOCK_RELEASE,
  /* nodes.c */
  PG__NODES,
  PG_NODE_BEAT = PG__NODES,
  PG_NODE_LIST,
  PG_NODE_REAP,
  PG_NODE_STOP,
  /* queues.c */
  PG__QUEUES,
  PG_QUEUE_PAUSE = PG__QUEUES,
  PG_QUEUE_RESUME,
  PG_QUEUE_SET_BOOST,
  PG_QUEUE_LIST,
  /* types.c */
  PG__TYPES,
  PG_TYPES_SYNC = PG__TYPES, /* pawl_types */
  PG_TYPE_REDACT,
  /* recurring.c */
  PG__RECURRING,
  PG_REC_ADD = PG__RECURRING,
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
  /* flow.c */
  PG__FLOW,
  PG_SIG_RELEASE = PG__FLOW,
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
  PG_DEPS_HAND_LOCK,
  PG_DEPS_HAND_OVER,
  PG_DEPS_TAKE_OVER,
  /* batch.c */
  PG__BATCH,
  PG_BATCH_ADD = PG__BATCH,
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
  /* deps.c */
  PG__DEPS,
  PG_DEPS_RELEASE = PG__DEPS,
  PG_DEPS_LINK,
  PG_DEPS_LOCK_KIDS,
  PG_DEPS_UNCOUNT,
  PG_DEPS_CANCELED,
  PG_DEPS_RECOUNT,
  PG_DEPS_REOPEN_SELF,
  PG_DEPS_LIST,
  /* steps.c */
  PG__STEPS,
  PG_STEP_LIST_Q = PG__STEPS,
  PG_STEP_JOB_Q,
  PG_STEP_BEGIN_Q,
  PG_STEP_SAVE_Q,
  PG_STEP_END_Q,
  PG_STEP_EXIT_Q,
  PG_INSTANCE_FIND_Q,
  PG_INSTANCE_TAKE_Q,
  /* alerts.c */
  PG__ALERTS,
  PG_ALERT_ROLL_Q = PG__ALERTS,
  PG_ALERT_TAKE_Q,
  PG_ALERT_GET_Q,
  PG_ALERT_WINDOW_Q,
  PG_ALERT_VERDICT_Q,
  PG_ALERT_DONE_Q,
  /* retention.c */
  PG__RETENTION,
  PG_RET_SCAN = PG__RETENTION,
  PG_RET_DELETE,
  PG_RET_ARCHIVE,
  /* admin.c */
  PG__ADMIN,
  PG_ADM_COUNT_ST = PG__ADMIN,
  PG_ADM_COUNT_FAILED_ST,
  PG_ADM_PICK_ST,
  PG_ADM_PICK_FAILED_ST,
  PG_ADM_LIST_ST,
  PG_ADM_STATS_PENDING_ST,
  PG_ADM_STATS_RUNNING_ST,
  PG_ADM_STATS_DONE_ST,
  PG_ADM_STATS_TP_ST,
  PG_ADM_RUNNING_ST,
  PG_ADM_LOCKS_ST,
  /* metrics.c */
  PG__METRICS,
  PG_MET_TP_ST = PG__METRICS,
  PG_TOP_TP_Q,
  PG_TOP_RUNNING_Q,
  PG_COUNT
};

/* The variants of a claim are picked by offsets from the first of each
 * three (every queue, one queue, several queues). */
_Static_assert(PG_CLAIM_LANES_QUEUES - PG_CLAIM_LANES ==
                   PG_CLAIM_QUEUES - PG_CLAIM,
               "PG_CLAIM_LANES* mirror PG_CLAIM*");
_Static_assert(PG_CLAIM_LIM_PICK_QUEUES - PG_CLAIM_LIM_PICK ==
                   PG_CLAIM_QUEUES - PG_CLAIM,
               "PG_CLAIM_LIM_PICK* mirror PG_CLAIM*");
_Static_assert(PG_CLAIM_LIM_LANES_QUEUES - PG_CLAIM_LIM_LANES ==
                   PG_CLAIM_QUEUES - PG_CLAIM,
               "PG_CLAIM_LIM_LANES* mirror PG_CLAIM*");

/* A designator in a file's SQL table: the file defines PG_HERE as its
 * group's marker around the table. */
#define PG_AT(id) [(id) - (PG_HERE)]

extern const char *const pawl__pg_sql_store[];
extern const char *const pawl__pg_sql_jobs[];
extern const char *const pawl__pg_sql_claim[];
extern const char *const pawl__pg_sql_limits[];
extern const char *const pawl__pg_sql_terminal[];
extern const char *const pawl__pg_sql_control[];
extern const char *const pawl__pg_sql_history[];
extern const char *const pawl__pg_sql_locks[];
extern const char *const pawl__pg_sql_nodes[];
extern const char *const pawl__pg_sql_queues[];
extern const char *const pawl__pg_sql_types[];
extern const char *const pawl__pg_sql_recurring[];
extern const char *const pawl__pg_sql_flow[];
extern const char *const pawl__pg_sql_batch[];
extern const char *const pawl__pg_sql_deps[];
extern const char *const pawl__pg_sql_steps[];
extern const char *const pawl__pg_sql_alerts[];
extern const char *const pawl__pg_sql_retention[];
extern const char *const pawl__pg_sql_admin[];
extern const char *const pawl__pg_sql_metrics[];

typedef struct pg_store {
  store_t base;
  PGconn *conn;
  char *conninfo;          /* what the user gave, for messages and reconnects */
  /* The ids prepared on this connection (reset on reconnect). */
  char prepared[PG_COUNT];
  int listening;           /* LISTEN again after a reconnect */
  int64_t boost_ms;
  int64_t poison;
  int64_t tp_minute;       /* the minute this connection last trimmed the
                              throughput buckets at (0: not yet) */
  int limits_seen;         /* the last claim found limits: the
                              next goes straight to pawl__pg_claim_limited() */
  int paused;              /* a queue was paused at this claim's first step:
                              the claim goes by lanes (PG_SQL_LANE_IDS) */
  int relistened;          /* listening again since the last wait: the
                              wakeups sent meanwhile were lost */
  /* Where this connection's claims start (claim.c, "floors"): the claims
   * of every queue read the rows ranked at most floor_all; those of one
   * queue, the queue's own in `floors` (owned; a queue without one reads
   * from the top). Kept only while `hearing`. */
  int hearing;
  int floors_stale;        /* a claim went another way since (lanes, limits):
                              the next from a floor starts at the top */
  int64_t floor_all;
  struct pg_floor *floors;
  size_t nfloors, floors_cap;
  /* Lease recovery (claim.c, pawl__pg_recover): the sweeps read the
   * leases that ran out since swept_from (ms), and all of them at
   * full_sweep_at (store clock, ms) and then every PG_FULL_SWEEP_MS. */
  int64_t swept_from, full_sweep_at;
} pg_store_t;

/* Lease recovery: expired leases taken back per sweep at most (a text:
 * it is part of PG_EXPIRED's SQL); the margin before the last sweep's
 * time that the next sweep reads again; how often a sweep reads every
 * expired lease. */
#define PG_SWEEP_MAX "500"
#define PG_SWEEP_MARGIN_MS 20000
#define PG_FULL_SWEEP_MS (5 * 60000)

/* One queue's floor. */
typedef struct pg_floor {
  char *queue;
  int64_t rank;
} pg_floor_t;

/* Forgets every floor: the next claims read from the top. */
void pawl__pg_floors_reset(pg_store_t *s);

/* The SQL of statement `id` (static text); NULL when `id` is out of range
 * or its file's table has no entry for it. */
const char *pawl__pg_sql(int id);

/* Enqueues NOTIFY on "pawl_jobs:SCHEMA" (the trigger in V001__init.sql). */
#define PG_CHANNEL "'pawl_jobs:' || current_schema()"

/* ---- parameters ---------------------------------------------------------- */

/* Bound values in text form; numbers and ids are formatted into `num`. */
#define PG_MAXP 20
typedef struct pg_params {
  const char *v[PG_MAXP];
  char num[PG_MAXP][40];
} pg_params_t;

static inline void pp_str(pg_params_t *pp, int i, const char *s) {
  pp->v[i] = s;
}

static inline void pp_int(pg_params_t *pp, int i, int64_t x) {
  snprintf(pp->num[i], sizeof pp->num[i], "%" PRId64, x);
  pp->v[i] = pp->num[i];
}

/* x when `has`, else SQL NULL. */
static inline void pp_opt_int(pg_params_t *pp, int i, int has, int64_t x) {
  if (has)
    pp_int(pp, i, x);
  else
    pp->v[i] = NULL;
}

static inline void pp_dbl(pg_params_t *pp, int i, double x) {
  snprintf(pp->num[i], sizeof pp->num[i], "%.17g", x);
  pp->v[i] = pp->num[i];
}

static inline void pp_id(pg_params_t *pp, int i, const pawl_id_t *id) {
  if (!id) {
    pp->v[i] = NULL;
    return;
  }
  pawl_id_format(id, pp->num[i]);
  pp->v[i] = pp->num[i];
}

/* "Now" for the SQL: the injected clock's reading, or NULL for the
 * database's own clock. */
static inline void pp_now(pg_store_t *s, pg_params_t *pp, int i) {
  if (s->base.clock)
    pp_int(pp, i, s->base.clock(s->base.clock_data));
  else
    pp->v[i] = NULL;
}

/* A PostgreSQL array literal built element by element, for unnest(). */
static inline void arr_begin(pawl_buf_t *b) {
  pawl__buf_init(b);
  pawl__buf_putc(b, '{');
}

static inline void arr_sep(pawl_buf_t *b) {
  if (b->len > 1) pawl__buf_putc(b, ',');
}

static inline void arr_str(pawl_buf_t *b, const char *s) {
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

static inline void arr_int(pawl_buf_t *b, int64_t x) {
  arr_sep(b);
  pawl__buf_printf(b, "%" PRId64, x);
}

static inline void arr_opt_int(pawl_buf_t *b, int64_t x) {
  if (x)
    arr_int(b, x);
  else {
    arr_sep(b);
    pawl__buf_puts(b, "NULL");
  }
}

static inline void arr_id(pawl_buf_t *b, const pawl_id_t *id) {
  char text[PAWL_ID_STRLEN];
  pawl_id_format(id, text);
  arr_sep(b);
  pawl__buf_puts(b, text);
}

static inline void arr_end(pawl_buf_t *b) { pawl__buf_putc(b, '}'); }

/* ---- rows ---------------------------------------------------------------- */

/* Rows changed by a command result. */
static inline long pg_changed(PGresult *res) { return atol(PQcmdTuples(res)); }

static inline const char *pg_val(const PGresult *r, int row, int col) {
  return PQgetisnull(r, row, col) ? NULL : PQgetvalue(r, row, col);
}

static inline int64_t pg_int(const PGresult *r, int row, int col) {
  return PQgetisnull(r, row, col) ? 0
                                  : strtoll(PQgetvalue(r, row, col), NULL, 10);
}

static inline double pg_dbl(const PGresult *r, int row, int col) {
  return PQgetisnull(r, row, col) ? 0 : strtod(PQgetvalue(r, row, col), NULL);
}

static inline void pg_id(const PGresult *r, int row, int col, pawl_id_t *out) {
  const char *v = pg_val(r, row, col);
  if (!v || pawl_id_parse(out, v) != 0) memset(out->bytes, 0, 16);
}

/* ---- pipelines ----------------------------------------------------------- */

/* Statements sent together in one round trip. Up to a sync they form one
 * implicit transaction: if one fails, those before it in the transaction
 * are rolled back and those after it in the transaction are skipped
 * (their res says PGRES_PIPELINE_ABORTED); the last call always ends one.
 * A call with `sync` set ends its transaction too, so that the next
 * starts after it committed (and sees what it did), still in the same
 * round trip. */
typedef struct pg_call {
  int stmt;
  int n;
  pg_params_t p;
  int sync;      /* commit after this call (the last one always does) */
  PGresult *res; /* filled by pawl__pg_pipeline() */
} pg_call_t;

/* store.c */
int pawl__pg_code(pg_store_t *s, const PGresult *res);
void pawl__pg_message(pg_store_t *s, const PGresult *res, char *out,
                      size_t len);
int pawl__pg_fail(pg_store_t *s, const PGresult *res, const char *what);
int pawl__pg_ready(pg_store_t *s);
int pawl__pg_run(pg_store_t *s, int id, int n, const char *const *vals,
                 PGresult **out, const char *what);
int pawl__pg_cmd(pg_store_t *s, const char *sql, const char *what);
int pawl__pg_begin(pg_store_t *s);
int pawl__pg_end(pg_store_t *s, int rc);
int pawl__pg_pipeline(pg_store_t *s, pg_call_t *calls, size_t n,
                      const char *what);
void pawl__pg_calls_free(pg_call_t *calls, size_t n);
store_row_t pawl__pg_row(const PGresult *res, int row);
pawl_job_t *pawl__pg_row_to_job(const PGresult *res, int row);
int pawl__pg_read_job(pg_store_t *s, const pawl_id_t *id, int lock,
                      pawl_job_t **out);
int pawl__pg_setting_get(pg_store_t *s, const char *name, int64_t *out);

/* schema.c */
int pawl__pg_query_int(pg_store_t *s, const char *sql, int64_t *out,
                       const char *what);
int pawl__pg_migrate_with(pg_store_t *s, int create, int migrate);
int pawl__pg_migrate(store_t *base);
int pawl__pg_version(store_t *base, int *current, int *latest);

/* jobs.c */
int pawl__pg_insert_one(pg_store_t *s, const store_new_job_t *j,
                        const pawl_id_t *prev, pawl_id_t *id_out, int *status);
int pawl__pg_copy_rows(pg_store_t *s, const store_new_job_t *jobs, size_t n,
                       int64_t now, int with_batch);
int pawl__pg_insert(store_t *base, const store_new_job_t *jobs, size_t n,
                    pawl_id_t *ids, int *status);
int pawl__pg_get(store_t *base, const pawl_id_t *id, pawl_job_t **out);
int pawl__pg_list_rows(pg_store_t *s, PGresult *res, pawl_job_cb cb,
                       void *data);
int pawl__pg_list(store_t *base, const pawl_filter_t *f, pawl_job_cb cb,
                  void *data);
int pawl__pg_find_idempotent(store_t *base, const char *key, pawl_id_t *out);
int pawl__pg_find_business(store_t *base, const char *key, pawl_id_t *out);
int pawl__pg_progress(store_t *base, const pawl_id_t *id,
                      const pawl_id_t *token, int32_t attempt, double done,
                      double total);

/* claim.c */
char *pawl__pg_queues_array(const char *const *queues, size_t n);
int pawl__pg_claim(store_t *base, const store_claim_t *c, pawl_job_t ***out,
                   size_t *n);
int pawl__pg_claimed_jobs(pg_store_t *s, PGresult *res, pawl_job_t ***out,
                          size_t *n);
int pawl__pg_extend(store_t *base, const pawl_id_t *token, int64_t lease_ms,
                    size_t *n);
int pawl__pg_extend_one(store_t *base, const pawl_id_t *id,
                        const pawl_id_t *token, int32_t attempt,
                        int64_t lease_ms, int *held);
void pawl__pg_hear(store_t *base, int listening, const char *rewinds);
int pawl__pg_next_due(store_t *base, const char *const *queues, size_t nqueues,
                      int64_t *run_at);
int pawl__pg_recover(store_t *base, size_t *n);
int pawl__pg_start(store_t *base, const pawl_id_t *id, const pawl_id_t *token,
                   int32_t attempt, int64_t at, int poison);

/* limits.c */
int pawl__pg_limits_any(pg_store_t *s, int *none);
int pawl__pg_limits_rows(pg_store_t *s, PGresult *res, int with_running,
                         store_limits_t *l, int64_t *now);
int pawl__pg_claim_limited(pg_store_t *s, const store_claim_t *c,
                           pawl_job_t ***out, size_t *n, int *none);
int pawl__pg_next_due_limited(pg_store_t *s, store_limits_t *l,
                              const char *const *queues, size_t nqueues,
                              const char *arr, int64_t *run_at);
int pawl__pg_limit_set(store_t *base, const char *name, int64_t max_running,
                       int64_t rate, int64_t window_ms);
int pawl__pg_limit_remove(store_t *base, const char *name);
int pawl__pg_limit_list(store_t *base, pawl_limit_t **out, size_t *n);

/* terminal.c */
void pawl__pg_run_start_params(pg_store_t *s, pg_params_t *pp,
                               const pawl_id_t *id, const pawl_id_t *token,
                               int32_t attempt, int64_t at);
void pawl__pg_end_attempt_call(pg_store_t *s, pg_call_t *c, const pawl_id_t *id,
                               const char *outcome, const char *error,
                               const pawl_id_t *token, int32_t attempt, int to,
                               const char *reason, int64_t run_at,
                               int give_back, const char *last_error,
                               int recovered, int ordering_skip,
                               int64_t started_at, int64_t ended_at,
                               const char *trace);
int pawl__pg_finish(store_t *base, const pawl_id_t *token,
                    const pawl_outcome_t *outs, size_t n, int *rcs);

/* control.c */
extern const store_transition_steps_t pawl__pg_transition_steps;
int pawl__pg_tx_now(store_t *base, int64_t *now);
int pawl__pg_transition(store_t *base, const pawl_id_t *id, store_op_t op,
                        const char *actor, const char *owner,
                        const char *reason, pawl_job_t **out);

/* history.c */
int pawl__pg_history(store_t *base, const pawl_id_t *id, pawl_history_t **out);
int pawl__pg_logs(store_t *base, const pawl_id_t *id, pawl_log_record_t **out,
                  size_t *n);

/* locks.c */
int pawl__pg_lock_acquire(store_t *base, const char *name, const char *owner,
                          int64_t ttl_ms, int *got);
int pawl__pg_lock_extend(store_t *base, const char *name, const char *owner,
                         int64_t ttl_ms, int *ok);
int pawl__pg_lock_release(store_t *base, const char *name, const char *owner);

/* nodes.c */
int pawl__pg_node_beat(store_t *base, const store_node_t *nd);
int pawl__pg_node_list(store_t *base, store_node_cb cb, void *data);
int pawl__pg_node_reap(store_t *base, int64_t silent_ms, size_t *n);
int pawl__pg_node_stop(store_t *base, const char *id,
                       const pawl_id_t *incarnation);

/* queues.c */
int pawl__pg_queue_pause(store_t *base, const char *name, int paused,
                         const char *by, const char *reason, int *changed);
int pawl__pg_queue_set_boost(store_t *base, const char *name, int64_t boost_ms);
int pawl__pg_queue_list(store_t *base, store_queue_cb cb, void *data);

/* types.c */
int pawl__pg_types_sync(store_t *base, const char *types);
int pawl__pg_type_get(store_t *base, const char *type, char **out,
                      char **branches);

/* recurring.c */
int pawl__pg_rec_put(store_t *base, const pawl_recurring_t *d, int how,
                     int *done);
int pawl__pg_rec_get(store_t *base, const char *name, pawl_recurring_t **out);
int pawl__pg_rec_list(store_t *base, pawl_recurring_t **out, size_t *n);
int pawl__pg_rec_update(store_t *base, const pawl_recurring_t *d, int *changed);
int pawl__pg_rec_remove(store_t *base, const char *name);
int pawl__pg_rec_due(store_t *base, int64_t now, size_t max,
                     pawl_recurring_t **out, size_t *n);
int pawl__pg_rec_advance(store_t *base, store_rec_advance_t *a, size_t n);
int pawl__pg_rec_disable_gone(store_t *base, const char *const *scripts,
                              size_t n, int listed, size_t *count);
int pawl__pg_rec_load_error(store_t *base, const char *script,
                            const char *error);

/* flow.c */
int pawl__pg_sig_add(pg_store_t *s, const store_new_job_t *j);
int pawl__pg_sig_deliver(store_t *base, const char *key, const char *decision,
                         const char *payload, const char *actor,
                         const char *owner, pawl_id_t *job, int *already);
int pawl__pg_sig_get(store_t *base, const pawl_id_t *id,
                     pawl_signal_info_t **out);
int pawl__pg_sig_expire(store_t *base, size_t max, size_t *n);
int pawl__pg_sig_next(store_t *base, int64_t *at);
int pawl__pg_replace(store_t *base, const store_replace_t *r);
int pawl__pg_replace_links(store_t *base, const pawl_id_t *id,
                           pawl_replace_links_t *out);

/* batch.c */
int pawl__pg_batch_count_job(pg_store_t *s, const pawl_id_t *id,
                             const int64_t d[3]);
int pawl__pg_batch_create(store_t *base, const store_batch_new_t *b,
                          const store_new_job_t *jobs, size_t n);
int pawl__pg_batch_get(store_t *base, const pawl_id_t *id, int64_t now,
                       pawl_batch_t *out);
int pawl__pg_batch_of(store_t *base, const pawl_id_t *id, pawl_id_t *batch,
                      int *role);

/* deps.c */
int pawl__pg_deps_release_one(pg_store_t *s, const pawl_id_t *id);
int pawl__pg_deps_link(pg_store_t *s, const store_new_job_t *j,
                       const pawl_id_t *prev);
int pawl__pg_deps_reopen(store_t *base, const pawl_id_t *id, int64_t now,
                         const char *actor);
int pawl__pg_deps_list(store_t *base, const pawl_id_t *id, pawl_dep_cb cb,
                       void *data);

/* steps.c */
int pawl__pg_steps_get(store_t *base, const pawl_id_t *id, pawl_steps_t **out);
int pawl__pg_step_begin(store_t *base, const pawl_id_t *id,
                        const pawl_id_t *token, int32_t attempt, int32_t index,
                        const char *name, const char *checkpoint,
                        int64_t *exec);
int pawl__pg_step_save(store_t *base, const pawl_id_t *id,
                       const pawl_id_t *token, int32_t attempt, int64_t exec,
                       const char *checkpoint, const int64_t *counts);
int pawl__pg_step_end(store_t *base, const pawl_id_t *id,
                      const pawl_id_t *token, int32_t attempt, int64_t exec,
                      int status, const char *exit_code,
                      const char *exit_message, const int64_t *counts);
int pawl__pg_step_exit(store_t *base, const pawl_id_t *id,
                       const pawl_id_t *token, int32_t attempt,
                       const char *exit_code, const char *exit_message);
int pawl__pg_instance_find(store_t *base, const char *type, const char *key,
                           pawl_id_t *id, int *state);
int pawl__pg_instance_take(pg_store_t *s, const store_new_job_t *j);

/* alerts.c */
int pawl__pg_alert_take(store_t *base, const char *owner, int64_t lease_ms,
                        size_t max, store_alert_t **out, size_t *n);
int pawl__pg_alert_note(store_t *base, const char *owner, int64_t fp,
                        int64_t window_ms, store_alert_t *a);
int pawl__pg_alert_done(store_t *base, const char *owner, int64_t seq);

/* retention.c */
int pawl__pg_ret_scan(store_t *base, const store_pick_t *after, size_t max,
                      store_retain_row_t *out, size_t *n);
int pawl__pg_ret_remove(store_t *base, const store_retain_row_t *rows, size_t n,
                        int archive, int *removed);

/* admin.c */
int pawl__pg_adm_count(store_t *base, const store_match_t *m, int64_t max,
                       int64_t *n);
int pawl__pg_adm_pick(store_t *base, const store_match_t *m,
                      const store_pick_t *after, size_t max, store_pick_t *out,
                      size_t *n);
int pawl__pg_adm_apply(store_t *base, store_op_t op, const char *actor,
                       const char *reason, const store_pick_t *picks, size_t n,
                       pawl_bulk_result_t *r);
int pawl__pg_adm_list(store_t *base, const pawl_filter_t *f, pawl_job_cb cb,
                      void *data);
int pawl__pg_adm_stats(store_t *base, int64_t now, store_stat_cb cb,
                       void *data);
int pawl__pg_adm_locks(store_t *base, store_lock_cb cb, void *data);
int pawl__pg_adm_running(store_t *base, store_owner_cb cb, void *data);

/* metrics.c */
int pawl__pg_met_gauges(store_t *base, int64_t now, int64_t since, int full,
                        store_stat_cb cb, void *data);
int pawl__pg_top_throughput(store_t *base, int64_t since, store_tp_cb cb,
                            void *data);
int pawl__pg_top_running(store_t *base, int limit, pawl_job_cb cb, void *data);

#endif
