/* sqlite_int.h: what the files of the SQLite store share (private to
 * stores/sqlite/).
 *
 * The SQLite backend of the store interface. One connection per store_t,
 * in WAL mode. Every statement is prepared once (on first use,
 * SQLITE_PREPARE_PERSISTENT) and reused; every value is bound. Each
 * operation runs in its own BEGIN IMMEDIATE transaction, which takes
 * SQLite's single write lock up front, so compare-and-set checks inside a
 * transaction cannot race another writer; the version checks stay in the
 * SQL anyway so the semantics match the PostgreSQL backend.
 *
 * One file per group of the interface (stores/store.h, struct store_ops),
 * each with the SQL of its statements beside its code:
 *   store.c      open and close, the vtable, the statement cache, errors,
 *                transactions, rows, settings, maintenance
 *   schema.c     migrations and the schema version
 *   jobs.c       insert, get, list, progress; the keys' look-ups
 *   claim.c      claim (lanes, promote), leases, recovery, start,
 *                next_due; the holds of ordering keys
 *   limits.c     concurrency and rate limits, in the claim and for the
 *                operator
 *   terminal.c   the finish, attempts and events it writes, throughput
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
 *   admin.c      administration (its SQL in sqlite_admin_sql.h, which the
 *                plan tests include)
 *   metrics.c    the metrics gauges and `pawl top`
 * The hot path's SQL stays in sqlite_sql.h, which the benchmark's
 * plain-SQL ceiling includes so that it runs exactly the store's text.
 *
 * Names: what a file keeps to itself is static (sq_...); what crosses
 * files is pawl__sq_... (libpawl's rule for internal symbols), declared
 * below by the file that defines it; the small helpers every file calls
 * on every statement are static inline here, so the split costs the hot
 * path no calls.
 *
 * Statements. One enum numbers every statement, grouped by the file that
 * owns its SQL: each group opens with a marker SQ__FILE (the group's first
 * id) and ends where the next marker begins. Each file defines
 * pawl__sq_sql_FILE[], its SQL indexed from its marker (SQ_AT(id) inside
 * the table), and store.c stitches the tables together in sq_files[].
 * A connection keeps one array of prepared statements indexed by id
 * (sq_store_t.stmt), so the lookup on every use stays one load from an
 * array, as it was when the store was one file; only the first use on a
 * connection goes through the tables to find the text (pawl__sq_prepare).
 * The alternative, a cache keyed by the address of each file's SQL
 * string, would need a hash probe on every statement of the claim and
 * the finish, and a table to grow; the enum costs one line per statement
 * in this header, which also lists every statement in one place. A
 * statement used by several files has its SQL in one of them; any file
 * may use any id. */
#ifndef PAWL_SQLITE_INT_H
#define PAWL_SQLITE_INT_H

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
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
#include "buf.h"
#include "iso8601.h"
#include "sqlite_sql.h"
#include "store.h"

