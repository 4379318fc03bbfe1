/* store_contract_authority.c: job code acts only on the jobs it enqueued
 * unless granted, decided by the store on the row it reads in the
 * action's transaction (the store ops called with an `owner`, and the API
 * with pawl__act_as as the worker uses it); the host's lock names are not
 * the API's to take; names, keys and reasons are bounded as the CLI's are.
 * Each refusal is checked to change nothing. */
#include <stdatomic.h>
#include <string.h>

#include "handle.h"
#include "pawl.h"
#include "pawl_internal.h"
#include "store_contract_authority.h"
#include "unit.h"
#include "unit_pawl.h"

#define T0 INT64_C(1800000000000)

static _Atomic int64_t au_now = T0;

static pawl_t *open_db(const char *url) {
  atomic_store(&au_now, T0);
  return unit_open_clocked(url, "node-a", &au_now, 10000);
}

/* A job of type `type` enqueued by `by`, waiting for signal `key` when
 * one is given, else due in an hour. */
static pawl_id_t enq_by(pawl_t *p, const char *type, const char *by,
                        const char *key) {
  pawl_enqueue_opts_t o;
  pawl_enqueue_opts_init(&o);
  o.enqueued_by = by;
  o.signal = key;
  if (!key) o.delay_ms = 3600000;
  pawl_id_t id;
  if (pawl_enqueue(p, type, "{\"amount\":10}", &o, &id, NULL))
    unit_fail(__FILE__, __LINE__, "enqueue: %s", pawl_errmsg(p));
  return id;
}

static int count_cb(const pawl_job_t *j, void *data) {
  (void)j;
  ++*(int64_t *)data;
  return 0;
}

static int64_t count_jobs(pawl_t *p) {
  pawl_filter_t f;
  pawl_filter_init(&f);
  f.limit = 1000;
  int64_t n = 0;
  CHECK_OK(pawl_list(p, &f, count_cb, &n));
  return n;
}

static pawl_job_t *get(pawl_t *p, const pawl_id_t *id) {
  pawl_job_t *j = NULL;
  CHECK_OK(pawl_get(p, id, &j));
  return j;
}

static int64_t nevents(pawl_t *p, const pawl_id_t *id) {
  pawl_history_t *h = NULL;
  CHECK_OK(pawl_history(p, id, &h));
  int64_t n = (int64_t)h->nevents;
  pawl_history_free(h);
  return n;
}

static void check_last_actor(pawl_t *p, const pawl_id_t *id,
                             const char *actor) {
  pawl_history_t *h = NULL;
  CHECK_OK(pawl_history(p, id, &h));
  CHECK(h->nevents > 0);
  CHECK_STR(h->events[h->nevents - 1].actor, actor);
  pawl_history_free(h);
}

static void check_waiting(pawl_t *p, const pawl_id_t *id) {
  pawl_job_t *j = get(p, id);
  CHECK_INT(j->state, ==, PAWL_BLOCKED);
  pawl_job_free(j);
  pawl_signal_info_t *sig = NULL;
  CHECK_OK(pawl_signal_get(p, id, &sig));
  CHECK_INT(sig->state, ==, PAWL_SIGNAL_WAITING);
  CHECK(sig->decision == NULL && sig->delivered_by == NULL);
  pawl_signal_free(sig);
}

static const pawl__actor_t JOB_B = {
    .name = "job:b (attacker)", .owner = "job:b", .grants = 0};

