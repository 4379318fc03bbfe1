/* store_bench.c: throughput of the SQLite store, against a plain-SQL ceiling.
 *
 * A program, not a test: it prints numbers and judges nothing. Scenarios:
 *
 *   enqueue      pawl_enqueue_many in batches of 1,000 per transaction, and
 *                one pawl_enqueue per transaction;
 *   claim        pawl_claim of B jobs then pawl_finish of B successes in one
 *                call, B = 1, 10, 100, on a queue of pending jobs;
 *   claim+hist   the same with a million succeeded jobs kept as history.
 *
 * Each scenario also runs a "ceiling": the store's exact SQL text (the
 * macros of sqlite_sql.h, never retyped here) stepped straight through the
 * sqlite3 C API on the store's own connection, in the same transaction
 * shape, without the store's C layer (no pawl_job_t, no checks of the
 * outcomes). store/ceiling is then the share of the achievable speed the C
 * layer keeps; the SQL itself is the same on both sides, but for the
 * successes of a finish: the store writes a run of them with one
 * statement whose per-row values come from its C layer
 * (SQLITE_SQL_SUCCEED_MANY), which plain SQL cannot call, so the claim's
 * ceiling is the plain loop of one UPDATE per success (SUCCEED_SEQ, the
 * store's statement for a success alone), and the store may pass it.
 *
 * Every measurement uses a fresh database file in a temporary directory
 * ($TMPDIR or /tmp), copied from a template built once so that a million
 * rows of history are not rebuilt for every run, and removed afterwards.
 * Before each claim scenario's pair of measurements, a short unmeasured run
 * warms up (see main() for why).
 * Each measurement is repeated --runs times; the tables show the median and
 * the range of jobs per second of wall time, and, because the machine may be
 * shared, of jobs per second of this process's CPU time. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>

#include "pawl.h"
#include "handle.h"
#include "sqlite_sql.h"

/* The store's connection (stores/sqlite/store.c, internal). */
sqlite3 *pawl__store_sqlite_db(store_t *st);

/* What every job carries: a small, realistic payload and result. */
#define BENCH_TYPE "email.send"
#define BENCH_PAYLOAD                                                          \
  "{\"to\":\"user@example.com\",\"template\":\"welcome\",\"user_id\":12345}"
#define BENCH_RESULT "{\"ok\":true,\"ms\":12}"
#define BENCH_NODE "bench-node"
#define BENCH_PRINCIPAL "bench"
#define BENCH_LEASE_MS 30000
#define ENQ_BATCH 1000 /* jobs per pawl_enqueue_many transaction */

/* ---- small helpers ------------------------------------------------------ */

/* The temporary directory, "" until made; short enough that every path
 * built from it fits in PATH_MAX. */
static char g_dir[1024];

/* Removes every file we made in g_dir and the directory itself: runs at
 * exit, so a failed run does not leave a gigabyte of databases behind. */
static void cleanup_dir(void) {
  if (!g_dir[0]) return;
  DIR *d = opendir(g_dir);
  if (d) {
    struct dirent *e;
    char path[PATH_MAX + 256];
    while ((e = readdir(d)) != NULL) {
      if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
      snprintf(path, sizeof path, "%s/%s", g_dir, e->d_name);
      unlink(path);
    }
    closedir(d);
  }
  rmdir(g_dir);
  g_dir[0] = 0;
}

static void die(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "pawl_store_bench: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  exit(1); /* cleanup_dir runs from atexit */
}

static void *xcalloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size);
  if (!p) die("out of memory");
  return p;
}

static double mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One measurement of a loop over n jobs. The machine may be shared, so
 * besides jobs per second of wall time it keeps jobs per second of this
 * process's CPU time (what the code would do with a core to itself, I/O
 * waits excluded) and the share of the wall time spent on a CPU. */
typedef struct sample {
  double rate, cpu_rate, cpu_share;
} sample_t;

typedef struct bench_clock {
  double wall, cpu;
} bench_clock_t;

static double cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static bench_clock_t clock_start(void) {
  return (bench_clock_t){mono_s(), cpu_s()};
}

static sample_t clock_stop(bench_clock_t t0, size_t n) {
  double wall = mono_s() - t0.wall, cpu = cpu_s() - t0.cpu;
  return (sample_t){(double)n / wall, (double)n / cpu, cpu / wall};
}

/* Wall-clock ms, as pawl__store_now() reads it when no clock is injected: the
 * ceiling pays for the same clock reads as the store. */
static int64_t wall_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void db_path(char *out, size_t len, const char *name) {
  snprintf(out, len, "%s/%s.db", g_dir, name);
}

static void remove_db(const char *path) {
  char side[PATH_MAX + 8];
  unlink(path);
  snprintf(side, sizeof side, "%s-wal", path);
  unlink(side);
  snprintf(side, sizeof side, "%s-shm", path);
  unlink(side);
}

/* Copies a closed database file. copy_file_range keeps the copy in the
 * kernel; read/write is the fallback where it is not supported. */