/* Statement ids, grouped by the file whose table holds their SQL. */
enum {
  /* store.c */
  SQ__STORE,
  SQ_BEGIN = SQ__STORE,
  SQ_COMMIT,
  SQ_ROLLBACK,
  SQ_GET,
  SQ_SETTING_GET,
  SQ_SETTING_SET,
  SQ_RERANK,
  SQ_DATA_VERSION,
  /* jobs.c */
  SQ__JOBS,
  SQ_IDEM_FIND = SQ__JOBS,
  SQ_IDEM_ADD,
  SQ_BIZ_FIND,
  SQ_INSERT,
  SQ_LIST,
  SQ_LIST_FAILED,
  SQ_PROGRESS,
  SQ_EXISTS,
  /* claim.c */
  SQ__CLAIM,
  SQ_CLAIM = SQ__CLAIM,  /* every queue; some queues go by lanes */
  SQ_CLAIM_UNPAUSED,     /* the same, for when a queue is paused */
  SQ_ANY_PAUSED,
  SQ_CLAIM_TAKE,
  SQ_PROMOTE, /* the rows due later that have come due join the ready ones */
  SQ_PROMOTE_ANY,
  SQ_LANE_QUEUE,         /* lanes (sq_claim_lanes()) */
  SQ_LANE_NONE,
  SQ_LANE_RES,
  SQ_CLAIM_LANE,
  SQ_PAUSED_QUEUES,
  SQ_EXTEND,
  SQ_EXPIRED,
  SQ_RECOVER,
  SQ_CRASHED,
  SQ_START,
  SQ_RUN_START,
  SQ_KEY_REFRESH,
  SQ_EXTEND_ONE,
  SQ_NEXT_DUE,
  SQ_NEXT_DUE_QUEUE,
  SQ_NEXT_DUE_QUEUES,
  SQ_CLAIM_LIM,          /* same order as SQ_CLAIM, SQ_CLAIM_UNPAUSED */
  SQ_CLAIM_LIM_UNPAUSED,
  /* limits.c */
  SQ__LIMITS,
  SQ_LIMITS_READ = SQ__LIMITS,
  SQ_LIMIT_RUNNING_RES,
  SQ_LIMIT_RUNNING_QUEUE,
  SQ_LIMIT_WINDOW,
  SQ_LIMIT_SET,
  SQ_LIMIT_REMOVE,
  SQ_LIMIT_LIST,
  SQ_NEXT_DUE_LIM,
  SQ_NEXT_DUE_LIM_RES,
  SQ_NEXT_DUE_LIM_QUEUE,
  /* terminal.c */
  SQ__TERMINAL,
  SQ_SUCCEED = SQ__TERMINAL,
  SQ_SUCCEED_SEQ,
  SQ_SUCCEED_MANY,
  SQ_ATTEMPT_ADD,
  SQ_EVENT_FROM_ROW,
  SQ_EVENT_ADD,
  SQ_FAIL,
  SQ_REQUEUE,
  SQ_LOG_ADD,
  SQ_TP_ADD,
  SQ_TP_ADD_ID,
  SQ_TP_TRIM,
  SQ_DEPS_BRANCHES,
  SQ_ALERT_ADD,
  /* control.c */
  SQ__CONTROL,
  SQ_FORGET_START = SQ__CONTROL,
  SQ_TRANSITION,
  /* history.c */
  SQ__HISTORY,
  SQ_ATTEMPTS = SQ__HISTORY,
  SQ_EVENTS,
  SQ_LOGS,
  /* locks.c */
  SQ__LOCKS,
  SQ_LOCK_ACQUIRE = SQ__LOCKS,
  SQ_LOCK_EXTEND,
  SQ_LOCK_RELEASE,
  /* nodes.c */
  SQ__NODES,
  SQ_NODE_BEAT = SQ__NODES,
  SQ_NODE_LIST,
  SQ_NODE_REAP,
  SQ_NODE_STOP,
  /* queues.c */
  SQ__QUEUES,
  SQ_QUEUE_BOOST = SQ__QUEUES,
  SQ_QUEUE_PAUSE,
  SQ_QUEUE_RESUME,
  SQ_QUEUE_SET_BOOST,
  SQ_QUEUE_LIST,
  /* types.c */
  SQ__TYPES,
  SQ_TYPES_SYNC = SQ__TYPES, /* pawl_types */
  SQ_TYPE_REDACT,
  /* recurring.c */
  SQ__RECURRING,
  SQ_REC_ADD = SQ__RECURRING,
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
  /* flow.c */
  SQ__FLOW,
  SQ_SIG_RELEASE = SQ__FLOW,
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
  SQ_DEPS_HAND_PARENT,
  SQ_DEPS_HAND_CHILD,
  SQ_DEPS_HAND_CLOSE,
  SQ_DEPS_TAKE_OVER,
  /* batch.c */
  SQ__BATCH,
  SQ_BATCH_ADD = SQ__BATCH,
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
  /* deps.c */
  SQ__DEPS,
  SQ_DEPS_RELEASE = SQ__DEPS,
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
  SQ_DEPS_LIST,
  /* steps.c */
  SQ__STEPS,
  SQ_STEP_READ_BEGIN = SQ__STEPS,
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
  /* alerts.c */
  SQ__ALERTS,
  SQ_ALERT_ROLL = SQ__ALERTS,
  SQ_ALERT_ROLL_DEL,
  SQ_ALERT_TAKE,
  SQ_ALERT_GET,
  SQ_ALERT_WINDOW,
  SQ_ALERT_VERDICT,
  SQ_ALERT_DONE,
  /* retention.c */
  SQ__RETENTION,
  SQ_RET_SCAN = SQ__RETENTION,
  SQ_RET_ARCHIVE_JOB,
  SQ_RET_ARCHIVE_ATTEMPTS,
  SQ_RET_ARCHIVE_EVENTS,
  SQ_RET_ARCHIVE_LOGS,
  SQ_RET_DELETE,
  SQ_RET_DEPS_PARENT,
  SQ_RET_DEPS_CHILD,
  /* admin.c */
  SQ__ADMIN,
  SQ_ADM_BEGIN_READ = SQ__ADMIN,
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
  SQ_ADM_RUNNING,
  SQ_ADM_LOCKS,
  /* metrics.c */
  SQ__METRICS,
  SQ_MET_TP = SQ__METRICS,
  SQ_TOP_TP,
  SQ_TOP_RUNNING,
  SQ_COUNT
};

