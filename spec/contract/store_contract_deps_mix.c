/* store_contract_deps_mix.c: dependencies with the other flows
 * (signals, replace, batches), found when they were merged
 * together (docs/flows.md "Dependencies and chains", "With replace, batches and
 * signals"): a replaced parent's children follow the replacement, a
 * replaced child keeps waiting for its parents, a batch's child may wait
 * for parents (its cancel counts in the batch), and a job may not wait for
 * both parents and a signal. On every backend (store_contract_deps_mix.h). */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "pawl.h"
#include "store_contract_deps_mix.h"
#include "unit.h"
#include "unit_pawl.h"

#define T0 INT64_C(1800000000000)

static _Atomic int64_t mix_now = T0;

static pawl_t *open_db(const char *url) {
  atomic_store(&mix_now, T0);
  return unit_open_clocked(url, "node-a", &mix_now, 10000);
}

static pawl_id_t enq(pawl_t *p, const char *type, const pawl_id_t *after,
                     size_t n) {
  pawl_enqueue_opts_t o;
  pawl_enqueue_opts_init(&o);
  o.after = after;
  o.nafter = n;
  o.max_attempts = 1;
  o.queue = type; /* run_one() claims it alone */
  pawl_id_t id;
  if (pawl_enqueue(p, type, "{}", &o, &id, NULL))
    unit_fail(__FILE__, __LINE__, "enqueue: %s", pawl_errmsg(p));
  return id;
}

static int state_of(pawl_t *p, const pawl_id_t *id) {
  pawl_job_t *j;
  if (pawl_get(p, id, &j))
    unit_fail(__FILE__, __LINE__, "get: %s", pawl_errmsg(p));
  int s = j->state;
  pawl_job_free(j);
  return s;
}

static int same(const pawl_id_t *a, const pawl_id_t *b) {
  return memcmp(a->bytes, b->bytes, 16) == 0;
}

/* Claims exactly the job `want` (of queue `queue`: enq() names a job's
 * queue after its type) and finishes it with `kind`. */
static void run_one(pawl_t *p, const char *queue, const pawl_id_t *want,
                    pawl_outcome_kind_t kind) {
  pawl_job_t **jobs = NULL;
  size_t n = 0;
  pawl_claim_opts_t co;
  memset(&co, 0, sizeof co);
  co.queues = &queue;
  co.nqueues = 1;
  if (pawl_claim(p, &co, 100, &jobs, &n))
    unit_fail(__FILE__, __LINE__, "claim: %s", pawl_errmsg(p));
  CHECK_INT(n, ==, 1);
  CHECK(same(&jobs[0]->id, want));
  pawl_outcome_t o = {.id = jobs[0]->id,
                      .attempt = jobs[0]->attempt,
                      .kind = kind,
                      .store_key = jobs[0]->store_key};
  if (kind != PAWL_OUT_SUCCEEDED) o.error = "boom";
  int rc = -1;
  if (pawl_finish(p, &o, 1, &rc))
    unit_fail(__FILE__, __LINE__, "finish: %s", pawl_errmsg(p));
  CHECK_INT(rc, ==, 0);
  pawl_jobs_free(jobs, n);
}

/* Counts the jobs through pawl_list. */
static int count_cb(const pawl_job_t *j, void *data) {
  (void)j;
  (*(size_t *)data)++;
  return 0;
}

static size_t njobs(pawl_t *p) {
  size_t n = 0;
  if (pawl_list(p, NULL, count_cb, &n))
    unit_fail(__FILE__, __LINE__, "list: %s", pawl_errmsg(p));
  return n;
}

/* The edges of job `id` (pawl_deps_list): parents and children. */
struct edges {
  size_t nparents, nchildren;
  pawl_id_t parent, child;
};

static int edge_cb(const pawl_dep_t *d, void *data) {
  struct edges *e = data;
  if (d->parent) {
    e->parent = d->id;
    e->nparents++;
  } else {
    e->child = d->id;
    e->nchildren++;
  }
  return 0;
}

static struct edges edges_of(pawl_t *p, const pawl_id_t *id) {
  struct edges e;
  memset(&e, 0, sizeof e);
  if (pawl_deps_list(p, id, edge_cb, &e))
    unit_fail(__FILE__, __LINE__, "deps_list: %s", pawl_errmsg(p));
  return e;
}

/* A live parent replaced: its children follow the replacement. The old
 * parent's cancel does not cancel them; they wait for the replacement's
 * end, and run when it succeeds (or are canceled when it fails). */