void contract_auth_signal_owner(const char *url) {
  pawl_t *p = open_db(url);
  pawl_id_t mine = enq_by(p, "gate", "job:a", "k-a");
  pawl_id_t theirs = enq_by(p, "gate", "tester", "k-op");
  int64_t before = nevents(p, &mine);
  /* The store: a deliverer that must own the row's job. */
  pawl_id_t got;
  int already = -1;
  store_t *st = p->store;
  CHECK_INT(st->ops->flow.deliver(st, "k-a", "approve", "{}", "job:b (x)",
                                  "job:b", &got, &already),
            ==, PAWL_EPERM);
  CHECK(strstr(st->errmsg, "was enqueued by job:a, not by job:b") != NULL);
  CHECK(strstr(st->errmsg, "(gate)") != NULL);
  check_waiting(p, &mine);
  CHECK_INT(nevents(p, &mine), ==, before);
  /* Even a row delivered before is refused, not reported "already". */
  CHECK_INT(st->ops->flow.deliver(st, "k-op", "approve", "{}", "job:b (x)",
                                  "job:b", &got, &already),
            ==, PAWL_EPERM);
  check_waiting(p, &theirs);
  /* Through the API as the worker acts: refused without the grant... */
  pawl__act_as(p, &JOB_B);
  int status = -1;
  CHECK_INT(pawl_signal(p, "k-op", "approve", NULL, &got, &status), ==,
            PAWL_EPERM);
  CHECK(strstr(pawl_errmsg(p), "was enqueued by tester, not by job:b") != NULL);
  check_waiting(p, &theirs);
  /* ... allowed with it, recorded as the job. */
  pawl__actor_t granted = JOB_B;
  granted.grants = PAWL__GRANT_SIGNAL;
  pawl__act_as(p, &granted);
  CHECK_OK(pawl_signal(p, "k-op", "approve", NULL, &got, &status));
  pawl__act_as(p, NULL);
  CHECK_INT(status, ==, PAWL_SIG_DELIVERED);
  pawl_signal_info_t *sig = NULL;
  CHECK_OK(pawl_signal_get(p, &theirs, &sig));
  CHECK_STR(sig->delivered_by, "job:b (attacker)");
  pawl_signal_free(sig);
  check_last_actor(p, &theirs, "job:b (attacker)");
  /* The owner may, without a grant. */
  CHECK_OK(st->ops->flow.deliver(st, "k-a", "reject", "{}", "job:a (p)",
                                 "job:a", &got, &already));
  CHECK_INT(already, ==, 0);
  check_last_actor(p, &mine, "job:a (p)");
  /* The handle is the operator's again. */
  pawl_id_t op = enq_by(p, "gate", "job:a", "k-a2");
  CHECK_OK(pawl_signal(p, "k-a2", "approve", NULL, &got, &status));
  check_last_actor(p, &op, "tester");
  pawl_close(p);
}

void contract_auth_replace_owner(const char *url) {
  pawl_t *p = open_db(url);
  pawl_id_t theirs = enq_by(p, "victim", "tester", NULL);
  pawl_id_t mine = enq_by(p, "victim", "job:b", NULL);
  int64_t n = count_jobs(p);
  pawl_job_t *old = get(p, &theirs);
  /* The store: a replacement whose owner does not match changes nothing. */
  store_new_job_t nj;
  memset(&nj, 0, sizeof nj);
  pawl_id_new(&nj.id);
  nj.type = "victim";
  nj.queue = "default";
  nj.payload = "{\"amount\":1e9}";
  nj.tags = "[]";
  store_replace_t r = {.old_id = &theirs,
                       .expect_version = old->version,
                       .job = &nj,
                       .actor = "job:b (x)",
                       .reason = "replaced",
                       .owner = "job:b"};
  CHECK_INT(p->store->ops->flow.replace(p->store, &r), ==, PAWL_EPERM);
  CHECK(strstr(p->store->errmsg, "(victim) was enqueued by tester, not by "
                                 "job:b") != NULL);
  pawl_job_free(old);
  CHECK_INT(count_jobs(p), ==, n);
  old = get(p, &theirs);
  CHECK_INT(old->state, ==, PAWL_PENDING);
  CHECK(strstr(old->payload, "10") != NULL);
  pawl_job_free(old);
  pawl_replace_links_t l;
  CHECK_OK(pawl_replace_links(p, &theirs, &l));
  CHECK(!l.has_superseded_by);
  /* Through the API as the worker acts. */
  pawl_replace_opts_t o;
  pawl_replace_opts_init(&o);
  o.payload = "{\"amount\":1e9}";
  pawl_id_t nid;
  pawl__act_as(p, &JOB_B);
  CHECK_INT(pawl_replace(p, &theirs, &o, &nid), ==, PAWL_EPERM);
  CHECK_INT(count_jobs(p), ==, n);
  /* Its own: replaced, the cancel recorded as the job, the replacement
   * its own again. */
  CHECK_OK(pawl_replace(p, &mine, &o, &nid));
  pawl__act_as(p, NULL);
  old = get(p, &mine);
  CHECK_INT(old->state, ==, PAWL_CANCELED);
  pawl_job_free(old);
  check_last_actor(p, &mine, "job:b (attacker)");
  pawl_job_t *nj2 = get(p, &nid);
  CHECK_STR(nj2->enqueued_by, "job:b");
  pawl_job_free(nj2);
  /* With the grant: any job. */
  pawl__actor_t granted = JOB_B;
  granted.grants = PAWL__GRANT_REPLACE;
  pawl__act_as(p, &granted);
  CHECK_OK(pawl_replace(p, &theirs, &o, &nid));
  pawl__act_as(p, NULL);
  check_last_actor(p, &theirs, "job:b (attacker)");
  pawl_close(p);
}

