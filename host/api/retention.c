/* retention.c: retention and archival of finished jobs in the
 * public API (include/pawl.h, "retention"): the policy (defaults, parser,
 * checks), the walk that decides which jobs go (over the store's
 * retention ops), pawl_cleanup(), and the batch step the worker host's
 * sweep runs as a poller chore (runner/retention.c, pawl_internal.h).
 *
 * Finding old finished jobs without an index of them: the walk reads the
 * table in insert order (SQLite seq, PostgreSQL's UUIDv7 ids), a page at a
 * time, and decides per row. A job created after now - (the shortest
 * keep that applies) cannot have finished before its cutoff, so the walk
 * stops at the first such row: it covers the jobs old enough to go, plus
 * those kept longer (failed jobs kept 7 days are read again by each
 * sweep until they go). Nothing is added to the claim's or the finish's
 * path. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc.h"
#include "bounds.h"
#include "handle.h"
#include "pawl.h"
#include "pawl_internal.h"
#include "store.h"

#define RET_DAY_MS (INT64_C(24) * 3600 * 1000)
#define RET_BATCH_DEFAULT 1000
#define RET_BATCH_MAX 100000
#define RET_PAUSE_DEFAULT_MS 50
#define RET_PAUSE_MAX_MS 60000
#define RET_EVERY_DEFAULT_MS 60000
#define RET_EVERY_MIN_MS 1000
#define RET_RULES_MAX 1000
#define RET_SHARE_DEFAULT 5
#define RET_SHARE_MAX 50

static int ret_finished(int state) {
  return state == PAWL_SUCCEEDED || state == PAWL_FAILED ||
         state == PAWL_CANCELED;
}

void pawl_retention_init(pawl_retention_t *r) {
  memset(r, 0, sizeof *r);
  r->keep_ms[PAWL_SUCCEEDED] = RET_DAY_MS;
  r->keep_ms[PAWL_FAILED] = 7 * RET_DAY_MS;
  r->keep_ms[PAWL_CANCELED] = RET_DAY_MS;
  r->batch = RET_BATCH_DEFAULT;
  r->pause_ms = RET_PAUSE_DEFAULT_MS;
  r->every_ms = RET_EVERY_DEFAULT_MS;
  r->share_pct = RET_SHARE_DEFAULT;
}

void pawl_cleanup_opts_init(pawl_cleanup_opts_t *o) {
  memset(o, 0, sizeof *o);
  o->state = -1;
  o->older_than_ms = -1;
}

/* A keep: 0..PAWL_DELAY_MAX_MS or forever. */
static int ret_check_keep(const char *what, int64_t v, char *err,
                          size_t errlen) {
  if (v == PAWL_RETAIN_FOREVER) return 0;
  return pawl__bounds_check_int(what, v, 0, PAWL_DELAY_MAX_MS,
                                "ms (or -1: forever)", err, errlen)
             ? PAWL_EINVAL
             : 0;
}

static int ret_check_state(const char *what, int state, char *err,
                           size_t errlen) {
  if (ret_finished(state)) return 0;
  const char *name =
      state >= 0 && state < PAWL_STATE_COUNT ? pawl_state_name(state) : NULL;
  if (name)
    snprintf(err, errlen,
             "%s: state %s is not a finished state (succeeded, failed or "
             "canceled)",
             what, name);
  else
    snprintf(err, errlen,
             "%s: state %d is not a finished state (succeeded %d, failed %d, "
             "canceled %d)",
             what, state, PAWL_SUCCEEDED, PAWL_FAILED, PAWL_CANCELED);
  return PAWL_EINVAL;
}

