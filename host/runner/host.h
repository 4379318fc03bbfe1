/* host.h: the worker host's shared state (internal to runner/).
 *
 * Threads and what they own, one file each:
 * - the poller (poller.c): claims jobs and decides when to stop;
 * - the chores thread (poller.c, pawl__chores_main): the heartbeat, node
 *   beat, lease recovery, recurring definitions, signal timeouts and
 *   retention, on a connection of its own, so that a claim never waits
 *   for one of them (a heartbeat or a sweep that walks a pinned horizon's
 *   dead rows, a retention round); step mode runs them on its thread;
 * - the loader (loader.c): loads new versions of the scripts in a state
 *   of its own (their top level may take long: never on the poller's
 *   path) and installs them for the workers;
 * - N workers (worker.c): one Lua state each (lua/bridge.h), never shared;
 * - the completer (completer.c): writes outcomes in batches (group
 *   commit);
 * - the watchdog (watchdog.c): interrupts jobs that pass their deadline;
 * - the checkpointer (checkpointer.c, SQLite): moves the write-ahead log
 *   into the database;
 * - the listener (listener.c, PostgreSQL): wakes the poller when another
 *   process enqueues (LISTEN/NOTIFY).
 * host.c starts them (pawl_start), stops them (pawl_stop) and joins them
 * (pawl_wait). The runner is engine-neutral: Lua is reached only through
 * lua/bridge.h, the database only through the API (include/pawl.h and
 * api/pawl_internal.h).
 * Each thread has its own pawl_t (own database connection); all share the
 * lease token of the handle that started the host.
 *
 * Everything below `mu` is guarded by it. The hand-offs are queues under
 * that one mutex with a condition variable per consumer: few enough jobs
 * change hands per second that one lock is not the bottleneck (the
 * database is), and one lock keeps the stop logic simple. */
#ifndef PAWL_HOST_H
#define PAWL_HOST_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "bridge.h"
#include "buf.h"
#include "log.h"
#include "pawl.h"

typedef struct worker worker_t;
typedef struct host_event host_event_t; /* events.c */

/* One finished attempt on its way to the database, and back to its worker
 * for the hooks once stored. */
typedef struct host_outcome {
  pawl_outcome_t out;        /* its strings point into the fields below */
  pawl_job_t *job;           /* owned */
  char *result;              /* owned */
  char *error;               /* owned */
  char *trace;               /* owned: the error's traceback, or NULL */
  char *branches;            /* owned: the branches that fired */
  pawl_log_entry_t *logs;    /* owned, with their strings */
  size_t nlogs;
  int worker;                /* index of the worker that ran it, -1: none */
  int hook_ref;              /* PAWL__LUA_NOREF, or what the hooks need,
                                held in that worker's Lua state */
  int hooks;                 /* which hooks to run once stored */
  double duration_ms;
  int rc;                    /* store's verdict, after the write */
  int refusals;              /* times the store refused it as bad data: the
                                completer rewrites it, then drops it */
  /* The start of a job claimed ahead (PAWL_OUT_STARTED) is written by the
   * completer with the outcomes around it, not by its worker, so that a
   * job costs no write of its own to start. Its worker's slot (`slot`,
   * guarded by h->mu) points to it while it waits in the queue: the
   * worker's outcome for that attempt, pushed before the completer took
   * the start, marks it `superseded` (the outcome carries the start), and
   * the completer drops it unwritten. The completer clears the slot when
   * it takes the start. NULL for other outcomes. */
  struct host_outcome **slot;
  int superseded;
  struct host_outcome *next;
} host_outcome_t;

/* A job handed to a worker. */
typedef struct host_item {
  pawl_job_t *job;
  int64_t claimed_mono;      /* when the claim returned (monotonic ms) */
  int slot;                  /* h->qslots index of its queue's own workers;
                                -1: the shared pool's */
  struct host_item *next;
} host_item_t;

/* A queue with workers of its own on this node (queues:
 * pawl_host_opts_t.queue_concurrency): its jobs are claimed by a claim of
 * their own, at most `limit - held` at a time, so that `held` (claimed and
 * not yet run to the end: queued or running) never exceeds `limit`. The
 * host runs `limit` more worker threads for it, so a job of it that is
 * queued always finds a worker no other queue may take: a busy queue never
 * starves another, and one never runs more than `limit` jobs at once. */
