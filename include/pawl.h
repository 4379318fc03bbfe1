/* pawl.h: the embedding API of pawl, a durable job runner.
 *
 * This is the only public header. Everything here is prefixed `pawl_`;
 * internal symbols use `pawl__` or a module prefix and are not part of the
 * API.
 *
 * Conventions (after libuv and SQLite):
 * - Functions that can fail return an int: 0 (PAWL_OK) or a negative PAWL_E*
 *   code. pawl_strerror() names the code; pawl_errmsg() gives the detail of
 *   the last failure on a handle.
 * - A function that fails leaves its out-parameters untouched and changes
 *   nothing that was stored.
 * - Ownership is written on every function. "Borrowed" pointers stay owned by
 *   the caller and are not kept after the call returns.
 * - Times are milliseconds since the Unix epoch (UTC) in int64_t.
 * - A pawl_t is not thread-safe: use it from one thread at a time, or open
 *   one handle per thread (each owns its own database connection). The
 *   exceptions are named: pawl_stop() may be called from any thread.
 *   A handle in step mode or attached to a libuv loop belongs to that
 *   thread: every call on it from another thread is refused with
 *   PAWL_EMISUSE (and leaves no message: pawl_errmsg() is the owner's),
 *   but pawl_stop() and pawl_close() (see there); hand work to it from
 *   other threads through a sibling (pawl_sibling()), whose enqueues wake
 *   it at once.
 * - A call on a closed handle is refused with PAWL_EMISUSE as far as it
 *   can be detected: pawl_close() poisons the handle before freeing it,
 *   so the check holds while the freed memory is not reused (SQLite's
 *   SQLITE_MISUSE has the same limit). It is a diagnosis, not a licence.
 * - Callbacks (pawl_clock_fn, pawl_job_cb, pawl_log_fn) say which thread
 *   calls them and what they may call; none is called after the call, the
 *   handle or the host it was given to has ended.
 * - Every number a caller passes has a range, written beside it; a value
 *   outside it is refused with PAWL_EINVAL and a message naming the value
 *   and the range (see "Bounds" below), never clamped. Booleans are 0 or 1
 *   (any non-zero value counts as 1).
 */
#ifndef PAWL_H
#define PAWL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PAWL_VERSION "0.1.0"

/* Symbols of the shared library: everything else in it is hidden. */
#if defined(__GNUC__)
#define PAWL_EXTERN __attribute__((visibility("default")))
#else
#define PAWL_EXTERN
#endif

/* ---- errors ------------------------------------------------------------- */

#define PAWL_OK 0
#define PAWL_EINVAL (-1)    /* bad argument: malformed JSON, id, name ... */
#define PAWL_ENOTFOUND (-2) /* no such job */
#define PAWL_ESTATE (-3)    /* transition not allowed from the job's state */
#define PAWL_ECONFLICT (-4) /* the job changed under us (compare-and-set) */
#define PAWL_EKEY (-5)      /* business key held by a live job */
#define PAWL_ESTORE (-6)    /* database error */
#define PAWL_ESCHEMA (-7)   /* not a pawl database, newer or edited schema */
#define PAWL_ENOMEM (-8)    /* out of memory */
#define PAWL_EBUSY (-9)     /* database locked longer than the busy timeout;
                               or the handle runs a host that excludes the call */
#define PAWL_EIO (-10)      /* file or directory missing, unreadable, read-only */
#define PAWL_ELEASE (-11)   /* the job is no longer leased by this node */
#define PAWL_EUNAVAIL (-12) /* database unreachable (connection lost): retry later */
#define PAWL_EDONE (-13)    /* job instance already completed (identity) */
#define PAWL_EPERM (-14)    /* job code acting on a job it did not enqueue,
                               without the operator's grant */
#define PAWL_EMISUSE (-15)  /* the API used wrongly: a closed or NULL handle, a
                               handle bound to another thread (step mode, a
                               libuv loop), or a call pawl_step() refuses
                               from inside itself (job code, hooks, event
                               callbacks); nothing was done */

/* A static English description of `err`. Never NULL. */
PAWL_EXTERN const char *pawl_strerror(int err);
/* The code's name ("PAWL_ESTATE"). Never NULL. */
PAWL_EXTERN const char *pawl_err_name(int err);

/* ---- ids: UUIDv7 (RFC 9562 section 5.7) --------------------------------- */

typedef struct pawl_id {
  uint8_t bytes[16];
} pawl_id_t;

/* Length of the canonical text form plus its NUL. */
#define PAWL_ID_STRLEN 37

/* A new UUIDv7. Thread-safe and never waits; ids are monotonic across all
 * threads of the process (one generated later compares greater with
 * memcmp). The timestamp is the wall clock's, except when the clock stands
 * still or steps back (NTP): then ids carry on from the last one (RFC 9562
 * section 6.2), their timestamps at most a little ahead of the clock (one
 * ms per 4,096 ids) until it catches up. */
PAWL_EXTERN void pawl_id_new(pawl_id_t *out);
/* Writes the lower-case canonical form "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"
 * and a NUL into `out`. */
PAWL_EXTERN void pawl_id_format(const pawl_id_t *id, char out[PAWL_ID_STRLEN]);
/* Parses the canonical form (either case). Returns 0, or PAWL_EINVAL for
 * anything else (wrong length, misplaced dashes, non-hex digits). */
PAWL_EXTERN int pawl_id_parse(pawl_id_t *out, const char *text);
/* The 48-bit Unix millisecond timestamp of a UUIDv7. */
PAWL_EXTERN int64_t pawl_id_time_ms(const pawl_id_t *id);

/* ---- jobs --------------------------------------------------------------- */

typedef enum pawl_state {
  PAWL_PENDING = 0,   /* waiting for run_at: new, delayed or backing off */
  PAWL_RUNNING = 1,   /* claimed under a lease */
  PAWL_SUCCEEDED = 2, /* terminal */
  PAWL_FAILED = 3,    /* terminal: the dead-letter set */
  PAWL_CANCELED = 4,  /* terminal */
  PAWL_PAUSED = 5,    /* held by an operator; remembers where it came from */
  PAWL_BLOCKED = 6    /* waiting on other jobs or a signal */
} pawl_state_t;

#define PAWL_STATE_COUNT 7

/* "pending", "running", ... Static; "?" for a value out of range. */
PAWL_EXTERN const char *pawl_state_name(int state);
/* The state named `name`, or PAWL_EINVAL. */
PAWL_EXTERN int pawl_state_parse(const char *name);

/* A job as stored. Every string is NUL-terminated and lives in the job's
 * own allocation (do not free or replace one); optional ones are NULL when
 * unset, times are 0 when unset. Free the whole job with pawl_job_free(). */
typedef struct pawl_job {
  pawl_id_t id;
  char *type;
  char *queue;
  pawl_state_t state;
  pawl_state_t paused_from; /* meaningful while state == PAWL_PAUSED */
  int32_t priority;         /* higher runs first */
  char *payload;            /* JSON text */
  char *params;             /* JSON text or NULL */
  char *tags;               /* JSON array of strings, "[]" when none */
  int64_t run_at;           /* due time of the next (or current) attempt */
  int32_t attempt;          /* attempts started so far */
  int32_t max_attempts;     /* 0: not set at enqueue; the worker uses the
                               script's, else _defaults.lua's, else
                               PAWL_DEFAULT_MAX_ATTEMPTS (decided each
                               time the job runs) */
  int32_t timeout_s;        /* 0: none */
  char *idempotency_key;
  char *business_key;
  char *correlation_id;
  char *enqueued_by;        /* OS user for the CLI, a principal in the APIs */
  int64_t created_at;
  int64_t updated_at;
  int64_t started_at;       /* start of the current or last attempt */
  int64_t finished_at;      /* when it reached a terminal state */
  char *lease_owner;        /* node holding (or that last held) the lease */
  int64_t lease_expires;
  char *last_error;         /* sanitized */
  char *result;             /* JSON text */
  int32_t recoveries;       /* times taken back from an expired lease */
  double progress_done;     /* last ctx:progress(done, total); 0 if none */
  double progress_total;    /* 0: unknown */
  int64_t version;          /* bumped by every change */
  int64_t store_key;        /* the store's handle on the row (SQLite: its
                               rowid); 0 when unknown. Pass it back in
                               pawl_outcome_t.store_key. */
  char *ordering_key;       /* per-key ordering: see
                               pawl_enqueue_opts_t.ordering_key; NULL:
                               none */
  int32_t depth;            /* pawl_enqueue_opts_t.depth */
} pawl_job_t;

/* Frees a job from pawl_get(), pawl_claim() and friends. NULL is fine. */
PAWL_EXTERN void pawl_job_free(pawl_job_t *job);
/* Frees an array of `n` jobs and the array itself. */
PAWL_EXTERN void pawl_jobs_free(pawl_job_t **jobs, size_t n);

/* ---- handle ------------------------------------------------------------- */

typedef struct pawl pawl_t;

/* A clock: milliseconds since the epoch, 0..PAWL_TIME_MAX_MS. Tests inject
 * one so that delays, leases and backoff never need sleeps.
 * Threads: called by whichever thread uses the handle it was given to, and,
 * once pawl_start() has run on that handle, by every thread of the host at
 * once (poller, workers, completer, ...): it must be thread-safe. It is
 * called inside database transactions (SQLite's write lock may be held),
 * so it must return at once and call no function of pawl. `data` is
 * passed as given. */
typedef int64_t (*pawl_clock_fn)(void *data);

typedef struct pawl_options {
  /* "sqlite:PATH" (PATH may be relative), "postgres://..." (a libpq URI)
   * or "postgres:CONNINFO". NULL: $PAWL_DB, else "sqlite:./pawl.db".
   * Borrowed. "sqlite::memory:" and "sqlite:file:..." URIs are refused
   * (PAWL_EINVAL): an in-memory database keeps nothing, and each of the
   * host's connections would get a database of its own. */
  const char *db;
  /* Name of this node in leases and history. NULL: "hostname-pid".
   * Borrowed (copied). */
  const char *node_id;
  /* Who the handle acts for in history ("cli:alice"). NULL: the OS user. */
  const char *principal;
  /* NULL: the database clock. */
  pawl_clock_fn clock;
  void *clock_data;
  /* SQLite: synchronous=FULL instead of NORMAL. */
  int sync_full;
  /* How long to wait for a locked database, 0..INT32_MAX ms. 0: 5000. */
  int busy_timeout_ms;
  /* Lease length for claims, 0..PAWL_LEASE_MAX_MS. 0: 30000 ms. */
  int64_t lease_ms;
  /* Age boost: a pending job gains +1 priority per interval waited, for
   * ordering only (the stored priority never changes). 0 disables it.
   * -1 (the default): keep the database's setting (initially 15 minutes).
   * Any other value, 1..PAWL_AGE_BOOST_MAX_MS, is stored in the database
   * for every node. */
  int64_t age_boost_ms;
  /* 1: do not apply pending schema migrations; fail with PAWL_ESCHEMA if the
   * database is not up to date. */
  int no_migrate;
  /* 1 (pawl_options_init's default): create the database when there is
   * none: a missing SQLite file, or pawl's tables in a PostgreSQL database
   * that has none. 0: fail instead, with PAWL_EIO ("no database at
   * sqlite:PATH") or PAWL_ESCHEMA ("no pawl database in ..."), as every
   * `pawl` command but `migrate` does, so that a mistyped path is an error
   * rather than a new, empty database. The default stays 1 for embedders:
   * a program's database path is written in the program, not typed, and
   * SQLite's own open creates the file too. */
  int create;
  /* SQLite: the permission bits of a database file this handle creates.
   * SQLite gives the -wal, -shm and journal files the main file's bits.
   * 0: 0600 (the owner only: payloads, results and errors may be
   * confidential). Must include 0600 and nothing beyond 0777; applied
   * exactly (not reduced by the umask). An existing file keeps its mode. */
  unsigned file_mode;
  /* 1: commits never checkpoint the SQLite write-ahead log; the program
   * calls pawl_checkpoint() from a thread of its own instead (as the worker
   * host does), which keeps the checkpoint's fsync off the jobs' path. */
  int manual_checkpoint;
  /* 1: SQLite: pawl_open takes the write lock once, so that a program
   * about to write (the worker host) learns at once, with PAWL_EBUSY,
   * that another connection holds it past the busy timeout, rather than
   * at its first write. 0 (the default): opening a database already at
   * this pawl's version only reads. PostgreSQL: no effect. */
  int check_writable;
} pawl_options_t;

/* Fills `opts` with the defaults. Call before setting fields. */
PAWL_EXTERN void pawl_options_init(pawl_options_t *opts);

/* Opens the database: creates it if there is none and opts->create, and
 * applies pending migrations unless opts->no_migrate.
 * On success *out owns the handle: close it with pawl_close(). On failure
 * *out is left untouched, and if `errbuf` is not NULL a one-line message
 * naming the problem is written into it (at most errlen bytes). `opts` may
 * be NULL for the defaults. */
PAWL_EXTERN int pawl_open(pawl_t **out, const pawl_options_t *opts, char *errbuf,
              size_t errlen);
/* Closes the handle and its connection, and ends the host running on it
 * (pawl_start()'s, step mode; attached to a libuv loop, it is detached
 * first, as pawl_detach_uv() does: the loop frees its handles at its next
 * turn). NULL and a closed handle (as far as detected) are fine: nothing
 * happens. Refused, doing nothing and leaving the handle as it was: from
 * inside pawl_step() (job code, a hook, an event callback), and from
 * another thread than the loop's while attached. Threads: the thread
 * that uses the handle; a handle in step mode and not attached may be
 * closed on another thread once its stepping thread makes no more calls
 * (hooks of outcomes written then are not run). Siblings made of it
 * (pawl_sibling()) stay usable; their enqueues then wake nothing. */
PAWL_EXTERN void pawl_close(pawl_t *p);
/* Detail of the last failed call on `p`: one line, never NULL. Valid until
 * the next call on `p`. Threads: the thread that made that call. */
PAWL_EXTERN const char *pawl_errmsg(pawl_t *p);
/* This handle's node id. Owned by the handle. "" for a closed one.
 * Threads: any (the id never changes). */
PAWL_EXTERN const char *pawl_node_id(pawl_t *p);
/* The handle's clock (injected or the database's), in ms; PAWL_EMISUSE for
 * a closed handle. Threads: any (it reads no connection). */
PAWL_EXTERN int64_t pawl_now(pawl_t *p);

/* Opens a sibling of `p`: another handle on the same database, node id,
 * lease token and write gate, with its own connection, for another
 * thread. Its enqueues wake the host that runs on `p` at once (step mode:
 * the next pawl_step() claims, a pawl_step_wait() returns; attached to a
 * libuv loop: the loop is woken through its async handle; pawl_start():
 * the poller), whether that host started before or after the sibling was
 * made. This is the one way to hand work to a stepping or attached handle
 * from another thread: `p` itself refuses other threads (PAWL_EMISUSE).
 * The sibling is an ordinary handle (every function, one thread at a
 * time, any thread); its enqueues send ENQUEUED events to that host like
 * the handle's own. It may outlive
 * `p` (it then wakes nothing). Threads: call on the thread that uses `p`
 * (its owner in step mode); then hand *out to any thread. *out: close it
 * with pawl_close(). Returns 0, PAWL_EINVAL (out NULL, or `p` is a job's
 * handle, pawl_ctx_handle()), PAWL_ENOMEM, or the open's error. */
PAWL_EXTERN int pawl_sibling(pawl_t *p, pawl_t **out);

/* Moves committed pages from the write-ahead log into the database file
 * without blocking writers (SQLite; a no-op elsewhere). For handles opened
 * with manual_checkpoint, or any time. Safe to call often. */
PAWL_EXTERN int pawl_checkpoint(pawl_t *p);

/* Schema version the database is at, and the newest this build knows. */
PAWL_EXTERN int pawl_schema_version(pawl_t *p, int *current, int *latest);

/* ---- enqueue ------------------------------------------------------------ */

/* Bounds of every number that comes from outside (the C API, the CLI, Lua
 * job code, scripts, retry policies, the Lua module). A value outside its
 * range, and NaN, infinities and fractions where a whole number is meant,
 * are refused with PAWL_EINVAL and a message naming the value and the
 * range; nothing is clamped or rounded. The bounds keep every sum of times
 * (now + delay, now + lease, the claim rank priority x boost - run_at) far
 * inside 64 bits: times are at most PAWL_TIME_MAX_MS and durations at most
 * a few years, so no addition can overflow. */