/* Checks every number and name of a policy; 0 or PAWL_EINVAL with err. */
static int ret_check(const pawl_retention_t *r, char *err, size_t errlen) {
  static const int states[3] = {PAWL_SUCCEEDED, PAWL_FAILED, PAWL_CANCELED};
  char what[300];
  for (int i = 0; i < 3; i++) {
    snprintf(what, sizeof what, "retention of %s jobs",
             pawl_state_name(states[i]));
    if (ret_check_keep(what, r->keep_ms[states[i]], err, errlen))
      return PAWL_EINVAL;
  }
  if (pawl__bounds_check_int("retention batch", (int64_t)r->batch, 1,
                             RET_BATCH_MAX, "jobs", err, errlen) ||
      pawl__bounds_check_int("retention pause", r->pause_ms, 0,
                             RET_PAUSE_MAX_MS, "ms", err, errlen) ||
      pawl__bounds_check_int("retention interval", r->every_ms,
                             RET_EVERY_MIN_MS, PAWL_DELAY_MAX_MS, "ms", err,
                             errlen) ||
      pawl__bounds_check_int("retention share", r->share_pct, 1,
                             RET_SHARE_MAX, "percent", err, errlen) ||
      pawl__bounds_check_int("retention rules", (int64_t)r->nrules, 0,
                             RET_RULES_MAX, NULL, err, errlen))
    return PAWL_EINVAL;
  if (r->nrules && !r->rules) {
    snprintf(err, errlen, "retention: %zu rules but no array", r->nrules);
    return PAWL_EINVAL;
  }
  for (size_t i = 0; i < r->nrules; i++) {
    const pawl_retain_rule_t *u = &r->rules[i];
    snprintf(what, sizeof what, "retention rule %zu", i + 1);
    if (!u->queue && !u->type) {
      snprintf(err, errlen, "%s names neither a queue nor a type", what);
      return PAWL_EINVAL;
    }
    if ((u->queue && (!*u->queue || strlen(u->queue) > 200)) ||
        (u->type && (!*u->type || strlen(u->type) > 200))) {
      snprintf(err, errlen, "%s: queue and type names are 1..200 bytes",
               what);
      return PAWL_EINVAL;
    }
    if (ret_check_state(what, u->state, err, errlen) ||
        ret_check_keep(what, u->keep_ms, err, errlen))
      return PAWL_EINVAL;
  }
  return 0;
}

/* How long a job of (state, queue, type) is kept under `r`: the most
 * specific rule (queue and type 3, type 2, queue 1), the last of equals. */
static int64_t ret_keep(const pawl_retention_t *r, int state,
                        const char *queue, const char *type) {
  int64_t keep = r->keep_ms[state];
  int best = 0;
  for (size_t i = 0; i < r->nrules; i++) {
    const pawl_retain_rule_t *u = &r->rules[i];
    if (u->state != state) continue;
    if (u->queue && strcmp(u->queue, queue) != 0) continue;
    if (u->type && strcmp(u->type, type) != 0) continue;
    int rank = (u->queue ? 1 : 0) + (u->type ? 2 : 0);
    if (rank >= best) {
      best = rank;
      keep = u->keep_ms;
    }
  }
  return keep;
}

/* ---- parsing -------------------------------------------------------------- */

static int ret_parse_keep(const char *item, const char *v, int64_t *ms,
                          char *err, size_t errlen) {
  if (strcmp(v, "forever") == 0) {
    *ms = PAWL_RETAIN_FOREVER;
    return 0;
  }
  char derr[200];
  if (pawl_duration_parse(v, ms, derr, sizeof derr) != 0) {
    snprintf(err, errlen, "retention \"%.80s\": %s (or \"forever\")", item,
             derr);
    return PAWL_EINVAL;
  }
  return 0;
}

static int ret_parse_state(const char *item, const char *name, int *state,
                           char *err, size_t errlen) {
  int s = pawl_state_parse(name);
  if (!ret_finished(s)) {
    snprintf(err, errlen,
             "retention \"%.80s\": unknown state \"%.40s\" (succeeded, "
             "failed or canceled)",
             item, name);
    return PAWL_EINVAL;
  }
  *state = s;
  return 0;
}

/* A whole number within [min, max]. */
static int ret_parse_num(const char *item, const char *v, int64_t min,
                         int64_t max, int64_t *out, char *err,
                         size_t errlen) {
  char *end;
  long long n = strtoll(v, &end, 10);
  if (!*v || *end || n < min || n > max) {
    snprintf(err, errlen,
             "retention \"%.80s\": must be a whole number from %lld to %lld",
             item, (long long)min, (long long)max);
    return PAWL_EINVAL;
  }
  *out = n;
  return 0;
}