void contract_auth_transition_owner(const char *url) {
  pawl_t *p = open_db(url);
  pawl_id_t id = enq_by(p, "victim", "job:a", NULL);
  store_t *st = p->store;
  CHECK_INT(st->ops->control.transition(st, &id, STORE_OP_CANCEL, "job:b (x)",
                                        "job:b", "mine now", NULL),
            ==, PAWL_EPERM);
  pawl_job_t *j = get(p, &id);
  CHECK_INT(j->state, ==, PAWL_PENDING);
  pawl_job_free(j);
  CHECK_OK(st->ops->control.transition(st, &id, STORE_OP_CANCEL, "job:a (p)",
                                       "job:a", "done with it", NULL));
  j = get(p, &id);
  CHECK_INT(j->state, ==, PAWL_CANCELED);
  pawl_job_free(j);
  check_last_actor(p, &id, "job:a (p)");
  /* A manual retry (the path of a restart) as a job without the grant. */
  pawl__act_as(p, &JOB_B);
  CHECK_INT(pawl_retry(p, &id, NULL, NULL), ==, PAWL_EPERM);
  pawl__act_as(p, NULL);
  j = get(p, &id);
  CHECK_INT(j->state, ==, PAWL_CANCELED);
  pawl_job_free(j);
  pawl_close(p);
}

void contract_auth_host_locks(const char *url) {
  pawl_t *p = open_db(url);
  static const char *const reserved[] = {
      "pawl.recover", "PAWL.RECOVER", "Pawl.Recurring", " pawl.retention",
      "pawl.", "pawl.anything"};
  for (size_t i = 0; i < sizeof reserved / sizeof *reserved; i++) {
    int got = -1;
    CHECK_INT(pawl_lock_acquire(p, reserved[i], "me", 60000, &got), ==,
              PAWL_EINVAL);
    CHECK_INT(got, ==, 0);
    CHECK(strstr(pawl_errmsg(p), "is reserved") != NULL);
    int held = -1;
    CHECK_INT(pawl_lock_extend(p, reserved[i], "me", 60000, &held), ==,
              PAWL_EINVAL);
    CHECK_INT(pawl_lock_release(p, reserved[i], "me"), ==, PAWL_EINVAL);
  }
  /* Names that only look alike elsewhere are names like any other. */
  int got = 0;
  CHECK_OK(pawl_lock_acquire(p, "pawl-recover", "me", 60000, &got));
  CHECK_INT(got, ==, 1);
  CHECK_OK(pawl_lock_acquire(p, "my.pawl.recover", "me", 60000, &got));
  CHECK_INT(got, ==, 1);
  /* Control characters and length, as every name. */
  CHECK_INT(pawl_lock_acquire(p, "a\nb", "me", 60000, &got), ==, PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "lock name contains a control character"));
  char long_name[202];
  memset(long_name, 'x', 201);
  long_name[201] = 0;
  CHECK_INT(pawl_lock_acquire(p, long_name, "me", 60000, &got), ==,
            PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "lock name is longer than 200 bytes (got 201)"));
  /* The host's own recovery lock is still the host's to take. */
  CHECK_OK(pawl__recover_lock(p, &got));
  CHECK_INT(got, ==, 1);
  CHECK_OK(pawl__recover_unlock(p));
  pawl_close(p);
}