static void copy_file(const char *src, const char *dst) {
  int in = open(src, O_RDONLY);
  if (in < 0) die("open %s: %s", src, strerror(errno));
  int out = open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (out < 0) die("create %s: %s", dst, strerror(errno));
  struct stat sb;
  if (fstat(in, &sb) != 0) die("stat %s: %s", src, strerror(errno));
  off_t left = sb.st_size;
  while (left > 0) {
    ssize_t k = copy_file_range(in, NULL, out, NULL, (size_t)left, 0);
    if (k <= 0) break;
    left -= k;
  }
  if (left > 0) {
    /* Not supported here (or a short copy): finish with plain I/O from
     * where copy_file_range left both offsets. */
    static char buf[1 << 20];
    ssize_t k;
    while ((k = read(in, buf, sizeof buf)) > 0)
      if (write(out, buf, (size_t)k) != k)
        die("write %s: %s", dst, strerror(errno));
    if (k < 0) die("read %s: %s", src, strerror(errno));
  }
  close(in);
  /* Flush now: otherwise the kernel writes a copied gigabyte back while the
   * next measurement runs, and its checkpoints wait behind it. */
  if (fdatasync(out) != 0) die("sync %s: %s", dst, strerror(errno));
  if (close(out) != 0) die("close %s: %s", dst, strerror(errno));
}

/* Copies a template database (and its WAL, if one was left) to `dst`. */
static void copy_db(const char *src, const char *dst) {
  char s2[PATH_MAX + 8], d2[PATH_MAX + 8];
  remove_db(dst);
  copy_file(src, dst);
  snprintf(s2, sizeof s2, "%s-wal", src);
  snprintf(d2, sizeof d2, "%s-wal", dst);
  if (access(s2, F_OK) == 0) copy_file(s2, d2);
}

/* Both sides run as pawl runs in production (the worker host): commits do
 * not checkpoint the WAL; a thread of its own does, every 50 ms. */
static pawl_t *open_pawl(const char *path) {
  char url[PATH_MAX + 16], err[512];
  snprintf(url, sizeof url, "sqlite:%s", path);
  pawl_options_t o;
  pawl_options_init(&o);
  o.db = url;
  o.node_id = BENCH_NODE;
  o.principal = BENCH_PRINCIPAL;
  o.lease_ms = BENCH_LEASE_MS;
  o.manual_checkpoint = 1;
  pawl_t *p = NULL;
  int rc = pawl_open(&p, &o, err, sizeof err);
  if (rc) die("pawl_open %s: %s", path, err);
  return p;
}

typedef struct checkpointer {
  pthread_t thread;
  pawl_t *p;
  _Atomic int stop;
} checkpointer_t;

static void *checkpointer_main(void *arg) {
  checkpointer_t *c = arg;
  while (!atomic_load(&c->stop)) {
    struct timespec ts = {0, 50 * 1000000};
    nanosleep(&ts, NULL);
    pawl_checkpoint(c->p);
  }
  return NULL;
}

static checkpointer_t *checkpointer_start(const char *path) {
  checkpointer_t *c = xcalloc(1, sizeof *c);
  c->p = open_pawl(path);
  if (pthread_create(&c->thread, NULL, checkpointer_main, c) != 0)
    die("pthread_create");
  return c;
}

static void checkpointer_stop(checkpointer_t *c) {
  atomic_store(&c->stop, 1);
  pthread_join(c->thread, NULL);
  pawl_close(c->p);
  free(c);
}

static sqlite3_stmt *prepare(sqlite3 *db, const char *sql) {
  sqlite3_stmt *st = NULL;
  /* PERSISTENT, as the store prepares its statements. */
  int rc =
      sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL);
  if (rc != SQLITE_OK) die("prepare \"%.60s...\": %s", sql, sqlite3_errmsg(db));
  return st;
}

/* Steps a statement that returns no rows, then resets it. */
static void exec_stmt(sqlite3 *db, sqlite3_stmt *st, const char *what) {
  int rc = sqlite3_step(st);
  sqlite3_reset(st);
  if (rc != SQLITE_DONE) die("%s: %s", what, sqlite3_errmsg(db));
}

static int64_t query_int(sqlite3 *db, const char *sql) {
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
    die("prepare \"%s\": %s", sql, sqlite3_errmsg(db));
  if (sqlite3_step(st) != SQLITE_ROW) die("%s: %s", sql, sqlite3_errmsg(db));
  int64_t v = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  return v;
}

static int64_t age_boost(pawl_t *p) {
  int64_t ms = 0;
  if (p->store->ops->settings.age_boost(p->store, &ms) != 0)
    die("read age boost: %s", p->store->errmsg);
  return ms;
}

/* ---- enqueue ------------------------------------------------------------ */

/* Each measured side is a function of its own, never inlined, so that a
 * profiler can attribute it: valgrind --tool=callgrind
 * --toggle-collect=claim_store (or claim_ceiling, enqueue_store, ...). */
#define BENCH_SIDE __attribute__((noinline))

/* Store: n jobs, `batch` per transaction (1: pawl_enqueue). */
BENCH_SIDE static sample_t enqueue_store(const char *path, size_t n,
                                         size_t batch) {
  remove_db(path);
  pawl_t *p = open_pawl(path);
  pawl_enqueue_item_t *items = xcalloc(batch, sizeof *items);
  pawl_id_t *ids = xcalloc(batch, sizeof *ids);
  int *status = xcalloc(batch, sizeof *status);
  for (size_t i = 0; i < batch; i++)
    items[i] = (pawl_enqueue_item_t){BENCH_TYPE, BENCH_PAYLOAD, NULL};
  checkpointer_t *ck = checkpointer_start(path);
  bench_clock_t t0 = clock_start();
  for (size_t done = 0; done < n;) {
    size_t k = n - done < batch ? n - done : batch;
    int rc = k == 1
                 ? pawl_enqueue(p, BENCH_TYPE, BENCH_PAYLOAD, NULL, ids, status)
                 : pawl_enqueue_many(p, items, k, ids, status);
    if (rc) die("enqueue: %s", pawl_errmsg(p));
    done += k;
  }
  sample_t r = clock_stop(t0, n);
  checkpointer_stop(ck);
  int64_t rows = query_int(pawl__store_sqlite_db(p->store),
                           "SELECT count(*) FROM pawl_jobs WHERE state = 0");
  if (rows != (int64_t)n)
    die("enqueue: %lld rows pending, expected %zu", (long long)rows, n);
  free(items);
  free(ids);
  free(status);
  pawl_close(p);
  remove_db(path);
  return r;
}

