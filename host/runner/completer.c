/* completer.c: the completer thread: writes outcomes in batches (many
 * finished jobs per transaction), tells a database that is away from one
 * that refuses what it is given, rewrites refused outcomes until they are
 * stored or dropped, and posts stored outcomes back to their workers for
 * the hooks. No Lua here. See host.h for who owns what. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "clock.h"
#include "host.h"
#include "iso8601.h"
#include "metrics.h"
#include "pawl_internal.h"
#include "utf8.h"
#include "worker.h"

/* Outcomes written per transaction, at most. */
#define HOST_BATCH 1024

static void completer_log(host_t *h, const host_outcome_t *o) {
  /* A start is not an outcome to log (a refused one is: completer_unstored). */
  if (o->out.kind == PAWL_OUT_STARTED) return;
  static const char *const msgs[] = {
      [PAWL_OUT_SUCCEEDED] = "job succeeded",
      [PAWL_OUT_FAILED] = "job failed: dead-lettered",
      [PAWL_OUT_RETRY] = "job failed: will retry",
      [PAWL_OUT_SNOOZE] = "job snoozed",
      [PAWL_OUT_RELEASE] = "job handed back"};
  int level = o->out.kind == PAWL_OUT_SUCCEEDED ? PAWL_LOG_INFO
              : o->out.kind == PAWL_OUT_FAILED  ? PAWL_LOG_ERROR
              : o->out.kind == PAWL_OUT_RETRY   ? PAWL_LOG_WARN
                                                : PAWL_LOG_INFO;
  log_line_t line;
  if (o->rc == PAWL_ELEASE) {
    pawl__log_begin(&line, &h->log, PAWL_LOG_WARN,
              "outcome not stored: the job is no longer ours (canceled or "
              "taken back)");
  } else {
    pawl__log_begin(&line, &h->log, level, msgs[o->out.kind]);
  }
  pawl__log_id(&line, "job", &o->out.id);
  if (o->job) {
    pawl__log_str(&line, "type", o->job->type);
    pawl__log_str(&line, "queue", o->job->queue);
  }
  pawl__log_int(&line, "attempt", o->out.attempt);
  if (o->worker >= 0) pawl__log_num(&line, "duration_ms", o->duration_ms);
  if (o->out.kind == PAWL_OUT_RETRY || o->out.kind == PAWL_OUT_SNOOZE) {
    char when[32];
    pawl__iso8601_format(o->out.run_at, when);
    pawl__log_str(&line, "run_at", when);
  }
  if (o->error) {
    /* The first line (the message with its file:line); the traceback is in
     * the stored error (pawl show). */
    size_t n = strcspn(o->error, "\n");
    char *first = pawl__strndup(o->error, n);
    pawl__log_str(&line, "error", first ? first : o->error);
    pawl__free(first);
  }
  pawl__log_end(&line);
}

/* The events of a stored attempt (host.h, events.c). Called with h->mu
 * held. */
static void completer_event(host_t *h, const host_outcome_t *o) {
  if (!h->opts.event_fn || !o->job) return;
  int32_t a = o->out.attempt;
  switch (o->out.kind) {
  case PAWL_OUT_SUCCEEDED:
    pawl__host_event_locked(h, PAWL_EV_SUCCEEDED, o->job, NULL, a, NULL, 0);
    break;
  case PAWL_OUT_RETRY:
  case PAWL_OUT_FAILED: {
    int retry = o->out.kind == PAWL_OUT_RETRY;
    pawl__host_event_locked(h, PAWL_EV_FAILED, o->job, NULL, a, o->error, 0);
    pawl__host_event_locked(h, retry ? PAWL_EV_RETRIED : PAWL_EV_DEAD,
                            o->job, NULL, a, o->error,
                            retry ? o->out.run_at : 0);
    break;
  }
  default:
    break; /* snoozes and hand-backs: no event */
  }
}

/* The node's counters of a stored attempt (metrics.h; nothing without
 * --metrics). */
