/* store_contract_steps_mix.c: job instances (identity)
 * with replace, batches and chains, found when steps were merged with
 * the other flows (docs/flows.md "Restartable steps"): a replacement becomes the
 * job of the old job's instance; a batch's child or callback and a
 * chain's step may not have identity (an instance is enqueued alone). On
 * every backend (store_contract_steps_mix.h). */
#include <stdatomic.h>
#include <string.h>

#include "pawl.h"
#include "store_contract_steps_mix.h"
#include "unit.h"
#include "unit_pawl.h"

#define T0 INT64_C(1800000000000)

static _Atomic int64_t smix_now = T0;

static pawl_t *open_db(const char *url) {
  atomic_store(&smix_now, T0);
  return unit_open_clocked(url, "node-a", &smix_now, 10000);
}

static const char *const DATE[] = {"date"};

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

static int same(const pawl_id_t *a, const pawl_id_t *b) {
  return memcmp(a->bytes, b->bytes, 16) == 0;
}

/* A failed instance job replaced: the replacement is the instance's job.
 * Enqueuing the instance again returns it (live), and once it succeeded
 * the instance is complete. Before, the instance stayed with the failed
 * old job, and the next enqueue restarted that one beside the
 * replacement: two jobs of one instance. */
void contract_steps_replace_instance(const char *url) {
  pawl_t *p = open_db(url);
  pawl_enqueue_opts_t o;
  pawl_enqueue_opts_init(&o);
  o.identity = DATE;
  o.nidentity = 1;
  o.max_attempts = 1;
  const char *payload = "{\"date\":\"2026-01-01\"}";
  pawl_id_t a, b, c;
  int st = -1;
  CHECK_OK(pawl_enqueue(p, "report", payload, &o, &a, &st));
  CHECK_INT(st, ==, PAWL_ENQ_NEW);
  pawl_job_t **jobs = NULL;
  size_t n = 0;
  CHECK_OK(pawl_claim(p, NULL, 10, &jobs, &n));
  CHECK_INT(n, ==, 1);
  pawl_outcome_t out = {.id = jobs[0]->id,
                        .attempt = jobs[0]->attempt,
                        .kind = PAWL_OUT_FAILED,
                        .store_key = jobs[0]->store_key,
                        .error = "boom"};
  int rc = -1;
  CHECK_OK(pawl_finish(p, &out, 1, &rc));
  CHECK_INT(rc, ==, 0);
  pawl_jobs_free(jobs, n);
  CHECK_OK(pawl_replace(p, &a, NULL, &b));
  CHECK_OK(pawl_enqueue(p, "report", payload, &o, &c, &st));
  CHECK_INT(st, ==, PAWL_ENQ_EXISTING);
  CHECK(same(&c, &b));
  CHECK_INT(njobs(p), ==, 2); /* the failed old job and its replacement */
  pawl_job_t *old;
  CHECK_OK(pawl_get(p, &a, &old));
  CHECK_INT(old->state, ==, PAWL_FAILED); /* not restarted */
  pawl_job_free(old);
  CHECK_OK(pawl_claim(p, NULL, 10, &jobs, &n));
  CHECK_INT(n, ==, 1);
  CHECK(same(&jobs[0]->id, &b));
  out = (pawl_outcome_t){.id = jobs[0]->id,
                         .attempt = jobs[0]->attempt,
                         .kind = PAWL_OUT_SUCCEEDED,
                         .store_key = jobs[0]->store_key};
  CHECK_OK(pawl_finish(p, &out, 1, &rc));
  pawl_jobs_free(jobs, n);
  CHECK_INT(pawl_enqueue(p, "report", payload, &o, &c, &st), ==, PAWL_EDONE);
  pawl_close(p);
}

/* Identity is for a job enqueued alone: a batch's child or callback, a
 * chain's step, or one of several jobs of pawl_enqueue_many() is refused,
 * naming it, and nothing is enqueued. */
void contract_steps_identity_refused(const char *url) {
  pawl_t *p = open_db(url);
  pawl_enqueue_opts_t o;
  pawl_enqueue_opts_init(&o);
  o.identity = DATE;
  o.nidentity = 1;
  pawl_enqueue_item_t items[2] = {{"report", "{\"date\":\"d1\"}", NULL},
                                  {"report", "{\"date\":\"d2\"}", &o}};
  CHECK_INT(pawl_batch_enqueue(p, items, 2, NULL, NULL, NULL), ==,
            PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "job 2: a batch's child may not have "
                               "identity fields"));
  pawl_batch_opts_t bo;
  pawl_batch_opts_init(&bo);
  bo.on_success = &items[1];
  CHECK_INT(pawl_batch_enqueue(p, items, 1, &bo, NULL, NULL), ==,
            PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "on_success: a callback may not have "
                               "identity fields"));
  CHECK_INT(pawl_chain(p, items, 2, NULL, NULL), ==, PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "job 2: a chain's step may not have "
                               "identity fields"));
  CHECK_INT(pawl_enqueue_many(p, items, 2, NULL, NULL), ==, PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "job 2: a job with identity fields is "
                               "enqueued alone"));
  CHECK_INT(njobs(p), ==, 0);
  pawl_close(p);
}
