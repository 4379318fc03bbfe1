/* queues.c: the queues part of the public API (include/pawl.h, "queues"):
 * pausing and resuming a whole queue and its own age boost,
 * persisted in pawl_queues through the store's queue ops, and the list of
 * queues with their counts (pawl_stats()'s). Per-node concurrency per queue
 * is the worker host's (runner/poller.c). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "bounds.h"
#include "handle.h"
#include "pawl.h"
#include "pawl_internal.h"
#include "store.h"

/* A pause's reason: shown in one line of `pawl queue list`. */

static int queues_from_store(pawl_t *p, int rc) {
  if (rc && p->store->errmsg[0])
    snprintf(p->errmsg, sizeof p->errmsg, "%s", p->store->errmsg);
  return rc;
}

static int queues_check_reason(pawl_t *p, const char *reason) {
  return pawl__check_reason(p, reason);
}

int pawl_queue_pause(pawl_t *p, const char *queue, const char *reason,
                     int *changed) {
  PAWL__CHECK(p);
  p->errmsg[0] = 0;
  int rc = pawl__check_name(p, "queue name", queue);
  if (!rc) rc = queues_check_reason(p, reason);
  if (rc) return rc;
  int ch = 0;
  rc = queues_from_store(p, p->store->ops->queues.pause(
                                p->store, queue, 1, p->principal, reason, &ch));
  if (!rc && changed) *changed = ch;
  return rc;
}

int pawl_queue_resume(pawl_t *p, const char *queue, int *changed) {
  PAWL__CHECK(p);
  p->errmsg[0] = 0;
  int rc = pawl__check_name(p, "queue name", queue);
  if (rc) return rc;
  int ch = 0;
  rc = queues_from_store(p, p->store->ops->queues.pause(p->store, queue, 0,
                                                         NULL, NULL, &ch));
  /* A host in this process claims the queue's due jobs now. */
  if (!rc && ch) pawl__wake(p);
  if (!rc && changed) *changed = ch;
  return rc;
}

int pawl_queue_set_age_boost(pawl_t *p, const char *queue, int64_t ms) {
  PAWL__CHECK(p);
  p->errmsg[0] = 0;
  int rc = pawl__check_name(p, "queue name", queue);
  if (rc) return rc;
  /* -1 (the database's) or a boost as pawl_options_t.age_boost_ms takes. */
  if (ms != -1 &&
      pawl__bounds_check_int("age boost", ms, 0, PAWL_AGE_BOOST_MAX_MS, "ms",
                             p->errmsg, sizeof p->errmsg))
    return PAWL_EINVAL;
  return queues_from_store(
      p, p->store->ops->queues.set_boost(p->store, queue, ms));
}

/* ---- the list ------------------------------------------------------------- */

typedef struct queues_ctx {
  pawl_queue_info_t *q;
  size_t n;
  int64_t boost;           /* the database's */
} queues_ctx_t;

/* The entry of `name`, added (zeroed, boost -1) if missing; NULL when out
 * of memory. */
static pawl_queue_info_t *queues_entry(queues_ctx_t *c, const char *name) {
  for (size_t i = 0; i < c->n; i++)
    if (strcmp(c->q[i].name, name) == 0) return &c->q[i];
  pawl_queue_info_t *grown = pawl__realloc(c->q, (c->n + 1) * sizeof *grown);
  if (!grown) return NULL;
  c->q = grown;
  pawl_queue_info_t *e = &c->q[c->n];
  memset(e, 0, sizeof *e);
  e->age_boost_ms = -1;
  e->effective_age_boost_ms = c->boost;
  if (!(e->name = pawl__strdup(name))) return NULL;
  c->n++;
  return e;
}

static int queues_row_cb(const store_queue_row_t *r, void *data) {
  queues_ctx_t *c = data;
  pawl_queue_info_t *e = queues_entry(c, r->name);
  if (!e) return PAWL_ENOMEM;
  e->paused = r->paused;
  e->paused_at = r->paused ? r->paused_at : 0;
  e->age_boost_ms = r->age_boost_ms;
  e->effective_age_boost_ms = r->age_boost_ms >= 0 ? r->age_boost_ms : c->boost;
  if ((r->paused_by && !(e->paused_by = pawl__strdup(r->paused_by))) ||
      (r->reason && !(e->reason = pawl__strdup(r->reason))))
    return PAWL_ENOMEM;
  return 0;
}

static int queues_cmp(const void *a, const void *b) {
  return strcmp(((const pawl_queue_info_t *)a)->name,
                ((const pawl_queue_info_t *)b)->name);
}

void pawl_queues_free(pawl_queue_info_t *q, size_t n) {
  if (!q) return;
  for (size_t i = 0; i < n; i++) {
    pawl__free(q[i].name);
    pawl__free(q[i].paused_by);
    pawl__free(q[i].reason);
  }
  pawl__free(q);
}

int pawl_queues(pawl_t *p, pawl_queue_info_t **out, size_t *n) {
  PAWL__CHECK(p);
  p->errmsg[0] = 0;
  *out = NULL;
  *n = 0;
  queues_ctx_t c = {NULL, 0, 0};
  int rc = queues_from_store(
      p, p->store->ops->settings.age_boost(p->store, &c.boost));
  if (rc) return rc;
  if (c.boost < 0) c.boost = 0;
  pawl_stats_t *st = NULL;
  if ((rc = pawl_stats(p, &st))) return rc;
  for (size_t i = 0; i < st->nqueues && !rc; i++) {
    pawl_queue_info_t *e = queues_entry(&c, st->queues[i].queue);
    if (!e) {
      rc = pawl__fail(p, PAWL_ENOMEM, "out of memory");
      break;
    }
    memcpy(e->count, st->queues[i].count, sizeof e->count);
    e->oldest_due_ms = st->queues[i].oldest_due_ms;
  }
  pawl_stats_free(st);
  if (!rc) {
    rc = p->store->ops->queues.list(p->store, queues_row_cb, &c);
    if (rc == PAWL_ENOMEM && !p->store->errmsg[0])
      rc = pawl__fail(p, PAWL_ENOMEM, "out of memory");
    else
      rc = queues_from_store(p, rc);
  }
  if (rc) {
    pawl_queues_free(c.q, c.n);
    return rc;
  }
  if (c.n > 1) qsort(c.q, c.n, sizeof *c.q, queues_cmp);
  *out = c.q;
  *n = c.n;
  return 0;
}
