/* worker.h: a worker thread, its deadlines and their interrupts (internal
 * to runner/).
 *
 * A worker owns one Lua state (lua/bridge.h) for its whole life; nothing
 * else touches it. Each protected call the state makes goes through
 * call_begin/call_end here, which arm the call's deadline. The watchdog
 * reads the deadline (under `dl`) and, when it has passed, sends the
 * worker thread the host's interrupt signal
 * (pawl_host_opts_t.interrupt_signal, SIGURG by default). The handler runs
 * on the worker's own thread and asks the bridge to interrupt the Lua code
 * (pawl__lua_interrupt: a count hook, which LuaJIT built with
 * LUAJIT_ENABLE_CHECKHOOK reaches even from compiled loops). No thread
 * ever touches another thread's Lua state. */
#ifndef PAWL_WORKER_H
#define PAWL_WORKER_H

#include <signal.h>

#include "host.h"

struct worker {
  host_t *h;                 /* NULL: pawl_script_info's (no host) */
  int index;                 /* -1: the loader's probe, pawl_script_info's */
  pthread_t thread;
  pawl__lua_t *lua;          /* its Lua state (owned), NULL until opened */
  pawl_t *p;                 /* this thread's own handle; NULL: none (the
                                loader's, pawl_script_info's) */
  uint64_t scripts_gen;

  /* Deadline of the protected call the state runs now. `dl` guards seq
   * and deadline between the worker and the watchdog; the signal handler
   * reads only the atomics. */
  pthread_mutex_t dl;
  _Atomic uint64_t seq;      /* bumped for every protected call */
  int64_t deadline;          /* monotonic ms; 0: none */
  _Atomic uint64_t interrupt_seq;
  _Atomic int interrupt_why; /* PAWL__LUA_TIMEOUT or PAWL__LUA_STOP */
  _Atomic int in_lua;
  int signal;                /* the signal that interrupts this worker's
                                Lua (its host's interrupt_signal); 0: none,
                                the job runs on until it returns */
  _Atomic int sig_sent;      /* the watchdog signalled this worker: the next
                                delivery on its thread is ours (any other
                                goes to the previous handler) */
  /* The job being run, as the rest of the host may see it (under `dl`):
   * if the worker never comes back, its job is handed back by id. */
  int has_current;
  pawl_id_t current_id;
  int32_t current_attempt;
  char current_type[201];    /* for pawl_workers() */
  int64_t current_since;     /* monotonic ms it started */

  /* Outcomes stored whose hooks this worker must run (guarded by h->mu). */
  host_outcome_t *inbox;
  /* The start of its job claimed ahead, while it waits in the completer's
   * queue (host_outcome_t.slot; guarded by h->mu). */
  host_outcome_t *start_note;

  /* Step mode (step.c): no watchdog thread; a timer of the owning thread
   * delivers the interrupt signal when a call's deadline or the next
   * lease extension (tick_at) comes. `arm` is told each call's deadline
   * (monotonic ms, 0: none) as it begins, and -1 when it has ended; the
   * signal handler reads the
   * atomics only. `tick` runs from the Lua code's count hook when tick_at
   * has passed (pawl__lua_poke). All NULL/0 for the threaded host. */
  void (*arm)(worker_t *w, int64_t deadline);
  void (*tick)(worker_t *w);
  void *step;
  int timer;                 /* 1: deliveries with si_code SI_TIMER on
                                this thread are this worker's deadline */
  _Atomic int64_t alarm_deadline; /* the running call's deadline, 0: none */
  _Atomic int64_t tick_at;   /* when tick is due (mono ms), 0: never */
  /* pawl_step_start_lua(): the program's own Lua state and its job types
   * (passed to the bridge as they are: bridge.h, host_L); NULL: a state of
   * pawl's. */
  void *const *host_L;
  int host_types_ref;
};

/* Creates the worker's Lua state (scripts are loaded by
 * pawl__worker_reload), with w->h, w->p and w->signal set. Called on the
 * thread that will own the state. On failure `err` says why. */
int pawl__worker_open(worker_t *w, char *err, size_t errlen);
/* Closes the Lua state (nothing if none). */
void pawl__worker_close(worker_t *w);

/* (Re)loads the scripts if the host's list changed. `report` logs each
 * broken script. */
void pawl__worker_reload(worker_t *w, int report);

/* Runs one claimed job (owned from here on): records the start of a job
 * recovered before (pawl_begin; one no longer ours is dropped, one whose
 * start cannot be recorded handed back), lets the bridge run it, and
 * hands the outcome to the completer's queue (pawl__host_push_outcome).
 * The path every job takes, on a worker thread or in pawl_step(). */
void pawl__worker_run(worker_t *w, pawl_job_t *job);

/* Runs the hooks of outcomes the completer stored (or releases their
 * references when it could not), and frees the outcomes. */
void pawl__worker_run_inbox(worker_t *w, host_outcome_t *list);

/* The worker thread's main loop. */
void *pawl__worker_main(void *arg);

/* The interrupt signal. The handler is the process's: one installation
 * per signal number shared by the hosts of the process, deliveries not
 * meant for a worker chained to the disposition it replaced, which is put
 * back when the last host using the signal releases it.
 * pawl__worker_signal_check: 0 if `sig` (resolved: 0 for none) may be used,
 * else -1 and a message. acquire/release: by each host that uses a signal,
 * around the life of its threads; acquire returns -1 (errno) if sigaction
 * failed. pawl__worker_interrupt: asks the worker's thread to stop its Lua code
 * (nothing when the host uses no signal). */
int pawl__worker_signal_check(int sig, char *err, size_t errlen);
int pawl__worker_signal_acquire(int sig);
void pawl__worker_signal_release(int sig);
void pawl__worker_interrupt(worker_t *w);

/* Makes `w` the worker of the calling thread, for the interrupt signal's
 * handler, and lets the signal in; returns the worker bound before (NULL:
 * none). w->thread must name this thread (the one whose Lua calls are
 * interrupted) before its first call. pawl__worker_unbind: binds `prev`
 * again (the signal mask is the caller's to restore). */
worker_t *pawl__worker_bind(worker_t *w);
void pawl__worker_unbind(worker_t *prev);

/* The watchdog's look at one worker (at monotonic time `now`): interrupts
 * a call past its deadline, and asks again a second later if it is not
 * back (a blocking C call). */
void pawl__worker_watch(worker_t *w, int64_t now);

/* Interrupts the call `w` is running because the host is stopping. A call
 * already past its deadline stays a timeout: its job used its attempt. */
void pawl__worker_interrupt_stop(worker_t *w);

#endif
