/* metrics.c: the node's metrics and their text (metrics.h says what is
 * kept where). The HTTP side is ops/http.c: this file knows nothing of HTTP,
 * so that the web dashboard the same server will carry adds routes of its
 * own without touching it. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "metrics.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "clock.h"
#include "dbstats.h"
#include "host.h"
#include "pawl_internal.h"
#include "utf8.h"

/* Histogram buckets: seconds for the times (a no-op job takes tens of
 * microseconds, a report minutes), jobs for the batch sizes (the poller
 * claims up to HOST_CLAIM_MAX, the completer writes up to HOST_BATCH). */
static const double met_time_le[] = {0.0005, 0.001, 0.0025, 0.005, 0.01,
                                     0.025,  0.05,  0.1,    0.25,  0.5,
                                     1,      2.5,   5,      10,    30,
                                     60,     300,   900,    3600};
#define MET_TIME_N (sizeof met_time_le / sizeof *met_time_le)
static const double met_batch_le[] = {1,   2,   5,    10,   20,  50,
                                      100, 200, 500, 1000, 2000};
#define MET_BATCH_N (sizeof met_batch_le / sizeof *met_batch_le)
#define MET_BUCKETS_MAX 20 /* the longest list above, plus +Inf */

/* At most this many (type, queue) pairs get series of their own; later
 * ones add to type="_other", queue="_other", and at most this many queues
 * get gauges of their own; later ones add to queue="_other". Job code
 * chooses type and queue names, so a runaway of names must not grow the
 * node's memory or the scrape without bound: each series is some 45
 * lines, and 200 of them keep a scrape under a megabyte. What is folded
 * is counted (pawl_metrics_labels_folded_total, pawl_queues_folded). */
#define MET_SERIES_MAX 200
#define MET_QUEUES_MAX 200
#define MET_OTHER "_other"
#define MET_HASH 256

typedef struct met_hist {
  atomic_ullong bucket[MET_BUCKETS_MAX]; /* per bucket, not cumulative;
                                            the last one is +Inf */
  atomic_ullong sum_us;                  /* sum of observations, x 1e6 */
} met_hist_t;

/* The counters of one (type, queue). Its strings and links never change
 * once it is published (an atomic store with release), so readers walk
 * the lists without a lock. */
typedef struct met_series {
  char *type, *queue;
  uint32_t hash;
  atomic_ullong jobs[5]; /* started, succeeded, failed, retried, dead */
  met_hist_t exec, wait;
  struct met_series *next_hash;
  struct met_series *next_all;
} met_series_t;

/* One queue's gauges, as the refresher adds them up. */
typedef struct met_queue {
  char *name;
  int64_t base[PAWL_STATE_COUNT]; /* the exact counts of the last full read */
  int64_t tp0[PAWL_STATE_COUNT];  /* finishes since base_minute, then */
  int64_t tp1[PAWL_STATE_COUNT];  /* finishes since base_minute, now */
  int64_t live[PAWL_STATE_COUNT]; /* pending, running: now */
  int64_t oldest_due;             /* store ms; 0: none due */
  int seen;                       /* in the last full read */
} met_queue_t;

struct metrics {
  host_t *h;
  int64_t refresh_ms, full_ms;
  /* The node's counters. */
  _Atomic(met_series_t *) table[MET_HASH];
  _Atomic(met_series_t *) all;
  pthread_mutex_t add_mu; /* adding a series (never held by a reader) */
  int nseries;            /* under add_mu */
  atomic_ullong folded;   /* observations that went to `other` */
  met_series_t *other;    /* the series past MET_SERIES_MAX */
  atomic_ullong counter[MET_NCOUNTERS];
  met_hist_t claim, complete;
  atomic_int busy, broken;
  /* The gauges: the refresher's own state ... */
  pawl_t *db;
  met_queue_t *queues;
  size_t nqueues;
  int64_t folded_rows;    /* counts of the last read added to "_other" */
  int have_base;
  int64_t base_minute, base_mono;
  /* ... and what it publishes: the gauges' text and when it was made. */
  pthread_mutex_t snap_mu;
  char *gauge_text;
  int64_t gauge_mono, base_mono_pub; /* under snap_mu */
  pthread_cond_t cv; /* the refresher's timed waits */
};

/* ---- labels and numbers -------------------------------------------------- */