/* Priorities: higher runs first. */
#define PAWL_PRIORITY_MIN (-1000000)
#define PAWL_PRIORITY_MAX 1000000
/* Age boost interval (pawl_options_t.age_boost_ms): 0..30 days. */
#define PAWL_AGE_BOOST_MAX_MS (INT64_C(30) * 24 * 3600 * 1000)
/* Latest time a job may be due at: 9999-12-31T23:59:59.999Z. */
#define PAWL_TIME_MAX_MS INT64_C(253402300799999)
/* Longest delay: of an enqueue, a snooze, or a retry policy's answer
 * (ten years of 365 days). */
#define PAWL_DELAY_MAX_MS (INT64_C(3650) * 24 * 3600 * 1000)
/* max_attempts: 1..PAWL_ATTEMPTS_MAX when given (0: not given). */
#define PAWL_ATTEMPTS_MAX 10000
/* max_attempts of a job when neither the enqueue nor its script (nor
 * _defaults.lua) sets one. */
#define PAWL_DEFAULT_MAX_ATTEMPTS 25
/* A job's timeout: 1..PAWL_TIMEOUT_MAX_S seconds (0: none given). */
#define PAWL_TIMEOUT_MAX_S 86400

/* A job's heap ceiling (pawl_host_opts_t.job_memory, a script's `memory`):
 * how many bytes its worker's Lua state may hold above its resting size
 * while the job runs; PAWL_JOB_MEMORY_MIN..PAWL_JOB_MEMORY_MAX, 256 MiB
 * when nothing sets one. */
#define PAWL_JOB_MEMORY_MIN (INT64_C(1) << 20)
#define PAWL_JOB_MEMORY_MAX (INT64_C(64) << 30)
#define PAWL_JOB_MEMORY_DEFAULT (INT64_C(256) << 20)
/* Leases (pawl_options_t.lease_ms, pawl_claim_opts_t.lease_ms) and lock
 * TTLs: at most a day. */
#define PAWL_LEASE_MAX_MS (INT64_C(86400) * 1000)

/* Names (a job's type, queues, tags): 1..200 bytes of text without
 * control characters. JSON (payloads, params, results, log fields): valid
 * UTF-8, nested at most 512 deep (the policy every backend stores alike);
 * the enqueue refuses anything else. */
typedef struct pawl_enqueue_opts {
  const char *queue;          /* NULL: "default" */
  int32_t priority;           /* default 0; higher runs first; within
                                 PAWL_PRIORITY_MIN..PAWL_PRIORITY_MAX */
  int64_t run_at;             /* 0: now (plus delay_ms); else
                                 0..PAWL_TIME_MAX_MS */
  int64_t delay_ms;           /* used when run_at == 0;
                                 0..PAWL_DELAY_MAX_MS, and now + delay
                                 at most PAWL_TIME_MAX_MS */
  /* Where and when the job runs is decided here, at enqueue: queue,
   * priority, run_at. How it runs is the script's, decided when it runs,
   * unless set here: max_attempts and timeout_s left 0 take the script's
   * values on the worker that runs the job, whoever enqueued it. */
  int32_t max_attempts;       /* 0: the script's, else _defaults.lua's,
                                 else PAWL_DEFAULT_MAX_ATTEMPTS; else
                                 1..PAWL_ATTEMPTS_MAX */
  int32_t timeout_s;          /* 0: the script's, else the host's default;
                                 else 1..PAWL_TIMEOUT_MAX_S */
  const char *params;         /* JSON or NULL */
  const char *const *tags;    /* ntags names */
  size_t ntags;
  const char *idempotency_key; /* unique forever; NULL or not empty */
  const char *business_key;    /* unique among live jobs; NULL or not
                                  empty */
  int return_existing;         /* 1: a live business key returns its holder */
  const char *correlation_id;
  const char *enqueued_by;     /* NULL: the handle's principal */
  int blocked;                 /* 1: start in `blocked` instead of `pending` */
  /* Per-key ordering: jobs with the same key run one at a time, in
   * enqueue order, across every node, while jobs with other keys (or none)
   * run in parallel. A job with a key is claimed only when no job with its
   * key is running and no job with its key enqueued before it is still
   * waiting in line (pending, blocked, or paused from pending; one waiting
   * out a retry of a type with ordering = "skip_failed" lets it pass).
   * Enforced by the claim, in the database (docs/scheduling.md "Per-key ordering").
   * NULL: none; else 1..200 bytes without control characters. A job
   * script's `ordering_key` is applied by enqueues that have the script
   * (pawl.enqueue in job code, the CLI, the Lua module's db:enqueue of
   * types defined with db:define); this is what is stored. */
  const char *ordering_key;
  /* Resource limits: the resource the job holds a permit of
   * while it runs (pawl_limit_set()), or NULL for none. A name (as for
   * queues: 1..200 bytes, no control characters) that does not begin
   * with "queue:" (that prefix names a queue's limit). */
  const char *resource;
  /* Signals (docs/flows.md "Signals and replace"): the job starts
   * `blocked` and waits until pawl_signal() delivers a decision for this
   * key (then it runs, and reads the decision as job.signal), or until
   * signal_timeout_ms passes (then it fails: "wait timed out"). A key is
   * unique among live jobs: an enqueue with a key a live job holds is
   * refused (PAWL_EKEY). NULL: none; else 1..200 bytes without control
   * characters. */
  const char *signal;
  int64_t signal_timeout_ms;   /* with signal: 0 waits for ever; else
                                  1..PAWL_DELAY_MAX_MS */
  /* Dependencies (docs/flows.md "Dependencies and chains"): the job waits in
   * `blocked` until every job of `after` (nafter ids of jobs that exist:
   * PAWL_ENOTFOUND names one that does not; at most PAWL_AFTER_MAX, no
   * id twice) has ended (succeeded, failed or canceled), then becomes
   * pending if each ended as `when` asks, else it is canceled, with the
   * reason, and so are its own dependents that needed it to succeed.
   * when: NULL or "success" (the parent succeeded), "failure" (it
   * failed), "done" (any end), "branch:NAME" (it succeeded and its
   * script's branch NAME fired; NAME 1..200 bytes without control
   * characters). A when without after is refused. Borrowed. */
  const pawl_id_t *after;
  size_t nafter;
  const char *when;
  /* Job instances: the names of the payload's fields
   * that identify a run of this type (a script's `identity`, applied by
   * the enqueuers that have the script, as ordering_key is). The job of
   * (type, those fields' values) is one instance: while one has
   * succeeded, an enqueue fails with PAWL_EDONE; while one is dead
   * (failed, not paused), the enqueue restarts it (a manual retry: its
   * steps that completed are skipped) and returns its id with
   * PAWL_ENQ_RESTARTED; while one is live, it returns its id with
   * PAWL_ENQ_EXISTING; a canceled or deleted one gives the instance up.
   * Nothing else of the enqueue (payload, options) changes a job found.
   * Each field must be in the payload (a JSON object); 1..16 names, each
   * a name (1..200 bytes, no control characters). Only with a single job
   * per call (pawl_enqueue, or pawl_enqueue_many with n == 1). NULL: none. */
  const char *const *identity;
  size_t nidentity;
  /* The generation of the job in a line of jobs enqueued by jobs
   * (docs/security.md, "What job code may write"): 0 for a job an
   * operator, a program or SQL enqueues; job code's enqueues set their
   * job's depth + 1, and its script's max_depth bounds it. 0..PAWL_DEPTH_MAX. */
  int32_t depth;
} pawl_enqueue_opts_t;

#define PAWL_AFTER_MAX 100000

/* ---- what one enqueue or one job may write ----------------------------
 * (docs/security.md, "What job code may write"). The sizes hold for every
 * enqueuer and every job's output alike, checked here, at the API, so the
 * CLI, the C API, the Lua module and job code all meet them: bytes of
 * JSON text for a payload, params, a signal's payload and a job's result
 * or branches; of text for a log line's message and its fields. A job
 * whose result is over the cap fails with the error (it is data). */
#define PAWL_PAYLOAD_MAX (16 * 1024 * 1024)
#define PAWL_LOG_MESSAGE_MAX (64 * 1024)
#define PAWL_LOG_FIELDS_MAX (64 * 1024)

/* Job code's fan-out (the script fields max_children, max_batch,
 * max_depth; docs/security.md): the defaults and the hard bounds a script
 * or _defaults.lua may set them within. max_children: jobs one attempt of
 * a job may enqueue (pawl.enqueue, pawl.chain, pawl.batch with its
 * callbacks); max_batch: jobs one pawl.batch or pawl.chain call may
 * enqueue (each call is one transaction, so this bounds how long job code
 * holds the database's write lock); max_depth: how deep a line of jobs
 * enqueued by jobs may go (a job at depth max_depth enqueues nothing). */
#define PAWL_CHILDREN_DEFAULT 1000
#define PAWL_CHILDREN_MAX 100000
#define PAWL_FANOUT_BATCH_DEFAULT 1000
#define PAWL_FANOUT_BATCH_MAX 10000
#define PAWL_DEPTH_DEFAULT 100
#define PAWL_DEPTH_MAX 10000

PAWL_EXTERN void pawl_enqueue_opts_init(pawl_enqueue_opts_t *o);

/* Result of an enqueue. */
#define PAWL_ENQ_NEW 0
#define PAWL_ENQ_DUPLICATE 1 /* idempotency key seen before: its job's id */
#define PAWL_ENQ_EXISTING 2  /* business key live: the holder's id; or the
                                live job of the same instance (identity) */
#define PAWL_ENQ_RESTARTED 3 /* identity: the dead job of the same
                                instance was restarted: its id */

/* Enqueues a job of `type` with a JSON payload (NULL: "{}"). All pointers are
 * borrowed. On success writes the id (new or existing) into *out_id and one
 * of PAWL_ENQ_* into *out_status (either may be NULL). A business key held by
 * a live job fails with PAWL_EKEY unless opts->return_existing. */
PAWL_EXTERN int pawl_enqueue(pawl_t *p, const char *type, const char *payload,
                 const pawl_enqueue_opts_t *opts, pawl_id_t *out_id,
                 int *out_status);

/* One job of a batch for pawl_enqueue_many(). All pointers borrowed;
 * opts may be NULL for the defaults. */
typedef struct pawl_enqueue_item {
  const char *type;
  const char *payload;
  const pawl_enqueue_opts_t *opts;
} pawl_enqueue_item_t;

/* Enqueues `n` jobs (0: nothing) in one transaction: all or nothing. ids[i] and
 * statuses[i] (arrays of n, either may be NULL) are filled as by
 * pawl_enqueue(). Input is checked before anything is written; the message
 * of a refused job names its position ("job 3: ..."). */
PAWL_EXTERN int pawl_enqueue_many(pawl_t *p, const pawl_enqueue_item_t *items, size_t n,
                      pawl_id_t *ids, int *statuses);

/* ---- batches (docs/flows.md "Batches") ------------------------------- */

/* A batch: jobs (its children) enqueued in one call, with callbacks that
 * are enqueued once, when the last child ends. A child ends when it
 * reaches succeeded, failed (dead) or canceled; one waiting for a retry
 * has not. on_success fires when every child succeeded, on_failure when at
 * least one failed, on_complete always (so a batch with canceled children
 * and no failed ones fires on_complete only). A fired callback is a new
 * pending job; its params are {"batch": ID, "callback": "on_success" ...,
 * "total", "succeeded", "failed", "canceled"}. Every node counts the
 * children it ends in the same transaction, and the database fires the
 * callbacks in the one that completes the count: exactly once, also when
 * children end on several nodes at the same instant. A manual retry of a
 * failed child takes it off the counters (it has not ended), but
 * callbacks that fired stay fired. */

/* Most children one batch may have. */
#define PAWL_BATCH_MAX 1000000

/* Roles of a job in a batch (pawl_job_batch()). */
#define PAWL_BATCH_CHILD 0
#define PAWL_BATCH_ON_SUCCESS 1
#define PAWL_BATCH_ON_FAILURE 2
#define PAWL_BATCH_ON_COMPLETE 3

/* "child", "on_success", "on_failure", "on_complete"; "?" otherwise.
 * Static. */
PAWL_EXTERN const char *pawl_batch_role_name(int role);

typedef struct pawl_batch_opts {
  /* The callbacks, each NULL for none; borrowed for the call. type and
   * payload as for pawl_enqueue(); of the options, queue, priority,
   * max_attempts, timeout_s, tags, correlation_id and enqueued_by are
   * taken; params (pawl sets them), keys, run_at, delay_ms and blocked
   * are refused (PAWL_EINVAL). */
  const pawl_enqueue_item_t *on_success;
  const pawl_enqueue_item_t *on_failure;
  const pawl_enqueue_item_t *on_complete;
  const char *enqueued_by;    /* of the batch; NULL: the handle's principal */
  /* The batch's identity: NULL for none; else 1..400 bytes of text.
   * When a batch with this key exists, nothing is written: *batch_id and
   * ids[] receive the existing batch's id and its children's ids (in the
   * order they were given), and *status PAWL_ENQ_DUPLICATE; a batch with
   * another number of children is refused (PAWL_ECONFLICT, naming both).
   * Job code's pawl.batch sets one (its job's id and the ordinal of the
   * call), so that a rerun after a crash finds the batch it made. */
  const char *key;
  int *status;                /* NULL, or receives PAWL_ENQ_NEW/_DUPLICATE */
} pawl_batch_opts_t;

PAWL_EXTERN void pawl_batch_opts_init(pawl_batch_opts_t *o);

/* Enqueues a batch of n children (1..PAWL_BATCH_MAX) with its callbacks,
 * all or nothing, in one transaction: the children through the bulk path
 * (PostgreSQL: one COPY). Children take the options of pawl_enqueue()
 * but no keys (idempotency, business, ordering: PAWL_EINVAL) and not
 * `blocked`. Input is checked before anything is written; the message of
 * a refused child names its position ("job 3: ..."), of a refused
 * callback its role. On success *batch_id (may be NULL) receives the
 * batch's id and ids[i] (n ids, may be NULL) each child's. `opts` may be
 * NULL (no callbacks). All pointers are borrowed. Memory: the call holds
 * about 250 bytes per child besides the caller's strings. */
PAWL_EXTERN int pawl_batch_enqueue(pawl_t *p, const pawl_enqueue_item_t *jobs,
                                   size_t n, const pawl_batch_opts_t *opts,
                                   pawl_id_t *batch_id, pawl_id_t *ids);

/* A callback of a batch. */
typedef struct pawl_batch_callback {
  int set;             /* 0: the batch has none in this role */
  pawl_id_t id;        /* the id its job has once fired */
  int64_t fired_at;    /* 0: not fired (yet, or ever) */
} pawl_batch_callback_t;

/* A batch's progress. Metrics, in ms:
 *   wall_ms      from the enqueue to the end of the last child (or to now
 *                while children are left);
 *   exec_ms      the children's attempts' run times summed (every attempt
 *                that ran: succeeded, failed, retried, lost, canceled);
 *   overhead_ms  of the children that ended, the sum of their lifetimes
 *                (enqueue to end) less their attempts' run times: the time
 *                they spent waiting for a worker, backing off between
 *                attempts, and being handed between nodes;
 * and exec_ms / wall_ms is the parallelism the batch had. */
typedef struct pawl_batch {
  pawl_id_t id;
  int64_t total;
  int64_t succeeded, failed, canceled; /* children that ended so */
  int64_t states[PAWL_STATE_COUNT];   /* children per current state */
  int64_t created_at;
  int64_t finished_at;                /* 0 while children are left */
  int64_t wall_ms, exec_ms, overhead_ms;
  pawl_batch_callback_t callbacks[3]; /* by role - 1 */
} pawl_batch_t;

/* Reads batch `id` into *out (caller's; nothing to free). PAWL_ENOTFOUND
 * for no such batch. Reads every child's row: a batch of 100,000 takes a
 * moment. */
PAWL_EXTERN int pawl_batch_get(pawl_t *p, const pawl_id_t *id,
                               pawl_batch_t *out);

/* The batch job `id` belongs to: *role (may be NULL) is PAWL_BATCH_CHILD
 * or a callback's role, *batch_id (may be NULL) the batch. PAWL_ENOTFOUND
 * when it belongs to none (or there is no such job). */
PAWL_EXTERN int pawl_job_batch(pawl_t *p, const pawl_id_t *id,
                               pawl_id_t *batch_id, int *role);
/* Enqueues `n` jobs (1..PAWL_AFTER_MAX) as a chain, in one transaction,
 * as pawl_enqueue_many() does: each after the first waits in `blocked`
 * for the one before it to succeed (besides its own opts->after, on its
 * own opts->when), so they run one after the other; a step that fails or
 * is canceled cancels the steps after it. */
PAWL_EXTERN int pawl_chain(pawl_t *p, const pawl_enqueue_item_t *items,
                           size_t n, pawl_id_t *ids, int *statuses);

