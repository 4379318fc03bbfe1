/* recurring.c: recurring definitions: the public functions of
 * include/pawl.h ("recurring jobs"), the tick a host runs about once a
 * second, and the upsert of the definitions job scripts declare.
 *
 * The store only reads and writes rows (stores/store.h, "recurring"); what
 * fires when is decided here, with the cron core (host/core/cron.h):
 *
 *  - An occurrence is due when its time has come (<= now). One due for
 *    longer than PAWL_RECURRING_MISFIRE_MS (a minute, Quartz's default
 *    misfire threshold) when a tick sees it was *missed*: the hosts were
 *    down or stopped. A tick runs every second, and the tick lock may move
 *    between nodes, so one interval would call a busy second a misfire.
 *  - Occurrences on time always fire. Missed ones follow the policy:
 *    run_once enqueues one job for all of them, keyed by the most recent
 *    missed occurrence (found by a bisection over pawl__cron_next, about
 *    45 calls whatever the downtime); catch_up enqueues the oldest
 *    catch_up_limit of them, oldest first, and skips the rest; skip
 *    enqueues none. Then the schedule moves to the first fire after now.
 *  - Each occurrence's job has run_at = the occurrence (so catch-up jobs
 *    run oldest first) and the idempotency key "cron:NAME:EPOCH" (seconds):
 *    the insert and the advance (a compare-and-set on next_fire_at) are
 *    one transaction, and a second node or a retry after a crash between
 *    them finds the key and makes no second job. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "bounds.h"
#include "cron.h"
#include "handle.h"
#include "json.h"
#include "pawl.h"
#include "pawl_internal.h"
#include "store.h"
#include "tz.h"

/* Definitions read per batch of a tick, and on-time occurrences one
 * definition fires per tick at most (an every-second expression after a
 * stall of less than a minute; the rest come at the next batch). */
#define REC_BATCH 500
#define REC_ONTIME_MAX 64
/* Compare-and-set retries of an operator's change racing a tick. */
#define REC_RETRIES 20
/* The tick lock's name. */
#define REC_LOCK "pawl.recurring"

void pawl_recurring_opts_init(pawl_recurring_opts_t *o) {
  memset(o, 0, sizeof *o);
}

/* ---- checks --------------------------------------------------------------- */

static int rec_check_int(pawl_t *p, const char *what, int64_t v, int64_t min,
                         int64_t max) {
  if (pawl__bounds_check_int(what, v, min, max, NULL, p->errmsg,
                             sizeof p->errmsg))
    return PAWL_EINVAL;
  return 0;
}

/* The expression and zone, parsed; a one-line message naming the field and
 * the value otherwise (the script checks, host/lua/host_fns.c, word it the
 * same way). */
static int rec_parse(const char *expr, const char *tz, pawl__cron_t *c,
                          const pawl__tz_t **zone, char *err, size_t errlen) {
  char why[PAWL__TZ_ERRLEN];
  if (!expr || !*expr) {
    snprintf(err, errlen, "cron: the expression must not be empty");
    return PAWL_EINVAL;
  }
  if (pawl__cron_parse(expr, c, why, sizeof why) != 0) {
    snprintf(err, errlen, "cron: bad expression \"%.200s\": %.250s", expr,
             why);
    return PAWL_EINVAL;
  }
  int rc = pawl__tz_get(tz && *tz ? tz : "UTC", zone, why, sizeof why);
  if (rc) {
    snprintf(err, errlen, "tz: %.480s", why);
    return rc == PAWL_ENOMEM ? rc : PAWL_EINVAL;
  }
  return 0;
}

/* The first fire strictly after `after` (0: none before year 10000). */
static int64_t rec_next(const pawl__cron_t *c, const pawl__tz_t *z,
                        int64_t after) {
  int64_t t;
  if (after < PAWL__CRON_MIN_MS) after = PAWL__CRON_MIN_MS;
  return pawl__cron_next(c, z, after, &t) == 0 ? t : 0;
}

/* Checks a whole definition (an operator's, or a script's: `d` as it will
 * be stored) and parses its schedule. */