void pawl__metrics_label(pawl_buf_t *out, const char *s) {
  size_t n = strlen(s);
  char *clean = pawl__utf8_scrub(s, n, &n);
  const char *p = clean ? clean : "";
  if (!clean) n = 0;
  for (size_t i = 0; i < n; i++) {
    char c = p[i];
    if (c == '\\')
      pawl__buf_puts(out, "\\\\");
    else if (c == '"')
      pawl__buf_puts(out, "\\\"");
    else if (c == '\n')
      pawl__buf_puts(out, "\\n");
    else
      pawl__buf_putc(out, c);
  }
  pawl__free(clean);
}

/* The shortest of %.15g and %.17g that reads back as v (0.0005, not
 * 0.00050000000000000001). */
static void met_num(pawl_buf_t *out, double v) {
  char b[48];
  snprintf(b, sizeof b, "%.15g", v);
  if (strtod(b, NULL) != v) snprintf(b, sizeof b, "%.17g", v);
  pawl__buf_puts(out, b);
}

static void met_head(pawl_buf_t *out, const char *name, const char *type,
                     const char *help) {
  pawl__buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name,
                   type);
}

/* ---- the node's counters ------------------------------------------------- */

static uint32_t met_hash(const char *type, const char *queue) {
  uint32_t h = 2166136261u;
  for (const char *p = type; *p; p++) h = (h ^ (unsigned char)*p) * 16777619u;
  h = (h ^ 0xffu) * 16777619u;
  for (const char *p = queue; *p; p++) h = (h ^ (unsigned char)*p) * 16777619u;
  return h;
}

static met_series_t *met_series_make(const char *type, const char *queue,
                                     uint32_t hash) {
  met_series_t *s = pawl__calloc(1, sizeof *s);
  if (!s) return NULL;
  s->type = pawl__strdup(type);
  s->queue = pawl__strdup(queue);
  if (!s->type || !s->queue) {
    pawl__free(s->type);
    pawl__free(s->queue);
    pawl__free(s);
    return NULL;
  }
  s->hash = hash;
  return s;
}

static met_series_t *met_find(metrics_t *m, const char *type,
                              const char *queue, uint32_t hash) {
  met_series_t *s = atomic_load_explicit(&m->table[hash % MET_HASH],
                                         memory_order_acquire);
  for (; s; s = s->next_hash)
    if (s->hash == hash && strcmp(s->type, type) == 0 &&
        strcmp(s->queue, queue) == 0)
      return s;
  return NULL;
}

/* The series of (type, queue), made on first use; `other` when there are
 * too many or no memory. */
static met_series_t *met_series(metrics_t *m, const char *type,
                                const char *queue) {
  if (!type) type = "";
  if (!queue) queue = "";
  uint32_t hash = met_hash(type, queue);
  met_series_t *s = met_find(m, type, queue, hash);
  if (s) return s;
  pthread_mutex_lock(&m->add_mu);
  s = met_find(m, type, queue, hash); /* another thread may have added it */
  if (!s && m->nseries < MET_SERIES_MAX &&
      (s = met_series_make(type, queue, hash))) {
    s->next_hash = atomic_load_explicit(&m->table[hash % MET_HASH],
                                        memory_order_relaxed);
    atomic_store_explicit(&m->table[hash % MET_HASH], s, memory_order_release);
    s->next_all = atomic_load_explicit(&m->all, memory_order_relaxed);
    atomic_store_explicit(&m->all, s, memory_order_release);
    m->nseries++;
  }
  pthread_mutex_unlock(&m->add_mu);
  if (s) return s;
  atomic_fetch_add_explicit(&m->folded, 1, memory_order_relaxed);
  return m->other;
}

static void met_observe(met_hist_t *hi, const double *le, size_t n, double v) {
  size_t i = 0;
  while (i < n && v > le[i]) i++;
  atomic_fetch_add_explicit(&hi->bucket[i], 1, memory_order_relaxed);
  double us = v * 1e6;
  atomic_fetch_add_explicit(&hi->sum_us,
                            us > 0 && us < 1.8e19 ? (unsigned long long)us : 0,
                            memory_order_relaxed);
}

