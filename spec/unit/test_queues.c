/* test_queues.c: queues, on both backends: pausing and resuming
 * a whole queue (the claim and next_due leave a paused queue alone, for
 * every node), the list, a queue's own age boost (the claim order of
 * queues with different boosts, computed here independently), bad input
 * refused with nothing changed; and the worker host's concurrency per
 * queue (a queue's jobs held at a gate never starve another queue, and no
 * queue runs more jobs at once than its number). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include <sqlite3.h>

#include "handle.h"
#include "pawl.h"
#include "pg_undo.h"
#include "pgtest.h"
#include "sqlite_sql.h"
#include "sqlite_undo.h"
#include "unit.h"

#define QT0 INT64_C(1800000000000)

static _Atomic int64_t q_now = QT0;

static int64_t q_clock(void *data) {
  (void)data;
  return atomic_load(&q_now);
}

static pawl_t *q_open(const char *url, const char *node, int64_t boost_ms) {
  pawl_options_t o;
  pawl_options_init(&o);
  o.db = url;
  o.node_id = node;
  o.principal = "tester";
  o.clock = q_clock;
  o.lease_ms = 10000;
  o.age_boost_ms = boost_ms;
  pawl_t *p = NULL;
  char err[512];
  if (pawl_open(&p, &o, err, sizeof err))
    unit_fail(__FILE__, __LINE__, "pawl_open(%s): %s", url, err);
  return p;
}

static pawl_id_t q_enq(pawl_t *p, const char *queue, int32_t priority) {
  pawl_enqueue_opts_t o;
  pawl_enqueue_opts_init(&o);
  o.queue = queue;
  o.priority = priority;
  pawl_id_t id;
  if (pawl_enqueue(p, "job", "{}", &o, &id, NULL))
    unit_fail(__FILE__, __LINE__, "enqueue: %s", pawl_errmsg(p));
  return id;
}

/* Claims up to `max` jobs of `queue` (NULL: any queue). */
static size_t q_claim(pawl_t *p, const char *queue, size_t max,
                      pawl_job_t ***out) {
  pawl_claim_opts_t co = {.queues = &queue, .nqueues = queue ? 1 : 0};
  pawl_job_t **jobs = NULL;
  size_t n = 0;
  if (pawl_claim(p, &co, max, &jobs, &n))
    unit_fail(__FILE__, __LINE__, "claim: %s", pawl_errmsg(p));
  if (out)
    *out = jobs;
  else
    pawl_jobs_free(jobs, n);
  return n;
}

static int64_t q_next_due(pawl_t *p, const char *queue) {
  pawl_claim_opts_t co = {.queues = &queue, .nqueues = queue ? 1 : 0};
  int64_t at = -1;
  CHECK_OK(pawl_next_due(p, &co, &at));
  return at;
}

static const pawl_queue_info_t *q_find(const pawl_queue_info_t *q, size_t n,
                                       const char *name) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(q[i].name, name) == 0) return &q[i];
  return NULL;
}

/* ---- pause and resume ------------------------------------------------------ */

static void queues_pause(const char *url) {
  atomic_store(&q_now, QT0);
  pawl_t *a = q_open(url, "node-a", 0);
  pawl_t *b = q_open(url, "node-b", -1);
  q_enq(a, "mail", 5); /* the higher priority: claimed first if it could be */
  q_enq(a, "mail", 5);
  pawl_id_t def = q_enq(a, "default", 0);
  int changed = -1;
  CHECK_OK(pawl_queue_pause(a, "mail", "smtp down", &changed));
  CHECK_INT(changed, ==, 1);
  /* Every node's claims leave it alone: any queue, or mail by name. */
  pawl_job_t **jobs = NULL;
  CHECK_INT(q_claim(b, NULL, 10, &jobs), ==, 1);
  CHECK(memcmp(jobs[0]->id.bytes, def.bytes, 16) == 0);
  pawl_jobs_free(jobs, 1);
  CHECK_INT(q_claim(a, "mail", 10, NULL), ==, 0);
  CHECK_INT(q_claim(b, "mail", 10, NULL), ==, 0);
  /* Nor does a node wait for its jobs. */
  CHECK_INT(q_next_due(b, NULL), ==, 0);
  CHECK_INT(q_next_due(b, "mail"), ==, 0);
  /* Pausing again changes nothing. */
  CHECK_OK(pawl_queue_pause(b, "mail", "again", &changed));
  CHECK_INT(changed, ==, 0);
  /* A queue without jobs may be paused ahead of them. */
  CHECK_OK(pawl_queue_pause(a, "reports", NULL, &changed));
  CHECK_INT(changed, ==, 1);
  pawl_queue_info_t *q = NULL;
  size_t n = 0;
  CHECK_OK(pawl_queues(b, &q, &n));
  CHECK_INT(n, ==, 3);
  const pawl_queue_info_t *m = q_find(q, n, "mail");
  CHECK(m && m->paused);
  CHECK_INT(m->paused_at, ==, QT0);
  CHECK_STR(m->paused_by, "tester");
  CHECK_STR(m->reason, "smtp down"); /* the first pause's */
  CHECK_INT(m->count[PAWL_PENDING], ==, 2);
  const pawl_queue_info_t *r = q_find(q, n, "reports");
  CHECK(r && r->paused && !r->reason);
  CHECK_INT(r->count[PAWL_PENDING], ==, 0);
  const pawl_queue_info_t *d = q_find(q, n, "default");
  CHECK(d && !d->paused && !d->paused_by);
  CHECK_INT(d->count[PAWL_RUNNING], ==, 1);
  pawl_queues_free(q, n);
  /* Resumed: claimed again, by any node. */
  CHECK_OK(pawl_queue_resume(b, "mail", &changed));
  CHECK_INT(changed, ==, 1);
  CHECK_INT(q_next_due(a, "mail"), ==, QT0);
  CHECK_INT(q_claim(a, NULL, 10, NULL), ==, 2);
  /* Resuming a queue that is not paused (never was, or is no more) says
   * so and changes nothing. */
  CHECK_OK(pawl_queue_resume(a, "mail", &changed));
  CHECK_INT(changed, ==, 0);
  CHECK_OK(pawl_queue_resume(a, "never-paused", &changed));
  CHECK_INT(changed, ==, 0);
  CHECK_OK(pawl_queues(a, &q, &n));
  CHECK_INT(n, ==, 3); /* "never-paused" left no trace */
  CHECK(!q_find(q, n, "mail")->paused);
  CHECK_INT(q_find(q, n, "mail")->paused_at, ==, 0);
  pawl_queues_free(q, n);
  pawl_close(b);
  pawl_close(a);
}