static int rec_check(pawl_t *p, const pawl_recurring_t *d, pawl__cron_t *c,
                     const pawl__tz_t **z) {
  int rc;
  if ((rc = pawl__check_name(p, "recurring name", d->name))) return rc;
  if ((rc = pawl__check_name(p, "job type", d->type))) return rc;
  if (d->queue && (rc = pawl__check_name(p, "queue name", d->queue))) return rc;
  if (d->misfire < 0 || d->misfire > PAWL_MISFIRE_SKIP)
    return pawl__fail(p, PAWL_EINVAL,
                      "misfire must be run_once (0), catch_up (1) or skip "
                      "(2) (got %d)", d->misfire);
  if ((rc = rec_check_int(p, "catch_up_limit", d->catch_up_limit, 1,
                          PAWL_CATCH_UP_LIMIT_MAX)))
    return rc;
  if ((rc = rec_check_int(p, "priority", d->priority, PAWL_PRIORITY_MIN,
                          PAWL_PRIORITY_MAX)))
    return rc;
  if (d->max_attempts &&
      (rc = rec_check_int(p, "max_attempts", d->max_attempts, 1,
                          PAWL_ATTEMPTS_MAX)))
    return rc;
  if (d->timeout_s &&
      (rc = rec_check_int(p, "timeout", d->timeout_s, 1, PAWL_TIMEOUT_MAX_S)))
    return rc;
  char err[256];
  if (pawl__json_validate(d->payload, strlen(d->payload), err, sizeof err))
    return pawl__fail(p, PAWL_EINVAL, "payload is not valid JSON: %s", err);
  return rec_parse(d->expr, d->tz, c, z, p->errmsg,
                               sizeof p->errmsg);
}

/* Copies o's fields named by `fields` into d (strings borrowed from o). */
static void rec_apply(pawl_recurring_t *d, const pawl_recurring_opts_t *o,
                      unsigned fields) {
  if (fields & PAWL_REC_EXPR) d->expr = (char *)o->expr;
  if (fields & PAWL_REC_TZ) d->tz = (char *)(o->tz ? o->tz : "UTC");
  if (fields & PAWL_REC_MISFIRE) d->misfire = o->misfire;
  if (fields & PAWL_REC_CATCH_UP_LIMIT)
    d->catch_up_limit =
        o->catch_up_limit ? o->catch_up_limit : PAWL_CATCH_UP_LIMIT_DEFAULT;
  if (fields & PAWL_REC_TYPE) d->type = (char *)(o->type ? o->type : d->name);
  if (fields & PAWL_REC_PAYLOAD)
    d->payload = (char *)(o->payload ? o->payload : "{}");
  if (fields & PAWL_REC_QUEUE) d->queue = (char *)o->queue;
  if (fields & PAWL_REC_PRIORITY) d->priority = o->priority;
  if (fields & PAWL_REC_MAX_ATTEMPTS) d->max_attempts = o->max_attempts;
  if (fields & PAWL_REC_TIMEOUT) d->timeout_s = o->timeout_s;
}

/* ---- the operator's functions ------------------------------------------------ */

int pawl_recurring_add(pawl_t *p, const char *name,
                       const pawl_recurring_opts_t *o) {
  PAWL__CHECK(p);
  p->errmsg[0] = 0;
  if (!o) return pawl__fail(p, PAWL_EINVAL, "no options (the expression)");
  int rc = pawl__check_name(p, "recurring name", name);
  if (rc) return rc;
  if (!o->expr)
    return pawl__fail(p, PAWL_EINVAL, "cron: an expression is required");
  pawl_recurring_t d;
  memset(&d, 0, sizeof d);
  d.name = (char *)name;
  d.enabled = 1;
  rec_apply(&d, o, PAWL_REC_ALL);
  pawl__cron_t c;
  const pawl__tz_t *z;
  if ((rc = rec_check(p, &d, &c, &z))) return rc;
  d.next_fire_at = rec_next(&c, z, pawl__store_now(p->store));
  int done = 0;
  return pawl__from_store(p, p->store->ops->recurring.put(p->store, &d,
                                                        STORE_REC_ADD, &done));
}

/* Reads `name`, lets `change` decide the new row (0: write it, 1: nothing
 * to do, <0: refused), and writes it as a compare-and-set on the version,
 * again from the read when a tick or another operator got in between. */
typedef int (*rec_change_fn)(pawl_t *p, pawl_recurring_t *d, void *arg);

