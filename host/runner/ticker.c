/* ticker.c: recurring definitions (issue 14), as a chore of the poller
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

void pawl__ticker_chore(host_t *h, pawl_t *p, host_ticker_t *t, int64_t now) {
  pthread_mutex_lock(&h->mu);
  int stopping = h->stopping;
  uint64_t gen = h->crons_gen;
  size_t n = h->ncrons;
  pawl_recurring_t *defs = NULL; /* NULL after a failed copy: the next
                                     chore tries again (gen still differs) */
  if (!stopping && gen != t->synced_gen) defs = ticker_copy(h->crons, n);
  pthread_mutex_unlock(&h->mu);
  if (stopping) return;
  if (defs) {
    char err[600];
    size_t nerr = 0;
    if (pawl__recurring_sync(p, defs, n, err, sizeof err, &nerr) != 0) {
      ticker_log_rc(h, p, "recurring definitions of the scripts not written");
    } else {
      t->synced_gen = gen;
      t->next_tick = now; /* tick what the new definitions make due */
      if (nerr) {
        log_line_t line;
        pawl__log_begin(&line, &h->log, PAWL_LOG_WARN,
                        "recurring definitions of scripts not used");
        pawl__log_int(&line, "count", (int64_t)nerr);
        pawl__log_str(&line, "first", err);
        pawl__log_end(&line);
      }
    }
    pawl_recurring_free(defs, n);
  }
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