void contract_deps_replace_parent(const char *url) {
  pawl_t *p = open_db(url);
  pawl_id_t a = enq(p, "a", NULL, 0);
  pawl_id_t b = enq(p, "b", &a, 1);
  pawl_id_t a2;
  CHECK_OK(pawl_replace(p, &a, NULL, &a2));
  CHECK_INT(state_of(p, &a), ==, PAWL_CANCELED);
  CHECK_INT(state_of(p, &b), ==, PAWL_BLOCKED); /* not canceled with a */
  struct edges e = edges_of(p, &b);
  CHECK_INT(e.nparents, ==, 1);
  CHECK(same(&e.parent, &a2));
  e = edges_of(p, &a2);
  CHECK_INT(e.nchildren, ==, 1);
  CHECK(same(&e.child, &b));
  run_one(p, "a", &a2, PAWL_OUT_SUCCEEDED);
  CHECK_INT(state_of(p, &b), ==, PAWL_PENDING);
  run_one(p, "b", &b, PAWL_OUT_SUCCEEDED);

  /* The replacement's failure cancels them, as the old job's would have. */
  pawl_id_t c = enq(p, "c", NULL, 0);
  pawl_id_t d = enq(p, "d", &c, 1);
  pawl_id_t c2;
  CHECK_OK(pawl_replace(p, &c, NULL, &c2));
  CHECK_INT(state_of(p, &d), ==, PAWL_BLOCKED);
  run_one(p, "c", &c2, PAWL_OUT_FAILED);
  CHECK_INT(state_of(p, &d), ==, PAWL_CANCELED);

  /* A failed (terminal) parent replaced: its children counted its end
   * already; they stay as they are and do not count the replacement. */
  pawl_id_t f = enq(p, "f", NULL, 0);
  pawl_id_t g = enq(p, "g", &f, 1);
  run_one(p, "f", &f, PAWL_OUT_FAILED);
  CHECK_INT(state_of(p, &g), ==, PAWL_CANCELED);
  pawl_id_t f2;
  CHECK_OK(pawl_replace(p, &f, NULL, &f2));
  e = edges_of(p, &f2);
  CHECK_INT(e.nchildren, ==, 0);
  run_one(p, "f", &f2, PAWL_OUT_SUCCEEDED);
  CHECK_INT(state_of(p, &g), ==, PAWL_CANCELED);
  pawl_close(p);
}

/* A child waiting for its parents replaced: the replacement waits for the
 * same parents (before, it was enqueued blocked with no edge and waited
 * for ever), and runs when they end. */
void contract_deps_replace_child(const char *url) {
  pawl_t *p = open_db(url);
  pawl_id_t a = enq(p, "a", NULL, 0);
  pawl_id_t x = enq(p, "x", NULL, 0);
  pawl_id_t ax[2] = {a, x};
  pawl_id_t b = enq(p, "b", ax, 2);
  run_one(p, "a", &a, PAWL_OUT_SUCCEEDED); /* one of its two parents ended */
  CHECK_INT(state_of(p, &b), ==, PAWL_BLOCKED);
  pawl_replace_opts_t r;
  pawl_replace_opts_init(&r);
  r.payload = "{\"fixed\":true}";
  pawl_id_t b2;
  CHECK_OK(pawl_replace(p, &b, &r, &b2));
  CHECK_INT(state_of(p, &b), ==, PAWL_CANCELED);
  CHECK_INT(state_of(p, &b2), ==, PAWL_BLOCKED);
  struct edges e = edges_of(p, &b2);
  CHECK_INT(e.nparents, ==, 2);
  run_one(p, "x", &x, PAWL_OUT_SUCCEEDED);
  CHECK_INT(state_of(p, &b2), ==, PAWL_PENDING);
  run_one(p, "b", &b2, PAWL_OUT_SUCCEEDED);
  pawl_close(p);
}

/* A batch's child with `after`: blocked until its parent ends, then it
 * runs and counts like any child; canceled because its parent failed, it
 * counts as canceled and the batch completes (on_complete fires). */