void contract_auth_input_bounds(const char *url) {
  pawl_t *p = open_db(url);
  char long_text[1002];
  memset(long_text, 'x', 1001);
  long_text[1001] = 0;
  char name201[202];
  memcpy(name201, long_text, 201);
  name201[201] = 0;
  struct {
    const char *field, *value, *message;
  } cases[] = {
      {"correlation_id", name201, "correlation id is longer than 200 bytes (got 201)"},
      {"correlation_id", "a\x01b", "correlation id contains a control character"},
      {"correlation_id", "\xff\xfe", "correlation id is not valid UTF-8 (at byte 1)"},
      {"idempotency_key", name201, "idempotency key is longer than 200 bytes"},
      {"idempotency_key", "k\tk", "idempotency key contains a control character"},
      {"idempotency_key", "", "idempotency key must not be empty"},
      {"business_key", name201, "business key is longer than 200 bytes"},
      {"business_key", "b\x7f", "business key contains a control character"},
      {"enqueued_by", "job:\x01none", "enqueued_by contains a control character"},
      {"queue", "q\xc3", "queue name is not valid UTF-8"},
  };
  int64_t n = count_jobs(p);
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    pawl_enqueue_opts_t o;
    pawl_enqueue_opts_init(&o);
    const char *f = cases[i].field;
    if (!strcmp(f, "correlation_id")) o.correlation_id = cases[i].value;
    if (!strcmp(f, "idempotency_key")) o.idempotency_key = cases[i].value;
    if (!strcmp(f, "business_key")) o.business_key = cases[i].value;
    if (!strcmp(f, "enqueued_by")) o.enqueued_by = cases[i].value;
    if (!strcmp(f, "queue")) o.queue = cases[i].value;
    pawl_id_t id;
    CHECK_INT(pawl_enqueue(p, "t", "{}", &o, &id, NULL), ==, PAWL_EINVAL);
    if (!strstr(pawl_errmsg(p), cases[i].message))
      unit_fail(__FILE__, __LINE__, "case %zu: %s", i, pawl_errmsg(p));
  }
  CHECK_INT(count_jobs(p), ==, n);
  /* 200 bytes is within the bound. */
  pawl_enqueue_opts_t o;
  pawl_enqueue_opts_init(&o);
  name201[200] = 0;
  o.correlation_id = name201;
  pawl_id_t id;
  CHECK_OK(pawl_enqueue(p, "t", "{}", &o, &id, NULL));
  /* Reasons: 1000 bytes, no control characters. */
  CHECK_INT(pawl_cancel(p, &id, long_text, NULL), ==, PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "reason is longer than 1000 bytes (got 1001)"));
  CHECK_INT(pawl_cancel(p, &id, "a\nb", NULL), ==, PAWL_EINVAL);
  pawl_filter_t f;
  pawl_filter_init(&f);
  f.type = "t";
  pawl_bulk_result_t br;
  CHECK_INT(pawl_bulk(p, PAWL_ACTION_CANCEL, &f, long_text, &br), ==,
            PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "reason is longer than 1000 bytes (got 1001)"));
  pawl_replace_opts_t ro;
  pawl_replace_opts_init(&ro);
  ro.reason = long_text;
  pawl_id_t nid;
  CHECK_INT(pawl_replace(p, &id, &ro, &nid), ==, PAWL_EINVAL);
  pawl_job_t *j = get(p, &id);
  CHECK_INT(j->state, ==, PAWL_PENDING);
  pawl_job_free(j);
  pawl_close(p);
}
