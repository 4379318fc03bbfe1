/* store_contract_admin.c: the admin contract suite (see
 * store_contract_admin.h), through the public API on a handle whose clock
 * is injected; the store's admin ops directly where a test must step in
 * between a bulk action's read and its write. */
#include <stdatomic.h>

#include "pawl.h"
#include "handle.h"
#include "store_contract_admin.h"
#include "unit.h"
#include "unit_pawl.h"

#define T0 INT64_C(1800000000000)
#define MIN INT64_C(60000)

static _Atomic int64_t admin_now = T0;

static void set_now(int64_t ms) { atomic_store(&admin_now, ms); }

static pawl_t *open_node(const char *url, const char *node) {
  return unit_open_clocked(url, node, &admin_now, 10000);
}

static pawl_t *open_db(const char *url) {
  set_now(T0);
  return open_node(url, "node-a");
}

static pawl_id_t enq_full(pawl_t *p, const char *type, const char *queue,
                          const char *tag, const char *bkey) {
  pawl_enqueue_opts_t o;
  pawl_enqueue_opts_init(&o);
  o.queue = queue;
  const char *tags[1] = {tag};
  if (tag) {
    o.tags = tags;
    o.ntags = 1;
  }
  o.business_key = bkey;
  pawl_id_t id;
  if (pawl_enqueue(p, type, "{}", &o, &id, NULL))
    unit_fail(__FILE__, __LINE__, "enqueue: %s", pawl_errmsg(p));
  return id;
}

static pawl_id_t enq(pawl_t *p, const char *type, const char *queue) {
  return enq_full(p, type, queue, NULL, NULL);
}

/* Claims every due job and finishes each with `kind`. */
static int finish_all(pawl_t *p, pawl_outcome_kind_t kind) {
  pawl_job_t **jobs = NULL;
  size_t n = 0;
  CHECK_OK(pawl_claim(p, NULL, 10000, &jobs, &n));
  for (size_t i = 0; i < n; i++) {
    pawl_outcome_t o = {.id = jobs[i]->id, .attempt = jobs[i]->attempt,
                        .kind = kind, .error = "boom",
                        .store_key = jobs[i]->store_key};
    int rc = 0;
    CHECK_OK(pawl_finish(p, &o, 1, &rc));
    CHECK_INT(rc, ==, 0);
  }
  pawl_jobs_free(jobs, n);
  return (int)n;
}

static pawl_job_t *get(pawl_t *p, const pawl_id_t *id) {
  pawl_job_t *j = NULL;
  CHECK_OK(pawl_get(p, id, &j));
  return j;
}

static int state_of(pawl_t *p, const pawl_id_t *id) {
  pawl_job_t *j = get(p, id);
  int s = j->state;
  pawl_job_free(j);
  return s;
}

static int count_cb(const pawl_job_t *j, void *data) {
  (void)j;
  (*(int *)data)++;
  return 0;
}

static int count_state(pawl_t *p, int state) {
  pawl_filter_t f;
  pawl_filter_init(&f);
  f.state = state;
  f.limit = 100000;
  int n = 0;
  CHECK_OK(pawl_list(p, &f, count_cb, &n));
  return n;
}

static pawl_filter_t filter(int state) {
  pawl_filter_t f;
  pawl_filter_init(&f);
  f.state = state;
  return f;
}

/* ---- bulk actions ------------------------------------------------------- */

void contract_admin_bulk_retry(const char *url) {
  pawl_t *p = open_db(url);
  pawl_id_t a[5];
  for (int i = 0; i < 5; i++) a[i] = enq(p, "a", "q1");
  enq(p, "b", "q1");
  enq(p, "b", "q2");
  CHECK_INT(finish_all(p, PAWL_OUT_FAILED), ==, 7);
  pawl_id_t pend = enq(p, "a", "q1");
  pawl_filter_t f = filter(-1);
  f.type = "a";
  int64_t n = -1;
  CHECK_OK(pawl_bulk_count(p, PAWL_ACTION_RETRY, &f, &n));
  CHECK_INT(n, ==, 5); /* the pending "a" is not something retry moves */
  set_now(T0 + 1000);
  pawl_bulk_result_t r = {9, 9, 9};
  CHECK_OK(pawl_bulk(p, PAWL_ACTION_RETRY, &f, "upstream fixed", &r));
  CHECK_INT(r.changed, ==, 5);
  CHECK_INT(r.skipped, ==, 0);
  CHECK_INT(r.refused, ==, 0);
  for (int i = 0; i < 5; i++) {
    pawl_job_t *j = get(p, &a[i]);
    CHECK_INT(j->state, ==, PAWL_PENDING);
    CHECK_INT(j->attempt, ==, 0);
    CHECK(j->last_error == NULL);
    CHECK_INT(j->run_at, ==, T0 + 1000);
    pawl_job_free(j);
    /* Recorded like a single retry: who, why, from and to. */
    pawl_history_t *h = NULL;
    CHECK_OK(pawl_history(p, &a[i], &h));
    pawl_event_t *e = &h->events[h->nevents - 1];
    CHECK_INT(e->from_state, ==, PAWL_FAILED);
    CHECK_INT(e->to_state, ==, PAWL_PENDING);
    CHECK_STR(e->actor, "tester");
    CHECK_STR(e->reason, "upstream fixed");
    CHECK_INT(e->at, ==, T0 + 1000);
    pawl_history_free(h);
  }
  CHECK_INT(state_of(p, &pend), ==, PAWL_PENDING);
  CHECK_INT(count_state(p, PAWL_FAILED), ==, 2);
  /* Again: nothing left to move. */
  CHECK_OK(pawl_bulk_count(p, PAWL_ACTION_RETRY, &f, &n));
  CHECK_INT(n, ==, 0);
  CHECK_OK(pawl_bulk(p, PAWL_ACTION_RETRY, &f, NULL, &r));
  CHECK_INT(r.changed, ==, 0);
  /* Queue and state filters; the state must be one retry moves from. */
  f = filter(PAWL_FAILED);
  f.queue = "q2";
  CHECK_OK(pawl_bulk(p, PAWL_ACTION_RETRY, &f, NULL, &r));
  CHECK_INT(r.changed, ==, 1);
  CHECK_INT(count_state(p, PAWL_FAILED), ==, 1);
  pawl_close(p);
}

