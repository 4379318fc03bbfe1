/* cli_bench.c: `pawl bench`, the end-to-end benchmark of the worker host.
 *
 * Where bench/store_bench.c measures the store alone, this measures what an
 * embedder gets: jobs enqueued through pawl.h and run as Lua scripts by the
 * host (pawl_start), with every thread, lock, Lua call and commit on the
 * way. It is written on the public API (pawl.h) and libc only, like any
 * embedder, so it measures nothing a user could not.
 *
 * Each run (repeated --runs times; the table shows median, min and max):
 *
 *   enqueue      N no-op jobs with pawl_enqueue_many, 1,000 per
 *                transaction, then min(N, 10,000) with pawl_enqueue, one
 *                transaction each;
 *   processing   --nodes hosts (default 1) with W workers each, started on
 *                all of them, until idle: jobs processed / time from the
 *                first pawl_start to the last host stopped, checked with
 *                pawl_list (every job must have succeeded). Each node is a
 *                handle of its own (own node id, connections and lease
 *                token), as separate processes would be;
 *   latency      a host waiting with a 60 s poll interval, so that only the
 *                in-process wakeup of pawl_enqueue can explain a fast
 *                pickup (on PostgreSQL the jobs are enqueued through a
 *                second handle, so the pickup measures NOTIFY reaching the
 *                host's listener), and L jobs enqueued ~1 ms apart, each
 *                carrying the
 *                wall-clock time just before its pawl_enqueue; each job
 *                returns pawl.time() when it starts.
 *
 * Once, after the runs: the Lua heap of a worker state (a job that returns
 * collectgarbage("count")), and the peak RSS of a fresh process running a
 * small job set with 1 and with 8 workers. ru_maxrss only ever grows within
 * a process, so those two run in child processes: this binary re-executed
 * as `pawl bench --probe-rss W DIR` (internal, not in --help).
 *
 * Everything lives in a temporary directory ($TMPDIR or /tmp): the scripts
 * and, unless --db is given, a fresh SQLite database per run. It is removed
 * at the end, also after a failure or SIGINT/SIGTERM. With --db the jobs go
 * into that database, in queues of their own (pawl-bench-PID-rN), and stay
 * there.
 *
 * Exit status: 0 success, 1 a failure (including a job that did not
 * succeed), 2 bad arguments. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pawl.h"
#include "redact.h"

int cli_bench_main(int argc, char **argv);

#define BENCH_OK 0
#define BENCH_FAIL 1
#define BENCH_USAGE 2

#define BENCH_ERRLEN 1024
#define BENCH_PATHLEN 1200       /* the directory plus a file name */
#define BENCH_BATCH 1000         /* jobs per pawl_enqueue_many */
#define BENCH_SINGLE_MAX 10000   /* single enqueues per run, at most */
#define BENCH_PROBE_JOBS 2000    /* job set of the RSS probes */
#define BENCH_PROBE_WORKERS 8    /* compared with 1 worker */
#define BENCH_MAX_PAYLOAD (64L << 20)
#define BENCH_LATENCY_GAP_US 1000
#define BENCH_LATENCY_TIMEOUT_S 10.0
#define BENCH_LOG_SHOWN 5        /* host warnings echoed to stderr */

static const char bench_usage_text[] =
    "usage: pawl bench [--db URL] [--jobs N] [--workers W] [--payload-bytes B]\n"
    "                  [--runs R] [--latency-jobs L] [--help]\n"
    "\n"
    "Measures the worker host end to end with no-op Lua jobs: enqueue rates,\n"
    "processing throughput, pickup latency and memory. Works in a temporary\n"
    "directory under $TMPDIR (or /tmp), removed at the end.\n"
    "\n"
    "  --db URL            put the jobs in this database (sqlite:PATH,\n"
    "                      postgres://..., postgres:CONNINFO) instead\n"
    "                      of a fresh one per run; they stay there, in queues\n"
    "                      named pawl-bench-PID-rN\n"
    "  --jobs N            no-op jobs enqueued in batches of 1000 per run\n"
    "                      (default 100000); min(N, 10000) more are enqueued\n"
    "                      one per transaction, and all of them are processed\n"
    "  --workers W         worker threads (default: one per core)\n"
    "  --nodes N           hosts processing the jobs together (default 1);\n"
    "                      each is a node of its own, with W workers\n"
    "  --payload-bytes B   filler bytes in each no-op job's payload (default 16)\n"
    "  --runs R            repeat the enqueue, processing and latency\n"
    "                      measurements R times and print the median, min and\n"
    "                      max of each (default 1)\n"
    "  --latency-jobs L    jobs enqueued one at a time, ~1 ms apart, for the\n"
    "                      pickup latency (default 2000; 0 skips it)\n"
    "  --help              print this text\n"
    "\n"
    "Options also take the form --name=value.\n"
    "Exit status: 0 success, 1 a failure, 2 bad arguments.\n";

/* The job scripts. latency.lua returns its start time as text: cjson keeps
 * 14 significant digits of a number, which for seconds since the epoch is
 * 0.1 ms, too coarse for what it measures. */
static const char bench_noop_lua[] = "return { run = function() end }\n";
static const char bench_latency_lua[] =
    "-- The start time as text: a number would be rounded to 0.1 ms in JSON.\n"
    "return { run = function() return string.format(\"%.6f\", pawl.time()) "
    "end }\n";
static const char bench_mem_lua[] =
    "-- The heap after a full collection (twice: the second frees what the\n"
    "-- first one's finalizers released), in KB.\n"
    "return { run = function()\n"
    "  collectgarbage(\"collect\")\n"
    "  collectgarbage(\"collect\")\n"
    "  return collectgarbage(\"count\")\n"
    "end }\n";

/* Figures measured in every run. */
enum {
  F_BULK,
  F_SINGLE,
  F_PROC,
  F_CPU,
  F_P50,
  F_P99,
  F_MAX,
  F_COUNT
};