/* pawl__sq_claim() picks a variant by offsets from SQ_CLAIM: the limited
 * ones mirror the plain ones. */
_Static_assert(SQ_CLAIM_LIM_UNPAUSED - SQ_CLAIM_LIM ==
                   SQ_CLAIM_UNPAUSED - SQ_CLAIM,
               "SQ_CLAIM_LIM* mirror SQ_CLAIM*");

/* A designator in a file's SQL table: the file defines SQ_HERE as its
 * group's marker around the table. */
#define SQ_AT(id) [(id) - (SQ_HERE)]

extern const char *const pawl__sq_sql_store[];
extern const char *const pawl__sq_sql_jobs[];
extern const char *const pawl__sq_sql_claim[];
extern const char *const pawl__sq_sql_limits[];
extern const char *const pawl__sq_sql_terminal[];
extern const char *const pawl__sq_sql_control[];
extern const char *const pawl__sq_sql_history[];
extern const char *const pawl__sq_sql_locks[];
extern const char *const pawl__sq_sql_nodes[];
extern const char *const pawl__sq_sql_queues[];
extern const char *const pawl__sq_sql_types[];
extern const char *const pawl__sq_sql_recurring[];
extern const char *const pawl__sq_sql_flow[];
extern const char *const pawl__sq_sql_batch[];
extern const char *const pawl__sq_sql_deps[];
extern const char *const pawl__sq_sql_steps[];
extern const char *const pawl__sq_sql_alerts[];
extern const char *const pawl__sq_sql_retention[];
extern const char *const pawl__sq_sql_admin[];
extern const char *const pawl__sq_sql_metrics[];

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
  /* pawl__sq_queue_boost()'s memory of the last queue it read, valid
   * within the write transaction numbered qb_tx (tx_seq counts
   * pawl__sq_begin()s). */
  uint64_t tx_seq, qb_tx;
  char *qb_queue;
  int64_t qb_boost;        /* -1: none of its own */
  /* Dependencies: the seqs of the jobs that ended in this
   * write transaction with children still to count their end (deps_open),
   * released by pawl__sq_deps_flush() before the commit. */
  int64_t *dep_seq;
  size_t ndep, depcap;
  int dep_oom;
  /* Holds (V020__holds_by_store.sql): the ordering keys of the rows this
   * write transaction changed, owned copies, refreshed by
   * pawl__sq_keys_flush() before the commit. */
  char **keys;
  size_t nkeys, keycap;
  int key_oom;
  /* A run of successes written by one statement (SQLITE_SQL_SUCCEED_MANY,
   * terminal.c): the outcomes by seq, for the pawl_fin_* functions it
   * calls per row; fin_pos: where the last lookup found its seq. */
  struct sq_fin {
    int64_t seq;
    const pawl_outcome_t *o;
    int done;               /* written by the statement */
  } *fin;
  size_t nfin, fincap, fin_pos;
  int64_t fin_now;
} sq_store_t;

/* Records the connection's error, naming what we were doing. */
int pawl__sq_fail(sq_store_t *s, int rc, const char *what);

/* The SQL of statement `id` (static text); NULL when `id` is out of range
 * or its file's table has no entry for it. */
const char *pawl__sq_sql(int id);

/* Prepares statement `id` on its first use on this connection and keeps
 * it; NULL on failure (errmsg set). */
sqlite3_stmt *pawl__sq_prepare(sq_store_t *s, int id);

/* ---- statements --------------------------------------------------------- */

/* The statement `id`, prepared on first use, reset and unbound. NULL on
 * failure (errmsg set). */
