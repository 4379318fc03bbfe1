/* plan.c: what every backend decides the same way: an operator's
 * transition, a recovery, the ending of an attempt, the steps of a
 * transition and of a manual retry's reopening of dependencies, and the
 * checks of a signal. The backends write what is decided here. */
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

/* ---- what every backend decides the same way ---------------------------- */

const char *pawl__store_op_name(store_op_t op) {
  switch (op) {
  case STORE_OP_CANCEL: return "cancel";
  case STORE_OP_PAUSE: return "pause";
  case STORE_OP_RESUME: return "resume";
  case STORE_OP_RETRY: return "retry";
  case STORE_OP_UNBLOCK: return "unblock";
  case STORE_OP_EXPIRE: return "expire";
  case STORE_OP_REOPEN: return "reopen";
  }
  return "?";
}

/* The state machine's operator transitions, in one place. */
void pawl__store_plan_transition(const pawl_job_t *j, store_op_t op, int64_t now,
                           store_plan_t *out) {
  int from = j->state;
  *out = (store_plan_t){.to = -1,
                        .paused_from = -1,
                        .run_at = j->run_at,
                        .finished_at = j->finished_at,
                        .attempt = j->attempt,
                        .recoveries = j->recoveries,
                        .last_error = j->last_error,
                        .result = j->result};
  switch (op) {
  case STORE_OP_CANCEL:
    if (from == PAWL_CANCELED) out->noop = 1;
    else if (from == PAWL_PENDING || from == PAWL_RUNNING ||
             from == PAWL_BLOCKED || from == PAWL_PAUSED) {
      out->to = PAWL_CANCELED;
      out->finished_at = now;
      out->finishes = 1;
    }
    break;
  case STORE_OP_PAUSE:
    if (from == PAWL_PAUSED) out->noop = 1;
    else if (from == PAWL_PENDING || from == PAWL_FAILED) {
      out->to = PAWL_PAUSED;
      out->paused_from = from;
    }
    break;
  case STORE_OP_RESUME:
    if (from == PAWL_PAUSED) out->to = j->paused_from;
    else if (from == PAWL_PENDING || from == PAWL_FAILED) out->noop = 1;
    break;
  case STORE_OP_RETRY:
    if (from == PAWL_PENDING) out->noop = 1;
    else if (from == PAWL_FAILED) {
      out->to = PAWL_PENDING;
      out->run_at = now;
      out->attempt = 0;
      out->recoveries = 0;
      out->last_error = NULL;
      out->result = NULL;
      out->finished_at = 0;
    }
    break;
  case STORE_OP_UNBLOCK:
    if (from == PAWL_PENDING) out->noop = 1;
    else if (from == PAWL_BLOCKED) out->to = PAWL_PENDING;
    break;
  case STORE_OP_EXPIRE:
    if (from == PAWL_FAILED) out->noop = 1;
    else if (from == PAWL_BLOCKED) {
      out->to = PAWL_FAILED;
      out->finished_at = now;
      out->finishes = 1;
      out->last_error = "wait timed out";
    }
    break;
  case STORE_OP_REOPEN:
    if (from == PAWL_BLOCKED) out->noop = 1;
    else if (from == PAWL_CANCELED) {
      out->to = PAWL_BLOCKED;
      out->finished_at = 0;
    }
    break;
  }
}

void pawl__store_plan_recovery(const store_lost_t *l, int64_t poison_limit,
                         store_recovery_t *out) {
  memset(out, 0, sizeof *out);
  out->to = PAWL_PENDING;
  const char *owner = l->owner ? l->owner : "?";
  out->crashed = l->started;
  /* max_attempts 0: the script decides, on the worker; never here. */
  int last = l->max_attempts > 0 && l->attempt >= l->max_attempts;
  if (l->started && l->crashes + 1 > poison_limit) {
    out->to = PAWL_FAILED;
    snprintf(out->why, sizeof out->why,
             "recovered from node %s: lease expired; lost while running %d "
             "times: poison job",
             owner, (int)l->crashes + 1);
    return;
  }
  if (last) out->to = PAWL_FAILED;
  snprintf(out->why, sizeof out->why, "recovered from node %s: lease expired%s%s",
           owner,
           l->started            ? ""
           : l->recoveries > 0   ? " before the job started (not counted as "
                                   "a crash)"
                                 : " (not known to have started: not counted "
                                   "as a crash)",
           last ? "; no attempts left" : "");
}