static const struct {
  const char *name;
  int decimals; /* < 0: a rate, printed with thousands separators */
} bench_figs[F_COUNT] = {
    [F_BULK] = {"enqueue, 1000 per txn (jobs/s)", -1},
    [F_SINGLE] = {"enqueue, 1 per txn (jobs/s)", -1},
    [F_PROC] = {"processed no-op Lua jobs (jobs/s)", -1},
    [F_CPU] = {"  CPU while processing (% of a core)", 0},
    [F_P50] = {"pickup latency p50 (ms)", 3},
    [F_P99] = {"pickup latency p99 (ms)", 3},
    [F_MAX] = {"pickup latency max (ms)", 3},
};

typedef struct bench_cfg {
  const char *db;     /* --db; NULL: a fresh database per run */
  long jobs;
  long workers;
  long nodes;
  long payload_bytes;
  long runs;
  long latency_jobs;
  int help;
} bench_cfg_t;

/* What the host logged at WARN and above, over every host we started. */
typedef struct bench_log {
  long errors, warnings;
  int shown;
} bench_log_t;

typedef struct bench_ctx {
  bench_cfg_t cfg;
  char dir[1024];          /* the temporary directory; "" until made */
  char scripts[1100];
  char *payload;           /* the no-op jobs' payload */
  bench_log_t log;
  char err[BENCH_ERRLEN];
} bench_ctx_t;

/* Jobs of one type by state, and the first error seen. */
typedef struct bench_tally {
  long state[PAWL_STATE_COUNT];
  char first_error[256];
} bench_tally_t;

/* Set by SIGINT/SIGTERM: every loop checks it, so an interrupted benchmark
 * still stops its host and removes its directory. */
static volatile sig_atomic_t bench_interrupted;

static void bench_on_signal(int sig) {
  (void)sig;
  bench_interrupted = 1;
}

/* ---- small helpers ------------------------------------------------------ */

static int bench_fail(bench_ctx_t *c, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Leaves the message for cli_bench_main to print and returns `code`. */
static int bench_fail(bench_ctx_t *c, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->err, sizeof c->err, fmt, ap);
  va_end(ap);
  return code;
}

static int bench_lib_fail(bench_ctx_t *c, pawl_t *p, const char *what) {
  return bench_fail(c, BENCH_FAIL, "bench: %s: %s", what, pawl_errmsg(p));
}

static int bench_check_interrupt(bench_ctx_t *c) {
  return bench_interrupted ? bench_fail(c, BENCH_FAIL, "bench: interrupted")
                           : 0;
}

/* Prints "pawl: MESSAGE" as one line: library messages may quote input
 * that holds newlines. */
static void bench_print_error(const char *msg) {
  char line[BENCH_ERRLEN];
  snprintf(line, sizeof line, "%s", *msg ? msg : "unknown error");
  for (char *s = line; *s; s++)
    if ((unsigned char)*s < ' ') *s = ' ';
  fprintf(stderr, "pawl: %s\n", line);
}

static double bench_mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double bench_cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Wall-clock microseconds: the clock pawl.time() reads in the worker. */
static int64_t bench_wall_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void bench_sleep_us(long us) {
  struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
  nanosleep(&ts, NULL); /* EINTR: a signal; the loops check for it */
}

static long bench_maxrss_kb(void) {
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
  return ru.ru_maxrss; /* KiB on Linux */
}

/* 1234567.8 -> "1,234,568". */
static const char *bench_fmt_rate(double v, char *buf, size_t len) {
  char digits[32];
  snprintf(digits, sizeof digits, "%.0f", v < 0 ? 0 : v);
  size_t n = strlen(digits), o = 0;
  for (size_t i = 0; i < n && o + 2 < len; i++) {
    if (i > 0 && (n - i) % 3 == 0) buf[o++] = ',';
    buf[o++] = digits[i];
  }
  buf[o] = 0;
  return buf;
}

static const char *bench_fmt_fig(int fig, double v, char *buf, size_t len) {
  if (bench_figs[fig].decimals < 0) return bench_fmt_rate(v, buf, len);
  snprintf(buf, len, "%.*f", bench_figs[fig].decimals, v);
  return buf;
}

static int bench_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Median, min and max of n values; `scratch` holds n doubles. */
static void bench_stats(const double *v, size_t n, double *scratch,
                        double out[3]) {
  memcpy(scratch, v, n * sizeof *v);
  qsort(scratch, n, sizeof *scratch, bench_cmp_double);
  out[0] = n % 2 ? scratch[n / 2] : (scratch[n / 2 - 1] + scratch[n / 2]) / 2;
  out[1] = scratch[0];
  out[2] = scratch[n - 1];
}

/* Nearest-rank percentile of sorted values. */
static double bench_percentile(const double *sorted, size_t n, double p) {
  size_t rank = (size_t)(p * (double)n + 0.999999);
  if (rank < 1) rank = 1;
  if (rank > n) rank = n;
  return sorted[rank - 1];
}

/* "DIR/NAME" into out (BENCH_PATHLEN bytes). */
static int bench_path(bench_ctx_t *c, char *out, const char *name) {
  int n = snprintf(out, BENCH_PATHLEN, "%s/%s", c->dir, name);
  if (n < 0 || n >= BENCH_PATHLEN)
    return bench_fail(c, BENCH_FAIL, "bench: path too long: %s/%s", c->dir,
                      name);
  return 0;
}

/* Removes a database file and SQLite's companions. */
static void bench_remove_db(const char *path) {
  static const char *const ext[] = {"", "-wal", "-shm", "-journal"};
  char p[BENCH_PATHLEN + 16];
  for (size_t i = 0; i < sizeof ext / sizeof ext[0]; i++) {
    snprintf(p, sizeof p, "%s%s", path, ext[i]);
    unlink(p);
  }
}

static int bench_rm_entry(const char *path, const struct stat *sb, int flag,
                          struct FTW *ftw) {
  (void)sb;
  (void)flag;
  (void)ftw;
  remove(path);
  return 0; /* keep going: remove what can be removed */
}

/* Removes the temporary directory and everything in it. FTW_PHYS: never
 * follow a link out of it. */