/* One edge of a job's dependencies (pawl_deps_list()). */
typedef struct pawl_dep {
  int parent;          /* 1: `id` is a parent of the job asked about; 0:
                          one of its children */
  pawl_id_t id;
  const char *type;
  int state;           /* its pawl_state_t now */
  const char *when;    /* the child's condition on the parent */
} pawl_dep_t;

/* Called for each edge; the strings are borrowed for the call. Return
 * non-zero to stop. */
typedef int (*pawl_dep_cb)(const pawl_dep_t *dep, void *data);

/* The parents of job `id` (oldest first), then its children (oldest
 * first), with their states now. A job without any: no call, 0. The
 * edges are read before the first call (the callback may call anything
 * on `p` but pawl_close()). */
PAWL_EXTERN int pawl_deps_list(pawl_t *p, const pawl_id_t *id,
                               pawl_dep_cb cb, void *data);

/* ---- reading ------------------------------------------------------------ */

/* On success *out owns a copy of the job (pawl_job_free()). */
PAWL_EXTERN int pawl_get(pawl_t *p, const pawl_id_t *id, pawl_job_t **out);

typedef struct pawl_filter {
  int state;          /* a pawl_state_t, or -1 for any */
  const char *queue;  /* NULL: any */
  const char *type;   /* NULL: any */
  int limit;          /* 0: 100 (pawl_bulk(): 0 is every matching job);
                         else 1..INT_MAX (pawl_jobs() reads the jobs before
                         the first callback: memory grows with it) */
  /* Added for the admin API; pawl_filter_init() clears them. */
  const char *tag;    /* NULL: any; else jobs enqueued with this tag */
  int64_t older_than_ms; /* 0: any; else jobs that finished (or, not
                            finished, were created) longer ago than this,
                            at most PAWL_DELAY_MAX_MS */
} pawl_filter_t;

PAWL_EXTERN void pawl_filter_init(pawl_filter_t *f);

/* Called for each job, newest first. The job is borrowed for the call only.
 * Return non-zero to stop early.
 * Threads: called on the thread that called pawl_list(), before it
 * returns. It may call any function on the handle but pawl_close() (see
 * pawl_list()), and any function on other handles. */
typedef int (*pawl_job_cb)(const pawl_job_t *job, void *data);

/* Calls cb for each job matching `f` (NULL: every job, at most 100). The
 * matching jobs (at most f->limit) are read before the first call, on
 * every backend, so the callback may call any function on `p` (pawl_list
 * again, pawl_get, pawl_cancel and the other actions, pawl_enqueue): what
 * it changes does not change the walk, which shows each job once, as it
 * was when pawl_list started. It must not close `p`.
 * The jobs read take memory up to the limit. A callback's own error is its
 * to report: pawl_list returns 0 when the callback stops the walk. */
PAWL_EXTERN int pawl_list(pawl_t *p, const pawl_filter_t *f, pawl_job_cb cb, void *data);

/* ---- operator actions --------------------------------------------------- */

/* Each is a compare-and-set on the job's state and version, written with a
 * history event naming `reason` and the handle's principal. Repeating an
 * action the job already took (canceling a canceled job) is not an error:
 * it changes nothing and returns 0. An action not allowed from the job's
 * state fails with PAWL_ESTATE. If `out` is not NULL it receives the job as
 * it now is (pawl_job_free()). `reason` may be NULL.
 *
 *   cancel: pending, running, blocked, paused -> canceled
 *   pause:  pending, failed -> paused (remembering which)
 *   resume: paused -> the state it came from
 *   retry:  failed -> pending (attempts reset, error cleared, due now);
 *           in the same transaction the children its failure canceled
 *           (not those an operator canceled) go back to blocked, waiting
 *           for it again, and theirs in turn (docs/flows.md "Dependencies and
 *           chains") */
PAWL_EXTERN int pawl_cancel(pawl_t *p, const pawl_id_t *id, const char *reason,
                pawl_job_t **out);
PAWL_EXTERN int pawl_pause(pawl_t *p, const pawl_id_t *id, const char *reason,
               pawl_job_t **out);
PAWL_EXTERN int pawl_resume(pawl_t *p, const pawl_id_t *id, const char *reason,
                pawl_job_t **out);
PAWL_EXTERN int pawl_retry(pawl_t *p, const pawl_id_t *id, const char *reason,
               pawl_job_t **out);

/* ---- signals and replace ----------------------------------------------- */

/* Where a job's signal stands. */
#define PAWL_SIGNAL_WAITING 0   /* no decision yet: the job is blocked */
#define PAWL_SIGNAL_DELIVERED 1 /* a decision came: the job ran or runs */
#define PAWL_SIGNAL_EXPIRED 2   /* none came in time: the job failed */

/* A job's signal as stored. Strings live in the struct's own allocation
 * (pawl_signal_free()); decision, payload and delivered_by are NULL and
 * delivered_at 0 until a decision is delivered; timeout_at 0: none. */
typedef struct pawl_signal_info {
  pawl_id_t job;
  char *key;
  int state;                /* PAWL_SIGNAL_* */
  int64_t created_at;
  int64_t timeout_at;
  char *decision;           /* "approve" or "reject" */
  char *payload;            /* JSON */
  int64_t delivered_at;
  char *delivered_by;       /* the deliverer's principal */
} pawl_signal_info_t;

/* What pawl_signal() did. */
#define PAWL_SIG_DELIVERED 0 /* the decision was recorded; the job is
                                pending now */
#define PAWL_SIG_ALREADY 1   /* a decision was delivered before: nothing
                                changed (pawl_signal_get() shows it) */

/* Delivers `decision` ("approve" or "reject") with a JSON `payload`
 * (NULL: "{}") to the live job that waits for signal `key`: in one
 * transaction the decision is recorded (with the handle's principal and
 * the time) and the job goes blocked -> pending, with a history event
 * "signal KEY: DECISION". Both decisions run the job: its code reads
 * job.signal.decision and decides what a rejection means. Strings are
 * borrowed. *out_job (may be NULL) receives the job's id, *out_status
 * (may be NULL) one of PAWL_SIG_*. A key no live job holds (never given,
 * or its job finished and the key was taken over) is PAWL_ENOTFOUND; a
 * job that stopped waiting without a decision (canceled, timed out) is
 * PAWL_ESTATE; a bad decision, key or payload is PAWL_EINVAL. */
PAWL_EXTERN int pawl_signal(pawl_t *p, const char *key, const char *decision,
                            const char *payload, pawl_id_t *out_job,
                            int *out_status);

/* The signal of job `id`: on success *out is the caller's
 * (pawl_signal_free()). PAWL_ENOTFOUND when the job has none. */
PAWL_EXTERN int pawl_signal_get(pawl_t *p, const pawl_id_t *id,
                                pawl_signal_info_t **out);
PAWL_EXTERN void pawl_signal_free(pawl_signal_info_t *s);

/* Fails the jobs whose wait for a signal has run out (timeout_at <= now by
 * the handle's clock): blocked -> failed, the signal expired, in batches
 * of at most 100 per transaction until none is left. *out_n (may be NULL)
 * receives how many. A running host does it at the earliest deadline of
 * a wait (it looks for new waits at least once a second); programs that
 * drive the store themselves call it. A decision that comes after the
 * deadline is refused (pawl_signal: PAWL_ESTATE) and expires the wait
 * itself, whether or not this ran. */
PAWL_EXTERN int pawl_signal_expire(pawl_t *p, size_t *out_n);

/* What pawl_replace() changes in the replacement; everything else is the
 * old job's (type, queue, priority, payload, params, tags, max_attempts,
 * timeout, business key, correlation id, ordering key; not its
 * idempotency key, which is the old job's for ever). Pointers borrowed. */
typedef struct pawl_replace_opts {
  const char *payload;    /* NULL: the old job's */
  const char *params;     /* NULL: the old job's */
  const char *queue;      /* NULL: the old job's */
  int set_priority;       /* 1: priority below, else the old job's */
  int32_t priority;       /* PAWL_PRIORITY_MIN..PAWL_PRIORITY_MAX */
  int64_t run_at;         /* 0: now (plus delay_ms); else
                             0..PAWL_TIME_MAX_MS */
  int64_t delay_ms;       /* 0..PAWL_DELAY_MAX_MS */
  int32_t max_attempts;   /* 0: the old job's; else 1..PAWL_ATTEMPTS_MAX */
  int32_t timeout_s;      /* 0: the old job's; else 1..PAWL_TIMEOUT_MAX_S */
  const char *reason;     /* recorded on the old job's cancel; may be NULL */
} pawl_replace_opts_t;

PAWL_EXTERN void pawl_replace_opts_init(pawl_replace_opts_t *o);

/* Replaces job `id` with a new job (its fields with o's changes, `o` may
 * be NULL), in one transaction: the replacement is enqueued, a live old
 * job (pending, blocked, paused, running) is canceled ("replaced by NEW"),
 * and the two are linked both ways (pawl_replace_links()). The
 * replacement takes over the old job's business key, and, when the old
 * job waited for a signal, its wait (the key and the same timeout). A
 * running old job is canceled as pawl_cancel() cancels one: its attempt
 * ends, its code sees ctx:canceled() become true and should return; its
 * outcome is not stored. A failed or canceled job may be replaced too
 * ("retry with changes": it stays as it is, linked). A succeeded job is
 * refused (PAWL_ESTATE), as is one replaced before (the message names its
 * replacement); no such job is PAWL_ENOTFOUND; bad options PAWL_EINVAL;
 * a job that changes between the read and the write (a claim, a pause) is
 * read again and everything decided anew; one that kept changing through
 * five reads is PAWL_ECONFLICT (try again). *out_new (may be NULL)
 * receives the replacement's id. */
PAWL_EXTERN int pawl_replace(pawl_t *p, const pawl_id_t *id,
                             const pawl_replace_opts_t *o, pawl_id_t *out_new);

/* The replacement links of job `id`. */
typedef struct pawl_replace_links {
  int has_superseded_by;
  pawl_id_t superseded_by;  /* the job that replaced it */
  int has_supersedes;
  pawl_id_t supersedes;     /* the job it replaced */
} pawl_replace_links_t;

/* Fills *out (zeroed when there are none). PAWL_ENOTFOUND: no such job. */
PAWL_EXTERN int pawl_replace_links(pawl_t *p, const pawl_id_t *id,
                                   pawl_replace_links_t *out);

/* ---- running jobs yourself ---------------------------------------------- */

typedef struct pawl_claim_opts {
  const char *const *queues; /* nqueues names; 0 = every queue */
  size_t nqueues;
  int64_t lease_ms;          /* 0: the handle's lease; at most
                                PAWL_LEASE_MAX_MS */
  /* 0: the claimed jobs start now (a program that runs what it claims):
   * the starts that matter are recorded by the claim (see pawl_recover()).
   * 1: they may wait in the caller's queue (a prefetch): call pawl_begin()
   * on each just before running it (or write a PAWL_OUT_STARTED outcome).
   * With a prefetch, the jobs claimed ahead of a free worker (the last
   * ones of the array, past max - prefetch) are claimed, not running:
   * their started_at is 0 (NULL in the database), and pawl jobs, pawl
   * show and pawl top show them as claimed, until their start is
   * recorded. */
  int defer_start;
  /* Limits: how many of the `max` jobs are claimed ahead of a
   * free worker (a prefetch), 0..max. A job under a limit with a
   * max_running (its resource's or its queue's: pawl_limit_set()) is
   * never claimed ahead: its permit is for running now. A job under rate
   * limits alone may be: its start is counted in the window it is
   * claimed in, and it holds nothing while it waits. 0: every job claimed
   * runs now. */
  size_t prefetch;
} pawl_claim_opts_t;

/* Claims up to `max` due jobs (run_at <= now) in one transaction, in order
 * of priority (with the age boost), then run_at, then id, and leases them to
 * this node. On success *out_jobs is an array of *out_n jobs owned by the
 * caller (pawl_jobs_free()); it is NULL when nothing was due. `opts` may be
 * NULL. max: 0 claims nothing; room for `max` jobs may be allocated up
 * front, so ask for what you will run (the worker host asks for at most
 * 1000 at a time). */
PAWL_EXTERN int pawl_claim(pawl_t *p, const pawl_claim_opts_t *opts, size_t max,
               pawl_job_t ***out_jobs, size_t *out_n);

typedef enum pawl_outcome_kind {
  PAWL_OUT_SUCCEEDED, /* running -> succeeded, with `result` */
  PAWL_OUT_FAILED,    /* running -> failed (dead-letter), with `error` */
  PAWL_OUT_RETRY,     /* running -> pending at `run_at`, with `error` */
  PAWL_OUT_SNOOZE,    /* running -> pending at `run_at`; the attempt is not
                         counted */
  PAWL_OUT_RELEASE,   /* running -> pending in its old place in line (its
                         run_at kept: it never ran), attempt not counted:
                         the node is stopping, or it hands back a job it
                         claimed ahead; `error` (may be NULL: "node
                         stopping") says why in the history event */
  PAWL_OUT_STARTED    /* not an end: the body of a job claimed ahead
                         started at `started_at` (required), so the job
                         shows as running from then on, not as claimed
                         (what pawl_begin() records, written with other
                         outcomes in one transaction). The job stays
                         running; PAWL_ELEASE if it is not held. */
} pawl_outcome_kind_t;

/* A log line written by job code (ctx:log). Pointers are borrowed. */
typedef struct pawl_log_entry {
  int64_t at;          /* >= 0; 0: the time of the finish */
  const char *level;   /* "debug", "info", "warn", "error" */
  const char *message;
  const char *fields;  /* JSON object or NULL */
} pawl_log_entry_t;

/* One finished attempt. Pointers are borrowed. */
typedef struct pawl_outcome {
  pawl_id_t id;
  int32_t attempt;     /* the attempt being finished, as claimed */
  pawl_outcome_kind_t kind; /* one of PAWL_OUT_* */
  const char *result;  /* SUCCEEDED: JSON or NULL */
  const char *error;   /* FAILED, RETRY: sanitized error text */
  int64_t run_at;      /* RETRY, SNOOZE: when to run again,
                          0..PAWL_TIME_MAX_MS */
  /* The claimed job's store_key, or 0: lets the store find the row without
   * its id index and write a batch of successes in one statement. */
  int64_t store_key;
  /* The attempt's log lines, stored in the same transaction (also when the
   * outcome itself is refused as stale: the lines were written). */
  const pawl_log_entry_t *logs;
  size_t nlogs;
  /* RETRY of a job with an ordering key: 1 lets the later jobs of its key
   * run while it waits for its retry (its type's ordering =
   * "skip_failed"); once due it goes first again. 0 (the default): it
   * keeps its place, and the later jobs of its key wait for it. Ignored
   * for other kinds and for jobs without a key. */
  int ordering_skip;
  /* SUCCEEDED: the branch names that fired (the script's `branches`
   * predicates on the result), a JSON array of strings, or NULL for none:
   * children enqueued with when = "branch:NAME" run if NAME is in it. */
  const char *branches;
  /* When the attempt's body started and when it returned, by the handle's
   * clock (pawl_now()), as measured by whoever ran it; 0: not measured.
   * They are what the attempt's run time is (pawl_attempt_t, a batch's
   * exec_ms): started_at replaces the time of the claim (the time from
   * the claim to it counts as queue wait), ended_at the time of the
   * finish. The store keeps them within the claim and the finish: a
   * start before the claim is the claim's time, an end after the finish
   * the finish's. 0..PAWL_TIME_MAX_MS; ended_at, when both are given, not
   * before started_at. */
  int64_t started_at;
  int64_t ended_at;
  /* FAILED, RETRY: the Lua traceback of the error (sanitized), kept apart
   * from `error` (the message alone) in the attempt's row; NULL for none. */
  const char *trace;
} pawl_outcome_t;

/* Writes `n` outcomes in one transaction (group commit), each with its
 * history. An outcome whose job this node no longer holds under that
 * attempt (canceled, recovered by another node) is skipped: its entry in
 * `rcs` (if not NULL, n ints) is PAWL_ELEASE, else 0. Returns 0 unless the
 * transaction itself failed, in which case nothing was written. */
PAWL_EXTERN int pawl_finish(pawl_t *p, const pawl_outcome_t *outs, size_t n, int *rcs);

/* Extends the leases of every job this node holds, in one statement.
 * *out_n (may be NULL) receives how many. It never waits for a lock: a
 * job whose row another transaction is writing (its outcome being stored,
 * say) is passed over, and its lease is extended by the next heartbeat.
 * A lease that has already run out is not extended: any node's lease
 * recovery may take that job back (pawl_recover()), and beating every
 * third of a lease, as `pawl run` does, a node's leases do not run out
 * unless it lost the database for two beats. */
PAWL_EXTERN int pawl_heartbeat(pawl_t *p, size_t *out_n);

