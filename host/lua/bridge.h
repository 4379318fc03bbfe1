/* bridge.h: the Lua bridge, as the runner sees it (the one header of lua/
 * that runner/ includes).
 *
 * The runner (runner/) is engine-neutral: it claims jobs, hands them to
 * worker threads, enforces deadlines, writes outcomes, and calls no Lua
 * API. Everything that touches a lua_State is here in lua/: building a
 * state (libraries, the embedded lua/pawl modules, pawl.host), loading the
 * scripts, running a job through pawl.worker (prepare, run, result_json,
 * failed), the hooks, and the pawl.host functions job code calls. Redis
 * splits script.c from script_lua.c the same way.
 *
 * Threads and ownership. A pawl__lua_t is one lua_State and what the job
 * it runs has done so far (log lines, locks); it belongs to the thread
 * that opened it (a worker, the loader, the caller of pawl_script_info())
 * and every function below is called on that thread, except
 * pawl__lua_interrupt() (the owning thread's signal handler) and
 * pawl__lua_open() for the loader's state (opened by pawl_start() before
 * the loader thread takes it over; never used by two threads at once).
 *
 * Deadlines. The bridge runs every piece of Lua code (a job's run(), a
 * sanitizer, a retry policy, a hook, a script's top level) in a protected
 * call, and tells its owner about each one through the callbacks of
 * pawl__lua_config_t, on the owning thread: call_begin() before (with the
 * call's timeout), call_end() after. The owner arms a deadline in between,
 * and its watchdog, on another thread, interrupts a call past it: it
 * signals the owning thread, whose handler calls pawl__lua_interrupt(),
 * which makes the Lua code raise an error at its next instruction (LuaJIT
 * built with LUAJIT_ENABLE_CHECKHOOK leaves compiled loops for it too).
 * The bridge never takes a lock of the owner's; the owner never touches
 * the lua_State. */
#ifndef PAWL_LUA_BRIDGE_H
#define PAWL_LUA_BRIDGE_H

#include <stddef.h>
#include <stdint.h>

#include "log.h"
#include "pawl.h"

typedef struct pawl__lua pawl__lua_t;

/* Why a protected call was interrupted: its deadline passed, or its owner
 * is stopping. 0: it was not. */
#define PAWL__LUA_TIMEOUT 1
#define PAWL__LUA_STOP 2
/* Not an interrupt: the call's code grew the heap past its ceiling (the
 * job's `memory`, see state.h). */
#define PAWL__LUA_MEMORY 3

/* A registry reference that refers to nothing (Lua's LUA_NOREF). */
#define PAWL__LUA_NOREF (-2)

/* A script to load: a job type's file (name: the type) or the defaults
 * (name "_defaults"); src/len: its text as the owner read it, NULL: load
 * the file at `path`. Borrowed for the call. */
typedef struct pawl__script {
  char *name;
  char *path;
  char *src;
  size_t len;
  /* A job type in C (pawl_define_c): fn (non-NULL), ud and what its
   * script table would say (copts; copts.queue belongs to the entry);
   * src and path are then unused but for the name in messages. */
  pawl_job_fn fn;
  void *ud;
  pawl_define_opts_t copts;
} pawl__script_t;

/* A webhook post (pawl.alert.webhook): url, the header lines
 * ("Name: value") and the JSON body, how long one try may take, how many
 * tries, and the first retry's delay (doubling). All checked by the Lua
 * side: the url is http(s) without spaces, numbers are in their bounds. */
typedef struct pawl__lua_post {
  const char *url;
  const char *const *headers;
  size_t nheaders;
  const char *body;
  double timeout_s;          /* 0.1..60 */
  int attempts;              /* 1..10 */
  double backoff_s;          /* 0.01..600 */
} pawl__lua_post_t;

/* What a state needs from its owner. Copied by pawl__lua_open(); the
 * pointers must stay valid for the state's life. */