/* Ceiling: SQLITE_SQL_INSERT bound with what the store binds for a job with
 * default options, `batch` rows per BEGIN IMMEDIATE/COMMIT. */
BENCH_SIDE static sample_t enqueue_ceiling(const char *path, size_t n,
                                           size_t batch) {
  remove_db(path);
  pawl_t *p = open_pawl(path);
  sqlite3 *db = pawl__store_sqlite_db(p->store);
  int64_t boost = age_boost(p);
  sqlite3_stmt *begin = prepare(db, "BEGIN IMMEDIATE");
  sqlite3_stmt *commit = prepare(db, "COMMIT");
  sqlite3_stmt *ins = prepare(db, SQLITE_SQL_INSERT);
  checkpointer_t *ck = checkpointer_start(path);
  bench_clock_t t0 = clock_start();
  for (size_t done = 0; done < n;) {
    size_t k = n - done < batch ? n - done : batch;
    int64_t now = wall_ms();
    exec_stmt(db, begin, "begin");
    for (size_t i = 0; i < k; i++) {
      pawl_id_t id;
      pawl_id_new(&id);
      sqlite3_bind_blob(ins, 1, id.bytes, 16, SQLITE_STATIC);
      sqlite3_bind_text(ins, 2, BENCH_TYPE, -1, SQLITE_STATIC);
      sqlite3_bind_text(ins, 3, "default", -1, SQLITE_STATIC);
      sqlite3_bind_int(ins, 4, PAWL_PENDING);
      sqlite3_bind_int(ins, 5, 0);
      sqlite3_bind_int64(ins, 6, store_rank(0, now, boost));
      sqlite3_bind_text(ins, 7, BENCH_PAYLOAD, -1, SQLITE_STATIC);
      sqlite3_bind_null(ins, 8);
      sqlite3_bind_text(ins, 9, "[]", -1, SQLITE_STATIC);
      sqlite3_bind_int64(ins, 10, now);
      sqlite3_bind_int(ins, 11, 25);
      sqlite3_bind_int(ins, 12, 0);
      sqlite3_bind_null(ins, 13);
      sqlite3_bind_null(ins, 14);
      sqlite3_bind_null(ins, 15);
      sqlite3_bind_text(ins, 16, BENCH_PRINCIPAL, -1, SQLITE_STATIC);
      sqlite3_bind_int64(ins, 17, now);
      sqlite3_bind_null(ins, 18); /* ordering key */
      sqlite3_bind_null(ins, 19); /* resource */
      sqlite3_bind_null(ins, 20); /* batch */
      sqlite3_bind_int(ins, 21, 0); /* depth: enqueued by no job */
      sqlite3_bind_int(ins, 22, 0); /* early: due now */
      exec_stmt(db, ins, "insert");
    }
    exec_stmt(db, commit, "commit");
    done += k;
  }
  sample_t r = clock_stop(t0, n);
  checkpointer_stop(ck);
  sqlite3_finalize(begin);
  sqlite3_finalize(commit);
  sqlite3_finalize(ins);
  int64_t rows =
      query_int(db, "SELECT count(*) FROM pawl_jobs WHERE state = 0");
  if (rows != (int64_t)n)
    die("enqueue ceiling: %lld rows, expected %zu", (long long)rows, n);
  pawl_close(p);
  remove_db(path);
  return r;
}

/* ---- claim + complete --------------------------------------------------- */

/* Checks that a claim run left nothing running and took exactly `done` of
 * the template's `pending` jobs. Both counts walk partial indexes, so this
 * stays cheap with a million rows of history. */
static void check_claimed(sqlite3 *db, size_t pending, size_t done) {
  int64_t running =
      query_int(db, "SELECT count(*) FROM pawl_jobs WHERE state = 1");
  int64_t left =
      query_int(db, "SELECT count(*) FROM pawl_jobs WHERE state = 0");
  if (running != 0 || left != (int64_t)(pending - done))
    die("after claims: %lld running, %lld pending, expected 0 and %zu",
        (long long)running, (long long)left, pending - done);
}

/* Store: claim `batch`, finish them as succeeded in one pawl_finish, until
 * `total` jobs are done; on a copy of `tmpl` holding `pending` jobs. */
BENCH_SIDE static sample_t claim_store(const char *tmpl, const char *path,
                                       size_t pending, size_t batch,
                                       size_t total) {
  copy_db(tmpl, path);
  pawl_t *p = open_pawl(path);
  pawl_outcome_t *outs = xcalloc(batch, sizeof *outs);
  int *rcs = xcalloc(batch, sizeof *rcs);
  checkpointer_t *ck = checkpointer_start(path);
  bench_clock_t t0 = clock_start();
  for (size_t done = 0; done < total;) {
    size_t want = total - done < batch ? total - done : batch;
    pawl_job_t **jobs = NULL;
    size_t n = 0;
    if (pawl_claim(p, NULL, want, &jobs, &n)) die("claim: %s", pawl_errmsg(p));
    if (n != want) die("claim: got %zu jobs, wanted %zu", n, want);
    for (size_t i = 0; i < n; i++)
      outs[i] = (pawl_outcome_t){.id = jobs[i]->id,
                                 .attempt = jobs[i]->attempt,
                                 .kind = PAWL_OUT_SUCCEEDED,
                                 .result = BENCH_RESULT,
                                 .store_key = jobs[i]->store_key};
    if (pawl_finish(p, outs, n, rcs)) die("finish: %s", pawl_errmsg(p));
    for (size_t i = 0; i < n; i++)
      if (rcs[i]) die("finish: job %zu: %s", i, pawl_err_name(rcs[i]));
    pawl_jobs_free(jobs, n);
    done += n;
  }
  sample_t r = clock_stop(t0, total);
  checkpointer_stop(ck);
  check_claimed(pawl__store_sqlite_db(p->store), pending, total);
  free(outs);
  free(rcs);
  pawl_close(p);
  remove_db(path);
  return r;
}