/* Takes back jobs whose lease expired (their node died, or lost the
 * database): each goes back to pending with its attempt used up and
 * recorded as lost, or to failed when that was its last attempt. A job
 * lost while running more than 3 times fails as a poison job (it keeps
 * killing its node), and only losses of attempts known to have started
 * count for that: the jobs a dying node had claimed ahead, beside the one
 * that killed it, are not blamed. A start is known when it was recorded,
 * which happens only for a job recovered before (to spare a write per
 * job): by pawl_claim() without defer_start, or by pawl_begin(). So a
 * job's first loss never counts, even if it was running, and a poison job
 * is caught one run later; an innocent one never. *out_n (may be NULL)
 * receives how many. */
PAWL_EXTERN int pawl_recover(pawl_t *p, size_t *out_n);

/* Call just before running a job claimed with defer_start (borrowed; its
 * id, attempt, started_at and recoveries are read). For a job that was
 * not claimed ahead (started_at set) and never recovered before (nearly
 * all jobs when workers are free) it does nothing and returns 0; for one
 * claimed ahead (started_at 0), it records that its body starts now, so
 * that it shows as running instead of claimed, and for one recovered
 * before, that this attempt started (for the poison count): one write.
 * It returns PAWL_ELEASE if the attempt is no longer held (do not run
 * it), or a database error (do not run it: hand it back with a
 * PAWL_OUT_RELEASE outcome, or let its lease expire). */
PAWL_EXTERN int pawl_begin(pawl_t *p, const pawl_job_t *job);

/* Records progress of an attempt this node holds (ctx:progress): done and
 * total finite and not negative (total 0: unknown). Not a transition: the
 * version does not change. PAWL_ELEASE if the attempt is no longer ours. */
PAWL_EXTERN int pawl_progress(pawl_t *p, const pawl_id_t *id, int32_t attempt,
                              double done, double total);

/* Extends the lease of one attempt this node holds (ctx:heartbeat). *held
 * (may be NULL) is 1 if it still was ours, else 0. */
/* Distributed locks, shared by every node on the database: at most one
 * owner holds `name` at a time, until it releases it or `ttl_ms` passes
 * (so a dead owner never blocks the others for longer). `owner` names the
 * holder: give each holder its own (two holders with one name share the
 * lock). Strings are borrowed for the call; name and owner are 1..200
 * bytes of UTF-8 without control characters, ttl_ms 1..PAWL_LEASE_MAX_MS.
 * Names beginning with "pawl." (in any case, after spaces) are the host's
 * own (its lease recovery, recurring and retention chores): refused with
 * PAWL_EINVAL, so that no caller can hold one and stop those chores;
 * pawl_locks() still lists them.
 *
 * pawl_lock_acquire: *got = 1 if the lock is now ours (it was free,
 * expired, or already ours: then its TTL starts again), else 0.
 * pawl_lock_extend: *held = 1 if we still held it and its TTL starts
 * again, else 0 (it expired and someone else may hold it).
 * pawl_lock_release: releases it if we hold it; no error if we do not. */
PAWL_EXTERN int pawl_lock_acquire(pawl_t *p, const char *name,
                                  const char *owner, int64_t ttl_ms, int *got);
PAWL_EXTERN int pawl_lock_extend(pawl_t *p, const char *name,
                                 const char *owner, int64_t ttl_ms, int *held);
PAWL_EXTERN int pawl_lock_release(pawl_t *p, const char *name,
                                  const char *owner);

PAWL_EXTERN int pawl_extend(pawl_t *p, const pawl_id_t *id, int32_t attempt,
                            int *held);

/* The earliest run_at among pending jobs (in opts' queues, if given), or
 * 0 in *run_at when none is pending. Lets a poller sleep until then. */
PAWL_EXTERN int pawl_next_due(pawl_t *p, const pawl_claim_opts_t *opts,
                              int64_t *run_at);

/* ---- history ------------------------------------------------------------ */

typedef struct pawl_attempt {
  int32_t attempt;
  char *node;
  int64_t scheduled_at; /* run_at it was due at: queue wait = started - this */
  int64_t started_at;
  int64_t ended_at;     /* 0 while running */
  char *outcome;        /* "succeeded", "failed", "retry", "snoozed",
                           "released", "lost", "canceled", "running",
                           "claimed" (running, claimed ahead of a free
                           worker: started_at 0 until its body starts) */
  char *error;          /* sanitized, or NULL: the message alone */
  char *trace;          /* its Lua traceback (sanitized), or NULL */
} pawl_attempt_t;

typedef struct pawl_event {
  int64_t at;
  int from_state;       /* -1 for the enqueue event */
  int to_state;
  char *actor;
  char *reason;
  int32_t attempt;
} pawl_event_t;

typedef struct pawl_history {
  pawl_attempt_t *attempts; /* oldest first */
  size_t nattempts;
  pawl_event_t *events;     /* oldest first */
  size_t nevents;
} pawl_history_t;

/* Every attempt and every transition of a job. On success *out is owned by
 * the caller: free with pawl_history_free(). */
PAWL_EXTERN int pawl_history(pawl_t *p, const pawl_id_t *id, pawl_history_t **out);
PAWL_EXTERN void pawl_history_free(pawl_history_t *h);

/* ---- logs -------------------------------------------------------------- */

typedef struct pawl_log_record {
  int32_t attempt;
  int64_t at;
  char *level;
  char *message;
  char *fields;        /* JSON object or NULL */
} pawl_log_record_t;

/* A job's stored log lines, oldest first. On success *out (NULL when there
 * are none) holds *n records owned by the caller: pawl_logs_free(). */
PAWL_EXTERN int pawl_logs(pawl_t *p, const pawl_id_t *id,
                          pawl_log_record_t **out, size_t *n);
PAWL_EXTERN void pawl_logs_free(pawl_log_record_t *logs, size_t n);

/* ---- restartable steps -------------------------------------------------- */

/* A script may run as named steps (docs/flows.md "Restartable steps"). Each
 * execution of a step is a row: the worker running an attempt writes it
 * (pawl_step_begin, pawl_step_save at each ctx:checkpoint, pawl_step_end),
 * each write guarded by the attempt's lease like pawl_progress
 * (PAWL_ELEASE when this node no longer holds the attempt). A later
 * attempt skips the steps that completed and starts the first other one
 * with its last checkpoint. */
#define PAWL_STEP_RUNNING 0
#define PAWL_STEP_COMPLETED 1
#define PAWL_STEP_FAILED 2
#define PAWL_STEP_STOPPED 3   /* snoozed, or released when the host stopped */
/* The counters of ctx:count, in this order. */
#define PAWL_STEP_READ 0
#define PAWL_STEP_WRITTEN 1
#define PAWL_STEP_FILTERED 2
#define PAWL_STEP_SKIPPED 3
#define PAWL_STEP_COMMITS 4
#define PAWL_STEP_ROLLBACKS 5
#define PAWL_STEP_NCOUNTS 6
/* Bounds: a checkpoint's JSON text, an exit code, an exit message (bytes),
 * a step's name (a name: no control characters), steps per script. */
#define PAWL_CHECKPOINT_MAX (1024 * 1024)
#define PAWL_EXIT_CODE_MAX 200
#define PAWL_EXIT_MESSAGE_MAX 2000
#define PAWL_STEPS_MAX 100

typedef struct pawl_step_exec {
  int64_t seq;          /* the row: increases with each execution */
  int32_t attempt;
  int32_t index;        /* 1-based place in the script's steps */
  char *name;
  int status;           /* PAWL_STEP_* */
  int64_t started_at;
  int64_t ended_at;     /* 0 while running */
  char *exit_code;      /* NULL: none set */
  char *exit_message;   /* NULL: none */
  int64_t counts[PAWL_STEP_NCOUNTS];
  char *checkpoint;     /* JSON text or NULL */
  int64_t checkpoint_at; /* 0: none */
} pawl_step_exec_t;

typedef struct pawl_steps {
  char *exit_code;      /* the job's (ctx:exit, the last one); NULL: none */
  char *exit_message;
  char *instance;       /* the identity key of its instance, or NULL */
  pawl_step_exec_t *execs; /* oldest first */
  size_t n;
} pawl_steps_t;

/* A job's step executions, its exit code and its instance. *out is the
 * caller's: pawl_steps_free(). PAWL_ENOTFOUND for no such job. */
PAWL_EXTERN int pawl_steps(pawl_t *p, const pawl_id_t *id, pawl_steps_t **out);
PAWL_EXTERN void pawl_steps_free(pawl_steps_t *s);

/* Begins the execution of step `index` (1..PAWL_STEPS_MAX) named `name`
 * of the attempt this node holds, with `checkpoint` (JSON text up to
 * PAWL_CHECKPOINT_MAX bytes, or NULL) as its starting context; rows of
 * the job left running by an earlier attempt are marked failed first.
 * *exec receives the row. Strings borrowed. */
PAWL_EXTERN int pawl_step_begin(pawl_t *p, const pawl_id_t *id,
                                int32_t attempt, int32_t index,
                                const char *name, const char *checkpoint,
                                int64_t *exec);
/* Stores `checkpoint` (as pawl_step_begin) and the counters (each
 * 0..2^53) in row `exec` in one statement: both or neither. */
PAWL_EXTERN int pawl_step_save(pawl_t *p, const pawl_id_t *id,
                               int32_t attempt, int64_t exec,
                               const char *checkpoint, const int64_t *counts);
/* Ends row `exec` with `status` (PAWL_STEP_COMPLETED, _FAILED,
 * _STOPPED), an exit code and message (NULL: none; at most
 * PAWL_EXIT_CODE_MAX and PAWL_EXIT_MESSAGE_MAX bytes) and the counters. */
PAWL_EXTERN int pawl_step_end(pawl_t *p, const pawl_id_t *id, int32_t attempt,
                              int64_t exec, int status, const char *exit_code,
                              const char *exit_message, const int64_t *counts);
/* Sets the exit code (1..PAWL_EXIT_CODE_MAX bytes, no control characters)
 * and message (NULL or up to PAWL_EXIT_MESSAGE_MAX bytes) of the job, for
 * the attempt this node holds (ctx:exit). */
PAWL_EXTERN int pawl_job_exit(pawl_t *p, const pawl_id_t *id, int32_t attempt,
                              const char *exit_code, const char *exit_message);

/* ---- script defaults ---------------------------------------------------- */

/* What a job script says about jobs of its type. An enqueuer routes a
 * job with queue and priority; max_attempts and timeout_s are reported for
 * information only: a job enqueued without them gets the script's when it
 * runs, so copying them into the enqueue would freeze today's values. */
typedef struct pawl_script_info {
  char queue[201];        /* "" when the script sets none */
  int has_priority;
  int32_t priority;
  int32_t max_attempts;   /* 0 when the script sets none */
  int32_t timeout_s;      /* 0 when the script sets none (rounded up) */
  /* Per-key ordering: the script's ordering_key when it is a string ("":
   * none); ordering_key_fn 1 when it is a function of the payload, which
   * an enqueuer without a Lua state cannot apply (the CLI refuses such an
   * enqueue without --ordering-key). */
  char ordering_key[201];
  int ordering_key_fn;
  char resource[201];     /* "" when the script sets none */
  /* Job instances: the script's identifying payload fields
   * (pawl_enqueue_opts_t.identity); identity_ptrs points into identity,
   * ready to be given as opts.identity. */
  char identity[16][201];
  const char *identity_ptrs[16];
  size_t nidentity;
  /* What applies to a job of the type enqueued without max_attempts or a
   * timeout: the script's, else _defaults.lua's, else the built-in ones
   * (PAWL_DEFAULT_MAX_ATTEMPTS; a timeout of 300 s, which a program
   * embedding the host may change: pawl_host_opts_t.default_timeout_s). */
  int32_t applied_max_attempts;
  int32_t applied_timeout_s;
} pawl_script_info_t;

/* Loads the script for `type` from `scripts_dir` (and _defaults.lua) the
 * way `pawl run` does and reports its settings, so that an enqueuer can
 * route a job as its script asks. Returns 0,
 * PAWL_ENOTFOUND when there is no script for the type, or PAWL_EINVAL when
 * the script is broken (errbuf says how; a top level that runs longer than
 * 10 s is broken too). The script runs on the calling thread, which takes
 * the interrupt signal (SIGURG) meanwhile, with a thread watching it. */
PAWL_EXTERN int pawl_script_info(const char *scripts_dir, const char *type,
                                 pawl_script_info_t *out, char *errbuf,
                                 size_t errlen);

/* ---- the worker host ---------------------------------------------------- */

/* Levels of the host's event log. */
#define PAWL_LOG_DEBUG 0
#define PAWL_LOG_INFO 1
#define PAWL_LOG_WARN 2
#define PAWL_LOG_ERROR 3

/* Receives each finished log line (with its newline; borrowed for the
 * call), at `level` (PAWL_LOG_*).
 * Threads: called by any thread of the host (poller, workers, completer,
 * loader, ...) and by the threads that call pawl_start(), pawl_stop() and
 * pawl_wait() on it, one call at a time: the host's logger holds a lock
 * around it, and every thread that logs waits for it. So it must return
 * quickly and call no function of pawl on the host's handles (pawl_stop()
 * from it would wait for the lock it runs under); to act on a line, hand
 * it to another thread. */
typedef void (*pawl_log_fn)(void *data, int level, const char *line);

/* ---- events: job transitions (host/runner/events.c) --------------------- */

/* What happened to a job, for a program that wants to know at once (a
 * game's progress bar, a server's metrics) without reading the history.
 * Given to pawl_host_opts_t.event_fn of pawl_start(), pawl_step_start() or
 * pawl_attach_uv().
 *
 *   ENQUEUED  a job was enqueued through the host's handle, a sibling
 *             (job code's pawl.enqueue, or one pawl_sibling() made) or
 *             the handle's step or loop thread, while the host runs (not a duplicate, not a
 *             business key's existing holder; not enqueues of other
 *             handles or processes: the database does not tell);
 *   STARTED   an attempt starts (attempt: its number), just before its
 *             code runs;
 *   SUCCEEDED the attempt's success is stored;
 *   FAILED    the attempt's failure is stored (error: as stored,
 *             sanitized); followed by RETRIED (pending again at run_at)
 *             or DEAD (failed for good: the dead-letter set);
 * Snoozes, jobs handed back at a stop, outcomes the database refused as
 * stale (the job was canceled or taken back) and lease recovery send no
 * event. For one job the events come in that order: ENQUEUED (when it
 * has one) before STARTED, before its outcome's; events of different jobs
 * come in the order they happened in this process.
 *
 * Threads: step mode and pawl_attach_uv(): on the stepping (loop) thread,
 * from within pawl_step() (the loop's callbacks); an enqueue made on
 * another thread (through a sibling) is reported at the next step. pawl_start()'s host: on
 * its completer thread (the one that writes outcomes), after the outcome
 * is stored; while it runs no outcome is written, so return quickly.
 * Calls are never concurrent. What it may call: step and loop threads,
 * any function on the handle or another, but not pawl_step(),
 * pawl_step_wait(), pawl_next_deadline(), pawl_attach_uv(),
 * pawl_detach_uv() (refused: PAWL_EMISUSE), pawl_close() (does nothing)
 * or a function that starts a host (PAWL_EBUSY); the completer thread, pawl_stop() and any function on handles of
 * its own (the host's handle belongs to the program's thread), not
 * pawl_wait() or pawl_close(). Everything in `ev` is borrowed for the
 * call. */
typedef enum pawl_event_kind {
  PAWL_EV_ENQUEUED = 0,
  PAWL_EV_STARTED = 1,
  PAWL_EV_SUCCEEDED = 2,
  PAWL_EV_FAILED = 3,
  PAWL_EV_RETRIED = 4,
  PAWL_EV_DEAD = 5
} pawl_event_kind_t;

typedef struct pawl_job_event {
  pawl_event_kind_t kind;
  pawl_id_t id;
  const char *type;
  const char *queue;
  int32_t attempt;     /* the attempt started or ended; 0: ENQUEUED */
  int64_t run_at;      /* ENQUEUED, RETRIED: when it is due; else 0 */
  const char *error;   /* FAILED, RETRIED, DEAD: as stored; else NULL */
} pawl_job_event_t;

typedef void (*pawl_event_fn)(void *data, const pawl_job_event_t *ev);

/* "enqueued", "started", "succeeded", "failed", "retried", "dead"; "?"
 * out of range. Static. */
PAWL_EXTERN const char *pawl_event_name(int kind);

/* The longest give_up_ms and flush_ms accepted: a day. */
#define PAWL_GIVE_UP_MAX_MS (INT64_C(24) * 3600 * 1000)

struct pawl_admin_opts; /* below, "the live host" */
struct pawl_metrics_opts; /* below, "the live host" */