static inline sqlite3_stmt *sq_stmt(sq_store_t *s, int id) {
  sqlite3_stmt *st = s->stmt[id];
  if (st == NULL) return pawl__sq_prepare(s, id);
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  return st;
}

/* Appends `v` to the JSON array being built in `b` (its '[' written
 * first, with no ']' yet): snprintf's cost, once per claimed or
 * finished job, was half that of reading the job's row (claim.c,
 * terminal.c). */
static inline void sq_seq_put(pawl_buf_t *b, int64_t v) {
  char tmp[24], *e = tmp + sizeof tmp, *q = e;
  uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
  do *--q = (char)('0' + u % 10);
  while (u /= 10);
  if (v < 0) *--q = '-';
  pawl__buf_putc(b, b->len ? ',' : '[');
  pawl__buf_append(b, q, (size_t)(e - q));
}

/* Runs a statement that returns no rows to completion. */
static inline int sq_exec(sq_store_t *s, sqlite3_stmt *st, const char *what) {
  int rc = sqlite3_step(st);
  sqlite3_reset(st);
  if (rc != SQLITE_DONE) return pawl__sq_fail(s, rc, what);
  return 0;
}

static inline void sq_bind_text(sqlite3_stmt *st, int i, const char *v) {
  if (v)
    sqlite3_bind_text(st, i, v, -1, SQLITE_STATIC);
  else
    sqlite3_bind_null(st, i);
}

static inline void sq_bind_id(sqlite3_stmt *st, int i, const pawl_id_t *id) {
  if (id)
    sqlite3_bind_blob(st, i, id->bytes, 16, SQLITE_STATIC);
  else
    sqlite3_bind_null(st, i);
}

static inline void sq_bind_opt_int(sqlite3_stmt *st, int i, int64_t v) {
  if (v)
    sqlite3_bind_int64(st, i, v);
  else
    sqlite3_bind_null(st, i);
}

static inline void sq_gate(sq_store_t *s) {
  if (s->gate && !s->gated) {
    pthread_mutex_lock(s->gate);
    s->gated = 1;
  }
}

static inline void sq_ungate(sq_store_t *s) {
  if (s->gated) {
    s->gated = 0;
    pthread_mutex_unlock(s->gate);
  }
}

/* A single write statement outside a transaction, under the gate. */
static inline int sq_exec_write(sq_store_t *s, sqlite3_stmt *st,
                                const char *what) {
  sq_gate(s);
  int rc = sq_exec(s, st, what);
  sq_ungate(s);
  return rc;
}

/* ---- rows --------------------------------------------------------------- */

static inline void sq_col_id(sqlite3_stmt *st, int i, pawl_id_t *out) {
  const void *b = sqlite3_column_blob(st, i);
  if (b && sqlite3_column_bytes(st, i) == 16)
    memcpy(out->bytes, b, 16);
  else
    memset(out->bytes, 0, 16);
}

/* store.c */
int pawl__sq_rc_to_err(int rc);
int pawl__sq_begin(sq_store_t *s);
int pawl__sq_end(sq_store_t *s, int rc);
store_row_t pawl__sq_row(sqlite3_stmt *st);
pawl_job_t *pawl__sq_row_to_job(sqlite3_stmt *st, const char *owner);
int pawl__sq_read_job(sq_store_t *s, const pawl_id_t *id, pawl_job_t **out);
int pawl__sq_setting_get(sq_store_t *s, const char *name, int64_t *out);

/* schema.c */
int pawl__sq_table_exists(sq_store_t *s, const char *name, int *exists);
int pawl__sq_count_tables(sq_store_t *s, int *n);
int pawl__sq_prepare_schema_table(sq_store_t *s, int create);
int pawl__sq_migrate(store_t *base);
int pawl__sq_version(store_t *base, int *current, int *latest);

/* jobs.c */
int pawl__sq_insert_one(sq_store_t *s, const store_new_job_t *j, int64_t now,
                        const pawl_id_t *prev, pawl_id_t *id_out,
                        int *status);
int pawl__sq_insert(store_t *base, const store_new_job_t *jobs, size_t n,
                    pawl_id_t *ids, int *status);
