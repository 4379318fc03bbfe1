/* state.h: a worker's Lua state and what its job code is doing, shared by
 * the files of lua/ (not by the runner: it sees pawl__lua_t as opaque,
 * through bridge.h).
 *
 * Everything here belongs to the thread that owns the state (see
 * bridge.h); no field is shared with another thread. The one exception is
 * `L`, which the owning thread's signal handler passes to lua_sethook()
 * (pawl__lua_interrupt()). */
#ifndef PAWL_LUA_STATE_H
#define PAWL_LUA_STATE_H

#include <lua.h>

#include "bridge.h"

/* How long the steps after a job may take: result encoding, sanitizer and
 * retry policy. */
#define PAWL__LUA_STEP_TIMEOUT_S 10.0

/* A lock pawl.lock took (name and owner, owned strings). */
typedef struct pawl__lua_lock {
  char *name;
  char *owner;
} pawl__lua_lock_t;

struct pawl__lua {
  pawl__lua_config_t cfg;
  lua_State *L;
  int ref_worker;            /* registry ref: the pawl.worker table */
  int ref_decode;            /* registry ref: pawl.json's decode */
  int ref_msgh;              /* registry ref: the message handler */
  double timeout_s;          /* of the protected call running now, for the
                                interrupt's message */

  /* The job being run (borrowed for pawl__lua_run's call). */
  const pawl_job_t *job;
  /* The job whose hooks run now (on_success, on_failure, on_dead), NULL
   * otherwise: what they do is recorded as done by it (host_fns.c). */
  const pawl_job_t *hook_job;
  uint64_t runs;             /* run() calls made: names each one */
  uint64_t run_seq;          /* the run() call running now (ctx._seq), 0:
                                none; ctx checks it */
  pawl_log_entry_t *logs;    /* its ctx:log lines, handed to the outcome */
  size_t nlogs, logs_cap;
  int64_t cancel_checked;    /* mono ms of the last ctx:canceled() query */
  int canceled;
  int64_t progress_written;
  /* The step of a script's `steps` running now (host_fns.c):
   * its row (0: none), what ctx:count added, the exit ctx:exit gave it
   * (owned strings, NULL: none). */
  int64_t step_exec;
  int64_t step_counts[PAWL_STEP_NCOUNTS];
  char *step_exit_code, *step_exit_message;

  /* Locks taken by pawl.lock and not released yet. They are released
   * once the call that took them has returned, however it ended: a
   * timeout or a stop interrupts the release in Lua. */
  pawl__lua_lock_t *locks;
  size_t nlocks, locks_cap;
  /* Memory. heap counts what the state holds (heap_on: it has the
   * counting allocator); each protected call may grow it by `budget`
   * bytes above mem_base (0: above what it held when the call began).
   * rest: what it holds at rest, the scripts loaded and collected. */
  pawl__lua_heap_t heap;
  int heap_on;
  int64_t budget;
  size_t mem_base;
  size_t rest;
  int64_t alert_memory;      /* the global on_dead hook's budget */
  int loading;               /* running a script's top level: the functions
                                that act on the database refuse */
  int alerting;              /* running _defaults.lua's global on_dead hook,
                                which may post to the destinations that
                                file names (wh_named) */
  /* Webhook destinations granted by the loaded _defaults.lua (its
   * allow_webhook list: grants as pawl__web_grant_covers reads them) and
   * those its top level named in pawl.alert.webhook calls (destinations,
   * pawl__web_dest's form). Owned; replaced at each load of the file. */
  char **wh_grants, **wh_named;
  size_t nwh_grants, nwh_named;

  /* Job code's fan-out (docs/security.md, "What job code may write";
   * host_fns.c): the job whose run or hook runs now (borrowed; NULL:
   * none), the phase ("run" or the hook's name) that names the
   * identities of its batches and chains, the jobs it enqueued and its
   * pawl.batch / pawl.chain calls so far. */
  const pawl_job_t *fan_job;
  const char *fan_phase;
  int64_t fan_children;
  uint32_t fan_calls;
  /* The host log's budget for that job's lines (ctx:log, print): tokens
   * left, when they were last refilled (mono ms), lines dropped since the
   * last one written. */
  double log_tokens;
  int64_t log_refilled;
  int64_t log_dropped;
  int hosted;                /* the program's state (cfg.host_L): not ours */
};

/* The state to use now: the program's calling thread for a hosted state
 * (bridge.h, host_L), read at each entry point of the bridge. */
static inline lua_State *pawl__lua_enter(pawl__lua_t *w) {
  if (w->hosted) w->L = *(lua_State *const *)w->cfg.host_L;
  return w->L;
}

/* Calls the function below `nargs` arguments on the stack, protected, under
 * a deadline of timeout_s (the owner's call_begin/call_end around it).
 * Returns lua_pcall's code; *why (if not NULL) receives 0 or why the call
 * was interrupted (PAWL__LUA_TIMEOUT, PAWL__LUA_STOP).
 * [-(nargs+1), +(nres|1), -] */
