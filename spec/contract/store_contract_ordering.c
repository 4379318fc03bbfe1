/* store_contract_ordering.c: the per-key ordering contract suite (see
 * store_contract_ordering.h), through the public API on a handle whose
 * clock is injected: jobs with one ordering key are claimed one at a time,
 * in enqueue order; other keys and jobs without a key pass them. */
#include <stdatomic.h>

#include "pawl.h"
#include "store_contract_ordering.h"
#include "unit.h"
#include "unit_pawl.h"

#define T0 INT64_C(1800000000000)

static _Atomic int64_t ord_now = T0;

static void advance(int64_t ms) { atomic_fetch_add(&ord_now, ms); }

static pawl_t *open_db(const char *url) {
  atomic_store(&ord_now, T0);
  return unit_open_clocked(url, "node-a", &ord_now, 10000);
}

/* A job of type "t" with ordering key `key` (NULL: none). */
static pawl_id_t enq(pawl_t *p, const char *key, int32_t priority) {
  pawl_enqueue_opts_t o;
  pawl_enqueue_opts_init(&o);
  o.ordering_key = key;
  o.priority = priority;
  pawl_id_t id;
  if (pawl_enqueue(p, "t", "{}", &o, &id, NULL))
    unit_fail(__FILE__, __LINE__, "enqueue: %s", pawl_errmsg(p));
  return id;
}

static int same(const pawl_id_t *a, const pawl_id_t *b) {
  return memcmp(a->bytes, b->bytes, 16) == 0;
}

/* Claims up to `max` jobs into *out (pawl_jobs_free()); checks that no two
 * of the batch share a key. Returns how many. */
static size_t claim(pawl_t *p, size_t max, pawl_job_t ***out) {
  pawl_job_t **jobs = NULL;
  size_t n = 0;
  if (pawl_claim(p, NULL, max, &jobs, &n))
    unit_fail(__FILE__, __LINE__, "claim: %s", pawl_errmsg(p));
  for (size_t i = 0; i < n; i++)
    for (size_t k = i + 1; k < n; k++)
      if (jobs[i]->ordering_key && jobs[k]->ordering_key &&
          strcmp(jobs[i]->ordering_key, jobs[k]->ordering_key) == 0)
        unit_fail(__FILE__, __LINE__, "one claim took two jobs of key %s",
                  jobs[i]->ordering_key);
  if (out)
    *out = jobs;
  else
    pawl_jobs_free(jobs, n);
  return n;
}

/* Claims and checks that exactly the job `want` comes out (max 10). */
static pawl_job_t *claim_only(pawl_t *p, const pawl_id_t *want) {
  pawl_job_t **jobs;
  size_t n = claim(p, 10, &jobs);
  CHECK_INT(n, ==, 1);
  CHECK(same(&jobs[0]->id, want));
  pawl_job_t *j = jobs[0];
  free(jobs);
  return j;
}

static void finish(pawl_t *p, pawl_job_t *j, pawl_outcome_kind_t kind,
                   int64_t run_at, int skip) {
  pawl_outcome_t o = {.id = j->id, .attempt = j->attempt, .kind = kind,
                      .run_at = run_at, .store_key = j->store_key,
                      .ordering_skip = skip};
  if (kind != PAWL_OUT_SUCCEEDED && kind != PAWL_OUT_SNOOZE) o.error = "boom";
  int rcs[1] = {99};
  if (pawl_finish(p, &o, 1, rcs))
    unit_fail(__FILE__, __LINE__, "finish: %s", pawl_errmsg(p));
  CHECK_INT(rcs[0], ==, 0);
  pawl_job_free(j);
}

static int has(pawl_job_t **jobs, size_t n, const pawl_id_t *id) {
  for (size_t i = 0; i < n; i++)
    if (same(&jobs[i]->id, id)) return 1;
  return 0;
}

/* Enqueue order, not priority, within a key; the first of each key and the
 * jobs without a key in one batch; the key is stored and read back. */
void contract_ordering_order(const char *url) {
  pawl_t *p = open_db(url);
  pawl_id_t a1 = enq(p, "account:1", 0);
  pawl_id_t a2 = enq(p, "account:1", 0);
  pawl_id_t a3 = enq(p, "account:1", 10); /* a higher priority: still third */
  pawl_id_t b1 = enq(p, "account:2", 0);
  pawl_id_t n1 = enq(p, NULL, 0);
  pawl_job_t *got;
  CHECK_OK(pawl_get(p, &a2, &got));
  CHECK_STR(got->ordering_key, "account:1");
  pawl_job_free(got);
  CHECK_OK(pawl_get(p, &n1, &got));
  CHECK(got->ordering_key == NULL);
  pawl_job_free(got);

  pawl_job_t **jobs;
  size_t n = claim(p, 10, &jobs);
  CHECK_INT(n, ==, 3);
  CHECK(has(jobs, n, &a1) && has(jobs, n, &b1) && has(jobs, n, &n1));
  for (size_t i = 0; i < n; i++)
    if (same(&jobs[i]->id, &a1)) CHECK_STR(jobs[i]->ordering_key, "account:1");
  CHECK_INT(claim(p, 10, NULL), ==, 0);
  for (size_t i = 0; i < n; i++) finish(p, jobs[i], PAWL_OUT_SUCCEEDED, 0, 0);
  free(jobs);
  finish(p, claim_only(p, &a2), PAWL_OUT_SUCCEEDED, 0, 0);
  finish(p, claim_only(p, &a3), PAWL_OUT_SUCCEEDED, 0, 0);
  CHECK_INT(claim(p, 10, NULL), ==, 0);
  pawl_close(p);
}

