/* worker.c: worker threads: their loop, the deadlines of their Lua calls
 * and the interrupt signal, and running one job (engine-neutral: the Lua
 * side is lua/bridge.h).
 *
 * The per-job path: record the start of a job recovered before, let the
 * bridge run it (pawl__lua_run: prepare, run under the job's deadline,
 * sanitizer and retry policy), and hand the outcome to the completer.
 * Hooks run later, when the completer has stored the outcome and posted
 * it back to this worker's inbox. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "alloc.h"
#include "worker.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "hooks.h"
#include "metrics.h"
#include "pawl_internal.h"

/* The worker running on this thread, for the signal handler.
 * initial-exec: reading it must be async-signal-safe. */
static __thread worker_t *worker_self __attribute__((tls_model("initial-exec")));

/* ---- the interrupt signal ----------------------------------------------- */

/* The signal is the process's, not ours: each signal number a host uses is
 * installed once (counted over the hosts of the process), the disposition
 * it had is kept, every delivery not meant for a pawl worker is passed on
 * to it, and it is put back when the last host using the signal stops.
 * `prev` is written only while our handler is not installed (0 users). */
static pthread_mutex_t worker_sig_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
  int users;
  struct sigaction prev;
} worker_sig[NSIG];

/* What would have happened without us: the previous handler, or the
 * default action (which, for a signal that terminates, ends the process as
 * it would have). Async-signal-safe. */
static void worker_chain(int sig, siginfo_t *info, void *uc) {
  const struct sigaction *prev = &worker_sig[sig].prev;
  if (prev->sa_flags & SA_SIGINFO) {
    if (prev->sa_sigaction) prev->sa_sigaction(sig, info, uc);
  } else if (prev->sa_handler == SIG_DFL) {
    /* SIGURG's default is to ignore it; the others allowed as interrupt
     * signals (SIGUSR1, SIGUSR2, real-time ones) terminate. */
    if (sig != SIGURG) {
      signal(sig, SIG_DFL);
      raise(sig); /* blocked until this handler returns, then fatal */
    }
  } else if (prev->sa_handler != SIG_IGN) {
    prev->sa_handler(sig);
  }
}

/* Runs on the thread the signal was delivered to. A worker that the
 * watchdog signalled (sig_sent) takes it: the handler arms the hook if
 * the worker is still inside the protected call that the watchdog meant
 * to interrupt (a late signal for a call that has returned does nothing).
 * Any other delivery — to a thread that is not a worker, or one nobody
 * in pawl sent — goes to the previous disposition. */
/* A step-mode worker's timer fired (on its own thread, between two
 * instructions of whatever it runs): past the running call's deadline,
 * interrupt it, as the watchdog does for a worker thread; else, if a
 * lease extension is due, poke the Lua code to run it. Only atomics and
 * clock_gettime here. */
static void worker_on_timer(worker_t *w) {
  if (!atomic_load(&w->in_lua)) return;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  int64_t now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
  int64_t dl = atomic_load(&w->alarm_deadline);
  int64_t tick = atomic_load(&w->tick_at);
  if (dl && now >= dl) {
    uint64_t seq = atomic_load(&w->seq);
    if (atomic_load(&w->interrupt_seq) != seq) {
      atomic_store(&w->interrupt_why, PAWL__LUA_TIMEOUT);
      atomic_store(&w->interrupt_seq, seq);
    }
    pawl__lua_interrupt(w->lua);
  } else if (tick && now >= tick && w->tick) {
    pawl__lua_poke(w->lua);
  }
}

static void worker_on_signal(int sig, siginfo_t *info, void *uc) {
  int saved = errno;
  worker_t *w = worker_self;
  if (w && atomic_exchange(&w->sig_sent, 0)) {
    if (atomic_load(&w->in_lua) &&
        atomic_load(&w->interrupt_seq) == atomic_load(&w->seq))
      pawl__lua_interrupt(w->lua);
  } else if (w && w->timer && info && info->si_code == SI_TIMER) {
    worker_on_timer(w);
  } else {
    worker_chain(sig, info, uc);
  }
  errno = saved;
}

