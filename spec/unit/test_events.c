/* test_events.c: the event callback (pawl_host_opts_t.event_fn): every
 * transition, in order, on the documented thread: the stepping thread in
 * step mode (an enqueue from another thread shows at the next step), the
 * completer thread under pawl_start(). Outcomes and orders only: nothing
 * depends on the machine's speed (the threaded test waits on a condition
 * variable with a generous bound). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "pawl.h"
#include "unit.h"

#define EV_MAX 256

typedef struct ev_log {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int n;
  char lines[EV_MAX][96];
  pawl_id_t ids[EV_MAX];
  int kinds[EV_MAX];
  pthread_t threads[EV_MAX];
  int terminal;        /* SUCCEEDED and DEAD events seen */
  pawl_t *check;       /* step mode: read the job back from the callback */
  int stored_ok;       /* each SUCCEEDED found stored as succeeded */
} ev_log_t;

static void ev_record(void *data, const pawl_job_event_t *ev) {
  ev_log_t *l = data;
  pthread_mutex_lock(&l->mu);
  if (l->n < EV_MAX) {
    snprintf(l->lines[l->n], sizeof l->lines[0], "%s %s %d%s%s",
             pawl_event_name(ev->kind), ev->type, (int)ev->attempt,
             ev->error ? " " : "", ev->error ? ev->error : "");
    l->lines[l->n][strcspn(l->lines[l->n], "\n")] = 0;
    l->ids[l->n] = ev->id;
    l->kinds[l->n] = ev->kind;
    l->threads[l->n] = pthread_self();
    l->n++;
  }
  if (ev->kind == PAWL_EV_SUCCEEDED || ev->kind == PAWL_EV_DEAD) l->terminal++;
  pthread_cond_broadcast(&l->cv);
  pthread_mutex_unlock(&l->mu);
  if (l->check && ev->kind == PAWL_EV_SUCCEEDED) {
    /* Step mode: the callback may use the handle; the outcome is stored. */
    pawl_job_t *j = NULL;
    CHECK_OK(pawl_get(l->check, &ev->id, &j));
    if (j->state == PAWL_SUCCEEDED) l->stored_ok++;
    pawl_job_free(j);
  }
}

static pawl_t *ev_open(const char *db) {
  pawl_options_t o;
  pawl_options_init(&o);
  o.db = db;
  o.node_id = "node-events";
  o.lease_ms = 3600000;
  pawl_t *p = NULL;
  char err[512];
  if (pawl_open(&p, &o, err, sizeof err))
    unit_fail(__FILE__, __LINE__, "open: %s", err);
  CHECK_OK(pawl_define(p, "ok", "return { run = function() return 1 end }"));
  CHECK_OK(pawl_define(p, "flaky",
                       "return { max_attempts = 2,\n"
                       "  retry = function() return 0 end,\n"
                       "  run = function() error('boom', 0) end }"));
  CHECK_OK(pawl_define(p, "parent",
                       "return { run = function() "
                       "pawl.enqueue('ok', {}) return true end }"));
  return p;
}

static void ev_opts(pawl_host_opts_t *o, ev_log_t *l) {
  pawl_host_opts_init(o);
  o->log_level = PAWL_LOG_ERROR;
  o->event_fn = ev_record;
  o->event_data = l;
}

static void ev_init(ev_log_t *l) {
  memset(l, 0, sizeof *l);
  pthread_mutex_init(&l->mu, NULL);
  pthread_cond_init(&l->cv, NULL);
}

typedef struct {
  pawl_t *p;
} ev_other_t;

static void *ev_enqueue_other(void *arg) {
  ev_other_t *o = arg;
  CHECK_OK(pawl_enqueue(o->p, "ok", NULL, NULL, NULL, NULL));
  return NULL;
}

