/* store_contract_batch.c: the batches contract suite (see
 * store_contract_batch.h), through the public API on a handle whose clock
 * is injected: children counted as they end (and only then), callbacks
 * enqueued once, when the last one ends, with the right roles; metrics;
 * bad input refused with nothing enqueued. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "pawl.h"
#include "store_contract_batch.h"
#include "unit.h"
#include "unit_pawl.h"

#define T0 INT64_C(1800000000000)

static _Atomic int64_t b_now = T0;

static void advance(int64_t ms) { atomic_fetch_add(&b_now, ms); }

static pawl_t *open_db(const char *url, int64_t lease_ms) {
  atomic_store(&b_now, T0);
  return unit_open_clocked(url, "node-a", &b_now, lease_ms);
}

static int same(const pawl_id_t *a, const pawl_id_t *b) {
  return memcmp(a->bytes, b->bytes, 16) == 0;
}

/* A batch of n children of type "child" (payload {"i": i}) with the three
 * callbacks ("ok", "bad", "done"); ids[] receives the children's ids. */
static pawl_id_t make_batch(pawl_t *p, size_t n, pawl_id_t *ids,
                            const pawl_enqueue_opts_t *child_opts) {
  pawl_enqueue_item_t *items = calloc(n, sizeof *items);
  char (*payloads)[32] = calloc(n, sizeof *payloads);
  CHECK(items && payloads);
  for (size_t i = 0; i < n; i++) {
    snprintf(payloads[i], sizeof payloads[i], "{\"i\":%zu}", i);
    items[i] = (pawl_enqueue_item_t){"child", payloads[i], child_opts};
  }
  pawl_enqueue_opts_t cbo;
  pawl_enqueue_opts_init(&cbo);
  cbo.queue = "callbacks";
  cbo.priority = 5;
  pawl_enqueue_item_t ok = {"ok", "{\"note\":\"all good\"}", &cbo};
  pawl_enqueue_item_t bad = {"bad", NULL, NULL};
  pawl_enqueue_item_t done = {"done", NULL, NULL};
  pawl_batch_opts_t bo;
  pawl_batch_opts_init(&bo);
  bo.on_success = &ok;
  bo.on_failure = &bad;
  bo.on_complete = &done;
  pawl_id_t bid;
  if (pawl_batch_enqueue(p, items, n, &bo, &bid, ids))
    unit_fail(__FILE__, __LINE__, "batch: %s", pawl_errmsg(p));
  free(items);
  free(payloads);
  return bid;
}

static pawl_batch_t get_batch(pawl_t *p, const pawl_id_t *id) {
  pawl_batch_t b;
  if (pawl_batch_get(p, id, &b))
    unit_fail(__FILE__, __LINE__, "batch get: %s", pawl_errmsg(p));
  return b;
}

/* Claims everything due (at most 100) of `queue` (NULL: any). */
static size_t claim(pawl_t *p, const char *queue, pawl_job_t ***out) {
  pawl_claim_opts_t co = {0};
  const char *qs[1] = {queue};
  if (queue) {
    co.queues = qs;
    co.nqueues = 1;
  }
  pawl_job_t **jobs = NULL;
  size_t n = 0;
  if (pawl_claim(p, &co, 100, &jobs, &n))
    unit_fail(__FILE__, __LINE__, "claim: %s", pawl_errmsg(p));
  *out = jobs;
  return n;
}

static void finish(pawl_t *p, const pawl_job_t *j, pawl_outcome_kind_t kind,
                   int64_t run_at) {
  pawl_outcome_t o = {.id = j->id, .attempt = j->attempt, .kind = kind,
                      .run_at = run_at, .store_key = j->store_key};
  if (kind != PAWL_OUT_SUCCEEDED) o.error = "boom";
  int rcs[1] = {99};
  if (pawl_finish(p, &o, 1, rcs))
    unit_fail(__FILE__, __LINE__, "finish: %s", pawl_errmsg(p));
  CHECK_INT(rcs[0], ==, 0);
}