void contract_admin_bulk_filters(const char *url) {
  pawl_t *p = open_db(url);
  /* Created at T0: two tagged "vip", one not. */
  pawl_id_t v1 = enq_full(p, "t", "q", "vip", NULL);
  pawl_id_t v2 = enq_full(p, "t", "q", "vip", NULL);
  pawl_id_t plain = enq(p, "t", "q");
  /* Created at T0 + 10 min: one more, and two that fail at T0 + 12 min. */
  set_now(T0 + 10 * MIN);
  pawl_id_t late = enq(p, "t", "q");
  pawl_t *other = open_node(url, "node-b");
  pawl_id_t f1 = enq(other, "f", "fq");
  pawl_id_t f2 = enq(other, "f", "fq");
  set_now(T0 + 12 * MIN);
  pawl_job_t **jobs = NULL;
  size_t n = 0;
  pawl_claim_opts_t co = {0};
  const char *qs[1] = {"fq"};
  co.queues = qs;
  co.nqueues = 1;
  CHECK_OK(pawl_claim(other, &co, 10, &jobs, &n));
  CHECK_INT(n, ==, 2);
  for (size_t i = 0; i < n; i++) {
    pawl_outcome_t o = {.id = jobs[i]->id, .attempt = jobs[i]->attempt,
                        .kind = PAWL_OUT_FAILED, .error = "x"};
    CHECK_OK(pawl_finish(other, &o, 1, NULL));
  }
  pawl_jobs_free(jobs, n);
  pawl_close(other);
  set_now(T0 + 20 * MIN);

  /* tag: only the tagged jobs. */
  pawl_filter_t f = filter(-1);
  f.tag = "vip";
  pawl_bulk_result_t r;
  CHECK_OK(pawl_bulk(p, PAWL_ACTION_PAUSE, &f, NULL, &r));
  CHECK_INT(r.changed, ==, 2);
  CHECK_INT(state_of(p, &v1), ==, PAWL_PAUSED);
  CHECK_INT(state_of(p, &v2), ==, PAWL_PAUSED);
  CHECK_INT(state_of(p, &plain), ==, PAWL_PENDING);
  /* A tag nobody has. */
  f.tag = "vi";
  int64_t cnt = -1;
  CHECK_OK(pawl_bulk_count(p, PAWL_ACTION_RESUME, &f, &cnt));
  CHECK_INT(cnt, ==, 0);

  /* older_than: created (pending) or finished (failed) longer ago. At
   * T0 + 20 min, 15 min matches the jobs created at T0 only; the failed
   * ones finished 8 minutes ago, the late one was created 10 ago. */
  f = filter(-1);
  f.older_than_ms = 15 * MIN;
  CHECK_OK(pawl_bulk_count(p, PAWL_ACTION_CANCEL, &f, &cnt));
  CHECK_INT(cnt, ==, 3); /* v1, v2 (paused), plain */
  f.older_than_ms = 9 * MIN;
  CHECK_OK(pawl_bulk_count(p, PAWL_ACTION_PAUSE, &f, &cnt));
  CHECK_INT(cnt, ==, 2); /* plain, late; not f1, f2 (finished 8 min ago) */
  f.older_than_ms = 7 * MIN;
  f.state = PAWL_FAILED;
  CHECK_OK(pawl_bulk_count(p, PAWL_ACTION_RETRY, &f, &cnt));
  CHECK_INT(cnt, ==, 2);
  f.older_than_ms = 9 * MIN;
  CHECK_OK(pawl_bulk_count(p, PAWL_ACTION_RETRY, &f, &cnt));
  CHECK_INT(cnt, ==, 0);

  /* limit: at most that many, oldest first. */
  f = filter(PAWL_PENDING);
  f.limit = 1;
  CHECK_OK(pawl_bulk_count(p, PAWL_ACTION_CANCEL, &f, &cnt));
  CHECK_INT(cnt, ==, 1);
  CHECK_OK(pawl_bulk(p, PAWL_ACTION_CANCEL, &f, "cleanup", &r));
  CHECK_INT(r.changed, ==, 1);
  CHECK_INT(state_of(p, &plain), ==, PAWL_CANCELED);
  CHECK_INT(state_of(p, &late), ==, PAWL_PENDING);
  /* type and queue together. */
  f = filter(-1);
  f.type = "f";
  f.queue = "q";
  CHECK_OK(pawl_bulk_count(p, PAWL_ACTION_RETRY, &f, &cnt));
  CHECK_INT(cnt, ==, 0);
  f.queue = "fq";
  CHECK_OK(pawl_bulk(p, PAWL_ACTION_RETRY, &f, NULL, &r));
  CHECK_INT(r.changed, ==, 2);
  CHECK_INT(state_of(p, &f1), ==, PAWL_PENDING);
  CHECK_INT(state_of(p, &f2), ==, PAWL_PENDING);
  pawl_close(p);
}