/* Bad names and reasons are refused with the value named, and change
 * nothing. */
static void queues_bad_input(const char *url) {
  pawl_t *p = q_open(url, "node-a", 0);
  q_enq(p, "mail", 0);
  int changed = 7;
  CHECK_INT(pawl_queue_pause(p, "", NULL, &changed), ==, PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "queue name") != NULL);
  CHECK_INT(pawl_queue_pause(p, "ma\nil", NULL, NULL), ==, PAWL_EINVAL);
  char longname[300];
  memset(longname, 'q', sizeof longname - 1);
  longname[sizeof longname - 1] = 0;
  CHECK_INT(pawl_queue_pause(p, longname, NULL, NULL), ==, PAWL_EINVAL);
  char reason[1100];
  memset(reason, 'r', sizeof reason - 1);
  reason[sizeof reason - 1] = 0;
  CHECK_INT(pawl_queue_pause(p, "mail", reason, NULL), ==, PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "1000") != NULL);
  CHECK_INT(pawl_queue_pause(p, "mail", "a\x1b[31m", NULL), ==, PAWL_EINVAL);
  CHECK_INT(pawl_queue_resume(p, "", NULL), ==, PAWL_EINVAL);
  CHECK_INT(pawl_queue_set_age_boost(p, "mail", -2), ==, PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "-2") != NULL);
  CHECK_INT(pawl_queue_set_age_boost(p, "mail", PAWL_AGE_BOOST_MAX_MS + 1), ==,
            PAWL_EINVAL);
  CHECK_INT(pawl_queue_set_age_boost(p, "", 1000), ==, PAWL_EINVAL);
  CHECK_INT(changed, ==, 7);
  /* Nothing was stored: no queue row, the job still claimable. */
  pawl_queue_info_t *q = NULL;
  size_t n = 0;
  CHECK_OK(pawl_queues(p, &q, &n));
  CHECK_INT(n, ==, 1);
  CHECK(!q[0].paused && q[0].age_boost_ms == -1);
  pawl_queues_free(q, n);
  CHECK_INT(q_claim(p, "mail", 1, NULL), ==, 1);
  pawl_close(p);
}

/* ---- a queue's own age boost ---------------------------------------------- */

/* The claim order the test expects, computed without the store's formula:
 * each job's virtual enqueue time is run_at - priority x boost (no boost
 * counts as 9e12 ms), earliest first, then run_at, then the id. */
typedef struct q_expect {
  pawl_id_t id;
  int64_t run_at;
  int32_t priority;
  int64_t boost;
} q_expect_t;

static int q_expect_cmp(const void *a, const void *b) {
  const q_expect_t *x = a, *y = b;
  __int128 vx = (__int128)x->run_at -
                (__int128)x->priority * (x->boost > 0 ? x->boost : INT64_C(9000000000000));
  __int128 vy = (__int128)y->run_at -
                (__int128)y->priority * (y->boost > 0 ? y->boost : INT64_C(9000000000000));
  if (vx != vy) return vx < vy ? -1 : 1;
  if (x->run_at != y->run_at) return x->run_at < y->run_at ? -1 : 1;
  return memcmp(x->id.bytes, y->id.bytes, 16);
}