/* queue:Q, type:T or queue:Q/type:T (item is the text before ".STATE"). */
static int ret_parse_scope(const char *item, char *scope, pawl_retain_rule_t *u,
                           char *err, size_t errlen) {
  char *part = scope;
  while (part) {
    char *slash = strchr(part, '/');
    if (slash) *slash = 0;
    char **slot = NULL;
    const char *name = NULL;
    if (strncmp(part, "queue:", 6) == 0) {
      slot = (char **)&u->queue;
      name = part + 6;
    } else if (strncmp(part, "type:", 5) == 0) {
      slot = (char **)&u->type;
      name = part + 5;
    }
    if (!slot || !*name || strlen(name) > 200 || *slot) {
      snprintf(err, errlen,
               "retention \"%.80s\": expected queue:NAME, type:NAME or "
               "queue:NAME/type:NAME before .STATE",
               item);
      return PAWL_EINVAL;
    }
    if (!(*slot = pawl__strdup(name))) {
      snprintf(err, errlen, "out of memory");
      return PAWL_ENOMEM;
    }
    part = slash ? slash + 1 : NULL;
  }
  return 0;
}

static int ret_parse_item(pawl_retention_t *r, pawl_retain_rule_t **rules,
                          size_t *cap, char *item, char *err,
                          size_t errlen) {
  char shown[200];
  snprintf(shown, sizeof shown, "%s", item);
  if (strcmp(item, "archive") == 0) {
    r->archive = 1;
    return 0;
  }
  char *eq = strchr(item, '=');
  if (!eq) {
    snprintf(err, errlen,
             "retention \"%.80s\": expected STATE=DURATION, archive, "
             "batch=N, pause=DURATION, every=DURATION or share=PERCENT",
             shown);
    return PAWL_EINVAL;
  }
  *eq = 0;
  const char *v = eq + 1;
  int64_t x;
  if (strcmp(item, "batch") == 0) {
    if (ret_parse_num(shown, v, 1, RET_BATCH_MAX, &x, err, errlen))
      return PAWL_EINVAL;
    r->batch = (size_t)x;
    return 0;
  }
  if (strcmp(item, "share") == 0) {
    if (ret_parse_num(shown, v, 1, RET_SHARE_MAX, &x, err, errlen))
      return PAWL_EINVAL;
    r->share_pct = (int)x;
    return 0;
  }
  if (strcmp(item, "pause") == 0 || strcmp(item, "every") == 0) {
    char derr[200];
    if (pawl_duration_parse(v, &x, derr, sizeof derr) != 0) {
      snprintf(err, errlen, "retention \"%.80s\": %s", shown, derr);
      return PAWL_EINVAL;
    }
    if (item[0] == 'p')
      r->pause_ms = x;
    else
      r->every_ms = x;
    return 0;
  }
  char *dot = strrchr(item, '.');
  if (!dot) {
    int state;
    if (ret_parse_state(shown, item, &state, err, errlen) ||
        ret_parse_keep(shown, v, &x, err, errlen))
      return PAWL_EINVAL;
    r->keep_ms[state] = x;
    return 0;
  }
  *dot = 0;
  pawl_retain_rule_t u = {0};
  int rc = ret_parse_state(shown, dot + 1, &u.state, err, errlen);
  if (!rc) rc = ret_parse_keep(shown, v, &u.keep_ms, err, errlen);
  if (!rc) rc = ret_parse_scope(shown, item, &u, err, errlen);
  if (!rc && r->nrules == *cap) {
    size_t nc = *cap ? *cap * 2 : 4;
    pawl_retain_rule_t *g = pawl__realloc(*rules, nc * sizeof *g);
    if (!g) {
      snprintf(err, errlen, "out of memory");
      rc = PAWL_ENOMEM;
    } else {
      *rules = g;
      *cap = nc;
    }
  }
  if (rc) {
    pawl__free((char *)u.queue);
    pawl__free((char *)u.type);
    return rc;
  }
  (*rules)[r->nrules++] = u;
  r->rules = *rules;
  return 0;
}

void pawl_retention_free(pawl_retention_t *r) {
  if (!r) return;
  for (size_t i = 0; i < r->nrules; i++) {
    pawl__free((char *)r->rules[i].queue);
    pawl__free((char *)r->rules[i].type);
  }
  pawl__free((void *)r->rules);
  pawl__free(r);
}

