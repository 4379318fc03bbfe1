/* alerts.c: dead-letter alerts over the store: the outbox rows
 * a node takes, the dedup decision for each, and their removal once their
 * hooks ran. The runner's alert chore (runner/alerts.c) calls these; the
 * hooks themselves run in Lua (lua/bridge.h, pawl__lua_alert). */
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "handle.h"
#include "pawl_internal.h"

/* The dedup key of an error: the job type and the error text with every
 * run of hex digits and dashes that holds a decimal digit replaced by '#'
 * (numbers, ids, UUIDs, addresses, durations), hashed (FNV-1a, 64 bits).
 * Those runs differ from one job to the next (its id, a timestamp, an
 * amount) while the failure is the same; the price is that "HTTP 500" and
 * "HTTP 503" of one type count as one error. Words without digits are
 * kept as they are. */
int64_t pawl__alert_fingerprint(const char *type, const char *error) {
  uint64_t h = 1469598103934665603u;
#define FNV(c) (h = (h ^ (unsigned char)(c)) * 1099511628211u)
  for (const char *s = type ? type : ""; *s; s++) FNV(*s);
  FNV(0);
  const char *s = error ? error : "";
  while (*s) {
    size_t n = strspn(s, "0123456789abcdefABCDEF-");
    if (n > 0 && memchr(s, 0, n) == NULL) {
      int digit = 0;
      for (size_t i = 0; i < n; i++)
        if (s[i] >= '0' && s[i] <= '9') digit = 1;
      if (digit) {
        FNV('#');
      } else {
        for (size_t i = 0; i < n; i++) FNV(s[i]);
      }
      s += n;
    } else {
      FNV(*s);
      s++;
    }
  }
#undef FNV
  return (int64_t)h;
}

static void alert_owner(pawl_t *p, char owner[256]) {
  snprintf(owner, 256, "%s", p->node_id);
}

void pawl__alerts_free(pawl__alert_t *a, size_t n) {
  for (size_t i = 0; a && i < n; i++) {
    pawl__free(a[i].type);
    pawl__free(a[i].queue);
    pawl__free(a[i].error);
  }
  pawl__free(a);
}

int pawl__alerts_take(pawl_t *p, size_t max, int64_t lease_ms,
                      pawl__alert_t **out, size_t *n) {
  p->errmsg[0] = 0;
  *out = NULL;
  *n = 0;
  if (lease_ms < 1 || lease_ms > PAWL_DELAY_MAX_MS)
    return pawl__fail(p, PAWL_EINVAL,
                      "alert lease must be 1..%lld ms (got %lld)",
                      (long long)PAWL_DELAY_MAX_MS, (long long)lease_ms);
  if (max < 1 || max > 1000)
    return pawl__fail(p, PAWL_EINVAL, "alerts taken at once must be 1..1000 "
                                      "(got %zu)", max);
  char owner[256];
  alert_owner(p, owner);
  store_alert_t *rows = NULL;
  size_t nrows = 0;
  int rc = p->store->ops->alerts.take(p->store, owner, lease_ms, max,
                                      &rows, &nrows);
  if (rc) return pawl__from_store(p, rc);
  pawl__alert_t *v = nrows ? pawl__calloc(nrows, sizeof *v) : NULL;
  if (nrows && !v) {
    pawl__store_alerts_free(rows, nrows);
    return pawl__fail(p, PAWL_ENOMEM, "out of memory");
  }
  /* Oldest first (RETURNING gives no order). */
  for (size_t i = 0; i < nrows; i++) {
    size_t k = i;
    while (k > 0 && v[k - 1].seq > rows[i].seq) {
      v[k] = v[k - 1];
      k--;
    }
    pawl__alert_t *a = &v[k];
    const store_alert_t *r = &rows[i];
    a->seq = r->seq;
    a->kind = r->kind;
    a->job_id = r->job_id;
    a->type = r->type;
    a->queue = r->queue;
    a->error = r->error;
    a->attempt = r->attempt;
    a->created_at = r->created_at;
    a->verdict = r->verdict;
    a->count = r->count;
    a->suppressed = r->suppressed;
    a->first_at = r->first_at;
    a->last_at = r->last_at;
    rows[i].type = rows[i].queue = rows[i].error = NULL; /* moved */
  }
  pawl__store_alerts_free(rows, nrows);
  *out = v;
  *n = nrows;
  return 0;
}

int pawl__alert_note(pawl_t *p, int64_t window_ms, pawl__alert_t *a) {
  p->errmsg[0] = 0;
  char owner[256];
  alert_owner(p, owner);
  store_alert_t r = {
      .seq = a->seq, .kind = a->kind, .job_id = a->job_id,
      .type = a->type, .queue = a->queue, .error = a->error,
      .attempt = a->attempt, .created_at = a->created_at,
  };
  int rc = p->store->ops->alerts.note(
      p->store, owner, pawl__alert_fingerprint(a->type, a->error), window_ms,
      &r);
  if (rc) return pawl__from_store(p, rc);
  a->verdict = r.verdict;
  a->count = r.count;
  a->first_at = r.first_at;
  a->last_at = r.last_at;
  return 0;
}

int pawl__alert_done(pawl_t *p, int64_t seq) {
  p->errmsg[0] = 0;
  char owner[256];
  alert_owner(p, owner);
  return pawl__from_store(p,
                          p->store->ops->alerts.done(p->store, owner, seq));
}
