/* test_claim_hold.c: the SQLite claim walks no job that cannot run now
 * (schema/sqlite/V018__claim_holds.sql).
 *
 * - the plans of every statement on the claim path, on a database full of
 *   held jobs: no table scan, no index that holds held rows, every probe
 *   of a key a seek on (ordering_key, state, held);
 * - the work of a claim and of next_due (SQLite's count of virtual
 *   machine steps, which does not depend on the machine's speed) is the
 *   same with 10 times more jobs held behind each kind of hold;
 * - after every operation of a random run, `held` is what the ordering
 *   rule says from scratch: exactly the candidates of each key are free;
 * - next_due() counts no held job;
 * - a database from before V018 migrates with its holds computed. */
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "handle.h"
#include "pawl.h"
#include "sqlite_sql.h"
#include "sqlite_undo.h"
#include "unit.h"
#include "unit_pawl.h"

sqlite3 *pawl__store_sqlite_db(store_t *st);

#define T0 INT64_C(1800000000000)
#define HOUR INT64_C(3600000)

static _Atomic int64_t ch_now = T0;

static const char *ch_url(const char *name) {
  static char url[4200];
  snprintf(url, sizeof url, "sqlite:%s/%s.db", unit_tmpdir(), name);
  return url;
}

static pawl_t *ch_open(const char *name) {
  atomic_store(&ch_now, T0);
  return unit_open_clocked(ch_url(name), "node-a", &ch_now, 600000);
}

static sqlite3 *ch_db(pawl_t *p) { return pawl__store_sqlite_db(p->store); }

static void ch_exec(sqlite3 *db, const char *sql) {
  char *err = NULL;
  if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK)
    unit_fail(__FILE__, __LINE__, "%s: %s", sql, err ? err : "?");
}

static long long ch_num(sqlite3 *db, const char *sql) {
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
    unit_fail(__FILE__, __LINE__, "%s: %s", sql, sqlite3_errmsg(db));
  long long v = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
  sqlite3_finalize(st);
  return v;
}

static void ch_check_text(sqlite3 *db, const char *sql, const char *want) {
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
    unit_fail(__FILE__, __LINE__, "%s: %s", sql, sqlite3_errmsg(db));
  const char *got = sqlite3_step(st) == SQLITE_ROW
                        ? (const char *)sqlite3_column_text(st, 0)
                        : NULL;
  if (!got || strcmp(got, want))
    unit_fail(__FILE__, __LINE__, "%s: %s, not %s", sql, got ? got : "(none)",
              want);
  sqlite3_finalize(st);
}

/* n rows of raw SQL, each "seq-like" i from 1; `cols` and `vals` name the
 * columns past the common ones and their values as expressions of i. */
static void ch_rows(sqlite3 *db, long n, const char *cols, const char *vals) {
  char *sql = sqlite3_mprintf(
      "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE "
      "i < %ld) INSERT INTO pawl_jobs (id, type, payload, max_attempts, "
      "created_at, %s) SELECT randomblob(16), 't', '{}', 3, %lld, %s FROM n",
      n, cols, (long long)T0, vals);
  ch_exec(db, sql);
  sqlite3_free(sql);
}

/* Rows written with plain SQL get their holds as the store gives them
 * (V020__holds_by_store.sql): each key refreshed, and the pending rows
 * written due later marked early. */
static void ch_holds(sqlite3 *db) {
  ch_exec(db, "INSERT INTO pawl_key_refresh SELECT DISTINCT ordering_key "
              "FROM pawl_jobs WHERE ordering_key IS NOT NULL");
  ch_exec(db, "UPDATE pawl_jobs SET early = 1 WHERE state = 0 AND "
              "run_at > updated_at");
}

/* The kinds of hold the claim must not walk, each as the raw rows that
 * make it: n jobs held, ranked above the free jobs. */
enum { CH_KEY_RUNNING, CH_KEY_BLOCKED, CH_KEY_RETRY, CH_FUTURE, CH_DEPS,
       CH_KINDS };
static const char *const ch_kind_name[CH_KINDS] = {
    "key head running", "key head blocked", "key head waiting for its retry",
    "due in an hour at a higher rank", "blocked on dependencies"};

#define CH_COLS "queue, state, priority, rank, run_at, updated_at, ordering_key"

