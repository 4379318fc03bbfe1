/* test_hot_path.c: what the SQLite store's hot path (claim, finish) writes
 * and executes per job, counted by SQLite itself, so that the checks do
 * not depend on the machine's speed (bench/RESULTS.md, "SQLite: where a
 * job's time goes"):
 *
 * - a claim runs a fixed number of statements whatever its size, changes
 *   each claimed row once, and its VM steps do not grow with how many of
 *   its jobs are claimed ahead of a free worker (no per-row probe of a
 *   list of them);
 * - the claim's many-row UPDATE keeps no statement journal (it would
 *   spill into a temporary file past 64 KiB when temp_store is FILE);
 * - a finish of n successes runs a fixed few statements, whatever n,
 *   changes n rows plus the throughput bucket, and writes for each job
 *   what a finish of that job alone would write;
 * - what the claim writes is what it hands out: started_at is the claim's
 *   time for the jobs that start now, NULL for those claimed ahead. */
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "handle.h"
#include "pawl.h"
#include "unit.h"
#include "unit_pawl.h"

sqlite3 *pawl__store_sqlite_db(store_t *st);

#define T0 INT64_C(1800000000000)

static _Atomic int64_t hp_now = T0;

static pawl_t *hp_open(const char *name) {
  static char url[4200];
  snprintf(url, sizeof url, "sqlite:%s/%s.db", unit_tmpdir(), name);
  atomic_store(&hp_now, T0);
  return unit_open_clocked(url, "node-hp", &hp_now, 600000);
}

static sqlite3 *hp_db(pawl_t *p) { return pawl__store_sqlite_db(p->store); }

static void hp_exec(sqlite3 *db, const char *sql) {
  char *err = NULL;
  if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK)
    unit_fail(__FILE__, __LINE__, "%s: %s", sql, err ? err : "?");
}

static void hp_enqueue(pawl_t *p, int n) {
  pawl_enqueue_item_t *items = calloc((size_t)n, sizeof *items);
  CHECK(items != NULL);
  for (int i = 0; i < n; i++)
    items[i] = (pawl_enqueue_item_t){"t", "{\"n\":1}", NULL};
  CHECK_OK(pawl_enqueue_many(p, items, (size_t)n, NULL, NULL));
  free(items);
}

/* What the statements run between hp_count_on() and hp_count_off() did. */
static long g_stmts, g_steps;

static int hp_trace(unsigned type, void *ctx, void *p, void *x) {
  (void)type, (void)ctx, (void)x;
  g_stmts++;
  g_steps += sqlite3_stmt_status((sqlite3_stmt *)p, SQLITE_STMTSTATUS_VM_STEP, 1);
  return 0;
}

static long long g_changes0;

static void hp_count_on(sqlite3 *db) {
  g_stmts = g_steps = 0;
  g_changes0 = sqlite3_total_changes64(db);
  sqlite3_trace_v2(db, SQLITE_TRACE_PROFILE, hp_trace, NULL);
}

/* Rows changed since hp_count_on(). */
static long long hp_count_off(sqlite3 *db) {
  sqlite3_trace_v2(db, 0, NULL, NULL);
  return sqlite3_total_changes64(db) - g_changes0;
}

/* Claims `max` jobs, the last `prefetch` of them ahead of a free worker
 * (as the host claims); returns how many. */
static size_t hp_claim(pawl_t *p, size_t max, size_t prefetch,
                       pawl_job_t ***jobs) {
  pawl_claim_opts_t co;
  memset(&co, 0, sizeof co);
  co.defer_start = 1;
  co.prefetch = prefetch;
  size_t n = 0;
  CHECK_OK(pawl_claim(p, &co, max, jobs, &n));
  return n;
}

/* A claim's statements, rows changed and VM steps, for `n` jobs of which
 * `ahead` are claimed ahead; each claimed row and job checked against
 * what the claim says it wrote. */
typedef struct hp_claim_cost {
  long stmts, steps;
  long long changes;
} hp_claim_cost_t;

