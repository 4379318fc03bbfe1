/* test_step.c: step mode (pawl_step_start, pawl_step, pawl_next_deadline):
 * jobs run on the calling thread with everything the threaded host does
 * (retry policy, sanitizer, hooks, timeouts, reload, leases), the idle
 * check, and the refusals (another thread, a handle with threads). The
 * pg_step_ variants run the tests that touch the store on PostgreSQL (a
 * schema of their own on the `pg` fixture's server): jobs and outcomes,
 * the retry policy with an injected clock, another connection's enqueue
 * seen through LISTEN, and the lease of a running job, held against a
 * second handle and extended during a long job.
 *
 * Nothing here is timed by the machine's speed: outcomes are asserted,
 * times come from an injected clock where they matter, and the waits that
 * need real time (a timeout, a lease) have generous bounds on the slow
 * side only. Scripts live in the test's temp dir (its working dir). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <time.h>

#include "pawl.h"
#include "pgtest.h"
#include "unit.h"

#define ST_T0 INT64_C(1800000000000)

static _Atomic int64_t st_now = ST_T0;

/* The test's database: SQLite in its working dir, or (st_use_pg) a
 * PostgreSQL schema of its own. Every handle of the test opens it. */
static char st_db[1024] = "sqlite:step.db";
static int st_pg;

static void st_use_pg(const char *name) {
  const char *url = pgtest_url(name);
  CHECK_INT(strlen(url), <, sizeof st_db);
  snprintf(st_db, sizeof st_db, "%s", url);
  st_pg = 1;
}

static int64_t st_mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t st_clock(void *data) {
  (void)data;
  return atomic_load(&st_now);
}

static void st_script(const char *name, const char *src) {
  char path[256];
  snprintf(path, sizeof path, "scripts/%s.lua", name);
  FILE *f = fopen(path, "w");
  CHECK(f != NULL);
  CHECK_INT(fputs(src, f), >=, 0);
  CHECK_INT(fclose(f), ==, 0);
}

static pawl_t *st_open_opts(int frozen, int64_t lease_ms) {
  mkdir("scripts", 0700);
  pawl_options_t o;
  pawl_options_init(&o);
  o.db = st_db;
  o.node_id = "node-step";
  o.lease_ms = lease_ms;
  if (frozen) o.clock = st_clock;
  pawl_t *p = NULL;
  char err[512];
  if (pawl_open(&p, &o, err, sizeof err))
    unit_fail(__FILE__, __LINE__, "open: %s", err);
  return p;
}

static pawl_t *st_open(int frozen) { return st_open_opts(frozen, 3600000); }

static void st_quiet(pawl_host_opts_t *o) {
  pawl_host_opts_init(o);
  o->scripts_dir = "scripts";
  o->log_level = PAWL_LOG_ERROR;
}

static pawl_id_t st_enqueue(pawl_t *p, const char *type, int max_attempts) {
  pawl_enqueue_opts_t o;
  pawl_enqueue_opts_init(&o);
  o.max_attempts = max_attempts;
  pawl_id_t id;
  CHECK_OK(pawl_enqueue(p, type, NULL, &o, &id, NULL));
  return id;
}

static pawl_job_t *st_get(pawl_t *p, pawl_id_t id) {
  pawl_job_t *j = NULL;
  CHECK_OK(pawl_get(p, &id, &j));
  return j;
}

/* Steps until nothing more runs; returns how many jobs ran in all. */
static int st_drain(pawl_t *p) {
  int total = 0;
  for (int i = 0; i < 1000; i++) {
    int n = pawl_step(p, 50);
    CHECK_INT(n, >=, 0);
    if (n == 0) return total;
    total += n;
  }
  unit_fail(__FILE__, __LINE__, "steps never ran dry");
}

/* JSON text without its spaces (PostgreSQL's jsonb writes `{"sum": 5}`);
 * for results with no space inside a string. */
static const char *st_unspaced(const char *json, char *buf, size_t size) {
  CHECK(json != NULL);
  size_t n = 0;
  for (; *json && n + 1 < size; json++)
    if (*json != ' ') buf[n++] = *json;
  buf[n] = '\0';
  return buf;
}

static void st_runs_jobs(void) {
  char buf[64];
  pawl_t *p = st_open(0);
  st_script("add", "return { run = function(job) "
                   "return { sum = job.payload.a + job.payload.b } end }");
  pawl_host_opts_t o;
  st_quiet(&o);
  CHECK_OK(pawl_step_start(p, &o));
  pawl_id_t ids[5];
  for (int i = 0; i < 5; i++)
    CHECK_OK(pawl_enqueue(p, "add", "{\"a\":2,\"b\":3}", NULL, &ids[i], NULL));
  CHECK_INT(st_drain(p), ==, 5);
  for (int i = 0; i < 5; i++) {
    pawl_job_t *j = st_get(p, ids[i]);
    CHECK_INT(j->state, ==, PAWL_SUCCEEDED);
    CHECK_STR(st_unspaced(j->result, buf, sizeof buf), "{\"sum\":5}");
    pawl_job_free(j);
  }
  /* Nothing due: a step runs nothing, and says when to come back. */
  CHECK_INT(pawl_step(p, 2), ==, 0);
  int64_t next = pawl_next_deadline(p);
  CHECK_INT(next, >, pawl_now(p) - 1);
  pawl_close(p);
}