typedef struct host_qslot {
  const char *name;          /* borrowed from h->queues */
  int limit;
  int held;
  /* Its last claim found fewer due jobs than it asked for: it is not
   * claimed again before there is news (h->news: an enqueue, a NOTIFY, a
   * resume, the poller's timed wait ending) or poll_ms has passed, so that
   * an idle queue costs no claim each time another queue's job ends. */
  int dry;
  uint64_t dry_news;
  int64_t dry_at;            /* mono ms */
} host_qslot_t;

/* A script file: type name ("_defaults" for the defaults file), path, and
 * the text the workers load: the file as read at the scan, or, when that
 * did not load, the text of the version that keeps serving (src NULL:
 * unreadable; loading the path says why). */
typedef pawl__script_t host_script_t;

typedef struct host {
  pawl_t *p;                 /* the handle that started the host */
  pawl_host_opts_t opts;     /* strings below are owned copies */
  pawl_retention_t *retention; /* owned copy of opts.retention, or NULL
                                  (retention.c) */
  char *scripts_dir;
  char **queues;
  char **allow_webhook;      /* opts.allow_webhook's copies */
  double avg_job_ms;         /* moving average of job durations (under mu),
                                for the adaptive prefetch */
  host_logger_t log;

  pthread_mutex_t mu;
  pthread_cond_t poll_cv;    /* poller waits here */
  pthread_cond_t work_cv;    /* workers wait here */
  pthread_cond_t done_cv;    /* completer waits here */
  pthread_cond_t stop_cv;    /* pawl_wait() waits here */
  pthread_cond_t load_cv;    /* the loader waits here */
  int wake;                  /* poller: something changed, look again */
  host_item_t *queue_head, *queue_tail; /* the shared pool's jobs */
  int queued;                /* claimed, waiting for a worker (both lists) */
  int running;               /* being run by a worker */
  /* Per-queue concurrency (queues; see host_qslot_t). The jobs
   * of queues with workers of their own wait in a list of their own
   * (own_head), which workers take first: each of them has a worker
   * free. The shared pool's (queue_head) are taken while fewer than
   * `pool` of its jobs run. With no queue numbered, pool is every worker
   * and this is the host as it always was. */
  host_qslot_t *qslots;
  int nqslots;
  host_item_t *own_head, *own_tail;
  int own_queued;            /* in own_head's list */
  int pool;                  /* the shared pool's workers (0: none) */
  int64_t pool_moved_mono;   /* when a job of the pool last started or
                                ended (monotonic ms): with every worker of
                                the pool busy and nothing moved for
                                opts.ahead_hold_ms, they are busy on long
                                jobs, and the jobs claimed ahead go back
                                (poller.c) */
  int pool_running;          /* its jobs being run */
  char **pool_queues;        /* the queues it claims (borrowed from
                                h->queues); npool_queues 0: every queue */
  size_t npool_queues;
  uint64_t news;             /* bumped when jobs may have come due: an
                                enqueue or NOTIFY (pawl__host_wake), the
                                poller's timed wait running out */
  host_outcome_t *out_head, *out_tail;
  int outcomes;              /* waiting for the completer */
  int writing;               /* outcomes the completer is writing now */
  int stopping;              /* 0, PAWL_STOP_GRACEFUL or PAWL_STOP_NOW */
  int poller_done, completer_done, watchdog_done;
  int workers_alive;         /* workers still able to produce outcomes */
  int stopped;               /* all threads ended; pawl_wait may join */
  int joined;

  /* Scripts: the list, its generation (bumped on every change seen; 0
   * until the loader has installed the first list: no job is claimed
   * before). */
  host_script_t *scripts;
  size_t nscripts;
  uint64_t scripts_gen;
  /* Recurring definitions the loaded scripts declare, set by
   * the loader with each list it installs (crons_gen bumped); the
   * poller's ticker writes them to the database (ticker.c). */
  pawl_recurring_t *crons;
  size_t ncrons;
  uint64_t crons_gen;
  /* The redact lists of the loaded scripts, as the JSON that
   * pawl__types_sync() takes, set by the loader with each list it
   * installs (types_gen bumped); the poller writes them (types_sync.c).
   * NULL: none to write. */
  char *types_json;
  uint64_t types_gen;
  struct loader *loader_state;
  worker_t *probe;           /* the loader's state, for the watchdog */
  worker_t *alerter;         /* the loader's alert state (alerts.c),
                                for the watchdog and the stop;
                                set (under mu) by the loader thread once
                                made; NULL: not yet */
  /* The servers around the engine (ops/, hooks.h): the table pawl_start
   * was given; NULL: none (step mode). */
  const struct pawl__ops_hooks *ops;
  struct webhook *webhook;   /* pawl.alert.webhook's sender (ops/webhook.c);
                                NULL: none (step mode) */
  pthread_t loader;
  int loader_done;
  int64_t loader_giveup_at;  /* mono ms: a loader still stuck (a blocking C
                                call in a script's top level) once the rest
                                has stopped is left behind then */
  int loader_abandoned;      /* never free the host */

  worker_t **workers;
  int nworkers;
  struct poller *poller_state;
  int64_t started_at;        /* store clock, for the node table */
  char *queues_csv;          /* the served queues, for the node table */
  int64_t abandon_at;        /* mono ms after which workers still stuck
                                (in a blocking C call) are left behind */
  int abandoned;             /* workers left behind: never free the host */
  pthread_t poller, completer, watchdog, checkpointer, listener, chores;
  int checkpointer_done, listener_done;
  /* The chores thread (pawl__chores_main): its state, whether it is told
   * to stop (by the poller, once nothing runs: before the node's stop is
   * recorded, after which no beat may follow) and has stopped, and a sweep
   * asked for soon (--until-idle waiting for a dead node's leases).
   * chores_cv wakes it. Under mu. */
  struct poller *chores_state;
  int chores_stop, chores_done, chores_started, sweep_soon;
  pthread_cond_t chores_cv;
  /* Rounds of chores done, and a round asked for at once (the poller's
   * --until-idle stops only after a round that began once it found
   * nothing to do: the scripts' recurring definitions written, what is
   * due fired). */
  uint64_t chores_rounds;
  int chores_asked;
  int listener_started;      /* the store can listen: the thread was started */
  /* What the listener heard since the poller's last claim (store.h,
   * wakeup.wait: payloads, each ending in '\n'), and whether it has heard
   * every wakeup since it began listening (0 while it is down): the
   * poller's claims start from floors only then (claim.hear). Under mu. */
  pawl_buf_t heard;
  int hearing;
  /* When the last heartbeat reached the database (monotonic ms). A job
   * whose lease was last renewed longer than a lease ago may have been
   * taken back by another node: it is not started (see pawl__host_lapsed()). */
  int64_t beat_ok_mono;
  int lapsed_logged;         /* "not starting new jobs" was logged */
  /* Stopping with a database that does not take outcomes: a failed write
   * after flush_until (monotonic ms; 0 while not stopping) is final. */
  int64_t flush_until;
  int backlog;               /* outcomes the completer holds after a failed
                                write: the poller claims that many fewer */
  int64_t writes_failing_since; /* mono ms of the first of the completer's
                                failed rounds in a row, 0: the last wrote */
  char write_err[512];       /* why it failed */
  struct completer *completer_state; /* its buffers, made by pawl_start */
  /* How the host ended (pawl_host_status): it gave up (until_idle, claims
   * failing), and outcomes it could not store (logged one by one). */
  int gave_up;
  char gave_up_msg[640];
  int unstored;
  int unstored_rc;
  char unstored_msg[300];
  int states_ready, states_failed; /* workers' Lua states built at start */
  char start_err[512];       /* why a worker could not build its state */
  int interrupt_signal;      /* the signal that stops a worker's Lua code;
                                0: none (see pawl_host_opts_t) */
  int signal_held;           /* its handler is installed for this host
                                (released once the threads are joined) */
  struct step *step;         /* step mode (step.c): no threads; NULL for
                                pawl_start's host */
  /* Events waiting for delivery (events.c), oldest first. */
  host_event_t *ev_head, *ev_tail;
  /* Attached to a libuv loop (uv_attach.c): its state, and what an
   * enqueue calls to wake the loop (under mu, on the enqueuing thread). */
  void *uv;
  void (*wake_fn)(void *data);
  void *wake_data;

  /* The live host's controls (control.c) and the admin console
   * (ops/admin_server.c), under mu like the rest. */
  int draining;              /* pawl_drain(): the poller claims nothing */
  uint64_t reload_asked;     /* pawl_reload() tickets: the loader looks at */
  uint64_t reload_done;      /*   the directory while asked > done */
  pawl_script_error_t *load_errors; /* scripts that did not load at the */
  size_t nload_errors;       /*   last load (the loader's copy) */
  struct admin_server *admin; /* NULL: no admin listener */
  pthread_t admin_thread;
  int admin_started, admin_done;
  int admin_abandoned;       /* its Lua thread, stuck in a C call, was left */
  /* The metrics endpoint (metrics.c; ops/serve.c, ops/http.c): NULL
   * without one. The counters are added to by every thread without a
   * lock; metrics_thread refreshes the database gauges. */
  struct metrics *metrics;
  struct http_server *http;
  pthread_t metrics_thread;
  int metrics_started, metrics_done;
} host_t;