static void completer_metrics(host_t *h, const host_outcome_t *o) {
  if (!h->metrics || !o->job) return;
  const char *t = o->job->type, *q = o->job->queue;
  switch (o->out.kind) {
  case PAWL_OUT_SUCCEEDED:
    pawl__metrics_outcome(h->metrics, PAWL_EV_SUCCEEDED, t, q, o->duration_ms);
    break;
  case PAWL_OUT_RETRY:
  case PAWL_OUT_FAILED:
    pawl__metrics_outcome(h->metrics, PAWL_EV_FAILED, t, q, o->duration_ms);
    pawl__metrics_outcome(h->metrics,
                          o->out.kind == PAWL_OUT_RETRY ? PAWL_EV_RETRIED
                                                        : PAWL_EV_DEAD,
                          t, q, -1);
    break;
  default:
    break; /* snoozes and hand-backs: not an outcome */
  }
}

/* The completer ends once nothing more can arrive: the poller is done and
 * every worker has ended, or the stuck ones have been given up on. `p`:
 * the completer's handle, for the time a timed-out job is due again (NULL
 * while it has none: due at once). Called with h->mu held. */
static int completer_may_end(host_t *h, pawl_t *p) {
  if (!h->poller_done) return 0;
  if (h->workers_alive == 0) return 1;
  if (h->abandon_at && pawl__mono_ms() >= h->abandon_at && !h->abandoned) {
    /* Workers stuck in blocking C calls: hand their jobs back by id (the
     * release is refused as stale if a worker did finish meanwhile). A job
     * already past its deadline has timed out, not been interrupted by the
     * stop: it used its attempt, so a job that never returns cannot take a
     * worker again on every restart without ever reaching the dead-letter
     * set. It goes back as a retry due now; the claim fails it with "no
     * attempts left" when that was its last one. */
    h->abandoned = h->workers_alive;
    int64_t now = pawl__mono_ms();
    for (int i = 0; i < h->nworkers; i++) {
      worker_t *w = h->workers[i];
      pthread_mutex_lock(&w->dl);
      host_outcome_t *o = w->has_current ? pawl__calloc(1, sizeof *o) : NULL;
      int late = w->deadline && now >= w->deadline;
      if (o && late) {
        o->error = pawl__strdup("timeout: the job was still running past its "
                                "deadline when the host stopped (its worker "
                                "was left behind)");
        if (!o->error) { /* its lease expires and recovery counts it */
          pawl__free(o);
          o = NULL;
        }
      }
      if (o) {
        o->worker = -1;
        o->hook_ref = PAWL__LUA_NOREF;
        o->out.id = w->current_id;
        o->out.attempt = w->current_attempt;
        o->out.kind = late ? PAWL_OUT_RETRY : PAWL_OUT_RELEASE;
        o->out.error = o->error;
        o->out.run_at = late && p ? pawl_now(p) : 0;
        o->next = h->out_head;
        if (!h->out_head) h->out_tail = o;
        h->out_head = o;
        h->outcomes++;
      }
      pthread_mutex_unlock(&w->dl);
    }
    return 0;
  }
  return h->abandoned > 0;
}

/* The completer's buffers and state. pawl_start makes them, so that a
 * failed allocation fails the start instead of leaving a host whose
 * outcomes nobody writes. Used by the completer thread only. */
typedef struct completer {
  host_t *h;
  pawl_t *p;                 /* its connection; NULL until it could open */
  pawl_outcome_t *outs;      /* HOST_BATCH each */
  int *rcs;
  host_outcome_t **batch;
  host_outcome_t *pending;   /* kept after a failed write, in order */
  /* One round's verdicts: written (or given up on), and to write again. */
  host_outcome_t *done, **done_tail;
  host_outcome_t *again, **again_tail;
  int down;                  /* this round met a database that is away
                                (its code), 0: not */
  char err[512];             /* why */
} completer_t;

void pawl__completer_free(completer_t *c) {
  if (!c) return;
  pawl__free(c->outs);
  pawl__free(c->rcs);
  pawl__free(c->batch);
  pawl__free(c);
}