static void ch_fill(sqlite3 *db, int kind, long n, long free_n) {
  char vals[256];
  long long t0 = (long long)T0, later = (long long)(T0 + HOUR);
  ch_exec(db, "BEGIN");
  if (kind <= CH_KEY_RETRY) {
    /* The head first (lowest seq), then the n jobs of its key. */
    int head = kind == CH_KEY_RUNNING ? 1 : kind == CH_KEY_BLOCKED ? 6 : 0;
    snprintf(vals, sizeof vals, "'q0', %d, 5, 5, %lld, %lld, 'k'", head,
             kind == CH_KEY_RETRY ? later : t0, t0);
    ch_rows(db, 1, CH_COLS, vals);
    snprintf(vals, sizeof vals, "'q0', 0, 5, 5, %lld, %lld, 'k'", t0, t0);
    ch_rows(db, n, CH_COLS, vals);
  } else if (kind == CH_FUTURE) {
    snprintf(vals, sizeof vals, "'q0', 0, 9, 9, %lld, %lld, NULL", later, t0);
    ch_rows(db, n, CH_COLS, vals);
  } else {
    snprintf(vals, sizeof vals, "'q0', 6, 5, 5, %lld, %lld, NULL", t0, t0);
    ch_rows(db, n, CH_COLS, vals);
  }
  /* History, and the free jobs in three queues. */
  snprintf(vals, sizeof vals, "'q' || (i %% 3), 2, 0, 0, %lld, %lld, NULL",
           t0, t0);
  ch_rows(db, n, CH_COLS, vals);
  snprintf(vals, sizeof vals, "'q' || (i %% 3), 0, 0, 0, %lld, %lld, NULL",
           t0, t0);
  ch_rows(db, free_n, CH_COLS, vals);
  ch_holds(db);
  ch_exec(db, "COMMIT");
}

/* Every statement a claim or a poller runs, with the values its
 * parameters get. */
static const struct {
  const char *name, *sql;
} ch_stmts[] = {
    {"CLAIM", SQLITE_SQL_CLAIM},
    {"CLAIM_UNPAUSED", SQLITE_SQL_CLAIM_UNPAUSED},
    {"CLAIM_LIM", SQLITE_SQL_CLAIM_LIM},
    {"CLAIM_LIM_UNPAUSED", SQLITE_SQL_CLAIM_LIM_UNPAUSED},
    {"PROMOTE", SQLITE_SQL_PROMOTE},
    {"PROMOTE_ANY", SQLITE_SQL_PROMOTE_ANY},
    {"NEXT_DUE", SQLITE_SQL_NEXT_DUE},
    {"NEXT_DUE_QUEUE", SQLITE_SQL_NEXT_DUE_QUEUE},
    {"NEXT_DUE_QUEUES", SQLITE_SQL_NEXT_DUE_QUEUES},
    {"NEXT_DUE_LIM", SQLITE_SQL_NEXT_DUE_LIM},
    {"NEXT_DUE_LIM_RES", SQLITE_SQL_NEXT_DUE_LIM_RES},
    {"NEXT_DUE_LIM_QUEUE", SQLITE_SQL_NEXT_DUE_LIM_QUEUE},
    {"LIMIT_RUNNING_RES", SQLITE_SQL_LIMIT_RUNNING_RES},
    {"LIMIT_RUNNING_QUEUE", SQLITE_SQL_LIMIT_RUNNING_QUEUE},
    {"CLAIM_LANE", SQLITE_SQL_CLAIM_LANE},
    {"LANE_QUEUE", SQLITE_SQL_LANE_QUEUE},
    {"LANE_NONE", SQLITE_SQL_LANE_NONE},
    {"LANE_RES", SQLITE_SQL_LANE_RES},
    {"CLAIM_TAKE", SQLITE_SQL_CLAIM_TAKE},
};
#define CH_NSTMTS (sizeof ch_stmts / sizeof *ch_stmts)

/* Binds what sq_claim() and sq_next_due() bind, by parameter name. */
static void ch_bind(sqlite3_stmt *st, const char *name) {
  int next_due = strncmp(name, "NEXT_DUE", 8) == 0;
  int one_queue = strstr(name, "_QUEUE") && !strstr(name, "_QUEUES");
  for (int i = 1; i <= sqlite3_bind_parameter_count(st); i++) {
    if (next_due && i == 9) continue; /* NULL: the ready rows too */
    if (next_due) {
      if (i == 1)
        sqlite3_bind_text(st, 1, one_queue || strstr(name, "_RES") ? "q0"
                                 : strstr(name, "QUEUES") ? "[\"q0\",\"q1\"]"
                                                          : NULL,
                          -1, SQLITE_STATIC);
      else
        sqlite3_bind_text(st, i, i == 2 && strstr(name, "_RES") ? NULL : "[]",
                          -1, SQLITE_STATIC);
      continue;
    }
    switch (i) {
    case 1: sqlite3_bind_int64(st, 1, T0); break;
    case 2: sqlite3_bind_int64(st, 2, 10); break;
    case 3:
      sqlite3_bind_text(st, 3, one_queue ? "q0" : "[\"q0\",\"q1\"]", -1,
                        SQLITE_STATIC);
      break;
    default: sqlite3_bind_text(st, i, "[]", -1, SQLITE_STATIC);
    }
  }
  if (!strcmp(name, "CLAIM_TAKE")) sqlite3_bind_text(st, 5, "[1]", -1, SQLITE_STATIC);
  if (!strcmp(name, "CLAIM_LANE")) {
    sqlite3_bind_text(st, 3, "q0", -1, SQLITE_STATIC);
    sqlite3_bind_null(st, 4);
  }
  if (!strncmp(name, "LANE_", 5)) {
    sqlite3_bind_text(st, 1, strcmp(name, "LANE_QUEUE") ? "q0" : "", -1, SQLITE_STATIC);
    if (!strcmp(name, "LANE_RES")) sqlite3_bind_text(st, 2, "", -1, SQLITE_STATIC);
  }
  if (!strncmp(name, "LIMIT_RUNNING", 13)) sqlite3_bind_text(st, 1, "q0", -1, SQLITE_STATIC);
}