static int rec_modify(pawl_t *p, const char *name, rec_change_fn change,
                      void *arg) {
  p->errmsg[0] = 0;
  int rc = pawl__check_name(p, "recurring name", name);
  if (rc) return rc;
  for (int tries = 0; tries < REC_RETRIES; tries++) {
    pawl_recurring_t *d = NULL;
    if ((rc = pawl__from_store(p, p->store->ops->recurring.get(p->store, name,
                                                             &d))))
      return rc;
    /* The change may point d's strings at the caller's: keep the read
     * ones to free. */
    pawl_recurring_t read = *d;
    rc = change(p, d, arg);
    int changed = 0;
    if (rc == 0)
      rc = pawl__from_store(p, p->store->ops->recurring.update(p->store, d,
                                                             &changed));
    *d = read;
    pawl_recurring_free(d, 1);
    if (rc < 0) return rc;
    if (rc == 1 || changed) return 0;
  }
  return pawl__fail(p, PAWL_ECONFLICT,
                    "recurring definition \"%s\" kept changing under us; "
                    "try again", name);
}

typedef struct rec_set_arg {
  const pawl_recurring_opts_t *o;
  unsigned fields;
} rec_set_arg_t;

static int rec_set_change(pawl_t *p, pawl_recurring_t *d, void *arg) {
  const rec_set_arg_t *a = arg;
  char *expr = d->expr, *tz = d->tz;
  rec_apply(d, a->o, a->fields);
  pawl__cron_t c;
  const pawl__tz_t *z;
  int rc = rec_check(p, d, &c, &z);
  if (rc) return rc;
  /* A new schedule starts from now; the same one keeps its next fire. */
  if (strcmp(expr, d->expr) != 0 || strcmp(tz, d->tz) != 0 ||
      (!d->next_fire_at && !d->paused))
    d->next_fire_at = rec_next(&c, z, pawl__store_now(p->store));
  return 0;
}

int pawl_recurring_set(pawl_t *p, const char *name,
                       const pawl_recurring_opts_t *o, unsigned fields) {
  PAWL__CHECK(p);
  p->errmsg[0] = 0;
  if (fields & ~PAWL_REC_ALL)
    return pawl__fail(p, PAWL_EINVAL,
                      "fields 0x%x names no field (PAWL_REC_*: 0x1-0x%x)",
                      fields, PAWL_REC_ALL);
  if (!o && fields)
    return pawl__fail(p, PAWL_EINVAL, "no options for the fields to set");
  if ((fields & PAWL_REC_EXPR) && !o->expr)
    return pawl__fail(p, PAWL_EINVAL, "cron: the expression must not be empty");
  rec_set_arg_t a = {o, fields};
  return rec_modify(p, name, rec_set_change, &a);
}

static int rec_pause_change(pawl_t *p, pawl_recurring_t *d, void *arg) {
  int pause = *(int *)arg;
  if (d->paused == pause) return 1;
  d->paused = pause;
  if (!pause) {
    /* What would have fired while paused does not fire now. */
    pawl__cron_t c;
    const pawl__tz_t *z;
    int rc = rec_parse(d->expr, d->tz, &c, &z, p->errmsg,
                                   sizeof p->errmsg);
    if (rc) return rc;
    d->next_fire_at = rec_next(&c, z, pawl__store_now(p->store));
  }
  return 0;
}

int pawl_recurring_pause(pawl_t *p, const char *name) {
  PAWL__CHECK(p);
  int pause = 1;
  return rec_modify(p, name, rec_pause_change, &pause);
}

int pawl_recurring_resume(pawl_t *p, const char *name) {
  PAWL__CHECK(p);
  int pause = 0;
  return rec_modify(p, name, rec_pause_change, &pause);
}

int pawl_recurring_remove(pawl_t *p, const char *name) {
  PAWL__CHECK(p);
  p->errmsg[0] = 0;
  int rc = pawl__check_name(p, "recurring name", name);
  if (rc) return rc;
  return pawl__from_store(p, p->store->ops->recurring.remove(p->store, name));
}

int pawl_recurring_get(pawl_t *p, const char *name, pawl_recurring_t **out) {
  PAWL__CHECK(p);
  p->errmsg[0] = 0;
  int rc = pawl__check_name(p, "recurring name", name);
  if (rc) return rc;
  return pawl__from_store(p, p->store->ops->recurring.get(p->store, name, out));
}