static hp_claim_cost_t hp_claim_cost(const char *name, size_t n,
                                     size_t ahead) {
  pawl_t *p = hp_open(name);
  sqlite3 *db = hp_db(p);
  hp_enqueue(p, (int)n + 5);
  pawl_job_t **jobs = NULL;
  hp_count_on(db);
  size_t got = hp_claim(p, n, ahead, &jobs);
  hp_claim_cost_t c;
  c.changes = hp_count_off(db);
  c.stmts = g_stmts;
  c.steps = g_steps;
  CHECK_INT(got, ==, n);
  for (size_t i = 0; i < got; i++) {
    int64_t want = i < n - ahead ? T0 : 0;
    CHECK_INT(jobs[i]->started_at, ==, want);
    CHECK_INT(jobs[i]->state, ==, PAWL_RUNNING);
    pawl_job_t *row = NULL;
    CHECK_OK(pawl_get(p, &jobs[i]->id, &row));
    CHECK_INT(row->started_at, ==, want);
    CHECK_INT(row->state, ==, PAWL_RUNNING);
    CHECK_INT(row->attempt, ==, 1);
    CHECK_INT(row->lease_expires, ==, jobs[i]->lease_expires);
    pawl_job_free(row);
  }
  pawl_jobs_free(jobs, got);
  pawl_close(p);
  return c;
}

/* A claim's work does not depend on how many of its jobs are claimed
 * ahead: none, some, all. It runs the same few statements for 20 jobs as
 * for 400 (at most one more: the jobs that start now and those claimed
 * ahead are taken by one statement each) and changes each row once. */
void test_sqlite_claim_ahead_costs_no_probe(void) {
  static const size_t sizes[] = {20, 400};
  for (size_t k = 0; k < 2; k++) {
    size_t n = sizes[k];
    char name[64];
    snprintf(name, sizeof name, "ahead_none_%zu", n);
    hp_claim_cost_t none = hp_claim_cost(name, n, 0);
    snprintf(name, sizeof name, "ahead_all_%zu", n);
    hp_claim_cost_t all = hp_claim_cost(name, n, n);
    snprintf(name, sizeof name, "ahead_some_%zu", n);
    hp_claim_cost_t some = hp_claim_cost(name, n, n - 3);
    CHECK_INT(none.changes, ==, (long long)n);
    CHECK_INT(all.changes, ==, (long long)n);
    CHECK_INT(some.changes, ==, (long long)n);
    /* A probe of a list of the ahead jobs costs a few steps per row
     * claimed; the same statement with a NULL start costs none. */
    if (all.steps > none.steps + 8 || some.steps > none.steps + 40)
      unit_fail(__FILE__, __LINE__,
                "%zu jobs: %ld VM steps none ahead, %ld all, %ld some", n,
                none.steps, all.steps, some.steps);
    CHECK_INT(all.stmts, ==, none.stmts);
    CHECK_INT(some.stmts, ==, none.stmts + 1);
    CHECK_INT(none.stmts, <=, 8);
  }
}

/* Temporary files opened through the default VFS for a statement journal,
 * counted by a shim that passes every call on to the real one. */
static sqlite3_vfs *g_real_vfs;
static sqlite3_vfs g_count_vfs;
static int g_subjournals;

static int hp_vfs_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f,
                       int flags, int *out_flags) {
  (void)vfs;
  if (flags & SQLITE_OPEN_SUBJOURNAL) g_subjournals++;
  return g_real_vfs->xOpen(g_real_vfs, name, f, flags, out_flags);
}

/* The claim's many-row UPDATE keeps no statement journal: with temporary
 * data in files (the store keeps it in memory, where it still costs a
 * copy of every page the statement changes), a claim of 1,000 jobs would
 * spill one into a file. Jobs that start now, claimed ahead, and both. */