int pawl__worker_signal_check(int sig, char *err, size_t errlen) {
  if (sig == 0 || sig == SIGURG || sig == SIGUSR1 || sig == SIGUSR2 ||
      (sig >= SIGRTMIN && sig <= SIGRTMAX))
    return 0;
  snprintf(err, errlen,
           "interrupt_signal must be 0 (SIGURG), -1 (none), SIGURG, SIGUSR1, "
           "SIGUSR2 or a real-time signal %d..%d (got %d)",
           SIGRTMIN, SIGRTMAX, sig);
  return -1;
}

int pawl__worker_signal_acquire(int sig) {
  int rc = 0;
  pthread_mutex_lock(&worker_sig_mu);
  if (worker_sig[sig].users == 0) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = worker_on_signal;
    /* SA_RESTART: a job blocked in a system call keeps waiting (it cannot
     * be interrupted there); the hook fires when it is back in Lua.
     * SA_ONSTACK: runtimes that run code on small stacks with an alternate
     * signal stack (Go) require it of every handler in the process. */
    sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    if (sigaction(sig, &sa, &worker_sig[sig].prev) != 0) rc = -1;
  }
  if (rc == 0) worker_sig[sig].users++;
  pthread_mutex_unlock(&worker_sig_mu);
  return rc;
}

void pawl__worker_signal_release(int sig) {
  pthread_mutex_lock(&worker_sig_mu);
  if (worker_sig[sig].users > 0 && --worker_sig[sig].users == 0)
    sigaction(sig, &worker_sig[sig].prev, NULL);
  pthread_mutex_unlock(&worker_sig_mu);
}

void pawl__worker_interrupt(worker_t *w) {
  int sig = w->signal;
  if (!sig) return; /* none: the job runs on until it returns */
  atomic_store(&w->sig_sent, 1);
  pthread_kill(w->thread, sig);
}

worker_t *pawl__worker_bind(worker_t *w) {
  worker_t *prev = worker_self;
  worker_self = w;
  if (!w->signal) return prev;
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, w->signal);
  pthread_sigmask(SIG_UNBLOCK, &set, NULL);
  return prev;
}

void pawl__worker_unbind(worker_t *prev) { worker_self = prev; }

void pawl__worker_watch(worker_t *w, int64_t now) {
  pthread_mutex_lock(&w->dl);
  uint64_t seq = atomic_load(&w->seq);
  if (w->deadline && now >= w->deadline &&
      atomic_load(&w->interrupt_seq) != seq) {
    atomic_store(&w->interrupt_why, PAWL__LUA_TIMEOUT);
    atomic_store(&w->interrupt_seq, seq);
    pawl__worker_interrupt(w);
  } else if (w->deadline && now >= w->deadline + 1000 &&
             atomic_load(&w->interrupt_seq) == seq) {
    /* Still not back a second later: the signal may have landed between
     * instructions the hook never reached (a blocking C call). Ask again;
     * it is harmless if it is already unwinding. */
    w->deadline = now;
    pawl__worker_interrupt(w);
  }
  pthread_mutex_unlock(&w->dl);
}

void pawl__worker_interrupt_stop(worker_t *w) {
  pthread_mutex_lock(&w->dl);
  if (atomic_load(&w->in_lua)) {
    uint64_t seq = atomic_load(&w->seq);
    /* Past its deadline (interrupted for it already, or the watchdog has
     * not looked yet): a timeout, whatever the stop says. */
    int late = atomic_load(&w->interrupt_seq) == seq
                   ? atomic_load(&w->interrupt_why) == PAWL__LUA_TIMEOUT
                   : w->deadline && pawl__mono_ms() >= w->deadline;
    atomic_store(&w->interrupt_why, late ? PAWL__LUA_TIMEOUT : PAWL__LUA_STOP);
    atomic_store(&w->interrupt_seq, seq);
    pawl__worker_interrupt(w);
  }
  pthread_mutex_unlock(&w->dl);
}