/* Ceiling: SQLITE_SQL_CLAIM then SQLITE_SQL_CLAIM_TAKE in BEGIN
 * IMMEDIATE/COMMIT, reading only the seq, id and attempt of each picked
 * row; then one SQLITE_SQL_SUCCEED_SEQ per job in a second BEGIN
 * IMMEDIATE/COMMIT, as sq_claim() does, and sq_finish() for a success
 * alone (a run of them is one SUCCEED_MANY: see the file's head). It runs
 * on the store's
 * connection, so the pragmas and open flags are the store's by construction
 * (WAL, synchronous=NORMAL, foreign_keys=ON, temp_store=MEMORY, NOMUTEX). */
BENCH_SIDE static sample_t claim_ceiling(const char *tmpl, const char *path,
                                         size_t pending, size_t batch,
                                         size_t total) {
  copy_db(tmpl, path);
  pawl_t *p = open_pawl(path);
  sqlite3 *db = pawl__store_sqlite_db(p->store);
  sqlite3_stmt *begin = prepare(db, "BEGIN IMMEDIATE");
  sqlite3_stmt *commit = prepare(db, "COMMIT");
  sqlite3_stmt *claim = prepare(db, SQLITE_SQL_CLAIM);
  sqlite3_stmt *take = prepare(db, SQLITE_SQL_CLAIM_TAKE);
  sqlite3_stmt *succeed = prepare(db, SQLITE_SQL_SUCCEED_SEQ);
  /* The picked columns are SQLITE_JOB_COLS, whose order the store owns:
   * find the ones we read by name. */
  int col_seq = -1, col_id = -1, col_attempt = -1;
  for (int i = 0; i < sqlite3_column_count(claim); i++) {
    const char *name = sqlite3_column_name(claim, i);
    if (strcmp(name, "seq") == 0)
      col_seq = i;
    else if (strcmp(name, "id") == 0)
      col_id = i;
    else if (strcmp(name, "attempt") == 0)
      col_attempt = i;
  }
  if (col_seq < 0 || col_id < 0 || col_attempt < 0)
    die("claim: no seq, id or attempt column");
  struct held {
    int64_t seq;
    int attempt;
    pawl_id_t id;
  } *held = xcalloc(batch, sizeof *held);
  /* The picked seqs as CLAIM_TAKE takes them: [seq,...]. */
  size_t cap = batch * 24 + 16;
  char *seqs = xcalloc(cap, 1);
  pawl_id_t token;
  pawl_id_new(&token);
  checkpointer_t *ck = checkpointer_start(path);
  bench_clock_t t0 = clock_start();
  for (size_t done = 0; done < total;) {
    size_t want = total - done < batch ? total - done : batch, n = 0;
    int64_t now = wall_ms();
    exec_stmt(db, begin, "begin");
    sqlite3_bind_int64(claim, 1, now);
    sqlite3_bind_int64(claim, 2, (sqlite3_int64)want);
    int rc;
    size_t len = 0;
    seqs[len++] = '[';
    while ((rc = sqlite3_step(claim)) == SQLITE_ROW && n < want) {
      held[n].seq = sqlite3_column_int64(claim, col_seq);
      held[n].attempt = sqlite3_column_int(claim, col_attempt) + 1;
      memcpy(held[n].id.bytes, sqlite3_column_blob(claim, col_id), 16);
      len += (size_t)snprintf(seqs + len, cap - len, "%s%lld", n ? "," : "",
                              (long long)held[n].seq);
      n++;
    }
    seqs[len++] = ']';
    sqlite3_reset(claim);
    if (rc != SQLITE_DONE) die("claim: %s", sqlite3_errmsg(db));
    sqlite3_bind_int64(take, 1, now);
    sqlite3_bind_text(take, 2, BENCH_NODE, -1, SQLITE_STATIC);
    sqlite3_bind_blob(take, 3, token.bytes, 16, SQLITE_STATIC);
    sqlite3_bind_int64(take, 4, now + BENCH_LEASE_MS);
    sqlite3_bind_text(take, 5, seqs, (int)len, SQLITE_STATIC);
    sqlite3_bind_int64(take, 6, now); /* every job starts now */
    exec_stmt(db, take, "take");
    if ((size_t)sqlite3_changes(db) != n) die("take: rows changed under us");
    exec_stmt(db, commit, "commit claim");
    if (n != want) die("claim ceiling: got %zu jobs, wanted %zu", n, want);

    now = wall_ms();
    exec_stmt(db, begin, "begin");
    for (size_t i = 0; i < n; i++) {
      sqlite3_bind_text(succeed, 1, BENCH_RESULT, -1, SQLITE_STATIC);
      sqlite3_bind_int64(succeed, 2, now);
      sqlite3_bind_blob(succeed, 3, held[i].id.bytes, 16, SQLITE_STATIC);
      sqlite3_bind_blob(succeed, 4, token.bytes, 16, SQLITE_STATIC);
      sqlite3_bind_int(succeed, 5, held[i].attempt);
      sqlite3_bind_int64(succeed, 6, held[i].seq);
      exec_stmt(db, succeed, "succeed");
      if (sqlite3_changes(db) != 1) die("succeed: lease lost");
    }
    exec_stmt(db, commit, "commit finish");
    done += n;
  }
  sample_t r = clock_stop(t0, total);
  checkpointer_stop(ck);
  sqlite3_finalize(begin);
  sqlite3_finalize(commit);
  sqlite3_finalize(claim);
  sqlite3_finalize(take);
  sqlite3_finalize(succeed);
  check_claimed(db, pending, total);
  free(held);
  free(seqs);
  pawl_close(p);
  remove_db(path);
  return r;
}