typedef struct pawl_host_opts {
  const char *scripts_dir;   /* job scripts; NULL: "./scripts" */
  int workers;               /* worker threads, each with its own Lua state;
                                0 (or less): the number of cores; at most
                                1024 */
  const char *const *queues; /* nqueues names this node serves; 0: all */
  size_t nqueues;
  /* Per-node concurrency per queue: NULL, or nqueues numbers
   * beside `queues`. queue_concurrency[i] > 0 (at most
   * PAWL_QUEUE_CONCURRENCY_MAX) gives queues[i] that many workers of its
   * own: at most that many of its jobs run at once on this node, and they
   * never wait for a worker another queue holds. Its jobs are claimed
   * queue by queue, as many as it has free workers (no prefetch). 0: the
   * queue shares the `workers` pool with the other queues without a
   * number (as every queue does when this is NULL). The host runs the
   * sum of the numbers plus `workers` threads; `workers` (0: the number of
   * cores) counts only when some queue shares the pool: with every queue
   * numbered, a `workers` above 0 is refused (PAWL_EINVAL), and there is
   * no pool. At most 1024 threads in all. Borrowed for pawl_start()
   * (copied). Step mode (pawl_step) runs one job at a time and refuses
   * numbers here. */
  const int *queue_concurrency;
  int prefetch;              /* jobs claimed ahead of free workers, 0 or
                                more; -1 (or less): adaptive, about 10 ms
                                of work per worker by the average job's
                                time (none for jobs that take longer than
                                10 ms, at most 1000) */
  int64_t ahead_hold_ms;     /* every worker busy and no job started or
                                ended for this long: the jobs claimed ahead
                                go back to pending (their attempts not
                                counted), so that another node runs them,
                                and none is claimed ahead until a job
                                starts or ends; 0: 100; at most
                                PAWL_DELAY_MAX_MS */
  int64_t poll_ms;           /* poll interval when nothing wakes us; 0:
                                1000; at most PAWL_DELAY_MAX_MS */
  int64_t heartbeat_ms;      /* lease extension period; 0: lease / 3; at
                                most PAWL_LEASE_MAX_MS */
  int64_t grace_ms;          /* graceful stop: wait this long for running
                                jobs; 0: 30000; at most PAWL_DELAY_MAX_MS */
  int64_t reload_ms;         /* how often the scripts dir is checked; 0:
                                1000; at most PAWL_DELAY_MAX_MS */
  int64_t default_timeout_s; /* for jobs and scripts that set none; 0: 300;
                                at most PAWL_TIMEOUT_MAX_S */
  int64_t load_timeout_ms;   /* how long a script's top level may run when
                                it is loaded (a script that takes longer is
                                reported broken); 0: 10000; at most
                                PAWL_TIMEOUT_MAX_S * 1000 */
  int until_idle;            /* 1: stop once nothing is running and no job
                                is due (now or within idle_wait_ms) */
  int64_t idle_wait_ms;      /* until_idle also waits for jobs due this
                                soon (retries, snoozes), and for the leases
                                of jobs left running by a dead node that
                                expire this soon; 0: 5000, -1: none; at
                                most PAWL_DELAY_MAX_MS */
  int64_t give_up_ms;        /* until_idle: stop once claims, heartbeats
                                or outcome writes have failed in a row for
                                this long (a database that stays away),
                                with pawl_host_status() PAWL_EUNAVAIL;
                                0: 60000, -1: never; at most
                                PAWL_GIVE_UP_MAX_MS */
  int64_t flush_ms;          /* stopping: outcomes the database does not
                                take are retried until the grace period
                                plus this long has passed (after a second
                                pawl_stop(), PAWL_STOP_NOW, each gets one
                                more try), then listed in the log as not
                                stored; 0: 10000; at most
                                PAWL_GIVE_UP_MAX_MS */
  int unsafe_lua;            /* 1: job code gets the full standard library
                                (and every capability below) */
  int allow_io;              /* 1: job code may use io.open, io.lines,
                                io.read, io.write and io.type (files, stdin,
                                stdout); 0: refused, unless _defaults.lua
                                grants "io" in its `allow` list */
  int allow_env;             /* 1: job code may read the environment
                                (os.getenv); 0: refused, unless
                                _defaults.lua grants "env" */
  /* Authority over other jobs (docs/security.md): job code acts on the
   * jobs it enqueued only, unless granted (or _defaults.lua grants the
   * name in its `allow` list). 1: it may also */
  int allow_signal;          /* deliver a decision to any job (pawl.signal) */
  int allow_replace;         /* replace (and so cancel) any job */
  int allow_restart;         /* restart any dead job instance by enqueueing
                                its identity */
  /* Webhook destinations job code may post to (pawl.alert.webhook), each
   * "HOST" (its scheme's default port) or "HOST:PORT" ("[V6]:PORT" for an
   * IPv6 address); NULL/0: none, beside those _defaults.lua grants in its
   * `allow_webhook` list and those its global on_dead hook names. Borrowed
   * for pawl_start() (copied); at most 64. */
  const char *const *allow_webhook;
  size_t nallow_webhook;
  int log_level;             /* PAWL_LOG_*; default PAWL_LOG_INFO (0 is
                                DEBUG: set it explicitly) */
  int log_json;              /* 1: JSON lines instead of text */
  pawl_log_fn log_fn;        /* NULL: stderr */
  void *log_data;
  /* The signal the watchdog sends a worker thread to stop Lua code that
   * passed its timeout, or that the host stops (see docs/security.md):
   *   0 (the default): SIGURG;
   *   SIGUSR1, SIGUSR2 or a real-time signal (SIGRTMIN..SIGRTMAX): that one,
   *     for a program that uses SIGURG itself;
   *   PAWL_INTERRUPT_NONE (-1): no signal at all, no handler installed.
   *     Then nothing can stop running Lua code: a job that loops runs past
   *     its timeout until it returns (its outcome then stands), pawl.sleep
   *     sleeps its whole time, and at a stop such a worker is left behind
   *     after the grace period (its job is handed back), as one blocked in
   *     a C call is.
   * The handler is installed for the whole process when the first host
   * using the signal starts, and the disposition it replaced is put back
   * when the last one has stopped (pawl_wait() returned 0). While
   * installed, it passes every delivery that is not the watchdog's signal
   * to a worker — the signal sent to another thread, or to the process by
   * someone else — to the replaced handler (with its siginfo), or to the
   * default action (ignore for SIGURG, terminate for the others). The
   * handler is installed with SA_ONSTACK | SA_RESTART | SA_SIGINFO. Worker
   * threads unblock the signal; the host's other threads block it. A
   * program that installs its own handler for the signal while a host runs
   * replaces pawl's (timeouts then stop working) and gets it overwritten
   * when the last host stops. */
  int interrupt_signal;
  /* Job transitions as they happen (see "events" below); NULL: none.
   * event_data is passed as given. */
  pawl_event_fn event_fn;
  void *event_data;
  /* The admin console's listeners (see "the live host" below); NULL:
   * none. Borrowed for pawl_start() (copied). */
  const struct pawl_admin_opts *admin;
  /* Retention (see "retention" below): the policy by which
   * this host deletes (or archives) old finished jobs, one node at a time
   * under the lock "pawl.retention", in batches of retention->batch jobs
   * with retention->pause_ms between them, a sweep every
   * retention->every_ms. NULL: this host removes nothing (`pawl run`
   * passes the defaults unless --retain off). Borrowed for pawl_start()
   * (copied). */
  const struct pawl_retention *retention;
  /* The metrics endpoint (see pawl_metrics_opts_t below);
   * NULL: none. Borrowed for pawl_start() (copied); step mode and
   * pawl_attach_uv() refuse it (PAWL_EINVAL). */
  const struct pawl_metrics_opts *metrics;
  /* The heap ceiling of each job whose script (or _defaults.lua) sets no
   * `memory`, in bytes: 0: PAWL_JOB_MEMORY_DEFAULT; else
   * PAWL_JOB_MEMORY_MIN..PAWL_JOB_MEMORY_MAX. A job whose Lua state grows
   * past its ceiling fails with "memory limit: ..."; a script's top level
   * loads under this one. Not applied in the program's own Lua state
   * (pawl_step_start_lua()), nor with a 64-bit LuaJIT built without GC64,
   * which takes no allocator (docs/security.md, "Memory"). */
  int64_t job_memory;
} pawl_host_opts_t;

#define PAWL_INTERRUPT_NONE (-1)

PAWL_EXTERN void pawl_host_opts_init(pawl_host_opts_t *o);

/* Starts the worker host on `p`: a poller, a completer, a watchdog, a
 * script loader and o->workers worker threads, each with its own database
 * connection. The scripts are loaded by the loader once this has returned
 * (a script's top level may take up to o->load_timeout_ms); no job is
 * claimed before. Broken ones are logged and the rest serve. Strings in
 * `o` are copied. After this, `p` itself may still be used by the calling
 * thread (pawl_enqueue() wakes the host at once), or by any one thread at
 * a time; siblings (pawl_sibling()) wake it too. Threads: any thread
 * using `p`. PAWL_EBUSY when a host runs or ran on `p` (the message says
 * which), PAWL_EMISUSE for a closed handle or one bound to another
 * thread's step. */
PAWL_EXTERN int pawl_start(pawl_t *p, const pawl_host_opts_t *o);

#define PAWL_STOP_GRACEFUL 1 /* stop claiming, let running jobs finish
                                within the grace period, hand the rest back */
#define PAWL_STOP_NOW 2      /* hand every unfinished job back at once */

/* Asks the host to stop (how: PAWL_STOP_GRACEFUL, or PAWL_STOP_NOW; a
 * second call may only make it stop sooner). Safe from any thread but a
 * pawl_log_fn's; returns at once. Without a host, does nothing. */
PAWL_EXTERN void pawl_stop(pawl_t *p, int how);

/* Waits up to timeout_ms (0 or more; -1, or any negative: forever) for
 * the host to stop by itself (until_idle) or after pawl_stop(), then joins
 * its threads. Returns 0 once
 * stopped (also without a host), PAWL_EBUSY if still running at the
 * timeout. Like every function on the handle, one thread at a time. */
PAWL_EXTERN int pawl_wait(pawl_t *p, int64_t timeout_ms);

/* How the host ended, once pawl_wait() has returned 0 (before that, and
 * without a host: 0). 0: it stopped cleanly. PAWL_EUNAVAIL: it gave up
 * (until_idle: the database failed it for longer than give_up_ms).
 * Another negative code (the database's last refusal, PAWL_EUNAVAIL when
 * it was away): some outcomes could not be stored, each listed in the log
 * with its job id; those jobs stay running until their leases expire, and
 * lease recovery then takes them back. pawl_errmsg(p) says which, in one
 * line (valid until the next call on p). Call it from the thread that
 * called pawl_wait(). */
PAWL_EXTERN int pawl_host_status(pawl_t *p);

/* ---- administration (host/api/admin.c) ---------------------------------- */

/* What the admin console, the Lua module and the CLI's `stats`, `nodes`,
 * `locks` and bulk verbs are built on. Reads take no locks; bulk actions
 * are compare-and-sets like the single-job ones above. */

/* The operator actions, for the bulk functions. */
typedef enum pawl_action {
  PAWL_ACTION_CANCEL = 0, /* pending, running, blocked, paused -> canceled */
  PAWL_ACTION_PAUSE = 1,  /* pending, failed -> paused */
  PAWL_ACTION_RESUME = 2, /* paused -> the state it came from */
  PAWL_ACTION_RETRY = 3   /* failed -> pending */
} pawl_action_t;

/* "cancel", "pause", "resume", "retry"; "?" out of range. Static. */
PAWL_EXTERN const char *pawl_action_name(int action);

/* How many jobs pawl_bulk() would change now: those matching `f` (see
 * pawl_filter_t; f->limit 0 is every one, else at most f->limit) whose
 * state the action moves from. A state filter the action never moves from
 * (retry with state pending) is refused with PAWL_EINVAL, naming the
 * states it does. `f` is borrowed. */
PAWL_EXTERN int pawl_bulk_count(pawl_t *p, pawl_action_t action,
                                const pawl_filter_t *f, int64_t *n);

typedef struct pawl_bulk_result {
  int64_t changed; /* jobs moved, each with its history event */
  int64_t skipped; /* matched when read, but changed by someone else
                      before their turn (a compare-and-set that failed):
                      left as they are */
  int64_t refused; /* the move is not allowed any more: a retried or
                      resumed job whose business key another live job
                      holds now */
} pawl_bulk_result_t;

/* Applies `action` to every job pawl_bulk_count() counts (oldest first,
 * at most f->limit when it is not 0), in batches of a few hundred jobs,
 * one transaction each: the jobs of a batch are read, then each is moved
 * by a compare-and-set on the version read and recorded in its history
 * with `reason` (may be NULL) and the handle's principal, as the
 * single-job actions do. A job that changed in between is skipped, not
 * moved. On failure (a database error) the batches already written stay
 * written and *out counts them. `f` and `reason` are borrowed. */
PAWL_EXTERN int pawl_bulk(pawl_t *p, pawl_action_t action,
                          const pawl_filter_t *f, const char *reason,
                          pawl_bulk_result_t *out);

/* Counts of one queue (or of all of them). Finished means succeeded,
 * failed or canceled; finished_Nm counts finishes in whole minutes of the
 * handle's clock, from the start of the minute N minutes before the
 * current one: the last N minutes and up to one more. A finish counts
 * when it happened (a failed job retried since still counts as failed). */
typedef struct pawl_queue_stats {
  char *queue;             /* NULL in pawl_stats_t.all */
  int64_t count[PAWL_STATE_COUNT]; /* jobs by state */
  int64_t finished_1m, finished_5m, finished_15m;
  int64_t failed_1m, failed_5m, failed_15m; /* of those, failed */
  int64_t oldest_due_ms;   /* how long the oldest due pending job has been
                              waiting (now - its run_at); 0 when none */
} pawl_queue_stats_t;

typedef struct pawl_stats {
  int64_t at;                 /* the handle's clock when read */
  pawl_queue_stats_t all;     /* every queue together */
  pawl_queue_stats_t *queues; /* one per queue holding jobs or with
                                 recent throughput, by name */
  size_t nqueues;
} pawl_stats_t;

/* Counts by state and queue, throughput and queue waits, in a few
 * statements: the live counts read the pending and running jobs' indexes,
 * the throughput a table of per-minute counts; the counts of finished jobs
 * are exact, one pass over the jobs kept (about 0.1-0.2 s per million).
 * On success *out is the caller's: pawl_stats_free(). */
PAWL_EXTERN int pawl_stats(pawl_t *p, pawl_stats_t **out);
PAWL_EXTERN void pawl_stats_free(pawl_stats_t *s);

/* A node as it last beat (the `pawl run` hosts on this database). */
typedef struct pawl_node_info {
  char *id;
  pawl_id_t incarnation;   /* changes when the node restarts */
  char *version;           /* pawl's version on the node */
  char *queues;            /* the queues it serves, comma-separated; "" all */
  int64_t started_at;
  int64_t last_beat;
  int64_t running;         /* jobs running under its leases now (their
                              bodies started: busy workers; jobs claimed
                              ahead of a free worker are not counted) */
  int64_t stopped_at;      /* when it stopped cleanly; 0 while it runs */
  /* "running"; "stopped" (stopped cleanly, at stopped_at); "dead" (it
   * has not beaten for longer than a lease of this handle: it died, or
   * lost the database; its jobs are recovered). Static. */
  const char *state;
} pawl_node_info_t;

/* The nodes, by id. On success *out (NULL when there are none) holds *n
 * nodes owned by the caller: pawl_nodes_free(). */
PAWL_EXTERN int pawl_nodes(pawl_t *p, pawl_node_info_t **out, size_t *n);
PAWL_EXTERN void pawl_nodes_free(pawl_node_info_t *nodes, size_t n);

typedef struct pawl_lock_info {
  char *name;
  char *owner;
  int64_t acquired_at;
  int64_t expires_at;      /* in the past: expired, free for the taking */
} pawl_lock_info_t;

/* The distributed locks held (or held and expired), by name. On success
 * *out (NULL when there are none) holds *n locks owned by the caller:
 * pawl_locks_free(). */
PAWL_EXTERN int pawl_locks(pawl_t *p, pawl_lock_info_t **out, size_t *n);
PAWL_EXTERN void pawl_locks_free(pawl_lock_info_t *locks, size_t n);

/* ---- queues --------------------------------------------------------------- */

/* A queue's own concurrency on a node (pawl_host_opts_t.queue_concurrency):
 * 1..PAWL_QUEUE_CONCURRENCY_MAX. */
#define PAWL_QUEUE_CONCURRENCY_MAX 1024

/* A queue as pawl_queues() reports it: one that holds jobs (in any
 * state), or that an operator paused or gave an age boost of its own. */