void contract_admin_bulk_bad_input(const char *url) {
  pawl_t *p = open_db(url);
  enq(p, "t", "q");
  int64_t n = 0;
  pawl_bulk_result_t r;
  pawl_filter_t f = filter(PAWL_PENDING);
  CHECK_INT(pawl_bulk_count(p, PAWL_ACTION_RETRY, &f, &n), ==, PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "retry moves failed jobs") != NULL);
  CHECK(strstr(pawl_errmsg(p), "pending") != NULL);
  CHECK_INT(pawl_bulk(p, PAWL_ACTION_RESUME, &f, NULL, &r), ==, PAWL_EINVAL);
  f = filter(-1);
  f.older_than_ms = PAWL_DELAY_MAX_MS + 1;
  CHECK_INT(pawl_bulk(p, PAWL_ACTION_CANCEL, &f, NULL, &r), ==, PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "older_than") != NULL);
  f.older_than_ms = -1;
  CHECK_INT(pawl_bulk_count(p, PAWL_ACTION_CANCEL, &f, &n), ==, PAWL_EINVAL);
  f = filter(-1);
  f.limit = -1;
  CHECK_INT(pawl_bulk(p, PAWL_ACTION_CANCEL, &f, NULL, &r), ==, PAWL_EINVAL);
  f = filter(-1);
  f.tag = "";
  CHECK_INT(pawl_bulk(p, PAWL_ACTION_CANCEL, &f, NULL, &r), ==, PAWL_EINVAL);
  f = filter(9);
  CHECK_INT(pawl_bulk(p, PAWL_ACTION_CANCEL, &f, NULL, &r), ==, PAWL_EINVAL);
  f = filter(-1);
  CHECK_INT(pawl_bulk(p, (pawl_action_t)7, &f, NULL, &r), ==, PAWL_EINVAL);
  CHECK_INT(pawl_bulk(p, PAWL_ACTION_CANCEL, NULL, NULL, &r), ==, PAWL_EINVAL);
  /* Refused input changed nothing. */
  CHECK_INT(count_state(p, PAWL_PENDING), ==, 1);
  CHECK_STR(pawl_action_name(PAWL_ACTION_RESUME), "resume");
  CHECK_STR(pawl_action_name(4), "?");
  pawl_close(p);
}

/* A job that changes between the read of its batch and its turn is left
 * as it is and counted as skipped: the compare-and-set on the version. */