int pawl_retention_parse(const char *spec, pawl_retention_t **out,
                         char *errbuf, size_t errlen) {
  char scratch[8];
  if (!errbuf) {
    errbuf = scratch;
    errlen = sizeof scratch;
  }
  if (!spec || !out) {
    snprintf(errbuf, errlen, "retention: no policy text");
    return PAWL_EINVAL;
  }
  if (strlen(spec) > 65536) {
    snprintf(errbuf, errlen, "retention policy: at most 65536 bytes");
    return PAWL_EINVAL;
  }
  pawl_retention_t *r = pawl__calloc(1, sizeof *r);
  char *copy = pawl__strdup(spec);
  if (!r || !copy) {
    pawl__free(r);
    pawl__free(copy);
    snprintf(errbuf, errlen, "out of memory");
    return PAWL_ENOMEM;
  }
  pawl_retention_init(r);
  pawl_retain_rule_t *rules = NULL;
  size_t cap = 0;
  int rc = 0;
  char *save = NULL;
  for (char *item = strtok_r(copy, ",", &save); item && !rc;
       item = strtok_r(NULL, ",", &save)) {
    while (*item == ' ') item++;
    size_t len = strlen(item);
    while (len && item[len - 1] == ' ') item[--len] = 0;
    if (!*item) continue;
    rc = ret_parse_item(r, &rules, &cap, item, errbuf, errlen);
  }
  r->rules = rules;
  pawl__free(copy);
  if (!rc && ret_check(r, errbuf, errlen)) rc = PAWL_EINVAL;
  if (rc) {
    pawl_retention_free(r);
    return rc;
  }
  *out = r;
  return 0;
}

/* ---- the walk ------------------------------------------------------------- */

/* The tally of what a cleanup removed, by (state, queue, type). */
typedef struct ret_tally {
  pawl_cleanup_row_t *rows;
  size_t n, cap;
} ret_tally_t;

static int ret_tally_add(ret_tally_t *t, const store_retain_row_t *r) {
  for (size_t i = t->n; i-- > 0;) {
    pawl_cleanup_row_t *x = &t->rows[i];
    if (x->state == r->state && strcmp(x->queue, r->queue) == 0 &&
        strcmp(x->type, r->type) == 0) {
      x->count++;
      return 0;
    }
  }
  if (t->n == t->cap) {
    size_t nc = t->cap ? t->cap * 2 : 8;
    pawl_cleanup_row_t *g = pawl__realloc(t->rows, nc * sizeof *g);
    if (!g) return PAWL_ENOMEM;
    t->rows = g;
    t->cap = nc;
  }
  pawl_cleanup_row_t *x = &t->rows[t->n];
  x->state = r->state;
  x->count = 1;
  x->queue = pawl__strdup(r->queue);
  x->type = pawl__strdup(r->type);
  if (!x->queue || !x->type) {
    pawl__free(x->queue);
    pawl__free(x->type);
    return PAWL_ENOMEM;
  }
  t->n++;
  return 0;
}

/* What a walk looks at: a policy, or one age for all (older_than >= 0),
 * narrowed to one state (state >= 0). */
typedef struct ret_what {
  const pawl_retention_t *pol;
  int state;
  int64_t older_than;
} ret_what_t;

static int64_t ret_keep_of(const ret_what_t *w, const store_retain_row_t *r) {
  if (!ret_finished(r->state)) return PAWL_RETAIN_FOREVER;
  if (w->state >= 0 && r->state != w->state) return PAWL_RETAIN_FOREVER;
  if (w->older_than >= 0) return w->older_than;
  return ret_keep(w->pol, r->state, r->queue, r->type);
}

/* The shortest keep that applies to any job, or -1 when every job is
 * kept forever (nothing to walk). */
static int64_t ret_min_keep(const ret_what_t *w) {
  if (w->older_than >= 0) return w->older_than;
  int64_t min = -1;
  for (int s = PAWL_SUCCEEDED; s <= PAWL_CANCELED; s++) {
    if (w->state >= 0 && s != w->state) continue;
    int64_t k = w->pol->keep_ms[s];
    if (k >= 0 && (min < 0 || k < min)) min = k;
  }
  for (size_t i = 0; i < w->pol->nrules; i++) {
    const pawl_retain_rule_t *u = &w->pol->rules[i];
    if (w->state >= 0 && u->state != w->state) continue;
    if (u->keep_ms >= 0 && (min < 0 || u->keep_ms < min)) min = u->keep_ms;
  }
  return min;
}

/* One batch of the walk: reads up to pol->batch rows after the cursor,
 * removes (or, dry, counts) those that go, adds them to `t` (may be
 * NULL). c->done once the walk has nothing more to look at. */