typedef struct pawl_queue_info {
  char *name;
  int paused;               /* 1: no node claims its jobs */
  int64_t paused_at;        /* when it was paused (ms); 0: not paused */
  char *paused_by;          /* who paused it; NULL: not paused */
  char *reason;             /* the pause's reason; NULL: none */
  int64_t age_boost_ms;     /* its own age boost; -1: the database's */
  int64_t effective_age_boost_ms; /* what its jobs rank with; 0: none */
  int64_t count[PAWL_STATE_COUNT]; /* its jobs by state */
  int64_t oldest_due_ms;    /* how long its oldest due pending job has
                               waited (now - run_at); 0: none due */
} pawl_queue_info_t;

/* The queues, by name: the counts of pawl_stats() (and its cost) with
 * what pawl_queue_pause() and pawl_queue_set_age_boost() stored. On
 * success *out (NULL when there are none) holds *n entries owned by the
 * caller: pawl_queues_free(). */
PAWL_EXTERN int pawl_queues(pawl_t *p, pawl_queue_info_t **out, size_t *n);
PAWL_EXTERN void pawl_queues_free(pawl_queue_info_t *q, size_t n);

/* Pauses `queue` (a queue name: 1..200 bytes, no control characters; it
 * need not hold jobs yet): from the next claim of every node (within one
 * poll), none of its jobs is claimed; running ones finish; enqueues go on.
 * Recorded with the handle's principal and `reason` (may be NULL; at most
 * 1000 bytes, no control characters), persisted in the database.
 * *changed (may be NULL): 1 if it was not paused; pausing a paused queue
 * changes nothing and returns 0. Strings are borrowed for the call. */
PAWL_EXTERN int pawl_queue_pause(pawl_t *p, const char *queue,
                                 const char *reason, int *changed);
/* Resumes a paused queue: the nodes claim its jobs again (at once on
 * PostgreSQL and within this process; other SQLite processes at their next
 * poll). *changed: 1 if it was paused, 0 if it was not (nothing changes:
 * the CLI reports that as an error, to catch a mistyped name). */
PAWL_EXTERN int pawl_queue_resume(pawl_t *p, const char *queue, int *changed);
/* Sets the age boost of `queue`'s jobs: `ms` 1..PAWL_AGE_BOOST_MAX_MS
 * (+1 priority per ms waited), 0 (none: priority, then run_at), or -1
 * (the database's setting again, pawl_options_t.age_boost_ms). Its pending
 * jobs are re-ranked in the same transaction; later enqueues, retries and
 * resumes rank with it. Jobs of queues with different boosts claimed
 * together are ordered by their virtual enqueue time, run_at - priority x
 * boost (a priority is worth that much waiting in its queue; no boost
 * counts as about 285 years): see docs/scheduling.md "Queues". */
PAWL_EXTERN int pawl_queue_set_age_boost(pawl_t *p, const char *queue,
                                         int64_t ms);
/* ---- resource and rate limits ------------------------------------------- */

/* A limit applies, cluster-wide, to the jobs that name a resource
 * (pawl_enqueue_opts_t.resource, a script's `resource = "smtp"`), or,
 * named "queue:" and a queue's name, to every job of that queue. It has a
 * concurrency bound, a rate, or both:
 *   max_running: at most this many of its jobs are running (claimed and
 *     not finished) at once, on all nodes together;
 *   rate per rate_window_ms: at most `rate` of its jobs start (are
 *     claimed) in each fixed window of rate_window_ms, windows aligned to
 *     the epoch of the store's clock (a window of 60 s runs from one whole
 *     minute to the next). Two windows side by side may each have `rate`
 *     starts, so any stretch of rate_window_ms that straddles a boundary
 *     may hold up to twice `rate`.
 * Both are enforced by the claim, in the database, atomically with
 * taking the jobs. A job that must wait for its limit is skipped by the
 * claim (not charged an attempt, and the jobs behind it are claimed
 * instead); a permit is freed when its job stops running, a job lost
 * with its node included (by lease recovery). */
#define PAWL_LIMIT_MAX 1000000            /* max_running, rate: 1..this */
#define PAWL_LIMIT_WINDOW_MAX_MS INT64_C(86400000) /* window: 1 ms..1 day */

typedef struct pawl_limit {
  char *name;              /* a resource, or "queue:NAME" */
  int64_t max_running;     /* 0: no concurrency bound */
  int64_t rate;            /* 0: no rate limit */
  int64_t rate_window_ms;  /* 0 when rate is 0 */
  int64_t running;         /* its jobs running now */
  int64_t window_start;    /* the window of the last counted start (0:
                              none yet) */
  int64_t window_count;    /* starts counted in that window */
  int64_t updated_at;      /* when it was last set */
} pawl_limit_t;

/* Sets limit `name` (borrowed), replacing what it was: max_running 0 or
 * 1..PAWL_LIMIT_MAX, rate 0 or 1..PAWL_LIMIT_MAX with rate_window_ms
 * 1..PAWL_LIMIT_WINDOW_MAX_MS (and 0 with rate 0); one of max_running and
 * rate must be given. The starts counted in the current window are kept
 * when the window's length stays the same. PAWL_EINVAL, naming the value
 * and its range, for anything else; nothing is changed then. */
PAWL_EXTERN int pawl_limit_set(pawl_t *p, const char *name,
                               int64_t max_running, int64_t rate,
                               int64_t rate_window_ms);

/* Removes limit `name`: its jobs run unbounded from the next claim on.
 * PAWL_ENOTFOUND (with a message naming it) when there is no such limit. */
PAWL_EXTERN int pawl_limit_remove(pawl_t *p, const char *name);

/* The limits, by name, with their jobs running now. On success *out (NULL
 * when there are none) holds *n limits owned by the caller:
 * pawl_limits_free(). */
PAWL_EXTERN int pawl_limits(pawl_t *p, pawl_limit_t **out, size_t *n);
PAWL_EXTERN void pawl_limits_free(pawl_limit_t *limits, size_t n);

/* Parses a rate as operators write it: "N/DURATION" ("100/60s",
 * "5/1s", "1000/1h"; DURATION as pawl_duration_parse() takes it).
 * Returns 0, or PAWL_EINVAL with a message in errbuf (may be NULL) naming
 * the text and the ranges (N 1..PAWL_LIMIT_MAX, the window 1 ms..1 day). */
PAWL_EXTERN int pawl_rate_parse(const char *text, int64_t *rate,
                                int64_t *window_ms, char *errbuf,
                                size_t errlen);

/* Parses a duration as operators write it: a whole number followed by
 * ms, s, m, h, d or w ("90s", "15m", "2h", "7d"), or a number alone
 * (seconds, decimals allowed: "0.5"). Returns 0 and *ms, or PAWL_EINVAL
 * with a message in errbuf (may be NULL) naming the text and the range
 * (0 to PAWL_DELAY_MAX_MS). */
PAWL_EXTERN int pawl_duration_parse(const char *text, int64_t *ms,
                                    char *errbuf, size_t errlen);

/* ---- redaction in admin views (host/api/types.c) -----------------------
 *
 * Admin views (pawl show, pawl jobs --json, the console) show payloads,
 * params, results, signal payloads, step checkpoints and log fields with
 * the value of every member whose key contains password, passwd, token,
 * secret, authorization, cookie, api_key, key or credential (any case, at
 * any depth, in arrays too), or is one of the job type's `redact` names,
 * replaced by "<redacted>". Stored data is never changed: job code sees the
 * real payload. A host records each loaded script's `redact` list in the
 * database (table pawl_types) when it loads or reloads its scripts, so a
 * view on another machine, without the scripts, hides the same fields. */

/* The `redact` names of job type `type` (borrowed) as the last host that
 * loaded its script recorded them. On success *names holds *n strings and
 * a NULL after them, owned by the caller: pawl_names_free(); *names is
 * NULL and *n 0 when no host has recorded the type. */
PAWL_EXTERN int pawl_type_redact(pawl_t *p, const char *type, char ***names,
                                 size_t *n);
PAWL_EXTERN void pawl_names_free(char **names);

/* ---- job types from C and from Lua source (host/api/defs.c) ------------- */

/* Job types a program defines on its handle, so that it needs no scripts
 * directory: Lua source given as a string or read from a file once, or a
 * C function. They serve pawl_start()'s host and step mode alike, beside
 * (and over) the scripts directory's files of the same names. With any
 * type defined and pawl_host_opts_t.scripts_dir NULL, there is no
 * directory (not "./scripts"); "" means none too.
 * A definition made while a host runs is loaded at its next look at the
 * scripts (reload_ms). Defining a type again replaces it. */

/* The context of a C job's run, valid during the call only. */
typedef struct pawl_ctx pawl_ctx_t;

/* What a C job returns. */
#define PAWL_JOB_OK 0     /* succeeded (result: pawl_ctx_set_result) */
#define PAWL_JOB_FAILED 1 /* failed: the retry policy decides (message:
                             pawl_ctx_fail) */
#define PAWL_JOB_FATAL 2  /* failed for good, no retry (as pawl.fatal) */

/* A job type in C. Called on the thread that runs the job (a worker
 * thread of pawl_start()'s host, or the thread calling pawl_step()) with
 * the job (borrowed for the call: do not free or change it), its context
 * and `ud` as given to pawl_define_c(). Returns PAWL_JOB_*; any other
 * value counts as PAWL_JOB_FAILED. The same rules apply as to a Lua job:
 * max_attempts, the retry policy and the sanitizer (_defaults.lua's, else
 * the built-in ones: the message is sanitized before it is stored),
 * the timeout. A C function cannot be interrupted: its timeout is checked
 * when it returns, and a job that ran past it fails with "job timed out"
 * whatever it returned (the interrupt signal may reach the thread while
 * the function runs; system calls are restarted: SA_RESTART).
 * It may call the functions of pawl_ctx_t below and any function on
 * pawl_ctx_handle(ctx) (enqueue, get, locks), but not pawl_step(),
 * pawl_close() or a function that starts or stops a host. */
typedef int (*pawl_job_fn)(const pawl_job_t *job, pawl_ctx_t *ctx, void *ud);

/* What a script table says of its type, for a C type. */
typedef struct pawl_define_opts {
  const char *queue;      /* NULL: none (enqueues use "default") */
  int has_priority;
  int32_t priority;       /* PAWL_PRIORITY_MIN..PAWL_PRIORITY_MAX */
  int32_t max_attempts;   /* 0: _defaults.lua's, else the default; else
                             1..PAWL_ATTEMPTS_MAX */
  double timeout_s;       /* 0: the host's default; else above 0 and at
                             most PAWL_TIMEOUT_MAX_S */
} pawl_define_opts_t;

PAWL_EXTERN void pawl_define_opts_init(pawl_define_opts_t *o);

/* Defines job type `type` (a name: 1..200 bytes, no control characters,
 * not "_defaults") as the C function `fn` with `ud` (kept, not owned: it
 * must outlive the handle and every host on it; fn may be called from
 * several worker threads at once). `opts` may be NULL; it is copied.
 * Returns 0, or PAWL_EINVAL (a bad name, NULL fn, a number out of its
 * range: the message names it), PAWL_ENOMEM. */
PAWL_EXTERN int pawl_define_c(pawl_t *p, const char *type, pawl_job_fn fn,
                              void *ud, const pawl_define_opts_t *opts);

/* Defines job type `type` by Lua source, the text a script file would
 * hold (copied; `type` also names "_defaults"). It is loaded like a file
 * (sandbox, checks, hooks); a broken one is reported in the host's log
 * when it loads, as a broken file is. Returns 0, PAWL_EINVAL, PAWL_ENOMEM. */
PAWL_EXTERN int pawl_define(pawl_t *p, const char *type,
                            const char *lua_source);

/* Reads the Lua script at `path` now (borrowed) and defines it under its
 * file name without ".lua" (scripts/send_mail.lua: "send_mail"). Later
 * changes to the file are not seen: define it again. Returns 0,
 * PAWL_EIO (unreadable), PAWL_EINVAL (not NAME.lua), PAWL_ENOMEM. */
PAWL_EXTERN int pawl_define_file(pawl_t *p, const char *path);

/* The result of a C job that succeeds: JSON text (copied; checked as
 * pawl_enqueue() checks a payload). Returns 0 or PAWL_EINVAL. */
PAWL_EXTERN int pawl_ctx_set_result(pawl_ctx_t *ctx, const char *json);
/* The error message of a C job that fails (copied; sanitized before it
 * is stored). Returns 0 or PAWL_ENOMEM. */
PAWL_EXTERN int pawl_ctx_fail(pawl_ctx_t *ctx, const char *msg);
/* A log line of the attempt (PAWL_LOG_* level), stored with its outcome
 * like ctx:log's. Returns 0, or PAWL_EINVAL (bad level, too many lines). */
PAWL_EXTERN int pawl_ctx_log(pawl_ctx_t *ctx, int level, const char *msg);
/* The handle of the thread running the job (borrowed, for the call). */
PAWL_EXTERN pawl_t *pawl_ctx_handle(pawl_ctx_t *ctx);

/* ---- the allocator (host/core/alloc.c) ---------------------------------- */

/* The allocator for pawl's own C allocations: everything the library
 * allocates itself (handles, jobs it returns, buffers, the host's
 * queues, the stores' rows) goes through it, and what it returns to you
 * is freed through it by the pawl_*_free() functions. On platforms where
 * LuaJIT takes an allocator (x64 and arm64 builds with GC64, the default:
 * this build), the job Lua states pawl creates use it too, through
 * lua_newstate(); a 32-bit or non-GC64 LuaJIT refuses lua_newstate, and
 * there pawl's states keep LuaJIT's own allocator. Not through it: SQLite's
 * and libpq's allocations (their own allocators: sqlite3_config,
 * none for libpq), LuaJIT's machine code, the Lua state of the program
 * that loads the Lua module (it is the program's), and the pawl program's
 * console.
 * malloc_fn(ud, n) and realloc_fn(ud, ptr, n) (ptr may be NULL) return
 * NULL when out of memory; n is never 0. free_fn(ud, ptr) gets only
 * pointers they returned, never NULL. They are called from every thread
 * of a host at once: they must be thread-safe. */
typedef struct pawl_allocator {
  void *(*malloc_fn)(void *ud, size_t n);
  void *(*realloc_fn)(void *ud, void *ptr, size_t n);
  void (*free_fn)(void *ud, void *ptr);
  void *ud;
} pawl_allocator_t;

/* Sets the allocator for the whole process (copied; NULL: libc's malloc,
 * realloc and free again). Call it before the first pawl_open(), or when
 * no handle is open and nothing pawl returned is still held (a job from
 * before would be freed by the wrong allocator). Not thread-safe with
 * other calls of pawl. Returns 0, PAWL_EBUSY while a handle is open,
 * PAWL_EINVAL when one of the three functions is NULL. */
PAWL_EXTERN int pawl_set_allocator(const pawl_allocator_t *a);

/* ---- step mode (host/runner/step.c) ------------------------------------- */

/* The second way to drive pawl, for a program with a loop of its own (a
 * game's frame loop): no threads at all. Each pawl_step() claims due jobs
 * and runs them on the calling thread, in a Lua state that thread owns,
 * writes their outcomes (with their history, log lines and hooks, the
 * retry policy and sanitizer, as pawl_start()'s host does), and returns.
 *
 * The thread. The first pawl_step_start(), pawl_step(),
 * pawl_step_wait() or pawl_next_deadline() on a handle puts it in step
 * mode and binds the handle to the calling thread: from then on every
 * function on it refuses any other thread with PAWL_EMISUSE (no message
 * is set: pawl_errmsg() is the owner's), but pawl_stop() and pawl_close()
 * (see there), since job code keeps its state (its script's upvalues) in
 * that thread's Lua state and the handle has no lock. Another thread
 * hands work over through a sibling (pawl_sibling()): its enqueues wake
 * the step at once (the next pawl_step() claims; pawl_step_wait()
 * returns). pawl_start() on a handle in step mode, and pawl_step() on a
 * handle whose pawl_start() host runs (or ran: a handle runs one host in
 * its life), fail with PAWL_EBUSY. Inside a step (job code, hooks, event
 * callbacks), pawl_step(), pawl_step_wait(), pawl_next_deadline(),
 * pawl_attach_uv() and pawl_detach_uv() are refused with PAWL_EMISUSE and
 * pawl_close() does nothing. pawl_close() ends step mode: jobs claimed
 * ahead and not run are handed back, outcomes not yet written are written
 * (once more), the Lua state is closed.
 *
 * Checkpoints (SQLite). With the default options a commit that finds the
 * write-ahead log past 1000 pages checkpoints it then and there: an fsync
 * of 10 ms or more inside pawl_step() or pawl_enqueue(), that is inside a
 * frame. A game opens its handle with pawl_options_t.manual_checkpoint
 * and calls pawl_checkpoint() off the frame: from a thread of its own on
 * a sibling (it never blocks the writers) or between levels.
 * examples/game_loop.c does the first.
 *
 * Timeouts. A job's timeout interrupts its Lua code as in the threaded
 * host: a timer of the stepping thread (timer_create, no thread) sends the
 * host's interrupt signal (pawl_host_opts_t.interrupt_signal, SIGURG by
 * default) to that thread at the deadline, whose handler stops the Lua
 * code at its next instruction. The signal is unblocked on the stepping
 * thread and its handler installed for the process while step mode lasts
 * (see interrupt_signal). With PAWL_INTERRUPT_NONE a job runs to its end.
 *
 * Leases. Jobs are claimed under the handle's lease; the step extends
 * the node's leases every heartbeat_ms between jobs, and during a job
 * that runs longer from the same timer (the Lua code is stopped for the
 * write between two instructions: one database write per heartbeat_ms,
 * not per instruction). A job blocked in a C call (an io read, a C job
 * type) is not extended meanwhile: keep such calls shorter than the
 * lease. A process that dies while stepping loses nothing: its leases
 * expire and the jobs are taken back. */

