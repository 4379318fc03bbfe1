/* test_alerts.c: dead-letter alerts: the global on_dead hook
 * of _defaults.lua runs once per job that lands in the dead-letter set
 * (every path: retries used up, pawl.fatal, a signal that timed out, a
 * program's own pawl_finish), never again for a dead job paused and
 * resumed, once across two PostgreSQL nodes, and again after a
 * node died holding its row; repeated errors are deduplicated in a window
 * (injected clock); pawl.alert.webhook posts to a local server
 * (libmicrohttpd), retries after a 500, keeps the URL's credentials out of
 * the log, and a URL that never answers does not hold up the workers.
 *
 * The global hook records each alert as a job of type "seen" in queue
 * "log", which no host here serves: the test reads them back with
 * pawl_list(). Waits are gates on what the database holds, with generous
 * bounds on the slow side only; times that matter come from an injected
 * clock. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <curl/curl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "buf.h"
#include "pawl.h"
#include "pawl_internal.h"
#include "pgtest.h"
#include "redact.h"
#include "unit.h"

#define AL_T0 INT64_C(1800000000000)

static _Atomic int64_t al_now = AL_T0;

static int64_t al_clock(void *data) {
  (void)data;
  return atomic_load(&al_now);
}

/* ---- the log, kept for the checks -------------------------------------- */

static pthread_mutex_t al_log_mu = PTHREAD_MUTEX_INITIALIZER;
static char al_log[1 << 16];
static size_t al_log_len;

static void al_log_fn(void *data, int level, const char *line) {
  (void)data, (void)level;
  pthread_mutex_lock(&al_log_mu);
  size_t n = strlen(line);
  if (al_log_len + n + 2 < sizeof al_log) {
    memcpy(al_log + al_log_len, line, n);
    al_log_len += n;
    al_log[al_log_len++] = '\n';
    al_log[al_log_len] = 0;
  }
  pthread_mutex_unlock(&al_log_mu);
}

static int al_log_has(const char *s) {
  pthread_mutex_lock(&al_log_mu);
  int has = strstr(al_log, s) != NULL;
  pthread_mutex_unlock(&al_log_mu);
  return has;
}

/* ---- scripts, handles, hosts ---------------------------------------------- */

static void al_script(const char *name, const char *src) {
  mkdir("scripts", 0700);
  char path[256];
  snprintf(path, sizeof path, "scripts/%s.lua", name);
  FILE *f = fopen(path, "w");
  CHECK(f != NULL);
  CHECK_INT(fputs(src, f), >=, 0);
  CHECK_INT(fclose(f), ==, 0);
}

/* A global on_dead that records every alert as a "seen" job. */
static void al_defaults(int window_s, const char *extra) {
  char src[2048];
  snprintf(src, sizeof src,
           "return {\n"
           "  alert_window = %d,\n"
           "  on_dead = function(job, err, info)\n"
           "    pawl.enqueue('seen', { job = job.id, type = job.type,\n"
           "      err = err, count = info.count, suppressed = info.suppressed,\n"
           "      node = job.node, first_at = info.first_at,\n"
           "      last_at = info.last_at }, { queue = 'log' })\n"
           "    %s\n"
           "  end,\n"
           "}\n",
           window_s, extra ? extra : "");
  al_script("_defaults", src);
}

static pawl_t *al_open(const char *url, const char *node, int64_t lease_ms) {
  pawl_options_t o;
  pawl_options_init(&o);
  o.db = url;
  o.node_id = node;
  o.clock = al_clock;
  if (lease_ms) o.lease_ms = lease_ms;
  pawl_t *p = NULL;
  char err[512];
  if (pawl_open(&p, &o, err, sizeof err))
    unit_fail(__FILE__, __LINE__, "open: %s", err);
  return p;
}

/* al_start, with a metrics endpoint (NULL: none) and the webhook
 * destinations job code may post to (NULL: none). */
static void al_start_with(pawl_t *p, int workers,
                          const pawl_metrics_opts_t *metrics,
                          const char *webhook_grant) {
  static const char *const queues[] = {"default"};
  pawl_host_opts_t o;
  pawl_host_opts_init(&o);
  o.scripts_dir = "scripts";
  o.workers = workers;
  o.queues = queues;
  o.nqueues = 1;
  o.poll_ms = 50;
  o.reload_ms = 50;
  o.log_level = PAWL_LOG_INFO;
  o.log_fn = al_log_fn;
  o.metrics = metrics;
  const char *grants[] = {webhook_grant};
  o.allow_webhook = webhook_grant ? grants : NULL;
  o.nallow_webhook = webhook_grant ? 1 : 0;
  CHECK_OK(pawl_start(p, &o));
}

static void al_start(pawl_t *p, int workers) {
  al_start_with(p, workers, NULL, NULL);
}

static pawl_id_t al_enqueue(pawl_t *p, const char *type, const char *payload,
                            int max_attempts) {
  pawl_enqueue_opts_t eo;
  pawl_enqueue_opts_init(&eo);
  eo.max_attempts = max_attempts;
  /* Types without a script wait in a queue no host here serves, for the
   * test's own SQL to move them. */
  if (strncmp(type, "nobody_", 7) == 0) eo.queue = "parked";
  pawl_id_t id;
  CHECK_OK(pawl_enqueue(p, type, payload, &eo, &id, NULL));
  return id;
}

/* ---- reading back --------------------------------------------------------- */

typedef struct al_seen {
  int n;
  char payload[64][512];
} al_seen_t;

static int al_seen_cb(const pawl_job_t *job, void *data) {
  al_seen_t *s = data;
  if (s->n < 64) {
    /* PostgreSQL's jsonb writes ": " and ", ": the needles have none. */
    char *out = s->payload[s->n];
    size_t k = 0;
    for (const char *c = job->payload; *c && k + 1 < sizeof s->payload[0];
         c++) {
      out[k++] = *c;
      if ((*c == ':' || *c == ',') && c[1] == ' ') c++;
    }
    out[k] = 0;
  }
  s->n++;
  return 0;
}