/* ---- templates ---------------------------------------------------------- */

/* `n` pending jobs through the public API, ENQ_BATCH per transaction. */
static void enqueue_pending(pawl_t *p, size_t n) {
  pawl_enqueue_item_t *items = xcalloc(ENQ_BATCH, sizeof *items);
  for (size_t i = 0; i < ENQ_BATCH; i++)
    items[i] = (pawl_enqueue_item_t){BENCH_TYPE, BENCH_PAYLOAD, NULL};
  for (size_t done = 0; done < n;) {
    size_t k = n - done < ENQ_BATCH ? n - done : ENQ_BATCH;
    if (pawl_enqueue_many(p, items, k, NULL, NULL))
      die("enqueue pending: %s", pawl_errmsg(p));
    done += k;
  }
  free(items);
}

/* "typeof(col),..." of one row, every column of pawl_jobs, plus the values
 * that say where in its life the row is. */
static void row_shape(sqlite3 *db, int64_t seq, char *out, size_t len) {
  char sql[4096] = "SELECT ";
  size_t used = strlen(sql);
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db,
                         "SELECT name FROM pragma_table_info('pawl_jobs') "
                         "ORDER BY cid",
                         -1, &st, NULL) != SQLITE_OK)
    die("table_info: %s", sqlite3_errmsg(db));
  while (sqlite3_step(st) == SQLITE_ROW)
    used += (size_t)snprintf(sql + used, sizeof sql - used, "typeof(%s)||','||",
                             (const char *)sqlite3_column_text(st, 0));
  sqlite3_finalize(st);
  snprintf(sql + used, sizeof sql - used,
           "state||'/'||attempt||'/'||version||'/'||recoveries||'/'||tags "
           "FROM pawl_jobs WHERE seq = %lld",
           (long long)seq);
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
    die("row shape: %s", sqlite3_errmsg(db));
  if (sqlite3_step(st) != SQLITE_ROW)
    die("row shape: no row %lld", (long long)seq);
  snprintf(out, len, "%s", (const char *)sqlite3_column_text(st, 0));
  sqlite3_finalize(st);
}

/* History: `n` succeeded jobs. All but the last are written with one
 * INSERT each, column for column what the store leaves on a job after
 * enqueue, claim and success (the row keeps its success history, see
 * V001__init.sql); the last goes through the real API, and the two rows
 * must have the same shape, so the shortcut cannot drift from the store. */
static void add_history(pawl_t *p, size_t n) {
  if (n == 0) return;
  sqlite3 *db = pawl__store_sqlite_db(p->store);
  int64_t boost = age_boost(p);
  sqlite3_stmt *begin = prepare(db, "BEGIN IMMEDIATE");
  sqlite3_stmt *commit = prepare(db, "COMMIT");
  sqlite3_stmt *ins = prepare(
      db,
      "INSERT INTO pawl_jobs (id, type, queue, state, priority, rank, payload, "
      "params, tags, run_at, attempt, max_attempts, timeout_s, enqueued_by, "
      "created_at, updated_at, started_at, finished_at, lease_owner, "
      "lease_token, lease_expires, result, recoveries, version) VALUES (?1, "
      "?2, 'default', 2, 0, ?3, ?4, NULL, '[]', ?5, 1, 25, 0, ?6, ?5, ?7, ?8, "
      "?7, ?9, ?10, NULL, ?11, 0, 3)");
  pawl_id_t token;
  pawl_id_new(&token);
  /* Spread over the recent past, one job per millisecond. */
  int64_t base = wall_ms() - (int64_t)n - 60000;
  for (size_t done = 0; done + 1 < n;) {
    size_t k = n - 1 - done < 50000 ? n - 1 - done : 50000;
    exec_stmt(db, begin, "begin history");
    for (size_t i = 0; i < k; i++) {
      int64_t created = base + (int64_t)(done + i);
      pawl_id_t id;
      pawl_id_new(&id);
      sqlite3_bind_blob(ins, 1, id.bytes, 16, SQLITE_STATIC);
      sqlite3_bind_text(ins, 2, BENCH_TYPE, -1, SQLITE_STATIC);
      sqlite3_bind_int64(ins, 3, store_rank(0, created, boost));
      sqlite3_bind_text(ins, 4, BENCH_PAYLOAD, -1, SQLITE_STATIC);
      sqlite3_bind_int64(ins, 5, created);
      sqlite3_bind_text(ins, 6, BENCH_PRINCIPAL, -1, SQLITE_STATIC);
      sqlite3_bind_int64(ins, 7, created + 25);
      sqlite3_bind_int64(ins, 8, created + 5);
      sqlite3_bind_text(ins, 9, "bench-history-node", -1, SQLITE_STATIC);
      sqlite3_bind_blob(ins, 10, token.bytes, 16, SQLITE_STATIC);
      sqlite3_bind_text(ins, 11, BENCH_RESULT, -1, SQLITE_STATIC);
      exec_stmt(db, ins, "insert history");
    }
    exec_stmt(db, commit, "commit history");
    done += k;
  }
  sqlite3_finalize(begin);
  sqlite3_finalize(commit);
  sqlite3_finalize(ins);

  /* The reference row, through the API. */
  pawl_id_t id;
  pawl_job_t **jobs = NULL;
  size_t got = 0;
  int rcs[1];
  if (pawl_enqueue(p, BENCH_TYPE, BENCH_PAYLOAD, NULL, &id, NULL) ||
      pawl_claim(p, NULL, 1, &jobs, &got) || got != 1)
    die("history reference job: %s", pawl_errmsg(p));
  pawl_outcome_t o = {.id = jobs[0]->id,
                      .attempt = jobs[0]->attempt,
                      .kind = PAWL_OUT_SUCCEEDED,
                      .result = BENCH_RESULT};
  if (pawl_finish(p, &o, 1, rcs) || rcs[0])
    die("history reference job: %s", pawl_errmsg(p));
  pawl_jobs_free(jobs, got);
  if (n > 1) {
    char real[1024], made[1024];
    row_shape(db, query_int(db, "SELECT max(seq) FROM pawl_jobs"), real,
              sizeof real);
    row_shape(db, 1, made, sizeof made);
    if (strcmp(real, made) != 0)
      die("synthetic history row differs from a real one:\n  store: %s\n"
          "  bench: %s",
          real, made);
  }
}

