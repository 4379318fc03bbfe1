/* test_completer.c: the worker host against a database that refuses what
 * it is given, through the fault seam (host/core/fault.h): outcomes refused as
 * bad data, writes that fail for a while or for good, threads that do not
 * start, claims that keep failing. Every wait is on a condition (a log
 * line, the host's end) with a generous bound, never a sleep. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <sys/stat.h>
#include <time.h>

#include "fault.h"
#include "pawl.h"
#include "pgtest.h"
#include "unit.h"
#include "utf8.h"

/* ---- helpers ------------------------------------------------------------ */

/* The host's log, kept in memory. */
typedef struct logcap {
  pthread_mutex_t mu;
  char *text;
  size_t len;
} logcap_t;

static logcap_t cap = {PTHREAD_MUTEX_INITIALIZER, NULL, 0};

static void cap_log(void *data, int level, const char *line) {
  (void)data, (void)level;
  pthread_mutex_lock(&cap.mu);
  size_t n = strlen(line);
  char *t = realloc(cap.text, cap.len + n + 1);
  if (t) {
    memcpy(t + cap.len, line, n + 1);
    cap.text = t;
    cap.len += n;
  }
  pthread_mutex_unlock(&cap.mu);
}

/* How many lines of the log contain both `a` and `b` (b may be NULL). */
static int cap_count(const char *a, const char *b) {
  pthread_mutex_lock(&cap.mu);
  int n = 0;
  const char *s = cap.text ? cap.text : "";
  while (*s) {
    const char *end = strchr(s, '\n');
    size_t len = end ? (size_t)(end - s) : strlen(s);
    char *line = strndup(s, len);
    if (line && strstr(line, a) && (!b || strstr(line, b))) n++;
    free(line);
    s += len + (end ? 1 : 0);
  }
  pthread_mutex_unlock(&cap.mu);
  return n;
}

static void cap_dump(void) {
  pthread_mutex_lock(&cap.mu);
  fprintf(stderr, "--- host log ---\n%s---\n", cap.text ? cap.text : "");
  pthread_mutex_unlock(&cap.mu);
}

static int64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits (20 ms steps, at most 60 s) until the log has a line with `a`. */
static void wait_log(const char *a) {
  int64_t end = mono_ms() + 60000;
  while (cap_count(a, NULL) == 0) {
    if (mono_ms() > end) {
      cap_dump();
      unit_fail(__FILE__, __LINE__, "no log line with \"%s\" in 60 s", a);
    }
    struct timespec ts = {0, 20 * 1000000};
    nanosleep(&ts, NULL);
  }
}

static void plan(const char *spec) {
  char err[300];
  if (pawl__fault_plan_set(spec, err, sizeof err) != 0)
    unit_fail(__FILE__, __LINE__, "pawl__fault_plan_set(%s): %s", spec ? spec : "NULL", err);
}

/* Writes scripts/NAME.lua in the test's temp dir. */
static void script(const char *name, const char *src) {
  char path[4200];
  mkdir("scripts", 0700);
  snprintf(path, sizeof path, "scripts/%s.lua", name);
  FILE *f = fopen(path, "w");
  CHECK(f != NULL);
  fputs(src, f);
  fclose(f);
}

static const char *const GOOD =
    "return { run = function(job, ctx)\n"
    "  ctx:log('info', 'hello', { n = 1 })\n"
    "  return { ok = true }\n"
    "end }\n";

static pawl_t *open_db(const char *url) {
  pawl_options_t o;
  pawl_options_init(&o);
  o.db = url;
  o.node_id = "unit";
  pawl_t *p = NULL;
  char err[512];
  if (pawl_open(&p, &o, err, sizeof err))
    unit_fail(__FILE__, __LINE__, "pawl_open(%s): %s", url, err);
  return p;
}

static const char *sqlite_url(void) {
  static char url[4200];
  snprintf(url, sizeof url, "sqlite:%s/t.db", unit_tmpdir());
  return url;
}

static void enqueue_n(pawl_t *p, const char *type, int n, pawl_id_t *ids) {
  for (int i = 0; i < n; i++)
    CHECK_OK(pawl_enqueue(p, type, NULL, NULL, &ids[i], NULL));
}