static void bench_remove_dir(bench_ctx_t *c) {
  if (!c->dir[0]) return;
  nftw(c->dir, bench_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
  c->dir[0] = 0;
}

static int bench_write_file(bench_ctx_t *c, const char *path,
                            const char *text) {
  FILE *f = fopen(path, "w");
  if (!f)
    return bench_fail(c, BENCH_FAIL, "bench: cannot create %s: %s", path,
                      strerror(errno));
  int bad = fputs(text, f) < 0;
  bad |= fclose(f) != 0;
  if (bad)
    return bench_fail(c, BENCH_FAIL, "bench: cannot write %s: %s", path,
                      strerror(errno));
  return 0;
}

/* {"pad":"xxx..."} with `bytes` x's. */
static char *bench_make_payload(long bytes) {
  size_t n = (size_t)bytes;
  char *s = malloc(n + 16);
  if (!s) return NULL;
  memcpy(s, "{\"pad\":\"", 8);
  memset(s + 8, 'x', n);
  memcpy(s + 8 + n, "\"}", 3);
  return s;
}

/* The scripts directory and the no-op, latency and memory scripts. */
static int bench_make_scripts(bench_ctx_t *c) {
  char path[BENCH_PATHLEN];
  int rc = bench_path(c, c->scripts, "scripts");
  if (rc) return rc;
  if (mkdir(c->scripts, 0700) != 0)
    return bench_fail(c, BENCH_FAIL, "bench: cannot create %s: %s",
                      c->scripts, strerror(errno));
  static const struct {
    const char *name, *text;
  } files[] = {{"scripts/noop.lua", bench_noop_lua},
               {"scripts/latency.lua", bench_latency_lua},
               {"scripts/mem.lua", bench_mem_lua}};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    if ((rc = bench_path(c, path, files[i].name))) return rc;
    if ((rc = bench_write_file(c, path, files[i].text))) return rc;
  }
  return 0;
}

static int bench_make_dir(bench_ctx_t *c) {
  const char *tmp = getenv("TMPDIR");
  int n = snprintf(c->dir, sizeof c->dir, "%s/pawl-bench-XXXXXX",
                   tmp && *tmp ? tmp : "/tmp");
  if (n < 0 || (size_t)n >= sizeof c->dir) {
    c->dir[0] = 0;
    return bench_fail(c, BENCH_FAIL, "bench: $TMPDIR is too long");
  }
  if (!mkdtemp(c->dir)) {
    int e = errno;
    char tried[sizeof c->dir];
    snprintf(tried, sizeof tried, "%s", c->dir);
    c->dir[0] = 0;
    return bench_fail(c, BENCH_FAIL,
                      "bench: cannot create a temporary directory %s: %s",
                      tried, strerror(e));
  }
  return bench_make_scripts(c);
}

/* ---- the host's log ----------------------------------------------------- */

/* Counts what the host logs at WARN and above and echoes the first few:
 * enough to see why a run failed without drowning the table. Calls come
 * one at a time (pawl.h), and the counts are read after pawl_wait joined
 * the threads, so plain longs suffice. */
static void bench_log_fn(void *data, int level, const char *line) {
  bench_log_t *lg = data;
  if (level >= PAWL_LOG_ERROR)
    lg->errors++;
  else if (level >= PAWL_LOG_WARN)
    lg->warnings++;
  else
    return;
  if (lg->shown < BENCH_LOG_SHOWN) {
    lg->shown++;
    fprintf(stderr, "pawl bench: host: %s", line);
  }
}

static void bench_host_opts(bench_ctx_t *c, pawl_host_opts_t *o,
                            const char *const *queue, long workers) {
  pawl_host_opts_init(o);
  o->scripts_dir = c->scripts;
  o->workers = (int)workers;
  /* Only our queue when the database is shared (--db): the host must not
   * run, and fail, other people's jobs for want of their scripts. */
  o->queues = queue[0] ? queue : NULL;
  o->nqueues = queue[0] ? 1 : 0;
  o->log_level = PAWL_LOG_WARN;
  o->log_fn = bench_log_fn;
  o->log_data = &c->log;
}

/* ---- the phases --------------------------------------------------------- */

static int bench_open(bench_ctx_t *c, const char *url, pawl_t **out) {
  pawl_options_t o;
  pawl_options_init(&o);
  o.db = url;
  char err[512] = "";
  int rc = pawl_open(out, &o, err, sizeof err);
  if (rc && err[0]) /* it names the database */
    return bench_fail(c, rc == PAWL_EINVAL ? BENCH_USAGE : BENCH_FAIL,
                      "bench: %s", err);
  char shown[512];
  pawl__redact_url(url, shown, sizeof shown);
  if (rc)
    return bench_fail(c, rc == PAWL_EINVAL ? BENCH_USAGE : BENCH_FAIL,
                      "bench: cannot open %s: %s", shown, pawl_strerror(rc));
  return 0;
}

/* Enqueues n no-op jobs into `queue` (NULL: the default one), `batch` per
 * transaction (1: pawl_enqueue). *seconds: the wall time it took. */
static int bench_enqueue_noops(bench_ctx_t *c, pawl_t *p, const char *queue,
                               long n, long batch, double *seconds) {
  pawl_enqueue_opts_t eo;
  pawl_enqueue_opts_init(&eo);
  eo.queue = queue;
  size_t b = (size_t)batch;
  pawl_enqueue_item_t *items = calloc(b, sizeof *items);
  pawl_id_t *ids = calloc(b, sizeof *ids);
  int *status = calloc(b, sizeof *status);
  int rc = 0;
  if (!items || !ids || !status)
    rc = bench_fail(c, BENCH_FAIL, "bench: out of memory");
  for (size_t i = 0; !rc && i < b; i++)
    items[i] = (pawl_enqueue_item_t){"noop", c->payload, &eo};
  double t0 = bench_mono_s();
  for (long done = 0; !rc && done < n;) {
    long k = n - done < batch ? n - done : batch;
    int lrc = batch == 1
                  ? pawl_enqueue(p, "noop", c->payload, &eo, ids, status)
                  : pawl_enqueue_many(p, items, (size_t)k, ids, status);
    if (lrc)
      rc = bench_lib_fail(c, p, "enqueue");
    else
      rc = bench_check_interrupt(c);
    done += k;
  }
  *seconds = bench_mono_s() - t0;
  free(items);
  free(ids);
  free(status);
  return rc;
}