/* What pawl_start() and step mode (step.c) share of making a host:
 * pawl__host_new (NULL: out of memory), pawl__host_check_opts (checks the
 * numbers, fills in defaults; PAWL_EINVAL with `msg`),
 * pawl__host_copy_strings (owned copies; PAWL_ENOMEM, or PAWL_EIO for a
 * scripts directory that is not there) and pawl__host_free (its workers'
 * handles are closed: step mode detaches its own first). */
host_t *pawl__host_new(pawl_t *p, const pawl_host_opts_t *in);
int pawl__host_check_opts(pawl_t *p, host_t *h, char *msg, size_t len);
int pawl__host_copy_strings(host_t *h, const pawl_host_opts_t *in, char *msg,
                            size_t len);
void pawl__host_free(host_t *h);

/* Wakes the poller (an enqueue happened, a slot freed up). */
void pawl__host_wake(host_t *h);

/* Attached to a libuv loop (uv_attach.c): 1 when `h` is attached and the
 * calling thread is not the loop's (whose handles only it may close), so
 * pawl_close() is refused there. Takes h->mu. */
int pawl__uv_foreign(host_t *h);
/* Test seam (step.c): the clock that measures a step's budget, in
 * microseconds, in place of CLOCK_MONOTONIC, so that a unit test's jobs
 * "take" a given time without sleeping. NULL (always, outside tests). Set
 * before the first step; it is the monotonic clock's stand-in, never the
 * handle's clock (pawl_options_t.clock decides due times only). */