void pawl__metrics_started(metrics_t *m, const char *type, const char *queue,
                           double wait_ms) {
  if (!m) return;
  met_series_t *s = met_series(m, type, queue);
  atomic_fetch_add_explicit(&s->jobs[0], 1, memory_order_relaxed);
  met_observe(&s->wait, met_time_le, MET_TIME_N,
              wait_ms > 0 ? wait_ms / 1000.0 : 0);
}

void pawl__metrics_outcome(metrics_t *m, int kind, const char *type,
                           const char *queue, double exec_ms) {
  if (!m || kind < PAWL_EV_SUCCEEDED || kind > PAWL_EV_DEAD) return;
  met_series_t *s = met_series(m, type, queue);
  atomic_fetch_add_explicit(&s->jobs[kind - PAWL_EV_STARTED], 1,
                            memory_order_relaxed);
  if (exec_ms >= 0)
    met_observe(&s->exec, met_time_le, MET_TIME_N, exec_ms / 1000.0);
}

void pawl__metrics_claim_batch(metrics_t *m, size_t n) {
  if (m) met_observe(&m->claim, met_batch_le, MET_BATCH_N, (double)n);
}

void pawl__metrics_complete_batch(metrics_t *m, size_t n) {
  if (m) met_observe(&m->complete, met_batch_le, MET_BATCH_N, (double)n);
}

void pawl__metrics_add(metrics_t *m, metrics_counter_t c, int64_t n) {
  if (m && c < MET_NCOUNTERS && n > 0)
    atomic_fetch_add_explicit(&m->counter[c], (unsigned long long)n,
                              memory_order_relaxed);
}

void pawl__metrics_busy(metrics_t *m, int busy) {
  if (m) atomic_store_explicit(&m->busy, busy, memory_order_relaxed);
}

void pawl__metrics_broken(metrics_t *m, int broken) {
  if (m) atomic_store_explicit(&m->broken, broken, memory_order_relaxed);
}

/* ---- making and freeing -------------------------------------------------- */

metrics_t *pawl__metrics_new(host_t *h, int64_t refresh_ms, int64_t full_ms) {
  metrics_t *m = pawl__calloc(1, sizeof *m);
  if (!m) return NULL;
  m->h = h;
  m->refresh_ms = refresh_ms > 0 ? refresh_ms : 5000;
  m->full_ms = full_ms > 0 ? full_ms : 300000;
  if (m->full_ms > 20 * 60000) m->full_ms = 20 * 60000;
  pthread_mutex_init(&m->add_mu, NULL);
  pthread_mutex_init(&m->snap_mu, NULL);
  pawl__cond_init_mono(&m->cv);
  if (!(m->other = met_series_make(MET_OTHER, MET_OTHER, 0))) {
    pawl__metrics_free(m);
    return NULL;
  }
  return m;
}

static void met_queues_free(metrics_t *m) {
  for (size_t i = 0; i < m->nqueues; i++) pawl__free(m->queues[i].name);
  pawl__free(m->queues);
  m->queues = NULL;
  m->nqueues = 0;
}

static void met_series_free(met_series_t *s) {
  if (!s) return;
  pawl__free(s->type);
  pawl__free(s->queue);
  pawl__free(s);
}

void pawl__metrics_free(metrics_t *m) {
  if (!m) return;
  met_series_t *s = atomic_load(&m->all);
  while (s) {
    met_series_t *next = s->next_all;
    met_series_free(s);
    s = next;
  }
  met_series_free(m->other);
  met_queues_free(m);
  pawl__free(m->gauge_text);
  pawl_close(m->db);
  pthread_mutex_destroy(&m->add_mu);
  pthread_mutex_destroy(&m->snap_mu);
  pthread_cond_destroy(&m->cv);
  pawl__free(m);
}

int pawl__metrics_open(metrics_t *m, char *err, size_t errlen) {
  return pawl__open_sibling(m->h->p, "metrics", &m->db, err, errlen);
}

/* ---- the gauges ---------------------------------------------------------- */

/* The gauges of queue `name`, made on first sight; those of "_other" when
 * MET_QUEUES_MAX queues have theirs already (*folded is set then). */