int pawl_recurring_list(pawl_t *p, pawl_recurring_t **out, size_t *n) {
  PAWL__CHECK(p);
  p->errmsg[0] = 0;
  pawl_recurring_t *defs = NULL;
  size_t count = 0;
  int rc = pawl__from_store(p, p->store->ops->recurring.list(p->store, &defs,
                                                           &count));
  if (rc) return rc;
  *out = defs;
  *n = count;
  return 0;
}

/* The job of one occurrence of `d` at `at` (ms), its key in key[]. */
static void rec_job(const pawl_recurring_t *d, int64_t at, const char *key,
                    const char *by, store_new_job_t *j) {
  memset(j, 0, sizeof *j);
  pawl_id_new(&j->id);
  j->type = d->type;
  j->queue = d->queue ? d->queue : "default";
  j->priority = d->priority;
  j->payload = d->payload;
  j->tags = "[]";
  j->run_at = at;
  j->max_attempts = d->max_attempts;
  j->timeout_s = d->timeout_s;
  j->idempotency_key = key;
  j->enqueued_by = by;
}

int pawl_recurring_trigger(pawl_t *p, const char *name, pawl_id_t *out_id) {
  PAWL__CHECK(p);
  pawl_recurring_t *d = NULL;
  int rc = pawl_recurring_get(p, name, &d);
  if (rc) return rc;
  store_new_job_t j;
  char key[300], by[220];
  snprintf(by, sizeof by, "cron:%s", d->name);
  rec_job(d, 0, key, by, &j);
  char id[PAWL_ID_STRLEN];
  pawl_id_format(&j.id, id);
  /* The manual key never meets a scheduled one ("manual" is no epoch). */
  snprintf(key, sizeof key, "cron:%s:manual:%s", d->name, id);
  pawl_id_t got;
  int status;
  rc = pawl__from_store(p, p->store->ops->jobs.insert(p->store, &j, 1, &got,
                                                    &status));
  pawl_recurring_free(d, 1);
  if (rc) return rc;
  pawl__wake(p);
  if (out_id) *out_id = got;
  return 0;
}

/* ---- the tick ------------------------------------------------------------------ */

/* The most recent occurrence before `cutoff`, given that `first` (<
 * cutoff) is one: a bisection for the last instant t whose next fire is
 * still before cutoff (pawl__cron_next is monotonic in t), so about 45
 * calls whatever the distance. */
static int64_t rec_latest_before(const pawl__cron_t *c, const pawl__tz_t *z,
                                 int64_t first, int64_t cutoff) {
  int64_t lo = first, hi = cutoff - 1;
  int64_t x = rec_next(c, z, lo);
  if (!x || x >= cutoff) return first;
  /* cron_next(lo) < cutoff <= cron_next(hi) */
  while (hi - lo > 1) {
    int64_t mid = lo + (hi - lo) / 2;
    int64_t y = rec_next(c, z, mid);
    if (y && y < cutoff)
      lo = mid;
    else
      hi = mid;
  }
  return rec_next(c, z, lo);
}

/* A tick's batch: the advances and the jobs and keys they point into. */
typedef struct rec_batch {
  store_rec_advance_t adv[REC_BATCH];
  store_new_job_t *jobs;
  char (*keys)[260];
  char (*by)[220];
  size_t njobs, cap;
  int64_t occ[PAWL_CATCH_UP_LIMIT_MAX + REC_ONTIME_MAX + 1];
} rec_batch_t;

static int rec_reserve(rec_batch_t *b, size_t more) {
  if (b->njobs + more <= b->cap) return 0;
  size_t cap = b->cap ? b->cap : 1024;
  while (cap < b->njobs + more) cap *= 2;
  /* The advances point into the arrays: they are filled after the last
   * reservation of a batch (see rec_plan). */
  void *j = pawl__realloc(b->jobs, cap * sizeof *b->jobs);
  if (!j) return -1;
  b->jobs = j;
  void *k = pawl__realloc(b->keys, cap * sizeof *b->keys);
  if (!k) return -1;
  b->keys = k;
  void *y = pawl__realloc(b->by, cap * sizeof *b->by);
  if (!y) return -1;
  b->by = y;
  b->cap = cap;
  return 0;
}