void test_step_runs_jobs(void) { st_runs_jobs(); }

void test_pg_step_runs_jobs(void) {
  st_use_pg("step_runs_jobs");
  st_runs_jobs();
}

static int st_count(const pawl_job_t *j, void *data) {
  (void)j;
  (*(int *)data)++;
  return 0;
}

static void st_retry_sanitize_hooks(void) {
  pawl_t *p = st_open(1);
  st_script("flaky",
            "return { max_attempts = 3,\n"
            "  retry = function(attempt) return 10 * attempt end,\n"
            "  sanitize = function(msg) return (msg:gsub('token=%S+', "
            "'token=<x>')) end,\n"
            "  on_dead = function(job, err) pawl.enqueue('marker', "
            "{ dead = job.id, err = err }) end,\n"
            "  run = function() error('boom token=s3cret', 0) end }");
  st_script("marker", "return { run = function() return true end }");
  pawl_host_opts_t o;
  st_quiet(&o);
  o.reload_ms = o.poll_ms = 3600000; /* the next deadline is the retry's */
  CHECK_OK(pawl_step_start(p, &o));
  pawl_id_t id = st_enqueue(p, "flaky", 0);
  CHECK_INT(pawl_step(p, 100), ==, 1);
  pawl_job_t *j = st_get(p, id);
  CHECK_INT(j->state, ==, PAWL_PENDING);
  CHECK_INT(j->attempt, ==, 1);
  CHECK_INT(j->run_at, ==, ST_T0 + 10000);
  /* The message alone: its traceback is in the attempt's trace. */
  CHECK(strcmp(j->last_error, "boom token=<x>") == 0);
  pawl_job_free(j);
  /* Not due yet: nothing runs, and the next deadline is the retry's. */
  CHECK_INT(pawl_step(p, 100), ==, 0);
  CHECK_INT(pawl_next_deadline(p), ==, ST_T0 + 10000);
  atomic_store(&st_now, ST_T0 + 10000);
  CHECK_INT(pawl_step(p, 100), ==, 1);
  atomic_store(&st_now, ST_T0 + 30000);
  CHECK_INT(pawl_step(p, 100), ==, 1); /* the third and last attempt */
  j = st_get(p, id);
  CHECK_INT(j->state, ==, PAWL_FAILED);
  CHECK_INT(j->attempt, ==, 3);
  pawl_job_free(j);
  /* on_dead ran once the failure was stored, and enqueued the marker. */
  CHECK_INT(st_drain(p), ==, 1);
  pawl_filter_t f;
  pawl_filter_init(&f);
  f.type = "marker";
  f.state = PAWL_SUCCEEDED;
  int n = 0;
  CHECK_OK(pawl_list(p, &f, st_count, &n));
  CHECK_INT(n, ==, 1);
  pawl_close(p);
}

void test_step_retry_sanitize_hooks(void) { st_retry_sanitize_hooks(); }

void test_pg_step_retry_sanitize_hooks(void) {
  st_use_pg("step_retry");
  st_retry_sanitize_hooks();
}

/* A job past its timeout is interrupted by the stepping thread's timer:
 * `spin` loops in pure (compiled) Lua, `nap` sleeps in a loop. Under
 * ThreadSanitizer, which holds a signal back until the thread enters libc
 * (a compiled loop never does), only `nap` runs. */
void test_step_timeout(void) {
  pawl_t *p = st_open(0);
  st_script("spin", "return { timeout = 0.2, max_attempts = 1, "
                    "run = function() while true do end end }");
  st_script("nap", "return { timeout = 0.2, max_attempts = 1, "
                   "run = function() while true do pawl.sleep(0.01) end end }");
  st_script("ok", "return { run = function() return 1 end }");
  pawl_host_opts_t o;
  st_quiet(&o);
  CHECK_OK(pawl_step_start(p, &o));
#ifdef __SANITIZE_THREAD__
  const char *types[] = {"nap"};
#else
  const char *types[] = {"spin", "nap"};
#endif
  for (size_t i = 0; i < sizeof types / sizeof *types; i++) {
    pawl_id_t id = st_enqueue(p, types[i], 0);
    CHECK_INT(pawl_step(p, 0), ==, 1);
    pawl_job_t *j = st_get(p, id);
    CHECK_INT(j->state, ==, PAWL_FAILED);
    CHECK(j->last_error && strstr(j->last_error, "timed out after 0.2 s"));
    pawl_job_free(j);
  }
  /* The state is fine afterwards: the next job runs. */
  pawl_id_t id = st_enqueue(p, "ok", 0);
  CHECK_INT(pawl_step(p, 0), ==, 1);
  pawl_job_t *j = st_get(p, id);
  CHECK_INT(j->state, ==, PAWL_SUCCEEDED);
  pawl_job_free(j);
  pawl_close(p);
}