/* The callback of `role` has fired: its job exists, pending, with its
 * batch in params; or it has not: no job. */
static void check_fired(pawl_t *p, const pawl_batch_t *b, int role,
                        int fired) {
  const pawl_batch_callback_t *c = &b->callbacks[role - 1];
  CHECK(c->set);
  pawl_job_t *j = NULL;
  int rc = pawl_get(p, &c->id, &j);
  if (!fired) {
    CHECK_INT(rc, ==, PAWL_ENOTFOUND);
    CHECK_INT(c->fired_at, ==, 0);
    return;
  }
  CHECK_OK(rc);
  CHECK_INT(c->fired_at, >, 0);
  CHECK_INT(j->state, ==, PAWL_PENDING);
  char bid[PAWL_ID_STRLEN];
  pawl_id_format(&b->id, bid);
  CHECK(j->params && strstr(j->params, bid));
  CHECK(strstr(j->params, pawl_batch_role_name(role)) != NULL);
  pawl_id_t of;
  int r = -1;
  CHECK_OK(pawl_job_batch(p, &c->id, &of, &r));
  CHECK(same(&of, &b->id));
  CHECK_INT(r, ==, role);
  pawl_job_free(j);
}

/* Every child succeeds: on_success and on_complete fire once, when the
 * last one ends, on_failure never; the counters follow each end. */
void contract_batch_success(const char *url) {
  pawl_t *p = open_db(url, 10000);
  pawl_id_t ids[3];
  pawl_id_t bid = make_batch(p, 3, ids, NULL);
  pawl_batch_t b = get_batch(p, &bid);
  CHECK_INT(b.total, ==, 3);
  CHECK_INT(b.states[PAWL_PENDING], ==, 3);
  CHECK_INT(b.succeeded + b.failed + b.canceled, ==, 0);
  CHECK_INT(b.created_at, ==, T0);
  CHECK_INT(b.finished_at, ==, 0);
  pawl_id_t of;
  int role = -1;
  CHECK_OK(pawl_job_batch(p, &ids[1], &of, &role));
  CHECK(same(&of, &bid));
  CHECK_INT(role, ==, PAWL_BATCH_CHILD);
  /* The callbacks are not jobs before they fire. */
  check_fired(p, &b, PAWL_BATCH_ON_SUCCESS, 0);

  pawl_job_t **jobs;
  CHECK_INT(claim(p, "default", &jobs), ==, 3);
  finish(p, jobs[0], PAWL_OUT_SUCCEEDED, 0);
  finish(p, jobs[1], PAWL_OUT_SUCCEEDED, 0);
  b = get_batch(p, &bid);
  CHECK_INT(b.succeeded, ==, 2);
  CHECK_INT(b.states[PAWL_RUNNING], ==, 1);
  CHECK_INT(b.finished_at, ==, 0);
  check_fired(p, &b, PAWL_BATCH_ON_COMPLETE, 0);
  advance(50);
  finish(p, jobs[2], PAWL_OUT_SUCCEEDED, 0);
  pawl_jobs_free(jobs, 3);
  b = get_batch(p, &bid);
  CHECK_INT(b.succeeded, ==, 3);
  CHECK_INT(b.finished_at, ==, T0 + 50);
  check_fired(p, &b, PAWL_BATCH_ON_SUCCESS, 1);
  check_fired(p, &b, PAWL_BATCH_ON_FAILURE, 0);
  check_fired(p, &b, PAWL_BATCH_ON_COMPLETE, 1);
  /* The callback kept its options. */
  pawl_job_t *cb;
  CHECK_OK(pawl_get(p, &b.callbacks[0].id, &cb));
  CHECK_STR(cb->type, "ok");
  CHECK_STR(cb->queue, "callbacks");
  CHECK_INT(cb->priority, ==, 5);
  CHECK(strstr(cb->payload, "all good") != NULL);
  CHECK(strstr(cb->params, "\"succeeded\":3") ||
        strstr(cb->params, "\"succeeded\": 3"));
  pawl_job_free(cb);
  /* The two callbacks are the only jobs left to claim. */
  CHECK_INT(claim(p, NULL, &jobs), ==, 2);
  pawl_jobs_free(jobs, 2);
  CHECK_INT(claim(p, NULL, &jobs), ==, 0);
  pawl_close(p);
}