static met_queue_t *met_queue(metrics_t *m, const char *name, int *folded) {
  for (size_t i = 0; i < m->nqueues; i++)
    if (strcmp(m->queues[i].name, name) == 0) return &m->queues[i];
  if (m->nqueues >= MET_QUEUES_MAX && strcmp(name, MET_OTHER) != 0) {
    *folded = 1;
    return met_queue(m, MET_OTHER, folded);
  }
  met_queue_t *grown =
      pawl__realloc(m->queues, (m->nqueues + 1) * sizeof *grown);
  if (!grown) return NULL;
  m->queues = grown;
  met_queue_t *q = &m->queues[m->nqueues];
  memset(q, 0, sizeof *q);
  if (!(q->name = pawl__strdup(name))) return NULL;
  m->nqueues++;
  return q;
}

typedef struct met_read {
  metrics_t *m;
  int full;
  int64_t folded; /* rows added to "_other" */
} met_read_t;

static int met_gauge_row(const pawl__gauge_row_t *row, void *data) {
  met_read_t *r = data;
  int folded = 0;
  met_queue_t *q = met_queue(r->m, row->queue, &folded);
  if (!q) return 1;
  if (folded) r->folded++;
  int s = row->state;
  if (s == PAWL_PENDING || s == PAWL_RUNNING) {
    q->live[s] += row->count;
    if (row->oldest_due > 0 && (!q->oldest_due || row->oldest_due < q->oldest_due))
      q->oldest_due = row->oldest_due;
  } else if (row->since) {
    if (r->full) q->tp0[s] += row->since;
    q->tp1[s] += row->since;
  } else {
    q->base[s] += row->count;
    q->seen = 1;
  }
  return 0;
}

static int met_cmp_queue(const void *a, const void *b) {
  return strcmp(((const met_queue_t *)a)->name, ((const met_queue_t *)b)->name);
}

/* The gauges' text from the queues' numbers (at store time `now`). */
static char *met_gauge_text(metrics_t *m, int64_t now) {
  static const char *const names[PAWL_STATE_COUNT] = {
      "pending", "running", "succeeded", "failed", "canceled", "paused",
      "blocked"};
  pawl_buf_t b = {0};
  met_head(&b, "pawl_jobs", "gauge",
           "Jobs in the database by queue and state (pending and running "
           "as of the last refresh; the others exact at the last recount, "
           "then moved by the finishes every node records).");
  for (size_t i = 0; i < m->nqueues; i++) {
    const met_queue_t *q = &m->queues[i];
    for (int s = 0; s < PAWL_STATE_COUNT; s++) {
      int64_t v = q->base[s];
      if (s == PAWL_PENDING || s == PAWL_RUNNING)
        v = q->live[s];
      else if (s == PAWL_SUCCEEDED || s == PAWL_FAILED || s == PAWL_CANCELED)
        v = q->base[s] + q->tp1[s] - q->tp0[s];
      if (v < 0) v = 0;
      pawl__buf_puts(&b, "pawl_jobs{queue=\"");
      pawl__metrics_label(&b, q->name);
      pawl__buf_printf(&b, "\",state=\"%s\"} %lld\n", names[s], (long long)v);
    }
  }
  met_head(&b, "pawl_queue_oldest_due_seconds", "gauge",
           "How long the oldest due pending job of the queue has waited "
           "(0: none due).");
  for (size_t i = 0; i < m->nqueues; i++) {
    const met_queue_t *q = &m->queues[i];
    int64_t wait = q->oldest_due > 0 && now > q->oldest_due ? now - q->oldest_due : 0;
    pawl__buf_puts(&b, "pawl_queue_oldest_due_seconds{queue=\"");
    pawl__metrics_label(&b, q->name);
    pawl__buf_puts(&b, "\"} ");
    met_num(&b, (double)wait / 1000.0);
    pawl__buf_putc(&b, '\n');
  }
  met_head(&b, "pawl_jobs_folded_groups", "gauge",
           "Counts of queues past the first 200 (by state) that the last "
           "refresh added to queue=\"_other\".");
  pawl__buf_printf(&b, "pawl_jobs_folded_groups %lld\n",
                   (long long)m->folded_rows);
  return pawl__buf_detach(&b);
}

