/* admin.c: the administration part of the public API (include/pawl.h,
 * "administration"): bulk operator actions by filter, statistics, nodes,
 * locks and durations, over the store's admin ops (stores/store.h).
 *
 * Like pawl.c, this layer checks every input before it reaches the store
 * and keeps the handle's error message. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "bounds.h"
#include "handle.h"
#include "pawl.h"
#include "pawl_internal.h"
#include "store.h"

/* Jobs one bulk batch reads, then moves in one transaction: enough to
 * amortize the transaction, few enough that the write lock (SQLite) and
 * the row locks (PostgreSQL) are held for milliseconds, so running nodes
 * barely notice. */
#define ADMIN_BATCH 500

#define ADMIN_BIT(s) (1u << (s))

static const struct {
  const char *name;
  store_op_t op;
  unsigned from;      /* the states the action moves jobs from */
  const char *froms;  /* the same, for messages */
} admin_actions[4] = {
    [PAWL_ACTION_CANCEL] = {"cancel", STORE_OP_CANCEL,
                            ADMIN_BIT(PAWL_PENDING) | ADMIN_BIT(PAWL_RUNNING) |
                                ADMIN_BIT(PAWL_BLOCKED) | ADMIN_BIT(PAWL_PAUSED),
                            "pending, running, blocked or paused"},
    [PAWL_ACTION_PAUSE] = {"pause", STORE_OP_PAUSE,
                           ADMIN_BIT(PAWL_PENDING) | ADMIN_BIT(PAWL_FAILED),
                           "pending or failed"},
    [PAWL_ACTION_RESUME] = {"resume", STORE_OP_RESUME, ADMIN_BIT(PAWL_PAUSED),
                            "paused"},
    [PAWL_ACTION_RETRY] = {"retry", STORE_OP_RETRY, ADMIN_BIT(PAWL_FAILED),
                           "failed"},
};

const char *pawl_action_name(int action) {
  if (action < 0 || action > PAWL_ACTION_RETRY) return "?";
  return admin_actions[action].name;
}

int pawl__filter_check(pawl_t *p, const pawl_filter_t *f) {
  if (f->state < -1 || f->state >= PAWL_STATE_COUNT)
    return pawl__fail(p, PAWL_EINVAL, "unknown state %d", f->state);
  if (f->limit < 0)
    return pawl__fail(p, PAWL_EINVAL, "limit must not be negative (got %d)",
                      f->limit);
  if (f->tag) {
    size_t n = strlen(f->tag);
    if (n == 0 || n > 200)
      return pawl__fail(p, PAWL_EINVAL, "tag must be 1 to 200 bytes (got %zu)",
                        n);
  }
  if (pawl__bounds_check_int("older_than", f->older_than_ms, 0, PAWL_DELAY_MAX_MS,
                       "ms", p->errmsg, sizeof p->errmsg))
    return PAWL_EINVAL;
  return 0;
}

/* Checks the action and the filter and says what the store matches. */
static int admin_match(pawl_t *p, pawl_action_t action, const pawl_filter_t *f,
                       store_match_t *m) {
  p->errmsg[0] = 0;
  if ((int)action < 0 || action > PAWL_ACTION_RETRY)
    return pawl__fail(p, PAWL_EINVAL, "unknown action %d", (int)action);
  if (!f) return pawl__fail(p, PAWL_EINVAL, "a bulk action needs a filter");
  int rc = pawl__filter_check(p, f);
  if (rc) return rc;
  m->f = f;
  m->states = admin_actions[action].from;
  if (f->state >= 0) {
    if (!(m->states & ADMIN_BIT(f->state)))
      return pawl__fail(p, PAWL_EINVAL,
                        "%s moves %s jobs: state %s never matches",
                        admin_actions[action].name, admin_actions[action].froms,
                        pawl_state_name(f->state));
    m->states = ADMIN_BIT(f->state);
  }
  m->cutoff = 0;
  if (f->older_than_ms) {
    m->cutoff = pawl__store_now(p->store) - f->older_than_ms;
    if (m->cutoff <= 0) m->cutoff = 1; /* older than the epoch: none */
  }
  return 0;
}