/* Decides what definition `d` (due at `now`) fires: its occurrences'
 * jobs appended to the batch (a->jobs set later, as an offset in
 * a->njobs' place), and its new schedule. */
static int rec_plan(rec_batch_t *b, const pawl_recurring_t *d, int64_t now,
                    store_rec_advance_t *a, size_t *first_job) {
  memset(a, 0, sizeof *a);
  a->name = d->name;
  a->expect_next = d->next_fire_at;
  *first_job = b->njobs;
  pawl__cron_t c;
  const pawl__tz_t *z;
  char err[PAWL__TZ_ERRLEN];
  if (rec_parse(d->expr, d->tz, &c, &z, err, sizeof err) != 0) {
    /* Stored, so it parsed once: its zone file is gone, say. It stops
     * (next_fire_at NULL) until an operator sets it again. */
    a->next = 0;
    return 0;
  }
  int64_t F = d->next_fire_at, cutoff = now - PAWL_RECURRING_MISFIRE_MS;
  size_t n = 0, k = 0;
  int64_t ontime_from = F - 1; /* on-time ones: after this, up to now */
  if (F < cutoff) {
    ontime_from = cutoff - 1;
    if (d->misfire == PAWL_MISFIRE_RUN_ONCE) {
      b->occ[n++] = rec_latest_before(&c, z, F, cutoff);
    } else if (d->misfire == PAWL_MISFIRE_CATCH_UP) {
      b->occ[n++] = F;
      size_t limit = (size_t)d->catch_up_limit;
      if (limit > 1) {
        pawl__cron_between(&c, z, F, cutoff - 1, b->occ + n, limit - 1, &k);
        n += k;
      }
    }
  }
  k = 0;
  pawl__cron_between(&c, z, ontime_from, now, b->occ + n, REC_ONTIME_MAX, &k);
  int capped = k == REC_ONTIME_MAX;
  n += k;
  if (n && rec_reserve(b, n)) return PAWL_ENOMEM;
  for (size_t i = 0; i < n; i++) {
    size_t at = b->njobs++;
    snprintf(b->keys[at], sizeof b->keys[at], "cron:%s:%lld", d->name,
             (long long)(b->occ[i] / 1000));
    snprintf(b->by[at], sizeof b->by[at], "cron:%s", d->name);
    rec_job(d, b->occ[i], NULL, NULL, &b->jobs[at]);
  }
  a->njobs = n;
  a->last_fire = n ? b->occ[n - 1] : 0;
  /* Capped: the rest of the on-time ones come at the next batch. */
  a->next = rec_next(&c, z, capped ? b->occ[n - 1] : now);
  return 0;
}

/* The tick lock's owner: the node id (cut to 255 bytes). */
static void rec_owner(pawl_t *p, char owner[256]) {
  snprintf(owner, 256, "%s", p->node_id);
}

/* The earliest next_fire_at of the definitions that can fire (one row
 * through the partial index), 0 when none. */
static int rec_earliest(pawl_t *p, int64_t *at) {
  pawl_recurring_t *d = NULL;
  size_t n = 0;
  *at = 0;
  int rc = pawl__from_store(p, p->store->ops->recurring.due(
                                 p->store, PAWL_TIME_MAX_MS, 1, &d, &n));
  if (!rc && n) *at = d[0].next_fire_at;
  pawl_recurring_free(d, n);
  return rc;
}

