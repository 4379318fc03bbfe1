/* store_contract_sigrep.c: signals and replace, through the
 * public API on a handle whose clock is injected: a job waits blocked for
 * a decision delivered once (approve and reject both run it), or fails
 * when its wait runs out; a replacement is enqueued and its predecessor
 * canceled in one transaction, linked both ways. */
#include <stdatomic.h>

#include "handle.h"
#include "pawl.h"
#include "store_contract_sigrep.h"
#include "unit.h"
#include "unit_pawl.h"

#define T0 INT64_C(1800000000000)

static _Atomic int64_t sr_now = T0;

static void advance(int64_t ms) { atomic_fetch_add(&sr_now, ms); }

static pawl_t *open_db(const char *url) {
  atomic_store(&sr_now, T0);
  return unit_open_clocked(url, "node-a", &sr_now, 10000);
}

static int same(const pawl_id_t *a, const pawl_id_t *b) {
  return memcmp(a->bytes, b->bytes, 16) == 0;
}

/* A job of type "t" that waits for signal `key` (timeout_ms 0: none). */
static pawl_id_t enq_sig(pawl_t *p, const char *key, int64_t timeout_ms) {
  pawl_enqueue_opts_t o;
  pawl_enqueue_opts_init(&o);
  o.signal = key;
  o.signal_timeout_ms = timeout_ms;
  pawl_id_t id;
  if (pawl_enqueue(p, "t", "{\"order\":42}", &o, &id, NULL))
    unit_fail(__FILE__, __LINE__, "enqueue: %s", pawl_errmsg(p));
  return id;
}

static int count_cb(const pawl_job_t *j, void *data) {
  (void)j;
  ++*(int64_t *)data;
  return 0;
}

/* How many jobs the database holds (at most 1000). */
static int64_t count_jobs(pawl_t *p) {
  pawl_filter_t f;
  pawl_filter_init(&f);
  f.limit = 1000;
  int64_t n = 0;
  CHECK_OK(pawl_list(p, &f, count_cb, &n));
  return n;
}

static int state_of(pawl_t *p, const pawl_id_t *id) {
  pawl_job_t *j = NULL;
  CHECK_OK(pawl_get(p, id, &j));
  int s = j->state;
  pawl_job_free(j);
  return s;
}

static size_t claim_n(pawl_t *p, pawl_job_t ***out) {
  pawl_job_t **jobs = NULL;
  size_t n = 0;
  CHECK_OK(pawl_claim(p, NULL, 10, &jobs, &n));
  if (out)
    *out = jobs;
  else
    pawl_jobs_free(jobs, n);
  return n;
}

/* The last event of the job's history. */
static void check_last_event(pawl_t *p, const pawl_id_t *id, int from, int to,
                             const char *actor, const char *reason) {
  pawl_history_t *h = NULL;
  CHECK_OK(pawl_history(p, id, &h));
  CHECK(h->nevents > 0);
  const pawl_event_t *e = &h->events[h->nevents - 1];
  CHECK_INT(e->from_state, ==, from);
  CHECK_INT(e->to_state, ==, to);
  if (actor) CHECK_STR(e->actor, actor);
  if (reason) CHECK_STR(e->reason, reason);
  pawl_history_free(h);
}

static void deliver(const char *url, const char *decision) {
  pawl_t *p = open_db(url);
  pawl_id_t id = enq_sig(p, "approve-order-42", 0), got;
  CHECK_INT(state_of(p, &id), ==, PAWL_BLOCKED);
  CHECK_INT(claim_n(p, NULL), ==, 0); /* it waits */
  pawl_signal_info_t *sig = NULL;
  CHECK_OK(pawl_signal_get(p, &id, &sig));
  CHECK_STR(sig->key, "approve-order-42");
  CHECK_INT(sig->state, ==, PAWL_SIGNAL_WAITING);
  CHECK(sig->decision == NULL && sig->payload == NULL);
  CHECK_INT(sig->timeout_at, ==, 0);
  pawl_signal_free(sig);
  advance(5000);
  int status = -1;
  CHECK_OK(pawl_signal(p, "approve-order-42", decision,
                       "{\"note\":\"ok by me\"}", &got, &status));
  CHECK(same(&got, &id));
  CHECK_INT(status, ==, PAWL_SIG_DELIVERED);
  CHECK_INT(state_of(p, &id), ==, PAWL_PENDING);
  CHECK_OK(pawl_signal_get(p, &id, &sig));
  CHECK_INT(sig->state, ==, PAWL_SIGNAL_DELIVERED);
  CHECK_STR(sig->decision, decision);
  CHECK(strstr(sig->payload, "ok by me") != NULL);
  CHECK_STR(sig->delivered_by, "tester");
  CHECK_INT(sig->delivered_at, ==, T0 + 5000);
  pawl_signal_free(sig);
  char why[100];
  snprintf(why, sizeof why, "signal approve-order-42: %s", decision);
  check_last_event(p, &id, PAWL_BLOCKED, PAWL_PENDING, "tester", why);
  /* Either decision runs the job: its code decides what a reject means. */
  pawl_job_t **jobs = NULL;
  CHECK_INT(claim_n(p, &jobs), ==, 1);
  CHECK(same(&jobs[0]->id, &id));
  pawl_jobs_free(jobs, 1);
  pawl_close(p);
}