int pawl_bulk_count(pawl_t *p, pawl_action_t action, const pawl_filter_t *f,
                    int64_t *n) {
  PAWL__CHECK(p);
  store_match_t m;
  int rc = admin_match(p, action, f, &m);
  if (rc) return rc;
  int64_t got = 0;
  rc = pawl__from_store(p, p->store->ops->admin.count(
                               p->store, &m, f->limit > 0 ? f->limit : INT64_MAX,
                               &got));
  if (!rc) *n = got;
  return rc;
}

int pawl_bulk(pawl_t *p, pawl_action_t action, const pawl_filter_t *f,
              const char *reason, pawl_bulk_result_t *out) {
  PAWL__CHECK(p);
  pawl_bulk_result_t r = {0, 0, 0};
  store_match_t m;
  int rc = admin_match(p, action, f, &m);
  if (!rc) rc = pawl__check_reason(p, reason); /* as a single job's */
  if (rc) return rc;
  store_pick_t *picks = pawl__malloc(ADMIN_BATCH * sizeof *picks);
  if (!picks) return pawl__fail(p, PAWL_ENOMEM, "out of memory");
  int64_t left = f->limit > 0 ? f->limit : INT64_MAX;
  store_pick_t last;
  int started = 0;
  while (left > 0) {
    size_t want = left < ADMIN_BATCH ? (size_t)left : ADMIN_BATCH, n = 0;
    rc = pawl__from_store(p, p->store->ops->admin.pick(
                                 p->store, &m, started ? &last : NULL, want,
                                 picks, &n));
    if (rc || n == 0) break;
    rc = pawl__from_store(p, p->store->ops->admin.apply(
                                 p->store, admin_actions[action].op,
                                 p->principal, reason, picks, n, &r));
    if (rc) break;
    last = picks[n - 1];
    started = 1;
    left -= (int64_t)n;
    if (n < want) break;
  }
  pawl__free(picks);
  /* Jobs made pending here wake this process's host at once. */
  if (r.changed &&
      (action == PAWL_ACTION_RETRY || action == PAWL_ACTION_RESUME))
    pawl__wake(p);
  if (out) *out = r;
  return rc;
}

/* ---- statistics --------------------------------------------------------- */

typedef struct admin_stats_ctx {
  pawl_stats_t *s;
  int64_t now;
  size_t hint; /* the queue of the last row: rows come grouped by queue */
} admin_stats_ctx_t;

static pawl_queue_stats_t *admin_queue(admin_stats_ctx_t *c, const char *q) {
  pawl_stats_t *s = c->s;
  if (c->hint < s->nqueues && strcmp(s->queues[c->hint].queue, q) == 0)
    return &s->queues[c->hint];
  for (size_t i = 0; i < s->nqueues; i++)
    if (strcmp(s->queues[i].queue, q) == 0) return &s->queues[c->hint = i];
  pawl_queue_stats_t *grown =
      pawl__realloc(s->queues, (s->nqueues + 1) * sizeof *grown);
  if (!grown) return NULL;
  s->queues = grown;
  pawl_queue_stats_t *qs = &s->queues[s->nqueues];
  memset(qs, 0, sizeof *qs);
  if (!(qs->queue = pawl__strdup(q))) return NULL;
  c->hint = s->nqueues++;
  return qs;
}

static void admin_add(pawl_queue_stats_t *q, const store_stat_row_t *row,
                      int64_t now) {
  q->count[row->state] += row->count;
  q->finished_1m += row->in_1m;
  q->finished_5m += row->in_5m;
  q->finished_15m += row->in_15m;
  if (row->state == PAWL_FAILED) {
    q->failed_1m += row->in_1m;
    q->failed_5m += row->in_5m;
    q->failed_15m += row->in_15m;
  }
  if (row->oldest_due > 0 && now - row->oldest_due > q->oldest_due_ms)
    q->oldest_due_ms = now - row->oldest_due;
}