int pawl__lua_call(pawl__lua_t *w, int nargs, int nres, double timeout_s,
                   int *why);

/* After a job that made much garbage, a full collection hands it back:
 * once the heap has been more than `slack` bytes above its resting size
 * since the last settle, the state is collected, and after a big drop
 * (PAWL__LUA_TRIM_BYTES) libc's free pages go back to the system
 * (malloc_trim). Outside Lua, between calls. */
#define PAWL__LUA_TRIM_BYTES ((size_t)32 << 20)
void pawl__lua_settle(pawl__lua_t *w, size_t slack);

/* Collects the state in full and takes what it holds as its resting size
 * (after opening it and after each load). */
void pawl__lua_heap_rest(pawl__lua_t *w);

/* Sets (on = 1) the ceiling of a protected call made with lua_pcall
 * directly, or lifts it (on = 0). */
void pawl__lua_heap_limit(pawl__lua_t *w, int on);

/* "memory limit: WHO used more than 256 MiB" (w->budget; who: "the
 * job", "the hook", ...). */
void pawl__lua_memory_text(pawl__lua_t *w, const char *who, char *buf,
                           size_t len);

/* Pushes the pawl.host table: the functions job code's view of the host
 * calls (host_fns.c), each with `w` as upvalue. [-0, +1, m] */
void pawl__lua_push_host(lua_State *L, pawl__lua_t *w);

/* host.batch (host_batch.c), one of the host functions. */
int pawl__lua_host_batch(lua_State *L);

/* Frees the webhook grants of the state's _defaults.lua (host_fns.c). */
void pawl__lua_webhook_forget(pawl__lua_t *w);

/* 53 random bits as a double, for seeding math.random (host_fns.c). */
double pawl__lua_entropy(void);

/* Releases the locks the last call left held (host_fns.c): outside Lua,
 * where no interrupt can stop it. pawl__lua_forget_locks only frees the
 * list (closing a state whose handle is gone). */
void pawl__lua_release_locks(pawl__lua_t *w);

/* Starts the fan-out and log budget of `job`'s run or hook `phase` (a
 * static string), and ends it: the host log says how many of its lines it
 * dropped (host_fns.c). */
void pawl__lua_fan_begin(pawl__lua_t *w, const pawl_job_t *job,
                         const char *phase);
void pawl__lua_fan_end(pawl__lua_t *w);

/* Checks that the job running now may enqueue `n` more jobs in one call
 * (`per_call`: a pawl.batch or pawl.chain, which max_batch bounds) under
 * its script's limits, the numbers (or nil for the defaults) at stack
 * indices arg (max_children), arg + 1 (max_batch), arg + 2 (max_depth).
 * 0 with *depth the new jobs' depth (0 when no job runs: nothing is
 * limited then), or -1 with the message in err naming the limit, its
 * value and how to raise it. Counts the n jobs when it returns 0. Raises
 * on a limit out of its hard bounds. [-0, +0, v] */
int pawl__lua_fanout(lua_State *L, pawl__lua_t *w, int arg, size_t n,
                     int per_call, const char *fname, int32_t *depth,
                     char *err, size_t errlen);

/* The parents (`after`) the n jobs of one call from job code wait for,
 * in all: at most PAWL_AFTER_MAX, as one job's, so that a call's edges
 * are bounded as its jobs are (each is a row the call's transaction
 * writes). 0, or -1 with the message in err. */
int pawl__lua_fan_edges(const pawl__lua_t *w, const pawl_enqueue_opts_t *opts,
                        size_t n, const char *fname, char *err,
                        size_t errlen);

/* The identity of the running job's next pawl.batch / pawl.chain call:
 * "job:ID/PHASE/ORDINAL", or "job:ID/key/KEY" for the key the script
 * gave (NULL: none); "" when no job runs. Counts the call. */
void pawl__lua_fan_ident(pawl__lua_t *w, const char *key, char *out,
                         size_t outlen);
void pawl__lua_forget_locks(pawl__lua_t *w);

/* Pushes the run function of a C job type and its settings table (what
 * W.load_c takes), for `def` (copied into the closure). [-0, +2, m] */
void pawl__lua_push_cjob(lua_State *L, pawl__lua_t *w,
                         const pawl__script_t *def);

/* Ends the step the last run left open (it raised, timed out or was
 * stopped: the Lua runner ends the steps that return), as failed or
 * stopped by the outcome `o`, with its error as the step's message; and
 * forgets the step's state (host_fns.c). Outside Lua: no interrupt stops
 * it. */
void pawl__lua_step_close(pawl__lua_t *w, const pawl__lua_outcome_t *o);

/* strdup that passes NULL through. */
char *pawl__lua_strdup(const char *s);

#endif
