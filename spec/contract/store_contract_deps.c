/* store_contract_deps.c: the dependencies contract suite (see
 * store_contract_deps.h), through the public API on a handle whose clock
 * is injected: a job enqueued with `after` waits in `blocked` until its
 * parents have ended, then runs or is canceled as its `when` says. */
#include <stdatomic.h>

#include "pawl.h"
#include "store_contract_deps.h"
#include "unit.h"
#include "unit_pawl.h"

#define T0 INT64_C(1800000000000)

static _Atomic int64_t dep_now = T0;

static pawl_t *open_db(const char *url) {
  atomic_store(&dep_now, T0);
  return unit_open_clocked(url, "node-a", &dep_now, 10000);
}

/* A job of `type` after `n` parents on `when` (NULL: success). */
static pawl_id_t enq(pawl_t *p, const char *type, const pawl_id_t *after,
                     size_t n, const char *when) {
  pawl_enqueue_opts_t o;
  pawl_enqueue_opts_init(&o);
  o.after = after;
  o.nafter = n;
  o.when = when;
  o.max_attempts = 1;
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

/* The reason of the job's last event. */
static void last_reason(pawl_t *p, const pawl_id_t *id, char *out,
                        size_t len) {
  pawl_history_t *h;
  if (pawl_history(p, id, &h))
    unit_fail(__FILE__, __LINE__, "history: %s", pawl_errmsg(p));
  const char *r = h->nevents ? h->events[h->nevents - 1].reason : NULL;
  snprintf(out, len, "%s", r ? r : "");
  pawl_history_free(h);
}

/* Claims everything due; *n jobs (pawl_jobs_free()). */
static pawl_job_t **claim_all(pawl_t *p, size_t *n) {
  pawl_job_t **jobs = NULL;
  if (pawl_claim(p, NULL, 100000, &jobs, n))
    unit_fail(__FILE__, __LINE__, "claim: %s", pawl_errmsg(p));
  return jobs;
}

static int same(const pawl_id_t *a, const pawl_id_t *b) {
  return memcmp(a->bytes, b->bytes, 16) == 0;
}

/* Finishes the claimed jobs [from, to) of `jobs` with `kind`. */
static void finish(pawl_t *p, pawl_job_t **jobs, size_t from, size_t to,
                   pawl_outcome_kind_t kind, const char *branches) {
  size_t n = to - from;
  pawl_outcome_t *o = calloc(n ? n : 1, sizeof *o);
  int *rcs = calloc(n ? n : 1, sizeof *rcs);
  for (size_t i = 0; i < n; i++) {
    pawl_job_t *j = jobs[from + i];
    o[i] = (pawl_outcome_t){.id = j->id, .attempt = j->attempt, .kind = kind,
                            .store_key = j->store_key, .branches = branches};
    if (kind == PAWL_OUT_RETRY) o[i].run_at = atomic_load(&dep_now);
    if (kind != PAWL_OUT_SUCCEEDED) o[i].error = "boom";
  }
  if (pawl_finish(p, o, n, rcs))
    unit_fail(__FILE__, __LINE__, "finish: %s", pawl_errmsg(p));
  for (size_t i = 0; i < n; i++) CHECK_INT(rcs[i], ==, 0);
  free(o);
  free(rcs);
}

/* Claims exactly the job `want` and finishes it with `kind`. */
static void run_one(pawl_t *p, const pawl_id_t *want, pawl_outcome_kind_t kind,
                    const char *branches) {
  size_t n;
  pawl_job_t **jobs = claim_all(p, &n);
  CHECK_INT(n, ==, 1);
  CHECK(same(&jobs[0]->id, want));
  finish(p, jobs, 0, 1, kind, branches);
  pawl_jobs_free(jobs, n);
}

/* A child waits blocked, not claimable, until its parent succeeds; then it
 * is pending, with the event that says why. */
void contract_deps_success(const char *url) {
  pawl_t *p = open_db(url);
  pawl_id_t a = enq(p, "a", NULL, 0, NULL);
  pawl_id_t b = enq(p, "b", &a, 1, NULL);
  CHECK_INT(state_of(p, &b), ==, PAWL_BLOCKED);
  run_one(p, &a, PAWL_OUT_SUCCEEDED, NULL);
  CHECK_INT(state_of(p, &b), ==, PAWL_PENDING);
  char why[300];
  last_reason(p, &b, why, sizeof why);
  CHECK_STR(why, "its parents ended as it asks");
  run_one(p, &b, PAWL_OUT_SUCCEEDED, NULL);
  pawl_close(p);
}

/* A failed parent: its success-children are canceled (naming it), its
 * failure- and done-children run. */
void contract_deps_failure_done(const char *url) {
  pawl_t *p = open_db(url);
  pawl_id_t a = enq(p, "a", NULL, 0, NULL);
  pawl_id_t s = enq(p, "s", &a, 1, "success");
  pawl_id_t f = enq(p, "f", &a, 1, "failure");
  pawl_id_t d = enq(p, "d", &a, 1, "done");
  run_one(p, &a, PAWL_OUT_FAILED, NULL);
  CHECK_INT(state_of(p, &s), ==, PAWL_CANCELED);
  CHECK_INT(state_of(p, &f), ==, PAWL_PENDING);
  CHECK_INT(state_of(p, &d), ==, PAWL_PENDING);
  char why[300], text[PAWL_ID_STRLEN];
  last_reason(p, &s, why, sizeof why);
  pawl_id_format(&a, text);
  CHECK(strstr(why, text) != NULL);
  CHECK(strstr(why, "failed (when = success)") != NULL);
  /* A canceled parent meets only "done". */
  pawl_id_t c = enq(p, "c", NULL, 0, NULL);
  pawl_id_t cf = enq(p, "cf", &c, 1, "failure");
  pawl_id_t cd = enq(p, "cd", &c, 1, "done");
  CHECK_OK(pawl_cancel(p, &c, "no", NULL));
  CHECK_INT(state_of(p, &cf), ==, PAWL_CANCELED);
  CHECK_INT(state_of(p, &cd), ==, PAWL_PENDING);
  pawl_close(p);
}

/* A join of 500 parents: the child stays blocked until the last one ends,
 * whatever the batches; then it runs once. */
void contract_deps_fan_in(const char *url) {
  pawl_t *p = open_db(url);
  enum { N = 500 };
  pawl_id_t *parents = calloc(N, sizeof *parents);
  for (size_t i = 0; i < N; i++) parents[i] = enq(p, "parent", NULL, 0, NULL);
  pawl_id_t c = enq(p, "join", parents, N, "done");
  size_t n;
  pawl_job_t **jobs = claim_all(p, &n);
  CHECK_INT(n, ==, N);
  /* Batches of 100, some succeeding, one failing ("done" takes either). */
  for (size_t from = 0; from < N - 1; from += 100) {
    size_t to = from + 100 < N - 1 ? from + 100 : N - 1;
    finish(p, jobs, from, to,
           from == 200 ? PAWL_OUT_FAILED : PAWL_OUT_SUCCEEDED, NULL);
    CHECK_INT(state_of(p, &c), ==, PAWL_BLOCKED);
  }
  finish(p, jobs, N - 1, N, PAWL_OUT_SUCCEEDED, NULL);
  CHECK_INT(state_of(p, &c), ==, PAWL_PENDING);
  pawl_jobs_free(jobs, n);
  run_one(p, &c, PAWL_OUT_SUCCEEDED, NULL);
  free(parents);
  pawl_close(p);
}

/* One parent, many children; its cancel cascades to grandchildren that
 * needed their parent to succeed, not to those that wait for "done". */
void contract_deps_fan_out_cascade(const char *url) {
  pawl_t *p = open_db(url);
  pawl_id_t a = enq(p, "a", NULL, 0, NULL);
  pawl_id_t kids[20], grand[20], after_done[20];
  for (int i = 0; i < 20; i++) {
    kids[i] = enq(p, "kid", &a, 1, NULL);
    grand[i] = enq(p, "grand", &kids[i], 1, NULL);
    after_done[i] = enq(p, "cleanup", &grand[i], 1, "done");
  }
  CHECK_OK(pawl_cancel(p, &a, "changed my mind", NULL));
  for (int i = 0; i < 20; i++) {
    CHECK_INT(state_of(p, &kids[i]), ==, PAWL_CANCELED);
    CHECK_INT(state_of(p, &grand[i]), ==, PAWL_CANCELED);
    CHECK_INT(state_of(p, &after_done[i]), ==, PAWL_PENDING);
  }
  pawl_close(p);
}

/* A parent that is retried (an attempt failed, more remain) or paused has
 * not ended: its child stays blocked. */
void contract_deps_retry_keeps_blocked(const char *url) {
  pawl_t *p = open_db(url);
  pawl_enqueue_opts_t o;
  pawl_enqueue_opts_init(&o);
  o.max_attempts = 3;
  pawl_id_t a;
  CHECK_OK(pawl_enqueue(p, "a", "{}", &o, &a, NULL));
  pawl_id_t b = enq(p, "b", &a, 1, NULL);
  run_one(p, &a, PAWL_OUT_RETRY, NULL);
  CHECK_INT(state_of(p, &a), ==, PAWL_PENDING);
  CHECK_INT(state_of(p, &b), ==, PAWL_BLOCKED);
  CHECK_OK(pawl_pause(p, &a, NULL, NULL));
  CHECK_INT(state_of(p, &b), ==, PAWL_BLOCKED);
  CHECK_OK(pawl_resume(p, &a, NULL, NULL));
  run_one(p, &a, PAWL_OUT_SUCCEEDED, NULL);
  CHECK_INT(state_of(p, &b), ==, PAWL_PENDING);
  pawl_close(p);
}

/* An operator's retry of a failed parent: a child still blocked (waiting
 * on another parent) stops counting the failure, and counts the parent's
 * next end instead. A child settled already stays as it is. */
void contract_deps_manual_retry(const char *url) {
  pawl_t *p = open_db(url);
  pawl_id_t a = enq(p, "a", NULL, 0, NULL);
  pawl_id_t b = enq(p, "b", NULL, 0, NULL);
  pawl_id_t ab[2] = {a, b};
  pawl_id_t c = enq(p, "c", ab, 2, NULL);   /* on a and b */
  pawl_id_t only = enq(p, "o", &a, 1, NULL); /* on a alone */
  size_t n;
  pawl_job_t **jobs = claim_all(p, &n);
  CHECK_INT(n, ==, 2);
  size_t ia = same(&jobs[0]->id, &a) ? 0 : 1;
  finish(p, jobs, ia, ia + 1, PAWL_OUT_FAILED, NULL);
  CHECK_INT(state_of(p, &c), ==, PAWL_BLOCKED);
  CHECK_INT(state_of(p, &only), ==, PAWL_CANCELED);
  if (pawl_retry(p, &a, "fixed", NULL))
    unit_fail(__FILE__, __LINE__, "retry: %s", pawl_errmsg(p));
  finish(p, jobs, 1 - ia, 2 - ia, PAWL_OUT_SUCCEEDED, NULL); /* b */
  pawl_jobs_free(jobs, n);
  CHECK_INT(state_of(p, &c), ==, PAWL_BLOCKED); /* a runs again */
  /* The child a's failure canceled waits for a again. */
  CHECK_INT(state_of(p, &only), ==, PAWL_BLOCKED);
  run_one(p, &a, PAWL_OUT_SUCCEEDED, NULL);
  CHECK_INT(state_of(p, &c), ==, PAWL_PENDING);
  CHECK_INT(state_of(p, &only), ==, PAWL_PENDING);
  pawl_close(p);
}

/* The last event of job `id`: from, to, actor and reason. */
static void check_last(pawl_t *p, const pawl_id_t *id, int from, int to,
                       const char *actor, const char *reason) {
  pawl_history_t *h;
  if (pawl_history(p, id, &h))
    unit_fail(__FILE__, __LINE__, "history: %s", pawl_errmsg(p));
  CHECK(h->nevents > 0);
  const pawl_event_t *e = &h->events[h->nevents - 1];
  CHECK_INT(e->from_state, ==, from);
  CHECK_INT(e->to_state, ==, to);
  if (actor) CHECK_STR(e->actor, actor);
  if (reason) CHECK_STR(e->reason, reason);
  pawl_history_free(h);
}

/* A manual retry of a failed parent reopens the children its failure
 * canceled (back to blocked, each with an event saying why), and theirs
 * in turn, once each (a diamond); an operator's cancel stays, and so does
 * a child whose condition the failure met, one that ran, and one whose
 * business key another live job has taken since. Done twice: a second
 * failure cancels them again and a second retry reopens them again. */
void contract_deps_retry_reopens(const char *url) {
  pawl_t *p = open_db(url);
  pawl_id_t a = enq(p, "a", NULL, 0, NULL);
  pawl_id_t kid = enq(p, "kid", &a, 1, NULL);        /* on a's success */
  pawl_id_t grand = enq(p, "grand", &kid, 1, NULL);  /* on kid's */
  pawl_id_t d1 = enq(p, "d1", &a, 1, NULL);
  pawl_id_t d2 = enq(p, "d2", &a, 1, "branch:x");
  pawl_id_t d12[2] = {d1, d2};
  pawl_id_t tip = enq(p, "tip", d12, 2, NULL);       /* a diamond */
  pawl_id_t ops = enq(p, "ops", &a, 1, NULL);        /* an operator's */
  pawl_id_t onfail = enq(p, "onfail", &a, 1, "failure");
  pawl_id_t z = enq(p, "z", NULL, 0, NULL);
  pawl_id_t az[2] = {a, z};
  pawl_id_t both = enq(p, "both", az, 2, NULL);      /* z fails too */
  pawl_enqueue_opts_t o;
  pawl_enqueue_opts_init(&o);
  o.after = &a;
  o.nafter = 1;
  o.business_key = "bk-1";
  pawl_id_t keyed;
  CHECK_OK(pawl_enqueue(p, "keyed", "{}", &o, &keyed, NULL));
  CHECK_OK(pawl_cancel(p, &ops, "not wanted", NULL));
  for (int round = 0; round < 2; round++) {
    size_t n;
    pawl_job_t **jobs = claim_all(p, &n);
    CHECK_INT(n, ==, round ? 1 : 2); /* a (and z, the first time) */
    for (size_t i = 0; i < n; i++) finish(p, jobs, i, i + 1, PAWL_OUT_FAILED, NULL);
    pawl_jobs_free(jobs, n);
    const pawl_id_t *gone[] = {&kid, &grand, &d1, &d2, &tip, &both, &keyed};
    for (size_t i = 0; i < sizeof gone / sizeof *gone; i++)
      CHECK_INT(state_of(p, gone[i]), ==, PAWL_CANCELED);
    CHECK_INT(state_of(p, &onfail), ==, round ? PAWL_SUCCEEDED : PAWL_PENDING);
    if (round == 0) {
      /* onfail runs; another job takes keyed's business key meanwhile. */
      run_one(p, &onfail, PAWL_OUT_SUCCEEDED, NULL);
      pawl_enqueue_opts_init(&o);
      o.business_key = "bk-1";
      o.run_at = T0 + INT64_C(86400000);
      pawl_id_t taker;
      CHECK_OK(pawl_enqueue(p, "taker", "{}", &o, &taker, NULL));
    }
    CHECK_OK(pawl_retry(p, &a, "fixed", NULL));
    char text[PAWL_ID_STRLEN], why[300];
    pawl_id_format(&a, text);
    snprintf(why, sizeof why,
             "reopened: parent %s was retried by tester; this job, canceled "
             "by its failure, waits for it again",
             text);
    const pawl_id_t *direct[] = {&kid, &d1, &d2, &both};
    for (size_t i = 0; i < sizeof direct / sizeof *direct; i++) {
      CHECK_INT(state_of(p, direct[i]), ==, PAWL_BLOCKED);
      check_last(p, direct[i], PAWL_CANCELED, PAWL_BLOCKED, "tester", why);
    }
    pawl_id_format(&kid, text);
    snprintf(why, sizeof why,
             "reopened: parent %s was reopened (a retry by tester); this "
             "job, canceled by its cancel, waits for it again",
             text);
    CHECK_INT(state_of(p, &grand), ==, PAWL_BLOCKED);
    check_last(p, &grand, PAWL_CANCELED, PAWL_BLOCKED, "tester", why);
    CHECK_INT(state_of(p, &tip), ==, PAWL_BLOCKED);
    pawl_history_t *h;
    CHECK_OK(pawl_history(p, &tip, &h));
    size_t reopened = 0;
    for (size_t i = 0; i < h->nevents; i++)
      reopened += h->events[i].to_state == PAWL_BLOCKED &&
                  h->events[i].from_state == PAWL_CANCELED;
    pawl_history_free(h);
    CHECK_INT(reopened, ==, (size_t)round + 1); /* once per retry */
    /* Kept: the operator's cancel, the child whose key was taken, the one
     * that ran. */
    CHECK_INT(state_of(p, &ops), ==, PAWL_CANCELED);
    check_last(p, &ops, PAWL_BLOCKED, PAWL_CANCELED, "tester", "not wanted");
    CHECK_INT(state_of(p, &keyed), ==, PAWL_CANCELED);
    CHECK_INT(state_of(p, &onfail), ==, PAWL_SUCCEEDED);
  }
  /* a succeeds: its children run, and theirs after them; `both` is
   * canceled again, for z. */
  run_one(p, &a, PAWL_OUT_SUCCEEDED, "[\"x\"]");
  CHECK_INT(state_of(p, &kid), ==, PAWL_PENDING);
  CHECK_INT(state_of(p, &d1), ==, PAWL_PENDING);
  CHECK_INT(state_of(p, &d2), ==, PAWL_PENDING);
  CHECK_INT(state_of(p, &grand), ==, PAWL_BLOCKED);
  CHECK_INT(state_of(p, &tip), ==, PAWL_BLOCKED);
  CHECK_INT(state_of(p, &both), ==, PAWL_CANCELED);
  char text[PAWL_ID_STRLEN], why[300];
  pawl_id_format(&z, text);
  snprintf(why, sizeof why,
           "dependency not met: parent %s failed (when = success)", text);
  check_last(p, &both, PAWL_BLOCKED, PAWL_CANCELED, "pawl", why);
  size_t n;
  pawl_job_t **jobs = claim_all(p, &n);
  CHECK_INT(n, ==, 3); /* kid, d1 and d2 */
  finish(p, jobs, 0, 3, PAWL_OUT_SUCCEEDED, NULL);
  pawl_jobs_free(jobs, n);
  CHECK_INT(state_of(p, &grand), ==, PAWL_PENDING);
  CHECK_INT(state_of(p, &tip), ==, PAWL_PENDING);
  pawl_close(p);
}

/* Parents that ended before the child was enqueued are counted at once:
 * the child starts pending, or canceled. */
void contract_deps_ended_parent(const char *url) {
  pawl_t *p = open_db(url);
  pawl_id_t a = enq(p, "a", NULL, 0, NULL);
  run_one(p, &a, PAWL_OUT_SUCCEEDED, NULL);
  pawl_id_t ok = enq(p, "ok", &a, 1, NULL);
  pawl_id_t no = enq(p, "no", &a, 1, "failure");
  CHECK_INT(state_of(p, &ok), ==, PAWL_PENDING);
  CHECK_INT(state_of(p, &no), ==, PAWL_CANCELED);
  /* A parent paused after it failed counts as failed. */
  run_one(p, &ok, PAWL_OUT_SUCCEEDED, NULL);
  pawl_id_t f = enq(p, "f", NULL, 0, NULL);
  run_one(p, &f, PAWL_OUT_FAILED, NULL);
  CHECK_OK(pawl_pause(p, &f, NULL, NULL));
  pawl_id_t ff = enq(p, "ff", &f, 1, "failure");
  CHECK_INT(state_of(p, &ff), ==, PAWL_PENDING);
  pawl_close(p);
}

static int count_edges(const pawl_dep_t *d, void *data) {
  int *n = data;
  n[d->parent ? 0 : 1]++;
  if (!d->parent) n[2] = d->state;
  return 0;
}

/* A chain: each step after the one before it succeeds; a failed step
 * cancels the rest. */
void contract_deps_chain(const char *url) {
  pawl_t *p = open_db(url);
  pawl_enqueue_item_t items[3] = {
      {"s1", "{}", NULL}, {"s2", "{}", NULL}, {"s3", "{}", NULL}};
  pawl_id_t ids[3];
  CHECK_OK(pawl_chain(p, items, 3, ids, NULL));
  CHECK_INT(state_of(p, &ids[0]), ==, PAWL_PENDING);
  CHECK_INT(state_of(p, &ids[1]), ==, PAWL_BLOCKED);
  CHECK_INT(state_of(p, &ids[2]), ==, PAWL_BLOCKED);
  int edges[3] = {0, 0, -1};
  CHECK_OK(pawl_deps_list(p, &ids[1], count_edges, edges));
  CHECK_INT(edges[0], ==, 1);
  CHECK_INT(edges[1], ==, 1);
  CHECK_INT(edges[2], ==, PAWL_BLOCKED);
  run_one(p, &ids[0], PAWL_OUT_SUCCEEDED, NULL);
  CHECK_INT(state_of(p, &ids[1]), ==, PAWL_PENDING);
  CHECK_INT(state_of(p, &ids[2]), ==, PAWL_BLOCKED);
  run_one(p, &ids[1], PAWL_OUT_FAILED, NULL);
  CHECK_INT(state_of(p, &ids[2]), ==, PAWL_CANCELED);
  /* Canceling a step cancels the rest. */
  CHECK_OK(pawl_chain(p, items, 3, ids, NULL));
  CHECK_OK(pawl_cancel(p, &ids[1], NULL, NULL));
  CHECK_INT(state_of(p, &ids[0]), ==, PAWL_PENDING);
  CHECK_INT(state_of(p, &ids[2]), ==, PAWL_CANCELED);
  pawl_close(p);
}

/* Branches: the names that fired when the parent succeeded decide. */
void contract_deps_branches(const char *url) {
  pawl_t *p = open_db(url);
  pawl_id_t a = enq(p, "a", NULL, 0, NULL);
  pawl_id_t big = enq(p, "big", &a, 1, "branch:big");
  pawl_id_t vip = enq(p, "vip", &a, 1, "branch:vip");
  pawl_id_t small = enq(p, "small", &a, 1, "branch:small");
  run_one(p, &a, PAWL_OUT_SUCCEEDED, "[\"big\",\"vip\"]");
  CHECK_INT(state_of(p, &big), ==, PAWL_PENDING);
  CHECK_INT(state_of(p, &vip), ==, PAWL_PENDING);
  CHECK_INT(state_of(p, &small), ==, PAWL_CANCELED);
  /* None fired: every branch child is canceled. */
  pawl_id_t b = enq(p, "b", NULL, 0, NULL);
  pawl_id_t bb = enq(p, "bb", &b, 1, "branch:big");
  size_t n;
  pawl_job_t **jobs = claim_all(p, &n); /* big, vip and b */
  CHECK_INT(n, ==, 3);
  finish(p, jobs, 0, n, PAWL_OUT_SUCCEEDED, NULL);
  pawl_jobs_free(jobs, n);
  CHECK_INT(state_of(p, &bb), ==, PAWL_CANCELED);
  pawl_close(p);
}

/* A parent whose last attempt is lost with its node (recovered into
 * failed) ends too. */
void contract_deps_recover_failed(const char *url) {
  pawl_t *p = open_db(url);
  pawl_id_t a = enq(p, "a", NULL, 0, NULL);
  pawl_id_t f = enq(p, "f", &a, 1, "failure");
  size_t n;
  pawl_job_t **jobs = claim_all(p, &n);
  CHECK_INT(n, ==, 1);
  pawl_jobs_free(jobs, n);
  atomic_fetch_add(&dep_now, 60000);
  CHECK_OK(pawl_recover(p, NULL));
  CHECK_INT(state_of(p, &a), ==, PAWL_FAILED);
  CHECK_INT(state_of(p, &f), ==, PAWL_PENDING);
  pawl_close(p);
}


static int one_job(const pawl_job_t *j, void *data) {
  (void)j;
  ++*(int *)data;
  return 0;
}

static int jobs_in(pawl_t *p) {
  int n = 0;
  pawl_filter_t f;
  pawl_filter_init(&f);
  f.limit = 1000;
  CHECK_OK(pawl_list(p, &f, one_job, &n));
  return n;
}

/* Bad input: refused with a message naming it, nothing enqueued. */
void contract_deps_bad_input(const char *url) {
  pawl_t *p = open_db(url);
  pawl_id_t a = enq(p, "a", NULL, 0, NULL);
  pawl_id_t ghost;
  pawl_id_new(&ghost);
  pawl_id_t two[2] = {a, ghost};
  pawl_enqueue_opts_t o;
  pawl_enqueue_opts_init(&o);
  o.after = two;
  o.nafter = 2;
  CHECK_INT(pawl_enqueue(p, "c", "{}", &o, NULL, NULL), ==, PAWL_ENOTFOUND);
  char text[PAWL_ID_STRLEN];
  pawl_id_format(&ghost, text);
  CHECK(strstr(pawl_errmsg(p), "unknown parent job") != NULL);
  CHECK(strstr(pawl_errmsg(p), text) != NULL);
  o.nafter = 1;
  o.when = "sometimes";
  CHECK_INT(pawl_enqueue(p, "c", "{}", &o, NULL, NULL), ==, PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "sometimes") != NULL);
  o.when = "branch:";
  CHECK_INT(pawl_enqueue(p, "c", "{}", &o, NULL, NULL), ==, PAWL_EINVAL);
  o.when = "failure";
  o.nafter = 0;
  CHECK_INT(pawl_enqueue(p, "c", "{}", &o, NULL, NULL), ==, PAWL_EINVAL);
  pawl_id_t dup[2] = {a, a};
  o.after = dup;
  o.nafter = 2;
  o.when = NULL;
  CHECK_INT(pawl_enqueue(p, "c", "{}", &o, NULL, NULL), ==, PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "twice") != NULL);
  /* A chain whose second step names a ghost: nothing of it is kept. */
  pawl_enqueue_opts_t bad;
  pawl_enqueue_opts_init(&bad);
  bad.after = &ghost;
  bad.nafter = 1;
  pawl_enqueue_item_t items[2] = {{"s1", "{}", NULL}, {"s2", "{}", &bad}};
  CHECK_INT(pawl_chain(p, items, 2, NULL, NULL), ==, PAWL_ENOTFOUND);
  CHECK_INT(jobs_in(p), ==, 1);
  pawl_close(p);
}