/* The plan of `sql`, its detail lines joined by newlines. */
static void ch_plan(sqlite3 *db, const char *sql, char *out, size_t n) {
  char *q = sqlite3_mprintf("EXPLAIN QUERY PLAN %s", sql);
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(db, q, -1, &st, NULL) != SQLITE_OK)
    unit_fail(__FILE__, __LINE__, "prepare plan: %s", sqlite3_errmsg(db));
  sqlite3_free(q);
  out[0] = 0;
  while (sqlite3_step(st) == SQLITE_ROW) {
    size_t len = strlen(out);
    snprintf(out + len, n - len, "%s\n", (const char *)sqlite3_column_text(st, 3));
  }
  sqlite3_finalize(st);
}

/* Why a plan line of statement `name` walks held rows, or NULL. The
 * indexes a claim may walk are those whose WHERE leaves every held row
 * out (checked on their definitions); pawl_jobs_lane holds every pending
 * row, so it is sought on (queue, held, early), or for LANE_QUEUE's min()
 * of the queues, one entry; a key is probed by a seek on (ordering_key,
 * state, held); the running rows are a limit's permits. */
static const char *ch_bad_line(sqlite3 *db, const char *name,
                               const char *line) {
  if (!strstr(line, "pawl_jobs") || strstr(line, "pawl_jobs_v")) return NULL;
  if (strstr(line, "USING INTEGER PRIMARY KEY")) return NULL;
  if (strstr(line, "USING INDEX pawl_jobs_running")) return NULL;
  if (strstr(line, "USING INDEX pawl_jobs_key ("))
    return strstr(line, "(ordering_key=? AND state=? AND held=?")
               ? NULL
               : "a probe of a key that does not seek its free rows";
  if (strstr(line, "INDEX pawl_jobs_lane ("))
    return strstr(line, "(queue=? AND held=? AND early=?") ||
                   (!strcmp(name, "LANE_QUEUE") && strstr(line, "(queue>?)"))
               ? NULL
               : "a walk of a lane that does not seek its free rows";
  static const char *const ready[] = {"pawl_jobs_claim", "pawl_jobs_early"};
  for (size_t i = 0; i < 2; i++) {
    const char *at = strstr(line, ready[i]);
    size_t len = strlen(ready[i]);
    if (!at || (at[len] && at[len] != ' ')) continue;
    char *sql = sqlite3_mprintf("SELECT sql LIKE '%%held = 0%%' FROM "
                                "sqlite_master WHERE name = '%s'", ready[i]);
    long long ok = ch_num(db, sql);
    sqlite3_free(sql);
    return ok == 1 ? NULL : "an index that holds held rows";
  }
  return "a scan, or an index that holds held rows";
}

static void ch_check_plans(sqlite3 *db, const char *when) {
  char plan[8192];
  for (size_t i = 0; i < CH_NSTMTS; i++) {
    ch_plan(db, ch_stmts[i].sql, plan, sizeof plan);
    int claim = !strncmp(ch_stmts[i].name, "CLAIM", 5) &&
                strcmp(ch_stmts[i].name, "CLAIM_TAKE");
    /* A claim walks its index in claim order: a sort would read every
     * ready row first. */
    if (claim && strstr(plan, "TEMP B-TREE FOR ORDER BY"))
      unit_fail(__FILE__, __LINE__, "%s (%s) sorts:\n%s", ch_stmts[i].name,
                when, plan);
    /* A claim probes the key of each keyed candidate. */
    if (claim && !strstr(plan, "pawl_jobs_key ("))
      unit_fail(__FILE__, __LINE__, "%s (%s) has no probe of the key:\n%s",
                ch_stmts[i].name, when, plan);
    for (char *line = plan, *end; *line; line = end + 1) {
      end = strchr(line, '\n');
      *end = 0;
      const char *why = ch_bad_line(db, ch_stmts[i].name, line);
      if (why)
        unit_fail(__FILE__, __LINE__, "%s (%s): %s: %s", ch_stmts[i].name,
                  when, why, line);
    }
  }
}

/* Every statement on the claim path, planned on a database holding jobs
 * behind every kind of hold, before and after ANALYZE (a database may
 * have statistics or not). */
void test_sqlite_claim_hold_plans(void) {
  pawl_t *p = ch_open("plans");
  sqlite3 *db = ch_db(p);
  for (int k = 0; k < CH_KINDS; k++) ch_fill(db, k, 2000, 300);
  ch_check_plans(db, "no statistics");
  ch_exec(db, "ANALYZE");
  ch_check_plans(db, "analyzed");
  pawl_close(p);
}

/* Steps of SQLite's virtual machine for one run of statement `i` to its
 * end (triggers and subqueries included). */