/* One job with a single attempt: a failure is final. */
static void enqueue_once(pawl_t *p, const char *type, pawl_id_t *id) {
  pawl_enqueue_opts_t eo;
  pawl_enqueue_opts_init(&eo);
  eo.max_attempts = 1;
  CHECK_OK(pawl_enqueue(p, type, NULL, &eo, id, NULL));
}

static void host_opts(pawl_host_opts_t *o) {
  pawl_host_opts_init(o);
  o->scripts_dir = "scripts";
  o->workers = 1;
  o->until_idle = 1;
  o->idle_wait_ms = -1;
  o->log_fn = cap_log;
}

/* Starts the host and waits (at most 60 s) for it to end by itself. */
static void run_until_idle(pawl_t *p, const pawl_host_opts_t *o) {
  CHECK_OK(pawl_start(p, o));
  int rc = pawl_wait(p, 60000);
  if (rc != 0) {
    cap_dump();
    unit_fail(__FILE__, __LINE__, "the host did not end: %d", rc);
  }
}

static pawl_job_t *get(pawl_t *p, const pawl_id_t *id) {
  pawl_job_t *j = NULL;
  CHECK_OK(pawl_get(p, id, &j));
  return j;
}

static int count_state(pawl_t *p, const pawl_id_t *ids, int n, int state) {
  int k = 0;
  for (int i = 0; i < n; i++) {
    pawl_job_t *j = get(p, &ids[i]);
    if ((int)j->state == state) k++;
    pawl_job_free(j);
  }
  return k;
}

/* ---- text made safe ------------------------------------------------------ */

void test_completer_utf8_scrub(void) {
  size_t n = 0;
  char *s = pawl__utf8_scrub("caf\xe9 a\0b \xc3\xa9", 11, &n);
  CHECK_STR(s, "caf\xef\xbf\xbd a\xef\xbf\xbd" "b \xc3\xa9");
  CHECK_INT(n, ==, strlen(s));
  free(s);
  s = pawl__utf8_scrub("\xed\xa0\x80\xf4\x90\x80\x80", 7, NULL); /* surrogate, >U+10FFFF */
  for (const char *c = s; *c; c += 3) CHECK(memcmp(c, "\xef\xbf\xbd", 3) == 0);
  free(s);
  char json[] = "{\"a\\\\u0000\":\"x\\u0000y\",\"b\":\"\\\\\\u0000\"}";
  pawl__utf8_json_no_nul(json);
  CHECK_STR(json, "{\"a\\\\u0000\":\"x\\ufffdy\",\"b\":\"\\\\\\ufffd\"}");
}

void test_completer_fault_plan_syntax(void) {
  char err[300];
  CHECK_INT(pawl__fault_plan_set("finish:1", err, sizeof err), ==, PAWL_EINVAL);
  CHECK(strstr(err, "finish:1") != NULL);
  CHECK_INT(pawl__fault_plan_set("finish:2+:permanent", err, sizeof err), ==, PAWL_EINVAL);
  CHECK_INT(pawl__fault_plan_set("nope:1", err, sizeof err), ==, PAWL_EINVAL);
  CHECK_INT(pawl__fault_plan_set("claim:0", err, sizeof err), ==, PAWL_EINVAL);
  CHECK_INT(pawl__fault_plan_set("thread:x", err, sizeof err), ==, PAWL_EINVAL);
  CHECK_OK(pawl__fault_plan_set("finish:3:permanent,claim:2+,thread:4", err, sizeof err));
  CHECK_INT(pawl__fault_hit(FAULT_THREAD), ==, 0);
  CHECK_INT(pawl__fault_hit(FAULT_THREAD), ==, 0);
  CHECK_INT(pawl__fault_hit(FAULT_THREAD), ==, 0);
  CHECK_INT(pawl__fault_hit(FAULT_THREAD), ==, 1);
  CHECK_INT(pawl__fault_hit(FAULT_THREAD), ==, 0);
  CHECK_OK(pawl__fault_plan_set(NULL, err, sizeof err));
  CHECK_INT(pawl__fault_hit(FAULT_THREAD), ==, 0);
}