static void al_seen_read(pawl_t *p, al_seen_t *s) {
  memset(s, 0, sizeof *s);
  pawl_filter_t f;
  pawl_filter_init(&f);
  f.type = "seen";
  f.limit = 1000;
  CHECK_OK(pawl_list(p, &f, al_seen_cb, s));
}

/* Waits (60 s at most) until `n` alerts have been seen; returns them. */
static void al_seen_wait(pawl_t *p, int n, al_seen_t *s) {
  for (int k = 0; k < 6000; k++) {
    al_seen_read(p, s);
    if (s->n >= n) return;
    usleep(10000);
  }
  unit_fail(__FILE__, __LINE__, "waited for %d alerts, saw %d", n, s->n);
}

static int al_state(pawl_t *p, const pawl_id_t *id) {
  pawl_job_t *j = NULL;
  CHECK_OK(pawl_get(p, id, &j));
  int s = j->state;
  pawl_job_free(j);
  return s;
}

static void al_state_wait(pawl_t *p, const pawl_id_t *id, int state) {
  for (int k = 0; k < 6000 && al_state(p, id) != state; k++) usleep(10000);
  CHECK_INT(al_state(p, id), ==, state);
}

/* Rows in the outbox (SQLite file or PostgreSQL schema of `url`). */
static long long al_outbox(const char *url) {
  if (strncmp(url, "sqlite:", 7) == 0) {
    sqlite3 *db = NULL;
    CHECK_INT(sqlite3_open(url + 7, &db), ==, SQLITE_OK);
    sqlite3_busy_timeout(db, 10000);
    sqlite3_stmt *st = NULL;
    CHECK_INT(sqlite3_prepare_v2(db, "SELECT count(*) FROM pawl_alerts", -1,
                                 &st, NULL), ==, SQLITE_OK);
    CHECK_INT(sqlite3_step(st), ==, SQLITE_ROW);
    long long n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return n;
  }
  PGconn *c = pgtest_connect(url);
  long long n = pgtest_int(c, "SELECT count(*) FROM pawl_alerts");
  PQfinish(c);
  return n;
}

/* Waits (a minute at most: a hang guard) for the outbox to hold `want`
 * rows: a hook is seen to run before its row is deleted. */
static void al_outbox_wait(const char *url, long long want) {
  for (int k = 0; k < 6000 && al_outbox(url) != want; k++) usleep(10000);
  CHECK_INT(al_outbox(url), ==, want);
}

static void al_outbox_wait_empty(const char *url) { al_outbox_wait(url, 0); }

/* Fails every job waiting in queue "parked" with `error`, as a program
 * that runs jobs itself does (pawl_claim, pawl_finish). */
static void al_fail_parked(pawl_t *p, const char *error) {
  static const char *const parked[] = {"parked"};
  pawl_claim_opts_t co;
  memset(&co, 0, sizeof co);
  co.queues = parked;
  co.nqueues = 1;
  pawl_job_t **jobs = NULL;
  size_t n = 0;
  CHECK_OK(pawl_claim(p, &co, 10, &jobs, &n));
  CHECK_INT(n, >=, 1);
  for (size_t i = 0; i < n; i++) {
    pawl_outcome_t o;
    memset(&o, 0, sizeof o);
    o.id = jobs[i]->id;
    o.attempt = jobs[i]->attempt;
    o.kind = PAWL_OUT_FAILED;
    o.error = error;
    int rcs[1];
    CHECK_OK(pawl_finish(p, &o, 1, rcs));
    CHECK_OK(rcs[0]);
  }
  pawl_jobs_free(jobs, n);
}

static int al_seen_has(const al_seen_t *s, const char *needle) {
  int n = 0;
  if (getenv("AL_DEBUG"))
    for (int i = 0; i < s->n && i < 64; i++)
      fprintf(stderr, "seen: %s\n", s->payload[i]);
  for (int i = 0; i < s->n && i < 64; i++)
    if (strstr(s->payload[i], needle)) n++;
  return n;
}

static void al_id_needle(const pawl_id_t *id, char *out, size_t len) {
  char text[PAWL_ID_STRLEN];
  pawl_id_format(id, text);
  snprintf(out, len, "\"job\":\"%s\"", text);
}

/* ---- every path into failed, once --------------------------------------- */

static const char *AL_BOOM =
    "return { retry = function() return 0 end,\n"
    "  run = function(job) error('bad thing ' .. job.payload.n) end }\n";
static const char *AL_FATAL =
    "return { run = function() pawl.fatal('not a chance') end }\n";