/* A template: `history` succeeded jobs, then `pending` jobs to claim.
 * Closing the only connection checkpoints the WAL into the file. */
/* --drop-index NAME: an index left out of the templates, to measure what
 * it costs (the "before" of a migration that added it). */
static const char *drop_index;

static void build_template(const char *path, size_t history, size_t pending) {
  remove_db(path);
  pawl_t *p = open_pawl(path);
  if (drop_index) {
    char sql[300];
    snprintf(sql, sizeof sql, "DROP INDEX %s", drop_index);
    char *msg = NULL;
    if (sqlite3_exec(pawl__store_sqlite_db(p->store), sql, NULL, NULL, &msg))
      die("--drop-index %s: %s", drop_index, msg ? msg : "?");
  }
  add_history(p, history);
  enqueue_pending(p, pending);
  pawl_close(p);
}

/* ---- reporting ---------------------------------------------------------- */

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

typedef struct stats {
  double med, min, max;
} stats_t;

enum { F_RATE, F_CPU_RATE, F_CPU_SHARE };

#define DASHES "----------------------------------------"

/* Median, min and max of one field of n samples. */
static stats_t stats_of(const sample_t *v, int n, int field) {
  double *s = xcalloc((size_t)n, sizeof *s);
  for (int i = 0; i < n; i++)
    s[i] = field == F_RATE       ? v[i].rate
           : field == F_CPU_RATE ? v[i].cpu_rate
                                 : v[i].cpu_share;
  qsort(s, (size_t)n, sizeof *s, cmp_double);
  stats_t r = {n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2, s[0],
               s[n - 1]};
  free(s);
  return r;
}

/* 1234567.8 -> "1,234,568". */
static const char *fmt_rate(double v, char *buf, size_t len) {
  char digits[32];
  snprintf(digits, sizeof digits, "%.0f", v);
  size_t nd = strlen(digits), o = 0;
  for (size_t i = 0; i < nd && o + 2 < len; i++) {
    if (i > 0 && (nd - i) % 3 == 0) buf[o++] = ',';
    buf[o++] = digits[i];
  }
  buf[o] = 0;
  return buf;
}

/* The machine is shared: a load above zero from other processes when the
 * benchmark starts or ends means the numbers are depressed and noisy. */
static void print_load(const char *when) {
  char buf[128] = "unknown";
  FILE *f = fopen("/proc/loadavg", "r");
  if (f) {
    if (fgets(buf, sizeof buf, f)) buf[strcspn(buf, "\n")] = 0;
    fclose(f);
  }
  printf("load average %s: %s\n", when, buf);
}

static void describe_machine(void) {
  char cpu[256] = "unknown";
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (f) {
    char line[512];
    while (fgets(line, sizeof line, f)) {
      if (strncmp(line, "model name", 10) == 0) {
        char *c = strchr(line, ':');
        if (c) {
          c++;
          while (*c == ' ' || *c == '\t') c++;
          c[strcspn(c, "\n")] = 0;
          snprintf(cpu, sizeof cpu, "%s", c);
        }
        break;
      }
    }
    fclose(f);
  }
  struct utsname u;
  if (uname(&u) != 0) snprintf(u.release, sizeof u.release, "unknown");
  char date[64];
  time_t t = time(NULL);
  strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
  printf("machine: nproc=%ld; cpu=%s; kernel=%s %s; sqlite=%s; date=%s\n",
         sysconf(_SC_NPROCESSORS_ONLN), cpu, u.sysname, u.release,
         sqlite3_libversion(), date);
#ifdef __OPTIMIZE__
  printf("build: optimized (__OPTIMIZE__)\n");
#else
  printf("build: NOT optimized: numbers are meaningless, build Release\n");
#endif
}

/* ---- main --------------------------------------------------------------- */

enum { K_ENQ, K_CLAIM };

typedef struct scenario {
  const char *name;
  int kind;
  size_t batch;
  size_t jobs;
  int history;               /* claims: on the template with history */
  sample_t *store, *ceiling; /* one per run */
} scenario_t;