void contract_sig_approve(const char *url) { deliver(url, "approve"); }
void contract_sig_reject(const char *url) { deliver(url, "reject"); }

void contract_sig_double(const char *url) {
  pawl_t *p = open_db(url);
  pawl_id_t id = enq_sig(p, "k", 0), got;
  int status = -1;
  CHECK_OK(pawl_signal(p, "k", "approve", NULL, &got, &status));
  CHECK_INT(status, ==, PAWL_SIG_DELIVERED);
  pawl_job_t *before = NULL, *after = NULL;
  CHECK_OK(pawl_get(p, &id, &before));
  /* Again, and with another decision: nothing changes, and it says so. */
  status = -1;
  CHECK_OK(pawl_signal(p, "k", "reject", "{\"x\":1}", &got, &status));
  CHECK_INT(status, ==, PAWL_SIG_ALREADY);
  CHECK(same(&got, &id));
  CHECK_OK(pawl_get(p, &id, &after));
  CHECK_INT(after->version, ==, before->version);
  pawl_signal_info_t *sig = NULL;
  CHECK_OK(pawl_signal_get(p, &id, &sig));
  CHECK_STR(sig->decision, "approve");
  CHECK_STR(sig->payload, "{}");
  pawl_signal_free(sig);
  /* Also once the job has run and finished. */
  pawl_job_t **jobs = NULL;
  CHECK_INT(claim_n(p, &jobs), ==, 1);
  pawl_outcome_t o = {.id = jobs[0]->id, .attempt = jobs[0]->attempt,
                      .kind = PAWL_OUT_SUCCEEDED};
  CHECK_OK(pawl_finish(p, &o, 1, NULL));
  pawl_jobs_free(jobs, 1);
  CHECK_OK(pawl_signal(p, "k", "approve", NULL, NULL, &status));
  CHECK_INT(status, ==, PAWL_SIG_ALREADY);
  pawl_job_free(before);
  pawl_job_free(after);
  pawl_close(p);
}