completer_t *pawl__completer_new(host_t *h) {
  completer_t *c = pawl__calloc(1, sizeof *c);
  if (!c) return NULL;
  c->h = h;
  c->outs = pawl__malloc(HOST_BATCH * sizeof *c->outs);
  c->rcs = pawl__malloc(HOST_BATCH * sizeof *c->rcs);
  c->batch = pawl__malloc(HOST_BATCH * sizeof *c->batch);
  if (!c->outs || !c->rcs || !c->batch) {
    pawl__completer_free(c);
    return NULL;
  }
  return c;
}

/* Errors that say the database is away, busy or out of room, not that it
 * refuses what was written: the outcomes are kept and written again later.
 * Any other error refuses something in the batch (bad data: PAWL_EINVAL,
 * PostgreSQL's data exceptions), and retrying it as it is would fail the
 * same way for ever. */
static int completer_transient(int rc) {
  return rc == PAWL_EUNAVAIL || rc == PAWL_EBUSY || rc == PAWL_EIO ||
         rc == PAWL_ENOMEM;
}

static void completer_push(host_outcome_t ***tail, host_outcome_t *o) {
  o->next = NULL;
  **tail = o;
  *tail = &o->next;
}

/* One write; each outcome's verdict goes into its rc when it returns 0. */
static int completer_finish(completer_t *c, host_outcome_t **b, size_t n) {
  for (size_t i = 0; i < n; i++) c->outs[i] = b[i]->out;
  int rc = pawl_finish(c->p, c->outs, n, c->rcs);
  if (!rc)
    for (size_t i = 0; i < n; i++) b[i]->rc = c->rcs[i];
  return rc;
}

static void completer_went_down(completer_t *c, int rc, const char *why) {
  if (c->down) return;
  pawl__metrics_add(c->h->metrics, MET_DB_ERRORS, 1);
  c->down = rc;
  snprintf(c->err, sizeof c->err, "%s", why);
}

/* Text from the store made safe to store and log (valid UTF-8, no NUL),
 * cut to fit `len` (a byte may become three). */
static void completer_reason(char *out, size_t len, const char *why) {
  char *safe = pawl__utf8_scrub(why, strnlen(why, (len - 1) / 3), NULL);
  snprintf(out, len, "%s", safe ? safe : "the database refused it");
  pawl__free(safe);
}

static void completer_free_logs(host_outcome_t *o) {
  for (size_t i = 0; i < o->nlogs; i++) {
    pawl__free((char *)o->logs[i].level);
    pawl__free((char *)o->logs[i].message);
    pawl__free((char *)o->logs[i].fields);
  }
  pawl__free(o->logs);
  o->logs = NULL;
  o->nlogs = 0;
  o->out.logs = NULL;
  o->out.nlogs = 0;
}

/* First rewrite of a refused outcome: the same outcome without its log
 * lines, and one line saying they were dropped (none when out of memory).
 * Returns 0. */
static int completer_strip_logs(host_outcome_t *o, const char *why) {
  size_t n = o->nlogs;
  completer_free_logs(o);
  pawl_log_entry_t *e = pawl__calloc(1, sizeof *e);
  char *msg = NULL;
  if (!e || pawl__asprintf(&msg, "%zu log line%s of this attempt could not be "
                     "stored: %s", n, n == 1 ? "" : "s", why) < 0) {
    pawl__free(e);
    return 0; /* the outcome goes without its note */
  }
  e->level = pawl__strdup("warn");
  e->message = msg;
  if (!e->level) {
    pawl__free(msg);
    pawl__free(e);
    return 0;
  }
  o->logs = e;
  o->nlogs = 1;
  o->out.logs = e;
  o->out.nlogs = 1;
  return 0;
}

/* Second rewrite: no log lines, and a failure saying what could not be
 * stored in place of what was refused. A success becomes a failure for
 * good (dead-lettered): the retry policy is Lua, which the completer does
 * not run, and the refusal is about the data, which a retry would likely
 * produce again; an operator can `pawl retry` it. A retry keeps its time,
 * a failure stays one. Hooks do not run for a rewritten outcome. Returns
 * -1 when out of memory. */
