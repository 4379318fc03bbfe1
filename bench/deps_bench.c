/* deps_bench.c: the release of a fan-in: one child after N
 * parents, the parents finished in batches.
 *
 *   pawl_deps_bench [URL] [N] [BATCH]   (default sqlite:/tmp/pawl_deps_bench.db,
 *                                        10,000 parents, batches of 1,000)
 *
 * Enqueues N parents (one transaction) and, in the "join" run, one child
 * after all of them (when = done); then claims and finishes the parents
 * BATCH at a time (pawl_claim, pawl_finish), timing the finishes, and
 * checks that the child became pending with the last batch and not
 * before. The "plain" run does the same without the child. On SQLite it
 * also counts the statements the finishes ran (sqlite3_trace_v2): the
 * join costs a few statements per finished batch, whatever N. Not run by
 * the tests; bench/RESULTS.md records figures. A database is emptied
 * first (its jobs deleted; PostgreSQL's vacuumed). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <libpq-fe.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "handle.h"
#include "pawl.h"
#include "pawl_internal.h"

sqlite3 *pawl__store_sqlite_db(store_t *st);
PGconn *pawl__store_postgres_conn(store_t *st);

static double mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long statements;
static int count_stmt(unsigned type, void *ctx, void *p, void *x) {
  (void)type, (void)ctx, (void)p, (void)x;
  statements++;
  return 0;
}

static void raw(pawl_t *p, const char *sql) {
  sqlite3 *db = pawl__store_sqlite_db(p->store);
  if (db) {
    sqlite3_exec(db, sql, 0, 0, 0);
    return;
  }
  PGresult *r = PQexec(pawl__store_postgres_conn(p->store), sql);
  PQclear(r);
}

static void die(pawl_t *p, const char *what) {
  fprintf(stderr, "%s: %s\n", what, p ? pawl_errmsg(p) : "?");
  exit(1);
}

static void run(const char *url, long n, long batch, int join) {
  pawl_options_t o;
  pawl_options_init(&o);
  o.db = url;
  o.node_id = "bench";
  o.create = 1;
  pawl_t *p = NULL;
  char err[512];
  if (pawl_open(&p, &o, err, sizeof err)) {
    fprintf(stderr, "open %s: %s\n", url, err);
    exit(1);
  }
  raw(p, "DELETE FROM pawl_deps");
  raw(p, "DELETE FROM pawl_jobs");
  /* PostgreSQL: the dead rows of the run before gone, so that each run
   * starts from the same table. */
  if (!pawl__store_sqlite_db(p->store)) {
    raw(p, "VACUUM ANALYZE pawl_jobs");
    raw(p, "VACUUM ANALYZE pawl_deps");
  }
  pawl_enqueue_item_t *items = calloc((size_t)n, sizeof *items);
  pawl_id_t *ids = calloc((size_t)n, sizeof *ids);
  for (long i = 0; i < n; i++) items[i] = (pawl_enqueue_item_t){"parent", "{}", NULL};
  if (pawl_enqueue_many(p, items, (size_t)n, ids, NULL)) die(p, "enqueue parents");
  pawl_id_t child;
  double t0 = mono_s();
  if (join) {
    pawl_enqueue_opts_t co;
    pawl_enqueue_opts_init(&co);
    co.after = ids;
    co.nafter = (size_t)n;
    co.when = "done";
    if (pawl_enqueue(p, "join", "{}", &co, &child, NULL)) die(p, "enqueue child");
  }
  double t_link = mono_s() - t0;
  sqlite3 *db = pawl__store_sqlite_db(p->store);
  pawl_claim_opts_t cl = {0};
  double finishing = 0;
  long batches = 0, stmts = 0;
  pawl_outcome_t *outs = calloc((size_t)batch, sizeof *outs);
  for (;;) {
    pawl_job_t **jobs = NULL;
    size_t got = 0;
    if (pawl_claim(p, &cl, (size_t)batch, &jobs, &got)) die(p, "claim");
    size_t np = 0;
    for (size_t i = 0; i < got; i++)
      if (strcmp(jobs[i]->type, "parent") == 0)
        outs[np++] = (pawl_outcome_t){.id = jobs[i]->id,
                                      .attempt = jobs[i]->attempt,
                                      .kind = PAWL_OUT_SUCCEEDED,
                                      .store_key = jobs[i]->store_key};
    if (np < got) {
      if (!join || np) die(NULL, "the child was claimed before its last parent ended");
      pawl_jobs_free(jobs, got);
      break; /* the child, after every parent */
    }
    if (!got) {
      if (join) die(NULL, "the child never became pending");
      break;
    }
    statements = 0;
    if (db) sqlite3_trace_v2(db, SQLITE_TRACE_STMT, count_stmt, NULL);
    double s = mono_s();
    if (pawl_finish(p, outs, np, NULL)) die(p, "finish");
    finishing += mono_s() - s;
    if (db) sqlite3_trace_v2(db, 0, NULL, NULL);
    stmts += statements;
    batches++;
    pawl_jobs_free(jobs, got);
  }
  printf("%-5s %-10s parents %6ld  batch %5ld  link %.3f s  finish %.3f s "
         "(%.2f ms a batch)",
         join ? "join" : "plain", strncmp(url, "sqlite:", 7) ? "postgres" : "sqlite",
         n, batch, t_link, finishing, 1000 * finishing / (double)batches);
  if (db) printf("  statements %.1f a batch", (double)stmts / (double)batches);
  printf("\n");
  free(outs);
  free(items);
  free(ids);
  pawl_close(p);
}

int main(int argc, char **argv) {
  const char *url = argc > 1 ? argv[1] : "sqlite:/tmp/pawl_deps_bench.db";
  long n = argc > 2 ? atol(argv[2]) : 10000;
  long batch = argc > 3 ? atol(argv[3]) : 1000;
  if (n < 1 || n > PAWL_AFTER_MAX || batch < 1 || batch > 1000) {
    fprintf(stderr, "N: 1..%d, BATCH: 1..1000\n", PAWL_AFTER_MAX);
    return 2;
  }
  for (int r = 0; r < 2; r++) {
    run(url, n, batch, 0);
    run(url, n, batch, 1);
  }
  return 0;
}
