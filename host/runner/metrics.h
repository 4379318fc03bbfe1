/* metrics.h: the node's metrics, in the Prometheus text
 * exposition format (0.0.4), for the HTTP server (ops/http.c) to serve.
 *
 * Two kinds of numbers:
 * - the node's own counters and histograms (jobs started, succeeded, ...
 *   by type and queue; execution time, queue wait; claim and completion
 *   batch sizes; leases recovered; database errors; script reload
 *   errors), kept in memory with atomics by the threads where things
 *   happen: a worker or the completer adds to them without a lock (a
 *   (type, queue) seen for the first time takes a mutex once to be
 *   added to the table, which lookups read without one);
 * - gauges of the database (jobs by state and queue, the oldest due
 *   job's wait), refreshed by a thread of their own (pawl__metrics_main)
 *   every refresh_ms on a connection of its own into a snapshot, so that
 *   a scrape reads memory only and never waits for the database or for
 *   a worker. Pending and running jobs are counted through their partial
 *   indexes at each refresh; the finished ones exactly every full_ms, and
 *   in between from the per-minute finish counts every node writes
 *   (pawl_throughput), so no refresh passes over a million finished jobs.
 *
 * Every function takes a NULL metrics and then does nothing: a host
 * without --metrics pays one test per event. */
#ifndef PAWL_METRICS_H
#define PAWL_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "pawl.h"

struct host;
typedef struct metrics metrics_t;

/* The node's scalar counters. */
typedef enum metrics_counter {
  MET_LEASES_RECOVERED = 0, /* jobs this node's sweeps took back */
  MET_DB_ERRORS,            /* failed database calls of the host's threads */
  MET_RELOAD_ERRORS,        /* scripts that failed to load, per load */
  MET_GAUGE_ERRORS,         /* gauge refreshes that failed */
  MET_WEBHOOK_DROPS,        /* webhook posts refused: queue full, stopping */
  MET_NCOUNTERS
} metrics_counter_t;

/* A new, empty set for host `h` (its workers count, its log); refresh_ms
 * (0: 5000) and full_ms (0: 300000; at most 20 minutes, so that the
 * finish counts it adds up are still kept) pace the gauges. NULL: out of
 * memory. */
metrics_t *pawl__metrics_new(struct host *h, int64_t refresh_ms,
                             int64_t full_ms);
void pawl__metrics_free(metrics_t *m);

/* A job's attempt starts (worker thread): started counter of its type
 * and queue, and its queue wait (ms from run_at to now). */
void pawl__metrics_started(metrics_t *m, const char *type, const char *queue,
                           double wait_ms);
/* An attempt's outcome was stored (completer thread): `kind` is
 * PAWL_EV_SUCCEEDED, _FAILED, _RETRIED or _DEAD; exec_ms >= 0 adds to
 * the execution-time histogram (once per attempt: give it with one kind
 * only). */
void pawl__metrics_outcome(metrics_t *m, int kind, const char *type,
                           const char *queue, double exec_ms);
void pawl__metrics_claim_batch(metrics_t *m, size_t n);
void pawl__metrics_complete_batch(metrics_t *m, size_t n);
void pawl__metrics_add(metrics_t *m, metrics_counter_t c, int64_t n);
/* Gauges of the node: its busy workers and its broken scripts now. */
void pawl__metrics_busy(metrics_t *m, int busy);
void pawl__metrics_broken(metrics_t *m, int broken);

/* Appends the whole exposition to `out` (the HTTP server's thread):
 * memory only. */
void pawl__metrics_render(metrics_t *m, pawl_buf_t *out);
/* Logs a scrape's cost (render time in microseconds, bytes) at debug
 * level. */
void pawl__metrics_log_scrape(metrics_t *m, int64_t us, size_t bytes);

/* The gauges' thread (its argument: the host): refreshes the snapshot
 * until the host has stopped, then sets h->metrics_done. Its database
 * handle is opened by pawl__metrics_open (at pawl_start, so that a
 * database that cannot be opened fails the start). */
int pawl__metrics_open(metrics_t *m, char *err, size_t errlen);
void *pawl__metrics_main(void *arg);
/* One refresh on the calling thread (tests, and the thread's loop).
 * pawl__metrics_recount: the next refresh counts exactly (tests). */
int pawl__metrics_refresh(metrics_t *m);
void pawl__metrics_recount(metrics_t *m);

/* Prometheus text: appends `s` escaped as a label value (backslash,
 * double quote and newline escaped; invalid UTF-8 as U+FFFD). */
void pawl__metrics_label(pawl_buf_t *out, const char *s);

#endif