static void al_every_path(const char *url) {
  al_defaults(0, NULL);
  al_script("boom", AL_BOOM);
  al_script("fatal", AL_FATAL);
  al_script("ok", "return { run = function() return 1 end }\n");
  /* A short lease: signal waits are expired by the sweep (every half
   * lease). */
  pawl_t *p = al_open(url, "node-a", 4000);
  pawl_id_t boom = al_enqueue(p, "boom", "{\"n\":1}", 2); /* retried once */
  pawl_id_t fatal = al_enqueue(p, "fatal", "{}", 5);
  pawl_id_t fine = al_enqueue(p, "ok", "{}", 1);
  /* A signal wait that times out: blocked -> failed. */
  pawl_enqueue_opts_t eo;
  pawl_enqueue_opts_init(&eo);
  eo.signal = "approve-1";
  eo.signal_timeout_ms = 1000;
  pawl_id_t waits;
  CHECK_OK(pawl_enqueue(p, "ok", "{}", &eo, &waits, NULL));
  al_start(p, 2);
  al_state_wait(p, &boom, PAWL_FAILED);
  al_state_wait(p, &fatal, PAWL_FAILED);
  al_state_wait(p, &fine, PAWL_SUCCEEDED);
  atomic_fetch_add(&al_now, 5000); /* the signal's wait times out */
  al_state_wait(p, &waits, PAWL_FAILED);
  /* A program that runs jobs itself fails one (pawl_finish). */
  pawl_id_t by_hand = al_enqueue(p, "nobody_runs_this", "{}", 1);
  al_fail_parked(p, "by hand");
  /* An operator pauses a dead job and resumes it (back to failed): not a
   * new dead job. */
  al_state_wait(p, &fatal, PAWL_FAILED);
  CHECK_OK(pawl_pause(p, &fatal, "look", NULL));
  CHECK_OK(pawl_resume(p, &fatal, "looked", NULL));
  CHECK_INT(al_state(p, &fatal), ==, PAWL_FAILED);
  al_seen_t s;
  al_seen_wait(p, 4, &s);
  al_outbox_wait_empty(url);
  al_seen_read(p, &s);
  CHECK_INT(s.n, ==, 4);
  char needle[128];
  al_id_needle(&boom, needle, sizeof needle);
  CHECK_INT(al_seen_has(&s, needle), ==, 1);
  al_id_needle(&fatal, needle, sizeof needle);
  CHECK_INT(al_seen_has(&s, needle), ==, 1);
  al_id_needle(&waits, needle, sizeof needle);
  CHECK_INT(al_seen_has(&s, needle), ==, 1);
  al_id_needle(&by_hand, needle, sizeof needle);
  CHECK_INT(al_seen_has(&s, needle), ==, 1);
  al_id_needle(&fine, needle, sizeof needle);
  CHECK_INT(al_seen_has(&s, needle), ==, 0);
  CHECK_INT(al_seen_has(&s, "bad thing 1"), ==, 1);
  CHECK_INT(al_seen_has(&s, "not a chance"), ==, 1);
  CHECK_INT(al_seen_has(&s, "\"node\":\"node-a\""), ==, 4);
  pawl_close(p);
}

void test_host_alerts_every_path_once(void) {
  al_every_path("sqlite:alerts.db");
}
void test_pg_alerts_every_path_once_threads(void) {
  char url[4200];
  snprintf(url, sizeof url, "%s", pgtest_url("alpaths"));
  al_every_path(url);
}

/* A node that took an alert and died before its hooks ran: once its
 * lease has run out, another node takes the row and runs the hook (once). */
void test_host_alerts_node_dies(void) {
  const char *url = "sqlite:alerts.db";
  al_defaults(0, NULL);
  pawl_t *dead = al_open(url, "node-dead", 5000);
  pawl_t *p = al_open(url, "node-b", 0);
  pawl_id_t first = al_enqueue(p, "nobody_runs_this", "{}", 1);
  al_fail_parked(p, "gone");
  pawl__alert_t *rows = NULL;
  size_t n = 0;
  CHECK_OK(pawl__alerts_take(dead, 10, 5000, &rows, &n));
  CHECK_INT(n, ==, 1);
  pawl__alerts_free(rows, n);
  /* node-dead never comes back. node-b runs the next job's alert, not
   * the one node-dead holds. */
  al_start(p, 1);
  pawl_id_t second = al_enqueue(p, "nobody_runs_that", "{}", 1);
  al_fail_parked(p, "gone too");
  al_seen_t s;
  al_seen_wait(p, 1, &s);
  char needle[128];
  al_id_needle(&second, needle, sizeof needle);
  CHECK_INT(al_seen_has(&s, needle), ==, 1);
  /* Its row goes once its hook returned; node-dead's stays. */
  al_outbox_wait(url, 1);
  /* Past node-dead's lease. */
  atomic_fetch_add(&al_now, 6000);
  al_seen_wait(p, 2, &s);
  al_outbox_wait_empty(url);
  al_seen_read(p, &s);
  CHECK_INT(s.n, ==, 2);
  al_id_needle(&first, needle, sizeof needle);
  CHECK_INT(al_seen_has(&s, needle), ==, 1);
  pawl_close(p);
  pawl_close(dead);
}

/* A stop cuts a global hook short: its row stays, and the next host runs
 * it (once the row's lease has run out). */
void test_host_alerts_stop_keeps_row(void) {
  const char *url = "sqlite:alerts.db";
  al_script("_defaults",
            "return { alert_window = 0, timeout = 5,\n"
            "  on_dead = function(job)\n"
            "    pawl.enqueue('hook_started', {}, { queue = 'log' })\n"
            "    pawl.sleep(60)\n"
            "  end }\n");
  al_script("fatal", AL_FATAL);
  pawl_t *p = al_open(url, "node-a", 0);
  pawl_id_t id = al_enqueue(p, "fatal", "{}", 1);
  al_start(p, 1);
  al_state_wait(p, &id, PAWL_FAILED);
  pawl_filter_t f;
  pawl_filter_init(&f);
  f.type = "hook_started";
  al_seen_t s;
  for (int k = 0; k < 6000; k++) {
    memset(&s, 0, sizeof s);
    CHECK_OK(pawl_list(p, &f, al_seen_cb, &s));
    if (s.n) break;
    usleep(10000);
  }
  CHECK_INT(s.n, ==, 1);
  pawl_close(p); /* while the hook sleeps */
  CHECK(al_log_has("global on_dead hook cut short by the stop"));
  CHECK_INT(al_outbox(url), ==, 1);
  /* The next host, past the row's lease (node lease + hook timeout). */
  al_defaults(0, NULL);
  atomic_fetch_add(&al_now, 60 * 1000);
  p = al_open(url, "node-b", 0);
  al_start(p, 1);
  al_seen_wait(p, 1, &s);
  al_outbox_wait_empty(url);
  char needle[128];
  al_id_needle(&id, needle, sizeof needle);
  CHECK_INT(al_seen_has(&s, needle), ==, 1);
  pawl_close(p);
}

/* ---- dedup ----------------------------------------------------------------- */