void test_sqlite_claim_take_no_statement_journal(void) {
  enum { N = 1000 };
  g_real_vfs = sqlite3_vfs_find(NULL);
  CHECK(g_real_vfs != NULL);
  g_count_vfs = *g_real_vfs;
  g_count_vfs.zName = "pawl-hp-count";
  g_count_vfs.xOpen = hp_vfs_open;
  CHECK_INT(sqlite3_vfs_register(&g_count_vfs, 1), ==, SQLITE_OK);
  static const size_t aheads[] = {0, N, N / 2};
  for (size_t k = 0; k < 3; k++) {
    char name[64];
    snprintf(name, sizeof name, "journal_%zu", k);
    pawl_t *p = hp_open(name);
    sqlite3 *db = hp_db(p);
    hp_enqueue(p, N);
    hp_exec(db, "PRAGMA temp_store = FILE");
    g_subjournals = 0;
    pawl_job_t **jobs = NULL;
    CHECK_INT(hp_claim(p, N, aheads[k], &jobs), ==, N);
    if (g_subjournals)
      unit_fail(__FILE__, __LINE__,
                "a claim of %d jobs, %zu ahead, opened %d statement journals",
                N, aheads[k], g_subjournals);
    pawl_jobs_free(jobs, N);
    pawl_close(p);
  }
  sqlite3_vfs_unregister(&g_count_vfs);
}

/* A finish of n successes: one UPDATE for all of them (they carry their
 * row keys), and a fixed few statements around it (the transaction, the
 * throughput bucket): as many statements for 300 jobs as for 10; n rows
 * changed, and the bucket. No history row is written for a success (it
 * is on the job's row); the run is the body's, as measured. */
void test_sqlite_finish_writes_per_job(void) {
  static const size_t sizes[] = {10, 300};
  long stmts[2];
  for (size_t k = 0; k < 2; k++) {
    size_t n = sizes[k];
    char name[64];
    snprintf(name, sizeof name, "finish_%zu", n);
    pawl_t *p = hp_open(name);
    sqlite3 *db = hp_db(p);
    hp_enqueue(p, (int)n);
    pawl_job_t **jobs = NULL;
    CHECK_INT(hp_claim(p, n, n, &jobs), ==, n);
    atomic_fetch_add(&hp_now, 10000);
    pawl_outcome_t *outs = calloc(n, sizeof *outs);
    int *rcs = calloc(n, sizeof *rcs);
    CHECK(outs && rcs);
    for (size_t i = 0; i < n; i++)
      outs[i] = (pawl_outcome_t){.id = jobs[i]->id,
                                 .attempt = jobs[i]->attempt,
                                 .kind = PAWL_OUT_SUCCEEDED,
                                 .store_key = jobs[i]->store_key,
                                 .result = i % 2 ? "{\"i\":1}" : NULL,
                                 .started_at = T0 + 100 + (int64_t)i,
                                 .ended_at = T0 + 200 + (int64_t)i};
    hp_count_on(db);
    CHECK_OK(pawl_finish(p, outs, n, rcs));
    long long changes = hp_count_off(db);
    stmts[k] = g_stmts;
    for (size_t i = 0; i < n; i++) CHECK_INT(rcs[i], ==, 0);
    CHECK_INT(changes, ==, (long long)n + 1);
    long long rows = 0;
    sqlite3_stmt *st;
    CHECK_INT(sqlite3_prepare_v2(db,
                                 "SELECT (SELECT count(*) FROM pawl_attempts) + "
                                 "(SELECT count(*) FROM pawl_events)",
                                 -1, &st, NULL),
              ==, SQLITE_OK);
    if (sqlite3_step(st) == SQLITE_ROW) rows = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    CHECK_INT(rows, ==, 0);
    /* Measured where it happened: the body's run, not the claim; each
     * job its own run and result. */
    for (size_t i = 0; i < n; i++) {
      pawl_job_t *j = NULL;
      CHECK_OK(pawl_get(p, &jobs[i]->id, &j));
      CHECK_INT(j->state, ==, PAWL_SUCCEEDED);
      CHECK_INT(j->started_at, ==, T0 + 100 + (int64_t)i);
      CHECK_INT(j->finished_at, ==, T0 + 200 + (int64_t)i);
      CHECK_INT(j->finished_at - j->started_at, ==, 100);
      if (i % 2)
        CHECK_STR(j->result, "{\"i\":1}");
      else
        CHECK(j->result == NULL);
      pawl_job_free(j);
    }
    pawl_jobs_free(jobs, n);
    free(outs);
    free(rcs);
    pawl_close(p);
  }
  CHECK_INT(stmts[0], ==, stmts[1]);
  CHECK_INT(stmts[0], <=, 6);
}