static long ch_steps(sqlite3 *db, size_t i) {
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(db, ch_stmts[i].sql, -1, &st, NULL) != SQLITE_OK)
    unit_fail(__FILE__, __LINE__, "%s: %s", ch_stmts[i].name, sqlite3_errmsg(db));
  ch_bind(st, ch_stmts[i].name);
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {}
  if (rc != SQLITE_DONE)
    unit_fail(__FILE__, __LINE__, "%s: %s", ch_stmts[i].name, sqlite3_errmsg(db));
  long steps = sqlite3_stmt_status(st, SQLITE_STMTSTATUS_VM_STEP, 0);
  sqlite3_finalize(st);
  return steps;
}

/* The work of every pick and next_due statement with 300 and with 3,000
 * jobs held, for each kind of hold: the same, give or take a little
 * (the B-tree a level deeper). With free jobs to claim, and with none
 * (where next_due must not look through the held ones either). */
void test_sqlite_claim_hold_cost_flat(void) {
  for (int k = 0; k < CH_KINDS; k++) {
    for (int with_free = 0; with_free < 2; with_free++) {
      long steps[2][CH_NSTMTS];
      for (int big = 0; big < 2; big++) {
        char name[64];
        snprintf(name, sizeof name, "cost_%d_%d_%d", k, with_free, big);
        pawl_t *p = ch_open(name);
        sqlite3 *db = ch_db(p);
        ch_fill(db, k, big ? 3000 : 300, with_free ? 30 : 0);
        for (size_t i = 0; i < CH_NSTMTS; i++)
          if (strcmp(ch_stmts[i].name, "CLAIM_TAKE"))
            steps[big][i] = ch_steps(db, i);
        pawl_close(p);
      }
      for (size_t i = 0; i < CH_NSTMTS; i++) {
        /* NEXT_DUE_LIM_RES (the next job of a resource whose rate window
         * is used up, asked only when no open lane has a ready job) reads
         * the rows due later in run_at order until one of its resource:
         * there is no index by resource alone, so it is left out here. */
        if (!strcmp(ch_stmts[i].name, "CLAIM_TAKE") ||
            !strcmp(ch_stmts[i].name, "NEXT_DUE_LIM_RES"))
          continue;
        if (steps[1][i] > steps[0][i] + steps[0][i] / 5 + 100)
          unit_fail(__FILE__, __LINE__,
                    "%s, %s jobs: %ld steps with 300 held, %ld with 3,000",
                    ch_stmts[i].name, ch_kind_name[k], steps[0][i], steps[1][i]);
      }
    }
  }
}

/* ---- lanes ------------------------------------------------------------- */

static long g_steps; /* VM steps of the statements run since reset */

static int ch_count(unsigned type, void *ctx, void *p, void *x) {
  (void)type, (void)ctx, (void)x;
  g_steps += sqlite3_stmt_status((sqlite3_stmt *)p, SQLITE_STMTSTATUS_VM_STEP, 1);
  return 0;
}

/* Holds that change without touching rows: n jobs of a resource at its
 * max_running (one of them running), of a resource whose rate window is
 * used up, of a paused queue; ranked above 60 free jobs. */
enum { CL_RES_FULL, CL_RATE_USED, CL_PAUSED, CL_KINDS };
static const char *const cl_kind_name[CL_KINDS] = {
    "resource at its max_running", "rate window used up", "paused queue"};

static void cl_fill(sqlite3 *db, int kind, long n) {
  char vals[256];
  long long t0 = (long long)T0;
  ch_exec(db, "BEGIN");
  const char *cols = "queue, state, priority, rank, run_at, updated_at, resource";
  if (kind == CL_PAUSED) {
    snprintf(vals, sizeof vals, "'qp', 0, 5, 5, %lld, %lld, NULL", t0, t0);
    ch_rows(db, n, cols, vals);
    ch_exec(db, "INSERT INTO pawl_queues (name, paused, updated_at) VALUES "
                "('qp', 1, 0)");
  } else {
    snprintf(vals, sizeof vals, "'q0', 1, 5, 5, %lld, %lld, 'r'", t0, t0);
    ch_rows(db, 1, cols, vals);
    snprintf(vals, sizeof vals, "'q0', 0, 5, 5, %lld, %lld, 'r'", t0, t0);
    ch_rows(db, n, cols, vals);
    /* The rate window of T0 (windows of a day from the epoch) used up. */
    ch_exec(db, kind == CL_RES_FULL
                    ? "INSERT INTO pawl_limits (name, max_running, updated_at) "
                      "VALUES ('r', 1, 0)"
                    : "INSERT INTO pawl_limits (name, rate, rate_window_ms, "
                      "window_start, window_count, updated_at) VALUES ('r', 1, "
                      "86400000, 1799971200000, 1, 0)");
  }
  /* A resource with room, so that open resource lanes are read too. */
  snprintf(vals, sizeof vals, "'q' || (i %% 3), 0, 0, 0, %lld, %lld, "
           "CASE WHEN i %% 2 THEN 'open' END", t0, t0);
  ch_rows(db, 60, cols, vals);
  ch_holds(db);
  ch_exec(db, "COMMIT");
}