static void q_check_order(pawl_t *p, q_expect_t *e, size_t n) {
  qsort(e, n, sizeof *e, q_expect_cmp);
  pawl_job_t **jobs = NULL;
  CHECK_INT(q_claim(p, NULL, n + 5, &jobs), ==, n);
  for (size_t i = 0; i < n; i++)
    if (memcmp(jobs[i]->id.bytes, e[i].id.bytes, 16) != 0)
      unit_fail(__FILE__, __LINE__,
                "claim order: job %zu is a %s job of priority %d, expected "
                "one of priority %d run_at %lld boost %lld",
                i, jobs[i]->queue, jobs[i]->priority, e[i].priority,
                (long long)e[i].run_at, (long long)e[i].boost);
  pawl_jobs_free(jobs, n);
}

static void queues_age_boost(const char *url) {
  atomic_store(&q_now, QT0);
  /* The database's boost is 0 (none): "plain" ranks by priority. */
  pawl_t *p = q_open(url, "node-a", 0);
  CHECK_OK(pawl_queue_set_age_boost(p, "fast", 60000));      /* +1 a minute */
  CHECK_OK(pawl_queue_set_age_boost(p, "slow", 3600000));    /* +1 an hour */
  struct {
    const char *queue;
    int32_t priority;
    int64_t boost;
  } kinds[] = {{"fast", 0, 60000},  {"fast", 2, 60000},  {"fast", 5, 60000},
               {"slow", 0, 3600000}, {"slow", 1, 3600000}, {"plain", 0, 0},
               {"plain", 1, 0}};
  q_expect_t e[7 * 4];
  size_t n = 0;
  /* Four rounds, a minute and a half apart. */
  for (int round = 0; round < 4; round++) {
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
      e[n] = (q_expect_t){q_enq(p, kinds[k].queue, kinds[k].priority),
                          atomic_load(&q_now), kinds[k].priority,
                          kinds[k].boost};
      n++;
    }
    atomic_fetch_add(&q_now, 90000);
  }
  q_check_order(p, e, n);

  /* A boost set later re-ranks the queue's pending jobs (and only its):
   * "plain" gets a minute, "fast" goes back to the database's (none). */
  n = 0;
  for (int round = 0; round < 3; round++) {
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
      e[n] = (q_expect_t){q_enq(p, kinds[k].queue, kinds[k].priority),
                          atomic_load(&q_now), kinds[k].priority, 0};
      n++;
    }
    atomic_fetch_add(&q_now, 90000);
  }
  CHECK_OK(pawl_queue_set_age_boost(p, "plain", 60000));
  CHECK_OK(pawl_queue_set_age_boost(p, "fast", -1));
  for (size_t i = 0; i < n; i++) {
    pawl_job_t *j = NULL;
    CHECK_OK(pawl_get(p, &e[i].id, &j));
    e[i].boost = strcmp(j->queue, "plain") == 0  ? 60000
                 : strcmp(j->queue, "slow") == 0 ? 3600000
                                                 : 0;
    pawl_job_free(j);
  }
  q_check_order(p, e, n);

  /* A retry ranks with its queue's boost too. */
  n = 0;
  pawl_id_t slow = q_enq(p, "slow", 0);
  pawl_job_t **jobs = NULL;
  CHECK_INT(q_claim(p, "slow", 1, &jobs), ==, 1);
  atomic_fetch_add(&q_now, 600000);
  e[n++] = (q_expect_t){q_enq(p, "plain", 10), atomic_load(&q_now), 10, 60000};
  pawl_outcome_t o = {.id = jobs[0]->id, .attempt = jobs[0]->attempt,
                      .kind = PAWL_OUT_RETRY, .error = "again",
                      .run_at = atomic_load(&q_now) - 1000,
                      .store_key = jobs[0]->store_key};
  int rcs[1];
  CHECK_OK(pawl_finish(p, &o, 1, rcs));
  CHECK_OK(rcs[0]);
  pawl_jobs_free(jobs, 1);
  e[n++] = (q_expect_t){slow, atomic_load(&q_now) - 1000, 0, 3600000};
  e[n++] = (q_expect_t){q_enq(p, "slow", 0), atomic_load(&q_now), 0, 3600000};
  q_check_order(p, e, n);

  /* The list shows each queue's own and what its jobs rank with. */
  pawl_queue_info_t *q = NULL;
  size_t nq = 0;
  CHECK_OK(pawl_queues(p, &q, &nq));
  CHECK_INT(q_find(q, nq, "fast")->age_boost_ms, ==, -1);
  CHECK_INT(q_find(q, nq, "fast")->effective_age_boost_ms, ==, 0);
  CHECK_INT(q_find(q, nq, "plain")->age_boost_ms, ==, 60000);
  CHECK_INT(q_find(q, nq, "slow")->effective_age_boost_ms, ==, 3600000);
  pawl_queues_free(q, nq);
  pawl_close(p);
}

/* Queues with and without an age boost claimed together: the database's
 * boost is 15 minutes, one queue has none (0). Before the rank of "no
 * boost" was a time too, such a queue's jobs (rank = priority) always
 * came before every boosted job, however long those had waited. */
