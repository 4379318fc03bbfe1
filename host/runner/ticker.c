/* ticker.c: recurring definitions, as a chore of the poller
 * (poller.c; step mode runs the same chores on its thread). See host.h.
 *
 * A chore rather than a thread of its own: pawl_start's host, step mode
 * (pawl_step) and a host attached to a libuv loop then all tick the same
 * way, and the jobs a tick enqueues are claimed by the same loop round.
 * The work per chore is bounded (TICK_MAX definitions, in batches: a
 * transaction each) so that claims go on between the batches of a big
 * tick; what is left is ticked at the next chore, at once. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "host.h"
#include "pawl_internal.h"

/* Definitions one chore ticks at most. */
#define TICK_MAX 2000

static void ticker_log_rc(host_t *h, pawl_t *p, const char *what) {
  log_line_t line;
  pawl__log_begin(&line, &h->log, PAWL_LOG_ERROR, what);
  pawl__log_str(&line, "error", pawl_errmsg(p));
  pawl__log_end(&line);
}

/* A copy of the definitions the loader installed (the strings are the
 * host's: borrowed while h->crons stays, which only the loader changes,
 * so the copy takes its own). */
static pawl_recurring_t *ticker_copy(const pawl_recurring_t *src, size_t n) {
  pawl_recurring_t *c = pawl__calloc(n ? n : 1, sizeof *c);
  if (!c) return NULL;
  for (size_t i = 0; i < n; i++) {
    c[i] = src[i];
    c[i].name = pawl__strdup(src[i].name);
    c[i].expr = pawl__strdup(src[i].expr);
    c[i].tz = pawl__strdup(src[i].tz);
    c[i].type = pawl__strdup(src[i].type);
    c[i].payload = pawl__strdup(src[i].payload);
    c[i].queue = src[i].queue ? pawl__strdup(src[i].queue) : NULL;
    c[i].script = src[i].script ? pawl__strdup(src[i].script) : NULL;
    if (!c[i].name || !c[i].expr || !c[i].tz || !c[i].type ||
        !c[i].payload || (src[i].queue && !c[i].queue) ||
        (src[i].script && !c[i].script)) {
      pawl_recurring_free(c, i + 1);
      return NULL;
    }
  }
  return c;
}

/* A copy of the load errors the loader installed (NULL with *n 0: none;
 * *oom 1 when the copy failed). */
static pawl_script_error_t *ticker_copy_errors(const host_t *h, size_t *n,
                                               int *oom) {
  *n = 0;
  *oom = 0;
  if (!h->nload_errors) return NULL;
  pawl_script_error_t *c = pawl__calloc(h->nload_errors, sizeof *c);
  if (!c) {
    *oom = 1;
    return NULL;
  }
  for (size_t i = 0; i < h->nload_errors; i++) {
    c[i].type = pawl__strdup(h->load_errors[i].type);
    c[i].error = pawl__strdup(h->load_errors[i].error);
    if (!c[i].type || !c[i].error) *oom = 1;
  }
  *n = h->nload_errors;
  return c;
}

static void ticker_had_free(host_ticker_t *t) {
  for (size_t i = 0; i < t->nhad; i++) pawl__free(t->had[i]);
  pawl__free(t->had);
  t->had = NULL;
  t->nhad = 0;
}

void pawl__ticker_free(host_ticker_t *t) { ticker_had_free(t); }

static int ticker_has(const char *const *names, size_t n, const char *name) {
  for (size_t i = 0; name && i < n; i++)
    if (names[i] && strcmp(names[i], name) == 0) return 1;
  return 0;
}

/* The scripts this node has now: those of `defs` and of `broken`
 * (borrowed strings); NULL when out of memory. */
static const char **ticker_now_has(const pawl_recurring_t *defs, size_t n,
                                   const pawl_script_error_t *broken,
                                   size_t nbroken, size_t *out_n) {
  const char **v = pawl__calloc(n + nbroken ? n + nbroken : 1, sizeof *v);
  size_t k = 0;
  for (size_t i = 0; v && i < n; i++)
    if (defs[i].script) v[k++] = defs[i].script;
  for (size_t i = 0; v && i < nbroken; i++)
    if (broken[i].type) v[k++] = broken[i].type;
  *out_n = k;
  return v;
}

/* Writes the definitions of the scripts as installed (generation gen):
 * 0, or -1 when it did not (logged; the next chore tries again). */