/* Keys are independent: one job of each key runs at once, and a key that
 * is busy does not hold up jobs without a key behind it. */
void contract_ordering_other_keys(const char *url) {
  pawl_t *p = open_db(url);
  pawl_id_t first[5], second[5];
  char key[5][16];
  for (int i = 0; i < 5; i++) snprintf(key[i], sizeof key[i], "k%d", i);
  for (int i = 0; i < 5; i++) first[i] = enq(p, key[i], 0);
  for (int i = 0; i < 5; i++) second[i] = enq(p, key[i], 0);
  pawl_job_t **jobs;
  size_t n = claim(p, 20, &jobs);
  CHECK_INT(n, ==, 5);
  for (int i = 0; i < 5; i++) CHECK(has(jobs, n, &first[i]));
  /* The keys stay busy; jobs without a key enqueued after them run. */
  pawl_id_t free1 = enq(p, NULL, 0), free2 = enq(p, NULL, 0);
  pawl_job_t **more;
  size_t m = claim(p, 20, &more);
  CHECK_INT(m, ==, 2);
  CHECK(has(more, m, &free1) && has(more, m, &free2));
  pawl_jobs_free(more, m);
  for (size_t i = 0; i < n; i++) finish(p, jobs[i], PAWL_OUT_SUCCEEDED, 0, 0);
  free(jobs);
  n = claim(p, 20, &jobs);
  CHECK_INT(n, ==, 5);
  for (int i = 0; i < 5; i++) CHECK(has(jobs, n, &second[i]));
  pawl_jobs_free(jobs, n);
  pawl_close(p);
}

/* A failed job that will be retried holds its key: the later jobs wait
 * for its retry, and for its success. */
void contract_ordering_hold_on_retry(const char *url) {
  pawl_t *p = open_db(url);
  pawl_id_t a1 = enq(p, "k", 0);
  pawl_id_t a2 = enq(p, "k", 0);
  finish(p, claim_only(p, &a1), PAWL_OUT_RETRY, T0 + 1000, 0);
  CHECK_INT(claim(p, 10, NULL), ==, 0); /* a2 waits for a1's retry */
  advance(1000);
  pawl_job_t *j = claim_only(p, &a1);
  CHECK_INT(j->attempt, ==, 2);
  /* A snooze keeps the key too. */
  finish(p, j, PAWL_OUT_SNOOZE, T0 + 2000, 0);
  CHECK_INT(claim(p, 10, NULL), ==, 0);
  advance(1000);
  finish(p, claim_only(p, &a1), PAWL_OUT_SUCCEEDED, 0, 0);
  finish(p, claim_only(p, &a2), PAWL_OUT_SUCCEEDED, 0, 0);
  pawl_close(p);
}

/* ordering = "skip_failed": the later jobs pass a job waiting for its
 * retry; once the retry is due it goes first again, and it never runs
 * beside another job of its key. */
void contract_ordering_skip_failed(const char *url) {
  pawl_t *p = open_db(url);
  pawl_id_t a1 = enq(p, "k", 0);
  pawl_id_t a2 = enq(p, "k", 0);
  pawl_id_t a3 = enq(p, "k", 0);
  finish(p, claim_only(p, &a1), PAWL_OUT_RETRY, T0 + 1000, 1);
  pawl_job_t *j2 = claim_only(p, &a2); /* passes a1; a3 waits behind a2 */
  advance(1000);                       /* a1's retry is due: a2 runs still */
  CHECK_INT(claim(p, 10, NULL), ==, 0);
  finish(p, j2, PAWL_OUT_SUCCEEDED, 0, 0);
  pawl_job_t *j1 = claim_only(p, &a1); /* due: first again, before a3 */
  CHECK_INT(j1->attempt, ==, 2);
  /* It fails again and is let pass again; a snooze of a3 then holds. */
  finish(p, j1, PAWL_OUT_RETRY, T0 + 5000, 1);
  pawl_job_t *j3 = claim_only(p, &a3);
  finish(p, j3, PAWL_OUT_SNOOZE, T0 + 1500, 0);
  advance(500);
  finish(p, claim_only(p, &a3), PAWL_OUT_SUCCEEDED, 0, 0);
  CHECK_INT(claim(p, 10, NULL), ==, 0);
  advance(3500);
  finish(p, claim_only(p, &a1), PAWL_OUT_SUCCEEDED, 0, 0);
  pawl_close(p);
}