void test_step_reload(void) {
  pawl_t *p = st_open(0);
  st_script("v", "return { run = function() return 'one' end }");
  pawl_host_opts_t o;
  st_quiet(&o);
  o.reload_ms = 1; /* every step looks */
  CHECK_OK(pawl_step_start(p, &o));
  pawl_id_t a = st_enqueue(p, "v", 0);
  CHECK_INT(st_drain(p), ==, 1);
  st_script("v", "return { run = function() return 'two, longer' end }");
  struct timespec ts = {0, 5000000};
  nanosleep(&ts, NULL); /* past reload_ms */
  pawl_id_t b = st_enqueue(p, "v", 0);
  CHECK_INT(st_drain(p), ==, 1);
  pawl_job_t *ja = st_get(p, a), *jb = st_get(p, b);
  CHECK_STR(ja->result, "\"one\"");
  CHECK_STR(jb->result, "\"two, longer\"");
  pawl_job_free(ja);
  pawl_job_free(jb);
  pawl_close(p);
}

/* Another connection's enqueue is seen by an idle step (no wake flag): on
 * SQLite the data version tells at once; on PostgreSQL the NOTIFY of the
 * enqueue, once it reaches the step's listening connection (asynchronous:
 * the steps go on until then, under a hang guard only). Polls never fire
 * here, so nothing else can find the job. */
static void st_sees_other_connections(void) {
  pawl_t *p = st_open(0);
  st_script("ok", "return { run = function() return 1 end }");
  pawl_host_opts_t o;
  st_quiet(&o);
  o.poll_ms = 3600000; /* the safety net never fires */
  CHECK_OK(pawl_step_start(p, &o));
  CHECK_INT(pawl_step(p, 1), ==, 0);
  CHECK_INT(pawl_step(p, 1), ==, 0); /* idle now */
  pawl_options_t oo;
  pawl_options_init(&oo);
  oo.db = st_db;
  pawl_t *q = NULL;
  CHECK_OK(pawl_open(&q, &oo, NULL, 0));
  pawl_id_t id = st_enqueue(q, "ok", 0);
  int ran = pawl_step(p, 1);
  for (int64_t give_up = st_mono_ms() + 60000;
       st_pg && ran == 0 && st_mono_ms() < give_up; ran = pawl_step(p, 1)) {
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  CHECK_INT(ran, ==, 1);
  pawl_job_t *j = st_get(q, id);
  CHECK_INT(j->state, ==, PAWL_SUCCEEDED);
  pawl_job_free(j);
  pawl_close(q);
  pawl_close(p);
}

void test_step_sees_other_connections(void) { st_sees_other_connections(); }

void test_pg_step_sees_other_connections(void) {
  st_use_pg("step_sees_others");
  st_sees_other_connections();
}

/* A job that runs longer than its lease keeps it: the heartbeat extends it
 * while the job runs, so a recovery on another connection does not take it
 * back. Time is the injected clock's, moved by the sweeper thread (never by
 * the machine's speed): each round moves it 600 ms on (the lease is 1000),
 * sweeps, and waits for a heartbeat to extend the lease past the new now
 * (a hang guard only); after four rounds the first lease is long gone. The
 * job polls a gate file (Lua instructions and calls all along, so the
 * timer's heartbeat reaches it), which the sweeper opens at the end. */
typedef struct {
  pawl_id_t id;
  int rounds, extended;
  size_t recovered;
} st_sweep_t;

static int64_t st_lease_of(pawl_t *q, const pawl_id_t *id, pawl_state_t *st) {
  pawl_job_t *j = NULL;
  if (pawl_get(q, id, &j)) return -1;
  int64_t e = j->lease_expires;
  *st = j->state;
  pawl_job_free(j);
  return e;
}

static void *st_sweeper(void *arg) {
  st_sweep_t *sw = arg;
  pawl_options_t oo;
  pawl_options_init(&oo);
  oo.db = st_db;
  oo.node_id = "sweeper";
  oo.clock = st_clock;
  pawl_t *q = NULL;
  if (pawl_open(&q, &oo, NULL, 0) == 0) {
    pawl_state_t st = PAWL_PENDING;
    int64_t give_up = st_mono_ms() + 60000;
    while (st_lease_of(q, &sw->id, &st) >= 0 && st != PAWL_RUNNING &&
           st_mono_ms() < give_up) {
      struct timespec ts = {0, 1000000};
      nanosleep(&ts, NULL);
    }
    for (int r = 0; r < 4 && st == PAWL_RUNNING; r++) {
      int64_t now = atomic_fetch_add(&st_now, 600) + 600;
      size_t n = 0;
      pawl_recover(q, &n);
      sw->recovered += n;
      sw->rounds++;
      int64_t e;
      give_up = st_mono_ms() + 60000;
      while ((e = st_lease_of(q, &sw->id, &st)) >= 0 && e < now + 1000 &&
             st == PAWL_RUNNING && st_mono_ms() < give_up) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
      }
      if (e >= now + 1000) sw->extended++;
    }
    pawl_close(q);
  }
  FILE *f = fopen("gate", "w"); /* whatever happened: the job ends */
  if (f) fclose(f);
  return NULL;
}