static int ret_batch(pawl_t *p, const ret_what_t *w, pawl__retain_cursor_t *c,
                     int dry, int64_t max, ret_tally_t *t) {
  if (!c->started) {
    c->started = 1;
    c->now = pawl_now(p);
    int64_t min = ret_min_keep(w);
    if (min < 0) {
      c->done = 1;
      return 0;
    }
    c->horizon = c->now - min;
  }
  if (c->done) return 0;
  size_t want = w->pol->batch;
  store_retain_row_t *rows = pawl__calloc(want, sizeof *rows);
  int *gone = pawl__calloc(want, sizeof *gone);
  size_t *pick = pawl__calloc(want, sizeof *pick);
  store_retain_row_t *sel = pawl__calloc(want, sizeof *sel);
  int rc = 0;
  if (!rows || !gone || !pick || !sel)
    rc = pawl__fail(p, PAWL_ENOMEM, "out of memory");
  size_t n = 0, k = 0;
  store_pick_t after = {.key = c->key, .id = c->id};
  if (!rc)
    rc = pawl__from_store(p, p->store->ops->retention.scan(
                                 p->store, c->key || c->have_id ? &after : NULL,
                                 want, rows, &n));
  size_t upto = n;
  for (size_t i = 0; !rc && i < n; i++) {
    const store_retain_row_t *r = &rows[i];
    if (r->created_at > c->horizon) { /* nothing after it is old enough */
      upto = i;
      c->done = 1;
      break;
    }
    int64_t keep = ret_keep_of(w, r);
    if (keep < 0 || r->finished_at <= 0 || r->finished_at > c->now - keep)
      continue;
    if (max > 0 && c->removed + (int64_t)k >= max) {
      upto = i;
      c->done = 1;
      break;
    }
    pick[k] = i;
    sel[k++] = *r;
  }
  if (!rc && n < want) c->done = 1;
  if (!rc && k && !dry)
    rc = pawl__from_store(p, p->store->ops->retention.remove(
                                 p->store, sel, k, w->pol->archive, gone));
  for (size_t i = 0; !rc && i < k; i++) {
    if (!dry && !gone[i]) continue;
    c->removed++;
    if (t && ret_tally_add(t, &rows[pick[i]]))
      rc = pawl__fail(p, PAWL_ENOMEM, "out of memory");
  }
  if (!rc) {
    c->scanned += (int64_t)upto;
    if (upto) {
      c->key = rows[upto - 1].pick.key;
      c->id = rows[upto - 1].pick.id;
      c->have_id = 1;
    }
  }
  pawl__free(rows);
  pawl__free(gone);
  pawl__free(pick);
  pawl__free(sel);
  return rc;
}

/* The sweep yields the database (100 - share) / share times as long as
 * its last batch held it, and at least pause_ms: a sweep with a backlog (a
 * million jobs to delete) then takes at most share percent of the time,
 * whatever a batch costs on this machine and backend. The default, 5%,
 * leaves room for what the pacing does not see: on PostgreSQL, the
 * autovacuum of the deleted rows (at 10%, claims and completions kept
 * 89-91% of their speed there; bench/RESULTS.md "Retention"). */
int64_t pawl__retention_pause(const pawl_retention_t *r, int64_t took_ms) {
  int64_t share = r->share_pct >= 1 && r->share_pct <= RET_SHARE_MAX
                      ? r->share_pct
                      : RET_SHARE_DEFAULT;
  int64_t y = took_ms > 0 && took_ms < INT64_MAX / 100
                  ? took_ms * (100 - share) / share
                  : 0;
  return y > r->pause_ms ? y : r->pause_ms;
}

int pawl__retention_check(const pawl_retention_t *r, char *err,
                          size_t errlen) {
  return ret_check(r, err, errlen);
}

int pawl__retention_due(pawl_t *p, const pawl_retention_t *pol, int *due) {
  p->errmsg[0] = 0;
  *due = 0;
  ret_what_t w = {pol, -1, -1};
  int64_t min = ret_min_keep(&w);
  if (min < 0) return 0;
  store_retain_row_t *row = pawl__calloc(1, sizeof *row);
  if (!row) return pawl__fail(p, PAWL_ENOMEM, "out of memory");
  size_t n = 0;
  int rc = pawl__from_store(
      p, p->store->ops->retention.scan(p->store, NULL, 1, row, &n));
  if (!rc) *due = n == 1 && row->created_at <= pawl_now(p) - min;
  pawl__free(row);
  return rc;
}