static int admin_stats_cb(const store_stat_row_t *row, void *data) {
  admin_stats_ctx_t *c = data;
  if (row->state < 0 || row->state >= PAWL_STATE_COUNT) return 0;
  pawl_queue_stats_t *q = admin_queue(c, row->queue);
  if (!q) return 1;
  admin_add(q, row, c->now);
  admin_add(&c->s->all, row, c->now);
  return 0;
}

static int admin_queue_cmp(const void *a, const void *b) {
  return strcmp(((const pawl_queue_stats_t *)a)->queue,
                ((const pawl_queue_stats_t *)b)->queue);
}

void pawl_stats_free(pawl_stats_t *s) {
  if (!s) return;
  for (size_t i = 0; i < s->nqueues; i++) pawl__free(s->queues[i].queue);
  pawl__free(s->queues);
  pawl__free(s);
}

int pawl_stats(pawl_t *p, pawl_stats_t **out) {
  PAWL__CHECK(p);
  p->errmsg[0] = 0;
  pawl_stats_t *s = pawl__calloc(1, sizeof *s);
  if (!s) return pawl__fail(p, PAWL_ENOMEM, "out of memory");
  admin_stats_ctx_t c = {s, pawl__store_now(p->store), 0};
  s->at = c.now;
  int rc = pawl__from_store(
      p, p->store->ops->admin.stats(p->store, c.now, admin_stats_cb, &c));
  if (rc) {
    pawl_stats_free(s);
    return rc;
  }
  if (s->nqueues > 1)
    qsort(s->queues, s->nqueues, sizeof *s->queues, admin_queue_cmp);
  *out = s;
  return 0;
}

/* ---- nodes and locks ---------------------------------------------------- */

typedef struct admin_nodes_ctx {
  pawl_node_info_t *nodes;
  size_t n;
  int64_t now, lease_ms; /* what tells a dead node (state) */
} admin_nodes_ctx_t;

static int admin_node_cb(const store_node_t *nd, void *data) {
  admin_nodes_ctx_t *c = data;
  pawl_node_info_t *grown = pawl__realloc(c->nodes, (c->n + 1) * sizeof *grown);
  if (!grown) return 1;
  c->nodes = grown;
  pawl_node_info_t *ni = &c->nodes[c->n++];
  memset(ni, 0, sizeof *ni);
  ni->id = pawl__strdup(nd->id ? nd->id : "");
  ni->version = pawl__strdup(nd->version ? nd->version : "");
  ni->queues = pawl__strdup(nd->queues ? nd->queues : "");
  if (nd->incarnation) ni->incarnation = *nd->incarnation;
  ni->started_at = nd->started_at;
  ni->last_beat = nd->last_beat;
  ni->stopped_at = nd->stopped_at;
  /* Silent for longer than a lease: its leases have run out, its jobs are
   * recovered, and a living node beats several times a lease. */
  ni->state = nd->stopped_at                         ? "stopped"
              : c->now - nd->last_beat > c->lease_ms ? "dead"
                                                     : "running";
  return !ni->id || !ni->version || !ni->queues;
}

static int admin_running_cb(const char *owner, int64_t running, void *data) {
  admin_nodes_ctx_t *c = data;
  for (size_t i = 0; i < c->n; i++)
    if (strcmp(c->nodes[i].id, owner) == 0) c->nodes[i].running += running;
  return 0;
}

void pawl_nodes_free(pawl_node_info_t *nodes, size_t n) {
  if (!nodes) return;
  for (size_t i = 0; i < n; i++) {
    pawl__free(nodes[i].id);
    pawl__free(nodes[i].version);
    pawl__free(nodes[i].queues);
  }
  pawl__free(nodes);
}

int pawl_nodes(pawl_t *p, pawl_node_info_t **out, size_t *n) {
  PAWL__CHECK(p);
  p->errmsg[0] = 0;
  admin_nodes_ctx_t c = {NULL, 0, pawl_now(p), pawl__lease_ms(p)};
  int rc = p->store->ops->nodes.list(p->store, admin_node_cb, &c);
  if (!rc && c.n && c.nodes[c.n - 1].id == NULL) rc = PAWL_ENOMEM;
  if (!rc && c.n)
    rc = p->store->ops->admin.running(p->store, admin_running_cb, &c);
  if (rc) {
    pawl_nodes_free(c.nodes, c.n);
    if (rc == PAWL_ENOMEM && !p->store->errmsg[0])
      return pawl__fail(p, rc, "out of memory");
    return pawl__from_store(p, rc);
  }
  *out = c.nodes;
  *n = c.n;
  return 0;
}