void contract_sig_unknown_and_keys(const char *url) {
  pawl_t *p = open_db(url);
  pawl_id_t got;
  int status = -1;
  CHECK_INT(pawl_signal(p, "nobody", "approve", NULL, &got, &status), ==,
            PAWL_ENOTFOUND);
  CHECK(strstr(pawl_errmsg(p), "nobody") != NULL);
  CHECK_INT(status, ==, -1); /* untouched */
  pawl_id_t id = enq_sig(p, "k", 0);
  CHECK_INT(pawl_signal(p, "k", "maybe", NULL, NULL, NULL), ==, PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "approve or reject") != NULL);
  CHECK_INT(pawl_signal(p, "k", "approve", "{nope", NULL, NULL), ==,
            PAWL_EINVAL);
  CHECK_INT(pawl_signal(p, "", "approve", NULL, NULL, NULL), ==, PAWL_EINVAL);
  CHECK_INT(state_of(p, &id), ==, PAWL_BLOCKED);
  /* A key is unique among live jobs: refused, nothing enqueued. */
  pawl_enqueue_opts_t o;
  pawl_enqueue_opts_init(&o);
  o.signal = "k";
  pawl_id_t other;
  CHECK_INT(pawl_enqueue(p, "t", "{}", &o, &other, NULL), ==, PAWL_EKEY);
  CHECK(strstr(pawl_errmsg(p), "signal key \"k\" is held by live job") != NULL);
  CHECK_INT(count_jobs(p), ==, 1);
  /* Bad options: a timeout without a key, out of range. */
  pawl_enqueue_opts_init(&o);
  o.signal_timeout_ms = 1000;
  CHECK_INT(pawl_enqueue(p, "t", "{}", &o, NULL, NULL), ==, PAWL_EINVAL);
  o.signal = "k2";
  o.signal_timeout_ms = -1;
  CHECK_INT(pawl_enqueue(p, "t", "{}", &o, NULL, NULL), ==, PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "signal timeout") != NULL);
  /* Canceled while waiting: a delivery says so; the key is free again. */
  CHECK_OK(pawl_cancel(p, &id, NULL, NULL));
  CHECK_INT(pawl_signal(p, "k", "approve", NULL, NULL, NULL), ==, PAWL_ESTATE);
  CHECK(strstr(pawl_errmsg(p), "canceled") != NULL);
  pawl_id_t again = enq_sig(p, "k", 0);
  CHECK_OK(pawl_signal(p, "k", "approve", NULL, &got, &status));
  CHECK(same(&got, &again));
  CHECK_INT(status, ==, PAWL_SIG_DELIVERED);
  CHECK_INT(state_of(p, &id), ==, PAWL_CANCELED);
  /* A job without a signal has none to show. */
  pawl_id_t plain;
  CHECK_OK(pawl_enqueue(p, "t", "{}", NULL, &plain, NULL));
  pawl_signal_info_t *sig = NULL;
  CHECK_INT(pawl_signal_get(p, &plain, &sig), ==, PAWL_ENOTFOUND);
  pawl_close(p);
}

void contract_sig_timeout(const char *url) {
  pawl_t *p = open_db(url);
  pawl_id_t id = enq_sig(p, "late", 60000);
  pawl_id_t keep = enq_sig(p, "forever", 0);
  size_t n = 99;
  advance(59999);
  CHECK_OK(pawl_signal_expire(p, &n));
  CHECK_INT(n, ==, 0);
  CHECK_INT(state_of(p, &id), ==, PAWL_BLOCKED);
  advance(1);
  CHECK_OK(pawl_signal_expire(p, &n));
  CHECK_INT(n, ==, 1);
  pawl_job_t *j = NULL;
  CHECK_OK(pawl_get(p, &id, &j));
  CHECK_INT(j->state, ==, PAWL_FAILED);
  CHECK_STR(j->last_error, "wait timed out");
  pawl_job_free(j);
  check_last_event(p, &id, PAWL_BLOCKED, PAWL_FAILED, "timeout",
                   "signal late: no decision by 2027-01-15T08:01:00.000Z");
  pawl_signal_info_t *sig = NULL;
  CHECK_OK(pawl_signal_get(p, &id, &sig));
  CHECK_INT(sig->state, ==, PAWL_SIGNAL_EXPIRED);
  CHECK_INT(sig->timeout_at, ==, T0 + 60000);
  pawl_signal_free(sig);
  /* Expired: a decision now is refused naming the deadline that passed
   * (contract_sig_late); the key is free for a new job. */
  CHECK_INT(pawl_signal(p, "late", "approve", NULL, NULL, NULL), ==,
            PAWL_ESTATE);
  CHECK(strstr(pawl_errmsg(p), "deadline passed at 2027-01-15T08:01:00.000Z"));
  CHECK_INT(state_of(p, &id), ==, PAWL_FAILED);
  CHECK_OK(pawl_signal_expire(p, &n));
  CHECK_INT(n, ==, 0);
  advance(INT64_C(86400000) * 365);
  CHECK_OK(pawl_signal_expire(p, &n));
  CHECK_INT(n, ==, 0);
  CHECK_INT(state_of(p, &keep), ==, PAWL_BLOCKED);
  /* More than one batch at once. */
  char key[32];
  for (int i = 0; i < 130; i++) {
    snprintf(key, sizeof key, "many-%d", i);
    enq_sig(p, key, 1000);
  }
  advance(1000);
  CHECK_OK(pawl_signal_expire(p, &n));
  CHECK_INT(n, ==, 130);
  pawl_close(p);
}

/* A decision at or after the deadline is refused, whether or not an
 * expiry has run: the wait expires in the decision's transaction (the job
 * fails on its timeout, never runs) and the error names the job, the key
 * and the deadline. One millisecond before, it counts. */