typedef struct pawl__lua_config {
  /* The handle the pawl.host functions act on (enqueue, locks, progress,
   * the clock); borrowed. NULL: none (pawl_script_info()): functions that
   * need the database refuse, pawl.now reads this machine's clock. */
  pawl_t *p;
  /* Where job code's log lines and the bridge's own reports go (a broken
   * script, a failed hook); borrowed. NULL: nowhere. */
  host_logger_t *log;
  /* The host's options: the sandbox (unsafe_lua, allow_io, allow_env),
   * default_timeout_s and load_timeout_ms; borrowed. NULL: no host
   * (pawl_script_info()): scripts load with the defaults of pawl.worker,
   * under a 10 s deadline. */
  const pawl_host_opts_t *opts;
  /* The owner's side of each protected call, on the owning thread.
   * call_begin: a call with this timeout (seconds; 0: none) starts;
   * returns a number naming the call. call_end: that call has returned;
   * returns 0, or why it was interrupted (PAWL__LUA_TIMEOUT, _STOP).
   * interrupted: inside a call, 0 or why the call running now has been
   * interrupted (it is unwinding: a sleep ends early). stopping: NULL, or
   * 1 once no more scripts should be loaded (the host is stopping). None
   * of them may call back into the bridge. */
  uint64_t (*call_begin)(void *data, double timeout_s);
  int (*call_end)(void *data, uint64_t call);
  int (*interrupted)(void *data);
  int (*stopping)(void *data);
  /* NULL, or what pawl__lua_poke() asks for: called on the owning thread
   * from a count hook, between two instructions of the Lua code running
   * (step mode extends its leases here during a long job). It may call
   * the store through its own handle (no call of the bridge's is half
   * done then), but not back into the bridge. */
  void (*tick)(void *data);
  void *data;
  /* NULL, or where pawl.alert.webhook's posts go: queues the
   * post `req` (borrowed for the call) for the owner's sender thread and
   * returns 0, or returns -1 with `err` saying why it was not queued (the
   * queue is full, no sender). Never waits for the network. */
  int (*post)(void *post_data, const struct pawl__lua_post *req, char *err,
              size_t errlen);
  void *post_data;
  /* NULL, or the program's own Lua state to run jobs in (the Lua
   * module's db:step; pawl_step_start_lua()): *host_L is the lua_State
   * that calls pawl now (the thread or coroutine of the program's state
   * running db:step), read at each entry to the bridge. The bridge then
   * creates no state: it opens no library, reseeds nothing, leaves
   * package.loaded and package.preload as it found them, keeps what it
   * needs in the registry, and never closes the state. Job types come
   * from the table that registry reference host_types_ref names (type
   * name -> table or run function), read when a job runs; scripts of
   * pawl's sandbox do not load there (they would change the program's
   * string metatable): only C job types do. */
  void *const *host_L;
  int host_types_ref;
  /* Who the handle `p` acts as (docs/security.md, "Authority over other
   * jobs"): host_fns.c calls it with the acting job's name
   * ("job:<id> (<type>)"), the enqueued_by of the jobs it owns
   * ("job:<id>") and its grants (PAWL__LUA_GRANT_*) before a call that may
   * act on another job, and with name NULL right after it; the strings are
   * borrowed until then. NULL: job code may not signal or replace. */
  void (*act_as)(void *data, const char *name, const char *owner,
                 int grants);
} pawl__lua_config_t;

/* The grants of act_as (the same bits as api's PAWL__GRANT_*). */
#define PAWL__LUA_GRANT_SIGNAL 1
#define PAWL__LUA_GRANT_REPLACE 2
#define PAWL__LUA_GRANT_RESTART 4

/* What running a job came to, in plain C (no Lua object survives the
 * call but the hook reference). Strings and the log array are owned by
 * whoever holds the struct; free them with pawl__lua_outcome_free() unless
 * taken over. */