/* ---- the deadline of each Lua call (pawl__lua_config_t) ----------------- */

/* Why the call numbered `seq` was interrupted, if it was. */
static int worker_why(worker_t *w, uint64_t seq) {
  if (atomic_load(&w->interrupt_seq) != seq) return 0;
  int why = atomic_load(&w->interrupt_why);
  return why ? why : PAWL__LUA_TIMEOUT;
}

static uint64_t worker_call_begin(void *data, double timeout_s) {
  worker_t *w = data;
  pthread_mutex_lock(&w->dl);
  uint64_t seq = atomic_fetch_add(&w->seq, 1) + 1;
  w->deadline = timeout_s > 0 ? pawl__mono_ms() + (int64_t)(timeout_s * 1000) : 0;
  int64_t deadline = w->deadline;
  pthread_mutex_unlock(&w->dl);
  if (w->arm) w->arm(w, deadline);
  atomic_store(&w->in_lua, 1);
  return seq;
}

static int worker_call_end(void *data, uint64_t seq) {
  worker_t *w = data;
  atomic_store(&w->in_lua, 0);
  pthread_mutex_lock(&w->dl);
  w->deadline = 0;
  pthread_mutex_unlock(&w->dl);
  if (w->arm) w->arm(w, -1);
  return worker_why(w, seq);
}

static int worker_interrupted(void *data) {
  worker_t *w = data;
  return worker_why(w, atomic_load(&w->seq));
}

static void worker_tick(void *data) {
  worker_t *w = data;
  if (w->tick) w->tick(w);
}

static int worker_stopping(void *data) {
  host_t *h = ((worker_t *)data)->h;
  pthread_mutex_lock(&h->mu);
  int stopping = h->stopping != 0;
  pthread_mutex_unlock(&h->mu);
  return stopping;
}

_Static_assert(PAWL__LUA_GRANT_SIGNAL == PAWL__GRANT_SIGNAL &&
                   PAWL__LUA_GRANT_REPLACE == PAWL__GRANT_REPLACE &&
                   PAWL__LUA_GRANT_RESTART == PAWL__GRANT_RESTART,
               "the bridge's grants are the API's");

/* pawl.alert.webhook's post (the bridge's callback; data: the host): the
 * host's sender, which ops/ makes for pawl_start()'s host only. */
static int worker_post(void *data, const pawl__lua_post_t *req, char *err,
                       size_t errlen) {
  host_t *h = data;
  if (!h->ops) {
    snprintf(err, errlen, "no sender: webhooks post from a running host "
                          "(pawl run, pawl_start)");
    return -1;
  }
  return h->ops->webhook_post(h, req, err, errlen);
}

/* Job code acts through this worker's handle as its job (host_fns.c). */
static void worker_act_as(void *data, const char *name, const char *owner,
                          int grants) {
  worker_t *w = data;
  if (!name) {
    pawl__act_as(w->p, NULL);
    return;
  }
  pawl__actor_t a = {.name = name, .owner = owner, .grants = grants};
  pawl__act_as(w->p, &a);
}

int pawl__worker_open(worker_t *w, char *err, size_t errlen) {
  host_t *h = w->h;
  pawl__lua_config_t cfg = {
      .p = w->p,
      .log = h ? &h->log : NULL,
      .opts = h ? &h->opts : NULL,
      .call_begin = worker_call_begin,
      .call_end = worker_call_end,
      .interrupted = worker_interrupted,
      .stopping = h ? worker_stopping : NULL,
      .tick = w->tick ? worker_tick : NULL,
      .data = w,
      .host_L = w->host_L,
      .host_types_ref = w->host_types_ref,
      .post = h ? worker_post : NULL, /* alerts */
      .post_data = h,
      .act_as = worker_act_as,
  };
  w->scripts_gen = 0;
  return pawl__lua_open(&cfg, &w->lua, err, errlen);
}