static int bench_open(bench_ctx_t *c, const char *url, pawl_t **out);

/* Runs `nodes` hosts (p and nodes-1 more handles on `url`) until nothing
 * is left to do. *seconds: from the first pawl_start to the last host
 * stopped (scripts loaded, Lua states built and threads joined included:
 * what `pawl run --until-idle` pays); *cpu: this process's CPU seconds
 * meanwhile. */
static int bench_run_until_idle(bench_ctx_t *c, pawl_t *p, const char *url,
                                const char *queue, long workers, long nodes,
                                double *seconds, double *cpu) {
  const char *const q[1] = {queue};
  pawl_host_opts_t o;
  bench_host_opts(c, &o, q, workers);
  o.until_idle = 1;
  o.idle_wait_ms = -1; /* nothing here retries: stop at the first idle */
  pawl_t **hosts = calloc((size_t)nodes, sizeof *hosts);
  if (!hosts) return bench_fail(c, BENCH_FAIL, "bench: out of memory");
  hosts[0] = p;
  int rc = 0;
  for (long i = 1; !rc && i < nodes; i++) rc = bench_open(c, url, &hosts[i]);
  double c0 = bench_cpu_s(), t0 = bench_mono_s();
  long started = 0;
  for (; !rc && started < nodes; started++)
    if (pawl_start(hosts[started], &o) != 0)
      rc = bench_lib_fail(c, hosts[started], "pawl_start");
  /* pawl_wait in slices, so that SIGINT is noticed. */
  for (long i = 0; i < started; i++) {
    while (pawl_wait(hosts[i], 100) != 0) {
      if (bench_interrupted || rc) {
        for (long k = 0; k < started; k++) pawl_stop(hosts[k], PAWL_STOP_NOW);
        pawl_wait(hosts[i], -1);
        if (!rc) rc = bench_check_interrupt(c);
      }
    }
  }
  *seconds = bench_mono_s() - t0;
  if (cpu) *cpu = bench_cpu_s() - c0;
  for (long i = 1; i < nodes; i++) pawl_close(hosts[i]);
  free(hosts);
  return rc;
}

static int bench_tally_job(const pawl_job_t *job, void *data) {
  bench_tally_t *t = data;
  if ((int)job->state >= 0 && job->state < PAWL_STATE_COUNT)
    t->state[job->state]++;
  if (job->last_error && !t->first_error[0])
    snprintf(t->first_error, sizeof t->first_error, "%s", job->last_error);
  return 0;
}

/* Checks that `expected` jobs of `type` (in `queue`) exist and that every
 * one of them succeeded. */
static int bench_check_succeeded(bench_ctx_t *c, pawl_t *p, const char *queue,
                                 const char *type, long expected) {
  bench_tally_t t;
  memset(&t, 0, sizeof t);
  pawl_filter_t f;
  pawl_filter_init(&f);
  f.state = -1;
  f.queue = queue;
  f.type = type;
  f.limit = INT_MAX;
  if (pawl_list(p, &f, bench_tally_job, &t) != 0)
    return bench_lib_fail(c, p, "counting the jobs");
  long total = 0;
  for (int s = 0; s < PAWL_STATE_COUNT; s++) total += t.state[s];
  if (total == expected && t.state[PAWL_SUCCEEDED] == expected) return 0;
  return bench_fail(
      c, BENCH_FAIL,
      "bench: %ld of %ld %s jobs succeeded (%ld found: %ld pending, %ld "
      "running, %ld failed)%s%s",
      t.state[PAWL_SUCCEEDED], expected, type, total, t.state[PAWL_PENDING],
      t.state[PAWL_RUNNING], t.state[PAWL_FAILED],
      t.first_error[0] ? "; first error: " : "", t.first_error);
}

/* The microseconds of "\"SECONDS.FRACTION\"" (latency.lua's result), or -1. */
static int64_t bench_parse_start_us(const char *json) {
  if (!json || *json != '"') return -1;
  char *end = NULL;
  errno = 0;
  long long sec = strtoll(json + 1, &end, 10);
  if (errno || end == json + 1 || *end != '.') return -1;
  int64_t us = 0;
  int digits = 0;
  for (const char *s = end + 1; *s >= '0' && *s <= '9'; s++)
    if (digits < 6) {
      us = us * 10 + (*s - '0');
      digits++;
    }
  for (; digits < 6; digits++) us *= 10;
  return (int64_t)sec * 1000000 + us;
}

/* The enqueue time in a latency job's payload ({"t_us":N}), or -1. */
static int64_t bench_parse_enqueue_us(const char *payload) {
  const char *k = payload ? strstr(payload, "\"t_us\":") : NULL;
  if (!k) return -1;
  char *end = NULL;
  errno = 0;
  long long v = strtoll(k + 7, &end, 10);
  return errno || end == k + 7 ? -1 : (int64_t)v;
}

/* Waits for a job to end, so that the next one meets an idle host. */
static int bench_wait_ended(bench_ctx_t *c, pawl_t *p, const pawl_id_t *id,
                            long i) {
  double deadline = bench_mono_s() + BENCH_LATENCY_TIMEOUT_S;
  for (;;) {
    pawl_job_t *job = NULL;
    if (pawl_get(p, id, &job) != 0)
      return bench_lib_fail(c, p, "reading a latency job");
    int state = job->state;
    pawl_job_free(job);
    if (state == PAWL_SUCCEEDED || state == PAWL_FAILED ||
        state == PAWL_CANCELED)
      return 0;
    int rc = bench_check_interrupt(c);
    if (rc) return rc;
    if (bench_mono_s() > deadline)
      return bench_fail(c, BENCH_FAIL,
                        "bench: latency job %ld still %s after %.0f s", i + 1,
                        pawl_state_name(state), BENCH_LATENCY_TIMEOUT_S);
    bench_sleep_us(200);
  }
}