void contract_admin_bulk_skips_changed(const char *url) {
  pawl_t *p = open_db(url);
  pawl_id_t ids[3];
  for (int i = 0; i < 3; i++) ids[i] = enq(p, "t", "q");
  CHECK_INT(finish_all(p, PAWL_OUT_FAILED), ==, 3);
  pawl_filter_t f = filter(PAWL_FAILED);
  store_match_t m = {.f = &f, .states = 1u << PAWL_FAILED, .cutoff = 0};
  store_pick_t picks[8];
  size_t n = 0;
  CHECK_OK(p->store->ops->admin.pick(p->store, &m, NULL, 8, picks, &n));
  CHECK_INT(n, ==, 3);
  /* Oldest first. */
  CHECK(memcmp(&picks[0].id, &ids[0], sizeof ids[0]) == 0);
  /* Someone else retries the second one, and it fails again: failed, as
   * picked, but not the failure the operator looked at. */
  pawl_job_t *j = NULL;
  CHECK_OK(pawl_retry(p, &ids[1], NULL, &j));
  pawl_job_free(j);
  CHECK_INT(finish_all(p, PAWL_OUT_FAILED), ==, 1);
  CHECK_INT(state_of(p, &ids[1]), ==, PAWL_FAILED);
  pawl_history_t *h = NULL;
  CHECK_OK(pawl_history(p, &ids[1], &h));
  size_t events = h->nevents;
  pawl_history_free(h);
  pawl_bulk_result_t r = {0, 0, 0};
  CHECK_OK(p->store->ops->admin.apply(p->store, STORE_OP_RETRY, "tester",
                                      NULL, picks, n, &r));
  CHECK_INT(r.changed, ==, 2);
  CHECK_INT(r.skipped, ==, 1);
  CHECK_INT(r.refused, ==, 0);
  CHECK_INT(state_of(p, &ids[0]), ==, PAWL_PENDING);
  CHECK_INT(state_of(p, &ids[1]), ==, PAWL_FAILED);
  CHECK_INT(state_of(p, &ids[2]), ==, PAWL_PENDING);
  CHECK_OK(pawl_history(p, &ids[1], &h));
  CHECK_INT(h->nevents, ==, events); /* nothing written for it */
  pawl_history_free(h);
  /* A picked job that is gone is skipped too (not an error). */
  store_pick_t ghost = picks[0];
  pawl_id_new(&ghost.id);
  memset(&r, 0, sizeof r);
  CHECK_OK(p->store->ops->admin.apply(p->store, STORE_OP_CANCEL, "tester",
                                      NULL, &ghost, 1, &r));
  CHECK_INT(r.skipped, ==, 1);
  pawl_close(p);
}

/* A retry the business key no longer allows is refused for that job
 * alone: its half-written history is undone, the batch goes on. */
void contract_admin_bulk_refused_key(const char *url) {
  pawl_t *p = open_db(url);
  pawl_id_t a = enq_full(p, "t", "q", NULL, "order-1");
  pawl_id_t b = enq(p, "t", "q");
  CHECK_INT(finish_all(p, PAWL_OUT_FAILED), ==, 2);
  /* A new live job holds the key now. */
  pawl_id_t holder = enq_full(p, "t", "q", NULL, "order-1");
  pawl_history_t *h = NULL;
  CHECK_OK(pawl_history(p, &a, &h));
  size_t events = h->nevents;
  pawl_history_free(h);
  pawl_filter_t f = filter(PAWL_FAILED);
  pawl_bulk_result_t r;
  CHECK_OK(pawl_bulk(p, PAWL_ACTION_RETRY, &f, NULL, &r));
  CHECK_INT(r.changed, ==, 1);
  CHECK_INT(r.refused, ==, 1);
  CHECK_INT(r.skipped, ==, 0);
  CHECK_INT(state_of(p, &a), ==, PAWL_FAILED);
  CHECK_INT(state_of(p, &b), ==, PAWL_PENDING);
  CHECK_INT(state_of(p, &holder), ==, PAWL_PENDING);
  CHECK_OK(pawl_history(p, &a, &h));
  CHECK_INT(h->nevents, ==, events);
  pawl_history_free(h);
  pawl_close(p);
}

/* More jobs than one batch holds: every one is moved, once. */
void contract_admin_bulk_batches(const char *url) {
  pawl_t *p = open_db(url);
  enum { N = 1234 };
  pawl_enqueue_item_t *items = calloc(N, sizeof *items);
  CHECK(items != NULL);
  for (int i = 0; i < N; i++) items[i].type = i % 2 ? "odd" : "even";
  CHECK_OK(pawl_enqueue_many(p, items, N, NULL, NULL));
  free(items);
  pawl_filter_t f = filter(-1);
  int64_t n = 0;
  CHECK_OK(pawl_bulk_count(p, PAWL_ACTION_PAUSE, &f, &n));
  CHECK_INT(n, ==, N);
  pawl_bulk_result_t r;
  CHECK_OK(pawl_bulk(p, PAWL_ACTION_PAUSE, &f, NULL, &r));
  CHECK_INT(r.changed, ==, N);
  CHECK_INT(count_state(p, PAWL_PAUSED), ==, N);
  f.limit = 700;
  CHECK_OK(pawl_bulk(p, PAWL_ACTION_RESUME, &f, NULL, &r));
  CHECK_INT(r.changed, ==, 700);
  CHECK_INT(count_state(p, PAWL_PAUSED), ==, N - 700);
  CHECK_INT(count_state(p, PAWL_PENDING), ==, 700);
  f.limit = 0;
  f.type = "odd";
  CHECK_OK(pawl_bulk_count(p, PAWL_ACTION_CANCEL, &f, &n));
  CHECK_INT(n, ==, N / 2);
  CHECK_OK(pawl_bulk(p, PAWL_ACTION_CANCEL, &f, NULL, &r));
  CHECK_INT(r.changed, ==, N / 2);
  CHECK_INT(count_state(p, PAWL_CANCELED), ==, N / 2);
  pawl_close(p);
}

