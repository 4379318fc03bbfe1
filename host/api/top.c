/* top.c: what `pawl top` reads (include/pawl.h, "pawl top"):
 * the throughput buckets, the longest-running jobs, and one JSON snapshot
 * of everything the live view shows. The snapshot is built here, on the
 * handle, so that the CLI reading the database and a console attached to
 * a running host (the Lua module's db:top_snapshot()) give the same text,
 * field for field. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "buf.h"
#include "handle.h"
#include "json.h"
#include "pawl.h"
#include "pawl_internal.h"
#include "store.h"

/* Bounds of the inputs (include/pawl.h). */
#define TOP_RUNNING_MAX 100000
#define TOP_LIST_MAX 1000
/* A dead job's error in the snapshot: enough for a screen line or three. */
#define TOP_ERROR_MAX 1000

/* ---- throughput ---------------------------------------------------------- */

typedef struct top_tp_ctx {
  pawl_tp_bucket_t *b;
  size_t n, cap;
} top_tp_ctx_t;

static int top_tp_cb(int64_t minute, int state, const char *queue,
                     int64_t count, void *data) {
  top_tp_ctx_t *c = data;
  if (c->n == c->cap) {
    size_t cap = c->cap ? c->cap * 2 : 16;
    pawl_tp_bucket_t *grown = pawl__realloc(c->b, cap * sizeof *grown);
    if (!grown) return 1;
    c->b = grown;
    c->cap = cap;
  }
  pawl_tp_bucket_t *b = &c->b[c->n];
  b->minute_at = minute * STORE_TP_MINUTE_MS;
  b->state = state;
  b->count = count;
  b->queue = pawl__strdup(queue);
  if (!b->queue) return 1;
  c->n++;
  return 0;
}

void pawl_throughput_free(pawl_tp_bucket_t *b, size_t n) {
  if (!b) return;
  for (size_t i = 0; i < n; i++) pawl__free(b[i].queue);
  pawl__free(b);
}

int pawl_throughput(pawl_t *p, int minutes, pawl_tp_bucket_t **out, size_t *n) {
  PAWL__CHECK(p);
  p->errmsg[0] = 0;
  if (minutes < 1 || minutes > STORE_TP_KEEP)
    return pawl__fail(p, PAWL_EINVAL, "minutes must be within 1..%d (got %d)",
                      STORE_TP_KEEP, minutes);
  top_tp_ctx_t c = {NULL, 0, 0};
  int64_t since = store_tp_minute(pawl__store_now(p->store)) - (minutes - 1);
  int rc = p->store->ops->top.throughput(p->store, since, top_tp_cb, &c);
  if (rc) {
    pawl_throughput_free(c.b, c.n);
    return pawl__from_store(p, rc);
  }
  *out = c.b;
  *n = c.n;
  return 0;
}

/* ---- running jobs -------------------------------------------------------- */

int pawl_running_jobs(pawl_t *p, int limit, pawl_job_cb cb, void *data) {
  PAWL__CHECK(p);
  p->errmsg[0] = 0;
  if (limit < 1 || limit > TOP_RUNNING_MAX)
    return pawl__fail(p, PAWL_EINVAL, "limit must be within 1..%d (got %d)",
                      TOP_RUNNING_MAX, limit);
  if (!cb) return pawl__fail(p, PAWL_EINVAL, "no callback");
  return pawl__from_store(
      p, p->store->ops->top.running(p->store, limit, cb, data));
}

/* ---- the snapshot -------------------------------------------------------- */

void pawl_top_opts_init(pawl_top_opts_t *o) {
  memset(o, 0, sizeof *o);
  o->running = 10;
  o->dead = 10;
  o->minutes = 2;
}

void pawl_top_snapshot_free(char *json) { pawl__free(json); }

static void top_str(pawl_buf_t *b, const char *key, const char *v) {
  pawl__buf_printf(b, "\"%s\":", key);
  if (v)
    pawl__buf_json_string(b, v, strlen(v));
  else
    pawl__buf_puts(b, "null");
}

static void top_int(pawl_buf_t *b, const char *key, int64_t v) {
  pawl__buf_printf(b, "\"%s\":%" PRId64, key, v);
}