/* A retried child has not ended; one that fails for good has: on_failure
 * and on_complete fire. A manual retry of the failed child afterwards
 * takes it off the counters, and its success then fires nothing again. */
void contract_batch_failure(const char *url) {
  pawl_t *p = open_db(url, 10000);
  pawl_enqueue_opts_t co;
  pawl_enqueue_opts_init(&co);
  co.max_attempts = 2;
  pawl_id_t ids[2];
  pawl_id_t bid = make_batch(p, 2, ids, &co);
  pawl_job_t **jobs;
  CHECK_INT(claim(p, "default", &jobs), ==, 2);
  finish(p, jobs[0], PAWL_OUT_SUCCEEDED, 0);
  finish(p, jobs[1], PAWL_OUT_RETRY, T0 + 10);
  pawl_id_t failing = jobs[1]->id;
  pawl_jobs_free(jobs, 2);
  pawl_batch_t b = get_batch(p, &bid);
  CHECK_INT(b.succeeded, ==, 1);
  CHECK_INT(b.failed, ==, 0);
  CHECK_INT(b.states[PAWL_PENDING], ==, 1);
  CHECK_INT(b.finished_at, ==, 0);
  advance(10);
  CHECK_INT(claim(p, "default", &jobs), ==, 1);
  finish(p, jobs[0], PAWL_OUT_FAILED, 0);
  pawl_jobs_free(jobs, 1);
  b = get_batch(p, &bid);
  CHECK_INT(b.succeeded, ==, 1);
  CHECK_INT(b.failed, ==, 1);
  CHECK_INT(b.finished_at, ==, T0 + 10);
  check_fired(p, &b, PAWL_BATCH_ON_SUCCESS, 0);
  check_fired(p, &b, PAWL_BATCH_ON_FAILURE, 1);
  check_fired(p, &b, PAWL_BATCH_ON_COMPLETE, 1);

  /* An operator retries the dead child: it has not ended any more. */
  CHECK_OK(pawl_retry(p, &failing, "try again", NULL));
  b = get_batch(p, &bid);
  CHECK_INT(b.failed, ==, 0);
  CHECK_INT(b.finished_at, ==, T0 + 10); /* fired once, stays so */
  /* Due now: the retried child and the two callbacks that fired ("bad"
   * and "done", in the default queue), each once. */
  CHECK_INT(claim(p, "default", &jobs), ==, 3);
  int children = 0;
  for (size_t i = 0; i < 3; i++)
    if (strcmp(jobs[i]->type, "child") == 0) {
      children++;
      finish(p, jobs[i], PAWL_OUT_SUCCEEDED, 0);
    }
  CHECK_INT(children, ==, 1);
  pawl_jobs_free(jobs, 3);
  b = get_batch(p, &bid);
  CHECK_INT(b.succeeded, ==, 2);
  /* No second firing: on_success did not fire now, nothing new is due. */
  check_fired(p, &b, PAWL_BATCH_ON_SUCCESS, 0);
  CHECK_INT(claim(p, NULL, &jobs), ==, 0);
  pawl_close(p);
}

/* Canceled children count as canceled (pending, running, paused); a child
 * whose lease expired on its last attempt is failed by recovery and
 * counts. Canceled without failures: only on_complete fires. */
