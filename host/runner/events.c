/* events.c: the event callback of a host (pawl_host_opts_t.event_fn):
 * job transitions queued where they happen and delivered by one thread.
 *
 * Events are made on several threads (the enqueuing one, a worker at a
 * start, the completer once an outcome is stored) and queued in order
 * under h->mu; one thread delivers them, outside the lock: the completer
 * thread for pawl_start()'s host, the stepping thread in step mode (and
 * so the loop thread when attached to libuv). An enqueue takes its places
 * in the queue before its insert and fills them after the commit: the
 * delivery stops at a place not filled yet, so a job's ENQUEUED comes
 * before its STARTED even when another thread claims it at once. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "host.h"
#include "pawl_internal.h"

struct host_event {
  pawl_job_event_t ev;       /* its strings point into `strs` */
  char *strs;                /* owned: type, queue and error, each NUL'd */
  int ready;                 /* 0: an enqueue's place, not committed */
  int drop;                  /* committed without an event (not made) */
  struct host_event *next;
};

const char *pawl_event_name(int kind) {
  static const char *const names[] = {"enqueued",  "started", "succeeded",
                                      "failed",    "retried", "dead"};
  return kind >= 0 && kind <= PAWL_EV_DEAD ? names[kind] : "?";
}

/* The strings of an event in one allocation. 0, or -1 out of memory. */
static int event_strings(host_event_t *e, const char *type, const char *queue,
                         const char *error) {
  size_t lt = type ? strlen(type) + 1 : 0, lq = queue ? strlen(queue) + 1 : 0;
  size_t le = error ? strlen(error) + 1 : 0;
  char *s = pawl__malloc(lt + lq + le + 1);
  if (!s) return -1;
  e->strs = s;
  e->ev.type = type ? memcpy(s, type, lt) : NULL;
  e->ev.queue = queue ? memcpy(s + lt, queue, lq) : NULL;
  e->ev.error = error ? memcpy(s + lt + lq, error, le) : NULL;
  return 0;
}

static void event_free(host_event_t *e) {
  pawl__free(e->strs);
  pawl__free(e);
}

/* Called with h->mu held. */
static void event_append(host_t *h, host_event_t *e) {
  e->next = NULL;
  if (h->ev_tail)
    h->ev_tail->next = e;
  else
    h->ev_head = e;
  h->ev_tail = e;
}

void pawl__host_event_locked(host_t *h, pawl_event_kind_t kind,
                             const pawl_job_t *job, const pawl_id_t *id,
                             int32_t attempt, const char *error,
                             int64_t run_at) {
  if (!h->opts.event_fn) return;
  host_event_t *e = pawl__calloc(1, sizeof *e);
  if (!e || event_strings(e, job ? job->type : NULL, job ? job->queue : NULL,
                          error)) {
    pawl__free(e);
    return; /* out of memory: the event is lost, the job is not */
  }
  e->ev.kind = kind;
  e->ev.id = job ? job->id : *id;
  e->ev.attempt = attempt;
  e->ev.run_at = run_at;
  e->ready = 1;
  event_append(h, e);
}

void pawl__host_event(host_t *h, pawl_event_kind_t kind, const pawl_job_t *job,
                      int32_t attempt) {
  if (!h->opts.event_fn) return;
  pthread_mutex_lock(&h->mu);
  pawl__host_event_locked(h, kind, job, NULL, attempt, NULL, 0);
  pthread_cond_signal(&h->done_cv); /* the completer delivers */
  pthread_mutex_unlock(&h->mu);
}

int pawl__host_events_ready(const host_t *h) {
  return h->ev_head && h->ev_head->ready;
}

void pawl__host_events_deliver(host_t *h) {
  if (!h->opts.event_fn) return;
  for (;;) {
    /* Takes what is ready at the head; the callback runs unlocked (it may
     * enqueue, which appends). */
    pthread_mutex_lock(&h->mu);
    host_event_t *list = NULL, **tail = &list;
    while (h->ev_head && h->ev_head->ready) {
      host_event_t *e = h->ev_head;
      h->ev_head = e->next;
      if (!h->ev_head) h->ev_tail = NULL;
      e->next = NULL;
      *tail = e;
      tail = &e->next;
    }
    pthread_mutex_unlock(&h->mu);
    if (!list) return;
    while (list) {
      host_event_t *e = list;
      list = e->next;
      if (!e->drop) h->opts.event_fn(h->opts.event_data, &e->ev);
      event_free(e);
    }
  }
}

void pawl__host_events_free(host_t *h) {
  while (h->ev_head) {
    host_event_t *e = h->ev_head;
    h->ev_head = e->next;
    event_free(e);
  }
  h->ev_tail = NULL;
}

/* ---- an enqueue's places (pawl__host_ops_t) ----------------------------- */

void *pawl__host_enqueue_begin(host_t *h, size_t n) {
  if (!h->opts.event_fn || n == 0) return NULL;
  host_event_t *first = NULL, **tail = &first;
  for (size_t i = 0; i < n; i++) {
    host_event_t *e = pawl__calloc(1, sizeof *e);
    if (!e) {
      while (first) {
        host_event_t *next = first->next;
        pawl__free(first);
        first = next;
      }
      return NULL; /* no events for this enqueue */
    }
    e->drop = 1; /* until filled */
    *tail = e;
    tail = &e->next;
  }
  pthread_mutex_lock(&h->mu);
  for (host_event_t *e = first, *next; e; e = next) {
    next = e->next;
    event_append(h, e);
  }
  pthread_mutex_unlock(&h->mu);
  return first;
}

/* The places are ours until enqueue_end marks them ready: nobody else
 * reads or writes them (the delivery stops at the first), except the
 * `next` of the last (an append may set it), which this never reads:
 * `more` is 0 for the last. */
void pawl__host_enqueue_fill(void **place, int more, const pawl_id_t *id,
                             const char *type, const char *queue,
                             int64_t run_at, int made) {
  host_event_t *e = *place;
  if (made && event_strings(e, type, queue, NULL) == 0) {
    e->ev.kind = PAWL_EV_ENQUEUED;
    e->ev.id = *id;
    e->ev.run_at = run_at;
    e->drop = 0;
  }
  *place = more ? e->next : NULL;
}

void pawl__host_enqueue_end(host_t *h, void *first, size_t n) {
  pthread_mutex_lock(&h->mu);
  host_event_t *e = first;
  for (size_t i = 0; i < n; i++, e = e->next) e->ready = 1;
  pthread_cond_signal(&h->done_cv);
  pthread_mutex_unlock(&h->mu);
}