static int ticker_sync(host_t *h, pawl_t *p, host_ticker_t *t,
                       const pawl_recurring_t *defs, size_t n,
                       const pawl_script_error_t *broken, size_t nbroken) {
  size_t nnow = 0;
  const char **now_has = ticker_now_has(defs, n, broken, nbroken, &nnow);
  const char **lost = pawl__calloc(t->nhad ? t->nhad : 1, sizeof *lost);
  char **had = pawl__calloc(nnow ? nnow : 1, sizeof *had);
  int oom = !now_has || !lost || !had;
  size_t nlost = 0;
  for (size_t i = 0; !oom && i < t->nhad; i++)
    if (!ticker_has(now_has, nnow, t->had[i])) lost[nlost++] = t->had[i];
  for (size_t i = 0; !oom && i < nnow; i++)
    if (!(had[i] = pawl__strdup(now_has[i]))) oom = 1;
  int rc = -1;
  char err[600];
  size_t nerr = 0;
  if (oom) {
    log_line_t line;
    pawl__log_begin(&line, &h->log, PAWL_LOG_ERROR,
                    "recurring definitions of the scripts not written");
    pawl__log_str(&line, "error", "out of memory");
    pawl__log_end(&line);
  } else if (pawl__recurring_sync(p, defs, n, broken, nbroken, lost, nlost,
                                  !t->synced, err, sizeof err, &nerr) != 0) {
    ticker_log_rc(h, p, "recurring definitions of the scripts not written");
  } else {
    rc = 0;
    if (nerr) {
      log_line_t line;
      pawl__log_begin(&line, &h->log, PAWL_LOG_WARN,
                      "recurring definitions of scripts not used");
      pawl__log_int(&line, "count", (int64_t)nerr);
      pawl__log_str(&line, "first", err);
      pawl__log_end(&line);
    }
  }
  if (!rc) {
    ticker_had_free(t);
    t->had = had;
    t->nhad = nnow;
    t->synced = 1;
  } else if (had) {
    for (size_t i = 0; i < nnow; i++) pawl__free(had[i]);
    pawl__free(had);
  }
  pawl__free(now_has);
  pawl__free(lost);
  return rc;
}

void pawl__ticker_chore(host_t *h, pawl_t *p, host_ticker_t *t, int64_t now) {
  pthread_mutex_lock(&h->mu);
  int stopping = h->stopping;
  uint64_t gen = h->crons_gen;
  size_t n = h->ncrons, nbroken = 0;
  int oom = 0;
  pawl_recurring_t *defs = NULL; /* NULL after a failed copy: the next
                                     chore tries again (gen still differs) */
  pawl_script_error_t *broken = NULL;
  if (!stopping && gen != t->synced_gen) {
    defs = ticker_copy(h->crons, n);
    broken = ticker_copy_errors(h, &nbroken, &oom);
  }
  pthread_mutex_unlock(&h->mu);
  if (oom) { /* as a failed copy of the definitions: again next time */
    pawl_recurring_free(defs, n);
    defs = NULL;
  }
  if (stopping) return;
  if (defs) {
    if (ticker_sync(h, p, t, defs, n, broken, nbroken) == 0) {
      t->synced_gen = gen;
      t->next_tick = now; /* tick what the new definitions make due */
    }
    pawl_recurring_free(defs, n);
  }
  pawl_script_errors_free(broken, nbroken);
  if (now < t->next_tick) return;
  size_t made = 0;
  int more = 0;
  int64_t next_at = 0;
  if (pawl__recurring_tick(p, TICK_MAX, &made, &more, &next_at) != 0)
    ticker_log_rc(h, p, "recurring tick failed");
  /* Next: at the earliest next fire, and at least every PAWL__TICK_MS
   * (step mode: every poll_ms, its safety net) to see definitions another
   * process added or changed. */
  int64_t cap = h->step ? h->opts.poll_ms : PAWL__TICK_MS;
  int64_t wait = cap;
  if (next_at) {
    int64_t until = next_at - pawl_now(p);
    if (until < wait) wait = until < 0 ? 0 : until;
  }
  t->next_tick = more ? now : now + wait;
  if (made) {
    log_line_t line;
    pawl__log_begin(&line, &h->log, PAWL_LOG_DEBUG,
                    "recurring definitions fired");
    pawl__log_int(&line, "jobs", (int64_t)made);
    pawl__log_end(&line);
  }
}