void contract_batch_cancel_recover(const char *url) {
  pawl_t *p = open_db(url, 1000);
  pawl_enqueue_opts_t co;
  pawl_enqueue_opts_init(&co);
  co.max_attempts = 1;
  pawl_id_t ids[4];
  pawl_id_t bid = make_batch(p, 4, ids, &co);
  CHECK_OK(pawl_cancel(p, &ids[0], "not needed", NULL));
  CHECK_OK(pawl_cancel(p, &ids[0], "again", NULL)); /* a no-op: counted once */
  CHECK_OK(pawl_pause(p, &ids[1], "hold", NULL));
  CHECK_OK(pawl_cancel(p, &ids[1], "not needed", NULL));
  pawl_batch_t b = get_batch(p, &bid);
  CHECK_INT(b.canceled, ==, 2);
  pawl_job_t **jobs;
  CHECK_INT(claim(p, "default", &jobs), ==, 2);
  CHECK_OK(pawl_cancel(p, &jobs[0]->id, "stop it", NULL)); /* running */
  pawl_jobs_free(jobs, 2);
  b = get_batch(p, &bid);
  CHECK_INT(b.canceled, ==, 3);
  CHECK_INT(b.finished_at, ==, 0);
  /* The other one's node dies: its lease runs out, its last attempt. */
  advance(2000);
  size_t n = 0;
  CHECK_OK(pawl_recover(p, &n));
  CHECK_INT(n, ==, 1);
  b = get_batch(p, &bid);
  CHECK_INT(b.canceled, ==, 3);
  CHECK_INT(b.failed, ==, 1);
  CHECK_INT(b.finished_at, ==, T0 + 2000);
  check_fired(p, &b, PAWL_BATCH_ON_FAILURE, 1);
  check_fired(p, &b, PAWL_BATCH_ON_COMPLETE, 1);
  check_fired(p, &b, PAWL_BATCH_ON_SUCCESS, 0);
  pawl_close(p);

  /* Canceled only: on_complete alone. */
  p = open_db(url, 1000);
  pawl_id_t one[1];
  bid = make_batch(p, 1, one, NULL);
  CHECK_OK(pawl_cancel(p, &one[0], NULL, NULL));
  b = get_batch(p, &bid);
  check_fired(p, &b, PAWL_BATCH_ON_SUCCESS, 0);
  check_fired(p, &b, PAWL_BATCH_ON_FAILURE, 0);
  check_fired(p, &b, PAWL_BATCH_ON_COMPLETE, 1);
  pawl_close(p);
}

/* wall: enqueue to the last end; exec: every attempt's run time summed;
 * overhead: the ended children's lifetimes less their run times. */
void contract_batch_metrics(const char *url) {
  pawl_t *p = open_db(url, 100000);
  pawl_enqueue_opts_t co;
  pawl_enqueue_opts_init(&co);
  co.max_attempts = 3;
  pawl_id_t ids[2];
  pawl_id_t bid = make_batch(p, 2, ids, &co);
  advance(100); /* T0+100: both start */
  pawl_job_t **jobs;
  CHECK_INT(claim(p, "default", &jobs), ==, 2);
  advance(200); /* T0+300: the first succeeds (ran 200) */
  finish(p, jobs[0], PAWL_OUT_SUCCEEDED, 0);
  advance(100); /* T0+400: the second fails once (ran 300), retry at +500 */
  finish(p, jobs[1], PAWL_OUT_RETRY, T0 + 500);
  pawl_jobs_free(jobs, 2);
  pawl_batch_t b = get_batch(p, &bid);
  CHECK_INT(b.exec_ms, ==, 500);
  CHECK_INT(b.wall_ms, ==, 400); /* to now: not finished */
  CHECK_INT(b.overhead_ms, ==, 100); /* the first: 300 lived, 200 ran */
  advance(100);                      /* T0+500 */
  CHECK_INT(claim(p, "default", &jobs), ==, 1);
  advance(50); /* T0+550: succeeds (ran 50) */
  finish(p, jobs[0], PAWL_OUT_SUCCEEDED, 0);
  pawl_jobs_free(jobs, 1);
  advance(1000);
  b = get_batch(p, &bid);
  CHECK_INT(b.finished_at, ==, T0 + 550);
  CHECK_INT(b.wall_ms, ==, 550);
  CHECK_INT(b.exec_ms, ==, 550);
  /* lifetimes 300 + 550, run 200 + 300 + 50 */
  CHECK_INT(b.overhead_ms, ==, 300);
  pawl_close(p);
}

