/* test_defs.c: job types defined on the handle (pawl_define_c,
 * pawl_define, pawl_define_file) in step mode and under pawl_start(), with
 * no scripts directory; and step mode's budget against an injected clock
 * that C jobs advance (so "how long a job ran" is exact, whatever the
 * machine's speed). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdatomic.h>
#include <sys/stat.h>
#include <time.h>

#include "host.h" /* the step budget's test seam */
#include "pawl.h"
#include "unit.h"

#define DF_T0 INT64_C(1800000000000)

static _Atomic int64_t df_now = DF_T0;

static int64_t df_clock(void *data) {
  (void)data;
  return atomic_load(&df_now);
}

static pawl_t *df_open(int frozen) {
  pawl_options_t o;
  pawl_options_init(&o);
  o.db = "sqlite:defs.db";
  o.node_id = "node-defs";
  o.lease_ms = 3600000;
  if (frozen) o.clock = df_clock;
  pawl_t *p = NULL;
  char err[512];
  if (pawl_open(&p, &o, err, sizeof err))
    unit_fail(__FILE__, __LINE__, "open: %s", err);
  return p;
}

static void df_quiet(pawl_host_opts_t *o) {
  pawl_host_opts_init(o);
  o->log_level = PAWL_LOG_ERROR;
}

static pawl_job_t *df_get(pawl_t *p, pawl_id_t id) {
  pawl_job_t *j = NULL;
  CHECK_OK(pawl_get(p, &id, &j));
  return j;
}

static pawl_id_t df_enqueue(pawl_t *p, const char *type, const char *payload) {
  pawl_id_t id;
  CHECK_OK(pawl_enqueue(p, type, payload, NULL, &id, NULL));
  return id;
}

/* ---- C job types -------------------------------------------------------- */

/* {"a":N,"b":M} -> {"sum":N+M}; "fail" in the payload fails (retry), and
 * "fatal" fails for good; "sleep" sleeps that many ms. */
static _Atomic int df_calls;

static int df_add(const pawl_job_t *job, pawl_ctx_t *ctx, void *ud) {
  atomic_fetch_add(&df_calls, 1);
  CHECK(ud == (void *)&df_calls);
  CHECK(pawl_ctx_handle(ctx) != NULL);
  const char *pl = job->payload;
  if (strstr(pl, "fatal")) {
    pawl_ctx_fail(ctx, "fatal: password=hunter2");
    return PAWL_JOB_FATAL;
  }
  if (strstr(pl, "fail")) {
    pawl_ctx_fail(ctx, "it failed: password=hunter2");
    return PAWL_JOB_FAILED;
  }
  const char *sl = strstr(pl, "\"sleep\":");
  if (sl) {
    long ms = atol(sl + 8);
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) != 0) {
      /* the interrupt signal cuts it short: sleep the rest */
    }
    /* Past its deadline now: the Lua side refuses to log (the interrupt
     * is pending), and the outcome will be a timeout anyway. */
    CHECK_INT(pawl_ctx_log(ctx, PAWL_LOG_INFO, "late"), ==, PAWL_EINVAL);
    return PAWL_JOB_OK;
  }
  int a = 0, b = 0;
  const char *pa = strstr(pl, "\"a\":"), *pb = strstr(pl, "\"b\":");
  if (pa) a = atoi(pa + 4);
  if (pb) b = atoi(pb + 4);
  CHECK_OK(pawl_ctx_log(ctx, PAWL_LOG_INFO, "adding"));
  CHECK_INT(pawl_ctx_log(ctx, 9, "bad level"), ==, PAWL_EINVAL);
  CHECK_INT(pawl_ctx_set_result(ctx, "{not json"), ==, PAWL_EINVAL);
  char out[64];
  snprintf(out, sizeof out, "{\"sum\":%d}", a + b);
  CHECK_OK(pawl_ctx_set_result(ctx, out));
  return PAWL_JOB_OK;
}

/* A job with one attempt: the backoff of a retry is seconds. */
static pawl_id_t df_enqueue_once(pawl_t *p, const char *payload) {
  pawl_enqueue_opts_t eo;
  pawl_enqueue_opts_init(&eo);
  eo.max_attempts = 1;
  pawl_id_t id;
  CHECK_OK(pawl_enqueue(p, "add", payload, &eo, &id, NULL));
  return id;
}

