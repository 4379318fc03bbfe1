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
 * still found within poll_ms. */
void *pawl__listener_main(void *arg) {
  host_t *h = arg;
  pawl_t *p = NULL;
  char err[512];
  int64_t backoff = 100;
  int listening = 0, down = 0;
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
      rc = pawl__wakeup_wait(p, 200, &woke);
      snprintf(err, sizeof err, "%s", pawl_errmsg(p));
    }
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
  pawl_close(p);
  pthread_mutex_lock(&h->mu);
  h->listener_done = 1;
  pthread_cond_broadcast(&h->stop_cv);
  pthread_mutex_unlock(&h->mu);
  return NULL;
}