static void queues_no_boost_mixed(const char *url) {
  atomic_store(&q_now, QT0);
  pawl_t *p = q_open(url, "node-a", 900000);
  CHECK_OK(pawl_queue_set_age_boost(p, "strict", 0));
  q_expect_t e[4];
  e[0] = (q_expect_t){q_enq(p, "default", 0), QT0, 0, 900000};
  e[1] = (q_expect_t){q_enq(p, "default", 3), QT0, 3, 900000};
  atomic_fetch_add(&q_now, 3600000);
  e[2] = (q_expect_t){q_enq(p, "strict", 0), QT0 + 3600000, 0, 0};
  e[3] = (q_expect_t){q_enq(p, "default", 0), QT0 + 3600000, 0, 900000};
  q_check_order(p, e, 4);
  pawl_close(p);
}

/* ---- the worker host: concurrency per queue -------------------------------- */

/* C jobs that record how many of their queue run at once (the most ever),
 * and wait at their queue's gate (a generous hang guard, never a bound on
 * the machine's speed). */
typedef struct q_gate {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int open;
  int running, most, done;
} q_gate_t;

static q_gate_t q_gates[2] = {
    {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, 0},
    {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, 0}};

static int q_gated_job(const pawl_job_t *job, pawl_ctx_t *ctx, void *ud) {
  (void)job;
  (void)ctx;
  q_gate_t *g = ud;
  pthread_mutex_lock(&g->mu);
  g->running++;
  if (g->running > g->most) g->most = g->running;
  pthread_cond_broadcast(&g->cv);
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 90;
  int rc = 0;
  while (!g->open && rc == 0) rc = pthread_cond_timedwait(&g->cv, &g->mu, &until);
  g->running--;
  g->done++;
  pthread_cond_broadcast(&g->cv);
  pthread_mutex_unlock(&g->mu);
  return rc == 0 ? PAWL_JOB_OK : PAWL_JOB_FATAL;
}

static void q_gate_open(q_gate_t *g) {
  pthread_mutex_lock(&g->mu);
  g->open = 1;
  pthread_cond_broadcast(&g->cv);
  pthread_mutex_unlock(&g->mu);
}

/* Waits (hang guard: two minutes) until `field` of the gate reaches n. */
static void q_gate_wait(q_gate_t *g, const int *field, int n) {
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 90;
  pthread_mutex_lock(&g->mu);
  int rc = 0;
  while (*field < n && rc == 0) rc = pthread_cond_timedwait(&g->cv, &g->mu, &until);
  int got = *field;
  pthread_mutex_unlock(&g->mu);
  if (got < n) unit_fail(__FILE__, __LINE__, "waited for %d, got %d", n, got);
}

static int q_gate_get(q_gate_t *g, const int *field) {
  pthread_mutex_lock(&g->mu);
  int v = *field;
  pthread_mutex_unlock(&g->mu);
  return v;
}

static void q_enq_type(pawl_t *p, const char *type, const char *queue, int n,
                       pawl_id_t *ids) {
  for (int i = 0; i < n; i++) {
    pawl_enqueue_opts_t o;
    pawl_enqueue_opts_init(&o);
    o.queue = queue;
    CHECK_OK(pawl_enqueue(p, type, "{}", &o, ids ? &ids[i] : NULL, NULL));
  }
}

static int q_state(pawl_t *p, const pawl_id_t *id) {
  pawl_job_t *j = NULL;
  CHECK_OK(pawl_get(p, id, &j));
  int s = j->state;
  pawl_job_free(j);
  return s;
}

/* A node serving mail=1 and default=2 (`shared`: default shares a pool of
 * two workers instead). Many mail jobs wait at their gate; default jobs
 * still run, two at a time; mail never runs two. Then mail is paused and
 * resumed while the host runs. */