/* Canceling running jobs in bulk ends their attempts, as a single cancel
 * does; the node's late outcome is then refused as stale. */
void contract_admin_bulk_cancel_running(const char *url) {
  pawl_t *p = open_db(url);
  pawl_id_t id = enq(p, "t", "q");
  pawl_job_t **jobs = NULL;
  size_t n = 0;
  CHECK_OK(pawl_claim(p, NULL, 1, &jobs, &n));
  CHECK_INT(n, ==, 1);
  pawl_filter_t f = filter(PAWL_RUNNING);
  pawl_bulk_result_t r;
  CHECK_OK(pawl_bulk(p, PAWL_ACTION_CANCEL, &f, "stuck", &r));
  CHECK_INT(r.changed, ==, 1);
  CHECK_INT(state_of(p, &id), ==, PAWL_CANCELED);
  pawl_history_t *h = NULL;
  CHECK_OK(pawl_history(p, &id, &h));
  CHECK_INT(h->nattempts, ==, 1);
  CHECK_STR(h->attempts[0].outcome, "canceled");
  pawl_history_free(h);
  pawl_outcome_t o = {.id = jobs[0]->id, .attempt = jobs[0]->attempt,
                      .kind = PAWL_OUT_SUCCEEDED};
  int rc = 0;
  CHECK_OK(pawl_finish(p, &o, 1, &rc));
  CHECK_INT(rc, ==, PAWL_ELEASE);
  pawl_jobs_free(jobs, n);
  pawl_close(p);
}

/* ---- listing ------------------------------------------------------------ */

void contract_admin_list_filters(const char *url) {
  pawl_t *p = open_db(url);
  enq_full(p, "t", "q", "vip", NULL);
  enq(p, "t", "q");
  set_now(T0 + 10 * MIN);
  enq_full(p, "t", "q", "vip", NULL);
  set_now(T0 + 20 * MIN);
  pawl_filter_t f = filter(-1);
  f.tag = "vip";
  int n = 0;
  CHECK_OK(pawl_list(p, &f, count_cb, &n));
  CHECK_INT(n, ==, 2);
  f.older_than_ms = 15 * MIN;
  n = 0;
  CHECK_OK(pawl_list(p, &f, count_cb, &n));
  CHECK_INT(n, ==, 1);
  f.tag = NULL;
  n = 0;
  CHECK_OK(pawl_list(p, &f, count_cb, &n));
  CHECK_INT(n, ==, 2);
  f.state = PAWL_RUNNING;
  n = 0;
  CHECK_OK(pawl_list(p, &f, count_cb, &n));
  CHECK_INT(n, ==, 0);
  f = filter(-1);
  f.older_than_ms = PAWL_DELAY_MAX_MS + 1;
  CHECK_INT(pawl_list(p, &f, count_cb, &n), ==, PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "older_than") != NULL);
  pawl_close(p);
}

/* ---- statistics --------------------------------------------------------- */

static const pawl_queue_stats_t *queue_of(const pawl_stats_t *s,
                                          const char *name) {
  for (size_t i = 0; i < s->nqueues; i++)
    if (strcmp(s->queues[i].queue, name) == 0) return &s->queues[i];
  unit_fail(__FILE__, __LINE__, "no queue %s in the statistics", name);
}