/* ---- refused outcomes ---------------------------------------------------- */

/* A write that fails once (the database away for a moment) is written
 * again: nothing is lost, nothing is rewritten. */
void test_completer_transient_finish_retried(void) {
  script("good", GOOD);
  pawl_t *p = open_db(sqlite_url());
  pawl_id_t ids[6];
  enqueue_n(p, "good", 6, ids);
  plan("finish:2:transient");
  pawl_host_opts_t o;
  host_opts(&o);
  run_until_idle(p, &o);
  CHECK_INT(count_state(p, ids, 6, PAWL_SUCCEEDED), ==, 6);
  CHECK_INT(cap_count("writing outcomes failed; retrying", NULL), ==, 1);
  CHECK_INT(cap_count("refused", NULL), ==, 0);
  for (int i = 0; i < 6; i++) {
    pawl_job_t *j = get(p, &ids[i]);
    CHECK_STR(j->result, "{\"ok\":true}");
    pawl_job_free(j);
    pawl_log_record_t *logs = NULL;
    size_t n = 0;
    CHECK_OK(pawl_logs(p, &ids[i], &logs, &n));
    CHECK_INT(n, ==, 1);
    CHECK_STR(logs[0].message, "hello");
    pawl_logs_free(logs, n);
  }
  CHECK_INT(pawl_host_status(p), ==, 0);
  pawl_close(p);
}

/* An outcome the database refuses as bad data fails that job alone, with
 * a message saying so; the rest of its batch is written. */
void test_completer_permanent_fails_one(void) {
  script("good", GOOD);
  pawl_t *p = open_db(sqlite_url());
  pawl_id_t ids[6];
  enqueue_n(p, "good", 6, ids);
  plan("finish:3:permanent");
  pawl_host_opts_t o;
  host_opts(&o);
  run_until_idle(p, &o);
  CHECK_INT(count_state(p, ids, 6, PAWL_SUCCEEDED), ==, 5);
  CHECK_INT(count_state(p, ids, 6, PAWL_FAILED), ==, 1);
  for (int i = 0; i < 6; i++) {
    pawl_job_t *j = get(p, &ids[i]);
    if (j->state == PAWL_FAILED) {
      CHECK(j->result == NULL);
      CHECK(strncmp(j->last_error, "the job's result could not be stored: ",
                    38) == 0);
      CHECK(strstr(j->last_error, "refused as bad data") != NULL);
      char id[PAWL_ID_STRLEN];
      pawl_id_format(&j->id, id);
      CHECK_INT(cap_count("storing a failure that says so instead", id), ==, 1);
    }
    pawl_job_free(j);
  }
  CHECK_INT(pawl_host_status(p), ==, 0);
  pawl_close(p);
}

/* Refused while it carries its log lines: the outcome stands without them,
 * with a line saying why they are missing. */
void test_completer_refused_logs_dropped_first(void) {
  script("good", GOOD);
  pawl_t *p = open_db(sqlite_url());
  pawl_id_t ids[4];
  enqueue_n(p, "good", 4, ids);
  plan("finish:2:logs");
  pawl_host_opts_t o;
  host_opts(&o);
  run_until_idle(p, &o);
  CHECK_INT(count_state(p, ids, 4, PAWL_SUCCEEDED), ==, 4);
  int stripped = 0;
  for (int i = 0; i < 4; i++) {
    pawl_log_record_t *logs = NULL;
    size_t n = 0;
    CHECK_OK(pawl_logs(p, &ids[i], &logs, &n));
    CHECK_INT(n, ==, 1);
    if (strcmp(logs[0].message, "hello") != 0) {
      stripped++;
      CHECK_STR(logs[0].level, "warn");
      CHECK(strncmp(logs[0].message,
                    "1 log line of this attempt could not be stored: ", 48) == 0);
    }
    pawl_logs_free(logs, n);
  }
  CHECK_INT(stripped, ==, 1);
  pawl_close(p);
}

/* Refused, and its replacement refused too: dropped, with its job id in
 * the log; the job stays running until its lease expires, and the others
 * are not held up. */
