/* pawl_internal.h: what the API layer (api/) offers the runner beyond
 * include/pawl.h: pawl__ functions for the chores of a worker host that
 * are not part of the public API (node beats, the lease-recovery lock,
 * the wakeup connection, sibling handles), so that runner/ never touches
 * the store interface. Never installed.
 *
 * Each function acts on one handle and follows the handle's rule: one
 * thread at a time. Functions that return an int return 0 or a negative
 * PAWL_E* code and leave the reason in pawl_errmsg(p). */
#ifndef PAWL_INTERNAL_H
#define PAWL_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "pawl.h"

struct host;

/* What the API calls of the worker host attached to a handle. The runner
 * fills it in (pawl_start), so that api/ does not depend on runner/. */
typedef struct pawl__host_ops {
  /* An enqueue succeeded on a handle of the host (its own or a
   * sibling's): wake the poller. Called on the enqueuing thread. */
  void (*wake)(struct host *h);
  /* pawl_close() of the handle that started the host: stop it, wait for
   * its threads, free it. Called on the closing thread. */
  void (*free)(pawl_t *p);
  /* Events of an enqueue (runner/events.c), so that a job's ENQUEUED
   * event comes before anything the host does with it: places for `n`
   * events are taken before the insert (NULL: the host wants none),
   * filled after it for the jobs it made (fill: the job at `*place`,
   * which moves on to the next when `more`), and committed (unfilled places are dropped). May be
   * NULL (no events). Called on the enqueuing thread. */
  void *(*enqueue_begin)(struct host *h, size_t n);
  void (*enqueue_fill)(void **place, int more, const pawl_id_t *id,
                       const char *type, const char *queue, int64_t run_at,
                       int made);
  void (*enqueue_end)(struct host *h, void *first, size_t n);
  /* pawl_close() of the handle that started the host asks first: nonzero
   * refuses the close (the handle is left as it was). May be NULL. Called
   * on the closing thread. */
  int (*close_refused)(pawl_t *p);
} pawl__host_ops_t;

/* Checks a handle at the entry of a public function: PAWL_EMISUSE for
 * NULL, a closed handle (its magic poisoned) or, once the handle is bound
 * to its stepping or loop thread, a call from another thread (the message
 * is not set then: pawl_errmsg() belongs to the owner's thread); else 0. */
int pawl__check(pawl_t *p);
#define PAWL__CHECK(p)                 \
  do {                                 \
    int pawl__rc_ = pawl__check(p);    \
    if (pawl__rc_) return pawl__rc_;   \
  } while (0)
/* Only the magic (for calls safe from any thread: pawl_stop, the live
 * host's controls). */
int pawl__check_open(pawl_t *p);
#define PAWL__CHECK_OPEN(p)                \
  do {                                     \
    int pawl__rc_ = pawl__check_open(p);   \
    if (pawl__rc_) return pawl__rc_;       \
  } while (0)

/* Binds `p` to the calling thread (step mode, a libuv loop): from then on
 * the public functions refuse other threads (PAWL_EMISUSE), but pawl_stop()
 * and pawl_close() (see close_refused). pawl__bound: 1 when bound to the
 * calling thread, -1 to another thread, 0 not bound. */
void pawl__bind(pawl_t *p);
int pawl__bound(pawl_t *p);

/* Attaches host `h` (NULL: detaches) to `p`; `owns`: p started it and
 * frees it on pawl_close(). Handles opened by pawl__open_sibling() later
 * share it (borrowed). `ops` is static. */
void pawl__host_set(pawl_t *p, struct host *h, const pawl__host_ops_t *ops,
                    int owns);

/* The host attached to `p`, or NULL. */
struct host *pawl__host_get(pawl_t *p);

/* Opens another handle on the same database, node and lease token, for
 * one of the host's threads (each thread has its own connection). */
int pawl__open_sibling(pawl_t *parent, const char *principal, pawl_t **out,
                       char *errbuf, size_t errlen);