/* The work of a whole claim and of next_due (every statement each runs,
 * counted by tracing) with 300 and with 3,000 jobs in a blocked lane, for
 * a claim of every queue, of one and of two: the same, give or take a
 * little. The claim takes only free jobs; next_due says the free ones
 * left are due, and, once they are gone, that nothing is (the end of a
 * used-up rate window for its jobs). */
void test_sqlite_claim_hold_lanes_flat(void) {
  static const char *const one[] = {"q0"}, *const two[] = {"q0", "qp"};
  for (int k = 0; k < CL_KINDS; k++) {
    for (int qi = 0; qi < 3; qi++) {
      long steps[2], due_steps[2];
      for (int big = 0; big < 2; big++) {
        char name[64];
        snprintf(name, sizeof name, "lanes_%d_%d_%d", k, qi, big);
        pawl_t *p = ch_open(name);
        sqlite3 *db = ch_db(p);
        cl_fill(db, k, big ? 3000 : 300);
        pawl_claim_opts_t c = {.queues = qi == 1 ? one : qi == 2 ? two : NULL,
                               .nqueues = (size_t)qi};
        pawl_job_t **jobs = NULL;
        size_t got = 0;
        g_steps = 0;
        sqlite3_trace_v2(db, SQLITE_TRACE_PROFILE, ch_count, NULL);
        CHECK_OK(pawl_claim(p, &c, 10, &jobs, &got));
        sqlite3_trace_v2(db, 0, NULL, NULL);
        steps[big] = g_steps;
        CHECK_INT(got, ==, 10);
        for (size_t i = 0; i < got; i++) {
          CHECK_INT(jobs[i]->priority, ==, 0);
          if (qi == 1) CHECK_STR(jobs[i]->queue, "q0");
        }
        pawl_jobs_free(jobs, got);
        /* The free jobs left are due now; nothing else is. */
        int64_t at = -1;
        g_steps = 0;
        sqlite3_trace_v2(db, SQLITE_TRACE_PROFILE, ch_count, NULL);
        CHECK_OK(pawl_next_due(p, &c, &at));
        sqlite3_trace_v2(db, 0, NULL, NULL);
        due_steps[big] = g_steps;
        if (at != T0)
          unit_fail(__FILE__, __LINE__, "next_due of %d queues, %s: %lld",
                    qi, cl_kind_name[k], (long long)at);
        /* Without them, no job is due (a used-up rate window: its end). */
        ch_exec(db, "UPDATE pawl_jobs SET state = 4 WHERE priority = 0");
        CHECK_OK(pawl_next_due(p, &c, &at));
        int64_t want = k == CL_RATE_USED ? INT64_C(1799971200000) + 86400000 : 0;
        if (at != want)
          unit_fail(__FILE__, __LINE__, "next_due of %d queues, %s, only held "
                    "jobs: %lld, not %lld", qi, cl_kind_name[k], (long long)at,
                    (long long)want);
        pawl_close(p);
      }
      if (steps[1] > steps[0] + steps[0] / 5 + 100)
        unit_fail(__FILE__, __LINE__,
                  "claim of %d queues, %s: %ld steps with 300 held, %ld with 3,000",
                  qi, cl_kind_name[k], steps[0], steps[1]);
      if (due_steps[1] > due_steps[0] + due_steps[0] / 5 + 100)
        unit_fail(__FILE__, __LINE__,
                  "next_due of %d queues, %s: %ld steps with 300 held, %ld "
                  "with 3,000", qi, cl_kind_name[k], due_steps[0], due_steps[1]);
    }
  }
}

/* ---- the invariant ------------------------------------------------------ */

/* Rows whose `held` is not what the ordering rule says from scratch (the
 * definition V018 migrates existing rows with): held only on pending
 * keyed rows, and there exactly on those behind a running job of their
 * key or behind an earlier live job of it that holds its place. */
#define CH_WRONG_HOLDS                                                       \
  "SELECT count(*) FROM pawl_jobs AS j WHERE held <> (state = 0 AND "        \
  "ordering_key IS NOT NULL AND (EXISTS (SELECT 1 FROM pawl_jobs AS r "      \
  "WHERE r.ordering_key = j.ordering_key AND r.state = 1) OR EXISTS "        \
  "(SELECT 1 FROM pawl_jobs AS b WHERE b.ordering_key = j.ordering_key AND " \
  "b.state IN (0, 5, 6) AND b.seq < j.seq AND b.ordering_skip = 0 AND NOT "  \
  "(b.state = 5 AND b.paused_from IS 3))))"

#define CH_MAXJ 400

/* A random run of every operation that moves a keyed job (enqueue, with
 * and without parents, waiting for a signal; claim; success, retry
 * holding its place or letting later jobs pass, snooze, failure; pause,
 * resume; cancel; operator retry; a signal's decision and a wait's
 * expiry; lost leases recovered; time passing), the holds checked after
 * each. Each claimed keyed job must also be the first of its key in
 * line. */