/* Successes written together keep what each would get alone: among a
 * run of successes, one under an attempt that is not the job's (stale),
 * one whose row key names another running job (foreign: the id is the
 * truth, the other job stays running), one without a row key, one for a
 * job whose retry comes after the run (the retry is then stale), and runs
 * broken by that retry and by a start record. Times: a start the body reports before the claim is
 * the claim's, an unmeasured end is the finish's now, a start not
 * measured keeps the claim's (NULL when claimed ahead). */
void test_sqlite_finish_run_mixed(void) {
  enum { N = 9 };
  pawl_t *p = hp_open("finish_mixed");
  hp_enqueue(p, N);
  pawl_job_t **jobs = NULL;
  /* The first three start now (started_at T0), the rest claimed ahead. */
  CHECK_INT(hp_claim(p, N, N - 3, &jobs), ==, N);
  int64_t now = T0 + 1000;
  atomic_store(&hp_now, now);
  pawl_outcome_t o[12];
  memset(o, 0, sizeof o);
  for (int i = 0; i < 12; i++) o[i].kind = PAWL_OUT_SUCCEEDED;
#define OUT(k, j) (o[k].id = jobs[j]->id, o[k].attempt = jobs[j]->attempt, \
                   o[k].store_key = jobs[j]->store_key)
  OUT(0, 0); o[0].started_at = T0 - 50; o[0].ended_at = T0 + 10;   /* before the claim */
  OUT(1, 1); o[1].attempt = 7;                                     /* stale attempt */
  OUT(2, 2); o[2].store_key = jobs[8]->store_key;                  /* foreign key */
  o[2].started_at = T0 + 20; o[2].ended_at = T0 + 25;
  OUT(3, 4);                                    /* ends the job the retry is for */
  OUT(4, 3); o[4].store_key = 0; o[4].started_at = T0 + 30; o[4].ended_at = T0 + 40;
  OUT(5, 4); o[5].kind = PAWL_OUT_RETRY; o[5].error = "boom"; o[5].run_at = now + 60000;
  OUT(6, 5); o[6].kind = PAWL_OUT_STARTED; o[6].started_at = T0 + 300;
  OUT(7, 5); o[7].started_at = T0 + 300; o[7].ended_at = T0 + 400;
  o[7].branches = "[\"big\"]";                                     /* fired */
  OUT(8, 6); o[8].started_at = T0 + 500;                           /* end not measured */
  OUT(9, 7); o[9].ended_at = T0 + 600;                             /* start not measured */
  OUT(10, 8); o[10].attempt = 3;                                   /* stale attempt */
  OUT(11, 1);                                                      /* the right attempt */