int pawl__metrics_refresh(metrics_t *m) {
  int64_t mono = pawl__mono_ms();
  int full = !m->have_base || mono - m->base_mono >= m->full_ms;
  int64_t now = 0;
  for (size_t i = 0; i < m->nqueues; i++) {
    met_queue_t *q = &m->queues[i];
    memset(q->live, 0, sizeof q->live);
    memset(q->tp1, 0, sizeof q->tp1);
    q->oldest_due = 0;
    if (full) {
      memset(q->base, 0, sizeof q->base);
      memset(q->tp0, 0, sizeof q->tp0);
      q->seen = 0;
    }
  }
  /* A full read starts the count of finishes at the minute before the
   * current one (a node whose clock is a little behind may still add to
   * it): the finishes of those minutes so far are in both tp0 and tp1,
   * and only those after this read move the numbers. */
  int64_t since = full ? pawl__minute_of(pawl_now(m->db)) - 1 : m->base_minute;
  met_read_t r = {m, full, 0};
  int rc = pawl__gauges(m->db, since, full, &now, met_gauge_row, &r);
  if (rc) {
    pawl__metrics_add(m, MET_GAUGE_ERRORS, 1);
    pawl__metrics_add(m, MET_DB_ERRORS, 1);
    m->have_base = 0; /* the next read is a full one */
    log_line_t line;
    pawl__log_begin(&line, &m->h->log, PAWL_LOG_WARN,
                    "metrics: reading the gauges failed");
    pawl__log_str(&line, "error", pawl_errmsg(m->db));
    pawl__log_end(&line);
    return rc;
  }
  if (full) {
    /* Queues that hold nothing any more are dropped at a full read. */
    size_t k = 0;
    for (size_t i = 0; i < m->nqueues; i++) {
      met_queue_t *q = &m->queues[i];
      int any = q->seen || q->live[PAWL_PENDING] || q->live[PAWL_RUNNING];
      for (int s = 0; s < PAWL_STATE_COUNT && !any; s++) any = q->tp1[s] != 0;
      if (any)
        m->queues[k++] = *q;
      else
        pawl__free(q->name);
    }
    m->nqueues = k;
    m->have_base = 1;
    m->base_minute = since;
    m->base_mono = mono;
  }
  if (m->nqueues > 1)
    qsort(m->queues, m->nqueues, sizeof *m->queues, met_cmp_queue);
  m->folded_rows = r.folded;
  char *text = met_gauge_text(m, now);
  if (!text) return PAWL_ENOMEM;
  /* What a read costs (bench/metrics_bench.sh reads it at debug level). */
  log_line_t line;
  pawl__log_begin(&line, &m->h->log, PAWL_LOG_DEBUG, "metrics: gauges read");
  pawl__log_int(&line, "full", full);
  pawl__log_int(&line, "queues", (int64_t)m->nqueues);
  pawl__log_int(&line, "ms", pawl__mono_ms() - mono);
  pawl__log_end(&line);
  pthread_mutex_lock(&m->snap_mu);
  char *old = m->gauge_text;
  m->gauge_text = text;
  m->gauge_mono = pawl__mono_ms();
  m->base_mono_pub = m->base_mono;
  pthread_mutex_unlock(&m->snap_mu);
  pawl__free(old);
  return 0;
}

void pawl__metrics_recount(metrics_t *m) { m->have_base = 0; }

void pawl__metrics_log_scrape(metrics_t *m, int64_t us, size_t bytes) {
  log_line_t line;
  pawl__log_begin(&line, &m->h->log, PAWL_LOG_DEBUG, "metrics: scraped");
  pawl__log_int(&line, "render_us", us);
  pawl__log_int(&line, "bytes", (int64_t)bytes);
  pawl__log_end(&line);
}

/* 1 once the host has stopped (as the admin server waits for it). */
static int met_host_ended(host_t *h) {
  pthread_mutex_lock(&h->mu);
  int end = h->stopping && h->poller_done && h->completer_done;
  pthread_mutex_unlock(&h->mu);
  return end;
}

void *pawl__metrics_main(void *arg) {
  host_t *h = arg;
  metrics_t *m = h->metrics;
  int64_t next = 0;
  while (!met_host_ended(h)) {
    int64_t now = pawl__mono_ms();
    if (now >= next) {
      pawl__metrics_refresh(m);
      next = pawl__mono_ms() + m->refresh_ms;
      continue;
    }
    /* 100 ms: how soon a stop of the host is noticed. */
    int64_t left = next - now < 100 ? next - now : 100;
    pthread_mutex_lock(&m->snap_mu);
    struct timespec ts = pawl__mono_deadline(left > 0 ? left : 1);
    pthread_cond_timedwait(&m->cv, &m->snap_mu, &ts);
    pthread_mutex_unlock(&m->snap_mu);
  }
  pthread_mutex_lock(&h->mu);
  h->metrics_done = 1;
  pthread_cond_broadcast(&h->stop_cv);
  pthread_mutex_unlock(&h->mu);
  return NULL;
}