typedef struct admin_locks_ctx {
  pawl_lock_info_t *locks;
  size_t n;
} admin_locks_ctx_t;

static int admin_lock_cb(const pawl_lock_info_t *l, void *data) {
  admin_locks_ctx_t *c = data;
  pawl_lock_info_t *grown = pawl__realloc(c->locks, (c->n + 1) * sizeof *grown);
  if (!grown) return 1;
  c->locks = grown;
  pawl_lock_info_t *li = &c->locks[c->n++];
  *li = *l;
  li->name = pawl__strdup(l->name ? l->name : "");
  li->owner = pawl__strdup(l->owner ? l->owner : "");
  return !li->name || !li->owner;
}

void pawl_locks_free(pawl_lock_info_t *locks, size_t n) {
  if (!locks) return;
  for (size_t i = 0; i < n; i++) {
    pawl__free(locks[i].name);
    pawl__free(locks[i].owner);
  }
  pawl__free(locks);
}

int pawl_locks(pawl_t *p, pawl_lock_info_t **out, size_t *n) {
  PAWL__CHECK(p);
  p->errmsg[0] = 0;
  admin_locks_ctx_t c = {NULL, 0};
  int rc = pawl__from_store(p, p->store->ops->admin.locks(p->store,
                                                          admin_lock_cb, &c));
  if (rc) {
    pawl_locks_free(c.locks, c.n);
    return rc;
  }
  *out = c.locks;
  *n = c.n;
  return 0;
}

/* ---- durations ---------------------------------------------------------- */

int pawl_duration_parse(const char *text, int64_t *ms, char *errbuf,
                        size_t errlen) {
  static const struct {
    const char *suffix;
    int64_t ms;
  } units[] = {{"ms", 1},          {"s", 1000},          {"m", 60000},
               {"h", 3600000},     {"d", 86400000},      {"w", 604800000}};
  char scratch[160];
  if (!errbuf || !errlen) {
    errbuf = scratch;
    errlen = sizeof scratch;
  }
  const char *s = text ? text : "";
  int64_t whole = 0, frac = 0, limit = PAWL_DELAY_MAX_MS;
  int digits = 0, fdigits = 0, over = 0, dot = 0;
  const char *c = s;
  for (; *c >= '0' && *c <= '9'; c++, digits++) {
    if (whole <= limit) whole = whole * 10 + (*c - '0');
    if (whole > limit) over = 1;
  }
  if (*c == '.') {
    dot = 1;
    int64_t scale = 100;
    for (c++; *c >= '0' && *c <= '9'; c++, fdigits++) {
      frac += (*c - '0') * scale;
      scale /= 10;
    }
  }
  int64_t unit = -1;
  if (dot && !fdigits) unit = -1; /* "1." */
  else if (*c == 0) unit = 1000;   /* a bare number: seconds */
  else if (!dot)
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
      if (strcmp(c, units[i].suffix) == 0) unit = units[i].ms;
  if (digits + fdigits == 0 || unit < 0) {
    snprintf(errbuf, errlen,
             "\"%.40s\" is not a duration: expected a number of seconds or "
             "a whole number with ms, s, m, h, d or w (90s, 15m, 2h, 7d)",
             s);
    return PAWL_EINVAL;
  }
  int64_t v = 0;
  if (!over) {
    if (unit == 1000 && *c == 0) {
      if (whole > limit / 1000 + 1) over = 1;
      else v = whole * 1000 + frac;
    } else if (whole > limit / unit + 1) {
      over = 1;
    } else {
      v = whole * unit;
    }
  }
  if (over || v > limit) {
    snprintf(errbuf, errlen,
             "duration \"%.40s\" must be at most %lld s (ten years)", s,
             (long long)(limit / 1000));
    return PAWL_EINVAL;
  }
  *ms = v;
  return 0;
}