void test_completer_poison_dropped(void) {
  script("good", GOOD);
  pawl_t *p = open_db(sqlite_url());
  pawl_id_t ids[4];
  enqueue_n(p, "good", 4, ids);
  plan("finish:2:poison");
  pawl_host_opts_t o;
  host_opts(&o);
  run_until_idle(p, &o);
  CHECK_INT(count_state(p, ids, 4, PAWL_SUCCEEDED), ==, 3);
  for (int i = 0; i < 4; i++) {
    pawl_job_t *j = get(p, &ids[i]);
    if (j->state != PAWL_SUCCEEDED) {
      CHECK_INT(j->state, ==, PAWL_RUNNING);
      char id[PAWL_ID_STRLEN];
      pawl_id_format(&j->id, id);
      CHECK_INT(cap_count("outcome dropped", id), ==, 1);
    }
    pawl_job_free(j);
  }
  CHECK_INT(pawl_host_status(p), ==, PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "1 outcome could not be stored") != NULL);
  pawl_close(p);
}

/* Out of memory copying a result: the job fails, it never succeeds
 * without its result. */
void test_completer_result_oom_not_success(void) {
  script("good", GOOD);
  pawl_t *p = open_db(sqlite_url());
  pawl_id_t ids[2];
  enqueue_once(p, "good", &ids[0]);
  enqueue_once(p, "good", &ids[1]);
  plan("result_alloc:1");
  pawl_host_opts_t o;
  host_opts(&o);
  run_until_idle(p, &o);
  pawl_job_t *a = get(p, &ids[0]), *b = get(p, &ids[1]);
  CHECK_INT(a->state, ==, PAWL_FAILED);
  CHECK(a->result == NULL);
  CHECK(strstr(a->last_error, "out of memory") != NULL);
  CHECK_INT(b->state, ==, PAWL_SUCCEEDED);
  CHECK_STR(b->result, "{\"ok\":true}");
  pawl_job_free(a);
  pawl_job_free(b);
  pawl_close(p);
}

/* ---- stopping while the database takes nothing -------------------------- */

/* Every write fails: a graceful stop ends within the grace period and the
 * flush time, and each unwritten outcome is listed with its job id. */
void test_completer_stop_every_write_fails(void) {
  script("good", GOOD);
  pawl_t *p = open_db(sqlite_url());
  pawl_id_t ids[3];
  enqueue_n(p, "good", 3, ids);
  plan("finish:1+:transient");
  pawl_host_opts_t o;
  host_opts(&o);
  o.until_idle = 0;
  o.grace_ms = 50;
  o.flush_ms = 200;
  CHECK_OK(pawl_start(p, &o));
  wait_log("writing outcomes failed; retrying");
  pawl_stop(p, PAWL_STOP_GRACEFUL);
  if (pawl_wait(p, 60000) != 0) {
    cap_dump();
    unit_fail(__FILE__, __LINE__, "the host did not stop");
  }
  CHECK_INT(pawl_host_status(p), ==, PAWL_EUNAVAIL);
  CHECK(strstr(pawl_errmsg(p), "could not be stored") != NULL);
  int listed = 0;
  for (int i = 0; i < 3; i++) {
    char id[PAWL_ID_STRLEN];
    pawl_id_format(&ids[i], id);
    listed += cap_count("outcome not stored", id);
    pawl_job_t *j = get(p, &ids[i]);
    /* Claimed and never finished: taken back when the lease expires. */
    CHECK(j->state == PAWL_RUNNING || j->state == PAWL_PENDING);
    pawl_job_free(j);
  }
  CHECK(listed >= 1);
  CHECK_INT(cap_count("outcomes not stored at the stop", NULL), ==, 1);
  pawl_close(p);
}

/* The same with a stop-now and the default grace and flush times: each
 * outcome gets one more try, then the host ends. */