typedef struct pawl__lua_outcome {
  int kind;                  /* PAWL_OUT_* */
  char *result;              /* JSON text, or NULL (success without one) */
  char *error;               /* sanitized, for failures and retries: the
                                message alone */
  char *trace;               /* its Lua traceback, sanitized, or NULL */
  int64_t run_at;            /* retry, snooze: when (store clock ms) */
  int ordering_skip;         /* retry: pawl_outcome_t.ordering_skip (the
                                type's ordering = "skip_failed") */
  char *branches;            /* success: the branches that fired, a JSON
                                array, or NULL */
  pawl_log_entry_t *logs;    /* the job's ctx:log lines, with their strings */
  size_t nlogs;
  int hooks;                 /* which hooks to run once it is stored: 1
                                on_success, 2 on_failure, 4 on_dead */
  int hook_ref;              /* with hooks: what they need, held in the
                                state (pawl__lua_hooks() releases it);
                                else PAWL__LUA_NOREF */
} pawl__lua_outcome_t;

/* Creates a state: the libraries, the embedded modules, pawl.host, and
 * pawl.worker loaded (no script yet: pawl__lua_load). States are created
 * one at a time in the process (lua-cjson's first initialisation writes a
 * static). Returns 0, or PAWL_ENOMEM / PAWL_ESTORE with `err` saying why. */
int pawl__lua_open(const pawl__lua_config_t *cfg, pawl__lua_t **out,
                   char *err, size_t errlen);

/* Closes the state and frees what it holds. NULL is fine. */
void pawl__lua_close(pawl__lua_t *w);

/* Loads `list` into the state: each script's top level in a protected
 * call of its own under the load deadline, _defaults first; one that
 * fails or never returns is reported and the others still load (a script
 * that fails keeps the version the state had). errors (n slots, zeroed by
 * the caller, or NULL) receives a malloc'd message for each script that
 * did not load; `report` logs each. Returns 0, or -1 when the owner's stop
 * (stopping(), or an interrupt with PAWL__LUA_STOP) cut the load short. */
int pawl__lua_load(pawl__lua_t *w, const pawl__script_t *list, size_t n,
                   int report, char **errors);

/* Runs `job` (borrowed; it must outlive the call) with the scripts
 * loaded: prepare, run(job, ctx) under the job's timeout, the result's
 * JSON, or, when it failed, the sanitizer and the retry policy. Fills
 * `out` (zeroed by the callee). A job's failure is data: the call itself
 * cannot fail. */
void pawl__lua_run(pawl__lua_t *w, const pawl_job_t *job,
                   pawl__lua_outcome_t *out);

/* Once the outcome of `job` has been stored (stored = 1), runs the hooks
 * in `hooks` with what `hook_ref` holds, each under the type's timeout; a
 * hook's failure is logged, never raised. With stored = 0 (the store
 * refused it), runs none. Releases hook_ref either way. */
/* Dead-letter alerts: the global on_dead hook of _defaults.lua.
 * pawl__lua_alert_settings: whether the loaded _defaults.lua has one, its
 * dedup window in ms (*window_ms; 0: none) and how long it may run
 * (*timeout_s: _defaults.lua's timeout, else the host's; 0: no bound).
 * pawl__lua_alert: runs it for `a` (borrowed) under that timeout; a hook
 * that fails or times out is logged (the alert counts as delivered:
 * hooks are not retried). Returns 1 when a stop cut the hook short (the
 * alert is not delivered), else 0. */
typedef struct pawl__lua_alert {
  const char *id;            /* the job's id, text */
  const char *type, *queue, *error, *node;
  int32_t attempt;
  int64_t count, suppressed;
  int64_t first_at, last_at; /* store clock ms; 0: unknown */
} pawl__lua_alert_t;
int pawl__lua_alert_settings(pawl__lua_t *w, int64_t *window_ms,
                             double *timeout_s);
