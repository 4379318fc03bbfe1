/* step.c: step mode (pawl_step_start, pawl_step, pawl_next_deadline): the
 * worker host without threads, pumped by the program's own loop.
 *
 * It is the threaded host's pieces run one after another on the calling
 * thread: one worker (worker.c: its Lua state, pawl__worker_run for each
 * job), the completer's rounds (pawl__completer_drain), the poller's
 * chores (pawl__poller_chores: heartbeats, node beats, lease recovery) and
 * the loader's scan (pawl__loader_scan, with the worker's own state as the
 * probe). So a job runs the same way in both modes: the same begin, Lua
 * path, retry policy, sanitizer, outcome writing and hooks.
 *
 * What the threads did that a single thread cannot: the watchdog becomes a
 * POSIX timer of the stepping thread (timer_create with SIGEV_THREAD_ID:
 * no thread) that delivers the interrupt signal at a call's deadline, and
 * at the next heartbeat during a long job (the handler pokes the Lua code,
 * whose count hook extends the leases: worker.h `tick`). The poller's wait
 * becomes the idle check of pawl_step(): nothing claimed, no chore due,
 * no enqueue seen (the wake flag for this process, the store's data
 * version or a NOTIFY for others) and the next pending job not due yet.
 *
 * Everything here runs on the thread that started step mode (s->owner,
 * to which the handle is bound: pawl__bind), but the wake flag and its
 * condition (h->mu, h->poll_cv), which enqueues on sibling handles
 * (pawl_sibling) set from other threads.
 *
 * A step's budget is measured by the monotonic clock, whatever clock the
 * handle reads for due times (an injected one may be frozen or move in
 * whole milliseconds: the budget would then never run out, or run out
 * late). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "alloc.h"
#include "clock.h"
#include "host.h"
#include "pawl_internal.h"
#include "worker.h"

/* Jobs claimed per claim, at most: a step claims about what its budget
 * fits (by the average job time), and keeps the rest for the next step. */
#define STEP_CLAIM_MAX 64

typedef struct step {
  host_t *h;
  pawl_t *p;                 /* the handle in step mode (borrowed) */
  pthread_t owner;
  worker_t w;                /* the one worker: its Lua state */
  worker_t *wp[1];           /* h->workers */
  struct poller *pl;
  struct completer *c;
  uint64_t scripts_sig;
  int64_t next_reload;       /* mono ms */
  timer_t timer;
  int timer_ok;
  /* The idle check. */
  int due_known;             /* next_due is what the store said since the
                                last change we know of */
  int64_t next_due;          /* store clock ms; 0: nothing pending */
  int64_t next_poll;         /* mono ms: look anyway (the safety net) */
  int has_dv;                /* the store has a data version (SQLite) */
  uint64_t dv;
  pawl_t *listen;            /* PostgreSQL: a listening sibling, or NULL */
  int listen_failed;
  int in_step;               /* inside pawl_step(): job code, hooks and
                                event callbacks run there */
} step_t;

static void step_close(pawl_t *p);
static int step_close_refused(pawl_t *p);

/* An enqueue on the handle or a sibling: the next step claims at once, a
 * pawl_step_wait() returns, and a loop it is attached to is woken
 * (uv_attach.c). Called on the enqueuing thread. */
static void step_wake(host_t *h) {
  pthread_mutex_lock(&h->mu);
  h->wake = 1;
  pthread_cond_broadcast(&h->poll_cv);
  if (h->wake_fn) h->wake_fn(h->wake_data);
  pthread_mutex_unlock(&h->mu);
}

static const pawl__host_ops_t step_ops = {
    .wake = step_wake,
    .free = step_close,
    .enqueue_begin = pawl__host_enqueue_begin,
    .enqueue_fill = pawl__host_enqueue_fill,
    .enqueue_end = pawl__host_enqueue_end,
    .close_refused = step_close_refused,
};

int64_t (*pawl__step_budget_us)(void);