void test_completer_stop_now_every_write_fails(void) {
  script("good", GOOD);
  pawl_t *p = open_db(sqlite_url());
  pawl_id_t ids[2];
  enqueue_n(p, "good", 2, ids);
  plan("finish:1+:transient");
  pawl_host_opts_t o;
  host_opts(&o);
  o.until_idle = 0;
  CHECK_OK(pawl_start(p, &o));
  wait_log("writing outcomes failed; retrying");
  pawl_stop(p, PAWL_STOP_GRACEFUL);
  pawl_stop(p, PAWL_STOP_NOW);
  if (pawl_wait(p, 60000) != 0) {
    cap_dump();
    unit_fail(__FILE__, __LINE__, "the host did not stop");
  }
  CHECK_INT(pawl_host_status(p), ==, PAWL_EUNAVAIL);
  CHECK(cap_count("outcome not stored", NULL) >= 1);
  pawl_close(p);
}

/* The completer cannot even open its connection: a stop still ends it. */
void test_completer_reopen_checks_stop(void) {
  script("good", GOOD);
  pawl_t *p = open_db(sqlite_url());
  pawl_id_t ids[1];
  enqueue_n(p, "good", 1, ids);
  /* Opens: the poller's (1), the chores thread's (2), the worker's (3),
   * then the checkpointer's and the completer's: every one from the fourth
   * on fails. */
  plan("open:4+");
  pawl_host_opts_t o;
  host_opts(&o);
  o.until_idle = 0;
  CHECK_OK(pawl_start(p, &o));
  wait_log("writing outcomes failed; retrying");
  pawl_stop(p, PAWL_STOP_NOW);
  if (pawl_wait(p, 60000) != 0) {
    cap_dump();
    unit_fail(__FILE__, __LINE__, "the host did not stop");
  }
  CHECK_INT(pawl_host_status(p), ==, PAWL_EUNAVAIL);
  char id[PAWL_ID_STRLEN];
  pawl_id_format(&ids[0], id);
  CHECK_INT(cap_count("outcome not stored", id), ==, 1);
  pawl_close(p);
}

/* --until-idle with claims that keep failing gives up, and says so. */
void test_completer_until_idle_gives_up(void) {
  script("good", GOOD);
  pawl_t *p = open_db(sqlite_url());
  pawl_id_t ids[1];
  enqueue_n(p, "good", 1, ids);
  plan("claim:1+");
  pawl_host_opts_t o;
  host_opts(&o);
  o.give_up_ms = 100;
  o.poll_ms = 20;
  run_until_idle(p, &o);
  CHECK_INT(pawl_host_status(p), ==, PAWL_EUNAVAIL);
  CHECK(strstr(pawl_errmsg(p), "gave up: claiming jobs has failed") != NULL);
  CHECK_INT(cap_count("giving up", NULL), ==, 1);
  pawl_close(p);
}

/* --until-idle whose outcomes cannot be written (every slot then holds
 * one, so no claim is even tried) gives up too, and the stop lists them. */
void test_completer_until_idle_gives_up_on_writes(void) {
  script("good", GOOD);
  pawl_t *p = open_db(sqlite_url());
  pawl_id_t ids[3];
  enqueue_n(p, "good", 3, ids);
  plan("finish:1+:transient");
  pawl_host_opts_t o;
  host_opts(&o);
  o.give_up_ms = 100;
  o.grace_ms = 50;
  o.flush_ms = 100;
  run_until_idle(p, &o);
  CHECK_INT(pawl_host_status(p), ==, PAWL_EUNAVAIL);
  CHECK(strstr(pawl_errmsg(p), "gave up: writing outcomes has failed") != NULL);
  CHECK(strstr(pawl_errmsg(p), "could not be stored") != NULL);
  CHECK(cap_count("outcome not stored", NULL) >= 1);
  pawl_close(p);
}

void test_completer_host_opts_checked(void) {
  script("good", GOOD);
  pawl_t *p = open_db(sqlite_url());
  pawl_host_opts_t o;
  host_opts(&o);
  o.give_up_ms = -2;
  CHECK_INT(pawl_start(p, &o), ==, PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "give_up_ms") != NULL);
  o.give_up_ms = PAWL_GIVE_UP_MAX_MS + 1;
  CHECK_INT(pawl_start(p, &o), ==, PAWL_EINVAL);
  o.give_up_ms = 0;
  o.flush_ms = -1;
  CHECK_INT(pawl_start(p, &o), ==, PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "flush_ms") != NULL);
  pawl_close(p);
}