/* Reads every latency job and puts start - enqueue, in ms, into lat[]. */
static int bench_read_latencies(bench_ctx_t *c, pawl_t *p, const pawl_id_t *ids,
                                long n, double *lat) {
  for (long i = 0; i < n; i++) {
    pawl_job_t *job = NULL;
    if (pawl_get(p, &ids[i], &job) != 0)
      return bench_lib_fail(c, p, "reading a latency job");
    int64_t t_enq = bench_parse_enqueue_us(job->payload);
    int64_t t_start = bench_parse_start_us(job->result);
    int state = job->state;
    char error[256] = "";
    if (job->last_error) snprintf(error, sizeof error, "%s", job->last_error);
    pawl_job_free(job);
    if (state != PAWL_SUCCEEDED)
      return bench_fail(c, BENCH_FAIL, "bench: latency job %ld %s%s%s", i + 1,
                        pawl_state_name(state), error[0] ? ": " : "", error);
    if (t_enq < 0 || t_start < 0)
      return bench_fail(c, BENCH_FAIL,
                        "bench: latency job %ld: unreadable times", i + 1);
    lat[i] = (double)(t_start - t_enq) / 1000.0;
  }
  return 0;
}

/* The latency phase: out[] receives p50, p99 and max in ms. */
static int bench_latency(bench_ctx_t *c, const char *url, const char *queue,
                         double out[3]) {
  long n = c->cfg.latency_jobs;
  pawl_id_t *ids = calloc((size_t)n, sizeof *ids);
  double *lat = calloc((size_t)n, sizeof *lat);
  pawl_t *p = NULL;
  int rc = ids && lat ? 0 : bench_fail(c, BENCH_FAIL, "bench: out of memory");
  if (!rc) rc = bench_open(c, url, &p);
  const char *const q[1] = {queue};
  pawl_host_opts_t o;
  bench_host_opts(c, &o, q, c->cfg.workers);
  /* A minute between polls: a pickup within milliseconds can only come
   * from pawl_enqueue waking the host. */
  o.poll_ms = 60000;
  if (!rc && pawl_start(p, &o) != 0) rc = bench_lib_fail(c, p, "pawl_start");
  /* Let every thread reach its wait before the first job. */
  if (!rc) bench_sleep_us(100000);
  /* Across processes (PostgreSQL), enqueue as another process would: the
   * host then hears of each job through NOTIFY only. */
  pawl_t *e = p;
  if (!rc && strncmp(url, "sqlite:", 7) != 0) rc = bench_open(c, url, &e);
  pawl_enqueue_opts_t eo;
  pawl_enqueue_opts_init(&eo);
  eo.queue = queue;
  for (long i = 0; !rc && i < n; i++) {
    char payload[64];
    snprintf(payload, sizeof payload, "{\"t_us\":%lld}",
             (long long)bench_wall_us());
    if (pawl_enqueue(e, "latency", payload, &eo, &ids[i], NULL) != 0) {
      rc = bench_lib_fail(c, e, "enqueue");
      break;
    }
    bench_sleep_us(BENCH_LATENCY_GAP_US);
    rc = bench_wait_ended(c, p, &ids[i], i);
  }
  if (!rc) {
    pawl_stop(p, PAWL_STOP_GRACEFUL);
    pawl_wait(p, -1);
    rc = bench_read_latencies(c, p, ids, n, lat);
  }
  if (!rc) {
    qsort(lat, (size_t)n, sizeof *lat, bench_cmp_double);
    out[0] = bench_percentile(lat, (size_t)n, 0.50);
    out[1] = bench_percentile(lat, (size_t)n, 0.99);
    out[2] = lat[n - 1];
  }
  if (e != p) pawl_close(e);
  pawl_close(p); /* stops the host at once if a failure left it running */
  free(ids);
  free(lat);
  return rc;
}

/* One run: enqueue, processing and latency; figs[] gets F_COUNT values. */
static int bench_one_run(bench_ctx_t *c, long run, double *figs,
                         long *rss_kb) {
  char path[BENCH_PATHLEN] = "", url[BENCH_PATHLEN + 16], queue[64] = "";
  int rc = 0;
  if (c->cfg.db) {
    snprintf(url, sizeof url, "%s", c->cfg.db);
    snprintf(queue, sizeof queue, "pawl-bench-%ld-r%ld", (long)getpid(),
             run + 1);
  } else {
    char name[32];
    snprintf(name, sizeof name, "run-%ld.db", run + 1);
    if ((rc = bench_path(c, path, name))) return rc;
    bench_remove_db(path);
    snprintf(url, sizeof url, "sqlite:%s", path);
  }
  const char *q = queue[0] ? queue : NULL;
  long n = c->cfg.jobs;
  long single = n < BENCH_SINGLE_MAX ? n : BENCH_SINGLE_MAX;
  double secs = 0, cpu = 0;
  pawl_t *p = NULL;
  if ((rc = bench_open(c, url, &p))) return rc;
  rc = bench_enqueue_noops(c, p, q, n, BENCH_BATCH, &secs);
  if (!rc) {
    figs[F_BULK] = (double)n / secs;
    rc = bench_enqueue_noops(c, p, q, single, 1, &secs);
  }
  if (!rc) {
    figs[F_SINGLE] = (double)single / secs;
    rc = bench_run_until_idle(c, p, url, q, c->cfg.workers, c->cfg.nodes,
                              &secs, &cpu);
  }
  if (!rc) {
    *rss_kb = bench_maxrss_kb();
    figs[F_PROC] = (double)(n + single) / secs;
    figs[F_CPU] = 100.0 * cpu / secs;
    rc = bench_check_succeeded(c, p, q, "noop", n + single);
  }
  pawl_close(p);
  figs[F_P50] = figs[F_P99] = figs[F_MAX] = 0;
  if (!rc && c->cfg.latency_jobs > 0) rc = bench_latency(c, url, q, &figs[F_P50]);
  if (!c->cfg.db) bench_remove_db(path);
  return rc;
}