extern int64_t (*pawl__step_budget_us)(void);
/* Step mode (step.c): 1 while pawl_step() runs on `h` (job code, hooks,
 * event callbacks are inside it). On the stepping thread only. */
int pawl__step_in_step(host_t *h);

/* 1 if the lease of a job claimed at `claimed_mono` may have run out
 * (the database has not heard from this node for about a lease): such a
 * job must not start. Called with h->mu held. */
int pawl__host_lapsed(host_t *h, int64_t claimed_mono, int64_t now_mono);
/* The reason a job handed back for that is given in its history. */
#define HOST_LAPSED_WHY "not started: no heartbeat for about a lease"

/* Hands a claimed job that never started back to the store (pending again,
 * no attempt used) through the completer. Takes ownership of `job`. */
void pawl__host_hand_back(host_t *h, pawl_job_t *job);
/* pawl__host_hand_back() saying why (copied; NULL: the node is stopping):
 * the reason of the job's history event. */
void pawl__host_hand_back_why(host_t *h, pawl_job_t *job, const char *why);

/* Takes the next job a worker may run now (h->mu held): one of a queue
 * with workers of its own first, else the shared pool's while it has a
 * worker free; counted as running. NULL when there is none. */
host_item_t *pawl__host_take_locked(host_t *h);

/* A job taken by pawl__host_take_locked() has ended (run, or handed back
 * unstarted): its worker and its queue's slot are free again (h->mu
 * held). */
void pawl__host_item_done_locked(host_t *h, const host_item_t *it);

/* Hands back every job of the list `items` and frees the list. */
void pawl__host_hand_back_items(host_t *h, host_item_t *items);

/* Hands back the jobs claimed ahead and waiting for a worker (takes
 * h->mu for the queue). */
void pawl__host_release_queued(host_t *h);

/* Hands back the shared pool's queued jobs (claimed ahead of a free
 * worker) if every worker of the pool is busy and none of its jobs has
 * started or ended for `hold_ms` by `now` (monotonic ms); returns how many
 * went back. */