/* ---- the text ------------------------------------------------------------ */

static void met_hist_text(pawl_buf_t *b, const char *name, const char *labels,
                          const met_hist_t *hi, const double *le, size_t n) {
  unsigned long long cum = 0;
  for (size_t i = 0; i <= n; i++) {
    cum += atomic_load_explicit(&hi->bucket[i], memory_order_relaxed);
    pawl__buf_printf(b, "%s_bucket{%s%sle=\"", name, labels, *labels ? "," : "");
    if (i < n)
      met_num(b, le[i]);
    else
      pawl__buf_puts(b, "+Inf");
    pawl__buf_printf(b, "\"} %llu\n", cum);
  }
  /* _count is the +Inf bucket, so the two agree even while observations
   * come in. */
  pawl__buf_printf(b, "%s_sum%s%s%s ", name, *labels ? "{" : "", labels,
                   *labels ? "}" : "");
  met_num(b, (double)atomic_load_explicit(&hi->sum_us, memory_order_relaxed) /
                 1e6);
  pawl__buf_printf(b, "\n%s_count%s%s%s %llu\n", name, *labels ? "{" : "",
                   labels, *labels ? "}" : "", cum);
}

/* The labels of a series: type="...",queue="..." */
static void met_series_labels(pawl_buf_t *lb, const met_series_t *s) {
  pawl__buf_reset(lb);
  pawl__buf_puts(lb, "type=\"");
  pawl__metrics_label(lb, s->type);
  pawl__buf_puts(lb, "\",queue=\"");
  pawl__metrics_label(lb, s->queue);
  pawl__buf_putc(lb, '"');
}

static int met_series_used(const met_series_t *s) {
  for (int k = 0; k < 5; k++)
    if (atomic_load_explicit(&s->jobs[k], memory_order_relaxed)) return 1;
  return 0;
}