static void df_define_add(pawl_t *p) {
  pawl_define_opts_t o;
  pawl_define_opts_init(&o);
  o.max_attempts = 2;
  o.timeout_s = 0.2;
  CHECK_OK(pawl_define_c(p, "add", df_add, (void *)&df_calls, &o));
}

/* The outcomes every mode must produce for the C type. */
static void df_check_c_outcomes(pawl_t *p, pawl_id_t ok, pawl_id_t fail,
                                pawl_id_t fatal, pawl_id_t slow) {
  pawl_job_t *j = df_get(p, ok);
  CHECK_INT(j->state, ==, PAWL_SUCCEEDED);
  CHECK_STR(j->result, "{\"sum\":5}");
  pawl_job_free(j);
  pawl_log_record_t *logs = NULL;
  size_t nlogs = 0;
  CHECK_OK(pawl_logs(p, &ok, &logs, &nlogs));
  CHECK_INT(nlogs, ==, 1);
  CHECK_STR(logs[0].message, "adding");
  pawl_logs_free(logs, nlogs);
  j = df_get(p, fail);
  CHECK_INT(j->state, ==, PAWL_FAILED);
  CHECK_INT(j->attempt, ==, 1); /* max_attempts 1 (the retry policy: the
                                   Lua tests) */
  CHECK(strstr(j->last_error, "it failed"));
  CHECK(!strstr(j->last_error, "hunter2")); /* sanitized */
  pawl_job_free(j);
  j = df_get(p, fatal);
  CHECK_INT(j->state, ==, PAWL_FAILED);
  CHECK_INT(j->attempt, ==, 1); /* no retry */
  CHECK(!strstr(j->last_error, "hunter2"));
  pawl_job_free(j);
  j = df_get(p, slow);
  CHECK_INT(j->state, ==, PAWL_FAILED);
  CHECK(strstr(j->last_error, "timed out"));
  pawl_job_free(j);
}

void test_defs_c_job_step(void) {
  pawl_t *p = df_open(0);
  df_define_add(p);
  pawl_host_opts_t o;
  df_quiet(&o);
  /* No scripts directory: none exists, and none is looked for. */
  CHECK_OK(pawl_step_start(p, &o));
  pawl_id_t ok = df_enqueue(p, "add", "{\"a\":2,\"b\":3}");
  pawl_id_t fail = df_enqueue_once(p, "{\"fail\":1}");
  pawl_id_t fatal = df_enqueue(p, "add", "{\"fatal\":1}");
  pawl_id_t slow = df_enqueue_once(p, "{\"sleep\":400}");
  pawl_id_t unknown = df_enqueue(p, "nobody", NULL);
  for (int i = 0; i < 10 && pawl_step(p, 100) > 0; i++) {
  }
  df_check_c_outcomes(p, ok, fail, fatal, slow);
  pawl_job_t *j = df_get(p, unknown);
  CHECK_INT(j->attempt, ==, 1);
  CHECK(strstr(j->last_error, "no script for job type nobody"));
  pawl_job_free(j);
  pawl_close(p);
}

void test_defs_errors(void) {
  pawl_t *p = df_open(0);
  CHECK_INT(pawl_define_c(p, "", df_add, NULL, NULL), ==, PAWL_EINVAL);
  CHECK_INT(pawl_define_c(p, "x", NULL, NULL, NULL), ==, PAWL_EINVAL);
  CHECK_INT(pawl_define_c(p, "_defaults", df_add, NULL, NULL), ==, PAWL_EINVAL);
  CHECK_INT(pawl_define_c(p, "bad\ttype", df_add, NULL, NULL), ==, PAWL_EINVAL);
  pawl_define_opts_t o;
  pawl_define_opts_init(&o);
  o.max_attempts = PAWL_ATTEMPTS_MAX + 1;
  CHECK_INT(pawl_define_c(p, "x", df_add, NULL, &o), ==, PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "max_attempts"));
  pawl_define_opts_init(&o);
  o.timeout_s = -1;
  CHECK_INT(pawl_define_c(p, "x", df_add, NULL, &o), ==, PAWL_EINVAL);
  pawl_define_opts_init(&o);
  o.has_priority = 1;
  o.priority = PAWL_PRIORITY_MAX + 1;
  CHECK_INT(pawl_define_c(p, "x", df_add, NULL, &o), ==, PAWL_EINVAL);
  CHECK_INT(pawl_define(p, "x", NULL), ==, PAWL_EINVAL);
  CHECK_INT(pawl_define_file(p, "missing.lua"), ==, PAWL_EIO);
  CHECK_INT(pawl_define_file(p, "notlua.txt"), ==, PAWL_EINVAL);
  pawl_close(p);
}