/* Puts `p` in step mode on the calling thread with the options `o`
 * (NULL: the defaults; borrowed, strings copied). Optional: the first
 * pawl_step() does it with the defaults. Options that are about threads
 * (workers, prefetch, grace_ms, flush_ms, until_idle, idle_wait_ms,
 * give_up_ms) are ignored; poll_ms is how often an idle step looks at the
 * database anyway (the safety net; see pawl_step()); reload_ms how often
 * it looks at the scripts directory. Loads the scripts before it returns.
 * Returns 0; PAWL_EBUSY if pawl_start() runs (or ran) on `p` or it is in
 * step mode already; PAWL_EINVAL / PAWL_EIO for bad options as
 * pawl_start(); PAWL_ENOMEM. Threads: the thread that will step `p`,
 * which then owns it (see "The thread" above). */
PAWL_EXTERN int pawl_step_start(pawl_t *p, const pawl_host_opts_t *o);

/* Runs due jobs on the calling thread for about budget_ms
 * (0..PAWL_DELAY_MAX_MS): it claims and runs jobs one after another while
 * less than budget_ms has passed since the call began, so it returns
 * within the budget plus at most one job's run (and the write of the
 * outcomes, one transaction for the jobs of the call, and their hooks).
 * A due job always runs, even with budget 0. The budget is measured by
 * the monotonic clock, whatever clock the handle reads for due times (an
 * injected pawl_options_t.clock decides what is due, not how long a step
 * takes). Returns how many jobs ran (0 or more), or a negative PAWL_E*
 * code (pawl_errmsg() says why; a database that is away is retried at the
 * next call: what ran is written then). A budget out of range is refused
 * (PAWL_EINVAL) before anything else: the handle stays as it was (not in
 * step mode). Threads: the stepping thread, not from inside a step
 * (PAWL_EMISUSE: see "The thread" above).
 * Cost when nothing is due: no claim. The step remembers when the next
 * pending job is due and, on SQLite, asks the database only whether
 * another connection wrote since (PRAGMA data_version, about a
 * microsecond); on PostgreSQL it listens for enqueues (NOTIFY) on a
 * second connection. It looks again at least every poll_ms anyway. */
PAWL_EXTERN int pawl_step(pawl_t *p, int64_t budget_ms);

/* When pawl_step() next has something to do, in the handle's clock (ms):
 * now or earlier when jobs are due (or claimed and waiting), else the
 * earliest of the next pending job's run_at, the next lease extension
 * and the next look at the scripts directory or the database (poll_ms).
 * For a program that sleeps between steps (pawl_step_wait() sleeps for
 * it, and wakes for a sibling's enqueue). Puts the handle in step mode
 * like pawl_step(). Returns the time (0 or more), or a negative PAWL_E*
 * code. Threads: the stepping thread, not inside a step. */
PAWL_EXTERN int64_t pawl_next_deadline(pawl_t *p);

/* For a program that sleeps between steps: waits on the stepping thread
 * until pawl_next_deadline(), an enqueue on the handle or a sibling
 * (pawl_sibling(), from any thread: the wait ends within a millisecond or
 * so, bench/RESULTS.md), or timeout_ms (0..PAWL_DELAY_MAX_MS) has passed,
 * whichever comes first; then call pawl_step(). Returns 1 when there is
 * something to do (woken, or the deadline came), 0 when timeout_ms ran
 * out first, or a negative PAWL_E* code. Puts the handle in step mode
 * like pawl_step(). Threads: the stepping thread, not inside a step. */
PAWL_EXTERN int pawl_step_wait(pawl_t *p, int64_t timeout_ms);

/* Step mode whose Lua runs in the program's own Lua state: what the Lua
 * module's db:step uses (host/lua/lua_module_step_so.c), so that a
 * game's jobs can touch the game's tables. Like pawl_step_start(), and:
 * `*lua_state` is the lua_State * (void: this header includes no Lua
 * header) of the thread or coroutine that calls pawl now, read at every
 * pawl_step() and pawl_close(): the caller keeps it current. It must be a
 * state of the LuaJIT this library runs on: the Lua module (build/lua/
 * pawl.so, which takes the Lua API from the program that loads it).
 * libpawl.a and libpawl.so carry a LuaJIT of their own: a program linked
 * with them must not pass its state here. `types_ref` is a registry
 * reference (in that state) to a table of job types (name -> script
 * table or run function), read when a job runs. Nothing is added to the
 * state's globals, package.loaded or package.preload; Lua job scripts
 * (a scripts directory, pawl_define()) are refused there (the sandbox
 * would change the program's string metatable): only those types and C
 * types (pawl_define_c()). Returns what pawl_step_start() returns, or
 * PAWL_EINVAL for a NULL state. */
PAWL_EXTERN int pawl_step_start_lua(pawl_t *p, const pawl_host_opts_t *o,
                                    void *const *lua_state, int types_ref);

/* ---- attached to a libuv loop (host/runner/uv_attach.c) ---------------- */

/* The third way to drive pawl: on a program's libuv loop (a server). The
 * loop's thread calls pawl_attach_uv(); pawl then adds a timer and an
 * async handle to the loop. How jobs run, by `mode`:
 *
 * PAWL_UV_LOOP: on the loop thread, with the step machinery (step mode
 *   bound to the loop thread: see pawl_step()). The timer fires at
 *   pawl_next_deadline() (due jobs, the next poll, lease extensions and
 *   node beats, script reloads), runs pawl_step(p, budget_ms) and, when
 *   jobs ran, fires again at once after the loop has served its I/O. The
 *   async handle wakes it when another thread enqueues on a sibling
 *   (pawl_sibling(): the handle itself belongs to the loop thread and
 *   refuses others with PAWL_EMISUSE), within a millisecond or so
 *   (bench/RESULTS.md). No thread at all; job code may touch the program's loop-side
 *   data (C job types, event callbacks). The cost: while a job runs, the
 *   loop serves nothing, so a request waits for up to the budget plus
 *   one job's run: for short jobs.
 * PAWL_UV_THREADS: on pawl's own worker threads (pawl_start() with
 *   `host`), the loop keeps serving while jobs run; pawl_detach_uv() stops
 *   the host (graceful, waits for it). Job code must not touch the loop's
 *   data (another thread); event callbacks run on the completer thread.
 *   For jobs that take long or block.
 * PAWL_UV_THREADPOOL (jobs on the loop's threadpool, uv_queue_work, with a
 *   Lua state per pool thread) is not implemented: refused with
 *   PAWL_EINVAL. Its trade-off would sit between the two: no threads of
 *   pawl's, but jobs then share libuv's few pool threads (4 by default)
 *   with the program's file system and DNS work.
 *
 * The timer and async handle keep the loop alive (uv_run does not return)
 * until pawl_detach_uv() or pawl_close() (which detaches first), on the
 * loop thread; the handles are closed by the loop (their uv_close
 * callbacks run at its next turn). pawl_close() from another thread while
 * attached is refused (does nothing). */
#define PAWL_UV_LOOP 0
#define PAWL_UV_THREADS 1
#define PAWL_UV_THREADPOOL 2

typedef struct pawl_uv_opts {
  int mode;                     /* PAWL_UV_*; default PAWL_UV_LOOP */
  int64_t budget_ms;            /* PAWL_UV_LOOP: pawl_step's budget per
                                   timer tick, 0..1000; 0 (default): 5 */
  const pawl_host_opts_t *host; /* NULL: the defaults; borrowed */
} pawl_uv_opts_t;

PAWL_EXTERN void pawl_uv_opts_init(pawl_uv_opts_t *o);

struct uv_loop_s;

/* Attaches `p` to `loop` (borrowed: it must outlive the attachment) on
 * the calling thread, which must be the loop's. `o` may be NULL
 * (PAWL_UV_LOOP, defaults). Returns 0; PAWL_EINVAL (bad mode or budget,
 * PAWL_UV_THREADPOOL, NULL loop); PAWL_EBUSY (attached already, in step
 * mode on another thread: no message is set then, or pawl_start() runs
 * or ran); PAWL_EMISUSE (a closed handle, or from inside a step); what
 * pawl_step_start() or pawl_start() return. In PAWL_UV_LOOP mode the
 * handle is bound to the loop thread (see step mode, "The thread"). */
PAWL_EXTERN int pawl_attach_uv(pawl_t *p, struct uv_loop_s *loop,
                               const pawl_uv_opts_t *o);

/* Detaches `p` from its loop, on the loop thread: stops the timer, closes
 * the handles (freed by their close callbacks), and in PAWL_UV_THREADS
 * stops the host (graceful) and waits for it. In PAWL_UV_LOOP the handle
 * stays in step mode on that thread until pawl_close(). Returns 0,
 * PAWL_EINVAL when not attached, PAWL_EMISUSE from another thread than
 * the loop's or from inside a step (an event callback: detach from a
 * callback of the loop's own). */
PAWL_EXTERN int pawl_detach_uv(pawl_t *p);

/* ---- the live host: the attached console and its controls ---------------
 *
 * What only a running host knows or can do, for the admin console that
 * attaches to it (`pawl console --connect`) and for embedders. Every
 * function here takes the handle that pawl_start() was called on and may
 * be called from any thread while the host runs (as pawl_stop() may), but
 * not from a pawl_log_fn. Without a host (never started, or pawl_wait()
 * has returned 0) each returns PAWL_ESTATE and changes nothing. */

/* A worker thread as seen at one moment. */
typedef struct pawl_worker_info {
  int index;              /* 0 .. workers - 1 */
  int busy;               /* 1: running a job (the fields below) */
  pawl_id_t job;
  char type[201];         /* the job's type (names are 1..200 bytes) */
  int32_t attempt;
  int64_t running_ms;     /* how long the job has been running */
} pawl_worker_info_t;

/* The workers of the host, by index. On success *out holds *n entries
 * owned by the caller: pawl_workers_free(). *queued receives how many
 * claimed jobs wait for a worker, and *draining 1 while pawl_drain() holds
 * (either may be NULL). */
PAWL_EXTERN int pawl_workers(pawl_t *p, pawl_worker_info_t **out, size_t *n,
                             int64_t *queued, int *draining);
PAWL_EXTERN void pawl_workers_free(pawl_worker_info_t *w);

/* A script that did not load. */
typedef struct pawl_script_error {
  char *type;             /* the job type ("_defaults" for the defaults) */
  char *error;            /* file:line: message, one line */
} pawl_script_error_t;

/* Asks the host's script loader to look at the scripts directory now
 * (instead of at its next check, pawl_host_opts_t.reload_ms) and waits
 * up to timeout_ms (1..PAWL_TIMEOUT_MAX_S * 1000) for it to have looked:
 * changed scripts are loaded (workers take them between jobs, as usual).
 * Then reports the scripts that did not load in the last load (a broken
 * script keeps its previous version serving): *errors (NULL when none)
 * holds *nerrors entries owned by the caller, pawl_script_errors_free();
 * *nfiles (may be NULL) the scripts serving. PAWL_EBUSY: the loader did
 * not look within timeout_ms (a script's top level still running). */
PAWL_EXTERN int pawl_reload(pawl_t *p, int64_t timeout_ms,
                            pawl_script_error_t **errors, size_t *nerrors,
                            size_t *nfiles);
PAWL_EXTERN void pawl_script_errors_free(pawl_script_error_t *e, size_t n);

/* Stops claiming: jobs claimed ahead and not started are handed back at
 * once (pending again, no attempt used), running jobs finish, the node
 * keeps beating and renewing their leases. pawl_resume_claiming() undoes
 * it. Idempotent. A stopping host: PAWL_ESTATE. */
PAWL_EXTERN int pawl_drain(pawl_t *p);
PAWL_EXTERN int pawl_resume_claiming(pawl_t *p);

/* pawl_stop(p, PAWL_STOP_GRACEFUL) with a grace period of grace_ms
 * (0..PAWL_DELAY_MAX_MS) instead of pawl_host_opts_t.grace_ms; on a host
 * already stopping gracefully, it replaces the grace period (still counted
 * from the first stop). */
PAWL_EXTERN int pawl_stop_grace(pawl_t *p, int64_t grace_ms);

/* Sets the level of the host's event log (PAWL_LOG_DEBUG..PAWL_LOG_ERROR)
 * from the next line on; -1 only reads it. Returns the level in force
 * before the call (0..3), or a PAWL_E* code. */
PAWL_EXTERN int pawl_log_level(pawl_t *p, int level);

/* The admin console's listeners, pawl_host_opts_t.admin.
 *
 * A unix socket (socket_path): created by pawl_start() with mode 0600 (by
 * binding in a private directory beside it and renaming it into place,
 * so it never exists with other bits), in a directory that must be owned
 * by this user or root and, if others may write to it, sticky. The start
 * is refused (PAWL_EIO, the message says why) when the path is a symbolic
 * link, is owned by another user, is not a socket, or is a socket another
 * process answers on (a stale one, which refuses connections, is
 * replaced). Each connection's peer credentials (SO_PEERCRED) are
 * checked: only this user and root are served. The socket is removed when
 * the host stops.
 *
 * A TCP listener (listen: "ADDRESS:PORT", an IPv4 or [IPv6] address
 * given as digits, PORT 1..65535) only with a token file (token_file): the
 * start is refused without one, and when the file is empty, larger than
 * 4 KiB or readable or writable by others (mode & 0006). A client must
 * send the token (the file's text without trailing white space) in its
 * hello; it is compared in constant time.
 *
 * Chunks run one at a time, across all connections, in a Lua state of the
 * host's own (never a worker's), on a database connection of its own,
 * each under timeout_ms. The wire protocol is in docs/console.md. */
typedef struct pawl_admin_opts {
  const char *socket_path; /* NULL: no unix socket; at most 107 bytes */
  const char *listen;      /* NULL: no TCP listener */
  const char *token_file;  /* required with listen */
  int64_t timeout_ms;      /* a chunk's limit; 0: 30000; at most
                              PAWL_TIMEOUT_MAX_S * 1000 */
  int max_clients;         /* consoles attached at once; 0: 16; at most
                              256 */
} pawl_admin_opts_t;

/* The metrics endpoint, pawl_host_opts_t.metrics: an HTTP
 * server (libmicrohttpd, on a thread of its own) that serves GET and HEAD
 * of /metrics in the Prometheus text format 0.0.4 (404 for other paths,
 * 405 for other methods). `listen` is "ADDRESS:PORT" as for the admin
 * console (port 0: any free one; the address bound is logged as
 * `metrics listening http=...`). A loopback address (127.0.0.0/8, ::1)
 * serves anyone on this machine; any other address only with a token
 * file (token_file, checked as the admin console's: the start is refused
 * without one): requests must then send `Authorization: Bearer TOKEN`
 * (401 otherwise). A token file given with a loopback address applies
 * too. The metrics are listed in docs/operations.md ("Metrics"): the node's own
 * counters kept in memory, and the database's jobs by state and queue,
 * refreshed by a thread of the host every refresh_ms on a connection of
 * its own, so that a scrape never waits for the database or a worker. */
typedef struct pawl_metrics_opts {
  const char *listen;      /* required */
  const char *token_file;  /* required unless listen is a loopback address */
  int64_t refresh_ms;      /* the database gauges' refresh; 0: 5000;
                              100..3600000 */
  int64_t recount_ms;      /* the exact count of finished, paused and
                              blocked jobs; 0: 300000; refresh_ms..1200000
                              (between two, the finished counts move with
                              the finishes every node records) */
} pawl_metrics_opts_t;


/* ---- recurring jobs: cron in the database (host/api/recurring.c) -------- */

