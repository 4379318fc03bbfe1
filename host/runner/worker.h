/* worker.h: a worker thread and its Lua state (internal).
 *
 * A worker owns one lua_State for its whole life; nothing else touches it.
 * The watchdog reads the worker's deadline (under `dl`) and, when it has
 * passed, sends the worker thread the host's interrupt signal
 * (pawl_host_opts_t.interrupt_signal, SIGURG by default). The handler runs
 * on the worker's own thread and arms a count hook there; LuaJIT built
 * with LUAJIT_ENABLE_CHECKHOOK then leaves even compiled loops for the
 * hook, which raises the timeout error. No thread ever touches another
 * thread's lua_State. */
#ifndef PAWL_WORKER_H
#define PAWL_WORKER_H

#include <signal.h>

#include "host.h"

typedef struct lua_State lua_State;

/* A lock pawl.lock took (name and owner, owned strings). */
typedef struct worker_lock {
  char *name;
  char *owner;
} worker_lock_t;

/* Why the watchdog interrupted a worker. */
#define WORKER_INT_TIMEOUT 1
#define WORKER_INT_STOP 2

struct worker {
  host_t *h;
  int index;                 /* -1: the loader's probe state (no jobs) */
  pthread_t thread;
  lua_State *L;
  pawl_t *p;                 /* this thread's own handle */
  int ref_worker;            /* registry ref: the pawl.worker table */
  int ref_decode;            /* registry ref: cjson decode */
  int ref_msgh;              /* registry ref: the message handler */
  uint64_t scripts_gen;

  /* Deadline of what the worker runs now. `dl` guards seq and deadline
   * between the worker and the watchdog; the signal handler reads only
   * the atomics. */
  pthread_mutex_t dl;
  _Atomic uint64_t seq;      /* bumped for every protected call */
  int64_t deadline;          /* monotonic ms; 0: none */
  _Atomic uint64_t interrupt_seq;
  _Atomic int interrupt_why;
  _Atomic int in_lua;
  int signal;                /* the signal that interrupts this worker's
                                Lua (its host's interrupt_signal); 0: none,
                                the job runs on until it returns */
  _Atomic int sig_sent;      /* the watchdog signalled this worker: the next
                                delivery on its thread is ours (any other
                                goes to the previous handler) */
  double timeout_s;          /* of the call running now, for messages */
  /* The job being run, as the rest of the host may see it (under `dl`):
   * if the worker never comes back, its job is handed back by id. */
  int has_current;
  pawl_id_t current_id;
  int32_t current_attempt;

  /* The job being run (owned by the outcome being built). */
  pawl_job_t *job;
  uint64_t run_seq;          /* seq of the job's run() call; ctx checks it */
  pawl_log_entry_t *logs;
  size_t nlogs, logs_cap;
  int64_t cancel_checked;    /* mono ms of the last ctx:canceled() query */
  int canceled;
  int64_t progress_written;

  /* Locks taken by pawl.lock and not released yet. The worker releases
   * them once the call that took them has returned, however it ended: a
   * timeout or a stop interrupts the release in Lua. */
  worker_lock_t *locks;
  size_t nlocks, locks_cap;
  int loading;               /* running a script's top level: the functions
                                that act on the database refuse */

  /* Outcomes stored whose hooks this worker must run (guarded by h->mu). */
  host_outcome_t *inbox;
};

/* Creates the worker's Lua state (scripts are loaded by pawl__worker_reload).
 * Called on the thread that will own the state. On failure `err` says
 * why. */
int pawl__worker_open(worker_t *w, char *err, size_t errlen);
void pawl__worker_close(worker_t *w);

/* (Re)loads the scripts if the host's list changed. `report` logs each
 * broken script (the poller's probe does, so each error is logged once). */
void pawl__worker_reload(worker_t *w, int report);

/* Loads a script list the host has not installed yet (the loader's probe
 * checks each new list first), each script under the load deadline,
 * logging each broken script; errors[i] (n slots, zeroed by the caller)
 * receives a malloc'd message for each one that did not load. Returns 0,
 * or -1 if the host's stop cut the load short. */
int pawl__worker_load_list(worker_t *w, const host_script_t *list, size_t n,
                     char **errors);

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
 * handler, and lets the signal in. w->thread must name this thread (the
 * one whose Lua calls are interrupted) before its first call. */
void pawl__worker_bind(worker_t *w);

/* The watchdog's look at one worker (at monotonic time `now`): interrupts
 * a call past its deadline, and asks again a second later if it is not
 * back (a blocking C call). */
void pawl__worker_watch(worker_t *w, int64_t now);

/* Interrupts the call `w` is running because the host is stopping. A call
 * already past its deadline stays a timeout: its job used its attempt. */
void pawl__worker_interrupt_stop(worker_t *w);

#endif