void contract_sig_late(const char *url) {
  pawl_t *p = open_db(url);
  pawl_id_t on_time = enq_sig(p, "on-time", 60000);
  const char *late[2] = {"late-approve", "late-reject"};
  pawl_id_t ids[2];
  for (int i = 0; i < 2; i++) ids[i] = enq_sig(p, late[i], 60000);
  pawl_id_t gone = enq_sig(p, "canceled", 60000);
  CHECK_OK(pawl_cancel(p, &gone, NULL, NULL));
  advance(59999);
  pawl_id_t got;
  int status = 0;
  CHECK_OK(pawl_signal(p, "on-time", "approve", NULL, &got, &status));
  CHECK(same(&got, &on_time));
  CHECK_INT(status, ==, PAWL_SIG_DELIVERED);
  CHECK_INT(state_of(p, &on_time), ==, PAWL_PENDING);
  advance(1);
  for (int i = 0; i < 2; i++) {
    const char *decision = i ? "reject" : "approve";
    char text[PAWL_ID_STRLEN], want[300];
    pawl_id_format(&ids[i], text);
    snprintf(want, sizeof want,
             "job %s: signal \"%s\" refused: its deadline passed at "
             "2027-01-15T08:01:00.000Z; the wait timed out (the job is "
             "failed)",
             text, late[i]);
    CHECK_INT(pawl_signal(p, late[i], decision, "{\"n\":1}", NULL, NULL), ==,
              PAWL_ESTATE);
    CHECK_STR(pawl_errmsg(p), want);
    CHECK_INT(state_of(p, &ids[i]), ==, PAWL_FAILED);
    char why[100];
    snprintf(why, sizeof why,
             "signal %s: no decision by 2027-01-15T08:01:00.000Z", late[i]);
    check_last_event(p, &ids[i], PAWL_BLOCKED, PAWL_FAILED, "timeout", why);
    pawl_signal_info_t *sig = NULL;
    CHECK_OK(pawl_signal_get(p, &ids[i], &sig));
    CHECK_INT(sig->state, ==, PAWL_SIGNAL_EXPIRED);
    CHECK(sig->decision == NULL);
    pawl_signal_free(sig);
    /* Again: the same refusal, and nothing more written. */
    CHECK_INT(pawl_signal(p, late[i], "approve", NULL, NULL, NULL), ==,
              PAWL_ESTATE);
    CHECK_STR(pawl_errmsg(p), want);
  }
  /* A canceled job's wait is not expired by a late decision: it says the
   * job no longer waits. */
  CHECK_INT(pawl_signal(p, "canceled", "approve", NULL, NULL, NULL), ==,
            PAWL_ESTATE);
  CHECK(strstr(pawl_errmsg(p), "it is canceled") != NULL);
  CHECK_INT(state_of(p, &gone), ==, PAWL_CANCELED);
  /* The expiry finds only the canceled job's wait left (its job keeps
   * its state). */
  size_t n = 99;
  CHECK_OK(pawl_signal_expire(p, &n));
  CHECK_INT(n, ==, 1);
  CHECK_INT(pawl_signal(p, "canceled", "approve", NULL, NULL, NULL), ==,
            PAWL_ESTATE);
  CHECK(strstr(pawl_errmsg(p), "deadline passed at 2027-01-15T08:01:00.000Z; "
                               "the wait timed out (the job is canceled)"));
  CHECK_INT(state_of(p, &gone), ==, PAWL_CANCELED);
  /* The key of the job that timed out is free for a new one. */
  pawl_id_t again = enq_sig(p, "late-approve", 0);
  CHECK_OK(pawl_signal(p, "late-approve", "approve", NULL, &got, &status));
  CHECK(same(&got, &again));
  CHECK_INT(state_of(p, &ids[0]), ==, PAWL_FAILED);
  pawl_close(p);
}

