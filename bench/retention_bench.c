/* retention_bench.c: claims and completions while retention deletes old
 * finished jobs in the background, on SQLite or PostgreSQL.
 *
 * A program, not a test: it prints numbers and judges nothing.
 *
 *   pawl_retention_bench --db URL [--old N] [--window S] [--batch B]
 *                        [--pause MS] [--archive]
 *
 * Setup: the database gets N finished jobs (default 1,000,000) that ended
 * three days ago, written by plain SQL in bulk (the shape of a succeeded
 * row, with ids time ordered as UUIDv7s are: a random id would scatter
 * the deletes over the id index), so that the default policy (succeeded: 1 day) lets every one go.
 *
 * The worker: one handle running cycles of pawl_enqueue_many(100),
 * pawl_claim(100) and pawl_finish(100 successes), as fast as it can: jobs
 * per second of wall time is its throughput.
 * The sweep: a second handle (a sibling: on SQLite it shares the worker's
 * in-process write gate, as the host's poller does) on its own thread,
 * running the host's sweep step (pawl__retention_batch, the poller chore's
 * call) batch after batch with the chore's pause between them
 * (pawl__retention_pause: (100 - share) / share times the batch's time
 * (--share, default the policy's 5%), at least the
 * policy's pause), until the walk is done.
 *
 * The worker runs in windows of --window seconds (default 10), the sweep
 * off and on in turn, until the sweep has deleted the N jobs; the figure
 * is the worker's throughput in the "on" windows over the "off" ones. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <libpq-fe.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "handle.h"
#include "pawl.h"
#include "pawl_internal.h"

sqlite3 *pawl__store_sqlite_db(store_t *st);
PGconn *pawl__store_postgres_conn(store_t *st);

#define CYCLE 100
#define PAYLOAD "{\"to\":\"user@example.com\",\"template\":\"welcome\"}"

static double mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *fmt, const char *detail) {
  fprintf(stderr, "retention_bench: ");
  fprintf(stderr, fmt, detail);
  fprintf(stderr, "\n");
  exit(1);
}

/* N finished jobs that ended three days ago, in chunks of 100,000. */
static void fill_old(pawl_t *p, long n) {
  long long base = (long long)pawl_now(p) - 3LL * 86400000 - n;
  sqlite3 *db = pawl__store_sqlite_db(p->store);
  for (long done = 0; done < n; done += 100000) {
    long k = n - done < 100000 ? n - done : 100000;
    char sql[2048];
    if (db) {
      sqlite3_stmt *st = NULL;
      if (sqlite3_prepare_v2(
              db,
              "INSERT INTO pawl_jobs (id, type, queue, state, priority, rank, "
              "payload, tags, run_at, attempt, max_attempts, created_at, "
              "updated_at, started_at, finished_at, lease_owner, result, "
              "version) VALUES (?1, 'email.send', 'default', 2, 0, 0, '" PAYLOAD
              "', '[]', ?2, 1, 25, ?2, ?2, ?2, ?2, 'old-node', "
              "'{\"ok\":true}', 3)",
              -1, &st, NULL) != SQLITE_OK)
        die("fill: %s", sqlite3_errmsg(db));
      sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
      for (long i = done; i < done + k; i++) {
        long long at = base + i;
        pawl_id_t id;
        pawl_id_new(&id); /* random tail; the time prefix set below */
        for (int b = 0; b < 6; b++)
          id.bytes[b] = (unsigned char)(at >> (8 * (5 - b)));
        sqlite3_bind_blob(st, 1, id.bytes, 16, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, at);
        if (sqlite3_step(st) != SQLITE_DONE) die("fill: %s", sqlite3_errmsg(db));
        sqlite3_reset(st);
      }
      if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        die("fill: %s", sqlite3_errmsg(db));
      sqlite3_finalize(st);
    } else {
      snprintf(sql, sizeof sql,
               "INSERT INTO pawl_jobs (id, type, queue, state, priority, "
               "rank, payload, tags, run_at, attempt, max_attempts, "
               "created_at, updated_at, started_at, finished_at, "
               "lease_owner, result, version) SELECT (lpad(to_hex(%lld + i), "
               "12, '0') || '7' || substr(md5(i::text), 1, 3) || '8' || "
               "substr(md5(i::text), 4, 15))::uuid, 'email.send', 'default', "
               "2, 0, 0, '%s', '[]', pawl_ts(%lld + i), 1, 25, pawl_ts(%lld "
               "+ i), pawl_ts(%lld + i), pawl_ts(%lld + i), pawl_ts(%lld + "
               "i), 'old-node', '{\"ok\":true}', 3 FROM generate_series(%ld, "
               "%ld) AS i",
               base, PAYLOAD, base, base, base, base, base, done,
               done + k - 1);
      PGresult *r = PQexec(pawl__store_postgres_conn(p->store), sql);
      if (PQresultStatus(r) != PGRES_COMMAND_OK)
        die("fill: %s", PQresultErrorMessage(r));
      PQclear(r);
    }
  }
  if (!db) {
    PGresult *r = PQexec(pawl__store_postgres_conn(p->store),
                         "VACUUM ANALYZE pawl_jobs");
    PQclear(r);
  }
}