static void al_dedup(const char *url) {
  al_defaults(600, NULL);
  al_script("boom", AL_BOOM);
  al_script("fatal", AL_FATAL);
  pawl_t *p = al_open(url, "node-a", 0);
  pawl_id_t ids[5];
  for (int i = 0; i < 4; i++) {
    char payload[32];
    snprintf(payload, sizeof payload, "{\"n\":%d}", 100 + i * 7);
    ids[i] = al_enqueue(p, "boom", payload, 1);
  }
  ids[4] = al_enqueue(p, "fatal", "{}", 1);
  al_start(p, 2);
  for (int i = 0; i < 5; i++) al_state_wait(p, &ids[i], PAWL_FAILED);
  al_outbox_wait_empty(url);
  /* One alert per error: "bad thing N" is one error whatever N. */
  al_seen_t s;
  al_seen_read(p, &s);
  CHECK_INT(s.n, ==, 2);
  CHECK_INT(al_seen_has(&s, "\"type\":\"boom\""), ==, 1);
  CHECK_INT(al_seen_has(&s, "\"type\":\"fatal\""), ==, 1);
  CHECK_INT(al_seen_has(&s, "\"suppressed\":0"), ==, 2);
  /* Within the window, another one is suppressed too. */
  atomic_fetch_add(&al_now, 300 * 1000);
  pawl_id_t late = al_enqueue(p, "boom", "{\"n\":9999}", 1);
  al_state_wait(p, &late, PAWL_FAILED);
  al_outbox_wait_empty(url);
  al_seen_read(p, &s);
  CHECK_INT(s.n, ==, 2);
  /* The window ends: the hook runs once more with what was suppressed
   * (boom: 5 in all, 4 suppressed; fatal had none to report). */
  atomic_fetch_add(&al_now, 301 * 1000);
  al_seen_wait(p, 3, &s);
  al_outbox_wait_empty(url);
  al_seen_read(p, &s);
  CHECK_INT(s.n, ==, 3);
  CHECK_INT(al_seen_has(&s, "\"count\":5"), ==, 1);
  CHECK_INT(al_seen_has(&s, "\"suppressed\":4"), ==, 1);
  /* A new window: the next one runs the hook at once. */
  pawl_id_t next = al_enqueue(p, "boom", "{\"n\":1}", 1);
  al_state_wait(p, &next, PAWL_FAILED);
  al_seen_wait(p, 4, &s);
  al_outbox_wait_empty(url);
  al_seen_read(p, &s);
  CHECK_INT(s.n, ==, 4);
  pawl_close(p);
}

void test_host_alerts_dedup(void) { al_dedup("sqlite:alerts.db"); }
void test_pg_alerts_dedup_threads(void) { al_dedup(pgtest_url("aldedup")); }

/* ---- two PostgreSQL nodes -------------------------------------------------- */

void test_pg_alerts_two_nodes_once_threads(void) {
  char url[4200];
  snprintf(url, sizeof url, "%s", pgtest_url("al2"));
  al_defaults(0, NULL);
  al_script("boom", AL_BOOM);
  pawl_t *a = al_open(url, "node-a", 0);
  pawl_t *b = al_open(url, "node-b", 0);
  enum { N = 30 };
  pawl_id_t ids[N];
  for (int i = 0; i < N; i++) ids[i] = al_enqueue(a, "boom", "{\"n\":1}", 1);
  al_start(a, 2);
  al_start(b, 2);
  for (int i = 0; i < N; i++) al_state_wait(a, &ids[i], PAWL_FAILED);
  al_seen_t s;
  al_seen_wait(a, N, &s);
  al_outbox_wait_empty(url);
  al_seen_read(a, &s);
  CHECK_INT(s.n, ==, N);
  for (int i = 0; i < N; i++) {
    char needle[128];
    al_id_needle(&ids[i], needle, sizeof needle);
    CHECK_INT(al_seen_has(&s, needle), ==, 1);
  }
  pawl_close(b);
  pawl_close(a);
}

/* ---- the webhook ------------------------------------------------------------- */

typedef struct al_server {
  struct MHD_Daemon *d;
  int port;
  _Atomic int requests;
  _Atomic int fail_first; /* answer 500 to this many requests first */
  pthread_mutex_t mu;
  char body[4096];
  char token[128];
  char auth[256];
} al_server_t;

typedef struct al_upload {
  char buf[4096];
  size_t len;
} al_upload_t;

static enum MHD_Result al_handler(void *cls, struct MHD_Connection *c,
                                  const char *url, const char *method,
                                  const char *version, const char *data,
                                  size_t *size, void **state) {
  (void)url, (void)version;
  al_server_t *s = cls;
  al_upload_t *u = *state;
  if (!u) {
    u = calloc(1, sizeof *u);
    if (!u) return MHD_NO;
    *state = u;
    return MHD_YES;
  }
  if (*size) {
    size_t k = *size < sizeof u->buf - 1 - u->len ? *size
                                                  : sizeof u->buf - 1 - u->len;
    memcpy(u->buf + u->len, data, k);
    u->len += k;
    *size = 0;
    return MHD_YES;
  }
  int n = atomic_fetch_add(&s->requests, 1) + 1;
  pthread_mutex_lock(&s->mu);
  if (strcmp(method, "POST") == 0) snprintf(s->body, sizeof s->body, "%s", u->buf);
  const char *tok = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Token");
  snprintf(s->token, sizeof s->token, "%s", tok ? tok : "");
  const char *auth =
      MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
  snprintf(s->auth, sizeof s->auth, "%s", auth ? auth : "");
  pthread_mutex_unlock(&s->mu);
  unsigned status = n <= atomic_load(&s->fail_first) ? 500 : 200;
  struct MHD_Response *r =
      MHD_create_response_from_buffer(2, (void *)"ok", MHD_RESPMEM_PERSISTENT);
  enum MHD_Result rc = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return rc;
}

static void al_completed(void *cls, struct MHD_Connection *c, void **state,
                         enum MHD_RequestTerminationCode why) {
  (void)cls, (void)c, (void)why;
  free(*state);
  *state = NULL;
}

static void al_server_start(al_server_t *s) {
  pthread_mutex_init(&s->mu, NULL);
  s->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL,
                          al_handler, s, MHD_OPTION_NOTIFY_COMPLETED,
                          al_completed, s, MHD_OPTION_SOCK_ADDR, NULL,
                          MHD_OPTION_END);
  CHECK(s->d != NULL);
  const union MHD_DaemonInfo *i =
      MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
  CHECK(i != NULL);
  s->port = i->port;
}