/* ---- threads ------------------------------------------------------------- */

/* Whichever thread fails to start, pawl_start fails cleanly (no hang, the
 * started threads joined); then the host starts and runs. */
void test_completer_threads_create_fails(void) {
  script("good", GOOD);
  pawl_t *p = open_db(sqlite_url());
  pawl_host_opts_t o;
  host_opts(&o);
  o.workers = 2;
  /* 2 workers, the completer, the watchdog, the checkpointer, the poller
   * (SQLite has no listener). */
  for (int n = 1; n <= 6; n++) {
    char spec[32];
    snprintf(spec, sizeof spec, "thread:%d", n);
    plan(spec);
    CHECK_INT(pawl_start(p, &o), ==, PAWL_ENOMEM);
    CHECK(strstr(pawl_errmsg(p), "cannot start") != NULL);
  }
  plan(NULL);
  pawl_id_t ids[2];
  enqueue_n(p, "good", 2, ids);
  run_until_idle(p, &o);
  CHECK_INT(count_state(p, ids, 2, PAWL_SUCCEEDED), ==, 2);
  pawl_close(p);
}

/* ---- --until-idle and jobs a dead node left running ---------------------- */

/* A lease that expires within idle_wait is waited for: the job is taken
 * back and run. */
void test_completer_until_idle_waits_for_dead_lease(void) {
  script("good", GOOD);
  pawl_t *p = open_db(sqlite_url());
  pawl_id_t ids[1];
  enqueue_n(p, "good", 1, ids);
  /* The dead node: claims with a short lease, never finishes. */
  pawl_t *dead = open_db(sqlite_url());
  pawl_claim_opts_t co = {.lease_ms = 300};
  pawl_job_t **jobs = NULL;
  size_t n = 0;
  CHECK_OK(pawl_claim(dead, &co, 1, &jobs, &n));
  CHECK_INT(n, ==, 1);
  pawl_jobs_free(jobs, n);
  pawl_host_opts_t o;
  host_opts(&o);
  o.idle_wait_ms = 60000;
  run_until_idle(p, &o);
  pawl_job_t *j = get(p, &ids[0]);
  CHECK_INT(j->state, ==, PAWL_SUCCEEDED);
  CHECK_INT(j->attempt, ==, 2);
  pawl_job_free(j);
  CHECK_INT(cap_count("still running elsewhere", NULL), ==, 0);
  pawl_close(dead);
  pawl_close(p);
}

/* One that expires later is not waited for, but counted in the log. */
void test_completer_until_idle_counts_running_elsewhere(void) {
  script("good", GOOD);
  pawl_t *p = open_db(sqlite_url());
  pawl_id_t ids[2];
  enqueue_n(p, "good", 2, ids);
  pawl_t *dead = open_db(sqlite_url());
  pawl_claim_opts_t co = {.lease_ms = 3600000};
  pawl_job_t **jobs = NULL;
  size_t n = 0;
  CHECK_OK(pawl_claim(dead, &co, 1, &jobs, &n));
  CHECK_INT(n, ==, 1);
  pawl_jobs_free(jobs, n);
  pawl_host_opts_t o;
  host_opts(&o);
  o.idle_wait_ms = 100;
  run_until_idle(p, &o);
  CHECK_INT(count_state(p, ids, 2, PAWL_SUCCEEDED), ==, 1);
  CHECK_INT(cap_count("still running elsewhere", "running=1"), ==, 1);
  CHECK_INT(pawl_host_status(p), ==, 0);
  pawl_close(dead);
  pawl_close(p);
}

/* ---- PostgreSQL ----------------------------------------------------------- */

/* PostgreSQL refuses invalid UTF-8 and U+0000: as bad data (PAWL_EINVAL),
 * which the completer does not retry as it is, never as the database being
 * away. */