void contract_replace_pending(const char *url) {
  pawl_t *p = open_db(url);
  pawl_enqueue_opts_t o;
  pawl_enqueue_opts_init(&o);
  o.business_key = "order-7";
  o.priority = 3;
  o.queue = "mail";
  o.idempotency_key = "idem-7";
  const char *tags[] = {"a", "b"};
  o.tags = tags;
  o.ntags = 2;
  pawl_id_t old, nid;
  CHECK_OK(pawl_enqueue(p, "t", "{\"v\":1}", &o, &old, NULL));
  advance(1000);
  pawl_replace_opts_t r;
  pawl_replace_opts_init(&r);
  r.payload = "{\"v\":2}";
  r.set_priority = 1;
  r.priority = 9;
  r.reason = "typo";
  CHECK_OK(pawl_replace(p, &old, &r, &nid));
  CHECK(!same(&old, &nid));
  pawl_job_t *a = NULL, *b = NULL;
  CHECK_OK(pawl_get(p, &old, &a));
  CHECK_OK(pawl_get(p, &nid, &b));
  CHECK_INT(a->state, ==, PAWL_CANCELED);
  CHECK_INT(b->state, ==, PAWL_PENDING);
  CHECK_STR(b->type, "t");
  CHECK_STR(b->queue, "mail");
  CHECK_INT(b->priority, ==, 9);
  CHECK(strstr(b->payload, "2") != NULL);
  CHECK_STR(b->business_key, "order-7"); /* taken over */
  CHECK(b->idempotency_key == NULL);     /* the old job's for ever */
  CHECK(strstr(b->tags, "\"a\"") && strstr(b->tags, "\"b\""));
  pawl_job_free(a);
  pawl_job_free(b);
  char text[PAWL_ID_STRLEN], why[200];
  pawl_id_format(&nid, text);
  snprintf(why, sizeof why, "replaced by %s: typo", text);
  check_last_event(p, &old, PAWL_PENDING, PAWL_CANCELED, "tester", why);
  pawl_replace_links_t l;
  CHECK_OK(pawl_replace_links(p, &old, &l));
  CHECK(l.has_superseded_by && same(&l.superseded_by, &nid));
  CHECK(!l.has_supersedes);
  CHECK_OK(pawl_replace_links(p, &nid, &l));
  CHECK(l.has_supersedes && same(&l.supersedes, &old));
  CHECK(!l.has_superseded_by);
  /* Replaced once only: the message names the replacement. */
  CHECK_INT(pawl_replace(p, &old, NULL, NULL), ==, PAWL_ESTATE);
  CHECK(strstr(pawl_errmsg(p), text) != NULL);
  /* The business key moved: another job with it is refused. */
  pawl_enqueue_opts_init(&o);
  o.business_key = "order-7";
  CHECK_INT(pawl_enqueue(p, "t", "{}", &o, NULL, NULL), ==, PAWL_EKEY);
  /* Bad input, unknown job: refused, nothing enqueued. */
  pawl_replace_opts_init(&r);
  r.payload = "{bad";
  CHECK_INT(pawl_replace(p, &nid, &r, NULL), ==, PAWL_EINVAL);
  pawl_replace_opts_init(&r);
  r.set_priority = 1;
  r.priority = PAWL_PRIORITY_MAX + 1;
  CHECK_INT(pawl_replace(p, &nid, &r, NULL), ==, PAWL_EINVAL);
  pawl_id_t none;
  pawl_id_new(&none);
  CHECK_INT(pawl_replace(p, &none, NULL, NULL), ==, PAWL_ENOTFOUND);
  CHECK_INT(pawl_replace_links(p, &none, &l), ==, PAWL_ENOTFOUND);
  CHECK_INT(state_of(p, &nid), ==, PAWL_PENDING);
  CHECK_INT(count_jobs(p), ==, 2);
  pawl_close(p);
}

void contract_replace_running(const char *url) {
  pawl_t *p = open_db(url);
  pawl_id_t old, nid;
  CHECK_OK(pawl_enqueue(p, "t", "{\"v\":1}", NULL, &old, NULL));
  pawl_job_t **jobs = NULL;
  CHECK_INT(claim_n(p, &jobs), ==, 1);
  CHECK_INT(state_of(p, &old), ==, PAWL_RUNNING);
  pawl_replace_opts_t r;
  pawl_replace_opts_init(&r);
  r.payload = "{\"v\":2}";
  CHECK_OK(pawl_replace(p, &old, &r, &nid));
  /* The running attempt is canceled as pawl_cancel() cancels it: its
   * outcome, when it comes, is not stored. */
  CHECK_INT(state_of(p, &old), ==, PAWL_CANCELED);
  pawl_outcome_t o = {.id = old, .attempt = jobs[0]->attempt,
                      .kind = PAWL_OUT_SUCCEEDED};
  int rcs = 0;
  CHECK_OK(pawl_finish(p, &o, 1, &rcs));
  CHECK_INT(rcs, ==, PAWL_ELEASE);
  CHECK_INT(state_of(p, &old), ==, PAWL_CANCELED);
  pawl_jobs_free(jobs, 1);
  pawl_history_t *h = NULL;
  CHECK_OK(pawl_history(p, &old, &h));
  CHECK(h->nattempts >= 1);
  CHECK_STR(h->attempts[h->nattempts - 1].outcome, "canceled");
  pawl_history_free(h);
  CHECK_INT(claim_n(p, &jobs), ==, 1);
  CHECK(same(&jobs[0]->id, &nid));
  CHECK(strstr(jobs[0]->payload, "2") != NULL);
  pawl_jobs_free(jobs, 1);
  pawl_close(p);
}