/* ---- memory ------------------------------------------------------------- */

/* The Lua heap of a worker state, in KiB: one mem.lua job, one worker. */
static int bench_lua_heap(bench_ctx_t *c, double *kib) {
  char path[BENCH_PATHLEN], url[BENCH_PATHLEN + 16];
  int rc = bench_path(c, path, "mem.db");
  if (rc) return rc;
  bench_remove_db(path);
  snprintf(url, sizeof url, "sqlite:%s", path);
  pawl_t *p = NULL;
  if ((rc = bench_open(c, url, &p))) return rc;
  pawl_id_t id;
  double secs = 0;
  if (pawl_enqueue(p, "mem", NULL, NULL, &id, NULL) != 0)
    rc = bench_lib_fail(c, p, "enqueue");
  if (!rc) rc = bench_run_until_idle(c, p, NULL, NULL, 1, 1, &secs, NULL);
  pawl_job_t *job = NULL;
  if (!rc && pawl_get(p, &id, &job) != 0)
    rc = bench_lib_fail(c, p, "reading the memory job");
  if (!rc) {
    char *end = NULL;
    double v = job->result ? strtod(job->result, &end) : 0;
    if (job->state != PAWL_SUCCEEDED || !job->result || end == job->result)
      rc = bench_fail(c, BENCH_FAIL, "bench: the memory job %s%s%s",
                      pawl_state_name(job->state),
                      job->last_error ? ": " : "",
                      job->last_error ? job->last_error : "");
    else
      *kib = v; /* collectgarbage("count") is in units of 1024 bytes */
  }
  pawl_job_free(job);
  pawl_close(p);
  bench_remove_db(path);
  return rc;
}

/* Peak RSS (KiB) of a fresh process running the probe job set with
 * `workers` workers: this binary again, as `pawl bench --probe-rss`. */
static int bench_probe_rss(bench_ctx_t *c, int workers, long *kib) {
  char wbuf[16], arg0[] = "pawl", arg1[] = "bench", arg2[] = "--probe-rss";
  snprintf(wbuf, sizeof wbuf, "%d", workers);
  char *args[] = {arg0, arg1, arg2, wbuf, c->dir, NULL};
  int fds[2];
  if (pipe(fds) != 0)
    return bench_fail(c, BENCH_FAIL, "bench: pipe: %s", strerror(errno));
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    close(fds[0]);
    close(fds[1]);
    return bench_fail(c, BENCH_FAIL, "bench: fork: %s", strerror(e));
  }
  if (pid == 0) {
    /* Only async-signal-safe calls between fork and exec. */
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    close(fds[1]);
    execv("/proc/self/exe", args);
    _exit(127);
  }
  close(fds[1]);
  char out[64];
  size_t len = 0;
  for (;;) {
    ssize_t k = read(fds[0], out + len, sizeof out - 1 - len);
    if (k > 0) len += (size_t)k;
    if (k == 0 || len == sizeof out - 1 || (k < 0 && errno != EINTR)) break;
  }
  out[len] = 0;
  close(fds[0]);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  int rc = bench_check_interrupt(c);
  if (rc) return rc;
  char *end = NULL;
  long v = strtol(out, &end, 10);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || end == out || v <= 0)
    return bench_fail(c, BENCH_FAIL,
                      "bench: the memory probe with %d workers failed (%s %d)",
                      workers, WIFEXITED(st) ? "exit status" : "signal",
                      WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
  *kib = v;
  return 0;
}

/* `pawl bench --probe-rss W DIR`: runs BENCH_PROBE_JOBS no-op jobs with W
 * workers on a fresh database in DIR, with DIR/scripts, and prints its
 * peak RSS in KiB. */
static int bench_probe_main(int argc, char **argv) {
  bench_ctx_t c;
  memset(&c, 0, sizeof c);
  char *end = NULL;
  long w = argc == 4 ? strtol(argv[2], &end, 10) : 0;
  if (argc != 4 || *end || w < 1 || w > 1024 ||
      strlen(argv[3]) >= sizeof c.dir) {
    bench_print_error("bench: usage: pawl bench --probe-rss WORKERS DIR");
    return BENCH_USAGE;
  }
  snprintf(c.dir, sizeof c.dir, "%s", argv[3]);
  char path[BENCH_PATHLEN] = "", url[BENCH_PATHLEN + 16], name[32];
  snprintf(name, sizeof name, "probe-%ld.db", w);
  int rc = bench_path(&c, c.scripts, "scripts");
  if (!rc) rc = bench_path(&c, path, name);
  if (!rc) {
    bench_remove_db(path);
    snprintf(url, sizeof url, "sqlite:%s", path);
    c.payload = bench_make_payload(16);
    if (!c.payload) rc = bench_fail(&c, BENCH_FAIL, "bench: out of memory");
  }
  pawl_t *p = NULL;
  if (!rc) rc = bench_open(&c, url, &p);
  double secs = 0;
  if (!rc) rc = bench_enqueue_noops(&c, p, NULL, BENCH_PROBE_JOBS, BENCH_BATCH,
                                    &secs);
  if (!rc) rc = bench_run_until_idle(&c, p, NULL, NULL, w, 1, &secs, NULL);
  if (!rc) rc = bench_check_succeeded(&c, p, NULL, "noop", BENCH_PROBE_JOBS);
  if (!rc) printf("%ld\n", bench_maxrss_kb());
  pawl_close(p);
  if (path[0]) bench_remove_db(path);
  free(c.payload);
  if (rc) bench_print_error(c.err);
  return rc;
}

/* ---- arguments ---------------------------------------------------------- */