#undef OUT
  int rcs[12];
  for (int i = 0; i < 12; i++) rcs[i] = 99;
  if (pawl_finish(p, o, 12, rcs) != 0)
    unit_fail(__FILE__, __LINE__, "finish: %s", pawl_errmsg(p));
  static const int want_rc[12] = {0, PAWL_ELEASE, 0, 0, 0, PAWL_ELEASE,
                                  0, 0, 0, 0, PAWL_ELEASE, 0};
  for (int i = 0; i < 12; i++)
    if (rcs[i] != want_rc[i])
      unit_fail(__FILE__, __LINE__, "outcome %d: rc %d, want %d", i, rcs[i],
                want_rc[i]);
  static const struct {
    int state;
    int64_t started, finished;
  } want[N] = {
      {PAWL_SUCCEEDED, T0, T0 + 10},           /* start capped at the claim */
      {PAWL_SUCCEEDED, T0, T0 + 1000},         /* o[11]: claim's start, now */
      {PAWL_SUCCEEDED, T0 + 20, T0 + 25},      /* by its id */
      {PAWL_SUCCEEDED, T0 + 30, T0 + 40},      /* without a row key */
      {PAWL_SUCCEEDED, 0, T0 + 1000},          /* o[3]; the retry came late */
      {PAWL_SUCCEEDED, T0 + 300, T0 + 400},
      {PAWL_SUCCEEDED, T0 + 500, T0 + 1000},   /* end: the finish's now */
      {PAWL_SUCCEEDED, 0, T0 + 600},           /* claimed ahead, no start */
      {PAWL_RUNNING, 0, 0},                    /* the foreign key's row */
  };
  for (int i = 0; i < N; i++) {
    pawl_job_t *j = NULL;
    CHECK_OK(pawl_get(p, &jobs[i]->id, &j));
    if ((int)j->state != want[i].state ||
        (want[i].state == PAWL_SUCCEEDED &&
         (j->started_at != want[i].started || j->finished_at != want[i].finished)))
      unit_fail(__FILE__, __LINE__,
                "job %d: state %d started %lld finished %lld; want %d %lld %lld",
                i, j->state, (long long)(j->started_at - T0),
                (long long)(j->finished_at - T0), want[i].state,
                (long long)(want[i].started - T0),
                (long long)(want[i].finished - T0));
    pawl_job_free(j);
  }
  /* The branches that fired are kept with the job written in the run. */
  sqlite3_stmt *st;
  CHECK_INT(sqlite3_prepare_v2(hp_db(p), "SELECT count(*) FROM pawl_jobs WHERE "
                               "branches = '[\"big\"]' AND seq = ?1",
                               -1, &st, NULL),
            ==, SQLITE_OK);
  sqlite3_bind_int64(st, 1, jobs[5]->store_key);
  CHECK_INT(sqlite3_step(st), ==, SQLITE_ROW);
  CHECK_INT(sqlite3_column_int(st, 0), ==, 1);
  sqlite3_finalize(st);
  pawl_jobs_free(jobs, N);
  pawl_close(p);
}

/* Two outcomes of one attempt in a run of successes: the first one given
 * is the one written, whatever their row keys say, as when each is
 * written alone (the second finds the job ended: stale). The first names
 * another running job's row, the second the job's own; then the other
 * way round; then both the job's own. */
void test_sqlite_finish_run_repeat_first_wins(void) {
  for (int k = 0; k < 3; k++) {
    char name[64];
    snprintf(name, sizeof name, "finish_repeat_%d", k);
    pawl_t *p = hp_open(name);
    hp_enqueue(p, 4);
    pawl_job_t **jobs = NULL;
    CHECK_INT(hp_claim(p, 4, 0, &jobs), ==, 4);
    pawl_outcome_t o[4];
    memset(o, 0, sizeof o);
    for (int i = 0; i < 4; i++) {
      o[i].kind = PAWL_OUT_SUCCEEDED;
      o[i].id = jobs[0]->id;
      o[i].attempt = jobs[0]->attempt;
      o[i].store_key = jobs[0]->store_key;
    }
    o[0].result = "{\"first\":true}";
    o[1].result = "{\"second\":true}";
    if (k == 0) o[0].store_key = jobs[1]->store_key;
    if (k == 1) o[1].store_key = jobs[1]->store_key;
    /* Two more jobs' successes make it a run of four. */
    o[2].id = jobs[2]->id, o[2].attempt = jobs[2]->attempt;
    o[2].store_key = jobs[2]->store_key;
    o[3].id = jobs[3]->id, o[3].attempt = jobs[3]->attempt;
    o[3].store_key = jobs[3]->store_key;
    int rcs[4];
    CHECK_OK(pawl_finish(p, o, 4, rcs));
    CHECK_INT(rcs[0], ==, 0);
    CHECK_INT(rcs[1], ==, PAWL_ELEASE);
    CHECK_INT(rcs[2], ==, 0);
    CHECK_INT(rcs[3], ==, 0);
    pawl_job_t *j = NULL;
    CHECK_OK(pawl_get(p, &jobs[0]->id, &j));
    CHECK_INT(j->state, ==, PAWL_SUCCEEDED);
    CHECK_STR(j->result, "{\"first\":true}");
    pawl_job_free(j);
    CHECK_OK(pawl_get(p, &jobs[1]->id, &j));
    CHECK_INT(j->state, ==, PAWL_RUNNING); /* named by a key, not its id */
    pawl_job_free(j);
    pawl_jobs_free(jobs, 4);
    pawl_close(p);
  }
}