/* --only: the scenario named exactly `only` if there is one (the names
 * of the plain runs are prefixes of the history runs'), else every
 * scenario whose name contains it. */
static int name_matches(const scenario_t *sc, int n, int i, const char *only) {
  for (int k = 0; k < n; k++)
    if (strcmp(sc[k].name, only) == 0) return k == i;
  return strstr(sc[i].name, only) != NULL;
}

static void usage(FILE *to) {
  fprintf(
      to,
      "usage: pawl_store_bench [--runs N] [--jobs N] [--history N] [--quick]\n"
      "  --runs N     repeat each measurement N times (default 5; --quick: 1)\n"
      "  --jobs N     jobs per claim run and per bulk enqueue (default\n"
      "               100000; single enqueue N/10, claim batch 1 N/5)\n"
      "  --history N  succeeded jobs kept as history (default 1000000;\n"
      "               0 skips the history scenarios)\n"
      "  --quick      small sizes for a smoke run (jobs 2000, history 20000)\n"
      "  --only TEXT  only the scenario named TEXT, or else those whose\n"
      "               name contains TEXT (to profile one of them)\n"
      "  --drop-index NAME  leave index NAME out of the databases (what it\n"
      "               costs: pawl_jobs_done, the admin migration's)\n");
}

static long parse_count(const char *opt, const char *v, long min) {
  char *end = NULL;
  errno = 0;
  long n = v ? strtol(v, &end, 10) : 0;
  if (!v || errno || *end || n < min) {
    fprintf(stderr, "pawl_store_bench: %s needs a number >= %ld\n", opt, min);
    usage(stderr);
    exit(2);
  }
  return n;
}