void test_host_alerts_webhook_posts_and_retries(void) {
  const char *url = "sqlite:alerts.db";
  static al_server_t srv;
  atomic_store(&srv.fail_first, 1);
  al_server_start(&srv);
  char src[1024];
  snprintf(src, sizeof src,
           "return { alert_window = 0,\n"
           "  on_dead = pawl.alert.webhook{\n"
           "    url = 'http://hook:s3cr3t-pw@127.0.0.1:%d/alert?token=tok-9',\n"
           "    headers = { ['X-Token'] = 'abc' }, timeout = 30,\n"
           "    attempts = 3, backoff = 0.05 } }\n",
           srv.port);
  al_script("_defaults", src);
  al_script("fatal", AL_FATAL);
  pawl_t *p = al_open(url, "node-w", 0);
  pawl_id_t id = al_enqueue(p, "fatal", "{\"password\":\"x\"}", 1);
  al_start(p, 1);
  al_state_wait(p, &id, PAWL_FAILED);
  /* The first try gets a 500, the second gets through. */
  for (int k = 0; k < 6000 && !al_log_has("alert posted"); k++) usleep(10000);
  CHECK(al_log_has("alert posted"));
  CHECK_INT(atomic_load(&srv.requests), ==, 2);
  CHECK(al_log_has("alert post failed: will try again"));
  CHECK(al_log_has("the server answered 500"));
  pthread_mutex_lock(&srv.mu);
  char id_text[PAWL_ID_STRLEN], want[128];
  pawl_id_format(&id, id_text);
  snprintf(want, sizeof want, "\"id\":\"%s\"", id_text);
  CHECK(strstr(srv.body, want) != NULL);
  CHECK(strstr(srv.body, "\"type\":\"fatal\"") != NULL);
  CHECK(strstr(srv.body, "\"queue\":\"default\"") != NULL);
  CHECK(strstr(srv.body, "\"error\":\"not a chance\"") != NULL);
  CHECK(strstr(srv.body, "\"node\":\"node-w\"") != NULL);
  CHECK(strstr(srv.body, "\"count\":1") != NULL);
  CHECK(strstr(srv.body, "\"suppressed\":0") != NULL);
  CHECK(strstr(srv.body, "\"attempt\":1") != NULL);
  CHECK_STR(srv.token, "abc");
  CHECK(strncmp(srv.auth, "Basic ", 6) == 0); /* the URL's user info */
  pthread_mutex_unlock(&srv.mu);
  /* The log shows where it posted, not the credentials. */
  CHECK(al_log_has("127.0.0.1"));
  CHECK(!al_log_has("s3cr3t-pw"));
  CHECK(!al_log_has("tok-9"));
  pawl_close(p);
  MHD_stop_daemon(srv.d);
}

/* A loopback socket that takes connections and never accepts them (a
 * server that never answers); its port in *port. */
static int al_silent_listener(int *port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  CHECK(fd >= 0);
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  CHECK_INT(bind(fd, (struct sockaddr *)&a, sizeof a), ==, 0);
  socklen_t alen = sizeof a;
  CHECK_INT(getsockname(fd, (struct sockaddr *)&a, &alen), ==, 0);
  CHECK_INT(listen(fd, 512), ==, 0);
  *port = ntohs(a.sin_port);
  return fd;
}

/* A URL that takes the connection and never answers: the posts wait on
 * the sender thread, and every job still finishes. */
void test_host_alerts_webhook_dead_url_never_blocks(void) {
  const char *url = "sqlite:alerts.db";
  int port;
  int fd = al_silent_listener(&port);
  char hook[256];
  snprintf(hook, sizeof hook,
           "pawl.alert.webhook{ url = 'http://127.0.0.1:%d/', timeout = 60,"
           " attempts = 10 }",
           port);
  char src[1024];
  snprintf(src, sizeof src, "return { alert_window = 0, on_dead = %s }\n",
           hook);
  al_script("_defaults", src);
  /* The type's own on_dead posts too, from the worker threads. */
  snprintf(src, sizeof src,
           "local post = %s\n"
           "return { on_dead = post,\n"
           "  run = function() pawl.fatal('down') end }\n",
           hook);
  al_script("fatal", src);
  al_script("ok", "return { run = function() return 1 end }\n");
  pawl_t *p = al_open(url, "node-x", 0);
  enum { N = 40 };
  pawl_id_t dead[N], fine[N];
  for (int i = 0; i < N; i++) {
    dead[i] = al_enqueue(p, "fatal", "{}", 1);
    fine[i] = al_enqueue(p, "ok", "{}", 1);
  }
  /* The type's hook is job code: its destination is granted. */
  char grant[64];
  snprintf(grant, sizeof grant, "127.0.0.1:%d", port);
  al_start_with(p, 2, NULL, grant);
  for (int i = 0; i < N; i++) {
    al_state_wait(p, &dead[i], PAWL_FAILED);
    al_state_wait(p, &fine[i], PAWL_SUCCEEDED);
  }
  al_outbox_wait_empty(url);
  /* The host stops although a post is in flight (the stop ends it). */
  pawl_close(p);
  CHECK(al_log_has("alert posts not sent: the host stopped"));
  close(fd);
}

/* Job code tries to send data out through the webhook, to a destination
 * the operator did not grant: from its run, from a pcall that would hide
 * the refusal, from its retry policy, sanitizer, on_failure and on_dead
 * hooks, and from a step. Every try is refused and logged, and nothing
 * reaches the receiver but the one post that is allowed: the global
 * on_dead hook's, to the destination _defaults.lua names. Then, with the
 * destination granted, a job's run may post to it. */