static int count_cb(const pawl_job_t *j, void *data) {
  (void)j;
  ++*(size_t *)data;
  return 0;
}

static size_t count_jobs(pawl_t *p) {
  size_t n = 0;
  pawl_filter_t f;
  pawl_filter_init(&f);
  f.limit = 1000;
  CHECK_OK(pawl_list(p, &f, count_cb, &n));
  return n;
}

/* Bad input is refused with a message naming it, and nothing is
 * enqueued: no batch, no child, no callback. */
void contract_batch_bad_input(const char *url) {
  pawl_t *p = open_db(url, 10000);
  pawl_enqueue_item_t items[2] = {{"a", "{}", NULL}, {"b", "{}", NULL}};
  pawl_id_t bid;
  CHECK_INT(pawl_batch_enqueue(p, items, 0, NULL, &bid, NULL), ==,
            PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "1..1000000") != NULL);
  CHECK_INT(pawl_batch_enqueue(p, items, (size_t)PAWL_BATCH_MAX + 1, NULL,
                               &bid, NULL),
            ==, PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "1000001") != NULL);
  /* A bad child, second: "job 2: ..." */
  pawl_enqueue_item_t bad_child[2] = {{"a", "{}", NULL}, {"b", "{nope", NULL}};
  CHECK_INT(pawl_batch_enqueue(p, bad_child, 2, NULL, &bid, NULL), ==,
            PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "job 2") != NULL);
  pawl_enqueue_opts_t keyed;
  pawl_enqueue_opts_init(&keyed);
  keyed.business_key = "k";
  pawl_enqueue_item_t keyed_child[2] = {{"a", "{}", NULL}, {"b", "{}", &keyed}};
  CHECK_INT(pawl_batch_enqueue(p, keyed_child, 2, NULL, &bid, NULL), ==,
            PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "business key") != NULL);
  /* Bad callbacks: an empty type, params, a delay. */
  pawl_batch_opts_t bo;
  pawl_batch_opts_init(&bo);
  pawl_enqueue_item_t empty = {"", "{}", NULL};
  bo.on_failure = &empty;
  CHECK_INT(pawl_batch_enqueue(p, items, 2, &bo, &bid, NULL), ==, PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "on_failure") != NULL);
  pawl_enqueue_opts_t po;
  pawl_enqueue_opts_init(&po);
  po.params = "{}";
  pawl_enqueue_item_t with_params = {"x", "{}", &po};
  pawl_batch_opts_init(&bo);
  bo.on_complete = &with_params;
  CHECK_INT(pawl_batch_enqueue(p, items, 2, &bo, &bid, NULL), ==, PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "on_complete") != NULL);
  pawl_enqueue_opts_init(&po);
  po.delay_ms = 5;
  pawl_enqueue_item_t delayed = {"x", "{}", &po};
  pawl_batch_opts_init(&bo);
  bo.on_success = &delayed;
  CHECK_INT(pawl_batch_enqueue(p, items, 2, &bo, &bid, NULL), ==, PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "delay") != NULL);
  CHECK_INT(count_jobs(p), ==, 0);
  /* Unknown batch, a job in none. */
  pawl_id_t nobody;
  pawl_id_new(&nobody);
  pawl_batch_t b;
  CHECK_INT(pawl_batch_get(p, &nobody, &b), ==, PAWL_ENOTFOUND);
  pawl_id_t plain;
  CHECK_OK(pawl_enqueue(p, "plain", "{}", NULL, &plain, NULL));
  CHECK_INT(pawl_job_batch(p, &plain, NULL, NULL), ==, PAWL_ENOTFOUND);
  pawl_close(p);
}


