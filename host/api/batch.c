/* batch.c: batches (include/pawl.h "batches", docs/flows.md "Batches"):
 * jobs enqueued in one call with callbacks enqueued once, when the last of
 * them ends. This file checks the input and hands the batch to the store
 * (store.h, "batches"); the counting and the firing are the store's and
 * the database's. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "buf.h"
#include "handle.h"
#include "pawl.h"
#include "pawl_internal.h"
#include "store.h"

static const char *const batch_roles[] = {"child", "on_success", "on_failure",
                                          "on_complete"};

const char *pawl_batch_role_name(int role) {
  return role >= 0 && role <= 3 ? batch_roles[role] : "?";
}

void pawl_batch_opts_init(pawl_batch_opts_t *o) { memset(o, 0, sizeof *o); }

/* What a child may not carry: keys (a duplicate would be no child, and the
 * bulk path takes no keys) and `blocked` (nothing would unblock it). */
static int batch_check_child(pawl_t *p, size_t i, const pawl_enqueue_opts_t *o) {
  const char *bad = o->idempotency_key ? "an idempotency key"
                    : o->business_key  ? "a business key"
                    : o->ordering_key  ? "an ordering key"
                    : o->blocked       ? "blocked"
                                       : NULL;
  if (!bad) return 0;
  return pawl__fail(p, PAWL_EINVAL,
                    "job %zu: a batch's child may not have %s", i + 1, bad);
}

/* A callback: what fires is a new job made from what is kept here, so
 * options that would not survive to then are refused rather than lost. */
static int batch_prepare_callback(pawl_t *p, int role,
                                  const pawl_enqueue_item_t *it,
                                  store_new_job_t *nj, pawl_buf_t *tags) {
  const char *name = pawl_batch_role_name(role);
  pawl_enqueue_opts_t defaults;
  pawl_enqueue_opts_init(&defaults);
  const pawl_enqueue_opts_t *o = it->opts ? it->opts : &defaults;
  const char *bad = o->params            ? "params (pawl sets them)"
                    : o->idempotency_key ? "an idempotency key"
                    : o->business_key    ? "a business key"
                    : o->ordering_key    ? "an ordering key"
                    : o->return_existing ? "return_existing"
                    : o->run_at          ? "run_at"
                    : o->delay_ms        ? "a delay"
                    : o->blocked         ? "blocked"
                    : o->resource        ? "a resource"
                    : o->signal          ? "a signal"
                    : o->nafter || o->when ? "after or when (dependencies)"
                    : o->nidentity       ? "identity fields"
                                         : NULL;
  if (bad)
    return pawl__fail(p, PAWL_EINVAL, "%s: a callback may not have %s", name,
                      bad);
  int rc = pawl__prepare_job(p, it->type, it->payload, o, nj, tags);
  if (rc) {
    char msg[sizeof p->errmsg];
    snprintf(msg, sizeof msg, "%s", p->errmsg);
    return pawl__fail(p, rc, "%s: %s", name, msg);
  }
  return 0;
}

int pawl_batch_enqueue(pawl_t *p, const pawl_enqueue_item_t *jobs, size_t n,
                       const pawl_batch_opts_t *opts, pawl_id_t *batch_id,
                       pawl_id_t *ids) {
  PAWL__CHECK(p);
  p->errmsg[0] = 0;
  if (n == 0 || n > PAWL_BATCH_MAX)
    return pawl__fail(p, PAWL_EINVAL,
                      "a batch has %zu jobs; it must have 1..%d", n,
                      PAWL_BATCH_MAX);
  if (!jobs) return pawl__fail(p, PAWL_EINVAL, "a batch needs its jobs");
  for (size_t i = 0; i < n; i++) {
    int rc = jobs[i].opts ? batch_check_child(p, i, jobs[i].opts) : 0;
    if (rc) return rc;
  }
  pawl_batch_opts_t none;
  pawl_batch_opts_init(&none);
  if (!opts) opts = &none;
  if (opts->key) {
    size_t klen = strlen(opts->key);
    int bad = klen == 0 || klen > 400;
    for (size_t i = 0; i < klen && !bad; i++)
      bad = (unsigned char)opts->key[i] < 0x20 || opts->key[i] == 0x7f;
    if (bad)
      return pawl__fail(p, PAWL_EINVAL,
                        "a batch's key must be 1..400 bytes without control "
                        "characters (got %zu bytes)", klen);
  }
  const pawl_enqueue_item_t *cbs[3] = {opts->on_success, opts->on_failure,
                                       opts->on_complete};
  store_new_job_t cb_jobs[3];
  pawl_buf_t cb_tags[3];
  store_batch_new_t b;
  memset(&b, 0, sizeof b);
  pawl_id_new(&b.id);
  b.enqueued_by = opts->enqueued_by ? opts->enqueued_by : p->principal;
  /* Identity: the batch made under the key before, if any (store_types.h,
   * store_batch_new_t.ident). */
  int found = 0;
  pawl_id_t found_id;
  pawl_id_t *found_ids = NULL;
  if (opts->key) {
    found_ids = pawl__calloc(n, sizeof *found_ids);
    if (!found_ids) return pawl__fail(p, PAWL_ENOMEM, "out of memory");
    b.ident = opts->key;
    b.found = &found;
    b.found_id = &found_id;
    b.found_ids = found_ids;
  }
  int rc = 0;
  for (int r = 0; r < 3; r++) pawl__buf_init(&cb_tags[r]);
  for (int r = 0; r < 3 && !rc; r++) {
    if (!cbs[r]) continue;
    rc = batch_prepare_callback(p, r + 1, cbs[r], &cb_jobs[r], &cb_tags[r]);
    if (!rc) b.callbacks[r] = &cb_jobs[r];
  }
  if (!rc) rc = pawl__enqueue_items(p, jobs, n, ids, NULL, 0, &b);
  for (int r = 0; r < 3; r++) pawl__buf_free(&cb_tags[r]);
  pawl__free(found_ids);
  if (!rc && batch_id) *batch_id = found ? found_id : b.id;
  if (!rc && opts->status)
    *opts->status = found ? PAWL_ENQ_DUPLICATE : PAWL_ENQ_NEW;
  return rc;
}

int pawl_batch_get(pawl_t *p, const pawl_id_t *id, pawl_batch_t *out) {
  PAWL__CHECK(p);
  p->errmsg[0] = 0;
  pawl_batch_t b;
  int rc = pawl__from_store(
      p, p->store->ops->batch.get(p->store, id, pawl_now(p), &b));
  if (!rc) *out = b;
  return rc;
}

int pawl_job_batch(pawl_t *p, const pawl_id_t *id, pawl_id_t *batch_id,
                   int *role) {
  PAWL__CHECK(p);
  p->errmsg[0] = 0;
  pawl_id_t b;
  int r = -1;
  int rc = pawl__from_store(p, p->store->ops->batch.of(p->store, id, &b, &r));
  if (rc) return rc;
  if (r < 0) {
    char text[PAWL_ID_STRLEN];
    pawl_id_format(id, text);
    return pawl__fail(p, PAWL_ENOTFOUND, "job %s belongs to no batch", text);
  }
  if (batch_id) *batch_id = b;
  if (role) *role = r;
  return 0;
}
