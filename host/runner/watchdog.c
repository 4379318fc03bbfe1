/* watchdog.c: the watchdog thread: every HOST_WATCHDOG_MS it looks at
 * each worker (and the loader's state) and interrupts a protected call
 * past its deadline (pawl__worker_watch()). See host.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "clock.h"
#include "host.h"
#include "worker.h"

/* The watchdog's tick: how late a timeout may fire. */
#define HOST_WATCHDOG_MS 20

void *pawl__watchdog_main(void *arg) {
  host_t *h = arg;
  pthread_mutex_lock(&h->mu);
  while (!h->completer_done) {
    worker_t *alerter = h->alerter; /* made later, by the loader thread */
    pthread_mutex_unlock(&h->mu);
    int64_t now = pawl__mono_ms();
    for (int i = 0; i < h->nworkers; i++) pawl__worker_watch(h->workers[i], now);
    if (h->probe) pawl__worker_watch(h->probe, now);
    if (alerter) pawl__worker_watch(alerter, now);
    pthread_mutex_lock(&h->mu);
    struct timespec ts = pawl__mono_deadline(HOST_WATCHDOG_MS);
    pthread_cond_timedwait(&h->stop_cv, &h->mu, &ts);
  }
  h->watchdog_done = 1;
  pthread_cond_broadcast(&h->stop_cv);
  pthread_mutex_unlock(&h->mu);
  return NULL;
}

