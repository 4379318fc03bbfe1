/* rows.c: the rows every backend reads the same way (jobs, attempts,
 * events, logs, steps, recurring definitions), the history they are
 * assembled into, the frees of what the stores hand out, and the
 * allocation seam the tests use to fail the Nth allocation. */
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

/* ---- allocation, with a seam for tests ------------------------------------ */

/* The test seam of pawl__store_fail_alloc_at(): how many allocations to go
 * until the one that fails; 0 when off (always, outside tests). */
static _Atomic int store_alloc_countdown;

void pawl__store_fail_alloc_at(int n) {
  atomic_store(&store_alloc_countdown, n > 0 ? n : 0);
}

/* 1 if the seam says this allocation fails. */
static int store_alloc_fails(void) {
  if (atomic_load_explicit(&store_alloc_countdown, memory_order_relaxed) <= 0)
    return 0;
  return atomic_fetch_sub(&store_alloc_countdown, 1) == 1;
}

/* Grows an array by one zeroed element; NULL when out of memory. */
void *pawl__store_push(void **arr, size_t *n, size_t size) {
  if (store_alloc_fails()) return NULL;
  void *p = pawl__realloc(*arr, (*n + 1) * size);
  if (!p) return NULL;
  *arr = p;
  memset((char *)p + *n * size, 0, size);
  return (char *)p + (*n)++ * size;
}

int pawl__store_dup(char **dst, const char *src) {
  *dst = NULL;
  if (!src) return 0;
  if (store_alloc_fails()) return -1;
  *dst = pawl__strdup(src);
  return *dst ? 0 : -1;
}

/* Appends a claim event (pending -> running) for an attempt, at `at`. */
static int store_push_claim(pawl_history_t *h, const pawl_attempt_t *a,
                            int64_t at) {
  pawl_event_t *e = pawl__store_push((void **)&h->events, &h->nevents, sizeof *e);
  if (!e) return -1;
  e->at = at;
  e->from_state = PAWL_PENDING;
  e->to_state = PAWL_RUNNING;
  e->attempt = a->attempt;
  /* Both tried, so that a failure leaves nothing half-made to account for:
   * whatever was copied is in h, which the caller frees. */
  int rc = pawl__store_dup(&e->actor, a->node);
  return pawl__store_dup(&e->reason, "claimed") | rc;
}

void pawl__store_events_free(pawl_event_t *rows, size_t nrows) {
  for (size_t i = 0; i < nrows; i++) {
    pawl__free(rows[i].actor);
    pawl__free(rows[i].reason);
  }
  pawl__free(rows);
}

/* The order is the order things were recorded in, not a sort by time
 * (several can share a millisecond): every attempt row is written together
 * with the event that ended it, the one event leaving `running`, so the
 * n-th such event is preceded by the claim of the n-th recorded attempt;
 * the attempt on the row comes last. */