int pawl__retention_batch(pawl_t *p, const pawl_retention_t *pol,
                          pawl__retain_cursor_t *c) {
  p->errmsg[0] = 0;
  ret_what_t w = {pol, -1, -1};
  return ret_batch(p, &w, c, 0, 0, NULL);
}

/* The sweep lock's owner: the node id (cut to 255 bytes). */
int pawl__retention_lock(pawl_t *p, int64_t ttl_ms, int *got) {
  p->errmsg[0] = 0;
  char owner[256];
  snprintf(owner, sizeof owner, "%s", p->node_id);
  return pawl__from_store(p, p->store->ops->locks.acquire(
                                 p->store, "pawl.retention", owner, ttl_ms,
                                 got));
}

int pawl__retention_unlock(pawl_t *p) {
  p->errmsg[0] = 0;
  char owner[256];
  snprintf(owner, sizeof owner, "%s", p->node_id);
  return pawl__from_store(p, p->store->ops->locks.release(
                                 p->store, "pawl.retention", owner));
}

static int ret_row_cmp(const void *a, const void *b) {
  const pawl_cleanup_row_t *x = a, *y = b;
  if (x->state != y->state) return x->state - y->state;
  int c = strcmp(x->queue, y->queue);
  return c ? c : strcmp(x->type, y->type);
}

static void ret_sleep_ms(int64_t ms) {
  struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {}
}

void pawl_cleanup_free(pawl_cleanup_result_t *r) {
  if (!r) return;
  for (size_t i = 0; i < r->nrows; i++) {
    pawl__free(r->rows[i].queue);
    pawl__free(r->rows[i].type);
  }
  pawl__free(r->rows);
  pawl__free(r);
}

int pawl_cleanup(pawl_t *p, const pawl_cleanup_opts_t *o,
                 pawl_cleanup_result_t **out) {
  PAWL__CHECK(p);
  p->errmsg[0] = 0;
  pawl_cleanup_opts_t def;
  if (!o) {
    pawl_cleanup_opts_init(&def);
    o = &def;
  }
  pawl_retention_t dpol;
  const pawl_retention_t *pol = o->policy;
  if (!pol) {
    pawl_retention_init(&dpol);
    pol = &dpol;
  }
  if (!out) return pawl__fail(p, PAWL_EINVAL, "cleanup: no result pointer");
  if (ret_check(pol, p->errmsg, sizeof p->errmsg)) return PAWL_EINVAL;
  if (o->state != -1 &&
      ret_check_state("cleanup", o->state, p->errmsg, sizeof p->errmsg))
    return PAWL_EINVAL;
  if (o->older_than_ms != -1 &&
      pawl__bounds_check_int("cleanup older_than", o->older_than_ms, 0,
                             PAWL_DELAY_MAX_MS, "ms (or -1: the policy's)",
                             p->errmsg, sizeof p->errmsg))
    return PAWL_EINVAL;
  if (pawl__bounds_check_int("cleanup max", o->max, 0, INT64_MAX / 2,
                             "jobs (0: no bound)", p->errmsg,
                             sizeof p->errmsg))
    return PAWL_EINVAL;
  ret_what_t w = {pol, o->state, o->older_than_ms};
  pawl__retain_cursor_t c = {0};
  ret_tally_t t = {0};
  int rc = 0;
  while (!rc && !c.done) {
    if (c.started && pol->pause_ms && !o->dry_run) ret_sleep_ms(pol->pause_ms);
    rc = ret_batch(p, &w, &c, o->dry_run, o->max, &t);
  }
  pawl_cleanup_result_t *r = rc ? NULL : pawl__calloc(1, sizeof *r);
  if (!rc && !r) rc = pawl__fail(p, PAWL_ENOMEM, "out of memory");
  if (rc) {
    pawl_cleanup_result_t tmp = {.rows = t.rows, .nrows = t.n};
    for (size_t i = 0; i < tmp.nrows; i++) {
      pawl__free(tmp.rows[i].queue);
      pawl__free(tmp.rows[i].type);
    }
    pawl__free(tmp.rows);
    return rc;
  }
  if (t.n) qsort(t.rows, t.n, sizeof *t.rows, ret_row_cmp);
  r->rows = t.rows;
  r->nrows = t.n;
  r->removed = c.removed;
  r->scanned = c.scanned;
  r->archived = pol->archive;
  r->dry_run = o->dry_run;
  *out = r;
  return 0;
}