size_t pawl__host_release_stalled(host_t *h, int64_t now, int64_t hold_ms);

/* Makes the list of queue items for the `n` jobs a claim returned at
 * `claimed_mono` (takes the jobs; frees the array): *first..*last, NULL
 * when none. A job whose item cannot be allocated is freed (its lease
 * expires and recovery takes it back). Returns how many items. */
size_t pawl__host_items_make(pawl_job_t **jobs, size_t n, int64_t claimed_mono,
                             host_item_t **first, host_item_t **last);

/* Hands a finished attempt to the completer. Takes ownership. */
void pawl__host_push_outcome(host_t *h, host_outcome_t *o);

/* Frees an outcome and everything it owns (not its hook ref). */
void pawl__host_outcome_free(host_outcome_t *o);

/* A copy of the current script list (caller frees with
 * pawl__host_scripts_free); *gen receives its generation. */
host_script_t *pawl__host_scripts_copy(host_t *h, size_t *n, uint64_t *gen);

/* A copy of the loader's list of broken scripts (called with h->mu held):
 * the caller frees it with pawl_script_errors_free(). -1 when out of
 * memory. */
int pawl__host_copy_load_errors(host_t *h, pawl_script_error_t **out,
                                size_t *n);
void pawl__host_scripts_free(host_script_t *s, size_t n);

/* ---- events (events.c) -------------------------------------------------- */

/* An event of `job` (or of `id` when job is NULL) for the host's
 * event_fn, queued for delivery (nothing without one). _locked: with h->mu
 * held; pawl__host_event takes it and wakes the completer.
 * pawl__host_events_ready (h->mu held): the next one may be delivered.
 * pawl__host_events_deliver: calls event_fn for every ready event, on the
 * calling thread (the delivering one: completer, stepping or loop
 * thread), without h->mu. pawl__host_events_free: those never delivered,
 * at the host's end. The enqueue_* ones are pawl__host_ops_t's. */
void pawl__host_event_locked(host_t *h, pawl_event_kind_t kind,
                             const pawl_job_t *job, const pawl_id_t *id,
                             int32_t attempt, const char *error,
                             int64_t run_at);
void pawl__host_event(host_t *h, pawl_event_kind_t kind, const pawl_job_t *job,
                      int32_t attempt);
int pawl__host_events_ready(const host_t *h);
void pawl__host_events_deliver(host_t *h);
void pawl__host_events_free(host_t *h);
void *pawl__host_enqueue_begin(host_t *h, size_t n);
void pawl__host_enqueue_fill(void **place, int more, const pawl_id_t *id,
                             const char *type, const char *queue,
                             int64_t run_at, int made);
void pawl__host_enqueue_end(host_t *h, void *first, size_t n);

/* ---- the threads -------------------------------------------------------- */

/* Each thread's state is made by pawl_start() before any thread starts
 * (so that a failed allocation or a connection that cannot open fails the
 * start) and freed once the thread is joined. *_main is the thread. The
 * _new functions return 0 or a PAWL_E* code with the message in err. */

/* The poller (poller.c), with its own connection. */
int pawl__poller_new(host_t *h, struct poller **out, char *err,
                     size_t errlen);
void pawl__poller_free(struct poller *pl);
void *pawl__poller_main(void *arg);
/* The chores thread: pawl__poller_chores on a poller of its own (made by
 * pawl__poller_new; the claiming poller then runs none). */
void *pawl__chores_main(void *arg);
/* Step mode: a poller's chores on a borrowed handle, run by pawl_step()
 * on its thread: pawl__poller_chores extends the node's leases and beats
 * every heartbeat_ms and sweeps expired leases every half lease (at
 * monotonic time `now`); pawl__poller_next_chore says when next. */
int pawl__poller_borrow(host_t *h, pawl_t *p, struct poller **out);
void pawl__poller_chores(struct poller *pl, int64_t now);
int64_t pawl__poller_next_chore(const struct poller *pl);

/* The completer (completer.c); it opens its connection itself. */
struct completer *pawl__completer_new(host_t *h);
void pawl__completer_free(struct completer *c);
void *pawl__completer_main(void *arg);
/* Step mode: writes every outcome queued now on the calling thread, with
 * `p` (borrowed for the call), as the completer thread's rounds do
 * (batches, refusals, the log), and posts stored ones with hooks to their
 * worker's inbox. Returns 0, or the code of a database that is away: then
 * what is left is kept, in order, for the next drain. */