/* One worker cycle: enqueue, claim and finish CYCLE jobs. */
static void cycle(pawl_t *p) {
  pawl_enqueue_item_t items[CYCLE];
  for (int i = 0; i < CYCLE; i++)
    items[i] = (pawl_enqueue_item_t){"email.send", PAYLOAD, NULL};
  if (pawl_enqueue_many(p, items, CYCLE, NULL, NULL))
    die("enqueue: %s", pawl_errmsg(p));
  pawl_job_t **jobs = NULL;
  size_t n = 0;
  if (pawl_claim(p, NULL, CYCLE, &jobs, &n)) die("claim: %s", pawl_errmsg(p));
  pawl_outcome_t outs[CYCLE];
  for (size_t i = 0; i < n; i++)
    outs[i] = (pawl_outcome_t){.id = jobs[i]->id,
                               .attempt = jobs[i]->attempt,
                               .kind = PAWL_OUT_SUCCEEDED,
                               .result = "{\"ok\":true}",
                               .store_key = jobs[i]->store_key};
  if (n && pawl_finish(p, outs, n, NULL)) die("finish: %s", pawl_errmsg(p));
  pawl_jobs_free(jobs, n);
}

typedef struct sweep {
  pawl_t *p;
  const pawl_retention_t *pol;
  atomic_int done;
  atomic_int active;         /* the main thread turns the sweep on and off */
  int64_t removed, scanned, batches;
  double seconds;
} sweep_t;

static void *sweep_main(void *arg) {
  sweep_t *s = arg;
  pawl__retain_cursor_t c;
  memset(&c, 0, sizeof c);
  double t0 = mono_s();
  while (!c.done) {
    if (!atomic_load(&s->active)) {
      struct timespec ts = {0, 5 * 1000000L};
      nanosleep(&ts, NULL);
      continue;
    }
    double b0 = mono_s();
    if (pawl__retention_batch(s->p, s->pol, &c)) die("sweep: %s", pawl_errmsg(s->p));
    s->batches++;
    int64_t pause = pawl__retention_pause(s->pol,
                                          (int64_t)((mono_s() - b0) * 1000));
    if (!c.done && pause) {
      struct timespec ts = {(time_t)(pause / 1000),
                            (long)(pause % 1000) * 1000000L};
      nanosleep(&ts, NULL);
    }
  }
  s->seconds = mono_s() - t0; /* off windows included */
  s->removed = c.removed;
  s->scanned = c.scanned;
  atomic_store(&s->done, 1);
  return NULL;
}

/* The worker for `seconds`, or until *stop (may be NULL): jobs done. */
static long work(pawl_t *p, double seconds, atomic_int *stop,
                 double *elapsed) {
  double t0 = mono_s(), t;
  long jobs = 0;
  do {
    cycle(p);
    jobs += CYCLE;
    t = mono_s() - t0;
  } while (t < seconds && !(stop && atomic_load(stop)));
  *elapsed = t;
  return jobs;
}