static void st_long_job_keeps_lease(void) {
  pawl_t *p = st_open_opts(1, 1000);
  st_script("long", "return { timeout = 60, max_attempts = 1, run = function()\n"
                    "  while not io.open('gate') do end\n"
                    "  return 'done' end }");
  pawl_host_opts_t o;
  st_quiet(&o);
  o.heartbeat_ms = 50;
  o.allow_io = 1;
  CHECK_OK(pawl_step_start(p, &o));
  st_sweep_t sw = {.id = st_enqueue(p, "long", 0)};
  pthread_t t;
  CHECK_INT(pthread_create(&t, NULL, st_sweeper, &sw), ==, 0);
  CHECK_INT(pawl_step(p, 0), ==, 1);
  pthread_join(t, NULL);
  CHECK_INT(sw.rounds, ==, 4);
  CHECK_INT(sw.extended, ==, 4);
  CHECK_INT(sw.recovered, ==, 0);
  pawl_job_t *j = st_get(p, sw.id);
  CHECK_INT(j->state, ==, PAWL_SUCCEEDED);
  CHECK_INT(j->recoveries, ==, 0);
  pawl_job_free(j);
  pawl_close(p);
}

void test_step_long_job_keeps_lease(void) { st_long_job_keeps_lease(); }

void test_pg_step_long_job_keeps_lease(void) {
  st_use_pg("step_long_job");
  st_long_job_keeps_lease();
}

/* While a job runs in step mode its lease is held: a second handle (another
 * node, its own connection) called from inside the job cannot claim it nor
 * take it back, and sees it running under this node's lease. */
typedef struct {
  pawl_t *other;
  int ran, claim_rc, recover_rc, get_rc;
  size_t claimed, recovered;
  pawl_state_t state;
  char owner[64];
  int64_t lease_expires, now;
} st_held_t;

static int st_held(const pawl_job_t *job, pawl_ctx_t *ctx, void *ud) {
  (void)ctx;
  st_held_t *h = ud;
  h->ran++;
  pawl_job_t **jobs = NULL;
  h->claim_rc = pawl_claim(h->other, NULL, 10, &jobs, &h->claimed);
  pawl_jobs_free(jobs, h->claimed);
  h->recover_rc = pawl_recover(h->other, &h->recovered);
  pawl_job_t *j = NULL;
  h->get_rc = pawl_get(h->other, &job->id, &j);
  if (h->get_rc == 0) {
    h->state = j->state;
    snprintf(h->owner, sizeof h->owner, "%s",
             j->lease_owner ? j->lease_owner : "");
    h->lease_expires = j->lease_expires;
    pawl_job_free(j);
  }
  h->now = pawl_now(h->other);
  return PAWL_JOB_OK;
}

static void st_lease_held(void) {
  pawl_t *p = st_open(0); /* a lease of an hour */
  pawl_options_t oo;
  pawl_options_init(&oo);
  oo.db = st_db;
  oo.node_id = "other-node";
  st_held_t h = {0};
  CHECK_OK(pawl_open(&h.other, &oo, NULL, 0));
  CHECK_OK(pawl_define_c(p, "held", st_held, &h, NULL));
  pawl_host_opts_t o;
  st_quiet(&o);
  CHECK_OK(pawl_step_start(p, &o));
  pawl_id_t id = st_enqueue(p, "held", 1);
  CHECK_INT(pawl_step(p, 0), ==, 1);
  CHECK_INT(h.ran, ==, 1);
  CHECK_OK(h.claim_rc);
  CHECK_INT(h.claimed, ==, 0);
  CHECK_OK(h.recover_rc);
  CHECK_INT(h.recovered, ==, 0);
  CHECK_OK(h.get_rc);
  CHECK_INT(h.state, ==, PAWL_RUNNING);
  CHECK_STR(h.owner, "node-step");
  CHECK_INT(h.lease_expires, >, h.now);
  pawl_job_t *j = st_get(h.other, id);
  CHECK_INT(j->state, ==, PAWL_SUCCEEDED);
  CHECK_INT(j->attempt, ==, 1);
  CHECK_INT(j->recoveries, ==, 0);
  pawl_job_free(j);
  pawl_close(h.other);
  pawl_close(p);
}

void test_step_lease_held(void) { st_lease_held(); }

void test_pg_step_lease_held(void) {
  st_use_pg("step_lease_held");
  st_lease_held();
}

/* ---- refusals ------------------------------------------------------------ */