static int bench_parse_long(bench_ctx_t *c, const char *opt, const char *v,
                            long min, long max, long *out) {
  char *end = NULL;
  errno = 0;
  long n = *v ? strtol(v, &end, 10) : 0;
  if (!*v || errno || *end || n < min || n > max)
    return bench_fail(c, BENCH_USAGE,
                      "bench: %s needs a whole number from %ld to %ld "
                      "(got \"%s\")",
                      opt, min, max, v);
  *out = n;
  return 0;
}

static int bench_parse(bench_ctx_t *c, int argc, char **argv) {
  bench_cfg_t *cfg = &c->cfg;
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  cfg->db = NULL;
  cfg->jobs = 100000;
  cfg->workers = ncpu > 0 ? (ncpu > 1024 ? 1024 : ncpu) : 1;
  cfg->payload_bytes = 16;
  cfg->nodes = 1;
  cfg->runs = 1;
  cfg->latency_jobs = 2000;
  static const struct {
    const char *name;
    long min, max;
    size_t off;
  } nums[] = {
      {"--jobs", 1, 100000000, offsetof(bench_cfg_t, jobs)},
      {"--workers", 1, 1024, offsetof(bench_cfg_t, workers)},
      {"--nodes", 1, 64, offsetof(bench_cfg_t, nodes)},
      {"--payload-bytes", 0, BENCH_MAX_PAYLOAD,
       offsetof(bench_cfg_t, payload_bytes)},
      {"--runs", 1, 1000, offsetof(bench_cfg_t, runs)},
      {"--latency-jobs", 0, 10000000, offsetof(bench_cfg_t, latency_jobs)},
  };
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      cfg->help = 1;
      continue;
    }
    if (strncmp(a, "--", 2) != 0 || !a[2])
      return bench_fail(c, BENCH_USAGE,
                        "bench: unexpected argument \"%s\" (see pawl bench "
                        "--help)",
                        a);
    const char *eq = strchr(a, '=');
    size_t len = eq ? (size_t)(eq - a) : strlen(a);
    int is_db = len == 4 && strncmp(a, "--db", 4) == 0;
    size_t k = 0;
    while (!is_db && k < sizeof nums / sizeof nums[0] &&
           !(strlen(nums[k].name) == len && strncmp(a, nums[k].name, len) == 0))
      k++;
    if (!is_db && k == sizeof nums / sizeof nums[0])
      return bench_fail(c, BENCH_USAGE,
                        "bench: unknown option %.*s (see pawl bench --help)",
                        (int)len, a);
    const char *v = eq ? eq + 1 : i + 1 < argc ? argv[++i] : NULL;
    if (!v)
      return bench_fail(c, BENCH_USAGE, "bench: %.*s needs a value", (int)len,
                        a);
    if (is_db) {
      if (!*v) return bench_fail(c, BENCH_USAGE, "bench: --db must not be empty");
      cfg->db = v;
      continue;
    }
    long *field = (long *)((char *)cfg + nums[k].off);
    int rc = bench_parse_long(c, nums[k].name, v, nums[k].min, nums[k].max,
                              field);
    if (rc) return rc;
  }
  return 0;
}

/* ---- report ------------------------------------------------------------- */

static void bench_describe_machine(void) {
  char cpu[256] = "unknown";
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (f) {
    char line[512];
    while (fgets(line, sizeof line, f)) {
      char *colon = strchr(line, ':');
      if (strncmp(line, "model name", 10) != 0 || !colon) continue;
      colon++;
      while (*colon == ' ' || *colon == '\t') colon++;
      colon[strcspn(colon, "\n")] = 0;
      snprintf(cpu, sizeof cpu, "%s", colon);
      break;
    }
    fclose(f);
  }
  struct utsname u;
  if (uname(&u) != 0) {
    snprintf(u.sysname, sizeof u.sysname, "unknown");
    snprintf(u.release, sizeof u.release, "unknown");
  }
  char date[64];
  time_t t = time(NULL);
  struct tm tm;
  strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
  printf("machine: nproc=%ld; cpu=%s; kernel=%s %s; pawl=%s; date=%s\n",
         sysconf(_SC_NPROCESSORS_ONLN), cpu, u.sysname, u.release,
         PAWL_VERSION, date);
#ifdef __OPTIMIZE__
  printf("build: optimized\n");
#else
  printf("build: NOT optimized: the numbers mean little, use a Release "
         "build\n");
#endif
}

/* The machine may be shared: a load from other processes depresses the
 * numbers, so it is printed with them. */
static void bench_print_load(const char *when) {
  char buf[128] = "unknown";
  FILE *f = fopen("/proc/loadavg", "r");
  if (f) {
    if (fgets(buf, sizeof buf, f)) buf[strcspn(buf, "\n")] = 0;
    fclose(f);
  }
  printf("load average %s: %s\n", when, buf);
}

static void bench_print_run(long run, long runs, const double *f) {
  char a[32], b[32], d[32];
  fprintf(stderr,
          "run %ld/%ld: enqueue %s jobs/s (1 per txn %s); processed %s "
          "jobs/s (CPU %.0f%%)",
          run + 1, runs, bench_fmt_rate(f[F_BULK], a, sizeof a),
          bench_fmt_rate(f[F_SINGLE], b, sizeof b),
          bench_fmt_rate(f[F_PROC], d, sizeof d), f[F_CPU]);
  if (f[F_MAX] > 0)
    fprintf(stderr, "; latency p50 %.3f p99 %.3f max %.3f ms", f[F_P50],
            f[F_P99], f[F_MAX]);
  fprintf(stderr, "\n");
}