/* A job that ends dead or canceled frees its key: running or pending. */
void contract_ordering_release_dead_cancel(const char *url) {
  pawl_t *p = open_db(url);
  pawl_id_t a1 = enq(p, "k", 0);
  pawl_id_t a2 = enq(p, "k", 0);
  pawl_id_t a3 = enq(p, "k", 0);
  pawl_id_t a4 = enq(p, "k", 0);
  pawl_id_t a5 = enq(p, "k", 0);
  finish(p, claim_only(p, &a1), PAWL_OUT_FAILED, 0, 0);
  pawl_job_t *j2 = claim_only(p, &a2);
  CHECK_OK(pawl_cancel(p, &a2, "test", NULL)); /* canceled while running */
  pawl_job_free(j2);
  pawl_job_t *j3 = claim_only(p, &a3);
  CHECK_OK(pawl_cancel(p, &a4, "test", NULL)); /* canceled while waiting */
  finish(p, j3, PAWL_OUT_SUCCEEDED, 0, 0);
  finish(p, claim_only(p, &a5), PAWL_OUT_SUCCEEDED, 0, 0);
  pawl_close(p);
}

/* A job paused from pending keeps its place (the key waits for it); one
 * paused from failed is dead, and does not. */
void contract_ordering_paused(const char *url) {
  pawl_t *p = open_db(url);
  pawl_id_t a1 = enq(p, "k", 0);
  pawl_id_t a2 = enq(p, "k", 0);
  CHECK_OK(pawl_pause(p, &a1, "test", NULL));
  CHECK_INT(claim(p, 10, NULL), ==, 0);
  CHECK_OK(pawl_resume(p, &a1, "test", NULL));
  finish(p, claim_only(p, &a1), PAWL_OUT_FAILED, 0, 0);
  CHECK_OK(pawl_pause(p, &a1, "test", NULL));
  finish(p, claim_only(p, &a2), PAWL_OUT_SUCCEEDED, 0, 0);
  pawl_close(p);
}

/* A running job whose node died holds its key until recovery puts it back
 * in line, where it is still first. */
void contract_ordering_recover_holds(const char *url) {
  pawl_t *p = open_db(url);
  pawl_id_t a1 = enq(p, "k", 0);
  pawl_id_t a2 = enq(p, "k", 0);
  pawl_job_free(claim_only(p, &a1));
  advance(20000); /* past the lease */
  CHECK_INT(claim(p, 10, NULL), ==, 0);
  size_t n = 0;
  CHECK_OK(pawl_recover(p, &n));
  CHECK_INT(n, ==, 1);
  pawl_job_t *j = claim_only(p, &a1);
  CHECK_INT(j->attempt, ==, 2);
  finish(p, j, PAWL_OUT_SUCCEEDED, 0, 0);
  finish(p, claim_only(p, &a2), PAWL_OUT_SUCCEEDED, 0, 0);
  pawl_close(p);
}

static int count_cb(const pawl_job_t *j, void *data) {
  (void)j;
  (*(int *)data)++;
  return 0;
}

/* A bad key is refused, naming it, and nothing is stored. */
void contract_ordering_bad_input(const char *url) {
  pawl_t *p = open_db(url);
  char longkey[202];
  memset(longkey, 'k', 201);
  longkey[201] = 0;
  const char *bad[3] = {"", longkey, "a\001b"};
  const char *why[3] = {"must not be empty", "longer than 200 bytes",
                        "control character"};
  for (int i = 0; i < 3; i++) {
    pawl_enqueue_opts_t o;
    pawl_enqueue_opts_init(&o);
    o.ordering_key = bad[i];
    CHECK_INT(pawl_enqueue(p, "t", "{}", &o, NULL, NULL), ==, PAWL_EINVAL);
    CHECK(strstr(pawl_errmsg(p), "ordering key") != NULL);
    CHECK(strstr(pawl_errmsg(p), why[i]) != NULL);
  }
  /* In a batch, a bad key refuses the whole batch. */
  pawl_enqueue_opts_t good, worse;
  pawl_enqueue_opts_init(&good);
  good.ordering_key = "k";
  pawl_enqueue_opts_init(&worse);
  worse.ordering_key = "";
  pawl_enqueue_item_t items[2] = {{"t", "{}", &good}, {"t", "{}", &worse}};
  CHECK_INT(pawl_enqueue_many(p, items, 2, NULL, NULL), ==, PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "job 2") != NULL);
  int count = 0;
  CHECK_OK(pawl_list(p, NULL, count_cb, &count));
  CHECK_INT(count, ==, 0);
  pawl_close(p);
}
