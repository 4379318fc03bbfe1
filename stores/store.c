/* store.c: what all backends share: opening by URL, the clock, errors and
 * the migration checksum. */
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

int pawl__store_sqlite_open(store_t **out, const store_config_t *cfg,
                      const char *path, char *errbuf, size_t errlen);
int pawl__store_postgres_open(store_t **out, const store_config_t *cfg,
                        const char *conninfo, char *errbuf, size_t errlen);

/* Opens the backend the URL names. */
static int store_open_backend(store_t **out, const store_config_t *cfg,
                              char *errbuf, size_t errlen) {
  const char *url = cfg->url;
  if (url == NULL || *url == '\0') {
    snprintf(errbuf, errlen, "no database URL given");
    return PAWL_EINVAL;
  }
  if (strncmp(url, "sqlite:", 7) == 0)
    return pawl__store_sqlite_open(out, cfg, url + 7, errbuf, errlen);
  /* PostgreSQL: a libpq URI as it is, or "postgres:" followed by any
   * libpq connection string ("postgres:host=/run/x dbname=jobs"). */
  if (strncmp(url, "postgres://", 11) == 0 ||
      strncmp(url, "postgresql://", 13) == 0)
    return pawl__store_postgres_open(out, cfg, url, errbuf, errlen);
  if (strncmp(url, "postgres:", 9) == 0) {
    if (url[9] == '\0') {
      snprintf(errbuf, errlen,
               "database URL postgres: has no connection string");
      return PAWL_EINVAL;
    }
    return pawl__store_postgres_open(out, cfg, url + 9, errbuf, errlen);
  }
  char shown[512];
  pawl__redact_url(url, shown, sizeof shown); /* "postgresx://u:pw@..." */
  snprintf(errbuf, errlen,
           "database URL \"%s\" is not understood: expected sqlite:PATH, "
           "postgres://... or postgres:CONNINFO",
           shown);
  return PAWL_EINVAL;
}

int pawl__store_open(store_t **out, const store_config_t *cfg, char *errbuf,
                     size_t errlen) {
  store_t *st = NULL;
  int rc = store_open_backend(&st, cfg, errbuf, errlen);
  /* Tests only: a store that fails on purpose (host/core/fault.h). */
  if (!rc) rc = pawl__fault_store_wrap(&st, errbuf, errlen);
  if (!rc) *out = st;
  return rc;
}

int64_t pawl__store_now(store_t *st) {
  if (st->clock) return st->clock(st->clock_data);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + st->skew_ms;
}

int pawl__store_fail(store_t *st, int rc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(st->errmsg, sizeof st->errmsg, fmt, ap);
  va_end(ap);
  return rc;
}

int pawl__store_no_job(store_t *st, const pawl_id_t *id) {
  char text[PAWL_ID_STRLEN];
  pawl_id_format(id, text);
  return pawl__store_fail(st, PAWL_ENOTFOUND, "no job with id %s", text);
}

int pawl__store_not_held(store_t *st, const pawl_id_t *id, int32_t attempt) {
  char text[PAWL_ID_STRLEN];
  pawl_id_format(id, text);
  return pawl__store_fail(st, PAWL_ELEASE,
                    "job %s is not running under attempt %d on this node",
                    text, (int)attempt);
}

/* CRC-32 (IEEE 802.3, reflected), bit by bit: it runs once per migration at
 * start-up, so a table would buy nothing. */
static uint32_t store_crc32_add(uint32_t crc, const void *data, size_t len) {
  const unsigned char *p = data;
  for (size_t i = 0; i < len; i++) {
    crc ^= p[i];
    for (int k = 0; k < 8; k++) crc = (crc >> 1) ^ (0xedb88320u & -(crc & 1));
  }
  return crc;
}

uint32_t pawl__store_crc32(const void *data, size_t len) {
  return ~store_crc32_add(0xffffffffu, data, len);
}

/* CRC-32 of a migration's text without its comment-only lines (those whose
 * first characters after blanks are "--"), each kept line with its end. */
static uint32_t store_crc32_code(const char *sql, size_t len) {
  uint32_t crc = 0xffffffffu;
  size_t i = 0;
  while (i < len) {
    size_t end = i;
    while (end < len && sql[end] != '\n') end++;
    if (end < len) end++; /* the line's end belongs to it */
    size_t k = i;
    while (k < end && (sql[k] == ' ' || sql[k] == '\t')) k++;
    int comment = k + 1 < end && sql[k] == '-' && sql[k + 1] == '-';
    if (!comment) crc = store_crc32_add(crc, sql + i, end - i);
    i = end;
  }
  return ~crc;
}

/* Migrations whose comments were edited after they shipped (they cited
 * the tracker's numbers, which a reader of the schema cannot look up): a
 * database records the checksum of the text as shipped, which is still
 * accepted as long as the text without its comment lines is what it was
 * (`code`). Changing a statement of one of these files is refused like any
 * other edit. The sums are those of the files as shipped and as they are. */
static const struct {
  const char *backend, *name, *shipped, *code;
} store_comment_edits[] = {
#include "migration_comment_edits.h"
};

int pawl__store_sum_ok(const char *backend, const store_migration_t *m,
                       const char *recorded, char want[16]) {
  snprintf(want, 16, "%08x", pawl__store_crc32(m->sql, m->len));
  if (!recorded) return 0;
  if (!strcmp(recorded, want)) return 1;
  for (size_t i = 0; i < sizeof store_comment_edits / sizeof *store_comment_edits;
       i++) {
    if (strcmp(store_comment_edits[i].backend, backend) ||
        strcmp(store_comment_edits[i].name, m->name) ||
        strcmp(store_comment_edits[i].shipped, recorded))
      continue;
    char code[16];
    snprintf(code, sizeof code, "%08x", store_crc32_code(m->sql, m->len));
    return !strcmp(code, store_comment_edits[i].code);
  }
  return 0;
}

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

/* ---- alerts --------------------------------------------------------------- */

void pawl__store_alerts_free(store_alert_t *a, size_t n) {
  for (size_t i = 0; a && i < n; i++) {
    pawl__free(a[i].type);
    pawl__free(a[i].queue);
    pawl__free(a[i].error);
  }
  pawl__free(a);
}