static void bench_print_table(const bench_ctx_t *c, const double *figs) {
  long runs = c->cfg.runs;
  double *vals = calloc((size_t)runs, sizeof *vals);
  double *scratch = calloc((size_t)runs, sizeof *scratch);
  if (!vals || !scratch) {
    free(vals);
    free(scratch);
    printf("(out of memory: no table)\n");
    return;
  }
  printf("\n%s of %ld run%s:\n\n", runs > 1 ? "median, min and max" : "result",
         runs, runs > 1 ? "s" : "");
  printf("| %-36s | %11s | %11s | %11s |\n", "measurement", "median", "min",
         "max");
  printf("|--------------------------------------|-------------|-------------|"
         "-------------|\n");
  for (int f = 0; f < F_COUNT; f++) {
    if (f >= F_P50 && c->cfg.latency_jobs == 0) continue;
    for (long r = 0; r < runs; r++) vals[r] = figs[r * F_COUNT + f];
    double s[3];
    bench_stats(vals, (size_t)runs, scratch, s);
    char m[32], lo[32], hi[32];
    printf("| %-36s | %11s | %11s | %11s |\n", bench_figs[f].name,
           bench_fmt_fig(f, s[0], m, sizeof m),
           bench_fmt_fig(f, s[1], lo, sizeof lo),
           bench_fmt_fig(f, s[2], hi, sizeof hi));
  }
  free(vals);
  free(scratch);
}

/* ---- main --------------------------------------------------------------- */

static int bench_run(bench_ctx_t *c) {
  const bench_cfg_t *cfg = &c->cfg;
  int rc = 0;
  if (cfg->db) {
    /* Before anything else, so that a bad URL is a usage error at once. */
    pawl_t *p = NULL;
    if ((rc = bench_open(c, cfg->db, &p))) return rc;
    pawl_close(p);
  }
  c->payload = bench_make_payload(cfg->payload_bytes);
  if (!c->payload) return bench_fail(c, BENCH_FAIL, "bench: out of memory");
  if ((rc = bench_make_dir(c))) return rc;

  long single = cfg->jobs < BENCH_SINGLE_MAX ? cfg->jobs : BENCH_SINGLE_MAX;
  char a[32], b[32];
  bench_describe_machine();
  printf("config: jobs=%s (+%s enqueued one per txn) nodes=%ld workers=%ld "
         "payload=%zu bytes (filler %ld) runs=%ld latency-jobs=%ld\n",
         bench_fmt_rate((double)cfg->jobs, a, sizeof a),
         bench_fmt_rate((double)single, b, sizeof b), cfg->nodes, cfg->workers,
         strlen(c->payload), cfg->payload_bytes, cfg->runs, cfg->latency_jobs);
  char shown[512];
  if (cfg->db) pawl__redact_url(cfg->db, shown, sizeof shown);
  if (cfg->db)
    printf("database: %s (--db): the jobs are added there, in queues "
           "pawl-bench-%ld-r1..r%ld, and stay\n",
           shown, (long)getpid(), cfg->runs);
  else
    printf("database: a fresh SQLite file per run in %s (removed at the "
           "end)\n",
           c->dir);
  bench_print_load("at start");
  fflush(stdout);

  double *figs = calloc((size_t)cfg->runs * F_COUNT, sizeof *figs);
  if (!figs) return bench_fail(c, BENCH_FAIL, "bench: out of memory");
  long rss_first = 0, rss = 0;
  for (long r = 0; !rc && r < cfg->runs; r++) {
    rc = bench_one_run(c, r, &figs[r * F_COUNT], &rss);
    if (r == 0) rss_first = rss;
    if (!rc) bench_print_run(r, cfg->runs, &figs[r * F_COUNT]);
  }
  double heap_kib = 0;
  long probe1 = 0, probe8 = 0;
  if (!rc) {
    fprintf(stderr, "memory: Lua heap and RSS probes\n");
    rc = bench_lua_heap(c, &heap_kib);
  }
  if (!rc) rc = bench_probe_rss(c, 1, &probe1);
  if (!rc) rc = bench_probe_rss(c, BENCH_PROBE_WORKERS, &probe8);
  if (!rc) {
    bench_print_table(c, figs);
    printf("\nmemory:\n\n");
    printf("| %-58s | %11s |\n", "measurement", "value");
    printf("|------------------------------------------------------------|"
           "-------------|\n");
    printf("| %-58s | %7.1f MiB |\n",
           "peak RSS of this process after processing (run 1)",
           (double)rss_first / 1024.0);
    printf("| %-58s | %7.1f KiB |\n",
           "Lua heap per worker state (after a full GC)", heap_kib);
    char label[96];
    snprintf(label, sizeof label,
             "peak RSS, fresh process, 1 worker, %d jobs", BENCH_PROBE_JOBS);
    printf("| %-58s | %7.1f MiB |\n", label, (double)probe1 / 1024.0);
    snprintf(label, sizeof label, "peak RSS, fresh process, %d workers, %d jobs",
             BENCH_PROBE_WORKERS, BENCH_PROBE_JOBS);
    printf("| %-58s | %7.1f MiB |\n", label, (double)probe8 / 1024.0);
    snprintf(label, sizeof label, "RSS delta per worker: (%d workers - 1) / %d",
             BENCH_PROBE_WORKERS, BENCH_PROBE_WORKERS - 1);
    printf("| %-58s | %7.0f KiB |\n", label,
           (double)(probe8 - probe1) / (BENCH_PROBE_WORKERS - 1));
    printf("\nhost log: %ld errors, %ld warnings\n", c->log.errors,
           c->log.warnings);
    bench_print_load("at end");
    printf("peak RSS of this process at the end: %.1f MiB\n",
           (double)bench_maxrss_kb() / 1024.0);
  }
  free(figs);
  return rc;
}

int cli_bench_main(int argc, char **argv) {
  if (argc >= 2 && strcmp(argv[1], "--probe-rss") == 0)
    return bench_probe_main(argc, argv);
  bench_ctx_t *c = calloc(1, sizeof *c);
  if (!c) {
    bench_print_error("out of memory");
    return BENCH_FAIL;
  }
  int rc = bench_parse(c, argc, argv);
  if (!rc && c->cfg.help) {
    fputs(bench_usage_text, stdout);
    free(c);
    return BENCH_OK;
  }
  struct sigaction sa, old_int, old_term;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = bench_on_signal;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  if (!rc) {
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    rc = bench_run(c);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
  }
  fflush(stdout);
  bench_remove_dir(c);
  if (rc) bench_print_error(c->err);
  free(c->payload);
  free(c);
  return rc;
}