/* Sets p's error message and returns rc. */
int pawl__fail(pawl_t *p, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Job code acting through a handle (host/lua/host_fns.c, through the
 * runner's pawl__lua_config_t.act_as): who it is and what it may touch,
 * for the duration of one call (pawl__act_as(p, a) before it,
 * pawl__act_as(p, NULL) after; a's strings are borrowed meanwhile, and
 * the handle is the calling thread's own). While set:
 * - `name` ("job:<id> (<type>)") is recorded instead of the handle's
 *   principal as the actor of what the call changes: a signal's
 *   delivered_by, the cancel and replace events, a restart's event;
 * - pawl_signal(), pawl_replace() and the restart of a dead job instance
 *   by an enqueue act only on jobs whose enqueued_by is `owner`
 *   ("job:<id>": the jobs this job enqueued; "": none), unless `grants` has the
 *   action's bit; any other job is refused with PAWL_EPERM, decided by the
 *   store on the row it reads in the action's transaction;
 * - a replacement is enqueued by `owner`, so it stays the job's own. */
#define PAWL__GRANT_SIGNAL 1
#define PAWL__GRANT_REPLACE 2
#define PAWL__GRANT_RESTART 4
typedef struct pawl__actor {
  const char *name;
  const char *owner;
  int grants;
} pawl__actor_t;
void pawl__act_as(pawl_t *p, const pawl__actor_t *a);

/* The prefix of the host's own lock names ("pawl.recover",
 * "pawl.recurring", "pawl.retention"): the public lock functions refuse
 * names that begin with it, in any case, so that neither job code nor an
 * embedder can take, extend or release a lock the host's chores rely on;
 * the host takes them through the store. */
#define PAWL__HOST_LOCK_PREFIX "pawl."

/* The lease this handle's claims take, in ms (pawl_options_t.lease_ms). */
int64_t pawl__lease_ms(pawl_t *p);

/* The backend's name ("sqlite", "postgres"), static. */
const char *pawl__store_name(pawl_t *p);

/* How far the database's clock is ahead of this machine's, in ms (0 when
 * the database does not keep the time: SQLite). */
int64_t pawl__skew_ms(pawl_t *p);

/* Records this node in the node table: its id and lease token (the
 * handle's), the version, the queues it serves (comma-separated, "" for
 * all) and when it started (store clock ms). */
int pawl__node_beat(pawl_t *p, const char *version, const char *queues,
                    int64_t started_at);

/* Marks this node (its id and incarnation) as stopped cleanly. */
int pawl__node_stop(pawl_t *p);

/* Removes nodes silent for longer than silent_ms; *n: how many. */
int pawl__nodes_reap(pawl_t *p, int64_t silent_ms, size_t *n);

/* The earliest deadline of a wait for a signal still waiting (store
 * clock ms; 0: none): when pawl_signal_expire() next has work. */
int pawl__signal_next_deadline(pawl_t *p, int64_t *at);

/* The distributed lock under which one node at a time sweeps expired
 * leases (pawl_recover): held by this node for a lease, freed by its TTL
 * if the node dies. *got: 1 if this node holds it now. */
int pawl__recover_lock(pawl_t *p, int *got);
int pawl__recover_unlock(pawl_t *p);

/* Wakeup across processes (PostgreSQL LISTEN/NOTIFY). pawl__can_listen:
 * 1 if the backend has it. pawl__listen makes `p` a listening connection
 * (used for nothing else afterwards); pawl__wakeup_wait waits up to
 * timeout_ms, *woke = 1 if jobs were enqueued meanwhile, and appends to
 * `heard` (may be NULL) what the wakeups said (store.h, wakeup.wait). */
int pawl__can_listen(pawl_t *p);
int pawl__listen(pawl_t *p);
int pawl__wakeup_wait(pawl_t *p, int timeout_ms, int *woke,
                      pawl_buf_t *heard);

/* Floors for the claims and next_due on `p` from now on (store.h,
 * claim.hear): the poller says `listening` while its listener hears every
 * wakeup, and hands over what it heard since the last call (NULL:
 * nothing). Until a call says so, a handle's claims read from the top of
 * the claim order. */
void pawl__claim_floors(pawl_t *p, int listening, const char *rewinds);

/* Job types defined on a handle (pawl_define, pawl_define_file,
 * pawl_define_c; api/defs.c), for the runner to load beside the scripts
 * directory. A Lua one has src (len bytes) and path (its chunk name: the
 * file's path, or "=TYPE"); a C one has fn, ud and opts (opts.queue owned
 * by the entry). pawl__defs_copy: a copy the caller frees with
 * pawl__defs_free, *gen bumped by every definition; safe while another
 * thread defines (a lock of the handle's). 0 or PAWL_ENOMEM. */
typedef struct pawl__def {
  char *type;
  char *src;
  size_t len;
  char *path;
  pawl_job_fn fn;
  void *ud;
  pawl_define_opts_t opts;
} pawl__def_t;
int pawl__defs_copy(pawl_t *p, pawl__def_t **out, size_t *n, uint64_t *gen);
void pawl__defs_free(pawl__def_t *d, size_t n);
size_t pawl__defs_count(pawl_t *p);

/* Step mode (runner/step.c): whether the handle's clock is injected
 * (pawl_options_t.clock), so that a step's budget is measured by it; and
 * a number that changes when another connection has committed since the
 * last call (pawl__data_version: 0, or PAWL_EINVAL when the backend cannot
 * tell, PostgreSQL; see store.h maintenance.data_version). */
int pawl__clock_injected(pawl_t *p);
int pawl__data_version(pawl_t *p, uint64_t *v);

/* Recurring definitions (api/recurring.c).
 * pawl__recurring_tick: one tick, if this node gets the tick lock
 * ("pawl.recurring"; else it does nothing): reads the due definitions in
 * bounded batches (at most max_defs of them), enqueues their occurrences
 * and advances their schedules (see recurring.c for the misfire rules);
 * *enqueued: jobs made; *more: 1 when it stopped at max_defs with more
 * perhaps due (tick again soon); *next_at (may be NULL): the earliest
 * next fire among the definitions that can fire (store clock ms), 0 when
 * none. When none is due it only reads (one row of an index): no lock,
 * no write.
 * pawl__recurring_sync: writes the definitions the loaded scripts declare
 * (defs[0..n), each with its script's name in `script`; borrowed), keeping
 * the schedule of one whose expression and zone did not change. The
 * scripts that fail to load (broken[0..nbroken), by type) keep their
 * definitions as they are, enabled or not, with the error noted. It
 * disables the script-born definitions of the scripts that went from this
 * node since its last sync (lost[0..nlost)); at the first sync of a node
 * (`first`), when no other node is alive to have them, those of every
 * script it does not have. Definitions it could not write (an operator's
 * holds the name) are counted in *nerr, the first one's reason in err. */
int pawl__recurring_tick(pawl_t *p, size_t max_defs, size_t *enqueued,
                         int *more, int64_t *next_at);
int pawl__recurring_sync(pawl_t *p, const pawl_recurring_t *defs, size_t n,
                         const pawl_script_error_t *broken, size_t nbroken,
                         const char *const *lost, size_t nlost, int first,
                         char *err, size_t errlen, size_t *nerr);

/* Job types (types.c): records the redact lists of the loaded
 * scripts in pawl_types, `types` being [[type, [field, ...]], ...] (JSON,
 * borrowed; what pawl__lua_types_json() makes). Rows of other types stay.
 * PAWL_EINVAL when `types` is not that shape. */
int pawl__types_sync(pawl_t *p, const char *types);
/* Dead-letter alerts (api/alerts.c). The outbox holds a row for
 * every job that moved to failed (written by the database in that
 * transaction) and for every dedup window that ended with alerts
 * suppressed (kind 1). pawl__alerts_take: leases at most `max` free rows
 * to this node for lease_ms (1..PAWL_DELAY_MAX_MS), oldest first, after ending
 * the windows whose time is up; *out: pawl__alerts_free().
 * pawl__alert_note: the dedup decision for a kind 0 row (a->verdict 1:
 * run the hook, count 1; 2: suppressed, counted in its window of
 * window_ms), kept on the row so that a row taken again is not counted
 * twice; PAWL_ELEASE when the row is no longer this node's.
 * pawl__alert_done: deletes the row once its hooks ran.
 * pawl__alert_fingerprint: the dedup key of (type, error). */
typedef struct pawl__alert {
  int64_t seq;
  int kind;                  /* 0 a dead job, 1 a window's summary */
  pawl_id_t job_id;          /* kind 1: the last suppressed job */
  char *type, *queue, *error; /* owned */
  int32_t attempt;
  int64_t created_at;        /* store clock ms */
  int verdict;               /* 0 not decided, 1 run, 2 suppressed */
  int64_t count, suppressed, first_at, last_at;
} pawl__alert_t;
int pawl__alerts_take(pawl_t *p, size_t max, int64_t lease_ms,
                      pawl__alert_t **out, size_t *n);
int pawl__alert_note(pawl_t *p, int64_t window_ms, pawl__alert_t *a);
int pawl__alert_done(pawl_t *p, int64_t seq);
void pawl__alerts_free(pawl__alert_t *a, size_t n);
int64_t pawl__alert_fingerprint(const char *type, const char *error);
/* Retention (api/retention.c): the worker host's sweep, one
 * batch per poller chore. A cursor starts zeroed; the first batch fixes
 * the sweep's "now" (its cutoffs); c->done once the walk has looked at
 * every job old enough. pawl__retention_batch: removes the jobs of the
 * next batch that `pol` (checked: pawl__retention_check, 0 or PAWL_EINVAL
 * with err) lets go. pawl__retention_lock: the distributed lock
 * "pawl.retention" for ttl_ms (taken again by its holder to extend it);
 * *got 1 if this node holds it now. */
typedef struct pawl__retain_cursor {
  int started, done, have_id;
  int64_t key;                /* where the walk goes on from */
  pawl_id_t id;
  int64_t now, horizon;       /* the sweep's now; rows created after the
                                 horizon are too young to go */
  int64_t removed, scanned;
} pawl__retain_cursor_t;
int pawl__retention_check(const pawl_retention_t *r, char *err,
                          size_t errlen);
int pawl__retention_batch(pawl_t *p, const pawl_retention_t *pol,
                          pawl__retain_cursor_t *c);
/* *due: 1 if the oldest job is old enough that a sweep may find work (one
 * row read, nothing written: an idle sweep takes no lock). */
int pawl__retention_due(pawl_t *p, const pawl_retention_t *pol, int *due);
/* The pause after a batch that took took_ms (pawl__retention_pause): at
 * least r->pause_ms, and long enough that the sweep holds the database at
 * most r->share_pct percent of the time. */
int64_t pawl__retention_pause(const pawl_retention_t *r, int64_t took_ms);
int pawl__retention_lock(pawl_t *p, int64_t ttl_ms, int *got);
int pawl__retention_unlock(pawl_t *p);
/* The metrics endpoint's gauges (api/gauges.c). One read
 * snapshot of the store: cb gets the pending rows (count, oldest_due: the
 * earliest due run_at, 0 when none), the running rows, the finishes per
 * state and queue from minute `since` (pawl__minute_of) on (`since` set,
 * count 0), and, when `full`, the exact count of every other state (one
 * pass over the jobs: a few per cent of a second per million). *now:
 * the store clock it read at. Rows of one (state, queue) may repeat: add
 * them up. cb returns nonzero to fail with PAWL_ENOMEM. */
typedef struct pawl__gauge_row {
  const char *queue;  /* valid for the call */
  int state;
  int64_t count;
  int64_t since;
  int64_t oldest_due;
} pawl__gauge_row_t;
typedef int (*pawl__gauge_cb)(const pawl__gauge_row_t *row, void *data);
int pawl__gauges(pawl_t *p, int64_t since, int full, int64_t *now,
                 pawl__gauge_cb cb, void *data);
/* The throughput bucket (minute) of a store time, and how many minutes
 * the buckets are kept (a `since` older than that misses finishes). */
int64_t pawl__minute_of(int64_t ms);
#define PAWL__MINUTES_KEPT 30

#endif
