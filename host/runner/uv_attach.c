/* uv_attach.c: pawl on a program's libuv loop (pawl_attach_uv,
 * pawl_detach_uv; see include/pawl.h for the modes and their costs).
 *
 * PAWL_UV_LOOP is step mode driven by the loop: one timer set to
 * pawl_next_deadline() (which covers due jobs, the poll, lease extensions
 * and node beats, script reloads) runs pawl_step() with the per-tick
 * budget; after a tick that ran jobs it fires again at once, so that the
 * loop serves its I/O between ticks. An enqueue from another thread wakes
 * the loop through a uv_async (host_t.wake_fn, called under h->mu by the
 * step host's wake). PAWL_UV_THREADS is pawl_start()'s host, with the
 * loop attachment only holding it until detach. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdlib.h>
#include <uv.h>

#include "alloc.h"
#include "hooks.h"
#include "host.h"
#include "pawl_internal.h"

typedef struct attach {
  pawl_t *p;
  host_t *h;
  pthread_t loop_thread;     /* the thread that attached: the loop's */
  int mode;
  int64_t budget_ms;
  uv_timer_t timer;
  uv_async_t async;
  int closing;               /* handles still to close */
  int failing;               /* steps failing in a row: back off */
} attach_t;

void pawl_uv_opts_init(pawl_uv_opts_t *o) {
  o->mode = PAWL_UV_LOOP;
  o->budget_ms = 0;
  o->host = NULL;
}

static void attach_tick(uv_timer_t *t);

/* Sets the timer: at once, or at the step's next deadline. A step that
 * failed (a database away) is tried again after a pause that doubles up
 * to a second, not in a busy loop. */
static void attach_schedule(attach_t *a, int now) {
  int64_t delay = 0;
  if (a->failing) {
    delay = 10;
    for (int i = 1; i < a->failing && delay < 1000; i++) delay *= 2;
    if (delay > 1000) delay = 1000;
  } else if (!now) {
    int64_t next = pawl_next_deadline(a->p);
    delay = next < 0 ? 1000 : next - pawl_now(a->p);
    if (delay < 0) delay = 0;
  }
  uv_timer_start(&a->timer, attach_tick, (uint64_t)delay, 0);
}

static void attach_tick(uv_timer_t *t) {
  attach_t *a = t->data;
  int n = pawl_step(a->p, a->budget_ms);
  a->failing = n < 0 ? a->failing + 1 : 0;
  attach_schedule(a, n > 0);
}

/* Another thread enqueued: look now (on the loop thread). */
static void attach_woken(uv_async_t *as) {
  attach_t *a = as->data;
  if (!a->failing) attach_schedule(a, 1);
}

/* host_t.wake_fn: on the enqueuing thread, under h->mu. */
static void attach_wake(void *data) {
  attach_t *a = data;
  uv_async_send(&a->async);
}

int pawl__uv_foreign(host_t *h) {
  pthread_mutex_lock(&h->mu);
  attach_t *a = h->uv;
  int foreign = a && !pthread_equal(a->loop_thread, pthread_self());
  pthread_mutex_unlock(&h->mu);
  return foreign;
}

static void attach_closed(uv_handle_t *hd) {
  attach_t *a = hd->data;
  if (--a->closing == 0) pawl__free(a);
}

/* pawl_attach_uv() itself is ops/start.c's: it passes the servers' table
 * for a PAWL_UV_THREADS host (hooks.h says why). */