int pawl__lua_alert(pawl__lua_t *w, const pawl__lua_alert_t *a,
                    double timeout_s);

void pawl__lua_hooks(pawl__lua_t *w, const pawl_job_t *job, int hooks,
                     int hook_ref, int stored);

/* The defaults of `type` as its script (loaded) and _defaults.lua set
 * them, for pawl_script_info(). 0, or -1 if pawl.worker could not say. */
int pawl__lua_defaults_of(pawl__lua_t *w, const char *type,
                          pawl_script_info_t *out);

/* Tells pawl.worker which scripts of `dir` did not load (the loader's
 * list, e[0..n)), so that their jobs fail with that error (W.set_load_errors).
 * Borrowed; failures leave the previous list. */
void pawl__lua_set_load_errors(pawl__lua_t *w, const char *dir,
                               const pawl_script_error_t *e, size_t n);

/* The recurring definition `type` declares in its script (cron = ...),
 * for the loader: 1 with *out filled (malloc'd strings: the
 * caller frees them as pawl_recurring_free() does an element), 0 when it
 * declares none, -1 on failure. */
int pawl__lua_cron_of(pawl__lua_t *w, const char *type, pawl_recurring_t *out);

/* The redact lists of the types among list[0..n) the state
 * has loaded, as the JSON pawl__types_sync() takes ([[type, [field, ...]],
 * ...]); malloc'd, or NULL on failure (out of memory, pawl.worker could
 * not say). */
char *pawl__lua_types_json(pawl__lua_t *w, const pawl__script_t *list,
                           size_t n);

/* Makes the Lua code running now in the state raise its interrupt error
 * at its next instruction (a count hook, which the call's message handler
 * disarms). Async-signal-safe: called by the owning thread's signal
 * handler, only while a protected call of the state runs. */
void pawl__lua_interrupt(pawl__lua_t *w);

/* Makes the Lua code running now call cfg.tick once, at its next
 * instruction, and go on (an interrupt asked meanwhile still raises).
 * Async-signal-safe, like pawl__lua_interrupt(). */
void pawl__lua_poke(pawl__lua_t *w);

/* Frees what an outcome owns (not its hook reference). */
void pawl__lua_outcome_free(pawl__lua_outcome_t *o);


/* ---- the heap of a Lua state (state.c) ---------------------------------
 *
 * The allocator of every Lua state pawl creates (the workers', the
 * loader's, the console's): LuaJIT's lua_Alloc over pawl's allocator
 * (pawl_set_allocator, else libc's), counting what the state holds and
 * refusing to grow it past `cap`. A refusal is LuaJIT's "not enough
 * memory" error in the code that asked, never a crash: LuaJIT raises it
 * as an ordinary error at the allocation. Shrinking and freeing never
 * fail (Lua requires it). Belongs to the state's thread. */
typedef struct pawl__lua_heap {
  size_t used;               /* bytes the state holds */
  size_t cap;                /* it may hold at most this many; SIZE_MAX:
                                no bound */
  size_t peak;               /* the most it held since the owner last
                                reset it */
  int refused;               /* an allocation was refused for the cap
                                since the owner last reset it */
  /* Past `soft` bytes (SIZE_MAX: never), the allocator calls on_soft
   * once (it disarms soft first), from inside the allocation: the owner
   * arranges for a full collection (LuaJIT does not collect before it
   * gives up on memory). NULL: nothing. */
  size_t soft;
  void (*on_soft)(struct pawl__lua_heap *h);
  void *owner;
} pawl__lua_heap_t;

/* The lua_Alloc; ud: the pawl__lua_heap_t. */
void *pawl__lua_heap_alloc(void *ud, void *ptr, size_t osize, size_t nsize);