int pawl__completer_drain(struct completer *c, pawl_t *p);

/* The loader (loader.c) and its Lua state (the probe, h->probe): made on
 * the calling thread before the workers' states (see pawl__lua_open());
 * sets h->loader_state and h->probe. Its thread installs the first script
 * list once every worker's state is ready. pawl__loader_free: also when
 * its thread never started. */
int pawl__loader_new(host_t *h, char *err, size_t errlen);
void pawl__loader_free(host_t *h, struct loader *ld);
void *pawl__loader_main(void *arg);
/* Looks at the scripts directory and, if it changed, loads the new list
 * into `probe`'s state and installs it (bumping h->scripts_gen): 1 when
 * it installed one, 0 when nothing changed, -1 when a stop cut it short.
 * Step mode calls it with its own worker as the probe. */
int pawl__loader_scan(host_t *h, uint64_t *last_sig, worker_t *probe);

/* The ticker (ticker.c): recurring definitions, as one of the
 * chores (so that pawl_start's host, step mode and a host on a libuv loop
 * all tick, on the chores thread's or the stepping thread's handle).
 * pawl__ticker_chore: once the loader installed new definitions, writes
 * them (pawl__recurring_sync); every PAWL__TICK_MS, or at once while a
 * tick left more due, ticks (pawl__recurring_tick), unless the host is
 * stopping. */
#define PAWL__TICK_MS 1000
typedef struct host_ticker {
  int64_t next_tick;         /* mono ms */
  uint64_t synced_gen;       /* the crons_gen written */
  int synced;                /* 1 once a sync was written */
  /* The scripts this node had at its last sync (those that declared a
   * definition, and those that failed to load): a script gone since is
   * one of these that it does not have now. Owned. */
  char **had;
  size_t nhad;
} host_ticker_t;
/* Frees what the ticker holds (the poller's end). */
void pawl__ticker_free(host_ticker_t *t);
void pawl__ticker_chore(host_t *h, pawl_t *p, host_ticker_t *t, int64_t now);

/* pawl__types_chore (types_sync.c), a poller chore too: once the
 * loader installed new scripts, writes their redact lists to pawl_types
 * (pawl__types_sync), so that admin views without the scripts hide the
 * same fields. *synced: the types_gen written (a failed write is tried
 * again at the next chore). */
void pawl__types_chore(host_t *h, pawl_t *p, uint64_t *synced);
/* Dead-letter alerts. pawl__alerts_chore (alerts.c): on the
 * loader thread, with the alerter state `w` (its handle w->p): runs the
 * global on_dead hook for the outbox's rows this node takes; returns how
 * many hooks ran. *failing (the caller's, 0 at first): the outbox could
 * not be read last time (its error is logged once, not every round). */
int pawl__alerts_chore(host_t *h, worker_t *w, int *failing);
/* Retention (retention.c): old finished jobs removed as one of
 * the chores, on the node that holds the lock "pawl.retention", one batch
 * per chore (a transaction) with the policy's pause between batches; a sweep every
 * policy->every_ms. pawl__retention_copy: h->retention from the options
 * (checked; PAWL_EINVAL or PAWL_ENOMEM with msg); pawl__retention_drop
 * frees it and the chore's state. */
typedef struct host_retention {
  int64_t next_at;           /* mono ms */
  int active;                /* a sweep is under way (we hold the lock) */
  struct pawl__retain_cursor *cur; /* owned */
} host_retention_t;
int pawl__retention_copy(host_t *h, const pawl_retention_t *in, char *msg,
                         size_t len);
void pawl__retention_drop(host_t *h);
void pawl__retention_chore(host_t *h, pawl_t *p, host_retention_t *r,
                           int64_t now);
void pawl__retention_stop(pawl_t *p, host_retention_t *r);

/* The watchdog (watchdog.c), the checkpointer (checkpointer.c) and the
 * listener (listener.c): their argument is the host. */
void *pawl__watchdog_main(void *arg);
void *pawl__checkpointer_main(void *arg);
void *pawl__listener_main(void *arg);

#endif