/* Replace raced: the old job changes between the read pawl_replace()
 * makes and its transaction (a claim by another worker, which happens
 * when a job replaces its own replacement, due at once). The store's
 * jobs.get is wrapped so that each read is followed by a change made
 * through a second handle: the replace reads again and decides anew, and
 * gives up, naming the job, only when the job keeps changing. */
static const struct store_ops *race_real;
static pawl_t *race_other;
static int race_changes; /* how many reads are followed by a change */
static int race_reads;

static int race_get(store_t *st, const pawl_id_t *id, pawl_job_t **out) {
  int rc = race_real->jobs.get(st, id, out);
  if (rc || race_reads++ >= race_changes) return rc;
  pawl_job_t *j = NULL;
  if (race_changes == 1) {
    /* Another worker claims it. */
    pawl_job_t **jobs = NULL;
    size_t n = 0;
    CHECK_OK(pawl_claim(race_other, NULL, 1, &jobs, &n));
    CHECK_INT((int)n, ==, 1);
    pawl_jobs_free(jobs, n);
  } else if ((*out)->state == PAWL_PAUSED) {
    CHECK_OK(pawl_resume(race_other, id, "raced", &j));
  } else {
    CHECK_OK(pawl_pause(race_other, id, "raced", &j));
  }
  pawl_job_free(j);
  return 0;
}

void contract_replace_raced(const char *url) {
  pawl_t *p = open_db(url);
  race_other = unit_open_clocked(url, "node-b", &sr_now, 10000);
  struct store_ops ops = *p->store->ops;
  race_real = p->store->ops;
  ops.jobs.get = race_get;
  p->store->ops = &ops;

  /* Claimed after the read: the running job is replaced. */
  pawl_id_t old, nid;
  CHECK_OK(pawl_enqueue(p, "t", "{\"v\":1}", NULL, &old, NULL));
  race_reads = 0;
  race_changes = 1;
  pawl_replace_opts_t r;
  pawl_replace_opts_init(&r);
  r.payload = "{\"v\":2}";
  CHECK_OK(pawl_replace(p, &old, &r, &nid));
  CHECK_INT(race_reads, ==, 2);
  CHECK_INT(state_of(p, &old), ==, PAWL_CANCELED);
  CHECK_INT(state_of(p, &nid), ==, PAWL_PENDING);
  CHECK_INT((int)count_jobs(p), ==, 2);

  /* Paused and resumed after every read: refused, nothing written. */
  race_reads = 0;
  race_changes = 1000;
  pawl_id_t nid2;
  CHECK_INT(pawl_replace(p, &nid, &r, &nid2), ==, PAWL_ECONFLICT);
  CHECK(strstr(pawl_errmsg(p), "changed meanwhile; try again") != NULL);
  CHECK(race_reads > 1);
  CHECK((int)count_jobs(p) == 2);
  pawl_replace_links_t l;
  CHECK_OK(pawl_replace_links(p, &nid, &l));
  CHECK_INT(l.has_superseded_by, ==, 0);

  p->store->ops = race_real;
  pawl_close(race_other);
  pawl_close(p);
}