void pawl__worker_close(worker_t *w) {
  pawl__lua_close(w->lua);
  w->lua = NULL;
}

void pawl__worker_reload(worker_t *w, int report) {
  size_t n = 0;
  uint64_t gen = 0;
  host_script_t *scripts = pawl__host_scripts_copy(w->h, &n, &gen);
  if (gen == w->scripts_gen && w->scripts_gen != 0) {
    pawl__host_scripts_free(scripts, n);
    return;
  }
  /* Cut short by a stop: loaded again next time (if there is one). */
  if (pawl__lua_load(w->lua, scripts, n, report, NULL) == 0)
    w->scripts_gen = gen;
  pawl__host_scripts_free(scripts, n);
  /* The scripts that never loaded are not in the list: their jobs fail
   * with the loader's error, which names the file. Out of memory: they
   * say "no script for job type" until the next reload. */
  pawl_script_error_t *errs = NULL;
  size_t nerrs = 0;
  pthread_mutex_lock(&w->h->mu);
  int oom = pawl__host_copy_load_errors(w->h, &errs, &nerrs) != 0;
  pthread_mutex_unlock(&w->h->mu);
  if (!oom) pawl__lua_set_load_errors(w->lua, w->h->scripts_dir, errs, nerrs);
  pawl_script_errors_free(errs, nerrs);
}

/* ---- running one job ---------------------------------------------------- */

/* Records the start of `job` if it was recovered before (one write, for
 * such jobs only), so that its next loss counts towards the poison limit;
 * one never started is not blamed (see pawl_recover()). A job claimed
 * ahead (started_at 0) and never recovered has its start written by the
 * completer instead (worker_note_start()). Returns 0 when it may run;
 * otherwise it is not run: gone to another node (PAWL_ELEASE: dropped), or
 * handed back while the database is away. */
static int worker_begin(worker_t *w, pawl_job_t *job) {
  if (job->recoveries <= 0) return 0;
  int begun = pawl_begin(w->p, job);
  if (begun == 0) return 0;
  int gone = begun == PAWL_ELEASE;
  log_line_t line;
  pawl__log_begin(&line, &w->h->log, gone ? PAWL_LOG_WARN : PAWL_LOG_ERROR,
            gone ? "job not started: it is no longer ours"
                 : "job not started: its start could not be recorded");
  pawl__log_id(&line, "job", &job->id);
  pawl__log_str(&line, "type", job->type);
  pawl__log_str(&line, "error", pawl_errmsg(w->p));
  pawl__log_end(&line);
  if (gone) {
    pawl_job_free(job);
  } else {
    /* The attempt's history says why it ended unstarted. */
    char why[600];
    snprintf(why, sizeof why, "not started: its start was not recorded: %s",
             pawl_errmsg(w->p));
    pawl__host_hand_back_why(w->h, job, why);
  }
  return begun;
}

/* What the rest of the host may know of the job this worker runs: if the
 * worker never comes back, its job is handed back by id. */
static void worker_set_current(worker_t *w, const pawl_job_t *job) {
  pthread_mutex_lock(&w->dl);
  w->has_current = job != NULL;
  if (job) {
    w->current_id = job->id;
    w->current_attempt = job->attempt;
    snprintf(w->current_type, sizeof w->current_type, "%s", job->type);
    w->current_since = pawl__mono_ms();
  }
  pthread_mutex_unlock(&w->dl);
}

/* The body of `job`, claimed ahead of a free worker, starts at `at`: the
 * completer writes it (PAWL_OUT_STARTED) with the outcomes around it, so
 * that the job shows as running from then on, or drops it when the
 * attempt's end comes first (the end carries the start: host_outcome_t.
 * slot). Out of memory: the job shows as claimed until it ends. */