int pawl__sq_get(store_t *base, const pawl_id_t *id, pawl_job_t **out);
int pawl__sq_list_rows(sq_store_t *s, sqlite3_stmt *st, pawl_job_cb cb,
                       void *data);
int pawl__sq_list(store_t *base, const pawl_filter_t *f, pawl_job_cb cb,
                  void *data);
int pawl__sq_find_idempotent(store_t *base, const char *key, pawl_id_t *out);
int pawl__sq_find_business(store_t *base, const char *key, pawl_id_t *out);
int pawl__sq_progress(store_t *base, const pawl_id_t *id,
                      const pawl_id_t *token, int32_t attempt, double done,
                      double total);

/* claim.c */
char *pawl__sq_queues_json(const char *const *queues, size_t n);
int pawl__sq_claim(store_t *base, const store_claim_t *c, pawl_job_t ***out,
                   size_t *n);
int pawl__sq_extend(store_t *base, const pawl_id_t *token, int64_t lease_ms,
                    size_t *n);
int pawl__sq_extend_one(store_t *base, const pawl_id_t *id,
                        const pawl_id_t *token, int32_t attempt,
                        int64_t lease_ms, int *held);
int pawl__sq_next_due(store_t *base, const char *const *queues,
                      size_t nqueues, int64_t *run_at);
void pawl__sq_key_note(sq_store_t *s, const char *key);
void pawl__sq_keys_clear(sq_store_t *s);
int pawl__sq_keys_flush(sq_store_t *s);
void pawl__sq_key_note_fn(sqlite3_context *ctx, int argc, sqlite3_value **v);
int pawl__sq_recover(store_t *base, size_t *n);
int pawl__sq_run_start(sq_store_t *s, const pawl_id_t *id,
                       const pawl_id_t *token, int32_t attempt, int64_t at,
                       int64_t now);
int pawl__sq_start(store_t *base, const pawl_id_t *id, const pawl_id_t *token,
                   int32_t attempt, int64_t at, int poison);

/* limits.c */
int pawl__sq_limits_read(sq_store_t *s, int64_t now, size_t limited_max,
                         store_limits_t *l);
char *pawl__sq_limits_blocked(const store_limits_t *l, int queues);
int pawl__sq_limits_admit(store_limits_t *l, sqlite3_stmt *st);
int pawl__sq_limits_save(sq_store_t *s, const store_limits_t *l);
int pawl__sq_next_due_limited(sq_store_t *s, store_limits_t *l,
                              const char *const *queues, size_t nqueues,
                              const char *queues_json, int later_only,
                              int64_t *run_at);
int pawl__sq_limit_set(store_t *base, const char *name, int64_t max_running,
                       int64_t rate, int64_t window_ms);
int pawl__sq_limit_remove(store_t *base, const char *name);
int pawl__sq_limit_list(store_t *base, pawl_limit_t **out, size_t *n);

/* terminal.c */
int pawl__sq_add_attempt(sq_store_t *s, const pawl_id_t *id, int64_t now,
                         const char *outcome, const char *error,
                         const pawl_id_t *token, int32_t attempt);
int pawl__sq_event_from_row(sq_store_t *s, const pawl_id_t *id, int64_t now,
                            int to, const char *reason);
int pawl__sq_add_event(sq_store_t *s, const pawl_id_t *id, int64_t now,
                       int from, int to, const char *actor,
                       const char *reason, int32_t attempt);
int pawl__sq_tp_trim(sq_store_t *s, int64_t minute);
void pawl__sq_tp_note_fn(sqlite3_context *ctx, int argc, sqlite3_value **v);
/* pawl_fin_ok(seq, id, attempt), pawl_fin_result(seq), pawl_fin_start(seq,
 * started_at), pawl_fin_end(seq, started_at) [SQL]: SQLITE_SQL_SUCCEED_MANY's
 * view of the outcome of the row's seq (terminal.c). */
void pawl__sq_fin_ok_fn(sqlite3_context *ctx, int argc, sqlite3_value **v);
void pawl__sq_fin_result_fn(sqlite3_context *ctx, int argc, sqlite3_value **v);
void pawl__sq_fin_start_fn(sqlite3_context *ctx, int argc, sqlite3_value **v);
void pawl__sq_fin_end_fn(sqlite3_context *ctx, int argc, sqlite3_value **v);
int pawl__sq_alert_add(sq_store_t *s, const pawl_id_t *id, int64_t now);
int pawl__sq_fail_job(sq_store_t *s, const pawl_id_t *id, const char *error,
                      int64_t now);