/* ---- the admin console's Lua state (admin_lua.c) -------------------------
 *
 * The state an attached console's chunks run in, never a worker's, used
 * by one thread at a time (the admin server's Lua thread; opened by
 * pawl_start() before it starts). The state has the standard library for
 * the console's own code, but chunks run in the curated environment of
 * lua/pawl/console.lua ("the attached console's environment"): nothing
 * that ends the process, runs programs, reads its stdin, loads code or
 * switches the hook off. It runs the Lua module
 * (`require "pawl"`) on `db`, a handle of its own, and the session code
 * of lua/pawl/console.lua, one session per connection, so that results,
 * completion and :trace are the direct console's. Its memory is bounded
 * (memory_max: an allocation beyond it fails as out of memory, in the
 * chunk that asked), and each chunk runs under a deadline kept by a count
 * hook (no signal: the chunk runs on the owning thread, which checks the
 * clock itself), which also asks io.check() whether the client has
 * interrupted the chunk or gone away. */
typedef struct pawl__admin_lua pawl__admin_lua_t;

/* What the chunk running now talks to: its connection. Called on the
 * thread running the state, during pawl__admin_eval() and friends only. */
typedef struct pawl__admin_io {
  /* Output: stream 0 the chunk's output, 1 its error lines. 0, or -1 when
   * the client is gone (the chunk is then stopped). */
  int (*write)(void *data, int stream, const char *s, size_t len);
  /* Asks the operator; a malloc'd answer, or NULL (none, Ctrl-C, gone,
   * or no answer by `deadline`, monotonic ms: the chunk's own, so that a
   * question nobody answers holds the state no longer than a chunk may). */
  char *(*ask)(void *data, const char *question, int64_t deadline);
  /* Every few ms while a chunk runs: 0 go on, 1 the client interrupted
   * it (Ctrl-C), 2 the client is gone, 3 the host is stopping. */
  int (*check)(void *data);
  void *data;
} pawl__admin_io_t;

typedef struct pawl__admin_config {
  pawl_t *db;              /* the state's own handle (a sibling of the
                              host's); borrowed, outlives the state */
  pawl_t *host;            /* the handle that started the host, for the
                              live functions (pawl_workers(), ...) */
  const char *scripts_dir; /* copied */
  int64_t timeout_ms;      /* each chunk's limit */
  size_t memory_max;       /* bytes the state may hold */
  pawl__admin_io_t io;
} pawl__admin_config_t;

/* Opens the state. 0, or PAWL_ENOMEM / PAWL_ESTORE with err saying why. */
int pawl__admin_lua_open(const pawl__admin_config_t *cfg,
                         pawl__admin_lua_t **out, char *err, size_t errlen);
void pawl__admin_lua_close(pawl__admin_lua_t *a);

/* A session for a new connection (json: results as JSON Lines;
 * interactive: ask() may ask). Returns its number (1 or more), or -1
 * (out of memory: the message is written to the client). */
int pawl__admin_session_new(pawl__admin_lua_t *a, int json, int interactive);
void pawl__admin_session_free(pawl__admin_lua_t *a, int s);
/* The client's terminal width (0: none; nothing is cut). */
void pawl__admin_session_width(pawl__admin_lua_t *a, int s, int width);

/* Runs `chunk` (len bytes) in session s, REPL rules unless as_script,
 * writing its results and errors through io. 1 when it succeeded. */
int pawl__admin_eval(pawl__admin_lua_t *a, int s, const char *chunk,
                     size_t len, const char *chunkname, int as_script);
/* 1 when the chunk ends too early to run (`function f()`). */
int pawl__admin_incomplete(pawl__admin_lua_t *a, int s, const char *chunk,
                           size_t len);
/* Completion of the text before the cursor: a malloc'd text, the byte
 * where the completed word starts (1-based) and a newline, then one
 * candidate a line; NULL on error. */
char *pawl__admin_complete(pawl__admin_lua_t *a, int s, const char *line,
                           size_t len);
/* The traceback of session s's last error (malloc'd), NULL on error. */
char *pawl__admin_trace(pawl__admin_lua_t *a, int s);

#endif