typedef struct {
  pawl_t *p;
  int rc;
  int64_t next;
} st_other_t;

static void *st_other_thread(void *arg) {
  st_other_t *a = arg;
  a->rc = pawl_step(a->p, 1);
  a->next = pawl_next_deadline(a->p);
  return NULL;
}

void test_step_refusals(void) {
  pawl_t *p = st_open(0);
  pawl_host_opts_t o;
  st_quiet(&o);
  CHECK_INT(pawl_step(p, -1), ==, PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "budget_ms"));
  CHECK_INT(pawl_step(p, PAWL_DELAY_MAX_MS + 1), ==, PAWL_EINVAL);
  CHECK_INT(pawl_step(p, 0), ==, 0);
  /* Another thread. */
  st_other_t a = {.p = p};
  pthread_t t;
  CHECK_INT(pthread_create(&t, NULL, st_other_thread, &a), ==, 0);
  pthread_join(t, NULL);
  CHECK_INT(a.rc, ==, PAWL_EMISUSE);
  CHECK_INT(a.next, ==, PAWL_EMISUSE);
  /* Threads on a handle in step mode, step mode twice. */
  CHECK_INT(pawl_start(p, &o), ==, PAWL_EBUSY);
  CHECK_INT(pawl_step_start(p, &o), ==, PAWL_EBUSY);
  pawl_close(p);
  /* Step mode on a handle with threads. */
  p = st_open(0);
  CHECK_OK(pawl_start(p, &o));
  CHECK_INT(pawl_step(p, 1), ==, PAWL_EBUSY);
  CHECK_INT(pawl_next_deadline(p), ==, PAWL_EBUSY);
  CHECK_INT(pawl_step_start(p, &o), ==, PAWL_EBUSY);
  pawl_stop(p, PAWL_STOP_NOW);
  CHECK_OK(pawl_wait(p, -1));
  pawl_close(p);
  /* Bad options: the step does not start, the handle stays usable. */
  p = st_open(0);
  o.scripts_dir = "no-such-dir";
  CHECK_INT(pawl_step_start(p, &o), ==, PAWL_EIO);
  o.scripts_dir = "scripts";
  o.poll_ms = -5;
  CHECK_INT(pawl_step_start(p, &o), ==, PAWL_EINVAL);
  o.poll_ms = 0;
  CHECK_OK(pawl_step_start(p, &o));
  pawl_close(p);
}


/* ---- other threads: siblings, refusals, the wake -------------------------- */

#include <sqlite3.h>

/* The database file passes PRAGMA integrity_check (read on a connection
 * of its own, after every handle is closed). */
static void st_integrity(const char *path) {
  sqlite3 *db = NULL;
  CHECK_INT(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), ==,
            SQLITE_OK);
  sqlite3_stmt *st = NULL;
  CHECK_INT(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL),
            ==, SQLITE_OK);
  CHECK_INT(sqlite3_step(st), ==, SQLITE_ROW);
  CHECK_STR((const char *)sqlite3_column_text(st, 0), "ok");
  sqlite3_finalize(st);
  sqlite3_close(db);
}

#define ST_THREADS 4
#define ST_PER_THREAD 10000

/* How many times each job ran, by its payload's number. Jobs run on the
 * stepping thread only (checked). */
typedef struct {
  _Atomic int runs[ST_THREADS * ST_PER_THREAD];
  _Atomic int off_thread;
  pthread_t owner;
} st_count_t;

static int st_counted(const pawl_job_t *job, pawl_ctx_t *ctx, void *ud) {
  (void)ctx;
  st_count_t *c = ud;
  if (!pthread_equal(pthread_self(), c->owner))
    atomic_fetch_add(&c->off_thread, 1);
  long i = strtol(job->payload + 5, NULL, 10); /* {"i":N} */
  if (i >= 0 && i < ST_THREADS * ST_PER_THREAD)
    atomic_fetch_add(&c->runs[i], 1);
  return PAWL_JOB_OK;
}

typedef struct {
  pawl_t *owner_handle; /* the stepping handle: refuses this thread */
  pawl_t *q;            /* this thread's sibling */
  int index;
  int refused[6];
} st_feeder_t;

/* One of the enqueuing threads: first what the handle of the stepping
 * thread refuses (every call, without touching it), then its share of
 * the jobs through its own sibling. */
static void *st_feeder(void *arg) {
  st_feeder_t *f = arg;
  pawl_t *p = f->owner_handle;
  pawl_job_t *j = NULL;
  pawl_id_t id;
  pawl_id_new(&id);
  f->refused[0] = pawl_enqueue(p, "counted", "{\"i\":-1}", NULL, NULL, NULL);
  f->refused[1] = pawl_get(p, &id, &j);
  f->refused[2] = pawl_step(p, 1);
  f->refused[3] = (int)pawl_next_deadline(p);
  f->refused[4] = pawl_step_wait(p, 0);
  pawl_t *q2 = NULL;
  f->refused[5] = pawl_sibling(p, &q2);
  char payload[32];
  for (int k = 0; k < ST_PER_THREAD; k++) {
    snprintf(payload, sizeof payload, "{\"i\":%d}",
             f->index * ST_PER_THREAD + k);
    CHECK_OK(pawl_enqueue(f->q, "counted", payload, NULL, NULL, NULL));
  }
  return NULL;
}