int pawl__sq_finish(store_t *base, const pawl_id_t *token,
                    const pawl_outcome_t *outs, size_t n, int *rcs);

/* control.c */
extern const store_transition_steps_t pawl__sq_transition_steps;
int pawl__sq_transition(store_t *base, const pawl_id_t *id, store_op_t op,
                        const char *actor, const char *owner,
                        const char *reason, pawl_job_t **out);

/* history.c */
int pawl__sq_history(store_t *base, const pawl_id_t *id,
                     pawl_history_t **out);
int pawl__sq_logs(store_t *base, const pawl_id_t *id, pawl_log_record_t **out,
                  size_t *n);

/* locks.c */
int pawl__sq_lock_acquire(store_t *base, const char *name, const char *owner,
                          int64_t ttl_ms, int *got);
int pawl__sq_lock_extend(store_t *base, const char *name, const char *owner,
                         int64_t ttl_ms, int *ok);
int pawl__sq_lock_release(store_t *base, const char *name, const char *owner);

/* nodes.c */
int pawl__sq_node_beat(store_t *base, const store_node_t *nd);
int pawl__sq_node_list(store_t *base, store_node_cb cb, void *data);
int pawl__sq_node_reap(store_t *base, int64_t silent_ms, size_t *n);
int pawl__sq_node_stop(store_t *base, const char *id,
                       const pawl_id_t *incarnation);

/* queues.c */
int pawl__sq_queue_boost(sq_store_t *s, const char *queue, int64_t *boost);
int pawl__sq_queue_pause(store_t *base, const char *name, int paused,
                         const char *by, const char *reason, int *changed);
int pawl__sq_queue_set_boost(store_t *base, const char *name,
                             int64_t boost_ms);
int pawl__sq_queue_list(store_t *base, store_queue_cb cb, void *data);

/* types.c */
int pawl__sq_types_sync(store_t *base, const char *types);
int pawl__sq_type_get(store_t *base, const char *type, char **out,
                      char **branches);

/* recurring.c */
int pawl__sq_rec_put(store_t *base, const pawl_recurring_t *d, int how,
                     int *done);
int pawl__sq_rec_get(store_t *base, const char *name,
                     pawl_recurring_t **out);
int pawl__sq_rec_list(store_t *base, pawl_recurring_t **out, size_t *n);
int pawl__sq_rec_update(store_t *base, const pawl_recurring_t *d,
                        int *changed);
int pawl__sq_rec_remove(store_t *base, const char *name);
int pawl__sq_rec_due(store_t *base, int64_t now, size_t max,
                     pawl_recurring_t **out, size_t *n);
int pawl__sq_rec_advance(store_t *base, store_rec_advance_t *a, size_t n);
int pawl__sq_rec_disable_gone(store_t *base, const char *const *scripts,
                              size_t n, int listed, size_t *count);
int pawl__sq_rec_load_error(store_t *base, const char *script,
                            const char *error);

/* flow.c */
int pawl__sq_sig_add(sq_store_t *s, const store_new_job_t *j, int64_t now);
int pawl__sq_sig_deliver(store_t *base, const char *key,
                         const char *decision, const char *payload,
                         const char *actor, const char *owner,
                         pawl_id_t *job, int *already);
int pawl__sq_sig_get(store_t *base, const pawl_id_t *id,
                     pawl_signal_info_t **out);
int pawl__sq_sig_expire(store_t *base, size_t max, size_t *n);
int pawl__sq_sig_next(store_t *base, int64_t *at);
int pawl__sq_replace(store_t *base, const store_replace_t *r);
int pawl__sq_replace_links(store_t *base, const pawl_id_t *id,
                           pawl_replace_links_t *out);

/* batch.c */
int pawl__sq_batch_note(sq_store_t *s, sqlite3_value *v);
int pawl__sq_batch_count_job(sq_store_t *s, const pawl_id_t *id, int64_t ds,
                             int64_t df, int64_t dc, int64_t now);
int pawl__sq_batch_flush(sq_store_t *s, int64_t now);
int pawl__sq_batch_create(store_t *base, const store_batch_new_t *b,
                          const store_new_job_t *jobs, size_t n);