void test_host_alerts_webhook_refused_from_job_code(void) {
  const char *url = "sqlite:alerts.db";
  static al_server_t srv;
  al_server_start(&srv);
  char src[4096];
  snprintf(src, sizeof src,
           "local hook = pawl.alert.webhook{ url = 'http://127.0.0.1:%d/d' }\n"
           "return { alert_window = 0, on_dead = function(job, err, info)\n"
           "  if job.type == 'leaky' then hook(job, err, info) end end }\n",
           srv.port);
  al_script("_defaults", src);
  snprintf(src, sizeof src,
           "local post = pawl.alert.webhook{ url = "
           "'http://u:leak-pw@127.0.0.1:%d/x?k=leak-q', attempts = 1 }\n"
           "local function leak(job) post(job, job.payload.password) end\n"
           "return {\n"
           "  max_attempts = 2,\n"
           "  retry = function(attempt, err, job) pcall(leak, job) return 0 end,\n"
           "  sanitize = function(msg, job) pcall(leak, job) return msg end,\n"
           "  on_failure = function(job) leak(job) end,\n"
           "  on_dead = function(job) leak(job) end,\n"
           "  run = function(job)\n"
           "    local ok, err = pcall(leak, job)\n"
           "    assert(not ok and err:find('is not a granted destination', 1, true))\n"
           "    leak(job)\n"
           "  end,\n"
           "}\n",
           srv.port);
  al_script("leaky", src);
  snprintf(src, sizeof src,
           "local post = pawl.alert.webhook{ url = 'http://127.0.0.1:%d/s' }\n"
           "return { steps = { { name = 'one', run = function(job)\n"
           "  post(job, 'from a step') end } } }\n",
           srv.port);
  al_script("stepper", src);
  pawl_t *p = al_open(url, "node-l", 0);
  pawl_id_t id = al_enqueue(p, "leaky", "{\"password\":\"hunter2\"}", 2);
  pawl_id_t st = al_enqueue(p, "stepper", "{}", 1);
  al_start(p, 1);
  al_state_wait(p, &id, PAWL_FAILED);
  al_state_wait(p, &st, PAWL_FAILED);
  for (int k = 0; k < 6000 && !al_log_has("alert posted"); k++) usleep(10000);
  CHECK(al_log_has("alert posted"));
  pawl_close(p);
  /* Only the global hook's post arrived, and it carries no payload. */
  CHECK_INT(atomic_load(&srv.requests), ==, 1);
  pthread_mutex_lock(&srv.mu);
  CHECK(strstr(srv.body, "hunter2") == NULL);
  pthread_mutex_unlock(&srv.mu);
  CHECK(al_log_has("webhook refused: its destination is not granted"));
  CHECK(al_log_has("127.0.0.1"));
  CHECK(!al_log_has("leak-pw"));
  CHECK(!al_log_has("leak-q"));

  /* Granted: the step's post goes through. */
  char grant[64];
  snprintf(grant, sizeof grant, "127.0.0.1:%d", srv.port);
  p = al_open(url, "node-l2", 0);
  st = al_enqueue(p, "stepper", "{}", 1);
  al_start_with(p, 1, NULL, grant);
  al_state_wait(p, &st, PAWL_SUCCEEDED);
  for (int k = 0; k < 6000 && atomic_load(&srv.requests) < 2; k++) usleep(10000);
  pawl_close(p);
  CHECK_INT(atomic_load(&srv.requests), ==, 2);
  pthread_mutex_lock(&srv.mu);
  CHECK(strstr(srv.body, "from a step") != NULL);
  pthread_mutex_unlock(&srv.mu);

  /* Granted by _defaults.lua's allow_webhook instead. */
  snprintf(src, sizeof src, "return { allow_webhook = { '127.0.0.1:%d' } }\n",
           srv.port);
  al_script("_defaults", src);
  p = al_open(url, "node-l3", 0);
  st = al_enqueue(p, "stepper", "{}", 1);
  al_start(p, 1);
  al_state_wait(p, &st, PAWL_SUCCEEDED);
  for (int k = 0; k < 6000 && atomic_load(&srv.requests) < 3; k++) usleep(10000);
  pawl_close(p);
  CHECK_INT(atomic_load(&srv.requests), ==, 3);
  MHD_stop_daemon(srv.d);

  /* Only _defaults.lua grants, and only destinations. */
  pawl_script_info_t info;
  char err[512] = "";
  al_script("granting", "return { allow_webhook = { 'x.example' },\n"
                        "  run = function() end }\n");
  CHECK_INT(pawl_script_info("scripts", "granting", &info, err, sizeof err), ==,
            PAWL_EINVAL);
  CHECK(strstr(err, "allow_webhook belongs to _defaults.lua") != NULL);
  al_script("_defaults", "return { allow_webhook = { 'http://x.example/' } }\n");
  al_script("plain", "return { run = function() end }\n");
  CHECK_INT(pawl_script_info("scripts", "plain", &info, err, sizeof err), ==,
            PAWL_EINVAL);
  CHECK(strstr(err, "allow_webhook: webhook destination must be HOST or "
                    "HOST:PORT") != NULL);
}

/* Fetches http://127.0.0.1:PORT/metrics (the port from the host's log
 * line) and returns the value of counter `name` in it, or -1. */
static size_t al_collect(char *p, size_t size, size_t n, void *data) {
  pawl_buf_t *b = data;
  pawl__buf_append(b, p, size * n);
  return size * n;
}

static long long al_metric(const char *name) {
  pthread_mutex_lock(&al_log_mu);
  const char *at = strstr(al_log, "metrics listening http=");
  int port = at ? atoi(strchr(at, ':') + 1) : 0;
  pthread_mutex_unlock(&al_log_mu);
  if (!port) return -1;
  char url[64];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/metrics", port);
  pawl_buf_t b = {0};
  CURL *c = curl_easy_init();
  CHECK(c != NULL);
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, al_collect);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
  CHECK_INT(curl_easy_perform(c), ==, CURLE_OK);
  curl_easy_cleanup(c);
  char needle[128];
  snprintf(needle, sizeof needle, "\n%s ", name);
  const char *line = strstr(pawl__buf_cstr(&b), needle);
  long long v = line ? atoll(line + strlen(needle)) : -1;
  pawl__buf_free(&b);
  return v;
}