int main(int argc, char **argv) {
  const char *url = NULL;
  long old = 1000000;
  double window = 10;
  int fill_only = 0; /* set up only (for `pawl cleanup` by hand) */
  pawl_retention_t pol;
  pawl_retention_init(&pol);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--db") && v) url = v, i++;
    else if (!strcmp(a, "--old") && v) old = atol(v), i++;
    else if (!strcmp(a, "--window") && v) window = atof(v), i++;
    else if (!strcmp(a, "--batch") && v) pol.batch = (size_t)atol(v), i++;
    else if (!strcmp(a, "--pause") && v) pol.pause_ms = atol(v), i++;
    else if (!strcmp(a, "--share") && v) pol.share_pct = atoi(v), i++;
    else if (!strcmp(a, "--archive")) pol.archive = 1;
    else if (!strcmp(a, "--fill-only")) fill_only = 1;
    else {
      fprintf(stderr,
              "usage: pawl_retention_bench --db URL [--old N] [--window S] "
              "[--batch B] [--pause MS] [--share PCT] [--archive] [--fill-only]\n");
      return 2;
    }
  }
  if (!url || old < 0 || window <= 0) die("%s", "--db URL is required");
  pawl_options_t o;
  pawl_options_init(&o);
  o.db = url;
  o.node_id = "bench";
  pawl_t *p = NULL;
  char err[512];
  if (pawl_open(&p, &o, err, sizeof err)) die("open: %s", err);
  pawl_t *q = NULL;
  if (pawl__open_sibling(p, NULL, &q, err, sizeof err)) die("sibling: %s", err);
  struct utsname u;
  uname(&u);
  printf("retention_bench: %s, %ld old finished jobs, batch %zu, pause %lld "
         "ms, share %d%%%s; %s %s, %ld cores\n",
         pawl__store_name(p), old, pol.batch, (long long)pol.pause_ms,
         pol.share_pct,
         pol.archive ? ", archive" : "", u.sysname, u.release,
         sysconf(_SC_NPROCESSORS_ONLN));
  double t0 = mono_s();
  fill_old(p, old);
  printf("setup: %.1f s\n", mono_s() - t0);
  fflush(stdout);
  if (fill_only) {
    pawl_close(q);
    pawl_close(p);
    return 0;
  }
  for (int i = 0; i < 20; i++) cycle(p); /* warm up */
  /* Windows of `window` seconds, the sweep off and on in turn, until it
   * is done: each pair of neighbours sees the same table and the same
   * machine, so the drift of either (the worker's own finished jobs pile
   * up; other programs come and go) touches both sides alike. */
  sweep_t s = {.p = q, .pol = &pol};
  pthread_t th;
  pthread_create(&th, NULL, sweep_main, &s);
  enum { MAXW = 100000 };
  static double rate[MAXW];
  int nw = 0;
  long jobs[2] = {0, 0};
  double secs[2] = {0, 0};
  int windows[2] = {0, 0};
  for (int k = 0; !atomic_load(&s.done) || k % 2 == 1; k++) {
    int on = k % 2;
    atomic_store(&s.active, on);
    double e;
    /* An off window after the sweep ended closes the last pair. */
    long n = work(p, window, on ? &s.done : NULL, &e);
    jobs[on] += n;
    secs[on] += e;
    windows[on]++;
    if (nw < MAXW) rate[nw++] = (double)n / e;
    printf("  window %2d sweep %s: %8.0f jobs/s\n", k, on ? "on " : "off",
           (double)n / e);
    fflush(stdout);
  }
  pthread_join(th, NULL);
  double off = (double)jobs[0] / secs[0], on = (double)jobs[1] / secs[1];
  printf("worker, sweep off: %8.0f jobs/s (%d windows, %.1f s)\n", off,
         windows[0], secs[0]);
  printf("worker, sweep on:  %8.0f jobs/s (%d windows, %.1f s)\n", on,
         windows[1], secs[1]);
  printf("sweep: removed %lld jobs (%lld looked at) in %lld batches, %.0f "
         "jobs/s while on\n",
         (long long)s.removed, (long long)s.scanned, (long long)s.batches,
         (double)s.removed / secs[1]);
  printf("with sweep / without: %.1f%%\n", 100.0 * on / off);
  /* Each on window against the mean of its two neighbours (off), the
   * median of those ratios: robust to a window that another program on
   * the machine slowed down. */
  static double ratio[MAXW / 2 + 1];
  int nr = 0;
  for (int i = 1; i + 1 < nw; i += 2)
    ratio[nr++] = rate[i] / ((rate[i - 1] + rate[i + 1]) / 2);
  for (int i = 1; i < nr; i++) /* insertion sort: a few hundred */
    for (int j = i; j > 0 && ratio[j - 1] > ratio[j]; j--) {
      double t = ratio[j];
      ratio[j] = ratio[j - 1];
      ratio[j - 1] = t;
    }
  if (nr)
    printf("on window / its neighbours, median of %d: %.1f%% (quartiles "
           "%.1f%%, %.1f%%)\n",
           nr, 100 * ratio[nr / 2], 100 * ratio[nr / 4],
           100 * ratio[(3 * nr) / 4]);
  pawl_close(q);
  pawl_close(p);
  return 0;
}