/* A recurring definition enqueues a job of its type each time its cron
 * expression fires in its time zone (the syntax is in docs/scheduling.md, "Cron
 * expressions"). Definitions live in the database, so every node sees the
 * same set; a host ticks them (one node at a time, under the distributed
 * lock "pawl.recurring") about once a second. Each occurrence is enqueued
 * with the idempotency key "cron:NAME:EPOCH" (EPOCH: the occurrence's
 * seconds since the Unix epoch), so that none fires twice, whatever nodes
 * tick or crash. They come from a job script (cron = "...", docs/scheduling.md
 * "Recurring jobs") or from an operator (the functions below, `pawl recurring`). */

/* What a tick does with occurrences that were missed (due longer ago than
 * PAWL_RECURRING_MISFIRE_MS when a tick sees them: the hosts were down). */
#define PAWL_MISFIRE_RUN_ONCE 0 /* one job for all of them (the default) */
#define PAWL_MISFIRE_CATCH_UP 1 /* one job each, oldest first, at most
                                   catch_up_limit; the rest are skipped */
#define PAWL_MISFIRE_SKIP 2     /* none: the schedule moves on */
/* An occurrence due for longer than this when a tick sees it was missed. */
#define PAWL_RECURRING_MISFIRE_MS INT64_C(60000)
/* catch_up_limit: 1..PAWL_CATCH_UP_LIMIT_MAX (default 10). */
#define PAWL_CATCH_UP_LIMIT_DEFAULT 10
#define PAWL_CATCH_UP_LIMIT_MAX 1000

/* "run_once", "catch_up", "skip"; "?" for a value out of range. Static. */
PAWL_EXTERN const char *pawl_misfire_name(int misfire);
/* The policy named `name`, or PAWL_EINVAL. */
PAWL_EXTERN int pawl_misfire_parse(const char *name);

/* A definition as stored. Strings are NUL-terminated and owned by the
 * array they came in (pawl_recurring_free()); queue and script are NULL
 * when unset; times are ms since the epoch, 0 when unset. */
typedef struct pawl_recurring {
  char *name;              /* the key: 1..200 bytes, no control characters */
  char *expr;              /* the cron expression */
  char *tz;                /* IANA zone name ("UTC" by default) */
  int misfire;             /* PAWL_MISFIRE_* */
  int32_t catch_up_limit;
  char *type;              /* the job type each occurrence enqueues */
  char *payload;           /* JSON */
  char *queue;             /* NULL: "default" */
  int32_t priority;
  int32_t max_attempts;    /* 0: the script's */
  int32_t timeout_s;       /* 0: the script's */
  int paused;              /* 1: paused by an operator */
  int enabled;             /* 0: disabled: a script-born definition whose
                              script is gone (it does not fire) */
  int from_script;         /* 1: born of a script (`script` names it);
                              0: made by an operator */
  char *script;
  int64_t next_fire_at;    /* 0: none (paused and disabled keep theirs) */
  int64_t last_fire_at;    /* the last occurrence enqueued; 0: none yet */
  int has_last_job;
  pawl_id_t last_job_id;
  int64_t created_at, updated_at;
  int64_t version;         /* bumped by every change */
  char *load_error;        /* a script-born definition whose script fails
                              to load: what a node said ("node N: ..."),
                              the definition kept as it was; NULL when it
                              loads */
} pawl_recurring_t;

/* What an operator gives for pawl_recurring_add() and _set(). Pointers are
 * borrowed for the call. */
typedef struct pawl_recurring_opts {
  const char *expr;        /* required by add */
  const char *tz;          /* NULL: "UTC" */
  int misfire;             /* PAWL_MISFIRE_*; default run_once */
  int32_t catch_up_limit;  /* 0: PAWL_CATCH_UP_LIMIT_DEFAULT; else
                              1..PAWL_CATCH_UP_LIMIT_MAX */
  const char *type;        /* NULL: the definition's name */
  const char *payload;     /* JSON; NULL: "{}" */
  const char *queue;       /* NULL: "default" */
  int32_t priority;        /* PAWL_PRIORITY_MIN..PAWL_PRIORITY_MAX */
  int32_t max_attempts;    /* 0: the script's; else 1..PAWL_ATTEMPTS_MAX */
  int32_t timeout_s;       /* 0: the script's; else 1..PAWL_TIMEOUT_MAX_S */
} pawl_recurring_opts_t;

/* Which fields pawl_recurring_set() changes (bits, or-ed). */
#define PAWL_REC_EXPR (1u << 0)
#define PAWL_REC_TZ (1u << 1)
#define PAWL_REC_MISFIRE (1u << 2)
#define PAWL_REC_CATCH_UP_LIMIT (1u << 3)
#define PAWL_REC_TYPE (1u << 4)
#define PAWL_REC_PAYLOAD (1u << 5)
#define PAWL_REC_QUEUE (1u << 6)
#define PAWL_REC_PRIORITY (1u << 7)
#define PAWL_REC_MAX_ATTEMPTS (1u << 8)
#define PAWL_REC_TIMEOUT (1u << 9)
#define PAWL_REC_ALL 0x3ffu

PAWL_EXTERN void pawl_recurring_opts_init(pawl_recurring_opts_t *o);

/* Adds an operator's definition `name`, first firing at the expression's
 * next fire time after now. Everything is checked before anything is
 * written: a bad expression or zone ("bad cron expression: hour: 24 is out
 * of range 0-23", "unknown time zone ..."), a number out of its range,
 * JSON that is not, are PAWL_EINVAL; a name already taken is PAWL_EKEY.
 * Returns 0 or a PAWL_E* code (pawl_errmsg()); nothing changes on failure. */
PAWL_EXTERN int pawl_recurring_add(pawl_t *p, const char *name,
                                   const pawl_recurring_opts_t *o);
/* Changes the fields of `name` that `fields` (PAWL_REC_*) names to o's
 * values, checked as by add. A new expression or zone schedules the next
 * fire anew from now. Script-born definitions may be changed too (until
 * their script changes: a reload writes the script's settings again).
 * PAWL_ENOTFOUND for no such definition. */
PAWL_EXTERN int pawl_recurring_set(pawl_t *p, const char *name,
                                   const pawl_recurring_opts_t *o,
                                   unsigned fields);
/* Pauses `name`: it does not fire until resumed. Resuming schedules the
 * next fire from now: what would have fired while it was paused does not
 * (it is not a misfire). Pausing a paused one, or resuming a running one,
 * is a no-op. PAWL_ENOTFOUND for no such definition. */
PAWL_EXTERN int pawl_recurring_pause(pawl_t *p, const char *name);
PAWL_EXTERN int pawl_recurring_resume(pawl_t *p, const char *name);
/* Enqueues one job of `name` now, whatever its schedule (also when paused
 * or disabled), under the idempotency key "cron:NAME:manual:ID" (ID: the
 * new job's id); the schedule is unchanged. *out_id (may be NULL) receives
 * the job's id. PAWL_ENOTFOUND for no such definition. */
PAWL_EXTERN int pawl_recurring_trigger(pawl_t *p, const char *name,
                                       pawl_id_t *out_id);
/* Removes `name` (a script-born one comes back at the script's next
 * change or the next start of a host). Jobs it enqueued are not touched.
 * PAWL_ENOTFOUND for no such definition. */
PAWL_EXTERN int pawl_recurring_remove(pawl_t *p, const char *name);
/* The definition `name`: *out is the caller's (pawl_recurring_free(*out,
 * 1)). PAWL_ENOTFOUND for no such definition. */
PAWL_EXTERN int pawl_recurring_get(pawl_t *p, const char *name,
                                   pawl_recurring_t **out);
/* Every definition, by name. On success *out (NULL when there are none)
 * holds *n definitions owned by the caller: pawl_recurring_free(). */
PAWL_EXTERN int pawl_recurring_list(pawl_t *p, pawl_recurring_t **out,
                                    size_t *n);
PAWL_EXTERN void pawl_recurring_free(pawl_recurring_t *defs, size_t n);

/* ---- pawl top: the live view's reads (host/api/top.c) ----------------- */

/* One throughput bucket: how many jobs reached a terminal state (`state`:
 * PAWL_SUCCEEDED, PAWL_FAILED or PAWL_CANCELED) in `queue` during one
 * minute of the store's clock, the one that starts at `minute_at` (ms).
 * The database keeps the last 30 minutes (docs/operations.md "pawl top"). */
typedef struct pawl_tp_bucket {
  int64_t minute_at;
  int state;
  char *queue;             /* owned by the array (pawl_throughput_free) */
  int64_t count;
} pawl_tp_bucket_t;

/* The buckets of the current minute and the `minutes` - 1 before it
 * (minutes 1..30), oldest first, then by state and queue. Counts only
 * grow within a minute, so two reads a second apart tell how many jobs
 * finished in between (the per-second figures of `pawl top`). On success
 * *out (NULL when there are none) holds *n buckets owned by the caller:
 * pawl_throughput_free(). */
PAWL_EXTERN int pawl_throughput(pawl_t *p, int minutes,
                                pawl_tp_bucket_t **out, size_t *n);
PAWL_EXTERN void pawl_throughput_free(pawl_tp_bucket_t *b, size_t n);

/* Calls cb for up to `limit` (1..100000) running jobs, longest running
 * first (started_at, then id), read through the running jobs' index
 * before the first call: cheap whatever the number of finished jobs kept.
 * Each job is borrowed for its call; the callback may call anything on
 * `p` but pawl_close(), and returns non-zero to stop. */
PAWL_EXTERN int pawl_running_jobs(pawl_t *p, int limit, pawl_job_cb cb,
                                  void *data);

/* What pawl_top_snapshot() puts in. */
typedef struct pawl_top_opts {
  int running;   /* the longest-running jobs listed, 0..1000 (default 10) */
  int dead;      /* the newest dead jobs listed, 0..1000 (default 10) */
  int minutes;   /* minutes of throughput buckets, 1..30 (default 2) */
} pawl_top_opts_t;

PAWL_EXTERN void pawl_top_opts_init(pawl_top_opts_t *o);

/* Everything `pawl top` shows, as one JSON object (docs/operations.md "pawl top"
 * gives its fields): the handle's time ("at"), the queues with their
 * counts by state, oldest due wait and pause ("queues": pawl_queues()),
 * the nodes with their running jobs ("nodes": pawl_nodes()), the
 * throughput buckets ("throughput": pawl_throughput()), the longest
 * running jobs ("running": pawl_running_jobs()) and the newest dead ones
 * with their stored (sanitized) errors, each cut to 1000 bytes ("dead":
 * pawl_list() of failed jobs, newest id first). Payloads and results are
 * never in it. Costs what pawl_queues() costs (one pass over the jobs
 * kept) plus a few index reads. `o` may be NULL (the defaults). On success
 * *json is the caller's NUL-terminated text: pawl_top_snapshot_free(). */
PAWL_EXTERN int pawl_top_snapshot(pawl_t *p, const pawl_top_opts_t *o,
                                  char **json);
PAWL_EXTERN void pawl_top_snapshot_free(char *json);
/* ---- retention (host/api/retention.c) -----------------------------------
 *
 * Finished jobs (succeeded, failed, canceled) are deleted once they
 * finished long enough ago, or moved to the archive tables (pawl_jobs_archive
 * and the attempts, events and logs beside it) when `archive` is set. A
 * live job (pending, running, paused, blocked) is never touched: the
 * statement that removes a job checks, itself, that it is still finished
 * at the version read, so a job an operator retried meanwhile stays. A job
 * takes its attempts, events, logs, step executions, exit, instance,
 * signal, replacement links and dependency edges with it (archived: its
 * attempts, events and logs are archived, the rest deleted); a parent
 * whose children have not yet counted its end is kept. Idempotency keys
 * stay (pawl_idempotency): a duplicate enqueue after the job is gone still
 * returns its id as a duplicate. Business keys hold for live jobs only and
 * go with the job. */

/* How long jobs are kept in one finished state. */
#define PAWL_RETAIN_FOREVER (-1)

/* An override: jobs of `queue` and/or `type` (NULL: any; at least one
 * given) finished in `state` are kept keep_ms (0..PAWL_DELAY_MAX_MS, or
 * PAWL_RETAIN_FOREVER). The most specific rule wins: queue and type, then
 * type, then queue, then the policy's keep_ms[]; among equals, the last. */
typedef struct pawl_retain_rule {
  const char *queue;
  const char *type;
  int state;            /* PAWL_SUCCEEDED, PAWL_FAILED or PAWL_CANCELED */
  int64_t keep_ms;
} pawl_retain_rule_t;

typedef struct pawl_retention {
  /* By state: keep_ms[PAWL_SUCCEEDED], keep_ms[PAWL_FAILED],
   * keep_ms[PAWL_CANCELED] (other entries unused); 0..PAWL_DELAY_MAX_MS
   * or PAWL_RETAIN_FOREVER. Defaults: 1 day, 7 days, 1 day. */
  int64_t keep_ms[PAWL_STATE_COUNT];
  const pawl_retain_rule_t *rules;
  size_t nrules;
  int archive;          /* 1: move into the archive tables, 0: delete */
  size_t batch;         /* jobs looked at per transaction, 1..100000;
                           default 1000 */
  int64_t pause_ms;     /* between two batches, 0..60000; default 50 */
  int64_t every_ms;     /* a host's sweeps start this often,
                           1000..PAWL_DELAY_MAX_MS; default 60000 */
  int share_pct;        /* a host's sweep holds the database at most this
                           percent of the time while it has a backlog (it
                           waits (100 - share) / share times as long as
                           its last batch took), 1..50; default 5 */
} pawl_retention_t;

/* Fills `r` with the defaults (no rules, no archive). */
PAWL_EXTERN void pawl_retention_init(pawl_retention_t *r);

/* Parses a policy as operators write it: comma-separated items, each
 *   STATE=DURATION            succeeded=1d, failed=30d, canceled=2h
 *   queue:Q.STATE=DURATION    an override for queue Q
 *   type:T.STATE=DURATION     an override for job type T
 *   queue:Q/type:T.STATE=DURATION  both
 *   archive                   archive instead of deleting
 *   batch=N, pause=DURATION, every=DURATION, share=PERCENT
 * DURATION as pawl_duration_parse() takes it, or "forever"; what is not
 * given keeps its default. On success *out is the caller's
 * (pawl_retention_free()); PAWL_EINVAL with a message in errbuf (may be
 * NULL) naming the item and the range. */
PAWL_EXTERN int pawl_retention_parse(const char *spec, pawl_retention_t **out,
                                     char *errbuf, size_t errlen);
/* Frees a policy from pawl_retention_parse() (its rules and their
 * strings). NULL is fine. */
PAWL_EXTERN void pawl_retention_free(pawl_retention_t *r);

/* What pawl_cleanup() does. */
typedef struct pawl_cleanup_opts {
  const pawl_retention_t *policy; /* NULL: the defaults; borrowed */
  int state;            /* -1: every finished state; else only this one
                           (PAWL_SUCCEEDED, PAWL_FAILED, PAWL_CANCELED) */
  int64_t older_than_ms;/* -1: each job's age from the policy; else
                           0..PAWL_DELAY_MAX_MS for every state, queue and
                           type (the policy's ages and rules unused) */
  int dry_run;          /* 1: count what would go, change nothing */
  int64_t max;          /* stop after this many jobs (0: no bound) */
} pawl_cleanup_opts_t;

PAWL_EXTERN void pawl_cleanup_opts_init(pawl_cleanup_opts_t *o);

/* One (state, queue, type) of what a cleanup removed (or would). */
typedef struct pawl_cleanup_row {
  int state;
  char *queue;
  char *type;
  int64_t count;
} pawl_cleanup_row_t;

typedef struct pawl_cleanup_result {
  int64_t removed;      /* jobs deleted or archived (dry run: would be) */
  int64_t scanned;      /* jobs looked at */
  int archived;         /* 1: moved into the archive tables */
  int dry_run;
  pawl_cleanup_row_t *rows; /* by state, queue, type */
  size_t nrows;
} pawl_cleanup_result_t;

/* Removes the finished jobs the policy (or o->older_than_ms) lets go,
 * now, in batches of policy->batch jobs (a transaction each) with
 * policy->pause_ms between them, from the oldest. Not under the lock the
 * hosts' sweeps take: each removal checks its job itself, so a cleanup
 * beside a sweep removes nothing twice. On success *out is the caller's
 * (pawl_cleanup_free()); on failure nothing is returned, and what earlier
 * batches removed stays removed. PAWL_EINVAL (message naming the value and
 * its range) for a bad option or policy. `o` may be NULL (the defaults). */
PAWL_EXTERN int pawl_cleanup(pawl_t *p, const pawl_cleanup_opts_t *o,
                             pawl_cleanup_result_t **out);
PAWL_EXTERN void pawl_cleanup_free(pawl_cleanup_result_t *r);

#ifdef __cplusplus
}
#endif
#endif