static void top_num(pawl_buf_t *b, const char *key, double v) {
  char t[40];
  pawl__json_number_text(v, t, sizeof t);
  pawl__buf_printf(b, "\"%s\":%s", key, t);
}

static void top_id(pawl_buf_t *b, const pawl_id_t *id) {
  char t[PAWL_ID_STRLEN];
  pawl_id_format(id, t);
  pawl__buf_printf(b, "\"id\":\"%s\"", t);
}

typedef struct top_jobs_ctx {
  pawl_buf_t *b;
  int64_t at;
  int dead;
  int first;
} top_jobs_ctx_t;

static int top_job_cb(const pawl_job_t *j, void *data) {
  top_jobs_ctx_t *c = data;
  pawl_buf_t *b = c->b;
  pawl__buf_puts(b, c->first ? "{" : ",{");
  c->first = 0;
  top_id(b, &j->id);
  pawl__buf_putc(b, ',');
  top_str(b, "type", j->type);
  pawl__buf_putc(b, ',');
  top_str(b, "queue", j->queue);
  pawl__buf_putc(b, ',');
  top_int(b, "attempt", j->attempt);
  pawl__buf_putc(b, ',');
  if (c->dead) {
    top_int(b, "finished_at", j->finished_at);
    pawl__buf_putc(b, ',');
    const char *e = j->last_error ? j->last_error : "";
    size_t n = strlen(e);
    /* A cut inside a UTF-8 sequence becomes U+FFFD (buf.h): still JSON. */
    pawl__buf_puts(b, "\"error\":");
    pawl__buf_json_string(b, e, n > TOP_ERROR_MAX ? TOP_ERROR_MAX : n);
  } else {
    top_str(b, "node", j->lease_owner);
    pawl__buf_putc(b, ',');
    top_int(b, "started_at", j->started_at);
    pawl__buf_putc(b, ',');
    top_int(b, "running_ms",
            j->started_at && c->at > j->started_at ? c->at - j->started_at : 0);
    /* Claimed ahead of a free worker: its body has not started, it waits
     * (since its claim: a running job's updated_at). */
    pawl__buf_printf(b, ",\"claimed\":%s,", j->started_at ? "false" : "true");
    top_int(b, "claimed_ms",
            !j->started_at && c->at > j->updated_at ? c->at - j->updated_at
                                                    : 0);
    pawl__buf_putc(b, ',');
    top_num(b, "progress_done", j->progress_done);
    pawl__buf_putc(b, ',');
    top_num(b, "progress_total", j->progress_total);
  }
  pawl__buf_putc(b, '}');
  return 0;
}

static void top_queues_json(pawl_buf_t *b, const pawl_queue_info_t *q,
                            size_t n) {
  pawl__buf_puts(b, "\"queues\":[");
  for (size_t i = 0; i < n; i++) {
    pawl__buf_puts(b, i ? ",{" : "{");
    top_str(b, "name", q[i].name);
    pawl__buf_printf(b, ",\"paused\":%s,", q[i].paused ? "true" : "false");
    top_str(b, "paused_by", q[i].paused_by);
    pawl__buf_putc(b, ',');
    top_str(b, "reason", q[i].reason);
    for (int s = 0; s < PAWL_STATE_COUNT; s++) {
      /* "paused" names the queue's pause: its paused jobs are "held". */
      pawl__buf_putc(b, ',');
      top_int(b, s == PAWL_PAUSED ? "held" : pawl_state_name(s), q[i].count[s]);
    }
    pawl__buf_putc(b, ',');
    top_int(b, "oldest_due_ms", q[i].oldest_due_ms);
    pawl__buf_putc(b, '}');
  }
  pawl__buf_putc(b, ']');
}

static void top_nodes_json(pawl_buf_t *b, const pawl_node_info_t *nd,
                           size_t n) {
  pawl__buf_puts(b, "\"nodes\":[");
  for (size_t i = 0; i < n; i++) {
    pawl__buf_puts(b, i ? ",{" : "{");
    top_str(b, "id", nd[i].id);
    pawl__buf_putc(b, ',');
    top_str(b, "version", nd[i].version);
    pawl__buf_putc(b, ',');
    top_str(b, "queues", nd[i].queues);
    pawl__buf_putc(b, ',');
    top_int(b, "started_at", nd[i].started_at);
    pawl__buf_putc(b, ',');
    top_int(b, "last_beat", nd[i].last_beat);
    pawl__buf_putc(b, ',');
    top_int(b, "running", nd[i].running);
    pawl__buf_putc(b, ',');
    top_str(b, "state", nd[i].state);
    pawl__buf_putc(b, ',');
    top_int(b, "stopped_at", nd[i].stopped_at);
    pawl__buf_putc(b, '}');
  }
  pawl__buf_putc(b, ']');
}