void contract_admin_stats(const char *url) {
  pawl_t *p = open_db(url);
  pawl_stats_t *s = NULL;
  CHECK_OK(pawl_stats(p, &s));
  CHECK_INT(s->nqueues, ==, 0);
  CHECK_INT(s->at, ==, T0);
  pawl_stats_free(s);
  /* mail: 3 succeed at T0, 2 fail at T0 + 10 min, 1 succeeds at T0 + 14
   * min; one is running, one paused, two pending (one due since T0 + 10
   * min, one due in the future). */
  for (int i = 0; i < 3; i++) enq(p, "m", "mail");
  CHECK_INT(finish_all(p, PAWL_OUT_SUCCEEDED), ==, 3);
  set_now(T0 + 10 * MIN);
  for (int i = 0; i < 2; i++) enq(p, "m", "mail");
  CHECK_INT(finish_all(p, PAWL_OUT_FAILED), ==, 2);
  set_now(T0 + 14 * MIN);
  enq(p, "m", "mail");
  CHECK_INT(finish_all(p, PAWL_OUT_SUCCEEDED), ==, 1);
  enq(p, "m", "mail");
  pawl_job_t **jobs = NULL;
  size_t n = 0;
  CHECK_OK(pawl_claim(p, NULL, 1, &jobs, &n));
  CHECK_INT(n, ==, 1);
  pawl_jobs_free(jobs, n);
  pawl_id_t pz = enq(p, "m", "mail");
  pawl_job_t *j = NULL;
  CHECK_OK(pawl_pause(p, &pz, NULL, &j));
  pawl_job_free(j);
  set_now(T0 + 10 * MIN);
  enq(p, "m", "mail"); /* due since T0 + 10 min */
  pawl_enqueue_opts_t o;
  pawl_enqueue_opts_init(&o);
  o.queue = "mail";
  o.delay_ms = 60 * MIN;
  CHECK_OK(pawl_enqueue(p, "m", "{}", &o, NULL, NULL));
  /* other: one blocked, one canceled at T0 + 10 min. */
  o.queue = "other";
  o.delay_ms = 0;
  o.blocked = 1;
  CHECK_OK(pawl_enqueue(p, "o", "{}", &o, NULL, NULL));
  pawl_id_t c = enq(p, "o", "other");
  CHECK_OK(pawl_cancel(p, &c, NULL, &j));
  pawl_job_free(j);

  set_now(T0 + 15 * MIN);
  CHECK_OK(pawl_stats(p, &s));
  CHECK_INT(s->at, ==, T0 + 15 * MIN);
  CHECK_INT(s->nqueues, ==, 2);
  CHECK_STR(s->queues[0].queue, "mail");
  CHECK_STR(s->queues[1].queue, "other");
  const pawl_queue_stats_t *m = queue_of(s, "mail");
  CHECK_INT(m->count[PAWL_PENDING], ==, 2);
  CHECK_INT(m->count[PAWL_RUNNING], ==, 1);
  CHECK_INT(m->count[PAWL_SUCCEEDED], ==, 4);
  CHECK_INT(m->count[PAWL_FAILED], ==, 2);
  CHECK_INT(m->count[PAWL_PAUSED], ==, 1);
  CHECK_INT(m->count[PAWL_CANCELED], ==, 0);
  /* Finished within 15 min (since T0 exactly): all 6; 5 min (since T0 +
   * 10): the failed two and the one at 14; 1 min: that one. */
  CHECK_INT(m->finished_15m, ==, 6);
  CHECK_INT(m->finished_5m, ==, 3);
  CHECK_INT(m->finished_1m, ==, 1);
  CHECK_INT(m->failed_15m, ==, 2);
  CHECK_INT(m->failed_5m, ==, 2);
  CHECK_INT(m->failed_1m, ==, 0);
  CHECK_INT(m->oldest_due_ms, ==, 5 * MIN);
  const pawl_queue_stats_t *ot = queue_of(s, "other");
  CHECK_INT(ot->count[PAWL_BLOCKED], ==, 1);
  CHECK_INT(ot->count[PAWL_CANCELED], ==, 1);
  CHECK_INT(ot->finished_15m, ==, 1);
  CHECK_INT(ot->finished_5m, ==, 1);
  CHECK_INT(ot->finished_1m, ==, 0);
  CHECK_INT(ot->oldest_due_ms, ==, 0);
  CHECK_INT(s->all.count[PAWL_SUCCEEDED], ==, 4);
  CHECK_INT(s->all.count[PAWL_CANCELED], ==, 1);
  CHECK_INT(s->all.finished_15m, ==, 7);
  CHECK_INT(s->all.oldest_due_ms, ==, 5 * MIN);
  pawl_stats_free(s);
  /* An hour later, nothing finished recently. */
  set_now(T0 + 75 * MIN);
  CHECK_OK(pawl_stats(p, &s));
  CHECK_INT(s->all.finished_15m, ==, 0);
  CHECK_INT(s->all.count[PAWL_SUCCEEDED], ==, 4);
  CHECK_INT(queue_of(s, "mail")->oldest_due_ms, ==, 65 * MIN);
  pawl_stats_free(s);
  pawl_close(p);
}

/* Throughput per queue at the clock's reading: finished (and of those,
 * failed) in the last 1, 5 and 15 minutes. A queue missing from the
 * statistics has none. */
static void want_tp(pawl_t *p, const char *queue, int64_t f1, int64_t f5,
                    int64_t f15, int64_t x1, int64_t x5, int64_t x15,
                    int line) {
  pawl_stats_t *s = NULL;
  CHECK_OK(pawl_stats(p, &s));
  const pawl_queue_stats_t *q = NULL;
  for (size_t i = 0; i < s->nqueues; i++)
    if (strcmp(s->queues[i].queue, queue) == 0) q = &s->queues[i];
  pawl_queue_stats_t none = {0};
  if (!q) q = &none;
  if (q->finished_1m != f1 || q->finished_5m != f5 ||
      q->finished_15m != f15 || q->failed_1m != x1 || q->failed_5m != x5 ||
      q->failed_15m != x15)
    unit_fail(__FILE__, line,
              "throughput of %s at T0%+.2f min: finished %lld/%lld/%lld, "
              "failed %lld/%lld/%lld; wanted %lld/%lld/%lld, %lld/%lld/%lld",
              queue, (double)(s->at - T0) / (double)MIN,
              (long long)q->finished_1m, (long long)q->finished_5m,
              (long long)q->finished_15m, (long long)q->failed_1m,
              (long long)q->failed_5m, (long long)q->failed_15m,
              (long long)f1, (long long)f5, (long long)f15, (long long)x1,
              (long long)x5, (long long)x15);
  pawl_stats_free(s);
}
#define WANT_TP(p, q, f1, f5, f15, x1, x5, x15) \
  want_tp(p, q, f1, f5, f15, x1, x5, x15, __LINE__)