void test_sqlite_claim_hold_invariant(void) {
  pawl_t *p = ch_open("invariant");
  sqlite3 *db = ch_db(p);
  pawl_id_t ids[CH_MAXJ];
  int nids = 0;
  pawl_job_t *running[64];
  int nrun = 0, nsig = 0;
  long long most_held = 0, states_seen = 0;
  srand(20261127);
  for (int step = 0; step < 1500; step++) {
    int op = rand() % 11;
    if (op <= 2 && nids < CH_MAXJ) {
      static const char *const keys[] = {"a", "b", "c", NULL};
      pawl_enqueue_opts_t o;
      pawl_enqueue_opts_init(&o);
      o.ordering_key = keys[rand() % 4];
      o.priority = rand() % 3;
      o.max_attempts = 3;
      if (rand() % 5 == 0) o.delay_ms = (rand() % 4) * 600000;
      char sig[32];
      if (nids && rand() % 6 == 0) {
        o.after = &ids[rand() % nids];
        o.nafter = 1;
        o.when = "done";
      } else if (rand() % 8 == 0) {
        snprintf(sig, sizeof sig, "sig-%d", nsig++);
        o.signal = sig;
        o.signal_timeout_ms = (rand() % 3) * 900000;
      }
      if (pawl_enqueue(p, "t", "{}", &o, &ids[nids], NULL) == 0) nids++;
    } else if (op <= 4 && nrun < 60) {
      pawl_job_t **jobs = NULL;
      size_t got = 0;
      pawl_claim_opts_t c = {.lease_ms = 600000};
      CHECK_OK(pawl_claim(p, &c, (size_t)(1 + rand() % 3), &jobs, &got));
      for (size_t i = 0; i < got; i++) {
        if (jobs[i]->ordering_key) {
          /* No earlier job of its key still holds its place in line. */
          char *sql = sqlite3_mprintf(
              "SELECT count(*) FROM pawl_jobs WHERE ordering_key = %Q AND "
              "seq < %lld AND ((state IN (0, 5, 6) AND NOT (state = 5 AND "
              "paused_from IS 3) AND (ordering_skip = 0 OR (state = 0 AND "
              "run_at <= %lld))) OR state = 1 AND seq <> %lld)",
              jobs[i]->ordering_key, (long long)jobs[i]->store_key,
              (long long)atomic_load(&ch_now), (long long)jobs[i]->store_key);
          long long ahead = ch_num(db, sql);
          sqlite3_free(sql);
          if (ahead)
            unit_fail(__FILE__, __LINE__, "step %d: claimed a job of key %s "
                      "with %lld ahead of it", step, jobs[i]->ordering_key, ahead);
        }
        running[nrun++] = jobs[i];
      }
      pawl_jobs_free(jobs, 0); /* the array only: running[] keeps its jobs */
    } else if (op <= 6 && nrun) {
      int i = rand() % nrun;
      pawl_job_t *j = running[i];
      pawl_outcome_t out = {.id = j->id, .attempt = j->attempt,
                            .store_key = j->store_key, .error = "e"};
      int how = rand() % 5;
      out.kind = how == 0   ? PAWL_OUT_SUCCEEDED
                 : how == 1 ? PAWL_OUT_FAILED
                 : how == 2 ? PAWL_OUT_SNOOZE
                            : PAWL_OUT_RETRY;
      out.run_at = atomic_load(&ch_now) + (rand() % 3) * 600000;
      out.ordering_skip = how == 4;
      /* A lease recovered meanwhile (op 10) is no longer held. */
      int rc = pawl_finish(p, &out, 1, NULL);
      if (rc && rc != PAWL_ELEASE)
        unit_fail(__FILE__, __LINE__, "finish: %s", pawl_strerror(rc));
      pawl_job_free(j);
      running[i] = running[--nrun];
    } else if (op == 7 && nids) {
      const pawl_id_t *id = &ids[rand() % nids];
      int which = rand() % 4;
      /* Refused from some states (PAWL_ESTATE): that is fine here. */
      if (which == 0) (void)pawl_pause(p, id, NULL, NULL);
      else if (which == 1) (void)pawl_resume(p, id, NULL, NULL);
      else if (which == 2) (void)pawl_cancel(p, id, NULL, NULL);
      else (void)pawl_retry(p, id, NULL, NULL);
    } else if (op == 8 && nsig) {
      char sig[32];
      snprintf(sig, sizeof sig, "sig-%d", rand() % nsig);
      /* Decided, expired or gone: refusals are fine here. */
      (void)pawl_signal(p, sig, rand() % 2 ? "approve" : "reject", NULL, NULL,
                        NULL);
      CHECK_OK(pawl_signal_expire(p, NULL));
    } else if (op == 9) {
      atomic_fetch_add(&ch_now, (rand() % 4) * 300000);
    } else {
      CHECK_OK(pawl_recover(p, NULL));
    }
    long long held = ch_num(db, "SELECT count(*) FROM pawl_jobs WHERE held = 1");
    if (held > most_held) most_held = held;
    states_seen |= ch_num(db, "SELECT coalesce(sum(DISTINCT 1 << state), 0) "
                              "FROM pawl_jobs");
    long long wrong = ch_num(db, CH_WRONG_HOLDS);
    if (wrong)
      unit_fail(__FILE__, __LINE__, "step %d (op %d): %lld rows with a wrong "
                "hold", step, op, wrong);
  }
  for (int i = 0; i < nrun; i++) pawl_job_free(running[i]);
  /* The run did exercise holds, and every kind of state. */
  CHECK(most_held >= 5);
  if (states_seen != 0x7f)
    unit_fail(__FILE__, __LINE__, "states seen in the run: %llx, not all "
              "seven", states_seen);
  pawl_close(p);
}

