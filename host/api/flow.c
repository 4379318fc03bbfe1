/* flow.c: signals and replace (docs/flows.md "Signals and replace"),
 * the public functions over store_ops.flow. This layer checks input and
 * builds the replacement from the old job; the store does each change in
 * one transaction. */
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "buf.h"
#include "handle.h"
#include "json.h"
#include "pawl.h"
#include "pawl_internal.h"
#include "store.h"

/* Jobs a sweep expires per transaction. */
#define FLOW_EXPIRE_BATCH 100

int pawl_signal(pawl_t *p, const char *key, const char *decision,
                const char *payload, pawl_id_t *out_job, int *out_status) {
  PAWL__CHECK(p);
  p->errmsg[0] = 0;
  int rc = pawl__check_name(p, "signal key", key);
  if (rc) return rc;
  if (!decision || (strcmp(decision, "approve") != 0 &&
                    strcmp(decision, "reject") != 0))
    return pawl__fail(p, PAWL_EINVAL,
                      "decision must be approve or reject (got %s)",
                      decision ? decision : "none");
  if (!payload) payload = "{}";
  char err[256];
  size_t plen = strlen(payload);
  if (plen > PAWL_PAYLOAD_MAX)
    return pawl__fail(p, PAWL_EINVAL,
                      "signal payload is %zu bytes; at most %d (16 MiB): put "
                      "the data elsewhere and a reference to it in the "
                      "signal", plen, PAWL_PAYLOAD_MAX);
  if (pawl__json_validate(payload, plen, err, sizeof err) != 0)
    return pawl__fail(p, PAWL_EINVAL, "signal payload is not valid JSON: %s",
                      err);
  pawl_id_t job;
  int already = 0;
  rc = pawl__from_store(p, p->store->ops->flow.deliver(
                               p->store, key, decision, payload,
                               pawl__actor_name(p),
                               pawl__actor_owner(p, PAWL__GRANT_SIGNAL), &job,
                               &already));
  if (rc) return rc;
  /* The job is pending now: a host on this handle claims it at once. */
  if (!already) pawl__wake(p);
  if (out_job) *out_job = job;
  if (out_status) *out_status = already ? PAWL_SIG_ALREADY : PAWL_SIG_DELIVERED;
  return 0;
}

int pawl_signal_get(pawl_t *p, const pawl_id_t *id, pawl_signal_info_t **out) {
  PAWL__CHECK(p);
  p->errmsg[0] = 0;
  return pawl__from_store(p, p->store->ops->flow.get(p->store, id, out));
}

int pawl_signal_expire(pawl_t *p, size_t *out_n) {
  PAWL__CHECK(p);
  p->errmsg[0] = 0;
  size_t total = 0, n;
  int rc;
  do {
    n = 0;
    rc = pawl__from_store(p, p->store->ops->flow.expire(
                                 p->store, FLOW_EXPIRE_BATCH, &n));
    total += n;
  } while (!rc && n == FLOW_EXPIRE_BATCH);
  if (!rc && out_n) *out_n = total;
  return rc;
}

int pawl__signal_next_deadline(pawl_t *p, int64_t *at) {
  p->errmsg[0] = 0;
  *at = 0;
  return pawl__from_store(p, p->store->ops->flow.next_deadline(p->store, at));
}

void pawl_replace_opts_init(pawl_replace_opts_t *o) { memset(o, 0, sizeof *o); }

/* How many times pawl_replace() reads the old job again when it changed
 * between the read and the replace's transaction. The usual change is
 * the host's own: a replacement due at once is claimed by another worker
 * while its enqueuer goes on to replace it again. */
#define FLOW_REPLACE_ROUNDS 5

/* One try of pawl_replace(): the old job read, the replacement built from
 * it, and the store's transaction, which refuses the old job if its
 * version is no longer the one read (PAWL_ECONFLICT). */