/* Four threads enqueue 10,000 jobs each through siblings while this
 * thread steps (sleeping in pawl_step_wait between steps, with the poll a
 * minute away: only the wake brings the jobs in quickly). Every job runs
 * exactly once, on this thread; the calls the other threads make on the
 * stepping handle itself are refused; the database is intact. */
void test_step_sibling_threads(void) {
  pawl_t *p = st_open(0);
  static st_count_t c;
  c.owner = pthread_self();
  CHECK_OK(pawl_define_c(p, "counted", st_counted, &c, NULL));
  pawl_host_opts_t o;
  st_quiet(&o);
  o.poll_ms = 60000;
  CHECK_OK(pawl_step_start(p, &o));
  st_feeder_t f[ST_THREADS];
  pthread_t t[ST_THREADS];
  for (int i = 0; i < ST_THREADS; i++) {
    f[i] = (st_feeder_t){.owner_handle = p, .index = i};
    CHECK_OK(pawl_sibling(p, &f[i].q));
    CHECK_INT(pthread_create(&t[i], NULL, st_feeder, &f[i]), ==, 0);
  }
  const int total = ST_THREADS * ST_PER_THREAD;
  int ran = 0;
  int64_t give_up = st_mono_ms() + 170000;
  while (ran < total) {
    if (st_mono_ms() > give_up)
      unit_fail(__FILE__, __LINE__, "only %d of %d jobs ran", ran, total);
    int w = pawl_step_wait(p, 1000);
    CHECK_INT(w, >=, 0);
    int n = pawl_step(p, 5);
    CHECK_INT(n, >=, 0);
    ran += n;
  }
  for (int i = 0; i < ST_THREADS; i++) {
    CHECK_INT(pthread_join(t[i], NULL), ==, 0);
    for (int k = 0; k < 6; k++) CHECK_INT(f[i].refused[k], ==, PAWL_EMISUSE);
    pawl_close(f[i].q);
  }
  CHECK_INT(ran, ==, total);
  CHECK_INT(pawl_step(p, 5), ==, 0); /* none left, none twice */
  pawl_close(p);
  for (int i = 0; i < total; i++)
    if (atomic_load(&c.runs[i]) != 1)
      unit_fail(__FILE__, __LINE__, "job %d ran %d times", i,
                atomic_load(&c.runs[i]));
  CHECK_INT(atomic_load(&c.off_thread), ==, 0);
  st_integrity("step.db");
}

typedef struct {
  pawl_t *q;
  _Atomic int waiting;
  int rc;
} st_ping_t;

static void *st_ping(void *arg) {
  st_ping_t *a = arg;
  while (!atomic_load(&a->waiting)) sched_yield();
  a->rc = pawl_enqueue(a->q, "counted", "{\"i\":0}", NULL, NULL, NULL);
  return NULL;
}

/* The wake itself: with nothing due before minutes from now (poll,
 * heartbeat and reload all far), a sibling's enqueue on another thread
 * ends pawl_step_wait at once (the bound, 30 s, is only a hang guard far
 * below the next deadline), also for a sibling made before step mode
 * started, and the job runs at the next step. */
void test_step_sibling_wakes(void) {
  pawl_t *p = st_open(0);
  static st_count_t c;
  c.owner = pthread_self();
  CHECK_OK(pawl_define_c(p, "counted", st_counted, &c, NULL));
  st_ping_t a = {0};
  CHECK_OK(pawl_sibling(p, &a.q)); /* before step mode */
  pawl_host_opts_t o;
  st_quiet(&o);
  o.scripts_dir = NULL;
  o.poll_ms = 600000;
  o.heartbeat_ms = 600000;
  o.reload_ms = 600000;
  CHECK_OK(pawl_step_start(p, &o));
  CHECK_INT(pawl_step(p, 5), ==, 0);
  int64_t far = pawl_next_deadline(p) - pawl_now(p);
  CHECK_INT(far, >, 120000);
  /* Nothing comes: the wait times out (0). */
  CHECK_INT(pawl_step_wait(p, 1), ==, 0);
  pthread_t t;
  CHECK_INT(pthread_create(&t, NULL, st_ping, &a), ==, 0);
  atomic_store(&a.waiting, 1);
  int64_t t0 = st_mono_ms();
  CHECK_INT(pawl_step_wait(p, 600000), ==, 1);
  CHECK_INT(st_mono_ms() - t0, <, 30000);
  CHECK_INT(pthread_join(t, NULL), ==, 0);
  CHECK_OK(a.rc);
  CHECK_INT(pawl_step(p, 5), ==, 1);
  CHECK_INT(atomic_load(&c.runs[0]), ==, 1);
  /* The stepping handle closed first: the sibling stays usable, its
   * enqueue wakes nothing (and touches nothing freed). */
  pawl_close(p);
  CHECK_OK(pawl_enqueue(a.q, "counted", "{\"i\":1}", NULL, NULL, NULL));
  pawl_close(a.q);
}