/* Lua source from a string and from a file, no scripts directory; a
 * broken one is reported (the job fails: no script) and the others run. */
void test_defs_lua_sources_step(void) {
  pawl_t *p = df_open(0);
  CHECK_OK(pawl_define(p, "hello", "return { run = function(job) "
                                   "return 'hi ' .. job.payload.name end }"));
  CHECK_OK(pawl_define(p, "broken", "return { run = "));
  FILE *f = fopen("twice.lua", "w");
  CHECK(f != NULL);
  fputs("return { run = function(job) return job.payload.n * 2 end }", f);
  fclose(f);
  CHECK_OK(pawl_define_file(p, "twice.lua"));
  remove("twice.lua"); /* read once, at the definition */
  pawl_host_opts_t o;
  df_quiet(&o);
  o.log_level = PAWL_LOG_ERROR + 1; /* the broken one is logged: hush */
  CHECK_OK(pawl_step_start(p, &o));
  pawl_id_t a = df_enqueue(p, "hello", "{\"name\":\"ada\"}");
  pawl_id_t b = df_enqueue(p, "twice", "{\"n\":21}");
  pawl_id_t c = df_enqueue(p, "broken", NULL);
  for (int i = 0; i < 10 && pawl_step(p, 100) > 0; i++) {
  }
  pawl_job_t *ja = df_get(p, a), *jb = df_get(p, b), *jc = df_get(p, c);
  CHECK_STR(ja->result, "\"hi ada\"");
  CHECK_STR(jb->result, "42");
  /* Its source did not load: its jobs meet the load error (retried: a
   * good version may come). */
  CHECK_INT(jc->attempt, ==, 1);
  CHECK(strstr(jc->last_error, "the script of job type broken"));
  CHECK(strstr(jc->last_error, "did not load"));
  pawl_job_free(ja);
  pawl_job_free(jb);
  pawl_job_free(jc);
  pawl_close(p);
}

/* The same C type and Lua source under pawl_start()'s threads. */
static pawl_job_t *df_wait(pawl_t *p, pawl_id_t id, pawl_state_t state) {
  for (int i = 0; i < 6000; i++) {
    pawl_job_t *j = df_get(p, id);
    if (j->state == state) return j;
    pawl_job_free(j);
    struct timespec ts = {0, 10000000};
    nanosleep(&ts, NULL);
  }
  unit_fail(__FILE__, __LINE__, "job never reached %s", pawl_state_name(state));
}

void test_defs_threads(void) {
  pawl_t *p = df_open(0);
  df_define_add(p);
  CHECK_OK(pawl_define(p, "hello", "return { run = function(job) "
                                   "return 'hi ' .. job.payload.name end }"));
  pawl_host_opts_t o;
  df_quiet(&o);
  o.workers = 2;
  o.poll_ms = 20;
  CHECK_OK(pawl_start(p, &o));
  pawl_id_t ok = df_enqueue(p, "add", "{\"a\":2,\"b\":3}");
  pawl_id_t fatal = df_enqueue(p, "add", "{\"fatal\":1}");
  pawl_id_t slow = df_enqueue_once(p, "{\"sleep\":400}");
  pawl_id_t hello = df_enqueue(p, "hello", "{\"name\":\"bo\"}");
  pawl_id_t fail = df_enqueue_once(p, "{\"fail\":1}");
  pawl_job_free(df_wait(p, ok, PAWL_SUCCEEDED));
  pawl_job_free(df_wait(p, fatal, PAWL_FAILED));
  pawl_job_free(df_wait(p, slow, PAWL_FAILED));
  pawl_job_free(df_wait(p, fail, PAWL_FAILED));
  pawl_job_t *j = df_wait(p, hello, PAWL_SUCCEEDED);
  CHECK_STR(j->result, "\"hi bo\"");
  pawl_job_free(j);
  pawl_stop(p, PAWL_STOP_GRACEFUL);
  CHECK_OK(pawl_wait(p, -1));
  df_check_c_outcomes(p, ok, fail, fatal, slow);
  pawl_close(p);
}