static void worker_note_start(worker_t *w, const pawl_job_t *job, int64_t at) {
  host_outcome_t *n = pawl__calloc(1, sizeof *n);
  if (!n) return;
  n->worker = -1;
  n->hook_ref = PAWL__LUA_NOREF;
  n->out.id = job->id;
  n->out.attempt = job->attempt;
  n->out.store_key = job->store_key;
  n->out.kind = PAWL_OUT_STARTED;
  n->out.started_at = at;
  n->slot = &w->start_note;
  pawl__host_push_outcome(w->h, n);
}

/* Takes over what the bridge made of the attempt. */
static void worker_take(host_outcome_t *o, pawl__lua_outcome_t *r) {
  o->out.kind = (pawl_outcome_kind_t)r->kind;
  o->out.run_at = r->run_at;
  o->out.ordering_skip = r->ordering_skip;
  o->result = r->result;
  o->branches = r->branches;
  o->out.branches = o->branches;
  o->error = r->error;
  o->trace = r->trace;
  o->out.trace = o->trace;
  o->logs = r->logs;
  o->nlogs = r->nlogs;
  o->hooks = r->hooks;
  o->hook_ref = r->hook_ref;
  o->out.result = o->result;
  o->out.error = o->error;
  o->out.logs = o->logs;
  o->out.nlogs = o->nlogs;
}