static int completer_rewrite(host_outcome_t *o, const char *why) {
  completer_free_logs(o);
  o->hooks = 0;
  const char *what = NULL;
  switch (o->out.kind) {
  case PAWL_OUT_SUCCEEDED:
    o->out.kind = PAWL_OUT_FAILED;
    what = "the job's result could not be stored";
    break;
  case PAWL_OUT_FAILED:
  case PAWL_OUT_RETRY:
    what = "the job's outcome could not be stored";
    break;
  default:
    return 0; /* nothing of its own to replace */
  }
  char *msg = NULL;
  if (pawl__asprintf(&msg, "%s: %s", what, why) < 0) return -1;
  pawl__free(o->result);
  o->result = NULL;
  pawl__free(o->branches);
  o->branches = NULL;
  o->out.branches = NULL;
  pawl__free(o->error);
  o->error = msg;
  pawl__free(o->trace);
  o->trace = NULL;
  o->out.trace = NULL;
  o->out.result = NULL;
  o->out.error = msg;
  return 0;
}

static const char *const completer_kinds[] = {
    [PAWL_OUT_SUCCEEDED] = "succeeded", [PAWL_OUT_FAILED] = "failed",
    [PAWL_OUT_RETRY] = "retry", [PAWL_OUT_SNOOZE] = "snooze",
    [PAWL_OUT_RELEASE] = "release", [PAWL_OUT_STARTED] = "started"};

/* An outcome that will not be stored: logged with its job id, counted for
 * pawl_host_status(), and sent on its way with `rc` (its hooks, if any,
 * are only released). Its job stays running until the lease expires, when
 * lease recovery takes it back. */
static void completer_unstored(completer_t *c, host_outcome_t *o, int rc,
                               const char *msg, const char *why) {
  host_t *h = c->h;
  log_line_t line;
  pawl__log_begin(&line, &h->log, PAWL_LOG_ERROR, msg);
  pawl__log_id(&line, "job", &o->out.id);
  if (o->job) pawl__log_str(&line, "type", o->job->type);
  pawl__log_int(&line, "attempt", o->out.attempt);
  pawl__log_str(&line, "outcome", completer_kinds[o->out.kind]);
  pawl__log_str(&line, "error", why);
  pawl__log_end(&line);
  pthread_mutex_lock(&h->mu);
  h->unstored++;
  h->unstored_rc = rc;
  /* The reason, cut to fit (the log line above has all of it). */
  size_t n = strnlen(why, sizeof h->unstored_msg - 1);
  memcpy(h->unstored_msg, why, n);
  h->unstored_msg[n] = 0;
  pthread_mutex_unlock(&h->mu);
  o->rc = rc;
  o->hooks = 0;
  completer_push(&c->done_tail, o);
}

/* An outcome the database refused on its own (rc, why): rewritten, first
 * without its log lines, then as a failure saying what was refused, and
 * written alone each time; refused a third time, it is dropped. The
 * rewrites stay with the outcome, so one kept for later (the database
 * went away meanwhile) goes on from where it was. */