static void top_tp_json(pawl_buf_t *b, const pawl_tp_bucket_t *t, size_t n) {
  pawl__buf_puts(b, "\"throughput\":[");
  for (size_t i = 0; i < n; i++) {
    pawl__buf_puts(b, i ? ",{" : "{");
    top_int(b, "minute_at", t[i].minute_at);
    pawl__buf_putc(b, ',');
    top_str(b, "state", pawl_state_name(t[i].state));
    pawl__buf_putc(b, ',');
    top_str(b, "queue", t[i].queue);
    pawl__buf_putc(b, ',');
    top_int(b, "count", t[i].count);
    pawl__buf_putc(b, '}');
  }
  pawl__buf_putc(b, ']');
}

int pawl_top_snapshot(pawl_t *p, const pawl_top_opts_t *o, char **json) {
  PAWL__CHECK(p);
  p->errmsg[0] = 0;
  pawl_top_opts_t def;
  if (!o) {
    pawl_top_opts_init(&def);
    o = &def;
  }
  if (o->running < 0 || o->running > TOP_LIST_MAX)
    return pawl__fail(p, PAWL_EINVAL, "running must be within 0..%d (got %d)",
                      TOP_LIST_MAX, o->running);
  if (o->dead < 0 || o->dead > TOP_LIST_MAX)
    return pawl__fail(p, PAWL_EINVAL, "dead must be within 0..%d (got %d)",
                      TOP_LIST_MAX, o->dead);
  if (o->minutes < 1 || o->minutes > STORE_TP_KEEP)
    return pawl__fail(p, PAWL_EINVAL, "minutes must be within 1..%d (got %d)",
                      STORE_TP_KEEP, o->minutes);
  pawl_queue_info_t *qs = NULL;
  pawl_node_info_t *nodes = NULL;
  pawl_tp_bucket_t *tp = NULL;
  size_t nq = 0, nn = 0, ntp = 0;
  pawl_buf_t b;
  pawl__buf_init(&b);
  int64_t at = pawl_now(p);
  int rc = pawl_queues(p, &qs, &nq);
  if (!rc) rc = pawl_nodes(p, &nodes, &nn);
  if (!rc) rc = pawl_throughput(p, o->minutes, &tp, &ntp);
  if (!rc) {
    pawl__buf_puts(&b, "{");
    top_int(&b, "at", at);
    pawl__buf_putc(&b, ',');
    top_str(&b, "node", p->node_id);
    pawl__buf_putc(&b, ',');
    top_queues_json(&b, qs, nq);
    pawl__buf_putc(&b, ',');
    top_nodes_json(&b, nodes, nn);
    pawl__buf_putc(&b, ',');
    top_tp_json(&b, tp, ntp);
    pawl__buf_puts(&b, ",\"running\":[");
    top_jobs_ctx_t c = {&b, at, 0, 1};
    if (o->running) rc = pawl_running_jobs(p, o->running, top_job_cb, &c);
  }
  if (!rc) {
    pawl__buf_puts(&b, "],\"dead\":[");
    top_jobs_ctx_t c = {&b, at, 1, 1};
    pawl_filter_t f;
    pawl_filter_init(&f);
    f.state = PAWL_FAILED;
    f.limit = o->dead;
    if (o->dead) rc = pawl_list(p, &f, top_job_cb, &c);
    pawl__buf_puts(&b, "]}");
  }
  pawl_queues_free(qs, nq);
  pawl_nodes_free(nodes, nn);
  pawl_throughput_free(tp, ntp);
  if (rc) {
    pawl__buf_free(&b);
    return rc;
  }
  char *text = pawl__buf_detach(&b);
  if (!text) return pawl__fail(p, PAWL_ENOMEM, "out of memory");
  *json = text;
  return 0;
}