/* Throughput counts finishes in minute buckets of the handle's clock: a
 * batch's successes and failures by queue, recovery into failed, a single
 * and a bulk cancel; a window of N minutes holds the buckets from minute
 * now - N on (the last N minutes and up to one more); a finish stays
 * counted when the job is retried later (it happened). */
void contract_admin_throughput(const char *url) {
  pawl_t *p = open_db(url);
  /* Minute 0 (T0 + 10 s): one batch, 2 successes and a failure in a, a
   * success in b. */
  set_now(T0 + 10000);
  for (int i = 0; i < 3; i++) enq(p, "t", "a");
  enq(p, "t", "b");
  pawl_job_t **jobs = NULL;
  size_t n = 0;
  CHECK_OK(pawl_claim(p, NULL, 10, &jobs, &n));
  CHECK_INT(n, ==, 4);
  pawl_outcome_t outs[4];
  int rcs[4], in_a = 0;
  pawl_id_t failed_a;
  for (size_t i = 0; i < n; i++) {
    int fail = strcmp(jobs[i]->queue, "a") == 0 && in_a++ == 2;
    if (fail) failed_a = jobs[i]->id;
    outs[i] = (pawl_outcome_t){.id = jobs[i]->id,
                               .attempt = jobs[i]->attempt,
                               .kind = fail ? PAWL_OUT_FAILED
                                            : PAWL_OUT_SUCCEEDED,
                               .error = "boom",
                               .store_key = jobs[i]->store_key};
  }
  CHECK_OK(pawl_finish(p, outs, n, rcs));
  for (size_t i = 0; i < n; i++) CHECK_INT(rcs[i], ==, 0);
  pawl_jobs_free(jobs, n);
  WANT_TP(p, "a", 3, 3, 3, 1, 1, 1);
  WANT_TP(p, "b", 1, 1, 1, 0, 0, 0);
  /* Minute 1 (T0 + 70 s): a success in a. The 1 minute window reaches
   * back to the start of minute 0. */
  set_now(T0 + 70000);
  enq(p, "t", "a");
  CHECK_INT(finish_all(p, PAWL_OUT_SUCCEEDED), ==, 1);
  WANT_TP(p, "a", 4, 4, 4, 1, 1, 1);
  set_now(T0 + 2 * MIN);
  WANT_TP(p, "a", 1, 4, 4, 0, 1, 1);
  /* Minute 4: a job of b canceled. */
  set_now(T0 + 4 * MIN + 30000);
  pawl_id_t c = enq(p, "t", "b");
  pawl_job_t *j = NULL;
  CHECK_OK(pawl_cancel(p, &c, NULL, &j));
  pawl_job_free(j);
  set_now(T0 + 6 * MIN);
  WANT_TP(p, "a", 0, 1, 4, 0, 0, 1);
  WANT_TP(p, "b", 0, 1, 2, 0, 0, 0);
  /* Minute 9: a job of a on its last attempt, lost (its lease expires)
   * and failed by recovery. */
  set_now(T0 + 9 * MIN);
  pawl_enqueue_opts_t o;
  pawl_enqueue_opts_init(&o);
  o.queue = "a";
  o.max_attempts = 1;
  CHECK_OK(pawl_enqueue(p, "t", "{}", &o, NULL, NULL));
  CHECK_OK(pawl_claim(p, NULL, 10, &jobs, &n));
  CHECK_INT(n, ==, 1);
  pawl_jobs_free(jobs, n);
  set_now(T0 + 9 * MIN + 20000);
  size_t rec = 0;
  CHECK_OK(pawl_recover(p, &rec));
  CHECK_INT(rec, ==, 1);
  /* Minute 12: two jobs of b canceled in bulk. */
  set_now(T0 + 12 * MIN);
  enq(p, "t", "b");
  enq(p, "t", "b");
  pawl_filter_t f = filter(PAWL_PENDING);
  f.queue = "b";
  pawl_bulk_result_t r = {0, 0, 0};
  CHECK_OK(pawl_bulk(p, PAWL_ACTION_CANCEL, &f, NULL, &r));
  CHECK_INT(r.changed, ==, 2);
  set_now(T0 + 13 * MIN);
  WANT_TP(p, "a", 0, 1, 5, 0, 1, 2);
  WANT_TP(p, "b", 2, 2, 4, 0, 0, 0);
  /* The failure of minute 0 retried: it still happened at minute 0. */
  CHECK_OK(pawl_retry(p, &failed_a, NULL, &j));
  pawl_job_free(j);
  WANT_TP(p, "a", 0, 1, 5, 0, 1, 2);
  pawl_stats_t *s = NULL;
  CHECK_OK(pawl_stats(p, &s));
  CHECK_INT(queue_of(s, "a")->count[PAWL_FAILED], ==, 1);
  CHECK_INT(queue_of(s, "a")->count[PAWL_PENDING], ==, 1);
  CHECK_INT(queue_of(s, "a")->count[PAWL_SUCCEEDED], ==, 3);
  CHECK_INT(queue_of(s, "b")->count[PAWL_CANCELED], ==, 3);
  CHECK_INT(s->all.finished_15m, ==, 9);
  CHECK_INT(s->all.failed_15m, ==, 2);
  pawl_stats_free(s);
  /* Minute 16: minute 0 has left the 15 minute window. */
  set_now(T0 + 16 * MIN);
  WANT_TP(p, "a", 0, 0, 2, 0, 0, 1);
  WANT_TP(p, "b", 0, 2, 3, 0, 0, 0);
  /* Half an hour later nothing is recent; a finish then (which trims the
   * old buckets) counts alone. */
  set_now(T0 + 60 * MIN);
  WANT_TP(p, "a", 0, 0, 0, 0, 0, 0);
  CHECK_INT(finish_all(p, PAWL_OUT_SUCCEEDED), ==, 1);
  WANT_TP(p, "a", 1, 1, 1, 0, 0, 0);
  WANT_TP(p, "b", 0, 0, 0, 0, 0, 0);
  pawl_close(p);
}