/* ---- misuse: closed handles, refusals that change nothing ---------------- */

/* An allocator that keeps every freed block (freed for real at the end),
 * so that a closed handle's memory stays as pawl_close left it: what a
 * call on it then sees is the poisoned magic, not reused memory. */
typedef struct st_kept {
  struct st_kept *next;
} st_kept_t;
static pthread_mutex_t st_kept_mu = PTHREAD_MUTEX_INITIALIZER;
static st_kept_t *st_kept;

static void *st_keep_malloc(void *ud, size_t n) {
  (void)ud;
  return malloc(n < sizeof(st_kept_t) ? sizeof(st_kept_t) : n);
}
static void *st_keep_realloc(void *ud, void *ptr, size_t n) {
  (void)ud;
  return realloc(ptr, n < sizeof(st_kept_t) ? sizeof(st_kept_t) : n);
}
static void st_keep_free(void *ud, void *ptr) {
  (void)ud;
  pthread_mutex_lock(&st_kept_mu);
  /* The first word is the list link; the rest (the magic) stays. */
  st_kept_t *k = ptr;
  k->next = st_kept;
  st_kept = k;
  pthread_mutex_unlock(&st_kept_mu);
}

/* Calls on a closed handle (a plain one, one in step mode) are refused
 * with PAWL_EMISUSE instead of running on freed memory; closing twice
 * does nothing; NULL is refused too. */
void test_step_closed_handle(void) {
  pawl_allocator_t al = {st_keep_malloc, st_keep_realloc, st_keep_free, NULL};
  CHECK_OK(pawl_set_allocator(&al));
  for (int mode = 0; mode < 2; mode++) {
    pawl_t *p = st_open(0);
    static st_count_t c;
    c.owner = pthread_self();
    CHECK_OK(pawl_define_c(p, "counted", st_counted, &c, NULL));
    if (mode) CHECK_INT(pawl_step(p, 0), ==, 0);
    pawl_close(p);
    pawl_id_t id;
    pawl_id_new(&id);
    pawl_job_t *j = NULL;
    CHECK_INT(pawl_enqueue(p, "counted", "{\"i\":0}", NULL, NULL, NULL), ==,
              PAWL_EMISUSE);
    CHECK_INT(pawl_get(p, &id, &j), ==, PAWL_EMISUSE);
    CHECK(j == NULL);
    CHECK_INT(pawl_step(p, 0), ==, PAWL_EMISUSE);
    CHECK_INT(pawl_step_start(p, NULL), ==, PAWL_EMISUSE);
    CHECK_INT(pawl_start(p, NULL), ==, PAWL_EMISUSE);
    CHECK_INT(pawl_wait(p, 0), ==, PAWL_EMISUSE);
    CHECK_INT(pawl_checkpoint(p), ==, PAWL_EMISUSE);
    CHECK_INT(pawl_now(p), ==, PAWL_EMISUSE);
    pawl_t *q = NULL;
    CHECK_INT(pawl_sibling(p, &q), ==, PAWL_EMISUSE);
    CHECK(q == NULL);
    CHECK(strstr(pawl_errmsg(p), "closed") != NULL);
    pawl_stop(p, PAWL_STOP_NOW); /* nothing */
    pawl_close(p);               /* closed twice: nothing */
  }
  CHECK_INT(pawl_enqueue(NULL, "counted", NULL, NULL, NULL, NULL), ==,
            PAWL_EMISUSE);
  CHECK_INT(pawl_step(NULL, 0), ==, PAWL_EMISUSE);
  pawl_close(NULL);
  CHECK_STR(pawl_err_name(PAWL_EMISUSE), "PAWL_EMISUSE");
  CHECK(strstr(pawl_strerror(PAWL_EMISUSE), "closed handle") != NULL);
  CHECK_OK(pawl_set_allocator(NULL));
  while (st_kept) {
    st_kept_t *k = st_kept;
    st_kept = k->next;
    free(k);
  }
}

/* A refused pawl_step leaves the handle as it was: not in step mode, so
 * that pawl_start still works on it. */