int pawl__sq_batch_get(store_t *base, const pawl_id_t *id, int64_t now,
                       pawl_batch_t *out);
int pawl__sq_batch_of(store_t *base, const pawl_id_t *id, pawl_id_t *batch,
                      int *role);

/* deps.c */
void pawl__sq_deps_note(sq_store_t *s, int64_t seq);
void pawl__sq_dep_note_fn(sqlite3_context *ctx, int argc, sqlite3_value **v);
int pawl__sq_deps_note_id(sq_store_t *s, const pawl_id_t *id);
int pawl__sq_deps_flush(sq_store_t *s);
int pawl__sq_deps_link(sq_store_t *s, const store_new_job_t *j,
                       const pawl_id_t *prev, int64_t now);
int pawl__sq_deps_reopen(store_t *base, const pawl_id_t *id, int64_t now,
                         const char *actor);
int pawl__sq_deps_list(store_t *base, const pawl_id_t *id, pawl_dep_cb cb,
                       void *data);

/* steps.c */
int pawl__sq_steps_get(store_t *base, const pawl_id_t *id, pawl_steps_t **out);
int pawl__sq_step_begin(store_t *base, const pawl_id_t *id,
                        const pawl_id_t *token, int32_t attempt,
                        int32_t index, const char *name,
                        const char *checkpoint, int64_t *exec);
int pawl__sq_step_save(store_t *base, const pawl_id_t *id,
                       const pawl_id_t *token, int32_t attempt, int64_t exec,
                       const char *checkpoint, const int64_t *counts);
int pawl__sq_step_end(store_t *base, const pawl_id_t *id,
                      const pawl_id_t *token, int32_t attempt, int64_t exec,
                      int status, const char *exit_code,
                      const char *exit_message, const int64_t *counts);
int pawl__sq_step_exit(store_t *base, const pawl_id_t *id,
                       const pawl_id_t *token, int32_t attempt,
                       const char *exit_code, const char *exit_message);
int pawl__sq_instance_find(store_t *base, const char *type, const char *key,
                           pawl_id_t *id, int *state);
int pawl__sq_instance_take(sq_store_t *s, const store_new_job_t *j,
                           int64_t now);

/* alerts.c */
int pawl__sq_alert_take(store_t *base, const char *owner, int64_t lease_ms,
                        size_t max, store_alert_t **out, size_t *n);
int pawl__sq_alert_note(store_t *base, const char *owner, int64_t fp,
                        int64_t window_ms, store_alert_t *a);
int pawl__sq_alert_done(store_t *base, const char *owner, int64_t seq);

/* retention.c */
int pawl__sq_ret_scan(store_t *base, const store_pick_t *after, size_t max,
                      store_retain_row_t *out, size_t *n);
int pawl__sq_ret_remove(store_t *base, const store_retain_row_t *rows,
                        size_t n, int archive, int *removed);

/* admin.c */
int pawl__sq_adm_count(store_t *base, const store_match_t *m, int64_t max,
                       int64_t *n);
int pawl__sq_adm_pick(store_t *base, const store_match_t *m,
                      const store_pick_t *after, size_t max,
                      store_pick_t *out, size_t *n);
int pawl__sq_adm_exec(sq_store_t *s, int id, const char *what);
int pawl__sq_adm_apply(store_t *base, store_op_t op, const char *actor,
                       const char *reason, const store_pick_t *picks,
                       size_t n, pawl_bulk_result_t *r);
int pawl__sq_adm_list(store_t *base, const pawl_filter_t *f, pawl_job_cb cb,
                      void *data);
int pawl__sq_adm_tally(sq_store_t *s, store_stat_cb cb, void *data);
int pawl__sq_adm_stats(store_t *base, int64_t now, store_stat_cb cb,
                       void *data);
int pawl__sq_adm_locks(store_t *base, store_lock_cb cb, void *data);
int pawl__sq_adm_running(store_t *base, store_owner_cb cb, void *data);

/* metrics.c */
int pawl__sq_met_gauges(store_t *base, int64_t now, int64_t since, int full,
                        store_stat_cb cb, void *data);
int pawl__sq_top_throughput(store_t *base, int64_t since, store_tp_cb cb,
                            void *data);
int pawl__sq_top_running(store_t *base, int limit, pawl_job_cb cb,
                         void *data);

#endif