/* ---- batches with signals, replace and limits --------------------------- */

/* A replaced child hands its place in the batch to its replacement: the
 * old job leaves the batch (its cancel is not counted, and a dead child's
 * failure is taken back as a manual retry takes it back), the replacement
 * is the child that counts when it ends. */
void contract_batch_replace_child(const char *url) {
  pawl_t *p = open_db(url, 10000);
  pawl_id_t ids[2];
  pawl_id_t bid = make_batch(p, 2, ids, NULL);
  pawl_replace_opts_t r;
  pawl_replace_opts_init(&r);
  r.payload = "{\"i\":10}";
  pawl_id_t nid;
  CHECK_OK(pawl_replace(p, &ids[0], &r, &nid));
  pawl_batch_t b = get_batch(p, &bid);
  CHECK_INT(b.total, ==, 2);
  CHECK_INT(b.canceled, ==, 0); /* the old one is not counted */
  CHECK_INT(b.states[PAWL_PENDING], ==, 2);
  CHECK_INT(b.states[PAWL_CANCELED], ==, 0); /* it left the batch */
  pawl_id_t of;
  int role = -1;
  CHECK_OK(pawl_job_batch(p, &nid, &of, &role));
  CHECK(same(&of, &bid));
  CHECK_INT(role, ==, PAWL_BATCH_CHILD);
  CHECK_INT(pawl_job_batch(p, &ids[0], NULL, NULL), ==, PAWL_ENOTFOUND);
  pawl_job_t **jobs;
  CHECK_INT(claim(p, "default", &jobs), ==, 2);
  finish(p, jobs[0], PAWL_OUT_SUCCEEDED, 0);
  finish(p, jobs[1], PAWL_OUT_SUCCEEDED, 0);
  pawl_jobs_free(jobs, 2);
  b = get_batch(p, &bid);
  CHECK_INT(b.succeeded, ==, 2);
  CHECK_INT(b.canceled, ==, 0);
  check_fired(p, &b, PAWL_BATCH_ON_SUCCESS, 1); /* all its children did */
  check_fired(p, &b, PAWL_BATCH_ON_COMPLETE, 1);
  pawl_close(p);

  /* A dead child replaced: its failure is taken back; the callbacks that
   * fired stay fired, once. */
  p = open_db(url, 10000);
  pawl_enqueue_opts_t co;
  pawl_enqueue_opts_init(&co);
  co.max_attempts = 1;
  co.queue = "dead";
  pawl_id_t one[1];
  bid = make_batch(p, 1, one, &co);
  CHECK_INT(claim(p, "dead", &jobs), ==, 1);
  finish(p, jobs[0], PAWL_OUT_FAILED, 0);
  pawl_jobs_free(jobs, 1);
  b = get_batch(p, &bid);
  CHECK_INT(b.failed, ==, 1);
  check_fired(p, &b, PAWL_BATCH_ON_FAILURE, 1);
  CHECK_OK(pawl_replace(p, &one[0], NULL, &nid));
  b = get_batch(p, &bid);
  CHECK_INT(b.failed, ==, 0);
  CHECK_INT(b.states[PAWL_PENDING] + b.states[PAWL_FAILED], ==, 1);
  CHECK_INT(claim(p, "dead", &jobs), ==, 1);
  CHECK(same(&jobs[0]->id, &nid));
  finish(p, jobs[0], PAWL_OUT_SUCCEEDED, 0);
  pawl_jobs_free(jobs, 1);
  b = get_batch(p, &bid);
  CHECK_INT(b.succeeded, ==, 1);
  CHECK_INT(b.failed, ==, 0);
  pawl_close(p);
}

/* A child may wait for a signal: blocked until the decision, then it runs
 * and counts as any child. Two children with one key: refused, nothing
 * enqueued (keys are unique among live jobs). */