static void queues_host(const char *url, int shared) {
  q_gate_t *mail = &q_gates[0], *def = &q_gates[1];
  pawl_options_t oo;
  pawl_options_init(&oo);
  oo.db = url;
  oo.node_id = "node-q";
  oo.age_boost_ms = 0;
  pawl_t *p = NULL;
  char err[512];
  if (pawl_open(&p, &oo, err, sizeof err))
    unit_fail(__FILE__, __LINE__, "open: %s", err);
  CHECK_OK(pawl_define_c(p, "mailjob", q_gated_job, mail, NULL));
  CHECK_OK(pawl_define_c(p, "defjob", q_gated_job, def, NULL));
  pawl_id_t mail_ids[6], def_ids[6];
  /* The mail jobs come first: a claim in order would take them all. */
  q_enq_type(p, "mailjob", "mail", 6, mail_ids);
  q_enq_type(p, "defjob", "default", 6, def_ids);
  static const char *const queues[] = {"mail", "default"};
  int conc[2] = {1, shared ? 0 : 2};
  pawl_host_opts_t o;
  pawl_host_opts_init(&o);
  o.log_level = PAWL_LOG_ERROR;
  o.queues = queues;
  o.nqueues = 2;
  o.queue_concurrency = conc;
  o.workers = shared ? 2 : 0;
  o.poll_ms = 50;
  CHECK_OK(pawl_start(p, &o));
  /* Two default jobs run at once while a mail job holds mail's worker. */
  q_gate_wait(def, &def->running, 2);
  q_gate_wait(mail, &mail->running, 1);
  q_gate_open(def);
  q_gate_wait(def, &def->done, 6);
  for (int i = 0; i < 6; i++) {
    for (int k = 0; k < 12000 && q_state(p, &def_ids[i]) != PAWL_SUCCEEDED; k++)
      usleep(10000); /* the outcome is written by the completer */
    CHECK_INT(q_state(p, &def_ids[i]), ==, PAWL_SUCCEEDED);
  }
  /* All the while, mail ran one job: the first, still at its gate. */
  CHECK_INT(q_gate_get(mail, &mail->running), ==, 1);
  CHECK_INT(q_gate_get(mail, &mail->done), ==, 0);
  int running = 0, pending = 0;
  for (int i = 0; i < 6; i++) {
    int s = q_state(p, &mail_ids[i]);
    running += s == PAWL_RUNNING;
    pending += s == PAWL_PENDING;
  }
  CHECK_INT(running, ==, 1);
  CHECK_INT(pending, ==, 5);
  /* Paused, mail is claimed no more: after its gate opens, the job that
   * ran finishes, and the others stay pending while default jobs enqueued
   * after them run (each poll claims mail before default). */
  CHECK_OK(pawl_queue_pause(p, "mail", NULL, NULL));
  q_gate_open(mail);
  q_gate_wait(mail, &mail->done, 1);
  pawl_id_t later[3];
  q_enq_type(p, "defjob", "default", 3, later);
  q_gate_wait(def, &def->done, 9);
  for (int i = 0; i < 3; i++) {
    for (int k = 0; k < 12000 && q_state(p, &later[i]) != PAWL_SUCCEEDED; k++)
      usleep(10000);
    CHECK_INT(q_state(p, &later[i]), ==, PAWL_SUCCEEDED);
  }
  pending = 0;
  for (int i = 0; i < 6; i++) pending += q_state(p, &mail_ids[i]) == PAWL_PENDING;
  CHECK_INT(pending, ==, 5);
  CHECK_INT(q_gate_get(mail, &mail->done), ==, 1);
  /* Resumed: the rest run (the host in this process is woken at once). */
  CHECK_OK(pawl_queue_resume(p, "mail", NULL));
  q_gate_wait(mail, &mail->done, 6);
  pawl_stop(p, PAWL_STOP_GRACEFUL);
  CHECK_OK(pawl_wait(p, -1));
  for (int i = 0; i < 6; i++) CHECK_INT(q_state(p, &mail_ids[i]), ==, PAWL_SUCCEEDED);
  /* The most ever running at once, as the jobs themselves counted. */
  CHECK_INT(mail->most, ==, 1);
  CHECK_INT(def->most, ==, 2);
  pawl_close(p);
}

/* Refused host options: a number out of range, workers with no queue to
 * share them, too many threads; nothing starts. */
static void queues_host_bad_opts(const char *url) {
  pawl_options_t oo;
  pawl_options_init(&oo);
  oo.db = url;
  pawl_t *p = NULL;
  char err[512];
  if (pawl_open(&p, &oo, err, sizeof err))
    unit_fail(__FILE__, __LINE__, "open: %s", err);
  CHECK_OK(pawl_define_c(p, "defjob", q_gated_job, &q_gates[1], NULL));
  static const char *const queues[] = {"mail", "default"};
  int conc[2] = {1, 2};
  pawl_host_opts_t o;
  pawl_host_opts_init(&o);
  o.log_level = PAWL_LOG_ERROR;
  o.queues = queues;
  o.nqueues = 2;
  o.queue_concurrency = conc;
  o.workers = 3;
  CHECK_INT(pawl_start(p, &o), ==, PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "workers (3)") != NULL);
  o.workers = 0;
  conc[1] = PAWL_QUEUE_CONCURRENCY_MAX + 1;
  CHECK_INT(pawl_start(p, &o), ==, PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "default") != NULL);
  conc[1] = -1;
  CHECK_INT(pawl_start(p, &o), ==, PAWL_EINVAL);
  conc[0] = 1000, conc[1] = 1000;
  CHECK_INT(pawl_start(p, &o), ==, PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "1024") != NULL);
  /* Step mode runs one job at a time. */
  conc[0] = 1, conc[1] = 0;
  CHECK_INT(pawl_step_start(p, &o), ==, PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "step mode") != NULL);
  pawl_close(p);
}

/* ---- the migration ------------------------------------------------------------ */

/* A database from before the queues migration, with the age boost off:
 * its pending jobs' rank is their priority. Migrated, they rank as times
 * (priority x 9e12 - run_at) in the same order. `sql` runs raw SQL on the
 * database; `undo` takes the queues migration back out. */