/* ---- the budget, with an injected clock --------------------------------- */

/* Each job "runs" for the time in its payload: it moves the injected
 * clock by that much (ms) and notes the longest of the current frame.
 * The step measures its budget by the monotonic clock, never by the
 * handle's: these tests stand the same counter in for it through the
 * step's test seam (host.h). */
static int64_t df_longest;

static int64_t df_budget_us(void) { return atomic_load(&df_now) * 1000; }

static int df_tick(const pawl_job_t *job, pawl_ctx_t *ctx, void *ud) {
  (void)ctx;
  (void)ud;
  const char *t = strstr(job->payload, "\"ms\":");
  int64_t ms = t ? atoll(t + 5) : 0;
  atomic_fetch_add(&df_now, ms);
  if (ms > df_longest) df_longest = ms;
  return PAWL_JOB_OK;
}

void test_defs_step_budget_10000_frames(void) {
  pawl_t *p = df_open(1);
  pawl__step_budget_us = df_budget_us;
  CHECK_OK(pawl_define_c(p, "tick", df_tick, NULL, NULL));
  pawl_host_opts_t o;
  df_quiet(&o);
  o.log_level = PAWL_LOG_ERROR + 1; /* 30,000 "job succeeded" lines: hush */
  CHECK_OK(pawl_step_start(p, &o));
  unsigned seed = 12345;
  int64_t worst = -1000000, ran = 0;
  for (int frame = 0; frame < 10000; frame++) {
    int k = (int)(rand_r(&seed) % 4);
    for (int i = 0; i < k; i++) {
      char pl[32];
      snprintf(pl, sizeof pl, "{\"ms\":%d}", (int)(rand_r(&seed) % 4));
      CHECK_OK(pawl_enqueue(p, "tick", pl, NULL, NULL, NULL));
    }
    df_longest = 0;
    int64_t t0 = atomic_load(&df_now);
    int n = pawl_step(p, 2);
    CHECK_INT(n, >=, 0);
    ran += n;
    int64_t over = atomic_load(&df_now) - t0 - 2;
    CHECK_INT(over, <=, df_longest); /* budget + at most one job's run */
    if (over > worst) worst = over;
  }
  CHECK_INT(ran, >, 1000);
  pawl_close(p);
}

/* Jobs claimed ahead and not run go back to pending when the handle
 * closes, their attempt not used. */
void test_defs_step_close_hands_back(void) {
  pawl_t *p = df_open(1);
  pawl__step_budget_us = df_budget_us;
  CHECK_OK(pawl_define_c(p, "tick", df_tick, NULL, NULL));
  pawl_host_opts_t o;
  df_quiet(&o);
  CHECK_OK(pawl_step_start(p, &o));
  pawl_id_t ids[5];
  for (int i = 0; i < 5; i++) ids[i] = df_enqueue(p, "tick", "{\"ms\":1}");
  CHECK_INT(pawl_step(p, 2), ==, 2); /* 1 ms each: two fit the budget */
  pawl_close(p);
  p = df_open(1);
  int succeeded = 0, pending = 0;
  for (int i = 0; i < 5; i++) {
    pawl_job_t *j = df_get(p, ids[i]);
    succeeded += j->state == PAWL_SUCCEEDED;
    pending += j->state == PAWL_PENDING && j->attempt == 0;
    pawl_job_free(j);
  }
  CHECK_INT(succeeded, ==, 2);
  CHECK_INT(pending, ==, 3);
  pawl_close(p);
}