int pawl__recurring_tick(pawl_t *p, size_t max_defs, size_t *enqueued,
                         int *more, int64_t *next_at) {
  p->errmsg[0] = 0;
  *enqueued = 0;
  *more = 0;
  /* Nothing due (the common tick): one read, no lock, no write. */
  int64_t first = 0;
  int rc = rec_earliest(p, &first);
  if (next_at) *next_at = first;
  if (rc || !first || first > pawl__store_now(p->store)) return rc;
  char owner[256];
  rec_owner(p, owner);
  int got = 0;
  rc = pawl__from_store(p, p->store->ops->locks.acquire(
                             p->store, REC_LOCK, owner, p->lease_ms, &got));
  if (rc || !got) return rc;
  rec_batch_t *b = pawl__calloc(1, sizeof *b);
  if (!b) rc = pawl__fail(p, PAWL_ENOMEM, "out of memory");
  size_t seen = 0;
  while (!rc && seen < max_defs) {
    int64_t now = pawl__store_now(p->store);
    size_t want = max_defs - seen < REC_BATCH ? max_defs - seen : REC_BATCH;
    pawl_recurring_t *due = NULL;
    size_t n = 0;
    rc = pawl__from_store(p, p->store->ops->recurring.due(p->store, now, want,
                                                        &due, &n));
    if (rc || n == 0) {
      pawl_recurring_free(due, n);
      break;
    }
    b->njobs = 0;
    size_t first[REC_BATCH];
    for (size_t i = 0; i < n && !rc; i++)
      if (rec_plan(b, &due[i], now, &b->adv[i], &first[i]))
        rc = pawl__fail(p, PAWL_ENOMEM, "out of memory");
    for (size_t i = 0; i < n && !rc; i++) {
      b->adv[i].jobs = b->jobs + first[i];
      for (size_t j = 0; j < b->adv[i].njobs; j++) {
        b->jobs[first[i] + j].idempotency_key = b->keys[first[i] + j];
        b->jobs[first[i] + j].enqueued_by = b->by[first[i] + j];
      }
    }
    if (!rc)
      rc = pawl__from_store(p, p->store->ops->recurring.advance(p->store, b->adv,
                                                              n));
    size_t advanced = 0;
    for (size_t i = 0; i < n && !rc; i++) {
      advanced += b->adv[i].advanced;
      *enqueued += b->adv[i].made;
    }
    pawl_recurring_free(due, n);
    seen += n;
    /* None moved: others advance them (we lost the lock, say); stop. */
    if (rc || advanced == 0 || n < want) break;
    int ok = 0;
    rc = pawl__from_store(p, p->store->ops->locks.extend(p->store, REC_LOCK, owner,
                                                       p->lease_ms, &ok));
    if (!rc && !ok) break;
    if (seen >= max_defs) *more = 1;
  }
  if (b) {
    pawl__free(b->jobs);
    pawl__free(b->keys);
    pawl__free(b->by);
    pawl__free(b);
  }
  if (*enqueued) pawl__wake(p);
  char keep[sizeof p->errmsg];
  memcpy(keep, p->errmsg, sizeof keep);
  p->store->ops->locks.release(p->store, REC_LOCK, owner);
  if (!rc && next_at) rec_earliest(p, next_at);
  memcpy(p->errmsg, keep, sizeof keep);
  return rc;
}

/* ---- script-born definitions -------------------------------------------------- */