void pawl__worker_run(worker_t *w, pawl_job_t *job) {
  if (worker_begin(w, job) != 0) return;
  host_outcome_t *o = pawl__calloc(1, sizeof *o);
  if (!o) {
    /* Nothing can be recorded; the lease will expire and the job will be
     * recovered. Log it loudly. */
    log_line_t line;
    pawl__log_begin(&line, &w->h->log, PAWL_LOG_ERROR, "out of memory: job dropped");
    pawl__log_id(&line, "job", &job->id);
    pawl__log_end(&line);
    pawl_job_free(job);
    return;
  }
  o->job = job;
  o->worker = w->index;
  o->out.id = job->id;
  o->out.attempt = job->attempt;
  o->out.store_key = job->store_key;
  worker_set_current(w, job);
  /* STARTED before the code runs; step mode delivers it now, on its own
   * thread (the threaded host's completer does it for workers). */
  pawl__host_event(w->h, PAWL_EV_STARTED, job, job->attempt);
  if (w->step) pawl__host_events_deliver(w->h);
  /* The attempt's run is the body's, measured here: from the moment it
   * starts to the moment it returns. The time it waited after its claim
   * (a job claimed ahead of a free worker) is queue wait, not run time;
   * the outcome carries both ends to the store (pawl_outcome_t). */
  int64_t started = pawl_now(w->p);
  /* Claimed ahead (its start not recorded by its claim), and not
   * recorded by worker_begin() either. */
  int noted = job->started_at == 0 && job->recoveries <= 0;
  if (noted) worker_note_start(w, job, started);
  o->slot = noted ? &w->start_note : NULL;
  if (w->h->metrics) /* its queue wait: due (run_at) to now */
    pawl__metrics_started(w->h->metrics, job->type, job->queue,
                          (double)(started - job->run_at));
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  pawl__lua_outcome_t r;
  pawl__lua_run(w->lua, job, &r);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  int64_t ended = pawl_now(w->p);
  worker_set_current(w, NULL);
  worker_take(o, &r);
  /* The wall clock may step back while the body runs: an end before its
   * start is the start. */
  o->out.started_at = started;
  o->out.ended_at = ended < started ? started : ended;
  o->duration_ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 +
                   (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
  pawl__host_push_outcome(w->h, o);
}

void pawl__worker_run_inbox(worker_t *w, host_outcome_t *list) {
  while (list) {
    host_outcome_t *o = list;
    list = o->next;
    pawl__lua_hooks(w->lua, o->job, o->hooks, o->hook_ref, o->rc == 0);
    pawl__host_outcome_free(o);
  }
}

/* ---- the thread --------------------------------------------------------- */

void *pawl__worker_main(void *arg) {
  worker_t *w = arg;
  host_t *h = w->h;
  pawl__worker_bind(w);
  /* This thread's own Lua state, for its whole life. */
  char err[400];
  int rc = pawl__worker_open(w, err, sizeof err);
  pthread_mutex_lock(&h->mu);
  if (rc) {
    h->states_failed++;
    snprintf(h->start_err, sizeof h->start_err, "worker %d: %s", w->index, err);
    h->workers_alive--;
  } else {
    h->states_ready++;
  }
  pthread_cond_broadcast(&h->stop_cv);
  pthread_mutex_unlock(&h->mu);
  if (rc) {
    worker_self = NULL;
    return NULL;
  }
  for (;;) {
    pthread_mutex_lock(&h->mu);
    /* Once stopping, no new job starts: the poller hands the queued ones
     * back. */
    /* A job of a queue with workers of its own always has one free; the
     * shared pool's wait while the pool's workers are all busy (a worker
     * that ends a pool job takes the next itself). */
    while (!h->own_head && !(h->queue_head && h->pool_running < h->pool) &&
           !w->inbox && !h->stopping && w->scripts_gen == h->scripts_gen)
      pthread_cond_wait(&h->work_cv, &h->mu);
    host_outcome_t *inbox = w->inbox;
    w->inbox = NULL;
    host_item_t *item = NULL;
    if (!inbox && !h->stopping) item = pawl__host_take_locked(h);
    int quit = !inbox && !item && h->stopping;
    uint64_t gen = h->scripts_gen;
    /* Claimed, but the database has not heard from us for about a lease:
     * another node may have taken it back. Hand it back, do not run it. */
    int lapsed = item && pawl__host_lapsed(h, item->claimed_mono, pawl__mono_ms());
    if (lapsed) pawl__host_item_done_locked(h, item);
    pthread_mutex_unlock(&h->mu);
    if (lapsed) {
      pawl__host_hand_back_why(h, item->job, HOST_LAPSED_WHY);
      pawl__free(item);
      continue;
    }
    if (inbox) {
      pawl__worker_run_inbox(w, inbox);
      continue;
    }
    if (quit) break;
    if (!item) {
      /* New scripts: load them while idle, not before the next job. */
      if (w->scripts_gen != gen && !h->stopping) pawl__worker_reload(w, 0);
      continue;
    }
    if (w->scripts_gen != gen) pawl__worker_reload(w, 0);
    int slot = item->slot;
    pawl__worker_run(w, item->job);
    pthread_mutex_lock(&h->mu);
    pawl__host_item_done_locked(h, item);
    pawl__free(item);
    /* A free slot may mean the poller should claim more: always when it
     * is a queue's own (its claims take no more than its free slots). */
    if (slot >= 0 || h->queued <= h->nworkers) {
      h->wake = 1;
      pthread_cond_signal(&h->poll_cv);
    }
    pthread_mutex_unlock(&h->mu);
  }
  /* No more outcomes from this worker; the completer may still post hooks
   * until it has written everything. */
  pthread_mutex_lock(&h->mu);
  h->workers_alive--;
  pthread_cond_broadcast(&h->done_cv);
  while (!h->completer_done || w->inbox) {
    host_outcome_t *inbox = w->inbox;
    w->inbox = NULL;
    if (inbox) {
      pthread_mutex_unlock(&h->mu);
      pawl__worker_run_inbox(w, inbox);
      pthread_mutex_lock(&h->mu);
      continue;
    }
    pthread_cond_wait(&h->work_cv, &h->mu);
  }
  pthread_mutex_unlock(&h->mu);
  worker_self = NULL;
  return NULL;
}

