/* control.c: the live host's controls (include/pawl.h, "the live host"):
 * what its workers run, a reload of the scripts now, draining, a stop
 * with a grace period of the caller's, and the log level. Each takes the
 * host's mutex for what it reads or changes, so any thread may call them
 * while the host runs; the threads that act on them (the poller, the
 * loader, the logger) read the same fields under the same mutex (the log
 * level is atomic: every line reads it). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "clock.h"
#include "host.h"
#include "pawl_internal.h"
#include "worker.h"

/* The host of `p` while it runs (not after pawl_wait() has joined it),
 * else NULL with PAWL_ESTATE in p's message. */
static host_t *control_host(pawl_t *p, const char *what) {
  host_t *h = pawl__host_get(p);
  if (h) {
    pthread_mutex_lock(&h->mu);
    int joined = h->joined;
    pthread_mutex_unlock(&h->mu);
    if (!joined) return h;
  }
  pawl__fail(p, PAWL_ESTATE, "%s: no host is running on this handle", what);
  return NULL;
}

int pawl_workers(pawl_t *p, pawl_worker_info_t **out, size_t *n,
                 int64_t *queued, int *draining) {
  PAWL__CHECK(p);
  host_t *h = control_host(p, "workers");
  if (!h) return PAWL_ESTATE;
  size_t count = (size_t)h->nworkers;
  pawl_worker_info_t *v = pawl__calloc(count ? count : 1, sizeof *v);
  if (!v) return pawl__fail(p, PAWL_ENOMEM, "out of memory");
  int64_t now = pawl__mono_ms();
  for (size_t i = 0; i < count; i++) {
    worker_t *w = h->workers[i];
    v[i].index = (int)i;
    pthread_mutex_lock(&w->dl);
    if (w->has_current) {
      v[i].busy = 1;
      v[i].job = w->current_id;
      v[i].attempt = w->current_attempt;
      memcpy(v[i].type, w->current_type, sizeof v[i].type);
      v[i].running_ms = now - w->current_since;
    }
    pthread_mutex_unlock(&w->dl);
  }
  pthread_mutex_lock(&h->mu);
  if (queued) *queued = h->queued;
  if (draining) *draining = h->draining;
  pthread_mutex_unlock(&h->mu);
  *out = v;
  *n = count;
  return 0;
}

void pawl_workers_free(pawl_worker_info_t *w) { pawl__free(w); }

void pawl_script_errors_free(pawl_script_error_t *e, size_t n) {
  for (size_t i = 0; e && i < n; i++) {
    pawl__free(e[i].type);
    pawl__free(e[i].error);
  }
  pawl__free(e);
}

int pawl__host_copy_load_errors(host_t *h, pawl_script_error_t **out,
                                size_t *n) {
  *out = NULL;
  *n = 0;
  if (!h->nload_errors) return 0;
  pawl_script_error_t *c = pawl__calloc(h->nload_errors, sizeof *c);
  if (!c) return -1;
  for (size_t i = 0; i < h->nload_errors; i++) {
    c[i].type = pawl__strdup(h->load_errors[i].type);
    c[i].error = pawl__strdup(h->load_errors[i].error);
    if (!c[i].type || !c[i].error) {
      pawl_script_errors_free(c, i + 1);
      return -1;
    }
  }
  *out = c;
  *n = h->nload_errors;
  return 0;
}