static void completer_refused(completer_t *c, host_outcome_t *o, int rc,
                              const char *why_in) {
  char why[1024];
  if (o->out.kind == PAWL_OUT_STARTED) {
    /* A start record is not an outcome: nothing is lost without it (the
     * attempt's end carries its start), and rewriting it as a failure
     * would end a job that is still running. It is let go, said once. */
    completer_reason(why, sizeof why, why_in);
    log_line_t line;
    pawl__log_begin(&line, &c->h->log, PAWL_LOG_WARN,
                    "the database refused an attempt's start: its end will "
                    "record it");
    pawl__log_id(&line, "job", &o->out.id);
    pawl__log_int(&line, "attempt", o->out.attempt);
    pawl__log_str(&line, "error", why);
    pawl__log_end(&line);
    o->rc = rc;
    o->hooks = 0;
    completer_push(&c->done_tail, o);
    return;
  }
  for (;;) {
    completer_reason(why, sizeof why, why_in);
    int step = ++o->refusals;
    if (step == 1 && o->nlogs == 0) step = ++o->refusals;
    int oom = 0;
    if (step == 1) {
      oom = completer_strip_logs(o, why);
      log_line_t line;
      pawl__log_begin(&line, &c->h->log, PAWL_LOG_WARN,
                "the database refused an outcome: writing it again without "
                "its log lines");
      pawl__log_id(&line, "job", &o->out.id);
      pawl__log_str(&line, "error", why);
      pawl__log_end(&line);
    } else if (step == 2) {
      log_line_t line;
      pawl__log_begin(&line, &c->h->log, PAWL_LOG_ERROR,
                "the database refused an outcome: storing a failure that "
                "says so instead");
      pawl__log_id(&line, "job", &o->out.id);
      pawl__log_str(&line, "outcome", completer_kinds[o->out.kind]);
      pawl__log_str(&line, "error", why);
      pawl__log_end(&line);
      oom = completer_rewrite(o, why);
    }
    if (step > 2 || oom) {
      completer_unstored(c, o, rc,
                         "outcome dropped: the database refused it and its "
                         "replacement; the job is taken back when its lease "
                         "expires",
                         why);
      return;
    }
    rc = completer_finish(c, &o, 1);
    if (rc == 0) {
      if (o->rc == 0 || o->rc == PAWL_ELEASE) {
        completer_push(&c->done_tail, o);
        return;
      }
      rc = o->rc;
      why_in = pawl_strerror(rc);
    } else if (completer_transient(rc)) {
      completer_went_down(c, rc, pawl_errmsg(c->p));
      completer_push(&c->again_tail, o);
      return;
    } else {
      why_in = pawl_errmsg(c->p);
    }
  }
}

/* Writes b[0..n). Written outcomes go to done. When the database refuses
 * the batch, the batch is halved until each refused outcome stands alone
 * (the others are written), and each of those is rewritten. Once the
 * database is found away, nothing more is tried this round: the rest is
 * kept, in order, for the next. */
static void completer_write(completer_t *c, host_outcome_t **b, size_t n,
                            int top) {
  if (c->down) {
    for (size_t i = 0; i < n; i++) completer_push(&c->again_tail, b[i]);
    return;
  }
  int rc = completer_finish(c, b, n);
  if (rc == 0) {
    for (size_t i = 0; i < n; i++) {
      if (b[i]->rc == 0 || b[i]->rc == PAWL_ELEASE)
        completer_push(&c->done_tail, b[i]);
      else
        completer_refused(c, b[i], b[i]->rc, pawl_strerror(b[i]->rc));
    }
    return;
  }
  if (completer_transient(rc)) {
    completer_went_down(c, rc, pawl_errmsg(c->p));
    completer_write(c, b, n, 0); /* keeps them all */
    return;
  }
  if (n == 1) {
    completer_refused(c, b[0], rc, pawl_errmsg(c->p));
    return;
  }
  if (top) {
    log_line_t line;
    pawl__log_begin(&line, &c->h->log, PAWL_LOG_WARN,
              "the database refused a batch of outcomes: writing it in parts "
              "to find the refused ones");
    pawl__log_int(&line, "outcomes", (int64_t)n);
    pawl__log_str(&line, "error", pawl_errmsg(c->p));
    pawl__log_end(&line);
  }
  completer_write(c, b, n / 2, 0);
  completer_write(c, b + n / 2, n - n / 2, 0);
}

/* Waits `ms`, or less when the host starts stopping (or stops at once),
 * or its flush deadline passes. New outcomes do not cut it short: while
 * the database is away, they wait for the next round. Called with h->mu
 * held. */
static void completer_backoff(host_t *h, int64_t ms) {
  int64_t now = pawl__mono_ms(), until = now + ms;
  int stopping = h->stopping;
  while (now < until && h->stopping == stopping &&
         !(h->flush_until && now >= h->flush_until)) {
    int64_t left = until - now;
    if (h->flush_until && h->flush_until - now < left) left = h->flush_until - now;
    struct timespec ts = pawl__mono_deadline(left > 0 ? left : 1);
    pthread_cond_timedwait(&h->done_cv, &h->mu, &ts);
    now = pawl__mono_ms();
  }
}