void contract_admin_nodes(const char *url) {
  pawl_t *p = open_db(url);
  pawl_node_info_t *nodes = NULL;
  size_t n = 9;
  CHECK_OK(pawl_nodes(p, &nodes, &n));
  CHECK_INT(n, ==, 0);
  CHECK(nodes == NULL);
  store_t *st = p->store;
  pawl_id_t inc;
  pawl_id_new(&inc);
  store_node_t a = {.id = "node-a", .incarnation = &inc, .queues = "",
                    .started_at = T0};
  store_node_t b = {.id = "node-b", .incarnation = &inc, .queues = "mail,sms",
                    .version = "0.0.9", .started_at = T0};
  CHECK_OK(st->ops->nodes.beat(st, &a));
  set_now(T0 + 500);
  CHECK_OK(st->ops->nodes.beat(st, &b));
  for (int i = 0; i < 3; i++) enq(p, "t", "q");
  pawl_job_t **jobs = NULL;
  size_t got = 0;
  CHECK_OK(pawl_claim(p, NULL, 2, &jobs, &got)); /* node-a's handle */
  CHECK_INT(got, ==, 2);
  pawl_jobs_free(jobs, got);
  CHECK_OK(pawl_nodes(p, &nodes, &n));
  CHECK_INT(n, ==, 2);
  CHECK_STR(nodes[0].id, "node-a");
  CHECK_INT(nodes[0].running, ==, 2);
  CHECK_INT(nodes[0].last_beat, ==, T0);
  CHECK_STR(nodes[0].version, PAWL_VERSION);
  CHECK(memcmp(&nodes[0].incarnation, &inc, sizeof inc) == 0);
  CHECK_STR(nodes[1].id, "node-b");
  CHECK_STR(nodes[1].queues, "mail,sms");
  CHECK_STR(nodes[1].version, "0.0.9");
  CHECK_INT(nodes[1].running, ==, 0);
  CHECK_INT(nodes[1].last_beat, ==, T0 + 500);
  CHECK_INT(nodes[1].started_at, ==, T0);
  pawl_nodes_free(nodes, n);
  pawl_close(p);
}

void contract_admin_locks(const char *url) {
  pawl_t *p = open_db(url);
  pawl_lock_info_t *locks = NULL;
  size_t n = 9;
  CHECK_OK(pawl_locks(p, &locks, &n));
  CHECK_INT(n, ==, 0);
  int got = 0;
  CHECK_OK(pawl_lock_acquire(p, "sweep", "node-a", 1000, &got));
  CHECK_INT(got, ==, 1);
  set_now(T0 + 100);
  CHECK_OK(pawl_lock_acquire(p, "report", "job-1", 60000, &got));
  set_now(T0 + 5000);
  CHECK_OK(pawl_locks(p, &locks, &n));
  CHECK_INT(n, ==, 2);
  CHECK_STR(locks[0].name, "report");
  CHECK_STR(locks[0].owner, "job-1");
  CHECK_INT(locks[0].acquired_at, ==, T0 + 100);
  CHECK_INT(locks[0].expires_at, ==, T0 + 60100);
  CHECK_STR(locks[1].name, "sweep");
  CHECK_INT(locks[1].expires_at, ==, T0 + 1000); /* expired: still listed */
  pawl_locks_free(locks, n);
  pawl_close(p);
}