/* One destination that takes connections and never answers fills its own
 * queue (the posts past it are dropped, counted in the metrics); an alert
 * to another destination is posted all the same, without waiting for
 * the first destination's tries. */
void test_host_alerts_webhook_slow_destination_isolated(void) {
  const char *url = "sqlite:alerts.db";
  int port;
  int fd = al_silent_listener(&port);
  static al_server_t srv;
  al_server_start(&srv);
  char src[1024];
  snprintf(src, sizeof src,
           "local live = pawl.alert.webhook{ url = 'http://127.0.0.1:%d/a' }\n"
           "return { alert_window = 0, on_dead = function(job, err, info)\n"
           "  if job.type == 'other' then live(job, err, info) end end }\n",
           srv.port);
  al_script("_defaults", src);
  snprintf(src, sizeof src,
           "local post = pawl.alert.webhook{ url = 'http://127.0.0.1:%d/',"
           " timeout = 60, attempts = 10 }\n"
           "return { on_dead = post, run = function() pawl.fatal('down') end }\n",
           port);
  al_script("flood", src);
  al_script("other", AL_FATAL);
  pawl_t *p = al_open(url, "node-d", 0);
  enum { N = 300 };
  pawl_id_t ids[N];
  for (int i = 0; i < N; i++) ids[i] = al_enqueue(p, "flood", "{}", 1);
  pawl_metrics_opts_t mo = {.listen = "127.0.0.1:0"};
  char grant[64];
  snprintf(grant, sizeof grant, "127.0.0.1:%d", port);
  al_start_with(p, 2, &mo, grant);
  for (int i = 0; i < N; i++) al_state_wait(p, &ids[i], PAWL_FAILED);
  char full[128];
  snprintf(full, sizeof full, "the webhook queue of http://127.0.0.1:%d is full",
           port);
  for (int k = 0; k < 6000 && !al_log_has(full); k++) usleep(10000);
  CHECK(al_log_has(full));
  pawl_id_t other = al_enqueue(p, "other", "{}", 1);
  al_state_wait(p, &other, PAWL_FAILED);
  /* Well before the flooded destination's first try could time out. */
  for (int k = 0; k < 3000 && atomic_load(&srv.requests) < 1; k++) usleep(10000);
  CHECK_INT(atomic_load(&srv.requests), ==, 1);
  /* 256 wait and one is in flight: the rest were dropped, and counted. */
  CHECK_INT(al_metric("pawl_webhook_posts_dropped_total"), ==, N - 257);
  pawl_close(p);
  CHECK(al_log_has("alert posts not sent: the host stopped"));
  close(fd);
  MHD_stop_daemon(srv.d);
}