typedef void (*q_sql_fn)(void *conn, const char *sql);
typedef long long (*q_int_fn)(void *conn, const char *sql);

static void queues_migration(const char *url, void *conn, q_sql_fn sql,
                             q_int_fn num, const char *undo) {
  atomic_store(&q_now, QT0);
  pawl_t *p = q_open(url, "node-a", 0);
  q_enq(p, "default", 0);
  atomic_fetch_add(&q_now, 60000);
  pawl_id_t high = q_enq(p, "default", 1);
  pawl_close(p);
  sql(conn, "UPDATE pawl_jobs SET rank = priority");
  sql(conn, undo);
  p = q_open(url, "node-a", -1); /* migrates again */
  CHECK_INT(num(conn, "SELECT count(*) FROM pawl_jobs WHERE rank = "
                      "priority * 9000000000000 - 1800000000000"),
            ==, 1);
  CHECK_INT(num(conn, "SELECT count(*) FROM pawl_jobs WHERE rank = "
                      "priority * 9000000000000 - 1800000060000"),
            ==, 1);
  pawl_job_t **jobs = NULL;
  CHECK_INT(q_claim(p, NULL, 2, &jobs), ==, 2);
  CHECK(memcmp(jobs[0]->id.bytes, high.bytes, 16) == 0);
  pawl_jobs_free(jobs, 2);
  pawl_close(p);
}

sqlite3 *pawl__store_sqlite_db(store_t *st);

static void q_sqlite_exec(void *db, const char *sql) {
  char *msg = NULL;
  if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
    unit_fail(__FILE__, __LINE__, "%s: %s", sql, msg ? msg : "?");
}

static long long q_sqlite_int(void *db, const char *sql) {
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK ||
      sqlite3_step(st) != SQLITE_ROW)
    unit_fail(__FILE__, __LINE__, "%s: %s", sql, sqlite3_errmsg(db));
  long long v = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  return v;
}

static void q_pg_exec(void *c, const char *sql) { pgtest_exec(c, sql); }
static long long q_pg_int(void *c, const char *sql) { return pgtest_int(c, sql); }

/* ---- both backends ----------------------------------------------------------- */

static const char *q_sqlite(const char *name) {
  static char url[4200];
  snprintf(url, sizeof url, "sqlite:%s/%s.db", unit_tmpdir(), name);
  return url;
}

void test_store_sqlite_queues_pause(void) { queues_pause(q_sqlite("p")); }
void test_store_pg_queues_pause(void) { queues_pause(pgtest_url("qpause")); }
void test_store_sqlite_queues_bad_input(void) { queues_bad_input(q_sqlite("b")); }
void test_store_pg_queues_bad_input(void) { queues_bad_input(pgtest_url("qbad")); }
void test_store_sqlite_queues_age_boost(void) { queues_age_boost(q_sqlite("a")); }
void test_store_pg_queues_age_boost(void) { queues_age_boost(pgtest_url("qboost")); }
void test_store_sqlite_queues_no_boost_mixed(void) {
  queues_no_boost_mixed(q_sqlite("m"));
}
void test_store_pg_queues_no_boost_mixed(void) {
  queues_no_boost_mixed(pgtest_url("qmixed"));
}
void test_host_queues_concurrency(void) { queues_host(q_sqlite("h"), 0); }
void test_host_queues_concurrency_pool(void) { queues_host(q_sqlite("hp"), 1); }
void test_pg_queues_concurrency_threads(void) {
  queues_host(pgtest_url("qhost"), 0);
}
void test_pg_queues_concurrency_pool_threads(void) {
  queues_host(pgtest_url("qhostpool"), 1);
}
void test_host_queues_bad_opts(void) { queues_host_bad_opts(q_sqlite("x")); }

/* Restartable steps, on both backends. */
#define Q_UNDO_STEPS(file)                                                   \
  "DROP TABLE pawl_instances; DROP TABLE pawl_job_exits; DROP TABLE "        \
  "pawl_steps; DELETE FROM pawl_schema WHERE name = '" file "'; "

/* Dead-letter alerts, on both backends. */
#define Q_UNDO_ALERTS_SQLITE(file)                                           \
  "DROP TABLE pawl_alert_windows; DROP TABLE pawl_alerts; DELETE FROM "      \
  "pawl_schema WHERE name = '" file "'; "
#define Q_UNDO_ALERTS_PG(file)                                               \
  "DROP TRIGGER pawl_alerts_dead ON pawl_jobs; DROP FUNCTION "               \
  "pawl_alerts_dead(); DROP TABLE pawl_alert_windows; DROP TABLE "           \
  "pawl_alerts; DELETE FROM pawl_schema WHERE name = '" file "'; "

/* The migrator applies what comes after the highest version applied, so a
 * database from before the queues migration has none of the later ones
 * either: these take them back out first (newest first). */
