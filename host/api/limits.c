/* limits.c: resource and rate limits in the public API
 * (include/pawl.h, "resource and rate limits"): the operator's side (set,
 * remove, list) over the store's limits ops, the check of a resource name
 * an enqueue gives, and the parser of "N/DURATION" rates. The claim side
 * is in the stores (stores/store.h, "limits"). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "bounds.h"
#include "handle.h"
#include "pawl.h"
#include "pawl_internal.h"
#include "store.h"

#define LIMIT_QUEUE_PREFIX "queue:"

int pawl__resource_check(pawl_t *p, const char *resource) {
  int rc = pawl__check_name(p, "resource name", resource);
  if (rc) return rc;
  if (strncmp(resource, LIMIT_QUEUE_PREFIX, strlen(LIMIT_QUEUE_PREFIX)) == 0)
    return pawl__fail(p, PAWL_EINVAL,
                      "resource name \"%s\" must not begin with \"queue:\" "
                      "(that names a queue's limit)",
                      resource);
  return 0;
}

/* A limit's name: a resource's, or "queue:" and a queue's. */
static int limits_check_name(pawl_t *p, const char *name) {
  int rc = pawl__check_name(p, "limit name", name);
  if (rc) return rc;
  if (strncmp(name, LIMIT_QUEUE_PREFIX, strlen(LIMIT_QUEUE_PREFIX)) == 0 &&
      !name[strlen(LIMIT_QUEUE_PREFIX)])
    return pawl__fail(p, PAWL_EINVAL,
                      "limit name \"queue:\" names no queue (queue:NAME)");
  return 0;
}

int pawl_limit_set(pawl_t *p, const char *name, int64_t max_running,
                   int64_t rate, int64_t rate_window_ms) {
  PAWL__CHECK(p);
  p->errmsg[0] = 0;
  int rc = limits_check_name(p, name);
  if (rc) return rc;
  char what[260];
  snprintf(what, sizeof what, "limit %s: max_running", name);
  if (max_running &&
      pawl__bounds_check_int(what, max_running, 1, PAWL_LIMIT_MAX, NULL,
                             p->errmsg, sizeof p->errmsg))
    return PAWL_EINVAL;
  snprintf(what, sizeof what, "limit %s: rate", name);
  if (rate && pawl__bounds_check_int(what, rate, 1, PAWL_LIMIT_MAX,
                                     "starts per window", p->errmsg,
                                     sizeof p->errmsg))
    return PAWL_EINVAL;
  snprintf(what, sizeof what, "limit %s: rate window", name);
  if (rate && pawl__bounds_check_int(what, rate_window_ms, 1,
                                     PAWL_LIMIT_WINDOW_MAX_MS, "ms",
                                     p->errmsg, sizeof p->errmsg))
    return PAWL_EINVAL;
  if (!rate && rate_window_ms)
    return pawl__fail(p, PAWL_EINVAL,
                      "limit %s: a rate window (%lld ms) without a rate",
                      name, (long long)rate_window_ms);
  if (!max_running && !rate)
    return pawl__fail(p, PAWL_EINVAL,
                      "limit %s: give a max_running (1..%d), a rate, or "
                      "both",
                      name, PAWL_LIMIT_MAX);
  return pawl__from_store(p, p->store->ops->limits.set(
                                  p->store, name, max_running, rate,
                                  rate ? rate_window_ms : 0));
}

int pawl_limit_remove(pawl_t *p, const char *name) {
  PAWL__CHECK(p);
  p->errmsg[0] = 0;
  int rc = limits_check_name(p, name);
  if (rc) return rc;
  return pawl__from_store(p, p->store->ops->limits.remove(p->store, name));
}

int pawl_limits(pawl_t *p, pawl_limit_t **out, size_t *n) {
  PAWL__CHECK(p);
  p->errmsg[0] = 0;
  pawl_limit_t *v = NULL;
  size_t count = 0;
  int rc = pawl__from_store(p, p->store->ops->limits.list(p->store, &v,
                                                            &count));
  if (rc) return rc;
  *out = v;
  *n = count;
  return 0;
}

int pawl_rate_parse(const char *text, int64_t *rate, int64_t *window_ms,
                    char *errbuf, size_t errlen) {
  char scratch[200];
  if (!errbuf || !errlen) {
    errbuf = scratch;
    errlen = sizeof scratch;
  }
  const char *s = text ? text : "";
  const char *slash = strchr(s, '/');
  char head[32];
  size_t hl = slash ? (size_t)(slash - s) : 0;
  int ok = slash && hl > 0 && hl < sizeof head;
  int64_t n = 0;
  if (ok) {
    memcpy(head, s, hl);
    head[hl] = 0;
    for (size_t i = 0; i < hl && ok; i++) ok = head[i] >= '0' && head[i] <= '9';
    if (ok) {
      errno = 0;
      long long v = strtoll(head, NULL, 10);
      ok = errno == 0;
      n = v;
    }
  }
  if (!ok) {
    snprintf(errbuf, errlen,
             "rate \"%.60s\" must be N/DURATION (\"100/60s\": N 1..%d starts "
             "per window of 1ms..1d)",
             s, PAWL_LIMIT_MAX);
    return PAWL_EINVAL;
  }
  if (pawl__bounds_check_int("rate", n, 1, PAWL_LIMIT_MAX,
                             "starts per window", errbuf, errlen))
    return PAWL_EINVAL;
  int64_t ms = 0;
  char derr[160];
  if (pawl_duration_parse(slash + 1, &ms, derr, sizeof derr) != 0) {
    snprintf(errbuf, errlen, "rate \"%.60s\": %s", s, derr);
    return PAWL_EINVAL;
  }
  if (pawl__bounds_check_int("rate window", ms, 1, PAWL_LIMIT_WINDOW_MAX_MS,
                             "ms", errbuf, errlen))
    return PAWL_EINVAL;
  *rate = n;
  *window_ms = ms;
  return 0;
}