static int flow_replace_once(pawl_t *p, const pawl_id_t *id,
                             const pawl_replace_opts_t *o, const char *owner,
                             pawl_id_t *out_new) {
  pawl_job_t *old = NULL;
  int rc = pawl_get(p, id, &old);
  if (rc) return rc;
  /* Job code without the grant: a job it did not enqueue is refused before
   * anything else is said of it (the store decides again, on the row its
   * transaction reads). */
  if ((rc = pawl__from_store(p, pawl__store_owner_check(
                                    p->store, id, old->type, old->enqueued_by,
                                    owner)))) {
    pawl_job_free(old);
    return rc;
  }
  char text[PAWL_ID_STRLEN];
  pawl_id_format(id, text);
  if (old->state == PAWL_SUCCEEDED) {
    pawl_job_free(old);
    return pawl__fail(p, PAWL_ESTATE,
                      "job %s succeeded: there is nothing to replace "
                      "(enqueue a new job)",
                      text);
  }
  /* A wait for a signal goes over to the replacement, unless it is over. */
  pawl_signal_info_t *sig = NULL;
  if (old->state == PAWL_BLOCKED) {
    rc = pawl_signal_get(p, id, &sig);
    if (rc == PAWL_ENOTFOUND) rc = 0;
    if (!rc && sig && sig->state != PAWL_SIGNAL_WAITING) {
      pawl_signal_free(sig);
      sig = NULL;
    }
  }
  pawl_enqueue_opts_t eo;
  pawl_enqueue_opts_init(&eo);
  eo.queue = o->queue ? o->queue : old->queue;
  eo.priority = o->set_priority ? o->priority : old->priority;
  eo.run_at = o->run_at;
  eo.delay_ms = o->delay_ms;
  eo.max_attempts = o->max_attempts ? o->max_attempts : old->max_attempts;
  eo.timeout_s = o->timeout_s ? o->timeout_s : old->timeout_s;
  eo.params = o->params ? o->params : old->params;
  eo.business_key = old->business_key;
  eo.correlation_id = old->correlation_id;
  eo.ordering_key = old->ordering_key;
  eo.blocked = old->state == PAWL_BLOCKED;
  /* A replacement made by job code is that job's (its owner), so that it
   * may act on it again; one an operator makes is the operator's. */
  eo.enqueued_by = !p->actor           ? NULL
                   : *p->actor->owner ? p->actor->owner
                                      : p->actor->name;
  /* The idempotency key stays the old job's: it is unique for ever. */
  store_new_job_t nj;
  memset(&nj, 0, sizeof nj);
  pawl_buf_t tags;
  pawl__buf_init(&tags);
  if (!rc)
    rc = pawl__prepare_job(p, old->type, o->payload ? o->payload : old->payload,
                           &eo, &nj, &tags);
  char reason[600];
  if (!rc) {
    if (old->tags) nj.tags = old->tags; /* as stored, checked then */
    if (sig) {
      nj.signal_key = sig->key;
      nj.signal_timeout_at = sig->timeout_at;
      nj.blocked = 1;
    }
    char ntext[PAWL_ID_STRLEN];
    pawl_id_format(&nj.id, ntext);
    snprintf(reason, sizeof reason, "replaced by %s%s%s", ntext,
             o->reason ? ": " : "", o->reason ? o->reason : "");
    store_replace_t r = {.old_id = id,
                         .expect_version = old->version,
                         .job = &nj,
                         .actor = pawl__actor_name(p),
                         .reason = reason,
                         .owner = owner};
    rc = pawl__from_store(p, p->store->ops->flow.replace(p->store, &r));
  }
  pawl__buf_free(&tags);
  pawl_signal_free(sig);
  pawl_job_free(old);
  if (rc) return rc;
  pawl__wake(p);
  if (out_new) *out_new = nj.id;
  return 0;
}

int pawl_replace(pawl_t *p, const pawl_id_t *id, const pawl_replace_opts_t *o,
                 pawl_id_t *out_new) {
  PAWL__CHECK(p);
  p->errmsg[0] = 0;
  pawl_replace_opts_t none;
  if (!o) {
    pawl_replace_opts_init(&none);
    o = &none;
  }
  int rc = pawl__check_reason(p, o->reason);
  if (rc) return rc;
  const char *owner = pawl__actor_owner(p, PAWL__GRANT_REPLACE);
  /* A job that changed between the read and the transaction is read again
   * and everything decided anew (its state, its signal wait, its fields):
   * the caller would do nothing else on "try again". */
  for (int round = 0; round < FLOW_REPLACE_ROUNDS; round++) {
    p->errmsg[0] = 0;
    rc = flow_replace_once(p, id, o, owner, out_new);
    if (rc != PAWL_ECONFLICT) return rc;
  }
  return rc; /* the message names the job and says to try again */
}

int pawl_replace_links(pawl_t *p, const pawl_id_t *id,
                       pawl_replace_links_t *out) {
  PAWL__CHECK(p);
  p->errmsg[0] = 0;
  return pawl__from_store(p, p->store->ops->flow.links(p->store, id, out));
}