/* Budget time in microseconds, by the monotonic clock (see the top). */
static int64_t step_clock_us(step_t *s) {
  (void)s;
  if (pawl__step_budget_us) return pawl__step_budget_us();
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* ---- the timer (the watchdog of step mode) ------------------------------ */

/* Sets the timer to the earlier of the running call's deadline and the
 * next heartbeat, repeating every second after it fires (a job stuck in a
 * C call is asked again, as the watchdog does); disarms it when neither.
 * worker.h `arm`: called by call_begin (the call's deadline) and call_end
 * (-1). */
static void step_arm(worker_t *w, int64_t deadline) {
  step_t *s = w->step;
  atomic_store(&w->alarm_deadline, deadline > 0 ? deadline : 0);
  if (!s->timer_ok) return;
  int64_t at = 0;
  if (deadline >= 0) {
    int64_t tick = atomic_load(&w->tick_at);
    at = deadline;
    if (tick && (!at || tick < at)) at = tick;
  }
  struct itimerspec its;
  memset(&its, 0, sizeof its);
  if (at > 0) {
    its.it_value.tv_sec = at / 1000;
    its.it_value.tv_nsec = (at % 1000) * 1000000;
    its.it_interval.tv_sec = 1;
  }
  timer_settime(s->timer, TIMER_ABSTIME, &its, NULL);
}

/* worker.h `tick`: a heartbeat came due while a long job runs (called from
 * its count hook on this thread). Extends the leases, then re-arms the
 * timer for the next one. */
static void step_tick(worker_t *w) {
  step_t *s = w->step;
  int64_t now = pawl__mono_ms();
  pawl__poller_chores(s->pl, now);
  atomic_store(&w->tick_at, pawl__poller_next_chore(s->pl));
  step_arm(w, atomic_load(&w->alarm_deadline)); /* still in the call */
}

/* A timer that signals this thread (no thread of its own). 0, or -1 when
 * the system has none: then deadlines are not enforced (logged). */
static int step_timer_new(step_t *s, int sig) {
  struct sigevent ev;
  memset(&ev, 0, sizeof ev);
  ev.sigev_notify = SIGEV_THREAD_ID;
  ev.sigev_signo = sig;
  ev.sigev_value.sival_ptr = &s->w;
  ev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
  if (timer_create(CLOCK_MONOTONIC, &ev, &s->timer) != 0) return -1;
  s->timer_ok = 1;
  return 0;
}

/* ---- making and ending step mode ---------------------------------------- */

static void step_free(step_t *s) {
  host_t *h = s->h;
  if (s->timer_ok) timer_delete(s->timer);
  pawl__worker_close(&s->w);
  pthread_mutex_destroy(&s->w.dl);
  pawl__poller_free(s->pl);
  pawl_close(s->listen);
  if (h) {
    if (h->signal_held) {
      h->signal_held = 0;
      pawl__worker_signal_release(h->interrupt_signal);
    }
    /* The worker's handle is the program's: not closed with the host. */
    h->workers = NULL;
    h->nworkers = 0;
    h->step = NULL;
    pawl__host_free(h);
  }
  pawl__free(s);
}

/* Makes the step host of `p` (options `in`, NULL: defaults) on the
 * calling thread, and loads the scripts. */
static int step_make(pawl_t *p, const pawl_host_opts_t *in,
                     void *const *host_L, int host_types_ref,
                     step_t **out) {
  pawl_host_opts_t defaults;
  if (!in) {
    pawl_host_opts_init(&defaults);
    in = &defaults;
  }
  char err[640];
  step_t *s = pawl__calloc(1, sizeof *s);
  host_t *h = s ? pawl__host_new(p, in) : NULL;
  if (!h) {
    pawl__free(s);
    return pawl__fail(p, PAWL_ENOMEM, "out of memory");
  }
  s->h = h;
  s->p = p;
  s->owner = pthread_self();
  h->step = s;
  pthread_mutex_init(&s->w.dl, NULL);
  int rc = pawl__host_check_opts(p, h, err, sizeof err);
  if (!rc) rc = pawl__host_copy_strings(h, in, err, sizeof err);
  if (rc) goto fail;
  h->started_at = pawl_now(p);
  h->avg_job_ms = 1.0;
  h->beat_ok_mono = pawl__mono_ms();
  h->opts.workers = 1;
  s->wp[0] = &s->w;
  h->workers = s->wp;
  h->nworkers = 1;
  h->workers_alive = 1;
  s->w.h = h;
  s->w.p = p;
  s->w.index = 0;
  s->w.thread = s->owner;
  s->w.step = s;
  s->w.arm = step_arm;
  s->w.tick = step_tick;
  s->w.host_L = host_L;
  s->w.host_types_ref = host_types_ref;
  if (h->interrupt_signal) {
    if (pawl__worker_signal_acquire(h->interrupt_signal) != 0) {
      snprintf(err, sizeof err, "cannot install the interrupt signal %d: %s",
               h->interrupt_signal, strerror(errno));
      rc = PAWL_EINVAL;
      goto fail;
    }
    h->signal_held = 1;
    s->w.signal = h->interrupt_signal;
    s->w.timer = 1;
    if (step_timer_new(s, h->interrupt_signal) != 0) {
      snprintf(err, sizeof err, "cannot create a timer for job deadlines: %s",
               strerror(errno));
      rc = PAWL_ENOMEM;
      goto fail;
    }
  }
  if ((rc = pawl__poller_borrow(h, p, &s->pl)) ||
      !(s->c = pawl__completer_new(h))) {
    snprintf(err, sizeof err, "out of memory");
    rc = PAWL_ENOMEM;
    goto fail;
  }
  h->completer_state = s->c; /* freed with the host */
  if ((rc = pawl__worker_open(&s->w, err, sizeof err))) goto fail;
  uint64_t v = 0;
  s->has_dv = pawl__data_version(p, &v) == 0;
  pawl__host_set(p, h, &step_ops, 1);
  pawl__bind(p);
  /* The first scripts, in this thread's state, under their deadlines. */
  worker_t *prev = pawl__worker_bind(&s->w);
  if (pawl__loader_scan(h, &s->scripts_sig, &s->w) > 0)
    s->w.scripts_gen = h->scripts_gen;
  pawl__worker_unbind(prev);
  s->next_reload = pawl__mono_ms() + h->opts.reload_ms;
  log_line_t line;
  pawl__log_begin(&line, &h->log, PAWL_LOG_INFO, "step mode started");
  pawl__log_str(&line, "node", pawl_node_id(p));
  pawl__log_str(&line, "scripts", h->scripts_dir ? h->scripts_dir : "(none)");
  pawl__log_end(&line);
  *out = s;
  return 0;
fail:
  step_free(s);
  return pawl__fail(p, rc, "%s", err);
}

/* Why a handle whose host is `h` cannot start step mode (or be stepped):
 * PAWL_EBUSY with a message saying what the host is doing. */
static int step_busy(pawl_t *p, host_t *h, const char *fn) {
  if (h->step)
    return pawl__fail(p, PAWL_EBUSY, "%s: the handle is in step mode already",
                      fn);
  pthread_mutex_lock(&h->mu);
  int joined = h->joined;
  pthread_mutex_unlock(&h->mu);
  if (joined)
    return pawl__fail(p, PAWL_EBUSY,
                      "%s: pawl_start()'s host on this handle has stopped "
                      "(pawl_wait() returned); a handle runs one host in its "
                      "life: open another handle for step mode",
                      fn);
  return pawl__fail(p, PAWL_EBUSY,
                    "%s: pawl_start() runs on this handle: threads and step "
                    "mode do not mix; open another handle",
                    fn);
}

/* The step host of `p` for the calling thread: made on first use; refused
 * for a handle with threads, and from inside a step. (Other threads are
 * refused before: the handle is bound to the stepping one, pawl__check.) */
static int step_get(pawl_t *p, const char *fn, step_t **out) {
  host_t *h = pawl__host_get(p);
  if (h && !h->step) return step_busy(p, h, fn);
  if (!h) return step_make(p, NULL, NULL, 0, out);
  step_t *s = h->step;
  if (s->in_step)
    return pawl__fail(p, PAWL_EMISUSE,
                      "%s: called from inside pawl_step() (job code, a hook "
                      "or an event callback); call it after the step returns",
                      fn);
  *out = s;
  return 0;
}

int pawl_step_start(pawl_t *p, const pawl_host_opts_t *o) {
  PAWL__CHECK(p);
  host_t *h = pawl__host_get(p);
  if (h) return step_busy(p, h, "pawl_step_start");
  step_t *s;
  return step_make(p, o, NULL, 0, &s);
}

int pawl_step_start_lua(pawl_t *p, const pawl_host_opts_t *o,
                        void *const *lua_state, int types_ref) {
  PAWL__CHECK(p);
  if (!lua_state || !*lua_state)
    return pawl__fail(p, PAWL_EINVAL,
                      "pawl_step_start_lua: lua_state must point to a "
                      "lua_State (got NULL)");
  host_t *h = pawl__host_get(p);
  if (h) return step_busy(p, h, "pawl_step_start_lua");
  step_t *s;
  return step_make(p, o, lua_state, types_ref, &s);
}

/* ---- one step ----------------------------------------------------------- */

/* Whether anyone else may have written since the idle check last looked:
 * the store's data version (SQLite), or a NOTIFY on the listening
 * connection (PostgreSQL). With neither, 1 (look). */
static int step_changed(step_t *s) {
  if (s->has_dv) {
    uint64_t v = 0;
    if (pawl__data_version(s->p, &v) != 0) return 1;
    if (v == s->dv) return 0;
    s->dv = v;
    return 1;
  }
  if (!s->listen && !s->listen_failed) {
    char err[256];
    if (!pawl__can_listen(s->p) ||
        pawl__open_sibling(s->p, NULL, &s->listen, err, sizeof err) != 0 ||
        pawl__listen(s->listen) != 0) {
      pawl_close(s->listen);
      s->listen = NULL;
      s->listen_failed = 1; /* polls every poll_ms instead */
    }
    return 1;
  }
  if (!s->listen) return 1;
  int woke = 0;
  if (pawl__wakeup_wait(s->listen, 0, &woke, NULL) != 0) {
    pawl_close(s->listen); /* opened again at the next look */
    s->listen = NULL;
    return 1;
  }
  return woke;
}

/* 1 when this step has nothing to do (see the top of the file). */
static int step_idle(step_t *s, int64_t mono) {
  host_t *h = s->h;
  if (!s->due_known || mono >= s->next_poll || mono >= s->next_reload ||
      mono >= pawl__poller_next_chore(s->pl))
    return 0;
  pthread_mutex_lock(&h->mu);
  int busy = h->wake || h->queue_head || h->out_head || h->backlog ||
             pawl__host_events_ready(h);
  pthread_mutex_unlock(&h->mu);
  if (busy || step_changed(s)) return 0;
  return !s->next_due || pawl_now(s->p) < s->next_due;
}

/* Claims up to `want` due jobs into the queue. Returns how many, or a
 * negative code. */
static int step_claim(step_t *s, int want) {
  host_t *h = s->h;
  /* One job runs at a time: the rest is a prefetch, which no job under a
   * limit is claimed for (pawl_claim_opts_t). */
  pawl_claim_opts_t co = {.queues = (const char *const *)h->queues,
                          .nqueues = h->opts.nqueues,
                          .defer_start = 1,
                          .prefetch = want > 1 ? (size_t)want - 1 : 0};
  pawl_job_t **jobs = NULL;
  size_t n = 0;
  int rc = pawl_claim(s->p, &co, (size_t)want, &jobs, &n);
  if (rc) return rc;
  host_item_t *first, *last;
  size_t kept =
      pawl__host_items_make(jobs, n, pawl__mono_ms(), &first, &last);
  if (first) {
    if (h->queue_tail)
      h->queue_tail->next = first;
    else
      h->queue_head = first;
    h->queue_tail = last;
    h->queued += (int)kept;
  }
  return (int)n;
}

/* The next claimed job, or NULL. A job whose lease may have lapsed
 * (pawl__host_lapsed) is handed back instead of run. */
static host_item_t *step_next(step_t *s) {
  host_t *h = s->h;
  for (;;) {
    host_item_t *it = h->queue_head;
    if (!it) return NULL;
    h->queue_head = it->next;
    if (!h->queue_head) h->queue_tail = NULL;
    h->queued--;
    if (!pawl__host_lapsed(h, it->claimed_mono, pawl__mono_ms())) return it;
    pawl__host_hand_back_why(h, it->job, HOST_LAPSED_WHY);
    pawl__free(it);
  }
}

/* How many to claim: about what the rest of the budget fits at the
 * average job time, at least one. */
static int step_want(step_t *s, int64_t left_us) {
  double avg_us = s->h->avg_job_ms * 1000.0;
  if (avg_us < 10) avg_us = 10;
  double n = left_us > 0 ? (double)left_us / avg_us : 1;
  return n < 1 ? 1 : n > STEP_CLAIM_MAX ? STEP_CLAIM_MAX : (int)n;
}

/* Writes the outcomes, runs the hooks of the stored ones. */
static int step_settle(step_t *s) {
  host_t *h = s->h;
  int down = pawl__completer_drain(s->c, s->p);
  pthread_mutex_lock(&h->mu);
  host_outcome_t *inbox = s->w.inbox;
  s->w.inbox = NULL;
  pthread_mutex_unlock(&h->mu);
  pawl__worker_run_inbox(&s->w, inbox);
  pawl__host_events_deliver(h);
  return down;
}

/* After the work: what the idle check needs. The data version is read
 * before the next due time, so that an enqueue in between shows as a
 * change at the next look. */
static void step_note_due(step_t *s, int64_t mono) {
  host_t *h = s->h;
  s->due_known = 0;
  if (h->queue_head) return;
  if (s->has_dv && pawl__data_version(s->p, &s->dv) != 0) return;
  if (!s->has_dv) (void)step_changed(s); /* drain the notifications seen */
  pawl_claim_opts_t co = {.queues = (const char *const *)h->queues,
                          .nqueues = h->opts.nqueues};
  if (pawl_next_due(s->p, &co, &s->next_due) != 0) return;
  s->due_known = 1;
  s->next_poll = mono + h->opts.poll_ms;
}

int pawl_step(pawl_t *p, int64_t budget_ms) {
  PAWL__CHECK(p);
  /* Checked first: a refused call leaves the handle as it was (not in
   * step mode). */
  if (budget_ms < 0 || budget_ms > PAWL_DELAY_MAX_MS)
    return pawl__fail(p, PAWL_EINVAL,
                      "pawl_step: budget_ms must be between 0 and %lld (got "
                      "%lld)",
                      (long long)PAWL_DELAY_MAX_MS, (long long)budget_ms);
  step_t *s;
  int rc = step_get(p, "pawl_step", &s);
  if (rc) return rc;
  host_t *h = s->h;
  int64_t t0 = step_clock_us(s), budget_us = budget_ms * 1000;
  int64_t mono = pawl__mono_ms();
  if (step_idle(s, mono)) return 0;
  s->in_step = 1;
  worker_t *prev = pawl__worker_bind(&s->w);
  pthread_mutex_lock(&h->mu);
  h->wake = 0;
  pthread_mutex_unlock(&h->mu);
  if (mono >= pawl__poller_next_chore(s->pl)) pawl__poller_chores(s->pl, mono);
  if (mono >= s->next_reload) {
    if (pawl__loader_scan(h, &s->scripts_sig, &s->w) > 0)
      s->w.scripts_gen = h->scripts_gen;
    s->next_reload = mono + h->opts.reload_ms;
  }
  /* Outcomes a database that was away did not take: written first. */
  int down = step_settle(s);
  int ran = 0, err = 0;
  while (!down) {
    int64_t used = step_clock_us(s) - t0;
    if (ran > 0 && used >= budget_us) break;
    host_item_t *it = step_next(s);
    if (!it) {
      int got = step_claim(s, step_want(s, budget_us - used));
      if (got < 0) err = got;
      if (got <= 0) break;
      continue;
    }
    atomic_store(&s->w.tick_at, pawl__poller_next_chore(s->pl));
    pawl__worker_run(&s->w, it->job);
    pawl__free(it);
    ran++;
    int64_t now = pawl__mono_ms();
    if (now >= pawl__poller_next_chore(s->pl)) pawl__poller_chores(s->pl, now);
  }
  if (ran) down = step_settle(s);
  step_note_due(s, pawl__mono_ms());
  pawl__worker_unbind(prev);
  s->in_step = 0;
  if (err) return err; /* pawl_errmsg(p) is the claim's */
  if (down) return pawl__fail(p, down, "pawl_step: writing outcomes failed "
                              "(kept for the next step)");
  return ran;
}

int pawl_step_wait(pawl_t *p, int64_t timeout_ms) {
  PAWL__CHECK(p);
  if (timeout_ms < 0 || timeout_ms > PAWL_DELAY_MAX_MS)
    return pawl__fail(p, PAWL_EINVAL,
                      "pawl_step_wait: timeout_ms must be between 0 and %lld "
                      "(got %lld)",
                      (long long)PAWL_DELAY_MAX_MS, (long long)timeout_ms);
  step_t *s;
  int rc = step_get(p, "pawl_step_wait", &s);
  if (rc) return rc;
  host_t *h = s->h;
  int64_t next = pawl_next_deadline(p);
  if (next < 0) return (int)next;
  int64_t due_in = next - pawl_now(p);
  int64_t wait = due_in < timeout_ms ? due_in : timeout_ms;
  if (wait <= 0) return 1;
  /* The wait ends at the deadline, or when an enqueue on the handle or a
   * sibling sets the wake flag (step_wake, from any thread). */
  int64_t end = pawl__mono_ms() + wait;
  pthread_mutex_lock(&h->mu);
  for (;;) {
    if (h->wake) break;
    int64_t left = end - pawl__mono_ms();
    if (left <= 0) break;
    struct timespec ts = pawl__mono_deadline(left);
    pthread_cond_timedwait(&h->poll_cv, &h->mu, &ts);
  }
  int woke = h->wake;
  pthread_mutex_unlock(&h->mu);
  return woke || due_in <= timeout_ms ? 1 : 0;
}

int pawl__step_in_step(host_t *h) { return h->step && h->step->in_step; }

/* pawl_close() of the handle in step mode asks first (pawl__host_ops_t):
 * refused from inside a step (the step runs on), and from another thread
 * while attached to a libuv loop (uv_attach.c: the loop's handles). */
static int step_close_refused(pawl_t *p) {
  host_t *h = pawl__host_get(p);
  if (!h || !h->step) return 0;
  if (pthread_equal(h->step->owner, pthread_self())) return h->step->in_step;
  return pawl__uv_foreign(h);
}

int64_t pawl_next_deadline(pawl_t *p) {
  PAWL__CHECK(p);
  step_t *s;
  int rc = step_get(p, "pawl_next_deadline", &s);
  if (rc) return rc;
  host_t *h = s->h;
  int64_t now = pawl_now(p), mono = pawl__mono_ms();
  pthread_mutex_lock(&h->mu);
  int busy = h->wake || h->queue_head || h->out_head || h->backlog ||
             pawl__host_events_ready(h);
  pthread_mutex_unlock(&h->mu);
  if (busy) return now;
  /* Something may have come due or been enqueued since the last step. */
  if (!s->due_known || step_changed(s)) step_note_due(s, mono);
  if (!s->due_known) return now;
  int64_t at = now + (s->next_poll - mono);
  int64_t chores[2] = {pawl__poller_next_chore(s->pl), s->next_reload};
  for (int i = 0; i < 2; i++)
    if (now + (chores[i] - mono) < at) at = now + (chores[i] - mono);
  if (s->next_due && s->next_due < at) at = s->next_due;
  return at < now ? now : at;
}

/* pawl_close() of the handle in step mode (pawl__host_ops_t): the jobs
 * claimed ahead go back, the outcomes are written (once more), and
 * everything is freed. May run on another thread than the owner's: the
 * Lua state is only closed then (hooks of outcomes written now run only
 * on the owner's thread: here they are released, not run). */
static void step_close(pawl_t *p) {
  host_t *h = pawl__host_get(p);
  if (!h || !h->step) return;
  step_t *s = h->step;
  int owner = pthread_equal(s->owner, pthread_self());
  /* Attached: detached first, on the loop's thread (close_refused keeps
   * other threads out), so that the loop's next turn finds no timer of a
   * freed handle. */
  if (owner && h->uv) pawl_detach_uv(p);
  pthread_mutex_lock(&h->mu);
  h->stopping = PAWL_STOP_NOW;
  h->flush_until = pawl__mono_ms();
  pthread_mutex_unlock(&h->mu);
  while (h->queue_head) {
    host_item_t *it = h->queue_head;
    h->queue_head = it->next;
    pawl__host_hand_back(h, it->job);
    pawl__free(it);
  }
  h->queue_tail = NULL;
  h->queued = 0;
  worker_t *prev = owner ? pawl__worker_bind(&s->w) : NULL;
  pawl__completer_drain(s->c, p);
  host_outcome_t *inbox = s->w.inbox;
  s->w.inbox = NULL;
  if (owner) {
    pawl__worker_run_inbox(&s->w, inbox);
    pawl__host_events_deliver(h);
    pawl__worker_unbind(prev);
  } else {
    for (host_outcome_t *o = inbox, *next; o; o = next) {
      next = o->next;
      pawl__host_outcome_free(o); /* the state goes with its references */
    }
  }
  log_line_t line;
  pawl__log_begin(&line, &h->log, PAWL_LOG_INFO, "step mode ended");
  pawl__log_end(&line);
  pawl__host_set(p, NULL, NULL, 0);
  step_free(s);
}