/* ---- finishing and transitions ------------------------------------------------ */

int pawl__store_plan_ending(store_t *st, const pawl_outcome_t *o, int64_t now,
                            store_ending_t *out) {
  memset(out, 0, sizeof *out);
  out->to = PAWL_PENDING;
  out->run_at = o->run_at;
  switch (o->kind) {
  case PAWL_OUT_FAILED:
    out->outcome = "failed";
    out->error = o->error;
    out->to = PAWL_FAILED;
    out->run_at = -1;
    snprintf(out->why, sizeof out->why, "attempts exhausted or fatal error");
    return 0;
  case PAWL_OUT_RETRY:
    out->outcome = "retry";
    out->error = o->error;
    snprintf(out->why, sizeof out->why, "retry in %lld ms",
             (long long)(o->run_at - now));
    return 0;
  case PAWL_OUT_SNOOZE:
    out->outcome = "snoozed";
    out->give_back = 1;
    snprintf(out->why, sizeof out->why, "snoozed for %lld ms",
             (long long)(o->run_at - now));
    return 0;
  case PAWL_OUT_RELEASE:
    out->outcome = "released";
    out->give_back = 1;
    out->run_at = -1;
    /* Why its node gave it back: the error text when it says (a job
     * claimed ahead of workers busy on long jobs), else a stop. */
    snprintf(out->why, sizeof out->why, "released: %.80s",
             o->error ? o->error : "node stopping");
    return 0;
  default:
    return pawl__store_fail(st, PAWL_EINVAL, "unknown outcome kind %d",
                            (int)o->kind);
  }
}

/* The transition refused: the job is not in a state it leaves that way. */
static int store_not_allowed(store_t *st, const pawl_id_t *id, store_op_t op,
                             int from) {
  char text[PAWL_ID_STRLEN];
  pawl_id_format(id, text);
  return pawl__store_fail(st, PAWL_ESTATE, "cannot %s job %s: it is %s",
                          pawl__store_op_name(op), text, pawl_state_name(from));
}

/* Writes what the plan decided: the end of a running attempt, the event,
 * the row (compare-and-set), and the recorded starts forgotten when the
 * poison count starts again. */
static int store_transition_write(store_t *st,
                                  const store_transition_steps_t *x,
                                  const pawl_job_t *j, store_op_t op,
                                  const store_plan_t *plan, int64_t now,
                                  const char *actor, const char *reason) {
  const pawl_id_t *id = &j->id;
  int from = j->state, rc = 0, changed = 0;
  /* A job canceled while running: its attempt ends here, recorded. */
  if (from == PAWL_RUNNING) rc = x->end_attempt(st, id, now, reason);
  if (!rc)
    rc = x->add_event(st, id, now, from, plan->to, actor, reason, j->attempt);
  if (!rc) rc = x->update(st, j, plan, now, &changed);
  if (rc == PAWL_EKEY) {
    char text[PAWL_ID_STRLEN];
    pawl_id_format(id, text);
    return pawl__store_fail(st, PAWL_EKEY,
                            "cannot %s job %s: its business key \"%s\" is "
                            "held by another live job",
                            pawl__store_op_name(op), text,
                            j->business_key ? j->business_key : "");
  }
  if (!rc && !changed)
    rc = pawl__store_fail(st, PAWL_ECONFLICT, "job changed concurrently");
  /* A manual retry starts the poison count again. */
  if (!rc && plan->recoveries == 0 && j->recoveries > 0)
    rc = x->forget_starts(st, id);
  if (!rc && plan->finishes) rc = x->finished(st, j, plan->to, now);
  /* Dependencies: a failed parent retried by hand. */
  if (!rc && op == STORE_OP_RETRY && from == PAWL_FAILED && x->reopen)
    rc = x->reopen(st, id, now, actor);
  if (!rc && plan->to == PAWL_PENDING && x->pending) rc = x->pending(st);
  return rc;
}