int pawl__store_history_assemble(pawl_history_t *h, const pawl_job_t *j,
                           pawl_event_t *rows, size_t nrows) {
  int oom = 0;
  pawl_event_t *e = pawl__store_push((void **)&h->events, &h->nevents, sizeof *e);
  if (!e) oom = 1;
  else {
    e->at = j->created_at;
    e->from_state = -1;
    e->to_state = PAWL_PENDING; /* or blocked: see below */
    oom |= pawl__store_dup(&e->actor, j->enqueued_by);
    oom |= pawl__store_dup(&e->reason, "enqueued");
  }
  size_t next_attempt = 0;
  for (size_t i = 0; !oom && i < nrows; i++) {
    pawl_event_t *row = &rows[i];
    /* A recorded attempt keeps no claim time: its event is at the body's
     * start, or, for an attempt that never started (claimed ahead, then
     * handed back or lost), at its end. */
    const pawl_attempt_t *ra =
        row->from_state == PAWL_RUNNING && next_attempt < h->nattempts
            ? &h->attempts[next_attempt++]
            : NULL;
    if (ra && store_push_claim(h, ra, ra->started_at ? ra->started_at
                                                     : ra->ended_at)) {
      oom = 1;
      break;
    }
    /* Enqueued blocked: its first transition leaves `blocked`. */
    if (row->from_state == PAWL_BLOCKED && h->nevents == 1)
      h->events[0].to_state = PAWL_BLOCKED;
    e = pawl__store_push((void **)&h->events, &h->nevents, sizeof *e);
    if (!e) {
      oom = 1;
      break;
    }
    *e = *row; /* its strings move with it */
    row->actor = row->reason = NULL;
  }
  pawl__store_events_free(rows, nrows); /* what was not moved, and the array */
  if (!oom && h->nevents == 1 && j->state == PAWL_BLOCKED)
    h->events[0].to_state = PAWL_BLOCKED;
  /* The attempt whose history lives on the row: running now, or the one
   * that succeeded. */
  if (!oom && (j->state == PAWL_RUNNING || j->state == PAWL_SUCCEEDED)) {
    pawl_attempt_t *a =
        pawl__store_push((void **)&h->attempts, &h->nattempts, sizeof *a);
    if (!a) oom = 1;
    else {
      a->attempt = j->attempt;
      a->scheduled_at = j->run_at;
      a->started_at = j->started_at;
      a->ended_at = j->state == PAWL_SUCCEEDED ? j->finished_at : 0;
      oom |= pawl__store_dup(&a->node, j->lease_owner);
      /* Running with no start: claimed ahead of a free worker, waiting
       * for one. */
      oom |= pawl__store_dup(&a->outcome,
                             j->state == PAWL_SUCCEEDED ? "succeeded"
                             : j->started_at            ? "running"
                                                        : "claimed");
      /* A running job's updated_at is its claim's time (nothing else
       * writes it while it runs); a succeeded one's claim is its body's
       * start. */
      if (!oom && store_push_claim(h, a,
                                   j->state == PAWL_RUNNING ? j->updated_at
                                                            : a->started_at))
        oom = 1;
    }
    if (!oom && j->state == PAWL_SUCCEEDED) {
      e = pawl__store_push((void **)&h->events, &h->nevents, sizeof *e);
      if (!e) oom = 1;
      else {
        e->at = j->finished_at;
        e->from_state = PAWL_RUNNING;
        e->to_state = PAWL_SUCCEEDED;
        e->attempt = j->attempt;
        oom |= pawl__store_dup(&e->actor, j->lease_owner);
        oom |= pawl__store_dup(&e->reason, "succeeded");
      }
    }
  }
  return oom ? -1 : 0;
}

/* ---- rows ------------------------------------------------------------------ */

const unsigned char pawl__store_job_texts[STORE_JOB_NTEXT] = {
    STORE_JOB_TYPE,           STORE_JOB_QUEUE,        STORE_JOB_PAYLOAD,
    STORE_JOB_PARAMS,         STORE_JOB_TAGS,         STORE_JOB_IDEMPOTENCY_KEY,
    STORE_JOB_BUSINESS_KEY,   STORE_JOB_CORRELATION_ID, STORE_JOB_ENQUEUED_BY,
    STORE_JOB_LEASE_OWNER,    STORE_JOB_LAST_ERROR,   STORE_JOB_RESULT,
    STORE_JOB_ORDERING_KEY};

const unsigned char pawl__store_job_ints[STORE_JOB_NINT] = {
    STORE_JOB_STATE,        STORE_JOB_PAUSED_FROM,  STORE_JOB_PRIORITY,
    STORE_JOB_RUN_AT,       STORE_JOB_ATTEMPT,      STORE_JOB_MAX_ATTEMPTS,
    STORE_JOB_TIMEOUT_S,    STORE_JOB_CREATED_AT,   STORE_JOB_UPDATED_AT,
    STORE_JOB_STARTED_AT,   STORE_JOB_FINISHED_AT,  STORE_JOB_LEASE_EXPIRES,
    STORE_JOB_RECOVERIES,   STORE_JOB_VERSION,      STORE_JOB_DEPTH};