void test_pg_completer_refusal_is_einval(void) {
  const char *url = pgtest_url("completer_refusal");
  pawl_t *p = open_db(url);
  pawl_id_t id;
  CHECK_OK(pawl_enqueue(p, "t", NULL, NULL, &id, NULL));
  pawl_job_t **jobs = NULL;
  size_t n = 0;
  CHECK_OK(pawl_claim(p, NULL, 1, &jobs, &n));
  CHECK_INT(n, ==, 1);
  pawl_outcome_t out = {.id = id, .attempt = 1, .kind = PAWL_OUT_RETRY,
                        .error = "caf\xe9", .run_at = pawl_now(p) + 60000};
  CHECK_INT(pawl_finish(p, &out, 1, NULL), ==, PAWL_EINVAL);
  out.kind = PAWL_OUT_SUCCEEDED;
  out.error = NULL;
  out.result = "{\"s\":\"a\\u0000b\"}";
  CHECK_INT(pawl_finish(p, &out, 1, NULL), ==, PAWL_EINVAL);
  out.result = "{\"s\":\"ok\"}";
  CHECK_OK(pawl_finish(p, &out, 1, NULL));
  pawl_jobs_free(jobs, n);
  pawl_close(p);
}

/* The host on PostgreSQL: a result PostgreSQL refuses (U+0000) fails that
 * job alone; error texts with invalid UTF-8 or NUL are stored made safe. */
void test_pg_completer_refused_outcomes(void) {
  const char *url = pgtest_url("completer_host");
  script("good", GOOD);
  script("nulres", "return { max_attempts = 1, run = function() "
                   "return { s = 'a\\0b' } end }\n");
  script("badutf8", "return { max_attempts = 1, run = function() "
                    "error('caf\\233', 0) end }\n");
  script("nulerr", "return { max_attempts = 1, run = function() "
                   "error('a\\0b', 0) end }\n");
  script("nullog", "return { max_attempts = 1, run = function(job, ctx) "
                   "ctx:log('info', 'x\\0y', { s = 'a\\0b', t = 'caf\\233' }) "
                   "return { ok = true } end }\n");
  pawl_t *p = open_db(url);
  pawl_id_t good[3], nulres, badutf8, nulerr, nullog;
  enqueue_once(p, "good", &good[0]);
  enqueue_once(p, "nulres", &nulres);
  enqueue_once(p, "badutf8", &badutf8);
  enqueue_once(p, "good", &good[1]);
  enqueue_once(p, "nulerr", &nulerr);
  enqueue_once(p, "nullog", &nullog);
  enqueue_once(p, "good", &good[2]);
  pawl_host_opts_t o;
  host_opts(&o);
  run_until_idle(p, &o);
  CHECK_INT(count_state(p, good, 3, PAWL_SUCCEEDED), ==, 3);
  pawl_job_t *j = get(p, &nulres);
  CHECK_INT(j->state, ==, PAWL_FAILED);
  CHECK(strstr(j->last_error, "cannot be stored as JSON") != NULL);
  CHECK(strstr(j->last_error, "NUL") != NULL);
  pawl_job_free(j);
  j = get(p, &badutf8);
  CHECK_INT(j->state, ==, PAWL_FAILED);
  CHECK(strncmp(j->last_error, "caf\xef\xbf\xbd", 6) == 0);
  pawl_job_free(j);
  j = get(p, &nulerr);
  CHECK_INT(j->state, ==, PAWL_FAILED);
  CHECK(strncmp(j->last_error, "a", 1) == 0);
  pawl_job_free(j);
  j = get(p, &nullog);
  CHECK_INT(j->state, ==, PAWL_SUCCEEDED);
  pawl_job_free(j);
  pawl_log_record_t *logs = NULL;
  size_t n = 0;
  CHECK_OK(pawl_logs(p, &nullog, &logs, &n));
  CHECK_INT(n, ==, 1);
  CHECK_STR(logs[0].message, "x\xef\xbf\xbdy");
  CHECK(strstr(logs[0].fields, "caf\xef\xbf\xbd") != NULL);
  pawl_logs_free(logs, n);
  CHECK_INT(cap_count("writing outcomes failed; retrying", NULL), ==, 0);
  CHECK_INT(pawl_host_status(p), ==, 0);
  pawl_close(p);
}
