/* recurring_bench.c: the tick of many recurring definitions that all fire
 * in the same second.
 *
 *   pawl_recurring_bench [URL] [N]   (default sqlite:/tmp/pawl_rec_bench.db,
 *                                     100,000 definitions)
 *
 * Makes N definitions "* * * * *" (in one transaction, not timed) on a
 * handle whose clock is injected, moves the clock to their next minute and
 * times the ticks (pawl__recurring_tick, batches of 500 definitions: one
 * read of the due ones through the partial index, then one transaction
 * that advances each and inserts its job) until all have fired: the work
 * of the tick lock's holder. Then checks that N jobs exist and that a
 * second tick makes none. Not run by the tests; bench/RESULTS.md records
 * figures. A PostgreSQL URL is emptied first (its pawl tables dropped). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <libpq-fe.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "handle.h"
#include "pawl.h"
#include "pawl_internal.h"

#define T0 INT64_C(1800000000000)

static _Atomic int64_t now_ms = T0 + 1000;
static int64_t bench_clock(void *d) {
  (void)d;
  return atomic_load(&now_ms);
}

sqlite3 *pawl__store_sqlite_db(store_t *st);
PGconn *pawl__store_postgres_conn(store_t *st);

static double mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
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

int main(int argc, char **argv) {
  const char *url = argc > 1 ? argv[1] : "sqlite:/tmp/pawl_rec_bench.db";
  long n = argc > 2 ? atol(argv[2]) : 100000;
  if (strncmp(url, "sqlite:", 7) == 0) {
    char wal[4200];
    unlink(url + 7);
    snprintf(wal, sizeof wal, "%s-wal", url + 7);
    unlink(wal);
    snprintf(wal, sizeof wal, "%s-shm", url + 7);
    unlink(wal);
  }
  pawl_options_t o;
  pawl_options_init(&o);
  o.db = url;
  o.create = 1;
  o.clock = bench_clock;
  o.node_id = "bench";
  pawl_t *p = NULL;
  char err[512];
  if (pawl_open(&p, &o, err, sizeof err)) {
    fprintf(stderr, "open: %s\n", err);
    return 1;
  }
  if (!pawl__store_sqlite_db(p->store)) {
    /* VACUUM on its own: a multi-statement string is one transaction,
     * which VACUUM refuses (and the DELETEs would go with it). */
    raw(p, "DELETE FROM pawl_recurring; DELETE FROM pawl_idempotency; "
           "DELETE FROM pawl_jobs");
    raw(p, "VACUUM ANALYZE");
  }
  double t = mono_s();
  raw(p, "BEGIN");
  for (long i = 0; i < n; i++) {
    char name[32];
    snprintf(name, sizeof name, "def%06ld", i);
    pawl_recurring_opts_t ro;
    pawl_recurring_opts_init(&ro);
    ro.expr = "* * * * *";
    ro.type = "tick";
    ro.payload = "{\"n\":1}";
    if (pawl_recurring_add(p, name, &ro)) {
      fprintf(stderr, "add: %s\n", pawl_errmsg(p));
      return 1;
    }
  }
  raw(p, "COMMIT");
  if (!pawl__store_sqlite_db(p->store)) raw(p, "ANALYZE");
  printf("%s: %ld definitions made in %.2f s\n", p->store->ops->name, n,
         mono_s() - t);
  atomic_store(&now_ms, T0 + 60000 + 200); /* all fire at T0 + 1 min */
  size_t total = 0;
  int ticks = 0;
  t = mono_s();
  for (;;) {
    size_t made = 0;
    int more = 0;
    if (pawl__recurring_tick(p, (size_t)n + 1, &made, &more, NULL)) {
      fprintf(stderr, "tick: %s\n", pawl_errmsg(p));
      return 1;
    }
    ticks++;
    total += made;
    if (!more || made == 0) break;
  }
  double dt = mono_s() - t;
  printf("tick of %ld definitions firing in the same second: %zu jobs in "
         "%.3f s (%d tick call%s), %.0f definitions/s, %.1f us each\n",
         n, total, dt, ticks, ticks == 1 ? "" : "s", (double)total / dt,
         dt * 1e6 / (double)(total ? total : 1));
  size_t again = 0;
  int more = 0;
  pawl__recurring_tick(p, (size_t)n + 1, &again, &more, NULL);
  t = mono_s();
  int64_t next = 0;
  for (int i = 0; i < 1000; i++)
    pawl__recurring_tick(p, (size_t)n + 1, &again, &more, &next);
  printf("an idle tick (nothing due): %.1f us\n", (mono_s() - t) * 1e3);
  if (total != (size_t)n || again != 0) {
    fprintf(stderr, "expected %ld jobs and none again, got %zu and %zu\n", n,
            total, again);
    return 1;
  }
  pawl_close(p);
  return 0;
}