#define Q_UNDO_LATER_SQLITE                                                  \
  SQLITE_UNDO_V020                                                           \
  SQLITE_UNDO_V019                                                           \
  SQLITE_UNDO_V018                                                           \
  "ALTER TABLE pawl_recurring DROP COLUMN load_error; DELETE FROM "          \
  "pawl_schema WHERE name = 'V017__cron_load_error.sql'; "                   \
  "ALTER TABLE pawl_jobs DROP COLUMN depth; DELETE FROM pawl_schema WHERE "  \
  "name = 'V016__fanout.sql'; "                                              \
  "DROP TABLE pawl_jobs_archive; DROP TABLE pawl_attempts_archive; DROP "    \
  "TABLE pawl_events_archive; DROP TABLE pawl_logs_archive; DELETE FROM "    \
  "pawl_schema WHERE name = 'V015__retention.sql'; "                         \
  Q_UNDO_ALERTS_SQLITE("V014__alerts.sql")                                   \
  "DROP TABLE pawl_types; DELETE FROM pawl_schema WHERE name = "             \
  "'V013__types.sql'; "                                                      \
  Q_UNDO_STEPS("V012__steps.sql")                                            \
  "DROP TABLE pawl_deps; ALTER TABLE pawl_jobs DROP COLUMN deps_left; "      \
  "ALTER TABLE pawl_jobs DROP COLUMN deps_unmet; ALTER TABLE pawl_jobs "     \
  "DROP COLUMN deps_open; ALTER TABLE pawl_jobs DROP COLUMN branches; "      \
  "DELETE FROM pawl_schema WHERE name = 'V011__deps.sql'; "                  \
  "DROP TRIGGER pawl_batches_fire; DROP INDEX pawl_jobs_batch; ALTER TABLE " \
  "pawl_jobs DROP COLUMN batch_id; DROP TABLE pawl_batch_callbacks; DROP "   \
  "TABLE pawl_batches; DELETE FROM pawl_schema WHERE name = "                \
  "'V010__batch.sql'; "                                                      \
  "DROP TABLE pawl_replacements; DROP TABLE pawl_signals; DELETE FROM "      \
  "pawl_schema WHERE name = 'V009__signal.sql'; "                           \
  "DROP TABLE pawl_limits; ALTER TABLE pawl_jobs DROP COLUMN resource; "     \
  "DELETE FROM pawl_schema WHERE name = 'V008__limits.sql'; "                \
  "DROP INDEX pawl_jobs_ordering; ALTER TABLE pawl_jobs DROP COLUMN "        \
  "ordering_key; ALTER TABLE pawl_jobs DROP COLUMN ordering_skip; DELETE "   \
  "FROM pawl_schema WHERE name = 'V007__ordering.sql'; "
#define Q_UNDO_LATER_PG                                                      \
  PG_UNDO_V020                                                               \
  PG_UNDO_V019                                                               \
  PG_UNDO_V018                                                               \
  PG_UNDO_V017                                                               \
  "ALTER TABLE pawl_recurring DROP COLUMN load_error; DELETE FROM "          \
  "pawl_schema WHERE name = 'V016__cron_load_error.sql'; "                   \
  "ALTER TABLE pawl_jobs DROP COLUMN depth; DELETE FROM pawl_schema WHERE "  \
  "name = 'V015__fanout.sql'; "                                              \
  "DROP TABLE pawl_jobs_archive; DROP TABLE pawl_attempts_archive; DROP "    \
  "TABLE pawl_events_archive; DROP TABLE pawl_logs_archive; DELETE FROM "    \
  "pawl_schema WHERE name = 'V014__retention.sql'; "                         \
  Q_UNDO_ALERTS_PG("V013__alerts.sql")                                       \
  "DROP TABLE pawl_types; DELETE FROM pawl_schema WHERE name = "             \
  "'V012__types.sql'; "                                                      \
  Q_UNDO_STEPS("V011__steps.sql")                                            \
  "DROP FUNCTION pawl_deps_reopen(uuid); DROP FUNCTION pawl_deps_link("     \
  "uuid, uuid[], text[], bigint); DROP FUNCTION pawl_deps_release(uuid[], "  \
  "bigint); DROP FUNCTION pawl_deps_settle(uuid[], timestamptz); DROP "      \
  "FUNCTION pawl_deps_why(uuid); DROP FUNCTION pawl_deps_met(text, "         \
  "smallint, jsonb); DROP TABLE pawl_deps; ALTER TABLE pawl_jobs DROP "      \
  "COLUMN deps_left, DROP COLUMN deps_unmet, DROP COLUMN deps_open, DROP "   \
  "COLUMN branches; DELETE FROM pawl_schema WHERE name = "                   \
  "'V010__deps.sql'; "                                                       \
  "DROP TABLE pawl_batch_callbacks; DROP TABLE pawl_batches; DROP "          \
  "FUNCTION pawl_batch_fire(); ALTER TABLE pawl_jobs DROP COLUMN batch_id; " \
  "DELETE FROM pawl_schema WHERE name = 'V009__batch.sql'; "                 \
  "DROP TABLE pawl_replacements; DROP TABLE pawl_signals; DELETE FROM "      \
  "pawl_schema WHERE name = 'V008__signal.sql'; "                           \
  "DROP TABLE pawl_limits; ALTER TABLE pawl_jobs DROP COLUMN resource; "     \
  "DELETE FROM pawl_schema WHERE name = 'V007__limits.sql'; "                \
  "DROP FUNCTION pawl_ordering_free(text, bigint, timestamptz); ALTER "      \
  "TABLE pawl_jobs DROP COLUMN ordering_key CASCADE, DROP COLUMN "           \
  "ordering_seq CASCADE, DROP COLUMN ordering_skip; DROP SEQUENCE "          \
  "pawl_ordering_seq; DELETE FROM pawl_schema WHERE name = "                 \
  "'V006__ordering.sql'; "