void contract_replace_terminal(const char *url) {
  pawl_t *p = open_db(url);
  pawl_id_t ok, bad, nid;
  CHECK_OK(pawl_enqueue(p, "ok", "{}", NULL, &ok, NULL));
  pawl_enqueue_opts_t eo;
  pawl_enqueue_opts_init(&eo);
  eo.priority = -5; /* claimed second */
  CHECK_OK(pawl_enqueue(p, "bad", "{}", &eo, &bad, NULL));
  pawl_job_t **jobs = NULL;
  CHECK_INT(claim_n(p, &jobs), ==, 2);
  pawl_outcome_t o[2] = {
      {.id = jobs[0]->id, .attempt = jobs[0]->attempt,
       .kind = PAWL_OUT_SUCCEEDED},
      {.id = jobs[1]->id, .attempt = jobs[1]->attempt, .kind = PAWL_OUT_FAILED,
       .error = "boom"}};
  CHECK(same(&jobs[0]->id, &ok));
  CHECK_OK(pawl_finish(p, o, 2, NULL));
  pawl_jobs_free(jobs, 2);
  /* Succeeded: nothing to replace. */
  CHECK_INT(pawl_replace(p, &ok, NULL, &nid), ==, PAWL_ESTATE);
  CHECK(strstr(pawl_errmsg(p), "succeeded") != NULL);
  /* Failed: a retry with changes; the old job stays failed, linked. */
  pawl_replace_opts_t r;
  pawl_replace_opts_init(&r);
  r.payload = "{\"fixed\":true}";
  CHECK_OK(pawl_replace(p, &bad, &r, &nid));
  CHECK_INT(state_of(p, &bad), ==, PAWL_FAILED);
  CHECK_INT(state_of(p, &nid), ==, PAWL_PENDING);
  pawl_replace_links_t l;
  CHECK_OK(pawl_replace_links(p, &bad, &l));
  CHECK(l.has_superseded_by && same(&l.superseded_by, &nid));
  pawl_close(p);
}

void contract_replace_signal_wait(const char *url) {
  pawl_t *p = open_db(url);
  pawl_id_t old = enq_sig(p, "approve-9", 60000), nid, got;
  advance(10000);
  pawl_replace_opts_t r;
  pawl_replace_opts_init(&r);
  r.payload = "{\"order\":9}";
  CHECK_OK(pawl_replace(p, &old, &r, &nid));
  CHECK_INT(state_of(p, &old), ==, PAWL_CANCELED);
  CHECK_INT(state_of(p, &nid), ==, PAWL_BLOCKED);
  /* The wait moved over, with the same deadline. */
  pawl_signal_info_t *sig = NULL;
  CHECK_OK(pawl_signal_get(p, &nid, &sig));
  CHECK_STR(sig->key, "approve-9");
  CHECK_INT(sig->timeout_at, ==, T0 + 60000);
  pawl_signal_free(sig);
  int status = -1;
  CHECK_OK(pawl_signal(p, "approve-9", "approve", NULL, &got, &status));
  CHECK(same(&got, &nid));
  CHECK_INT(state_of(p, &nid), ==, PAWL_PENDING);
  pawl_close(p);
}

/* Replace with limits (found when they were merged): the replacement holds a
 * permit of the old job's resource, so a replace cannot slip a job out
 * from under its limit. */
static int64_t running_of(pawl_t *p, const char *name) {
  pawl_limit_t *l = NULL;
  size_t n = 0;
  CHECK_OK(pawl_limits(p, &l, &n));
  int64_t r = -1;
  for (size_t i = 0; i < n; i++)
    if (strcmp(l[i].name, name) == 0) r = l[i].running;
  pawl_limits_free(l, n);
  return r;
}

void contract_replace_keeps_resource(const char *url) {
  pawl_t *p = open_db(url);
  CHECK_OK(pawl_limit_set(p, "smtp", 1, 0, 0));
  pawl_enqueue_opts_t o;
  pawl_enqueue_opts_init(&o);
  o.resource = "smtp";
  pawl_id_t old, nid, other;
  CHECK_OK(pawl_enqueue(p, "t", "{\"v\":1}", &o, &old, NULL));
  pawl_replace_opts_t r;
  pawl_replace_opts_init(&r);
  r.payload = "{\"v\":2}";
  CHECK_OK(pawl_replace(p, &old, &r, &nid));
  advance(1000);
  CHECK_OK(pawl_enqueue(p, "t", "{\"v\":3}", &o, &other, NULL));
  pawl_job_t **jobs = NULL;
  CHECK_INT(claim_n(p, &jobs), ==, 1); /* one permit: one of the two */
  CHECK(same(&jobs[0]->id, &nid));
  pawl_jobs_free(jobs, 1);
  CHECK_INT(running_of(p, "smtp"), ==, 1);
  CHECK_INT(claim_n(p, NULL), ==, 0); /* the other waits for the permit */
  CHECK_INT(state_of(p, &other), ==, PAWL_PENDING);
  pawl_close(p);
}