/* Waits for outcomes, and takes up to a batch: everything that arrived
 * while the last one was written goes into one transaction (group commit);
 * those kept after a failed write come first. Returns how many, 0 when
 * the completer may end (nothing left, nothing more can come). */
static size_t completer_grab(completer_t *c);

static size_t completer_take(completer_t *c) {
  host_t *h = c->h;
  pthread_mutex_lock(&h->mu);
  for (;;) {
    while (!h->out_head && !c->pending && !pawl__host_events_ready(h) &&
           !completer_may_end(h, c->p)) {
      struct timespec ts = pawl__mono_deadline(50);
      pthread_cond_timedwait(&h->done_cv, &h->mu, &ts);
    }
    if (!pawl__host_events_ready(h)) break;
    /* The host's events are delivered on this thread (pawl.h). */
    pthread_mutex_unlock(&h->mu);
    pawl__host_events_deliver(h);
    pthread_mutex_lock(&h->mu);
  }
  size_t n = completer_grab(c);
  pthread_mutex_unlock(&h->mu);
  return n;
}

/* Takes up to a batch of what is there now (kept ones first). Called
 * with h->mu held. */
static size_t completer_grab(completer_t *c) {
  host_t *h = c->h;
  size_t n = 0;
  while (c->pending && n < HOST_BATCH) {
    c->batch[n++] = c->pending;
    c->pending = c->pending->next;
  }
  while (h->out_head && n < HOST_BATCH) {
    host_outcome_t *o = h->out_head;
    h->out_head = o->next;
    if (!h->out_head) h->out_tail = NULL;
    h->outcomes--;
    /* A start whose attempt's end came before it was taken: the end
     * carries it (host_outcome_t.slot). */
    if (o->superseded) {
      pawl__host_outcome_free(o);
      continue;
    }
    if (o->slot) {
      *o->slot = NULL;
      o->slot = NULL;
    }
    c->batch[n++] = o;
  }
  h->writing = (int)n;
  return n;
}

/* One round: writes the batch; what is kept goes before whatever was
 * still left from before. */
static void completer_round(completer_t *c, size_t n) {
  host_t *h = c->h;
  c->done = c->again = NULL;
  c->done_tail = &c->done;
  c->again_tail = &c->again;
  c->down = 0;
  if (!c->p) {
    /* Opened here, not by pawl_start, so that a database that is away
     * for a moment does not stop the host from starting; until it is
     * back, this is a failed write like any other. */
    char err[512];
    int rc = pawl__open_sibling(h->p, NULL, &c->p, err, sizeof err);
    if (rc) {
      c->p = NULL;
      completer_went_down(c, rc == PAWL_ENOMEM ? rc : PAWL_EUNAVAIL, err);
    }
  }
  pawl__metrics_complete_batch(h->metrics, n);
  completer_write(c, c->batch, n, 1);
  *c->again_tail = c->pending;
  c->pending = c->again;
}

/* Notes how the round went (for the give-up) and logs a failed one.
 * Returns 1 when the host is stopping and the deadline for writing has
 * passed: the rest is not to be tried again. */
static int completer_note(completer_t *c) {
  host_t *h = c->h;
  pthread_mutex_lock(&h->mu);
  h->writing = 0;
  if (!c->down) {
    h->writes_failing_since = 0;
  } else if (!h->writes_failing_since) {
    h->writes_failing_since = pawl__mono_ms();
    snprintf(h->write_err, sizeof h->write_err, "%s", c->err);
  }
  int give_up = c->down && h->stopping && h->flush_until &&
                pawl__mono_ms() >= h->flush_until;
  pthread_mutex_unlock(&h->mu);
  if (c->down) {
    log_line_t line;
    pawl__log_begin(&line, &h->log, PAWL_LOG_ERROR,
              give_up ? "writing outcomes failed; stopping: not trying "
                        "again"
                      : "writing outcomes failed; retrying");
    pawl__log_str(&line, "error", c->err);
    pawl__log_end(&line);
  }
  return give_up;
}

