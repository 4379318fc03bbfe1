/* retention.c: the worker host's retention sweep, as a chore
 * of the poller (poller.c; step mode and a host on a libuv loop run the
 * same chores on their thread). See host.h.
 *
 * A chore rather than a thread of its own, as the ticker: the three ways
 * of driving a host then all sweep, and the sweep never holds the
 * database longer than one batch (one transaction of policy->batch jobs);
 * the next batch comes at a later chore, after a pause of at least
 * policy->pause_ms and long enough that the sweep holds the database at
 * most policy->share_pct percent of the time (pawl__retention_pause), so
 * claims and completions go on in between at nearly their speed. One node sweeps at a time
 * (the lock "pawl.retention", taken again at each batch to extend it,
 * released when the walk is done; its TTL frees it if the node dies).
 * Two sweeps at once would still be correct (each removal checks its own
 * row), only wasted work. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "clock.h"
#include "host.h"
#include "pawl_internal.h"

int pawl__retention_copy(host_t *h, const pawl_retention_t *in, char *msg,
                         size_t len) {
  h->opts.retention = NULL; /* borrowed for pawl_start() only */
  if (!in) return 0;
  int rc = pawl__retention_check(in, msg, len);
  if (rc) return rc;
  pawl_retention_t *r = pawl__calloc(1, sizeof *r);
  pawl_retain_rule_t *rules =
      in->nrules ? pawl__calloc(in->nrules, sizeof *rules) : NULL;
  if (!r || (in->nrules && !rules)) {
    pawl__free(r);
    pawl__free(rules);
    snprintf(msg, len, "out of memory");
    return PAWL_ENOMEM;
  }
  *r = *in;
  r->rules = rules;
  h->retention = r;
  int oom = 0;
  for (size_t i = 0; i < in->nrules && !oom; i++) {
    rules[i] = in->rules[i];
    rules[i].queue = in->rules[i].queue ? pawl__strdup(in->rules[i].queue)
                                        : NULL;
    rules[i].type = in->rules[i].type ? pawl__strdup(in->rules[i].type)
                                      : NULL;
    oom = (in->rules[i].queue && !rules[i].queue) ||
          (in->rules[i].type && !rules[i].type);
  }
  if (oom) {
    snprintf(msg, len, "out of memory");
    return PAWL_ENOMEM; /* h->retention freed with the host */
  }
  return 0;
}

void pawl__retention_drop(host_t *h) {
  pawl_retention_t *r = h->retention;
  if (!r) return;
  h->retention = NULL;
  for (size_t i = 0; i < r->nrules; i++) {
    pawl__free((char *)r->rules[i].queue);
    pawl__free((char *)r->rules[i].type);
  }
  pawl__free((void *)r->rules);
  pawl__free(r);
}

static void retention_log_rc(host_t *h, pawl_t *p, const char *what) {
  log_line_t line;
  pawl__log_begin(&line, &h->log, PAWL_LOG_ERROR, what);
  pawl__log_str(&line, "error", pawl_errmsg(p));
  pawl__log_end(&line);
}

/* Ends a sweep: the lock goes back, the next sweep is due in every_ms. */
static void retention_end(host_t *h, pawl_t *p, host_retention_t *r,
                          int64_t now) {
  if (r->active) pawl__retention_unlock(p);
  r->active = 0;
  r->next_at = now + h->retention->every_ms;
}

void pawl__retention_chore(host_t *h, pawl_t *p, host_retention_t *r,
                           int64_t now) {
  const pawl_retention_t *pol = h->retention;
  if (!pol || now < r->next_at) return;
  pthread_mutex_lock(&h->mu);
  int stopping = h->stopping;
  pthread_mutex_unlock(&h->mu);
  if (stopping) {
    if (r->active) retention_end(h, p, r, now);
    return;
  }
  if (!r->cur && !(r->cur = pawl__calloc(1, sizeof *r->cur))) {
    r->next_at = now + pol->every_ms;
    return;
  }
  if (!r->active) { /* nothing old enough: no lock, no write */
    int due = 0;
    if (pawl__retention_due(p, pol, &due) != 0) {
      retention_log_rc(h, p, "retention: cannot read the oldest job");
      r->next_at = now + pol->every_ms;
      return;
    }
    if (!due) {
      r->next_at = now + pol->every_ms;
      return;
    }
  }
  /* Taken at each batch (an extension while we hold it); held for a few
   * pauses at least, and a lease. */
  int64_t ttl = pawl__lease_ms(p);
  if (ttl < 10 * pol->pause_ms) ttl = 10 * pol->pause_ms;
  int got = 0;
  if (pawl__retention_lock(p, ttl, &got) != 0) {
    retention_log_rc(h, p, "retention: lock not taken");
    retention_end(h, p, r, now);
    return;
  }
  if (!got) { /* another node sweeps (or took over after our TTL) */
    r->active = 0;
    r->next_at = now + pol->every_ms;
    return;
  }
  if (!r->active) {
    memset(r->cur, 0, sizeof *r->cur);
    r->active = 1;
  }
  int64_t t0 = pawl__mono_ms();
  if (pawl__retention_batch(p, pol, r->cur) != 0) {
    retention_log_rc(h, p, "retention sweep failed");
    retention_end(h, p, r, now);
    return;
  }
  if (!r->cur->done) {
    int64_t t1 = pawl__mono_ms();
    r->next_at = t1 + pawl__retention_pause(pol, t1 - t0);
    return;
  }
  if (r->cur->removed) {
    log_line_t line;
    pawl__log_begin(&line, &h->log, PAWL_LOG_INFO,
                    pol->archive ? "archived old finished jobs"
                                 : "deleted old finished jobs");
    pawl__log_int(&line, "jobs", r->cur->removed);
    pawl__log_int(&line, "scanned", r->cur->scanned);
    pawl__log_end(&line);
  }
  retention_end(h, p, r, now);
}

void pawl__retention_stop(pawl_t *p, host_retention_t *r) {
  if (r->active && p) pawl__retention_unlock(p);
  r->active = 0;
  pawl__free(r->cur);
  r->cur = NULL;
}
