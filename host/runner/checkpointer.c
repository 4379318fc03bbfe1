/* checkpointer.c: the checkpointer thread (a SQLite store's; a no-op for
 * stores that need none). See host.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "clock.h"
#include "host.h"
#include "pawl_internal.h"

/* The host's connections do not checkpoint in their commits (that puts an
 * fsync into a claim or a finish now and then: the pickup latency's long
 * tail). This thread does it, every 50 ms, without blocking writers. */
void *pawl__checkpointer_main(void *arg) {
  host_t *h = arg;
  pawl_t *p = NULL;
  char err[512];
  int ok = pawl__open_sibling(h->p, NULL, &p, err, sizeof err) == 0;
  pthread_mutex_lock(&h->mu);
  while (!h->completer_done) {
    struct timespec ts = pawl__mono_deadline(50);
    pthread_cond_timedwait(&h->stop_cv, &h->mu, &ts);
    pthread_mutex_unlock(&h->mu);
    if (ok) pawl_checkpoint(p);
    pthread_mutex_lock(&h->mu);
  }
  pthread_mutex_unlock(&h->mu);
  if (ok) pawl_checkpoint(p);
  pawl_close(p);
  pthread_mutex_lock(&h->mu);
  h->checkpointer_done = 1;
  pthread_cond_broadcast(&h->stop_cv);
  pthread_mutex_unlock(&h->mu);
  return NULL;
}