void test_events_step_order(void) {
  pawl_t *p = ev_open("sqlite:events.db");
  ev_log_t l;
  ev_init(&l);
  l.check = p;
  pawl_host_opts_t o;
  ev_opts(&o, &l);
  CHECK_OK(pawl_step_start(p, &o));
  CHECK_OK(pawl_enqueue(p, "ok", NULL, NULL, NULL, NULL));
  CHECK_OK(pawl_enqueue(p, "flaky", NULL, NULL, NULL, NULL));
  CHECK_INT(l.n, ==, 0); /* delivered from within pawl_step only */
  CHECK_INT(pawl_step(p, 1000), ==, 2);
  /* The second attempt of flaky, due at once. */
  CHECK_INT(pawl_step(p, 1000), ==, 1);
  /* An enqueue on another thread (through a sibling: the stepping handle
   * refuses other threads): reported at the next step, on this thread; a
   * job's own enqueue (pawl.enqueue, through the handle). */
  ev_other_t other = {NULL};
  CHECK_OK(pawl_sibling(p, &other.p));
  pthread_t t;
  CHECK_INT(pthread_create(&t, NULL, ev_enqueue_other, &other), ==, 0);
  CHECK_INT(pthread_join(t, NULL), ==, 0);
  pawl_close(other.p);
  CHECK_OK(pawl_enqueue(p, "parent", NULL, NULL, NULL, NULL));
  int ran = 0;
  for (int i = 0; i < 10 && ran < 3; i++) ran += pawl_step(p, 1000);
  CHECK_INT(ran, ==, 3);
  const char *want[] = {
      "enqueued ok 0",      "enqueued flaky 0",   "started ok 1",
      "started flaky 1",    "succeeded ok 1",     "failed flaky 1 boom",
      "retried flaky 1 boom", "started flaky 2",  "failed flaky 2 boom",
      "dead flaky 2 boom",  "enqueued ok 0",      "enqueued parent 0",
      "started ok 1",       "started parent 1",
      /* parent's own enqueue, claimed in the same step */
      "enqueued ok 0",      "started ok 1",       "succeeded ok 1",
      "succeeded parent 1", "succeeded ok 1"};
  size_t nwant = sizeof want / sizeof want[0];
  CHECK_INT(l.n, ==, (int)nwant);
  for (size_t i = 0; i < nwant; i++) {
    CHECK_STR(l.lines[i], want[i]);
    CHECK(pthread_equal(l.threads[i], pthread_self()));
  }
  CHECK_INT(l.stored_ok, ==, 4);
  pawl_close(p);
}

/* Under pawl_start(): every event on one thread (the completer), not the
 * program's; for each job ENQUEUED, then STARTED, then its outcome's. */
void test_events_threads_order(void) {
  pawl_t *p = ev_open("sqlite:events_t.db");
  ev_log_t l;
  ev_init(&l);
  pawl_host_opts_t o;
  ev_opts(&o, &l);
  o.workers = 3;
  o.poll_ms = 20;
  CHECK_OK(pawl_start(p, &o));
  enum { N = 30 };
  pawl_id_t ids[N + 1];
  for (int i = 0; i < N; i++)
    CHECK_OK(pawl_enqueue(p, "ok", NULL, NULL, &ids[i], NULL));
  CHECK_OK(pawl_enqueue(p, "flaky", NULL, NULL, &ids[N], NULL));
  pthread_mutex_lock(&l.mu);
  struct timespec dl;
  clock_gettime(CLOCK_REALTIME, &dl);
  dl.tv_sec += 120;
  while (l.terminal < N + 1)
    if (pthread_cond_timedwait(&l.cv, &l.mu, &dl) != 0) break;
  int terminal = l.terminal;
  pthread_mutex_unlock(&l.mu);
  CHECK_INT(terminal, ==, N + 1);
  pawl_stop(p, PAWL_STOP_GRACEFUL);
  CHECK_OK(pawl_wait(p, -1));
  /* flaky: enqueued, 2 starts, 2 fails, a retry, dead */
  CHECK_INT(l.n, ==, 3 * N + 7);
  for (int i = 0; i < l.n; i++) {
    CHECK(!pthread_equal(l.threads[i], pthread_self()));
    CHECK(pthread_equal(l.threads[i], l.threads[0]));
  }
  for (int j = 0; j <= N; j++) {
    int seen[6] = {-1, -1, -1, -1, -1, -1};
    int last = -1;
    for (int i = 0; i < l.n; i++) {
      if (memcmp(&l.ids[i], &ids[j], sizeof ids[j]) != 0) continue;
      CHECK_INT(i, >, last);
      last = i;
      if (seen[l.kinds[i]] < 0) seen[l.kinds[i]] = i;
    }
    CHECK_INT(seen[PAWL_EV_ENQUEUED], >=, 0);
    CHECK_INT(seen[PAWL_EV_STARTED], >, seen[PAWL_EV_ENQUEUED]);
    int end = j < N ? PAWL_EV_SUCCEEDED : PAWL_EV_DEAD;
    CHECK_INT(seen[end], >, seen[PAWL_EV_STARTED]);
  }
  pawl_close(p);
}