void test_store_sqlite_queues_migration(void) {
  const char *url = q_sqlite("mig");
  pawl_t *p = q_open(url, "node-a", 0); /* creates it */
  pawl_close(p);
  sqlite3 *db = NULL;
  char path[4200];
  snprintf(path, sizeof path, "%s/mig.db", unit_tmpdir());
  CHECK_INT(sqlite3_open(path, &db), ==, SQLITE_OK);
  sqlite3_busy_timeout(db, 5000);
  queues_migration(url, db, q_sqlite_exec, q_sqlite_int,
                   Q_UNDO_LATER_SQLITE
                   "DROP TABLE pawl_queues; DELETE FROM pawl_schema WHERE "
                   "name = 'V006__queues.sql'");
  sqlite3_close(db);
}

void test_store_pg_queues_migration(void) {
  const char *url = pgtest_url("qmig");
  char copy[4200];
  snprintf(copy, sizeof copy, "%s", url);
  pawl_close(q_open(copy, "node-a", 0));
  PGconn *c = pgtest_connect(copy);
  queues_migration(copy, c, q_pg_exec, q_pg_int,
                   Q_UNDO_LATER_PG
                   "DROP FUNCTION pawl_queue_boost(text, bigint); DROP TABLE "
                   "pawl_queues; DELETE FROM pawl_schema WHERE name = "
                   "'V005__queues.sql'");
  PQfinish(c);
}

/* With a queue paused, SQLite's claims (SQLITE_SQL_CLAIM*_UNPAUSED) still
 * walk the pending rows' partial indexes in claim order (no sort, no table
 * scan), and so does next_due: the paused set is a small index probed per
 * row. */
static void q_plan(sqlite3 *db, const char *sql, char *out, size_t n) {
  char *q = sqlite3_mprintf("EXPLAIN QUERY PLAN %s", sql);
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(db, q, -1, &st, NULL) != SQLITE_OK)
    unit_fail(__FILE__, __LINE__, "prepare plan: %s", sqlite3_errmsg(db));
  sqlite3_free(q);
  out[0] = 0;
  while (sqlite3_step(st) == SQLITE_ROW) {
    size_t len = strlen(out);
    snprintf(out + len, n - len, "%s\n",
             (const char *)sqlite3_column_text(st, 3));
  }
  sqlite3_finalize(st);
}

void test_sqlite_queues_claim_plans(void) {
  pawl_t *p = q_open(q_sqlite("plan"), "node-a", 0);
  CHECK_OK(pawl_queue_pause(p, "q3", NULL, NULL));
  pawl_close(p);
  sqlite3 *db = NULL;
  char path[4200];
  snprintf(path, sizeof path, "%s/plan.db", unit_tmpdir());
  CHECK_INT(sqlite3_open(path, &db), ==, SQLITE_OK);
  q_sqlite_exec(db,
                "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM "
                "n WHERE i < 20000) INSERT INTO pawl_jobs (id, type, queue, "
                "state, priority, rank, payload, run_at, max_attempts, "
                "created_at, updated_at) SELECT randomblob(16), 't', 'q' || "
                "(i % 7), CASE WHEN i % 100 = 0 THEN 0 ELSE 2 END, 0, 0, "
                "'{}', i, 25, i, i FROM n");
  q_sqlite_exec(db, "ANALYZE");
  const char *sqls[] = {SQLITE_SQL_CLAIM_UNPAUSED, SQLITE_SQL_CLAIM_LANE,
                        SQLITE_SQL_NEXT_DUE, SQLITE_SQL_NEXT_DUE_QUEUE};
  char plan[4096];
  for (size_t i = 0; i < sizeof sqls / sizeof *sqls; i++) {
    q_plan(db, sqls[i], plan, sizeof plan);
    if ((!strstr(plan, "INDEX pawl_jobs_claim") &&
         !strstr(plan, "INDEX pawl_jobs_lane")) ||
        strstr(plan, "SCAN pawl_jobs\n") ||
        (i == 0 && strstr(plan, "TEMP B-TREE FOR ORDER BY")))
      unit_fail(__FILE__, __LINE__, "plan %zu:\n%s", i, plan);
  }
  sqlite3_close(db);
}