pawl_job_t *pawl__store_job_from_row(const store_job_row_t *r,
                                     const char *owner) {
  /* The string columns (pawl__store_job_texts), and where each goes. */
  enum { NSTR = STORE_JOB_NTEXT };
  const unsigned char *cols = pawl__store_job_texts;
  enum { OWNER = 9 }; /* lease_owner's place in cols */
  const char *text[NSTR];
  size_t len[NSTR], total = sizeof(pawl_job_t);
  for (int k = 0; k < NSTR; k++) {
    if (k == OWNER && owner) {
      text[k] = owner;
      len[k] = strlen(owner) + 1;
    } else {
      text[k] = r->text[cols[k]];
      len[k] = text[k] ? r->len[cols[k]] + 1 : 0;
    }
    total += len[k];
  }
  pawl_job_t *j = pawl__calloc(1, total);
  if (!j) return NULL;
  char **fields[NSTR] = {&j->type,           &j->queue,
                         &j->payload,        &j->params,
                         &j->tags,           &j->idempotency_key,
                         &j->business_key,   &j->correlation_id,
                         &j->enqueued_by,    &j->lease_owner,
                         &j->last_error,     &j->result,
                         &j->ordering_key};
  char *at = (char *)(j + 1);
  for (int k = 0; k < NSTR; k++) {
    if (!text[k]) continue;
    memcpy(at, text[k], len[k]);
    *fields[k] = at;
    at += len[k];
  }
  const int64_t *num = r->num;
  j->id = r->id;
  j->state = (pawl_state_t)num[STORE_JOB_STATE];
  j->paused_from = (pawl_state_t)num[STORE_JOB_PAUSED_FROM];
  j->priority = (int32_t)num[STORE_JOB_PRIORITY];
  j->run_at = num[STORE_JOB_RUN_AT];
  j->attempt = (int32_t)num[STORE_JOB_ATTEMPT];
  j->max_attempts = (int32_t)num[STORE_JOB_MAX_ATTEMPTS];
  j->timeout_s = (int32_t)num[STORE_JOB_TIMEOUT_S];
  j->created_at = num[STORE_JOB_CREATED_AT];
  j->updated_at = num[STORE_JOB_UPDATED_AT];
  j->started_at = num[STORE_JOB_STARTED_AT];
  j->finished_at = num[STORE_JOB_FINISHED_AT];
  j->lease_expires = num[STORE_JOB_LEASE_EXPIRES];
  j->recoveries = (int32_t)num[STORE_JOB_RECOVERIES];
  j->progress_done = r->progress_done;
  j->progress_total = r->progress_total;
  j->version = num[STORE_JOB_VERSION];
  j->depth = (int32_t)num[STORE_JOB_DEPTH];
  j->store_key = 0;
  if (!j->type || !j->queue || !j->payload || !j->tags) {
    pawl__free(j);
    return NULL;
  }
  return j;
}

/* *dst = a copy of column `col` (NULL for NULL), through the allocation
 * seam of pawl__store_dup(). -1 when out of memory. */
static int store_col_dup(char **dst, const store_row_t *r, int col) {
  size_t n;
  return pawl__store_dup(dst, r->text(r, col, &n));
}

int pawl__store_attempt_fill(pawl_attempt_t *a, const store_row_t *r) {
  a->attempt = (int32_t)r->int64(r, 0);
  a->scheduled_at = r->int64(r, 2);
  a->started_at = r->int64(r, 3);
  a->ended_at = r->int64(r, 4);
  int oom = store_col_dup(&a->node, r, 1);
  oom |= store_col_dup(&a->outcome, r, 5);
  oom |= store_col_dup(&a->error, r, 6);
  oom |= store_col_dup(&a->trace, r, 7);
  return oom ? -1 : 0;
}

int pawl__store_event_fill(pawl_event_t *e, const store_row_t *r) {
  e->at = r->int64(r, 0);
  e->from_state = (int)r->int64(r, 1);
  e->to_state = (int)r->int64(r, 2);
  e->attempt = (int32_t)r->int64(r, 5);
  int oom = store_col_dup(&e->actor, r, 3);
  oom |= store_col_dup(&e->reason, r, 4);
  return oom ? -1 : 0;
}