/* ---- next_due ----------------------------------------------------------- */

static pawl_id_t ch_enq(pawl_t *p, const char *key, int64_t delay,
                        const pawl_id_t *after) {
  pawl_enqueue_opts_t o;
  pawl_enqueue_opts_init(&o);
  o.ordering_key = key;
  o.delay_ms = delay;
  o.max_attempts = 3;
  if (after) {
    o.after = after;
    o.nafter = 1;
  }
  pawl_id_t id;
  CHECK_OK(pawl_enqueue(p, "t", "{}", &o, &id, NULL));
  return id;
}

static int64_t ch_next_due(pawl_t *p, const char *queue) {
  pawl_claim_opts_t c = {0};
  const char *qs[2] = {queue, "other"};
  if (queue) {
    c.queues = qs;
    c.nqueues = 1 + (queue[0] == '2');
    if (queue[0] == '2') qs[0] = "default";
  }
  int64_t at = -1;
  CHECK_OK(pawl_next_due(p, &c, &at));
  return at;
}

/* The `early` of job `id`'s row. */
static long long ch_early(sqlite3 *db, const pawl_id_t *id) {
  char hex[33];
  for (int i = 0; i < 16; i++) snprintf(hex + 2 * i, 3, "%02x", id->bytes[i]);
  char *sql = sqlite3_mprintf("SELECT early FROM pawl_jobs WHERE id = x'%s'",
                              hex);
  long long v = ch_num(db, sql);
  sqlite3_free(sql);
  return v;
}

/* Every statement that makes a row pending writes its `early` (the store
 * writes it, no trigger): a job due later stays out of the claim's index
 * until it is due, and one due now is in it at once. */
void test_sqlite_claim_hold_early_written(void) {
  pawl_t *p = ch_open("early");
  sqlite3 *db = ch_db(p);
  pawl_id_t later = ch_enq(p, NULL, HOUR, NULL), now = ch_enq(p, NULL, 0, NULL);
  CHECK_INT(ch_early(db, &later), ==, 1);
  CHECK_INT(ch_early(db, &now), ==, 0);
  pawl_job_t **jobs = NULL;
  size_t got = 0;
  pawl_claim_opts_t c = {.lease_ms = 600000};
  CHECK_OK(pawl_claim(p, &c, 5, &jobs, &got));
  CHECK_INT(got, ==, 1);
  /* A retry an hour away; then an operator's retry, due now. */
  pawl_outcome_t out = {.id = jobs[0]->id, .attempt = jobs[0]->attempt,
                        .store_key = jobs[0]->store_key, .error = "e",
                        .kind = PAWL_OUT_RETRY,
                        .run_at = atomic_load(&ch_now) + HOUR};
  CHECK_OK(pawl_finish(p, &out, 1, NULL));
  CHECK_INT(ch_early(db, &now), ==, 1);
  pawl_jobs_free(jobs, got);
  CHECK_OK(pawl_pause(p, &now, NULL, NULL));
  CHECK_OK(pawl_resume(p, &now, NULL, NULL));
  CHECK_INT(ch_early(db, &now), ==, 1); /* still due in an hour */
  /* Once due, the claim promotes both and takes them. */
  atomic_fetch_add(&ch_now, HOUR);
  CHECK_OK(pawl_claim(p, &c, 5, &jobs, &got));
  CHECK_INT(got, ==, 2);
  /* Failed, then an operator's retry: due now. */
  for (size_t i = 0; i < got; i++) {
    pawl_outcome_t f = {.id = jobs[i]->id, .attempt = jobs[i]->attempt,
                        .store_key = jobs[i]->store_key, .error = "e",
                        .kind = PAWL_OUT_FAILED};
    CHECK_OK(pawl_finish(p, &f, 1, NULL));
  }
  pawl_jobs_free(jobs, got);
  CHECK_OK(pawl_retry(p, &now, NULL, NULL));
  CHECK_INT(ch_early(db, &now), ==, 0);
  pawl_close(p);
}

/* A job no claim can take is not due: jobs behind a running head, a
 * blocked head, a paused head, a head waiting for its retry. For every
 * queue, one queue and two queues ("2"). */