int main(int argc, char **argv) {
  long runs = -1, jobs = -1, history = -1;
  int quick = 0;
  const char *only = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--runs") == 0)
      runs = parse_count(a, i + 1 < argc ? argv[++i] : NULL, 1);
    else if (strcmp(a, "--jobs") == 0)
      jobs = parse_count(a, i + 1 < argc ? argv[++i] : NULL, 10);
    else if (strcmp(a, "--history") == 0)
      history = parse_count(a, i + 1 < argc ? argv[++i] : NULL, 0);
    else if (strcmp(a, "--quick") == 0)
      quick = 1;
    else if (strcmp(a, "--only") == 0 && i + 1 < argc)
      only = argv[++i];
    else if (strcmp(a, "--drop-index") == 0 && i + 1 < argc)
      drop_index = argv[++i];
    else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      return 0;
    } else {
      fprintf(stderr, "pawl_store_bench: unknown argument %s\n", a);
      usage(stderr);
      return 2;
    }
  }
  if (runs < 0) runs = quick ? 1 : 5;
  if (jobs < 0) jobs = quick ? 2000 : 100000;
  if (history < 0) history = quick ? 20000 : 1000000;

  const char *tmp = getenv("TMPDIR");
  snprintf(g_dir, sizeof g_dir, "%s/pawl-bench-XXXXXX",
           tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(g_dir)) {
    fprintf(stderr, "pawl_store_bench: mkdtemp %s: %s\n", g_dir,
            strerror(errno));
    return 1;
  }
  atexit(cleanup_dir);

  describe_machine();
  printf("config: runs=%ld jobs=%ld history=%ld dir=%s\n", runs, jobs, history,
         g_dir);
  print_load("at start");
  fflush(stdout);

  size_t nj = (size_t)jobs;
  scenario_t sc[] = {
      {"enqueue_many (1000/txn)", K_ENQ, ENQ_BATCH, nj, 0, 0, 0},
      {"enqueue (1/txn)", K_ENQ, 1, nj / 10, 0, 0, 0},
      {"claim+complete b=1", K_CLAIM, 1, nj / 5, 0, 0, 0},
      {"claim+complete b=10", K_CLAIM, 10, nj, 0, 0, 0},
      {"claim+complete b=100", K_CLAIM, 100, nj, 0, 0, 0},
      {"claim+complete b=1 +hist", K_CLAIM, 1, nj / 5, 1, 0, 0},
      {"claim+complete b=10 +hist", K_CLAIM, 10, nj, 1, 0, 0},
      {"claim+complete b=100 +hist", K_CLAIM, 100, nj, 1, 0, 0},
  };
  int nall = (int)(sizeof sc / sizeof sc[0]), nsc = 0, need_hist = 0;
  for (int s = 0; s < nall; s++) {
    if ((sc[s].history && history == 0) ||
        (only && !name_matches(sc, nall, s, only)))
      continue;
    need_hist |= sc[s].history;
    sc[nsc++] = sc[s];
  }
  if (nsc == 0) die("no scenario matches --only %s", only);
  for (int s = 0; s < nsc; s++) {
    sc[s].store = xcalloc((size_t)runs, sizeof(sample_t));
    sc[s].ceiling = xcalloc((size_t)runs, sizeof(sample_t));
  }

  char t_plain[PATH_MAX], t_hist[PATH_MAX], run[PATH_MAX];
  db_path(t_plain, sizeof t_plain, "template-plain");
  db_path(t_hist, sizeof t_hist, "template-history");
  db_path(run, sizeof run, "run");
  double t0 = mono_s();
  fprintf(stderr,
          "building templates: %zu pending; %ld history + %zu pending\n", nj,
          history, nj);
  build_template(t_plain, 0, nj);
  if (need_hist) build_template(t_hist, (size_t)history, nj);
  fprintf(stderr, "templates built in %.1f s\n", mono_s() - t0);

  /* Runs outermost and store/ceiling order alternating, so that a drift of
   * the machine during the benchmark spreads over every scenario and both
   * sides instead of biasing one. */
  for (long r = 0; r < runs; r++) {
    for (int s = 0; s < nsc; s++) {
      scenario_t *c = &sc[s];
      const char *tmpl = c->history ? t_hist : t_plain;
      /* A short unmeasured claim run first: the first measurement after
       * a different scenario ran slow by up to 25% at batch 1 (seen with
       * the store and the ceiling alike, whichever went first), and a
       * sync() or a pause before it did not help; a warm-up does. */
      if (c->kind != K_ENQ)
        (void)claim_ceiling(tmpl, run, nj, c->batch,
                            c->jobs < 2000 ? c->jobs : 2000);
      for (int side = 0; side < 2; side++) {
        int ceiling = (side + (int)r) % 2;
        sample_t v;
        if (c->kind == K_ENQ)
          v = ceiling ? enqueue_ceiling(run, c->jobs, c->batch)
                      : enqueue_store(run, c->jobs, c->batch);
        else
          v = ceiling ? claim_ceiling(tmpl, run, nj, c->batch, c->jobs)
                      : claim_store(tmpl, run, nj, c->batch, c->jobs);
        (ceiling ? c->ceiling : c->store)[r] = v;
      }
      char a[32], b[32];
      fprintf(stderr, "run %ld/%ld  %-28s store %12s  ceiling %12s jobs/s\n",
              r + 1, runs, c->name, fmt_rate(c->store[r].rate, a, sizeof a),
              fmt_rate(c->ceiling[r].rate, b, sizeof b));
    }
  }
  double total = mono_s() - t0;

  printf("\njobs/s (wall clock), median of %ld runs, min - max; ratio = "
         "store/ceiling of the medians;\nrun ratio = median of each run's "
         "store/ceiling (the two sides of a run ran back to back)\n\n",
         runs);
  printf("| %-26s | %7s | %9s | %-19s | %9s | %-19s | %5s | %9s |\n",
         "scenario", "jobs", "store", "store min - max", "ceiling",
         "ceiling min - max", "ratio", "run ratio");
  printf("|%.28s|%.9s|%.11s|%.21s|%.11s|%.21s|%.7s|%.11s|\n", DASHES, DASHES,
         DASHES, DASHES, DASHES, DASHES, DASHES, DASHES);
  double *ratios = xcalloc((size_t)runs, sizeof *ratios);
  for (int s = 0; s < nsc; s++) {
    stats_t st = stats_of(sc[s].store, (int)runs, F_RATE);
    stats_t ce = stats_of(sc[s].ceiling, (int)runs, F_RATE);
    for (long r = 0; r < runs; r++)
      ratios[r] = sc[s].store[r].rate / sc[s].ceiling[r].rate;
    qsort(ratios, (size_t)runs, sizeof *ratios, cmp_double);
    double run_ratio = runs % 2 ? ratios[runs / 2]
                                : (ratios[runs / 2 - 1] + ratios[runs / 2]) / 2;
    char m1[32], m2[32], m3[32], c1[32], c2[32], c3[32], range1[80], range2[80];
    snprintf(range1, sizeof range1, "%s - %s", fmt_rate(st.min, m2, sizeof m2),
             fmt_rate(st.max, m3, sizeof m3));
    snprintf(range2, sizeof range2, "%s - %s", fmt_rate(ce.min, c2, sizeof c2),
             fmt_rate(ce.max, c3, sizeof c3));
    printf("| %-26s | %7zu | %9s | %-19s | %9s | %-19s | %4.0f%% | %8.0f%% |\n",
           sc[s].name, sc[s].jobs, fmt_rate(st.med, m1, sizeof m1), range1,
           fmt_rate(ce.med, c1, sizeof c1), range2, 100.0 * st.med / ce.med,
           100.0 * run_ratio);
  }
  free(ratios);

  printf("\njobs per CPU-second of this process (I/O waits and time lost to "
         "other processes\nexcluded), median of %ld runs; CPU/wall = share of "
         "the wall time spent on a CPU\n\n",
         runs);
  printf("| %-26s | %9s | %9s | %5s | %9s | %11s |\n", "scenario", "store",
         "ceiling", "ratio", "store CPU", "ceiling CPU");
  printf("|%.28s|%.11s|%.11s|%.7s|%.11s|%.13s|\n", DASHES, DASHES, DASHES,
         DASHES, DASHES, DASHES);
  for (int s = 0; s < nsc; s++) {
    stats_t st = stats_of(sc[s].store, (int)runs, F_CPU_RATE);
    stats_t ce = stats_of(sc[s].ceiling, (int)runs, F_CPU_RATE);
    stats_t su = stats_of(sc[s].store, (int)runs, F_CPU_SHARE);
    stats_t cu = stats_of(sc[s].ceiling, (int)runs, F_CPU_SHARE);
    char a[32], b[32];
    printf("| %-26s | %9s | %9s | %4.0f%% | %8.0f%% | %10.0f%% |\n", sc[s].name,
           fmt_rate(st.med, a, sizeof a), fmt_rate(ce.med, b, sizeof b),
           100.0 * st.med / ce.med, 100.0 * su.med, 100.0 * cu.med);
  }
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  printf("\n");
  print_load("at end");
  printf("peak RSS: %.1f MiB; total time %.0f s\n",
         (double)ru.ru_maxrss / 1024.0, total);
  for (int s = 0; s < nsc; s++) {
    free(sc[s].store);
    free(sc[s].ceiling);
  }
  return 0;
}