static int rec_same_str(const char *a, const char *b) {
  return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* 1 if the stored script-born `old` already says what `d` says (a load
 * error noted on it stands while the script is `broken`). */
static int rec_same(const pawl_recurring_t *old, const pawl_recurring_t *d,
                    int broken) {
  return old->enabled && (!old->load_error || broken) &&
         rec_same_str(old->expr, d->expr) &&
         rec_same_str(old->tz, d->tz) && old->misfire == d->misfire &&
         old->catch_up_limit == d->catch_up_limit &&
         rec_same_str(old->type, d->type) &&
         rec_same_str(old->payload, d->payload) &&
         rec_same_str(old->queue, d->queue) && old->priority == d->priority &&
         old->max_attempts == d->max_attempts &&
         old->timeout_s == d->timeout_s &&
         rec_same_str(old->script, d->script);
}

/* 1 if `script` is among the scripts that failed to load. */
static int rec_broken(const pawl_script_error_t *broken, size_t nbroken,
                      const char *script) {
  for (size_t i = 0; script && i < nbroken; i++)
    if (broken[i].type && strcmp(broken[i].type, script) == 0) return 1;
  return 0;
}

/* *alive: 1 if a node other than this one has beaten within a lease (it
 * may have scripts this one has not). */
static int rec_others_alive(pawl_t *p, int *alive) {
  pawl_node_info_t *nodes = NULL;
  size_t n = 0;
  *alive = 0;
  int rc = pawl_nodes(p, &nodes, &n);
  if (rc) return rc;
  int64_t now = pawl__store_now(p->store);
  for (size_t i = 0; i < n; i++)
    if (nodes[i].id && (!p->node_id || strcmp(nodes[i].id, p->node_id)) &&
        nodes[i].last_beat >= now - p->lease_ms)
      *alive = 1;
  pawl_nodes_free(nodes, n);
  return 0;
}

int pawl__recurring_sync(pawl_t *p, const pawl_recurring_t *defs, size_t n,
                         const pawl_script_error_t *broken, size_t nbroken,
                         const char *const *lost, size_t nlost, int first,
                         char *err, size_t errlen, size_t *nerr) {
  p->errmsg[0] = 0;
  *nerr = 0;
  if (errlen) err[0] = 0;
  int rc = 0;
  /* The scripts this node has: those that declare a definition, and
   * those that fail to load (not gone: their definitions stay). */
  const char **scripts = pawl__calloc(n + nbroken ? n + nbroken : 1,
                                      sizeof *scripts);
  if (!scripts) return pawl__fail(p, PAWL_ENOMEM, "out of memory");
  size_t nscripts = 0;
  for (size_t i = 0; i < n && !rc; i++) {
    pawl_recurring_t d = defs[i];
    d.from_script = 1;
    d.enabled = 1;
    if (d.script) scripts[nscripts++] = d.script;
    pawl__cron_t c;
    const pawl__tz_t *z;
    if (rec_check(p, &d, &c, &z)) {
      /* Checked when the script loaded: a stored zone may be gone since. */
      if (!*nerr && errlen)
        snprintf(err, errlen, "script %s: %s", d.script ? d.script : d.name,
                 p->errmsg);
      ++*nerr;
      continue;
    }
    pawl_recurring_t *old = NULL;
    int grc = p->store->ops->recurring.get(p->store, d.name, &old);
    if (grc && grc != PAWL_ENOTFOUND) {
      rc = pawl__from_store(p, grc);
      break;
    }
    int write = 1;
    d.next_fire_at = 0;
    if (old && !old->from_script) {
      /* An operator's definition holds the name: left alone. */
      if (!*nerr && errlen)
        snprintf(err, errlen,
                 "script %s: recurring name \"%s\" is an operator's "
                 "definition; the script's is not used",
                 d.script ? d.script : d.name, d.name);
      ++*nerr;
      write = 0;
    } else if (old && rec_same(old, &d, rec_broken(broken, nbroken,
                                                   d.script))) {
      write = 0;
    } else if (old && old->enabled && rec_same_str(old->expr, d.expr) &&
               rec_same_str(old->tz, d.tz)) {
      d.next_fire_at = old->next_fire_at; /* the schedule is unchanged */
    }
    if (write && !d.next_fire_at)
      d.next_fire_at = rec_next(&c, z, pawl__store_now(p->store));
    pawl_recurring_free(old, 1);
    if (!write) continue;
    int done = 0;
    rc = pawl__from_store(p, p->store->ops->recurring.put(
                               p->store, &d, STORE_REC_SCRIPT, &done));
  }
  /* A script that fails to load is not a script that is gone: its
   * definitions keep their state, and say why they do not change. */
  for (size_t i = 0; i < nbroken && !rc; i++) {
    if (!broken[i].type || !broken[i].error) continue;
    scripts[nscripts++] = broken[i].type;
    char note[1024];
    snprintf(note, sizeof note, "node %s: %s",
             p->node_id ? p->node_id : "?", broken[i].error);
    rc = pawl__from_store(p, p->store->ops->recurring.load_error(
                               p->store, broken[i].type, note));
  }
  /* Gone: what went from this node since its last sync. At its first, it
   * cannot tell a script removed meanwhile from one only other nodes
   * have: it disables what it does not have only when it is alone (nodes
   * with different scripts must not flip a definition at each sync). */
  size_t off = 0;
  int alive = 0;
  if (!rc && first) rc = rec_others_alive(p, &alive);
  if (!rc && first && !alive)
    rc = pawl__from_store(p, p->store->ops->recurring.disable_gone(
                               p->store, scripts, nscripts, 0, &off));
  else if (!rc && !first && nlost)
    rc = pawl__from_store(p, p->store->ops->recurring.disable_gone(
                               p->store, lost, nlost, 1, &off));
  pawl__free(scripts);
  return rc;
}