void test_sqlite_claim_hold_next_due(void) {
  const char *queues[3] = {NULL, "default", "2"};
  for (int qi = 0; qi < 3; qi++) {
    char name[32];
    snprintf(name, sizeof name, "due%d", qi);
    pawl_t *p = ch_open(name);
    const char *q = queues[qi];
    CHECK_INT(ch_next_due(p, q), ==, 0);
    /* Running head. */
    ch_enq(p, "k", 0, NULL);
    ch_enq(p, "k", 0, NULL);
    pawl_job_t **jobs = NULL;
    size_t got = 0;
    CHECK_OK(pawl_claim(p, NULL, 5, &jobs, &got));
    CHECK_INT(got, ==, 1);
    CHECK_INT(ch_next_due(p, q), ==, 0);
    /* Its retry in an hour, holding its place: due then, not before. */
    pawl_outcome_t out = {.id = jobs[0]->id, .attempt = jobs[0]->attempt,
                          .store_key = jobs[0]->store_key, .error = "e",
                          .kind = PAWL_OUT_RETRY, .run_at = T0 + HOUR};
    CHECK_OK(pawl_finish(p, &out, 1, NULL));
    pawl_jobs_free(jobs, got);
    CHECK_INT(ch_next_due(p, q), ==, T0 + HOUR);
    /* A head paused: nothing of the key is due. */
    pawl_id_t head = ch_enq(p, "p", 0, NULL);
    ch_enq(p, "p", 0, NULL);
    CHECK_OK(pawl_pause(p, &head, NULL, NULL));
    CHECK_INT(ch_next_due(p, q), ==, T0 + HOUR);
    /* A head blocked on a parent due in two hours: the parent is. */
    pawl_id_t parent = ch_enq(p, NULL, 2 * HOUR, NULL);
    ch_enq(p, "b", 0, &parent);
    ch_enq(p, "b", 0, NULL);
    CHECK_INT(ch_next_due(p, q), ==, T0 + HOUR);
    /* Resumed, the paused key's head is due now. */
    CHECK_OK(pawl_resume(p, &head, NULL, NULL));
    CHECK_INT(ch_next_due(p, q), ==, T0);
    pawl_close(p);
  }
}

/* ---- the migration ------------------------------------------------------ */

/* A database as V017 left it, with keyed jobs in every state, migrates
 * with the holds the rule gives, and its future jobs due later. */
void test_sqlite_claim_hold_migrates(void) {
  pawl_t *p = ch_open("migrate");
  sqlite3 *db = ch_db(p);
  ch_exec(db, SQLITE_UNDO_V020 SQLITE_UNDO_V019 SQLITE_UNDO_V018);
  /* Key r: running head, two behind. Key b: blocked head, one behind.
   * Key s: a head waiting for a retry that lets the next pass, then two.
   * Key f: a failed head (gone from the line), one behind. One future. */
  ch_exec(db,
          "INSERT INTO pawl_jobs (id, type, queue, state, priority, rank, "
          "payload, run_at, max_attempts, created_at, updated_at, "
          "ordering_key, ordering_skip) VALUES "
          "(randomblob(16), 't', 'default', 1, 0, 0, '{}', 1, 3, 1, 1, 'r', 0),"
          "(randomblob(16), 't', 'default', 0, 0, 0, '{}', 1, 3, 1, 1, 'r', 0),"
          "(randomblob(16), 't', 'default', 0, 0, 0, '{}', 1, 3, 1, 1, 'r', 0),"
          "(randomblob(16), 't', 'default', 6, 0, 0, '{}', 1, 3, 1, 1, 'b', 0),"
          "(randomblob(16), 't', 'default', 0, 0, 0, '{}', 1, 3, 1, 1, 'b', 0),"
          "(randomblob(16), 't', 'default', 0, 0, 0, '{}', 9e12, 3, 1, 1, 's', 1),"
          "(randomblob(16), 't', 'default', 0, 0, 0, '{}', 1, 3, 1, 1, 's', 0),"
          "(randomblob(16), 't', 'default', 0, 0, 0, '{}', 1, 3, 1, 1, 's', 0),"
          "(randomblob(16), 't', 'default', 3, 0, 0, '{}', 1, 3, 1, 1, 'f', 0),"
          "(randomblob(16), 't', 'default', 0, 0, 0, '{}', 1, 3, 1, 1, 'f', 0),"
          "(randomblob(16), 't', 'default', 0, 0, 0, '{}', 9e12, 3, 1, 1, NULL, 0)");
  pawl_close(p);
  p = ch_open("migrate"); /* migrates again */
  db = ch_db(p);
  ch_check_text(db, "SELECT group_concat(held, '') FROM (SELECT held FROM "
                    "pawl_jobs ORDER BY seq)", "01101001000");
  ch_check_text(db, "SELECT group_concat(early, '') FROM (SELECT early FROM "
                    "pawl_jobs ORDER BY seq)", "00000100001");
  /* The claim takes the second job of s (the first waits for its retry
   * and lets it pass) and the job after f's failed head: no other. */
  pawl_job_t **jobs = NULL;
  size_t got = 0;
  CHECK_OK(pawl_claim(p, NULL, 10, &jobs, &got));
  CHECK_INT(got, ==, 2);
  /* Same rank and run_at: their order is their random ids'. */
  CHECK_INT(jobs[0]->store_key + jobs[1]->store_key, ==, 17);
  CHECK(jobs[0]->store_key == 7 || jobs[0]->store_key == 10);
  pawl_jobs_free(jobs, got);
  pawl_close(p);
}