void contract_deps_batch_child(const char *url) {
  pawl_t *p = open_db(url);
  pawl_id_t a = enq(p, "a", NULL, 0);
  pawl_enqueue_opts_t wait;
  pawl_enqueue_opts_init(&wait);
  wait.after = &a;
  wait.nafter = 1;
  wait.queue = "kids";
  pawl_enqueue_opts_t free_opts;
  pawl_enqueue_opts_init(&free_opts);
  free_opts.queue = "kids";
  pawl_enqueue_item_t kids[2] = {{"k", "{}", &wait}, {"k", "{}", &free_opts}};
  pawl_enqueue_opts_t cbo;
  pawl_enqueue_opts_init(&cbo);
  cbo.queue = "cb";
  pawl_enqueue_item_t done = {"report", "{}", &cbo};
  pawl_batch_opts_t bo;
  pawl_batch_opts_init(&bo);
  bo.on_complete = &done;
  pawl_id_t bid, ids[2];
  CHECK_OK(pawl_batch_enqueue(p, kids, 2, &bo, &bid, ids));
  CHECK_INT(state_of(p, &ids[0]), ==, PAWL_BLOCKED);
  CHECK_INT(state_of(p, &ids[1]), ==, PAWL_PENDING);
  struct edges e = edges_of(p, &ids[0]);
  CHECK_INT(e.nparents, ==, 1);
  CHECK(same(&e.parent, &a));
  run_one(p, "a", &a, PAWL_OUT_FAILED);
  CHECK_INT(state_of(p, &ids[0]), ==, PAWL_CANCELED);
  pawl_batch_t b;
  CHECK_OK(pawl_batch_get(p, &bid, &b));
  CHECK_INT(b.canceled, ==, 1);
  CHECK_INT(b.finished_at, ==, 0);
  run_one(p, "kids", &ids[1], PAWL_OUT_SUCCEEDED);
  CHECK_OK(pawl_batch_get(p, &bid, &b));
  CHECK_INT(b.succeeded, ==, 1);
  CHECK_INT(b.canceled, ==, 1);
  CHECK(b.finished_at != 0);
  CHECK(b.callbacks[PAWL_BATCH_ON_COMPLETE - 1].fired_at != 0);

  /* Its parent succeeds: it runs and its success completes the batch. */
  pawl_id_t c = enq(p, "c", NULL, 0);
  wait.after = &c;
  CHECK_OK(pawl_batch_enqueue(p, kids, 1, &bo, &bid, ids));
  CHECK_INT(state_of(p, &ids[0]), ==, PAWL_BLOCKED);
  run_one(p, "c", &c, PAWL_OUT_SUCCEEDED);
  CHECK_INT(state_of(p, &ids[0]), ==, PAWL_PENDING);
  run_one(p, "kids", &ids[0], PAWL_OUT_SUCCEEDED);
  CHECK_OK(pawl_batch_get(p, &bid, &b));
  CHECK_INT(b.succeeded, ==, 1);
  CHECK(b.finished_at != 0);

  /* A parent that ended already (failed): the child is canceled at the
   * batch's enqueue, and counted. */
  pawl_id_t f = enq(p, "f", NULL, 0);
  run_one(p, "f", &f, PAWL_OUT_FAILED);
  wait.after = &f;
  CHECK_OK(pawl_batch_enqueue(p, kids, 1, &bo, &bid, ids));
  CHECK_INT(state_of(p, &ids[0]), ==, PAWL_CANCELED);
  CHECK_OK(pawl_batch_get(p, &bid, &b));
  CHECK_INT(b.canceled, ==, 1);
  CHECK(b.finished_at != 0);

  /* A callback may not wait for parents: what fires is a new job made
   * from the kept fields. */
  cbo.after = &a;
  cbo.nafter = 1;
  size_t before = njobs(p);
  CHECK_INT(pawl_batch_enqueue(p, kids + 1, 1, &bo, &bid, ids), ==,
            PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "on_complete: a callback may not have after"));
  CHECK_INT(njobs(p), ==, before);
  pawl_close(p);
}

/* A job may not wait both for parents and for a signal (either would take
 * it out of `blocked` while the other still holds it): refused, nothing
 * enqueued; also a chain's step. */
void contract_deps_signal_refused(const char *url) {
  pawl_t *p = open_db(url);
  pawl_id_t a = enq(p, "a", NULL, 0);
  pawl_enqueue_opts_t o;
  pawl_enqueue_opts_init(&o);
  o.after = &a;
  o.nafter = 1;
  o.signal = "approve-1";
  size_t before = njobs(p);
  CHECK_INT(pawl_enqueue(p, "b", "{}", &o, NULL, NULL), ==, PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "may not wait both for parents (after) and "
                               "for a signal (\"approve-1\")"));
  pawl_enqueue_opts_t s;
  pawl_enqueue_opts_init(&s);
  s.signal = "approve-2";
  pawl_enqueue_item_t steps[2] = {{"x", "{}", NULL}, {"y", "{}", &s}};
  CHECK_INT(pawl_chain(p, steps, 2, NULL, NULL), ==, PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "step 2: a job may not wait both for parents "
                               "(a chain)"));
  CHECK_INT(njobs(p), ==, before);
  /* A signal alone, and the first step of a chain, still may. */
  pawl_enqueue_item_t first[2] = {{"x", "{}", &s}, {"y", "{}", NULL}};
  CHECK_OK(pawl_chain(p, first, 2, NULL, NULL));
  CHECK_INT(njobs(p), ==, before + 2);
  pawl_close(p);
}