int pawl_reload(pawl_t *p, int64_t timeout_ms, pawl_script_error_t **errors,
                size_t *nerrors, size_t *nfiles) {
  PAWL__CHECK(p);
  if (timeout_ms < 1 || timeout_ms > PAWL_TIMEOUT_MAX_S * INT64_C(1000))
    return pawl__fail(p, PAWL_EINVAL,
                      "reload: timeout_ms must be between 1 and %lld (got "
                      "%lld)",
                      (long long)(PAWL_TIMEOUT_MAX_S * INT64_C(1000)),
                      (long long)timeout_ms);
  host_t *h = control_host(p, "reload");
  if (!h) return PAWL_ESTATE;
  int64_t end = pawl__mono_ms() + timeout_ms;
  pthread_mutex_lock(&h->mu);
  uint64_t ticket = ++h->reload_asked;
  pthread_cond_broadcast(&h->load_cv);
  int rc = 0;
  while (h->reload_done < ticket && !h->loader_done) {
    int64_t left = end - pawl__mono_ms();
    if (left <= 0) {
      rc = PAWL_EBUSY;
      break;
    }
    struct timespec ts = pawl__mono_deadline(left < 100 ? left : 100);
    pthread_cond_timedwait(&h->stop_cv, &h->mu, &ts);
  }
  if (!rc && h->reload_done < ticket) rc = PAWL_ESTATE; /* the host stopped */
  int oom = !rc && pawl__host_copy_load_errors(h, errors, nerrors) != 0;
  if (!rc && !oom && nfiles) *nfiles = h->nscripts;
  pthread_mutex_unlock(&h->mu);
  if (rc == PAWL_EBUSY)
    return pawl__fail(p, rc,
                      "reload: the loader did not look within %lld ms (a "
                      "script's top level is still running)",
                      (long long)timeout_ms);
  if (rc) return pawl__fail(p, rc, "reload: the host stopped");
  if (oom) return pawl__fail(p, PAWL_ENOMEM, "out of memory");
  return 0;
}

/* Sets the host's draining flag; logs a change. */
static int control_drain(pawl_t *p, int on) {
  host_t *h = control_host(p, on ? "drain" : "resume_claiming");
  if (!h) return PAWL_ESTATE;
  pthread_mutex_lock(&h->mu);
  int stopping = h->stopping, was = h->draining;
  if (!stopping) h->draining = on;
  h->wake = 1;
  pthread_cond_signal(&h->poll_cv);
  pthread_mutex_unlock(&h->mu);
  if (stopping)
    return pawl__fail(p, PAWL_ESTATE, "%s: the host is stopping",
                      on ? "drain" : "resume_claiming");
  /* A job claimed ahead is not started: a drained node holds nothing
   * but the jobs it runs. (One the poller is claiming right now goes
   * back when it sees the flag.) */
  if (on) pawl__host_release_queued(h); /* pending again, no attempt used */
  if (was != on) {
    log_line_t line;
    pawl__log_begin(&line, &h->log, PAWL_LOG_INFO,
                    on ? "draining: no new jobs are claimed; running ones "
                         "finish"
                       : "claiming again");
    pawl__log_end(&line);
  }
  return 0;
}

int pawl_drain(pawl_t *p) {
  PAWL__CHECK(p);
  return control_drain(p, 1);
}

int pawl_resume_claiming(pawl_t *p) {
  PAWL__CHECK(p);
  return control_drain(p, 0);
}

int pawl_stop_grace(pawl_t *p, int64_t grace_ms) {
  PAWL__CHECK(p);
  if (grace_ms < 0 || grace_ms > PAWL_DELAY_MAX_MS)
    return pawl__fail(p, PAWL_EINVAL,
                      "stop: grace_ms must be between 0 and %lld (got %lld)",
                      (long long)PAWL_DELAY_MAX_MS, (long long)grace_ms);
  host_t *h = control_host(p, "stop");
  if (!h) return PAWL_ESTATE;
  pthread_mutex_lock(&h->mu);
  h->opts.grace_ms = grace_ms;
  pthread_mutex_unlock(&h->mu);
  pawl_stop(p, PAWL_STOP_GRACEFUL);
  return 0;
}

int pawl_log_level(pawl_t *p, int level) {
  PAWL__CHECK(p);
  if (level < -1 || level > PAWL_LOG_ERROR)
    return pawl__fail(p, PAWL_EINVAL,
                      "log_level must be -1 (read) or between %d (debug) and "
                      "%d (error) (got %d)",
                      PAWL_LOG_DEBUG, PAWL_LOG_ERROR, level);
  host_t *h = control_host(p, "log_level");
  if (!h) return PAWL_ESTATE;
  int was = level < 0 ? atomic_load(&h->log.level)
                      : atomic_exchange(&h->log.level, level);
  if (level >= 0 && level != was) {
    log_line_t line;
    pawl__log_begin(&line, &h->log, PAWL_LOG_WARN, "log level changed");
    pawl__log_str(&line, "from", pawl__log_level_name(was));
    pawl__log_str(&line, "to", pawl__log_level_name(level));
    pawl__log_end(&line);
  }
  return was;
}