int pawl__store_deps_reopen(store_t *st, const store_transition_steps_t *x,
                            const store_reopen_steps_t *r, const pawl_id_t *id,
                            int64_t now, const char *actor) {
  /* Breadth first over the graph below `id`: edges point from older jobs
   * to newer ones, so it ends. A child reached twice (a diamond) is
   * reopened once; the second parent finds it blocked and uncounts. */
  struct item {
    pawl_id_t id;
    int state;
  } *q = pawl__malloc(sizeof *q);
  if (!q) return pawl__store_fail(st, PAWL_ENOMEM, "out of memory");
  size_t n = 1, cap = 1;
  q[0].id = *id;
  q[0].state = PAWL_FAILED;
  int rc = 0;
  for (size_t i = 0; i < n && !rc; i++) {
    pawl_id_t parent = q[i].id, *kids = NULL;
    size_t nkids = 0;
    char ptext[PAWL_ID_STRLEN];
    pawl_id_format(&parent, ptext);
    rc = r->uncount(st, &parent, q[i].state);
    if (!rc) rc = r->canceled(st, &parent, q[i].state, &kids, &nkids);
    for (size_t k = 0; k < nkids && !rc; k++) {
      char why[300];
      if (i == 0)
        snprintf(why, sizeof why,
                 "reopened: parent %s was retried by %s; this job, "
                 "canceled by its failure, waits for it again",
                 ptext, actor ? actor : "?");
      else
        snprintf(why, sizeof why,
                 "reopened: parent %s was reopened (a retry by %s); this "
                 "job, canceled by its cancel, waits for it again",
                 ptext, actor ? actor : "?");
      rc = pawl__store_transition_in(st, x, now, &kids[k], STORE_OP_REOPEN,
                                     actor, why, -1);
      if (!rc) rc = r->recount(st, &kids[k]);
      if (!rc && n == cap) {
        struct item *g = pawl__realloc(q, cap * 2 * sizeof *q);
        if (!g) rc = pawl__store_fail(st, PAWL_ENOMEM, "out of memory");
        else {
          q = g;
          cap *= 2;
        }
      }
      if (!rc) {
        q[n].id = kids[k];
        q[n++].state = PAWL_CANCELED;
      }
    }
    pawl__free(kids);
    if (!rc) rc = r->open(st, &parent);
  }
  pawl__free(q);
  return rc;
}

/* Decides and writes the transition of row `j` (read under the caller's
 * transaction). *noop: 1 when the job had already made it. */
static int store_transition_row(store_t *st, const store_transition_steps_t *x,
                                const pawl_job_t *j, store_op_t op,
                                int64_t now, const char *actor,
                                const char *reason, int *noop) {
  store_plan_t plan;
  pawl__store_plan_transition(j, op, now, &plan);
  *noop = plan.noop;
  if (plan.noop) return 0;
  if (plan.to < 0) return store_not_allowed(st, &j->id, op, j->state);
  return store_transition_write(st, x, j, op, &plan, now, actor, reason);
}

int pawl__store_owner_check(store_t *st, const pawl_id_t *id,
                            const char *type, const char *enqueued_by,
                            const char *owner) {
  if (!owner || (*owner && enqueued_by && strcmp(enqueued_by, owner) == 0))
    return 0;
  char text[PAWL_ID_STRLEN];
  pawl_id_format(id, text);
  return pawl__store_fail(st, PAWL_EPERM,
                          "job %s (%s) was enqueued by %s, not by %s",
                          text, type ? type : "?",
                          enqueued_by ? enqueued_by : "nobody recorded",
                          *owner ? owner : "code that runs for no job");
}