int pawl__store_step_fill(pawl_step_exec_t *e, const store_row_t *r) {
  e->seq = r->int64(r, 0);
  e->attempt = (int32_t)r->int64(r, 1);
  e->index = (int32_t)r->int64(r, 2);
  e->status = (int)r->int64(r, 4);
  e->started_at = r->int64(r, 5);
  e->ended_at = r->int64(r, 6);
  for (int k = 0; k < PAWL_STEP_NCOUNTS; k++) e->counts[k] = r->int64(r, 9 + k);
  e->checkpoint_at = r->int64(r, 16);
  int oom = store_col_dup(&e->name, r, 3);
  oom |= store_col_dup(&e->exit_code, r, 7);
  oom |= store_col_dup(&e->exit_message, r, 8);
  oom |= store_col_dup(&e->checkpoint, r, 15);
  return oom ? -1 : 0;
}

pawl_step_exec_t *pawl__store_step_push(pawl_steps_t *s) {
  return pawl__store_push((void **)&s->execs, &s->n, sizeof *s->execs);
}

int pawl__store_log_fill(pawl_log_record_t *l, const store_row_t *r) {
  size_t n;
  l->attempt = (int32_t)r->int64(r, 0);
  l->at = r->int64(r, 1);
  const char *level = r->text(r, 2, &n), *msg = r->text(r, 3, &n),
             *fields = r->text(r, 4, &n);
  l->level = level ? pawl__strdup(level) : NULL;
  l->message = msg ? pawl__strdup(msg) : NULL;
  l->fields = fields ? pawl__strdup(fields) : NULL;
  return !l->level || !l->message || (fields && !l->fields) ? -1 : 0;
}

/* ---- recurring definitions ----------------------------------------------- */

static int store_rec_text(char **dst, const store_row_t *r, int col) {
  size_t n;
  const char *t = r->text(r, col, &n);
  *dst = t ? pawl__strndup(t, n) : NULL;
  return t && !*dst ? -1 : 0;
}

int pawl__store_rec_fill(pawl_recurring_t *d, const store_row_t *r) {
  int bad = 0;
  bad |= store_rec_text(&d->name, r, 0);
  bad |= store_rec_text(&d->expr, r, 1);
  bad |= store_rec_text(&d->tz, r, 2);
  size_t n;
  const char *misfire = r->text(r, 3, &n);
  int m = pawl_misfire_parse(misfire);
  d->misfire = m < 0 ? PAWL_MISFIRE_RUN_ONCE : m;
  d->catch_up_limit = (int32_t)r->int64(r, 4);
  bad |= store_rec_text(&d->type, r, 5);
  bad |= store_rec_text(&d->payload, r, 6);
  bad |= store_rec_text(&d->queue, r, 7);
  d->priority = (int32_t)r->int64(r, 8);
  d->max_attempts = (int32_t)r->int64(r, 9);
  d->timeout_s = (int32_t)r->int64(r, 10);
  d->enabled = r->int64(r, 11) != 0;
  d->paused = r->int64(r, 12) != 0;
  const char *source = r->text(r, 13, &n);
  d->from_script = source && strcmp(source, "script") == 0;
  bad |= store_rec_text(&d->script, r, 14);
  d->next_fire_at = r->int64(r, 15);
  d->last_fire_at = r->int64(r, 16);
  d->has_last_job = r->text(r, 17, &n) != NULL;
  if (d->has_last_job) r->id(r, 17, &d->last_job_id);
  d->created_at = r->int64(r, 18);
  d->updated_at = r->int64(r, 19);
  d->version = r->int64(r, 20);
  bad |= store_rec_text(&d->load_error, r, 21);
  if (!d->name || !d->expr || !d->tz || !d->type || !d->payload) bad = -1;
  return bad ? -1 : 0;
}

/* ---- alerts --------------------------------------------------------------- */

void pawl__store_alerts_free(store_alert_t *a, size_t n) {
  for (size_t i = 0; a && i < n; i++) {
    pawl__free(a[i].type);
    pawl__free(a[i].queue);
    pawl__free(a[i].error);
  }
  pawl__free(a);
}
