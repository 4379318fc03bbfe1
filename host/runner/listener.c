/* listener.c: the listener thread (stores that hear other processes'
 * enqueues: PostgreSQL LISTEN/NOTIFY). See host.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>

#include "clock.h"
#include "host.h"
#include "pawl_internal.h"

/* Stores that can hear other processes' enqueues (PostgreSQL NOTIFY) get a
 * connection of their own that only listens, and wakes the poller at once.
 * Polling stays the safety net: while this connection is down, jobs are
 * still found within poll_ms.
 *
 * What the wakeups say goes to the poller too (h->heard): how far back
 * rows have become claimable, which moves its claims' floors back
 * (store.h, claim.hear). The poller claims from floors only while
 * h->hearing says that every wakeup since the listener began was heard. */

/* More than this much unread, and the poller's claims start from the top
 * instead ("*"): a poller that does not claim for a while (every worker
 * busy) must not make the listener keep an unbounded log. */
#define HEARD_MAX (64 * 1024)

static void listener_heard(host_t *h, int hearing, pawl_buf_t *got) {
  pthread_mutex_lock(&h->mu);
  if (!hearing) {
    h->hearing = 0;
  } else {
    if (!h->hearing) {
      h->hearing = 1;
      pawl__buf_puts(&h->heard, "*\n"); /* missed while deaf */
    }
    if (got->len) {
      if (h->heard.len + got->len > HEARD_MAX) {
        pawl__buf_reset(&h->heard);
        pawl__buf_puts(&h->heard, "*\n");
      } else {
        pawl__buf_append(&h->heard, got->data, got->len);
      }
    }
    /* A log cut short by a failed allocation would drop a rewind. */
    if (h->heard.oom) h->hearing = 0;
  }
  pthread_mutex_unlock(&h->mu);
  pawl__buf_reset(got);
}

void *pawl__listener_main(void *arg) {
  host_t *h = arg;
  pawl_t *p = NULL;
  char err[512];
  int64_t backoff = 100;
  int listening = 0, down = 0;
  pawl_buf_t got;
  pawl__buf_init(&got);
  pthread_mutex_lock(&h->mu);
  while (!h->poller_done) {
    pthread_mutex_unlock(&h->mu);
    int rc = 0, woke = 0;
    if (!p && pawl__open_sibling(h->p, NULL, &p, err, sizeof err) != 0) {
      p = NULL;
      rc = -1;
    } else if (!listening) {
      rc = pawl__listen(p);
      if (!rc) listening = 1;
      snprintf(err, sizeof err, "%s", pawl_errmsg(p));
    } else {
      rc = pawl__wakeup_wait(p, 200, &woke, &got);
      snprintf(err, sizeof err, "%s", pawl_errmsg(p));
    }
    listener_heard(h, !rc && listening, &got);
    if (rc) {
      if (!down) {
        log_line_t line;
        pawl__log_begin(&line, &h->log, PAWL_LOG_WARN,
                  "not hearing about new jobs; polling until the database "
                  "is back");
        pawl__log_str(&line, "error", err);
        pawl__log_end(&line);
      }
      down = 1;
      pthread_mutex_lock(&h->mu);
      struct timespec ts = pawl__mono_deadline(backoff);
      pthread_cond_timedwait(&h->stop_cv, &h->mu, &ts);
      if (backoff < 2000) backoff *= 2;
      continue;
    }
    if (down && listening) {
      /* Jobs may have come in while we were deaf. */
      down = 0;
      backoff = 100;
      woke = 1;
    }
    if (woke) pawl__host_wake(h);
    pthread_mutex_lock(&h->mu);
  }
  pthread_mutex_unlock(&h->mu);
  listener_heard(h, 0, &got);
  pawl__buf_free(&got);
  pawl_close(p);
  pthread_mutex_lock(&h->mu);
  h->listener_done = 1;
  pthread_cond_broadcast(&h->stop_cv);
  pthread_mutex_unlock(&h->mu);
  return NULL;
}