void contract_batch_signal_child(const char *url) {
  pawl_t *p = open_db(url, 10000);
  pawl_enqueue_opts_t so;
  pawl_enqueue_opts_init(&so);
  so.signal = "approve-batch";
  pawl_id_t one[1];
  pawl_id_t bid = make_batch(p, 1, one, &so);
  pawl_batch_t b = get_batch(p, &bid);
  CHECK_INT(b.states[PAWL_BLOCKED], ==, 1);
  pawl_job_t **jobs;
  CHECK_INT(claim(p, NULL, &jobs), ==, 0);
  pawl_jobs_free(jobs, 0);
  pawl_signal_info_t *sig = NULL;
  CHECK_OK(pawl_signal_get(p, &one[0], &sig));
  CHECK_STR(sig->key, "approve-batch");
  pawl_signal_free(sig);
  pawl_id_t job;
  int status = -1;
  CHECK_OK(pawl_signal(p, "approve-batch", "approve", NULL, &job, &status));
  CHECK(same(&job, &one[0]));
  CHECK_INT(claim(p, "default", &jobs), ==, 1);
  finish(p, jobs[0], PAWL_OUT_SUCCEEDED, 0);
  pawl_jobs_free(jobs, 1);
  b = get_batch(p, &bid);
  CHECK_INT(b.succeeded, ==, 1);
  check_fired(p, &b, PAWL_BATCH_ON_SUCCESS, 1);
  pawl_close(p);

  p = open_db(url, 10000);
  so.signal = "one-key";
  pawl_enqueue_item_t two[2] = {{"child", NULL, &so}, {"child", NULL, &so}};
  pawl_id_t ids[2];
  CHECK_INT(pawl_batch_enqueue(p, two, 2, NULL, &bid, ids), ==, PAWL_EKEY);
  CHECK(strstr(pawl_errmsg(p), "one-key") != NULL);
  CHECK_INT(pawl_signal(p, "one-key", "approve", NULL, NULL, NULL), ==,
            PAWL_ENOTFOUND); /* nothing was enqueued */
  pawl_close(p);
}

/* Children under a resource limit take permits as any job; a callback may
 * not name a resource or a signal (what fires is made from the callback's
 * kept fields: they would be lost). */
void contract_batch_limits(const char *url) {
  pawl_t *p = open_db(url, 10000);
  CHECK_OK(pawl_limit_set(p, "smtp", 1, 0, 0));
  pawl_enqueue_opts_t ro;
  pawl_enqueue_opts_init(&ro);
  ro.resource = "smtp";
  pawl_id_t ids[3];
  pawl_id_t bid = make_batch(p, 3, ids, &ro);
  pawl_job_t **jobs;
  CHECK_INT(claim(p, "default", &jobs), ==, 1); /* one permit */
  finish(p, jobs[0], PAWL_OUT_SUCCEEDED, 0);
  pawl_jobs_free(jobs, 1);
  CHECK_INT(claim(p, "default", &jobs), ==, 1);
  finish(p, jobs[0], PAWL_OUT_SUCCEEDED, 0);
  pawl_jobs_free(jobs, 1);
  pawl_batch_t b = get_batch(p, &bid);
  CHECK_INT(b.succeeded, ==, 2);
  CHECK_INT(b.states[PAWL_PENDING], ==, 1);

  pawl_enqueue_item_t child = {"child", NULL, NULL};
  pawl_enqueue_item_t cb = {"cb", NULL, &ro};
  pawl_batch_opts_t bo;
  pawl_batch_opts_init(&bo);
  bo.on_complete = &cb;
  CHECK_INT(pawl_batch_enqueue(p, &child, 1, &bo, NULL, NULL), ==,
            PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "on_complete: a callback may not have a "
                               "resource") != NULL);
  pawl_enqueue_opts_t so;
  pawl_enqueue_opts_init(&so);
  so.signal = "cb-key";
  cb.opts = &so;
  CHECK_INT(pawl_batch_enqueue(p, &child, 1, &bo, NULL, NULL), ==,
            PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "a callback may not have a signal") != NULL);
  pawl_close(p);
}