/* pawl.alert.webhook checks its options when the script loads. */
void test_host_alerts_webhook_refusals(void) {
  static const char *const bad[][2] = {
      {"{ url = 'ftp://x/' }", "http:// or https://"},
      {"{ url = 'file:///etc/passwd' }", "http:// or https://"},
      {"{ url = 'http://u:pw@x/ y' }", "without spaces"},
      {"{ url = 'http://x/', timeout = 0 }", "timeout must be"},
      {"{ url = 'http://x/', attempts = 11 }", "attempts must be"},
      {"{ url = 'http://x/', attempts = 1.5 }", "attempts must be"},
      {"{ url = 'http://x/', headers = { ['a b'] = 'c' } }", "header names"},
      {"{ url = 'http://x/', headers = { a = 'c\\r\\nX: y' } }", "line breaks"},
      {"{ url = 'http://x/', nope = 1 }", "unknown option"},
      {"{ }", "url is required"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char src[512];
    snprintf(src, sizeof src,
             "return { run = function() end,\n"
             "  on_dead = pawl.alert.webhook%s }\n",
             bad[i][0]);
    al_script("hooked", src);
    pawl_script_info_t info;
    char err[512] = "";
    int rc = pawl_script_info("scripts", "hooked", &info, err, sizeof err);
    CHECK_INT(rc, ==, PAWL_EINVAL);
    if (!strstr(err, bad[i][1]))
      unit_fail(__FILE__, __LINE__, "%s: %s", bad[i][0], err);
    CHECK(strstr(err, "pw@") == NULL); /* the password is not repeated */
  }
  /* A refused URL is shown as the webhook sender's log lines show one
   * (pawl__redact_web_url): without its user information, and without its
   * query, where an API key often travels. */
  /* {the URL as a Lua literal, the URL} */
  static const char *const urls[][2] = {
      {"'ftp://u:pw@hooks.example/x?api_key=K3Y'",
       "ftp://u:pw@hooks.example/x?api_key=K3Y"},
      {"'gopher://hooks.example?token=K3Y&a=1'",
       "gopher://hooks.example?token=K3Y&a=1"},
      {"'http://hooks.example/a b?api_key=K3Y'",
       "http://hooks.example/a b?api_key=K3Y"},
      {"'https://u:pw@hooks.example/?api_key=K3Y\\n'",
       "https://u:pw@hooks.example/?api_key=K3Y\n"},
      {"'mailto:ops@hooks.example?subject=K3Y'",
       "mailto:ops@hooks.example?subject=K3Y"},
      {"'http://hooks.example/#K3Y x'", "http://hooks.example/#K3Y x"},
      {"'http://hooks.example/?api_key=K3Y' .. ('a'):rep(3000)",
       NULL},
  };
  for (size_t i = 0; i < sizeof urls / sizeof urls[0]; i++) {
    char src[512], want[512];
    snprintf(src, sizeof src,
             "return { run = function() end,\n"
             "  on_dead = pawl.alert.webhook{ url = %s } }\n",
             urls[i][0]);
    al_script("hooked", src);
    pawl_script_info_t info;
    char err[1024] = "";
    CHECK_INT(pawl_script_info("scripts", "hooked", &info, err, sizeof err),
              ==, PAWL_EINVAL);
    if (urls[i][1]) pawl__redact_web_url(urls[i][1], want, sizeof want);
    else snprintf(want, sizeof want, "http://hooks.example/?<redacted>");
    if (!strstr(err, want) || strstr(err, "K3Y") || strstr(err, "pw@"))
      unit_fail(__FILE__, __LINE__, "%s: want %s in: %s", urls[i][0], want,
                err);
  }
  /* alert_window belongs to _defaults.lua, and is bounded. */
  al_script("hooked", "return { run = function() end, alert_window = 5 }\n");
  pawl_script_info_t info;
  char err[512] = "";
  CHECK_INT(pawl_script_info("scripts", "hooked", &info, err, sizeof err), ==,
            PAWL_EINVAL);
  CHECK(strstr(err, "alert_window belongs to _defaults.lua") != NULL);
}

/* The dedup key: numbers and ids do not count, words do. */
void test_alerts_fingerprint(void) {
  int64_t a = pawl__alert_fingerprint("t", "bad thing 42 at 0x7f3a");
  CHECK_INT(a, ==, pawl__alert_fingerprint("t", "bad thing 7 at 0x11"));
  CHECK_INT(a, ==, pawl__alert_fingerprint(
                       "t", "bad thing 0190c8a2-7b1e-7c3d-8e4f-123456789abc at 0x1"));
  CHECK_INT(a, !=, pawl__alert_fingerprint("u", "bad thing 42 at 0x7f3a"));
  CHECK_INT(a, !=, pawl__alert_fingerprint("t", "good thing 42 at 0x7f3a"));
  /* Hex letters without a digit are a word ("dead", "beef"). */
  CHECK_INT(pawl__alert_fingerprint("t", "dead"), !=,
            pawl__alert_fingerprint("t", "beef"));
}

/* ---- the store's part, on both backends -------------------------------- */

/* A row's dedup decision is made once: asked again (by the node that
 * holds it, or by the node that took it over after the first died), it is
 * the same, and the window is counted once per row. */
static void al_store(const char *url) {
  pawl_t *a = al_open(url, "node-a", 0);
  pawl_t *b = al_open(url, "node-b", 0);
  al_enqueue(a, "nobody_x1", "{}", 1);
  al_fail_parked(a, "x failed: 1");
  al_enqueue(a, "nobody_x1", "{}", 1);
  al_fail_parked(a, "x failed: 2");
  pawl__alert_t *v = NULL;
  size_t n = 0;
  CHECK_OK(pawl__alerts_take(a, 10, 1000, &v, &n));
  CHECK_INT(n, ==, 2);
  CHECK(v[0].seq < v[1].seq);
  CHECK_STR(v[0].error, "x failed: 1");
  CHECK_STR(v[0].queue, "parked");
  CHECK_INT(v[0].kind, ==, 0);
  CHECK_OK(pawl__alert_note(a, 600000, &v[0]));
  CHECK_INT(v[0].verdict, ==, 1);
  CHECK_INT(v[0].count, ==, 1);
  CHECK_OK(pawl__alert_note(a, 600000, &v[0])); /* asked again */
  CHECK_INT(v[0].verdict, ==, 1);
  CHECK_OK(pawl__alert_note(a, 600000, &v[1]));
  CHECK_INT(v[1].verdict, ==, 2);
  CHECK_INT(v[1].count, ==, 2);
  /* Held by a: b takes nothing. */
  pawl__alert_t *w = NULL;
  size_t m = 0;
  CHECK_OK(pawl__alerts_take(b, 10, 1000, &w, &m));
  CHECK_INT(m, ==, 0);
  pawl__alerts_free(w, m);
  /* a dies; after its lease b takes both, with their decisions. */
  atomic_fetch_add(&al_now, 2000);
  CHECK_OK(pawl__alerts_take(b, 10, 60000, &w, &m));
  CHECK_INT(m, ==, 2);
  CHECK_INT(w[1].verdict, ==, 2);
  CHECK_OK(pawl__alert_note(b, 600000, &w[1]));
  CHECK_INT(w[1].verdict, ==, 2);
  CHECK_INT(w[1].count, ==, 2); /* not counted again */
  /* a is no longer the holder: its note is refused, its done does
   * nothing. */
  CHECK_INT(pawl__alert_note(a, 600000, &v[1]), ==, PAWL_ELEASE);
  CHECK_OK(pawl__alert_done(a, v[0].seq));
  CHECK_INT(al_outbox(url), ==, 2);
  CHECK_OK(pawl__alert_done(b, w[0].seq));
  CHECK_OK(pawl__alert_done(b, w[1].seq));
  CHECK_INT(al_outbox(url), ==, 0);
  pawl__alerts_free(v, n);
  pawl__alerts_free(w, m);
  /* The window ends: one summary row (2 alerts, 1 suppressed). */
  atomic_fetch_add(&al_now, 600 * 1000);
  CHECK_OK(pawl__alerts_take(b, 10, 60000, &w, &m));
  CHECK_INT(m, ==, 1);
  CHECK_INT(w[0].kind, ==, 1);
  CHECK_INT(w[0].count, ==, 2);
  CHECK_INT(w[0].suppressed, ==, 1);
  CHECK_INT(w[0].last_at - w[0].first_at, ==, 0);
  CHECK_STR(w[0].type, "nobody_x1");
  CHECK_OK(pawl__alert_done(b, w[0].seq));
  pawl__alerts_free(w, m);
  CHECK_INT(al_outbox(url), ==, 0);
  /* Refusals: numbers out of their bounds. */
  CHECK_INT(pawl__alerts_take(b, 10, 0, &w, &m), ==, PAWL_EINVAL);
  CHECK_INT(pawl__alerts_take(b, 0, 1000, &w, &m), ==, PAWL_EINVAL);
  pawl_close(b);
  pawl_close(a);
}

void test_alerts_store_sqlite(void) { al_store("sqlite:alerts.db"); }
void test_pg_alerts_store(void) {
  char url[4200];
  snprintf(url, sizeof url, "%s", pgtest_url("alstore"));
  al_store(url);
}