/* Stopping, and the deadline for writing has passed: the rest is not
 * stored. Each is listed; their jobs stay running until their leases
 * expire, and lease recovery takes them back. */
static void completer_abandon(completer_t *c) {
  size_t left = 0;
  while (c->pending) {
    host_outcome_t *o = c->pending;
    c->pending = o->next;
    if (o->out.kind == PAWL_OUT_STARTED) {
      /* Not an outcome (completer_refused()): its lease recovery says
       * what happened to the attempt. */
      o->rc = c->down;
      o->hooks = 0;
      completer_push(&c->done_tail, o);
      continue;
    }
    left++;
    completer_unstored(c, o, c->down,
                       "outcome not stored: the host is stopping and the "
                       "database does not take it; the job is taken back "
                       "when its lease expires",
                       c->err);
  }
  log_line_t line;
  pawl__log_begin(&line, &c->h->log, PAWL_LOG_ERROR,
            "outcomes not stored at the stop (listed above)");
  pawl__log_int(&line, "outcomes", (int64_t)left);
  pawl__log_end(&line);
}

/* Hands on what this round settled: each written outcome is logged, and
 * goes to its worker for the hooks or is freed; the poller is woken (a
 * slot freed up). Called with h->mu held. */
static void completer_settle(completer_t *c) {
  host_t *h = c->h;
  size_t kept = 0;
  for (host_outcome_t *o = c->pending; o; o = o->next) kept++;
  h->backlog = (int)kept;
  for (host_outcome_t *o = c->done, *next; o; o = next) {
    next = o->next;
    if (o->worker >= 0)
      h->avg_job_ms = 0.95 * h->avg_job_ms + 0.05 * o->duration_ms;
    if (o->rc == 0 || o->rc == PAWL_ELEASE) completer_log(h, o);
    if (o->rc == 0 && o->worker >= 0) {
      completer_metrics(h, o);
      completer_event(h, o);
    }
    if (o->worker >= 0 && o->hook_ref >= 0) {
      /* Hooks run in the worker whose state holds their reference (one
       * not stored only releases it there). */
      worker_t *w = h->workers[o->worker];
      o->next = w->inbox;
      w->inbox = o;
      pthread_cond_broadcast(&h->work_cv);
    } else {
      pawl__host_outcome_free(o);
    }
  }
  h->wake = 1;
  pthread_cond_signal(&h->poll_cv);
}

int pawl__completer_drain(completer_t *c, pawl_t *p) {
  host_t *h = c->h;
  c->p = p;
  int down = 0;
  for (;;) {
    pthread_mutex_lock(&h->mu);
    size_t n = completer_grab(c);
    pthread_mutex_unlock(&h->mu);
    if (n == 0) break;
    completer_round(c, n);
    int give_up = completer_note(c);
    if (give_up) completer_abandon(c);
    pthread_mutex_lock(&h->mu);
    completer_settle(c);
    pthread_mutex_unlock(&h->mu);
    /* Away: what is kept is written at the next drain. */
    if (c->down && !give_up) {
      down = c->down;
      break;
    }
  }
  c->p = NULL;
  return down;
}

void *pawl__completer_main(void *arg) {
  completer_t *c = arg;
  host_t *h = c->h;
  int64_t backoff = 10;
  size_t n;
  while ((n = completer_take(c)) > 0) {
    completer_round(c, n);
    int give_up = completer_note(c);
    if (give_up) completer_abandon(c);
    pthread_mutex_lock(&h->mu);
    completer_settle(c);
    if (c->down && !give_up) {
      completer_backoff(h, backoff);
      if (backoff < 2000) backoff *= 2;
    } else if (!c->down) {
      backoff = 10;
    }
    pthread_mutex_unlock(&h->mu);
    pawl__host_events_deliver(h);
  }
  pawl__host_events_deliver(h);
  pawl_close(c->p);
  c->p = NULL;
  pthread_mutex_lock(&h->mu);
  h->completer_done = 1;
  pthread_cond_broadcast(&h->work_cv);
  pthread_cond_broadcast(&h->stop_cv);
  pthread_mutex_unlock(&h->mu);
  return NULL;
}