void pawl__metrics_render(metrics_t *m, pawl_buf_t *out) {
  static const struct {
    const char *name, *help;
  } jobs[5] = {
      {"pawl_jobs_started_total", "Attempts this node started."},
      {"pawl_jobs_succeeded_total", "Attempts this node ran that succeeded."},
      {"pawl_jobs_failed_total",
       "Attempts this node ran that failed (then retried or dead)."},
      {"pawl_jobs_retried_total",
       "Failed attempts this node ran that will be retried."},
      {"pawl_jobs_dead_total",
       "Failed attempts this node ran that moved the job to the dead-letter "
       "set."},
  };
  /* The series published so far; one may be added while we walk (it is
   * then in the next scrape). `other` last, when used. */
  met_series_t *head = atomic_load_explicit(&m->all, memory_order_acquire);
  pawl_buf_t lb = {0};
  for (int k = 0; k < 5; k++) {
    met_head(out, jobs[k].name, "counter", jobs[k].help);
    for (met_series_t *s = head;; s = s->next_all) {
      if (!s) s = met_series_used(m->other) ? m->other : NULL;
      if (!s) break;
      met_series_labels(&lb, s);
      pawl__buf_printf(out, "%s{%s} %llu\n", jobs[k].name,
                       pawl__buf_cstr(&lb),
                       atomic_load_explicit(&s->jobs[k], memory_order_relaxed));
      if (s == m->other) break;
    }
  }
  static const struct {
    const char *name, *help;
    size_t off;
  } hists[2] = {
      {"pawl_job_execution_seconds",
       "How long this node's attempts ran (their code, in the worker).",
       offsetof(met_series_t, exec)},
      {"pawl_job_queue_wait_seconds",
       "How long jobs this node started had been due (run_at to start).",
       offsetof(met_series_t, wait)},
  };
  for (int k = 0; k < 2; k++) {
    met_head(out, hists[k].name, "histogram", hists[k].help);
    for (met_series_t *s = head;; s = s->next_all) {
      if (!s) s = met_series_used(m->other) ? m->other : NULL;
      if (!s) break;
      met_series_labels(&lb, s);
      met_hist_text(out, hists[k].name, pawl__buf_cstr(&lb),
                    (const met_hist_t *)((const char *)s + hists[k].off),
                    met_time_le, MET_TIME_N);
      if (s == m->other) break;
    }
  }
  pawl__buf_free(&lb);
  met_head(out, "pawl_claim_batch_size", "histogram",
           "Jobs per claim of this node's poller (claims that found any).");
  met_hist_text(out, "pawl_claim_batch_size", "", &m->claim, met_batch_le,
                MET_BATCH_N);
  met_head(out, "pawl_completion_batch_size", "histogram",
           "Outcomes per write of this node's completer.");
  met_hist_text(out, "pawl_completion_batch_size", "", &m->complete,
                met_batch_le, MET_BATCH_N);
  met_head(out, "pawl_workers", "gauge", "Worker threads of this node.");
  pawl__buf_printf(out, "pawl_workers %d\n", m->h->nworkers);
  met_head(out, "pawl_workers_busy", "gauge",
           "Worker threads of this node running a job now.");
  pawl__buf_printf(out, "pawl_workers_busy %d\n",
                   atomic_load_explicit(&m->busy, memory_order_relaxed));
  static const struct {
    const char *name, *help;
  } ctr[MET_NCOUNTERS] = {
      {"pawl_leases_recovered_total",
       "Jobs whose lease had expired that this node's sweeps took back."},
      {"pawl_database_errors_total",
       "Database calls of this node's threads that failed (claims, "
       "heartbeats, outcome writes, sweeps, gauge reads)."},
      {"pawl_script_reload_errors_total",
       "Scripts that failed to load, counted at each load of the scripts "
       "directory."},
      {"pawl_jobs_stats_refresh_errors_total",
       "Refreshes of pawl_jobs and pawl_queue_oldest_due_seconds (the database's "
       "numbers) that failed."},
      {"pawl_webhook_posts_dropped_total",
       "Webhook posts dropped before they were tried: their destination's "
       "queue was full, there were too many destinations, or the host was "
       "stopping."},
  };
  for (int k = 0; k < MET_NCOUNTERS; k++) {
    met_head(out, ctr[k].name, "counter", ctr[k].help);
    pawl__buf_printf(out, "%s %llu\n", ctr[k].name,
                     atomic_load_explicit(&m->counter[k], memory_order_relaxed));
  }
  met_head(out, "pawl_metrics_labels_folded_total", "counter",
           "Attempts started and outcomes counted under type=\"_other\", "
           "queue=\"_other\" because 200 (type, queue) pairs had series "
           "of their own already.");
  pawl__buf_printf(out, "pawl_metrics_labels_folded_total %llu\n",
                   atomic_load_explicit(&m->folded, memory_order_relaxed));
  met_head(out, "pawl_database_reconnects_total", "counter",
           "Database connections of this process that were lost and opened "
           "again.");
  pawl__buf_printf(out, "pawl_database_reconnects_total %lld\n",
                   (long long)pawl__dbstats_reconnects());
  met_head(out, "pawl_scripts_broken", "gauge",
           "Scripts that did not load at the last load (their previous "
           "version serves).");
  pawl__buf_printf(out, "pawl_scripts_broken %d\n",
                   atomic_load_explicit(&m->broken, memory_order_relaxed));
  /* The database's gauges: the refresher's last text. */
  int64_t mono = pawl__mono_ms();
  pthread_mutex_lock(&m->snap_mu);
  if (m->gauge_text) pawl__buf_puts(out, m->gauge_text);
  int64_t at = m->gauge_text ? m->gauge_mono : -1, base = m->base_mono_pub;
  pthread_mutex_unlock(&m->snap_mu);
  if (at >= 0) {
    met_head(out, "pawl_jobs_stats_age_seconds", "gauge",
             "How old pawl_jobs and pawl_queue_oldest_due_seconds are.");
    pawl__buf_puts(out, "pawl_jobs_stats_age_seconds ");
    met_num(out, (double)(mono - at) / 1000.0);
    pawl__buf_putc(out, '\n');
    met_head(out, "pawl_jobs_stats_recount_age_seconds", "gauge",
             "How long ago the finished, paused and blocked jobs were "
             "counted exactly.");
    pawl__buf_puts(out, "pawl_jobs_stats_recount_age_seconds ");
    met_num(out, (double)(mono - base) / 1000.0);
    pawl__buf_putc(out, '\n');
  }
}