void test_step_refusal_leaves_handle(void) {
  pawl_t *p = st_open(0);
  CHECK_INT(pawl_step(p, -1), ==, PAWL_EINVAL);
  CHECK_INT(pawl_step(p, PAWL_DELAY_MAX_MS + 1), ==, PAWL_EINVAL);
  CHECK_INT(pawl_step_wait(p, -1), ==, PAWL_EINVAL);
  pawl_host_opts_t o;
  st_quiet(&o);
  CHECK_OK(pawl_start(p, &o));
  pawl_stop(p, PAWL_STOP_NOW);
  CHECK_OK(pawl_wait(p, -1));
  /* After pawl_wait the messages say the host stopped, not that it runs. */
  CHECK_INT(pawl_step(p, 1), ==, PAWL_EBUSY);
  CHECK(strstr(pawl_errmsg(p), "has stopped") != NULL);
  CHECK(strstr(pawl_errmsg(p), " runs on this handle") == NULL);
  CHECK_INT(pawl_step_start(p, &o), ==, PAWL_EBUSY);
  CHECK(strstr(pawl_errmsg(p), "has stopped") != NULL);
  CHECK_INT(pawl_start(p, &o), ==, PAWL_EBUSY);
  CHECK(strstr(pawl_errmsg(p), "has stopped") != NULL);
  CHECK(strstr(pawl_errmsg(p), "already running") == NULL);
  pawl_close(p);
}

/* From inside a step (a C job, an event callback) pawl_step and its
 * siblings are refused with PAWL_EMISUSE and pawl_close does nothing; the
 * step goes on, and the job's own enqueue works. */
typedef struct {
  int step_rc, wait_rc, start_rc, enq_rc;
  int64_t next_rc;
  int ev_step_rc, ev_calls;
  pawl_t *p;
} st_inside_t;

static int st_inside(const pawl_job_t *job, pawl_ctx_t *ctx, void *ud) {
  (void)job;
  st_inside_t *in = ud;
  pawl_t *h = pawl_ctx_handle(ctx);
  in->step_rc = pawl_step(h, 0);
  in->next_rc = pawl_next_deadline(h);
  in->wait_rc = pawl_step_wait(h, 0);
  in->start_rc = pawl_step_start(h, NULL);
  pawl_close(h); /* refused: the step runs on */
  in->enq_rc = pawl_enqueue(h, "counted", "{\"i\":5}", NULL, NULL, NULL);
  return PAWL_JOB_OK;
}

static void st_inside_event(void *data, const pawl_job_event_t *ev) {
  (void)ev;
  st_inside_t *in = data;
  in->ev_calls++;
  in->ev_step_rc = pawl_step(in->p, 0);
}

void test_step_inside_refused(void) {
  pawl_t *p = st_open(0);
  static st_count_t c;
  c.owner = pthread_self();
  st_inside_t in = {.p = p};
  CHECK_OK(pawl_define_c(p, "inside", st_inside, &in, NULL));
  CHECK_OK(pawl_define_c(p, "counted", st_counted, &c, NULL));
  pawl_host_opts_t o;
  st_quiet(&o);
  o.event_fn = st_inside_event;
  o.event_data = &in;
  CHECK_OK(pawl_step_start(p, &o));
  pawl_id_t id = st_enqueue(p, "inside", 1);
  CHECK_INT(st_drain(p), ==, 2);
  CHECK_INT(in.step_rc, ==, PAWL_EMISUSE);
  CHECK_INT(in.next_rc, ==, PAWL_EMISUSE);
  CHECK_INT(in.wait_rc, ==, PAWL_EMISUSE);
  CHECK_INT(in.start_rc, ==, PAWL_EBUSY);
  CHECK_OK(in.enq_rc);
  CHECK_INT(atomic_load(&c.runs[5]), ==, 1);
  CHECK_INT(in.ev_calls, >, 0);
  CHECK_INT(in.ev_step_rc, ==, PAWL_EMISUSE);
  pawl_job_t *j = st_get(p, id);
  CHECK_INT(j->state, ==, PAWL_SUCCEEDED);
  pawl_job_free(j);
  pawl_close(p);
}

/* ---- the budget: the monotonic clock, whatever the handle's clock ------- */

static int st_busy_ms(const pawl_job_t *job, pawl_ctx_t *ctx, void *ud) {
  (void)job;
  (void)ctx;
  (void)ud;
  int64_t end = st_mono_ms() + 1;
  while (st_mono_ms() < end) {
  }
  return PAWL_JOB_OK;
}

/* Under a frozen injected clock a step with budget 2 ms and jobs of at
 * least 1 ms each runs at most 3 of 40 (the third starts before 2 ms
 * have passed at the latest); a machine slower than this only runs
 * fewer. With the budget measured by the frozen clock, all 40 ran. */
void test_step_budget_monotonic(void) {
  pawl_t *p = st_open(1);
  CHECK_OK(pawl_define_c(p, "busy", st_busy_ms, NULL, NULL));
  pawl_host_opts_t o;
  st_quiet(&o);
  CHECK_OK(pawl_step_start(p, &o));
  for (int i = 0; i < 40; i++) st_enqueue(p, "busy", 1);
  int n = pawl_step(p, 2);
  CHECK_INT(n, >=, 1);
  CHECK_INT(n, <=, 3);
  int left = st_drain(p);
  CHECK_INT(n + left, ==, 40);
  pawl_close(p);
}