int pawl__store_transition(store_t *st, const store_transition_steps_t *x,
                           const pawl_id_t *id, store_op_t op,
                           const char *actor, const char *owner,
                           const char *reason, pawl_job_t **out) {
  pawl_job_t *j = NULL;
  int64_t now = 0;
  int noop = 0;
  int rc = x->begin(st);
  if (rc) return rc;
  /* The row is read (and, where the database can, locked until commit):
   * the decision below cannot race. */
  if ((rc = x->read(st, id, 1, &j))) return x->end(st, rc);
  if ((rc = pawl__store_owner_check(st, id, j->type, j->enqueued_by, owner))) {
    pawl_job_free(j);
    return x->end(st, rc);
  }
  if (!(rc = x->now(st, &now)))
    rc = store_transition_row(st, x, j, op, now, actor, reason, &noop);
  if (!rc && noop) {
    x->end(st, 0);
    if (out) *out = j;
    else pawl_job_free(j);
    return 0;
  }
  pawl_job_free(j);
  j = NULL;
  if (!rc && out) rc = x->read(st, id, 0, &j);
  rc = x->end(st, rc);
  if (rc) {
    pawl_job_free(j);
    return rc;
  }
  if (out) *out = j;
  return 0;
}

int pawl__store_transition_in(store_t *st, const store_transition_steps_t *x,
                              int64_t now, const pawl_id_t *id, store_op_t op,
                              const char *actor, const char *reason,
                              int64_t expect) {
  pawl_job_t *j = NULL;
  int noop = 0;
  int rc = x->read(st, id, 1, &j);
  if (rc) return rc;
  if (expect >= 0 && j->version != expect)
    rc = pawl__store_fail(st, PAWL_ECONFLICT, "job changed concurrently");
  else
    rc = store_transition_row(st, x, j, op, now, actor, reason, &noop);
  pawl_job_free(j);
  return rc;
}

/* ---- signals --------------------------------------------------------------- */

int pawl__store_signal_late(store_t *st, const pawl_id_t *id, const char *key,
                            int64_t deadline, int jstate) {
  char text[PAWL_ID_STRLEN], at[ISO8601_STRLEN];
  pawl_id_format(id, text);
  pawl__iso8601_format(deadline, at);
  return pawl__store_fail(st, PAWL_ESTATE,
                          "job %s: signal \"%s\" refused: its deadline "
                          "passed at %s; the wait timed out (the job is %s)",
                          text, key, at, pawl_state_name(jstate));
}

void pawl__store_signal_why(char *out, size_t len, const char *key,
                            int64_t deadline) {
  char by[ISO8601_STRLEN];
  pawl__iso8601_format(deadline, by);
  snprintf(out, len, "signal %s: no decision by %s", key, by);
}

pawl_signal_info_t *pawl__store_signal_new(
    const pawl_id_t *job, const char *key, int state, int64_t created_at,
    int64_t timeout_at, const char *decision, const char *payload,
    int64_t delivered_at, const char *delivered_by) {
  const char *src[4] = {key, decision, payload, delivered_by};
  size_t len[4], total = sizeof(pawl_signal_info_t);
  for (int i = 0; i < 4; i++) {
    len[i] = src[i] ? strlen(src[i]) + 1 : 0;
    total += len[i];
  }
  pawl_signal_info_t *s = pawl__malloc(total);
  if (!s) return NULL;
  memset(s, 0, sizeof *s);
  char *at = (char *)(s + 1);
  char **dst[4] = {&s->key, &s->decision, &s->payload, &s->delivered_by};
  for (int i = 0; i < 4; i++) {
    if (!src[i]) continue;
    memcpy(at, src[i], len[i]);
    *dst[i] = at;
    at += len[i];
  }
  s->job = *job;
  s->state = state;
  s->created_at = created_at;
  s->timeout_at = timeout_at;
  s->delivered_at = delivered_at;
  return s;
}