int pawl__uv_attach(pawl_t *p, struct uv_loop_s *loop, const pawl_uv_opts_t *o,
                    const pawl__ops_hooks_t *ops) {
  /* A handle stepping on another thread: PAWL_EBUSY (its message is that
   * thread's, so none is set); a closed one: PAWL_EMISUSE. */
  PAWL__CHECK_OPEN(p);
  if (pawl__bound(p) < 0) return PAWL_EBUSY;
  pawl_uv_opts_t d;
  if (!o) {
    pawl_uv_opts_init(&d);
    o = &d;
  }
  if (!loop) return pawl__fail(p, PAWL_EINVAL, "pawl_attach_uv: no loop");
  if (o->mode == PAWL_UV_THREADPOOL)
    return pawl__fail(p, PAWL_EINVAL,
                      "pawl_attach_uv: PAWL_UV_THREADPOOL is not implemented; "
                      "use PAWL_UV_LOOP or PAWL_UV_THREADS");
  if (o->mode != PAWL_UV_LOOP && o->mode != PAWL_UV_THREADS)
    return pawl__fail(p, PAWL_EINVAL,
                      "pawl_attach_uv: mode must be PAWL_UV_LOOP (0) or "
                      "PAWL_UV_THREADS (1) (got %d)",
                      o->mode);
  if (o->budget_ms < 0 || o->budget_ms > 1000)
    return pawl__fail(p, PAWL_EINVAL,
                      "pawl_attach_uv: budget_ms must be between 0 and 1000 "
                      "(got %lld)",
                      (long long)o->budget_ms);
  host_t *h = pawl__host_get(p);
  if (h && h->step && pawl__step_in_step(h))
    return pawl__fail(p, PAWL_EMISUSE,
                      "pawl_attach_uv: called from inside pawl_step() (job "
                      "code, a hook or an event callback)");
  if (h && h->uv)
    return pawl__fail(p, PAWL_EBUSY, "pawl_attach_uv: attached already");
  if (h && (o->mode == PAWL_UV_THREADS || !h->step)) {
    int joined = 0;
    if (!h->step) {
      pthread_mutex_lock(&h->mu);
      joined = h->joined;
      pthread_mutex_unlock(&h->mu);
    }
    return pawl__fail(p, PAWL_EBUSY, "pawl_attach_uv: %s",
                      joined ? "pawl_start()'s host on this handle has "
                               "stopped (pawl_wait() returned); a handle runs "
                               "one host in its life: open another handle"
                             : "the handle runs a host already (step mode or "
                               "pawl_start())");
  }
  attach_t *a = pawl__calloc(1, sizeof *a);
  if (!a) return pawl__fail(p, PAWL_ENOMEM, "out of memory");
  a->p = p;
  a->loop_thread = pthread_self();
  a->mode = o->mode;
  a->budget_ms = o->budget_ms ? o->budget_ms : 5;
  int rc;
  if (o->mode == PAWL_UV_THREADS)
    rc = pawl__host_start(p, o->host, ops);
  else if (!h)
    rc = pawl_step_start(p, o->host);
  else
    rc = pawl_next_deadline(p) < 0 ? PAWL_EINVAL : 0; /* this thread's? */
  if (rc < 0) {
    pawl__free(a);
    return rc;
  }
  a->h = pawl__host_get(p);
  uv_timer_init(loop, &a->timer);
  uv_async_init(loop, &a->async, attach_woken);
  a->timer.data = a->async.data = a;
  pthread_mutex_lock(&a->h->mu);
  a->h->uv = a;
  if (a->mode == PAWL_UV_LOOP) {
    a->h->wake_fn = attach_wake;
    a->h->wake_data = a;
  }
  pthread_mutex_unlock(&a->h->mu);
  if (a->mode == PAWL_UV_LOOP) attach_schedule(a, 1);
  return 0;
}

int pawl_detach_uv(pawl_t *p) {
  PAWL__CHECK(p);
  host_t *h = pawl__host_get(p);
  attach_t *a = h ? h->uv : NULL;
  if (!a)
    return pawl__fail(p, PAWL_EINVAL, "pawl_detach_uv: not attached");
  if (!pthread_equal(a->loop_thread, pthread_self()))
    return pawl__fail(p, PAWL_EMISUSE,
                      "pawl_detach_uv: called from a thread other than the "
                      "loop's (its handles are closed there)");
  if (h->step && pawl__step_in_step(h))
    return pawl__fail(p, PAWL_EMISUSE,
                      "pawl_detach_uv: called from inside pawl_step() (job "
                      "code, a hook or an event callback); detach from a "
                      "callback of the loop's own");
  pthread_mutex_lock(&h->mu);
  h->uv = NULL;
  h->wake_fn = NULL;
  h->wake_data = NULL;
  pthread_mutex_unlock(&h->mu);
  uv_timer_stop(&a->timer);
  a->closing = 2;
  uv_close((uv_handle_t *)&a->timer, attach_closed);
  uv_close((uv_handle_t *)&a->async, attach_closed);
  if (a->mode == PAWL_UV_THREADS) {
    pawl_stop(p, PAWL_STOP_GRACEFUL);
    return pawl_wait(p, -1);
  }
  return 0;
}
