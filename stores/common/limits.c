/* limits.c: concurrency and rate limits, decided once for every backend
 * (store.h, "limits"): the backend reads the limits and the running
 * counts, this plans which lanes are open and admits the claimed jobs. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc.h"
#include "iso8601.h"
#include "redact.h"
#include "store.h"

/* ---- limits ---------------------------------------------------------------- */

int pawl__store_limits_add(store_limits_t *l, const char *name,
                           int64_t max_running, int64_t rate,
                           int64_t window_ms, int64_t window_start,
                           int64_t window_count) {
  char *copy = NULL;
  if (pawl__store_dup(&copy, name) != 0) return -1;
  store_limit_t *lim = pawl__store_push((void **)&l->v, &l->n, sizeof *lim);
  if (!lim) {
    pawl__free(copy);
    return -1;
  }
  lim->name = copy;
  lim->max_running = max_running > 0 ? max_running : 0;
  lim->rate = rate > 0 && window_ms > 0 ? rate : 0;
  lim->window_ms = lim->rate ? window_ms : 0;
  lim->window_start = window_start;
  lim->window_count = window_count;
  return 0;
}

void pawl__store_limits_free(store_limits_t *l) {
  for (size_t i = 0; i < l->n; i++) pawl__free(l->v[i].name);
  pawl__free(l->v);
  l->v = NULL;
  l->n = 0;
}

#define STORE_LIMIT_QUEUE_PREFIX "queue:"
#define STORE_LIMIT_QUEUE_PREFIX_LEN 6

const char *pawl__store_limit_queue(const store_limit_t *lim) {
  return strncmp(lim->name, STORE_LIMIT_QUEUE_PREFIX,
                 STORE_LIMIT_QUEUE_PREFIX_LEN) == 0
             ? lim->name + STORE_LIMIT_QUEUE_PREFIX_LEN
             : NULL;
}

/* Byte order (strcmp), which the backends' ORDER BY need not follow (a
 * PostgreSQL collation): the planner sorts for itself. */
static int store_limit_cmp(const void *a, const void *b) {
  return strcmp(((const store_limit_t *)a)->name,
                ((const store_limit_t *)b)->name);
}

/* floor(t / w) * w: the start of the window t is in, times before 1970
 * included. */
static int64_t store_window_of(int64_t t, int64_t w) {
  int64_t q = t / w;
  if (t % w < 0) q--;
  return q * w;
}

void pawl__store_limits_plan(store_limits_t *l, int64_t now,
                             size_t limited_max) {
  if (l->n > 1) qsort(l->v, l->n, sizeof *l->v, store_limit_cmp);
  l->limited_left = limited_max;
  for (size_t i = 0; i < l->n; i++) {
    store_limit_t *lim = &l->v[i];
    int64_t by_max = INT64_MAX, by_rate = INT64_MAX;
    if (lim->max_running > 0)
      by_max = lim->running >= lim->max_running
                   ? 0
                   : lim->max_running - lim->running;
    lim->window = 0;
    if (lim->rate > 0) {
      lim->window = store_window_of(now, lim->window_ms);
      if (lim->window_start > lim->window)
        by_rate = 0; /* our clock is behind a counted start: see V005 */
      else if (lim->window_start == lim->window)
        by_rate = lim->window_count >= lim->rate
                      ? 0
                      : lim->rate - lim->window_count;
      else
        by_rate = lim->rate;
    }
    lim->left = by_max < by_rate ? by_max : by_rate;
    lim->rate_blocked = by_rate <= 0 && by_max > 0;
    /* A claim of prefetch only takes no job that needs a permit (a
     * max_running): leaving those limits out of the pick lets it reach
     * the jobs behind. A rate-only limit is claimed ahead as any job: a
     * start is counted when it is claimed, and holds nothing after. */
    if (limited_max == 0 && lim->max_running > 0) lim->left = 0;
    lim->taken = 0;
  }
}

/* The limit named `prefix` + `key`, or NULL (l->v sorted by plan()). */
static store_limit_t *store_limit_find(store_limits_t *l, const char *prefix,
                                       const char *key) {
  size_t lo = 0, hi = l->n, plen = strlen(prefix);
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    const char *name = l->v[mid].name;
    int c = strncmp(name, prefix, plen);
    if (c == 0) c = strlen(name) < plen ? -1 : strcmp(name + plen, key);
    if (c == 0) return &l->v[mid];
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return NULL;
}

int pawl__store_limits_admit(store_limits_t *l, const char *queue,
                             const char *resource) {
  store_limit_t *q = queue ? store_limit_find(l, STORE_LIMIT_QUEUE_PREFIX,
                                              queue)
                           : NULL;
  store_limit_t *r = resource ? store_limit_find(l, "", resource) : NULL;
  if (!q && !r) return 1;
  /* Only a permit (max_running) is for running now, so only a job under
   * one needs a free worker (limited_left); a job under rates alone may
   * be claimed ahead. */
  int permit = (q && q->max_running > 0) || (r && r->max_running > 0);
  if ((permit && l->limited_left == 0) || (q && q->left <= 0) ||
      (r && r->left <= 0))
    return 0;
  if (q) q->left--, q->taken++;
  if (r) r->left--, r->taken++;
  if (permit) l->limited_left--;
  return 1;
}

int pawl__store_limit_window(const store_limit_t *lim, int64_t *start,
                             int64_t *count) {
  if (!lim->rate || !lim->taken) return 0;
  *start = lim->window;
  *count = (lim->window_start == lim->window ? lim->window_count : 0) +
           lim->taken;
  return 1;
}
