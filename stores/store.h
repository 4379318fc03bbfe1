/* store.h: the interface between the engine and a database backend.
 *
 * The engine depends on this file only; a backend is one folder under
 * stores/ that fills a `struct store_ops`. The operations are grouped by
 * responsibility, the way Ratchet splits its SPI: schema, jobs, keys, claim
 * (and leases), terminal outcomes, operator control (cancel, pause, resume,
 * manual retry, unblock), history, locks, nodes and settings. Later groups
 * (recurring, retention) are added as new members.
 *
 * The types the operations pass (rows, options, results, callbacks) are
 * in store_types.h, which this file includes. The end of this file
 * declares what the backends share, defined in stores/common/ (errors.c,
 * migrate.c, plan.c, rows.c, limits.c, fault_store.c); stores/store.c
 * opens the backend a URL names.
 *
 * Rules every backend follows:
 * - one connection per store_t; a store_t is used by one thread at a time;
 * - every statement is prepared once per connection and reused;
 * - values are always bound, never pasted into SQL text;
 * - "now" for every decision comes from pawl__store_now(): the injected clock in
 *   tests, otherwise the database clock;
 * - claiming cost must not grow with the number of finished jobs kept;
 * - each operation is atomic: on failure nothing it meant to write is
 *   written, and st->errmsg names the problem.
 *
 * Every function returns 0 or a negative PAWL_E* code (see pawl.h).
 */
#ifndef PAWL_STORE_H
#define PAWL_STORE_H

#include "buf.h"
#include "pawl.h"
#include "store_types.h"

struct store_ops {
  const char *name;

  struct {
    /* Applies pending migrations (each in its own transaction). */
    int (*migrate)(store_t *st);
    int (*version)(store_t *st, int *current, int *latest);
  } schema;

  struct {
    /* Inserts n jobs in one transaction. status[i] gets PAWL_ENQ_*, ids[i]
     * the id stored or found. A refused business key fails the whole call
     * with PAWL_EKEY. */
    int (*insert)(store_t *st, const store_new_job_t *jobs, size_t n,
                  pawl_id_t *ids, int *status);
    int (*get)(store_t *st, const pawl_id_t *id, pawl_job_t **out);
    int (*list)(store_t *st, const pawl_filter_t *f, pawl_job_cb cb,
                void *data);
    /* Records the progress of the attempt `token` holds under `attempt`
     * (running, same lease token and attempt); PAWL_ELEASE otherwise. Not a
     * transition: the version does not change. A claim clears it. */
    int (*progress)(store_t *st, const pawl_id_t *id, const pawl_id_t *token,
                    int32_t attempt, double done, double total);
    /* A job's log lines, in the order they were written. *out is NULL when
     * there are none (pawl_logs_free()); PAWL_ENOTFOUND for no such job. */
    int (*logs)(store_t *st, const pawl_id_t *id, pawl_log_record_t **out,
                size_t *n);
  } jobs;

  struct {
    /* The job that holds an idempotency key (forever) or a live business
     * key. PAWL_ENOTFOUND if none. */
    int (*find_idempotent)(store_t *st, const char *key, pawl_id_t *out);
    int (*find_business)(store_t *st, const char *key, pawl_id_t *out);
  } keys;

  struct {
    /* Claims up to c->max due jobs in one transaction; see pawl_claim(). */
    int (*claim)(store_t *st, const store_claim_t *c, pawl_job_t ***out,
                 size_t *n);
    /* Extends every lease held by `token` that has not run out, in one
     * statement (one that has may have been taken back already: it is
     * recovery's). */
    int (*extend)(store_t *st, const pawl_id_t *token, int64_t lease_ms,
                  size_t *n);
    /* Takes back jobs whose lease expired (see pawl_recover() and
     * pawl__store_plan_recovery()). */
    int (*recover)(store_t *st, size_t *n);
    /* Records that the attempt `token` holds under `attempt` starts now:
     * with `poison`, a pawl_started row with the job's version (what
     * pawl_begin() and pawl_claim() do for jobs recovered before); with
     * `at` (not 0), the job's started_at if it has none (a job claimed
     * ahead: store_claim_t.ahead_from), at most the store's now.
     * PAWL_ELEASE if the attempt is not held. */
    int (*start)(store_t *st, const pawl_id_t *id, const pawl_id_t *token,
                 int32_t attempt, int64_t at, int poison);
    /* Extends the lease of one attempt held by `token`; *held is 1 if it
     * was (running, same token and attempt), else 0 and nothing changes. */
    int (*extend_one)(store_t *st, const pawl_id_t *id, const pawl_id_t *token,
                      int32_t attempt, int64_t lease_ms, int *held);
    /* The earliest run_at among pending jobs of `queues` (every queue when
     * nqueues is 0); 0 when none is pending. Like claiming, its cost must
     * not grow with the finished jobs kept. */
    int (*next_due)(store_t *st, const char *const *queues, size_t nqueues,
                    int64_t *run_at);
    /* Floors (PostgreSQL; NULL for a backend without). With `listening`,
     * the claims and next_due that follow may start where this handle's
     * last claim stopped instead of at the top of the claim order, and
     * `rewinds` (the payloads of the wakeups heard since the last call,
     * each ending in '\n'; NULL for none) says how far back rows have
     * become claimable since: "*" means anywhere. The caller says
     * `listening` only while it hears every wakeup (one missed would leave
     * a job above a floor until the next "*"); without it, and on a
     * handle with an injected clock, every claim reads from the top. */
    void (*hear)(store_t *st, int listening, const char *rewinds);
  } claim;

  struct {
    /* Writes outcomes of attempts held by `token` in one transaction, each
     * with its log lines (stored under the outcome's attempt, also when the
     * outcome is refused as stale, as long as the job exists). A log line
     * with `at` 0 is stamped with the time of the finish. */
    int (*finish)(store_t *st, const pawl_id_t *token,
                  const pawl_outcome_t *outs, size_t n, int *rcs);
  } terminal;

  struct {
    /* `owner`: NULL, or the enqueued_by the job must have (job code
     * acting without a grant, pawl__store_owner_check): PAWL_EPERM
     * otherwise, decided on the row read in the transaction. */
    int (*transition)(store_t *st, const pawl_id_t *id, store_op_t op,
                      const char *actor, const char *owner,
                      const char *reason, pawl_job_t **out);
  } control;

  struct {
    int (*get)(store_t *st, const pawl_id_t *id, pawl_history_t **out);
  } history;

  struct {
    /* Acquires `name` if it is free, expired or already ours; *got says. */
    int (*acquire)(store_t *st, const char *name, const char *owner,
                   int64_t ttl_ms, int *got);
    /* Extends our unexpired lock; *ok = 0 if we no longer hold it. */
    int (*extend)(store_t *st, const char *name, const char *owner,
                  int64_t ttl_ms, int *ok);
    int (*release)(store_t *st, const char *name, const char *owner);
  } locks;

  struct {
    int (*beat)(store_t *st, const store_node_t *node);
    int (*list)(store_t *st, store_node_cb cb, void *data);
    /* Removes nodes silent for longer than silent_ms. */
    int (*reap)(store_t *st, int64_t silent_ms, size_t *n);
    /* Marks the node (id and incarnation) as stopped cleanly, now; its
     * next beat (a restart under the same id) clears the mark. */
    int (*stop)(store_t *st, const char *id, const pawl_id_t *incarnation);
  } nodes;

  struct {
    int (*age_boost)(store_t *st, int64_t *ms);
  } settings;

  struct {
    /* Moves committed pages from the write-ahead log into the database
     * without blocking writers; NULL for backends that need nothing. */
    int (*checkpoint)(store_t *st);
    /* A number that changes whenever another connection (of this process
     * or another) has committed a change to the database since the last
     * call on this store: lets an idle step-mode host (runner/step.c) see
     * in a microsecond that nobody enqueued, without a claim. NULL for
     * backends that cannot tell (PostgreSQL: it listens instead). */
    int (*data_version)(store_t *st, uint64_t *v);
  } maintenance;

  /* Wakeup across processes: other nodes' enqueues wake this one at once
   * (PostgreSQL LISTEN/NOTIFY). NULL for backends without it; the host
   * polls anyway as a safety net. A store that listens is used for
   * nothing else. */
  struct {
    int (*listen)(store_t *st);
    /* Waits up to timeout_ms; *woke = 1 if jobs were enqueued meanwhile.
     * With `heard` (may be NULL), appends each wakeup's payload and a
     * '\n' (claim.hear reads them), and "*\n" when wakeups may have been
     * missed (the connection was lost and made again). */
    int (*wait)(store_t *st, int timeout_ms, int *woke, pawl_buf_t *heard);
  } wakeup;

  void (*close)(store_t *st);

  /* Administration (host/api/admin.c): bulk actions, statistics, the
   * locks and the nodes' running jobs. See "administration" below. */
  struct {
    /* How many jobs match `m`, counting at most `max`. */
    int (*count)(store_t *st, const store_match_t *m, int64_t max,
                 int64_t *n);
    /* Up to `max` jobs matching `m` after `after` (NULL: from the start)
     * in the backend's walk order, with their versions: the next batch of
     * a bulk action. *n < max only at the end of the walk. */
    int (*pick)(store_t *st, const store_match_t *m,
                const store_pick_t *after, size_t max, store_pick_t *out,
                size_t *n);
    /* Moves the picked jobs by `op` in one transaction, each a
     * compare-and-set on its picked version with its history event (as
     * control.transition). A job whose version changed is skipped, one
     * whose move is refused now (a business key held) is refused; each
     * counted in *r (added to). */
    int (*apply)(store_t *st, store_op_t op, const char *actor,
                 const char *reason, const store_pick_t *picks, size_t n,
                 pawl_bulk_result_t *r);
    /* Calls of cb per (state, queue): the counts of the jobs in each
     * state, the throughput from the buckets of pawl_throughput (see
     * "Throughput" above) and the oldest due run_at, as store_stat_row_t
     * says; several rows of one (state, queue) add up. Live counts read the
     * partial indexes of pending and running rows; the finished counts
     * read the table once (exact; no index on finished rows, so that a
     * finish costs no index entry). */
    int (*stats)(store_t *st, int64_t now, store_stat_cb cb, void *data);
    int (*locks)(store_t *st, store_lock_cb cb, void *data);
    /* Running jobs per lease owner (node id). */
    int (*running)(store_t *st, store_owner_cb cb, void *data);
  } admin;
  /* Recurring definitions (host/api/recurring.c
   * decides, these only read and write). The definitions a tick reads are
   * found through a partial index on next_fire_at of the enabled, unpaused
   * ones, never one query per definition. */
  struct {
    /* Writes `d` (its name, settings, source, next_fire_at, paused,
     * enabled) as `how` says (STORE_REC_*); *done = 0 when a script's
     * definition was not written (an operator's holds the name). */
    int (*put)(store_t *st, const pawl_recurring_t *d, int how, int *done);
    /* PAWL_ENOTFOUND for no such name; *out: pawl_recurring_free(*out, 1). */
    int (*get)(store_t *st, const char *name, pawl_recurring_t **out);
    /* Every definition by name; *out NULL when none (pawl_recurring_free). */
    int (*list)(store_t *st, pawl_recurring_t **out, size_t *n);
    /* Writes every field of `d` but created_at as a compare-and-set on
     * d->version: *changed = 1 if the row had it (the version then goes
     * up), 0 if it changed meanwhile or is gone. */
    int (*update)(store_t *st, const pawl_recurring_t *d, int *changed);
    /* PAWL_ENOTFOUND for no such name. */
    int (*remove)(store_t *st, const char *name);
    /* At most `max` enabled, unpaused definitions whose next_fire_at <=
     * now, earliest first (a bounded batch; the tick reads the next one
     * after advancing these). *out NULL when none. */
    int (*due)(store_t *st, int64_t now, size_t max, pawl_recurring_t **out,
               size_t *n);
    /* Advances n definitions in one transaction (see store_rec_advance_t):
     * for each, a compare-and-set of next_fire_at = expect_next (and still
     * enabled and unpaused), and only if it holds, its jobs inserted (an
     * idempotency key seen before makes no new job) and last_fire_at,
     * last_job_id (the last job's id) written. */
    int (*advance)(store_t *st, store_rec_advance_t *a, size_t n);
    /* Disables the enabled script-born definitions whose script is not
     * one of scripts[0..n) (listed 0: the scripts there are), or is one of
     * them (listed 1: the scripts that went); *count: how many. */
    int (*disable_gone)(store_t *st, const char *const *scripts, size_t n,
                        int listed, size_t *count);
    /* Notes `error` on the script-born definitions of `script`, which
     * fails to load (cleared by the next put of the script's). */
    int (*load_error)(store_t *st, const char *script, const char *error);
  } recurring;

  /* Queues: pause and resume, and the age boost of one
   * queue, in the table pawl_queues. A claim (and next_due) leaves the
   * jobs of a paused queue alone: it reads the paused set in the same
   * statement (SQLite: in its transaction), so a pause that returned is
   * seen by every claim that starts after it. */
  struct {
    /* Pauses (paused 1) or resumes (0) queue `name`, recording `by` and
     * `reason` (may be NULL) with a pause. *changed: 1 if the queue was
     * not already in that state. A resume wakes the nodes (PostgreSQL:
     * NOTIFY). Any name is accepted: a queue may be paused before it has
     * jobs. */
    int (*pause)(store_t *st, const char *name, int paused, const char *by,
                 const char *reason, int *changed);
    /* Sets the age boost of queue `name` (0 none, >0 the interval; -1
     * back to the database's setting) and re-ranks its pending jobs, in
     * one transaction. */
    int (*set_boost)(store_t *st, const char *name, int64_t boost_ms);
    /* Every row of pawl_queues, by name. */
    int (*list)(store_t *st, store_queue_cb cb, void *data);
  } queues;

  /* Resource and rate limits: the rows of pawl_limits (see
   * "limits" below for how a claim applies them). */
  struct {
    /* Inserts or replaces limit `name` (checked by the caller: see
     * pawl_limit_set()); keeps its window's count when the window's length
     * is unchanged. */
    int (*set)(store_t *st, const char *name, int64_t max_running,
               int64_t rate, int64_t window_ms);
    /* PAWL_ENOTFOUND (with the message) when there is no such limit. */
    int (*remove)(store_t *st, const char *name);
    /* Every limit by name, with its running jobs; *out NULL when none. */
    int (*list)(store_t *st, pawl_limit_t **out, size_t *n);
  } limits;
  /* What admin views know of job types: the rows of
   * pawl_types. */
  struct {
    /* Records the redact list and branch names of each type in `types`,
     * a JSON array of [type, [field, ...], [branch, ...]] (names unique),
     * in one statement: a row is written only where a list changed.
     * Other types' rows stay. */
    int (*sync)(store_t *st, const char *types);
    /* The redact list (a JSON array) and branch names (a JSON array, or
     * NULL when not known) of `type`; both NULL when the type has no row.
     * `branches` may be NULL (not wanted). Both: pawl__free(). */
    int (*get)(store_t *st, const char *type, char **redact,
               char **branches);
  } types;
  /* Signals and replace. */
  struct {
    /* Delivers a decision to the row that holds `key`, in one
     * transaction: a waiting row records it and its job goes blocked ->
     * pending (pawl__store_transition_in, actor and reason in its event);
     * a row delivered before changes nothing (*already = 1). *job: the
     * row's job. PAWL_ENOTFOUND: no row holds the key; PAWL_ESTATE: the
     * wait ended without a decision (expired, or the job is no longer
     * blocked). On PostgreSQL the row is locked (FOR UPDATE) first, so of
     * two deliveries at once one records and the other finds it done.
     * `owner` (NULL: any): the enqueued_by the row's job must have,
     * PAWL_EPERM otherwise (pawl__store_owner_check), nothing written. */
    int (*deliver)(store_t *st, const char *key, const char *decision,
                   const char *payload, const char *actor, const char *owner,
                   pawl_id_t *job, int *already);
    /* The signal of job `id`; PAWL_ENOTFOUND when it has none.
     * *out: pawl_signal_free(). */
    int (*get)(store_t *st, const pawl_id_t *id, pawl_signal_info_t **out);
    /* Expires at most `max` waiting rows whose timeout_at <= now, each
     * with its job's blocked -> failed (STORE_OP_EXPIRE), in one
     * transaction; *n: how many rows it expired. */
    int (*expire)(store_t *st, size_t max, size_t *n);
    /* See store_replace_t. PAWL_ECONFLICT when the old job's version is
     * not expect_version; PAWL_ESTATE (message naming it) when it was
     * replaced before. */
    int (*replace)(store_t *st, const store_replace_t *r);
    /* The links of job `id` (zeroed when none); PAWL_ENOTFOUND: no job. */
    int (*links)(store_t *st, const pawl_id_t *id, pawl_replace_links_t *out);
    /* The earliest deadline of a wait still waiting (ms; 0: none), read
     * through the partial index pawl_signals_due: when the next expire
     * has work. */
    int (*next_deadline)(store_t *st, int64_t *at);
  } flow;
  /* Batches: children counted as they end, callbacks fired by
   * the database when the counters reach the total (the trigger
   * pawl_batches_fire; exactly once, see schema/postgres/V009__batch.sql).
   * Every path that ends a child (finish: success, failure; recovery into
   * failed; operator transitions: cancel, expire, a manual retry that
   * takes a failed child back) adds to the counters in its own
   * transaction. */
  struct {
    /* The batch row, its callbacks and its n children (jobs[i].batch_id =
     * &b->id; no keys) in one transaction, children through the bulk path
     * (PostgreSQL: COPY). */
    int (*create)(store_t *st, const store_batch_new_t *b,
                  const store_new_job_t *jobs, size_t n);
    /* The counters, the children per state, the callbacks and the
     * metrics (docs/flows.md "Batches") of batch `id`, as of `now`.
     * PAWL_ENOTFOUND for none. */
    int (*get)(store_t *st, const pawl_id_t *id, int64_t now,
               pawl_batch_t *out);
    /* The batch job `id` belongs to: *role PAWL_BATCH_CHILD or a
     * callback's role (also one that has not fired: no job yet), -1
     * for none. */
    int (*of)(store_t *st, const pawl_id_t *id, pawl_id_t *batch, int *role);
  } batch;
  /* Dependencies (the table pawl_deps, schema SQLite V011,
   * PostgreSQL V010). */
  struct {
    /* The parents of job `id` (oldest first), then its children (oldest
     * first), each with its state as it is now; the strings are borrowed
     * for the callback. Nothing for a job without edges (or no job). */
    int (*list)(store_t *st, const pawl_id_t *id, pawl_dep_cb cb,
                void *data);
  } deps;
  /* Restartable steps and job instances (the tables
   * pawl_steps, pawl_job_exits, pawl_instances: schema SQLite V012,
   * PostgreSQL V011). The writes of an attempt (begin, save, end, exit)
   * are guarded by its lease as jobs.progress is: the job running, with
   * `token` and `attempt`; PAWL_ELEASE otherwise, nothing written. None
   * is on the claim's or the finish's path. */
  struct {
    /* The job's step executions (oldest first), its exit code and its
     * instance key; PAWL_ENOTFOUND for no such job. */
    int (*get)(store_t *st, const pawl_id_t *id, pawl_steps_t **out);
    /* Marks rows of the job still running as failed (an attempt that
     * never ended them), then inserts a running row; *exec: its seq. One
     * transaction. */
    int (*begin)(store_t *st, const pawl_id_t *id, const pawl_id_t *token,
                 int32_t attempt, int32_t index, const char *name,
                 const char *checkpoint, int64_t *exec);
    /* Writes the checkpoint (NULL: leaves it) and the counters of row
     * `exec` (one of this job's, running) in one statement. */
    int (*save)(store_t *st, const pawl_id_t *id, const pawl_id_t *token,
                int32_t attempt, int64_t exec, const char *checkpoint,
                const int64_t *counts);
    /* Ends row `exec` (running) with status, exit code, message, counts. */
    int (*end)(store_t *st, const pawl_id_t *id, const pawl_id_t *token,
               int32_t attempt, int64_t exec, int status,
               const char *exit_code, const char *exit_message,
               const int64_t *counts);
    /* Sets the job's exit code and message (an upsert). */
    int (*exit)(store_t *st, const pawl_id_t *id, const pawl_id_t *token,
                int32_t attempt, const char *exit_code,
                const char *exit_message);
    /* The job holding instance (type, key) and its state; PAWL_ENOTFOUND
     * when none does (no row, or its job is gone). */
    int (*instance)(store_t *st, const char *type, const char *key,
                    pawl_id_t *id, int *state);
  } steps;
  /* `pawl top` (host/api/top.c): what the live view reads
   * besides the statistics. Reads only, no transaction of their own. */
  struct {
    /* The throughput buckets from minute `since` on (see "Throughput"),
     * oldest first, one call per (minute, state, queue). */
    int (*throughput)(store_t *st, int64_t since, store_tp_cb cb,
                      void *data);
    /* Up to `limit` (1..INT_MAX) running jobs, longest running first
     * (started_at, then id), read through the running rows' index before
     * the first callback (as jobs.list). */
    int (*running)(store_t *st, int limit, pawl_job_cb cb, void *data);
  } top;
  /* Dead-letter alerts: the outbox pawl_alerts, filled by the
   * trigger pawl_alerts_dead in the transaction that moves a job to
   * failed (every path), and the dedup windows pawl_alert_windows (see
   * schema/sqlite/V014__alerts.sql). A row is leased to one node while
   * its hooks run and deleted once they ran. */
  struct {
    /* One transaction: ends the windows whose ends_at <= now (those with
     * suppressed alerts become kind 1 rows), then leases up to `max` free
     * rows (never taken, or their lease ran out) to `owner` until now +
     * lease_ms, oldest first (PostgreSQL: SKIP LOCKED). *out:
     * pawl__store_alerts_free(). */
    int (*take)(store_t *st, const char *owner, int64_t lease_ms, size_t max,
                store_alert_t **out, size_t *n);
    /* The dedup decision for row a->seq held by `owner`, in one
     * transaction: the row's decision if it has one (a row taken again
     * after its node died is not counted twice); else the window
     * (a->type, fp) is opened (a->verdict 1, count 1) or counted into
     * (a->verdict 2). Fills a->verdict, count, first_at, last_at.
     * PAWL_ELEASE: the row is no longer owner's. */
    int (*note)(store_t *st, const char *owner, int64_t fp, int64_t window_ms,
                store_alert_t *a);
    /* Deletes row `seq` if `owner` holds it (else nothing). */
    int (*done)(store_t *st, const char *owner, int64_t seq);
  } alerts;
  /* Retention (host/api/retention.c decides, these only read
   * and remove). There is no index of finished jobs by age (it cost every
   * finish an index entry: schema SQLite V004): the walk follows the
   * primary key in insert order (SQLite: seq; PostgreSQL: the UUIDv7 id,
   * time ordered), oldest first, a bounded page at a time. */
  struct {
    /* Up to `max` jobs of any state after `after` (NULL: from the oldest)
     * in walk order; *n < max only at the end of the table. */
    int (*scan)(store_t *st, const store_pick_t *after, size_t max,
                store_retain_row_t *out, size_t *n);
    /* Removes rows[0..n) in one transaction, each only if it is still
     * finished (succeeded, failed, canceled), at the version the scan
     * read, and no child still has to count its end (deps_open): the
     * check is in the removing statement, so a job an operator retried
     * after the scan is kept. With `archive`, the job row, its attempts,
     * events and logs are copied into the archive tables first (schema
     * SQLite V015, PostgreSQL V014). Its other rows (steps, exits,
     * instances, signal, replacement links, recorded starts, dependency
     * edges) are deleted with it; idempotency keys are kept. removed[i]:
     * 1 if row i went. */
    int (*remove)(store_t *st, const store_retain_row_t *rows, size_t n,
                  int archive, int *removed);
  } retention;
  /* The metrics endpoint's gauges (host/api/gauges.c). One
   * read snapshot: the pending (count, oldest due) and running rows
   * through their partial indexes, the throughput buckets from minute
   * `since` on summed per state and queue (rows with `since` set), and,
   * when `full`, the exact counts of the other states (one pass over the
   * table, as admin.stats). Never a pass over the finished jobs unless
   * `full`: the caller keeps the finished counts up to date from the
   * buckets in between. */
  struct {
    int (*gauges)(store_t *st, int64_t now, int64_t since, int full,
                  store_stat_cb cb, void *data);
  } metrics;
};

/* The part every backend's store begins with. */
struct store {
  const struct store_ops *ops;
  pawl_clock_fn clock;
  void *clock_data;
  /* How far the database clock is ahead of this machine's, when the
   * database keeps the time (PostgreSQL): pawl__store_now() adds it, so that
   * times this node computes (a retry's run_at) agree with the database's
   * decisions. Measured at open; 0 for SQLite. */
  int64_t skew_ms;
  char errmsg[512];
};

/* Opens the backend named by cfg->url (and, in tests with a fault plan,
 * wraps it: pawl__fault_store_wrap()). On failure *out is untouched and
 * errbuf holds one line naming the problem. */
int pawl__store_open(store_t **out, const store_config_t *cfg, char *errbuf,
               size_t errlen);

/* TEST-ONLY (stores/common/fault_store.c): makes *st refuse what the fault
 * plan says (host/core/fault.h); nothing changes without a plan. On failure
 * (an "open" fault, a malformed plan) *st is closed and set to NULL, and
 * errbuf holds the message. */
int pawl__fault_store_wrap(store_t **st, char *errbuf, size_t errlen);

/* Milliseconds since the epoch from the store's clock: the injected one,
 * else this machine's corrected by skew_ms. */
int64_t pawl__store_now(store_t *st);

/* Records a formatted one-line error on `st` and returns `rc`. */
int pawl__store_fail(store_t *st, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The refusals every backend words the same way: no such job
 * (PAWL_ENOTFOUND), and an attempt the caller's token does not hold (any
 * more) (PAWL_ELEASE). */
int pawl__store_no_job(store_t *st, const pawl_id_t *id);
int pawl__store_not_held(store_t *st, const pawl_id_t *id, int32_t attempt);

/* Frees what alerts.take hands out (store_alert_t rows and their
 * strings). */
void pawl__store_alerts_free(store_alert_t *a, size_t n);

/* The interval a boost of 0 ("no age boost") ranks with: about 285
 * years, longer than any wait between due jobs (their run_at lies between
 * 0 and now), so priority decides first and run_at second, as a plain
 * priority order does; yet the rank stays a time, comparable with the
 * ranks of queues that do have a boost (see store_rank()). The largest
 * interval whose product with a priority (|priority| <= 1e6) fits in 64
 * bits with room for run_at. */
#define STORE_RANK_NO_BOOST_MS INT64_C(9000000000000)

/* The claim order key stored with each pending job: ordering by it
 * descending, then run_at, then id, is ordering by priority plus one per
 * `boost_ms` waited. It is a virtual enqueue time, negated: run_at moved
 * back by priority x boost (a priority is worth that much waiting), which
 * is what lets queues with different boosts (pawl_queues.age_boost_ms,
 * schema V006/V005: queues) be claimed in one statement: within a queue
 * the order is priority + wait / boost; across queues a job ranks by its
 * virtual enqueue time, oldest first. A boost of 0 (or less) ranks with
 * STORE_RANK_NO_BOOST_MS. The API bounds its inputs (pawl.h: |priority|
 * <= 1e6, boost <= 30 days, 0 <= run_at <= PAWL_TIME_MAX_MS), so it is at
 * most about 9.0003e18 in size, inside 64 bits; the SQL versions of it
 * (pawl_rank(): a function the SQLite store registers, and a stored
 * function on PostgreSQL) rely on the same bounds. Should a value ever get
 * past them (an injected clock far off), the product and difference
 * saturate instead of overflowing. */
static inline int64_t store_rank(int32_t priority, int64_t run_at,
                                 int64_t boost_ms) {
  if (boost_ms <= 0) boost_ms = STORE_RANK_NO_BOOST_MS;
  int64_t scaled, rank;
  if (__builtin_mul_overflow((int64_t)priority, boost_ms, &scaled))
    scaled = priority < 0 ? INT64_MIN : INT64_MAX;
  if (__builtin_sub_overflow(scaled, run_at, &rank))
    rank = run_at > 0 ? INT64_MIN : INT64_MAX;
  return rank;
}

/* ---- logic every backend shares (stores/common/) ---------------------- */

/* What an operator transition does to a job, decided from the row as read
 * (the same for every backend; the backend writes it as a compare-and-set
 * on the version it read). Strings are borrowed from the job, or static. */
typedef struct store_plan {
  int noop;               /* the job already made this transition */
  int to;                 /* the new state; -1: not allowed from its state */
  int paused_from;        /* -1: none */
  int64_t run_at;
  int64_t finished_at;    /* 0: none */
  int32_t attempt, recoveries;
  const char *last_error, *result;
  int finishes;           /* the job finishes now (cancel, expire): counted
                             in the throughput buckets */
} store_plan_t;

void pawl__store_plan_transition(const pawl_job_t *j, store_op_t op, int64_t now,
                           store_plan_t *out);

/* What recovering one expired lease does, decided from the row (the same
 * for every backend). A lost attempt is used up either way (attempt numbers
 * only go up, so a late outcome of a lost attempt can never pass for a
 * later one's), and ends the job when it was its last. It counts towards
 * the poison limit only when it is known to have started: its job has a
 * pawl_started row with the job's current version (see schema/sqlite/V003,
 * schema/postgres/V002). With `recoveries` 0 it may have run unrecorded (no
 * start is recorded for a first run; its next run will be); recovered
 * before, it surely had not started, since such jobs are recorded before
 * they run. */
typedef struct store_lost {
  int32_t attempt, max_attempts, recoveries, crashes;
  int started;            /* pawl_started.version = pawl_jobs.version */
  const char *owner;      /* the node that held the lease */
} store_lost_t;

typedef struct store_recovery {
  int to;                 /* PAWL_PENDING or PAWL_FAILED */
  int crashed;            /* 1: pawl_started.crashes + 1 */
  char why[300];          /* the attempt's error and the event's reason */
} store_recovery_t;

void pawl__store_plan_recovery(const store_lost_t *l, int64_t poison_limit,
                         store_recovery_t *out);
const char *pawl__store_op_name(store_op_t op);

/* Grows *arr (of *n elements of `size` bytes) by one zeroed element and
 * returns it; NULL when out of memory (*arr is unchanged then). */
void *pawl__store_push(void **arr, size_t *n, size_t size);

/* *dst = a copy of src (NULL when src is NULL). -1 when out of memory
 * (*dst is then NULL), else 0. */
int pawl__store_dup(char **dst, const char *src);

/* Test seam: the n-th call of pawl__store_push() or pawl__store_dup() from now on
 * fails as if out of memory (once); 0 turns it off. Process-wide: for
 * tests of the paths that run out of memory (reading history). */
void pawl__store_fail_alloc_at(int n);

/* Puts a job's history together: h->attempts holds the attempt rows as the
 * backend read them (in the order written); `rows` are the event rows in
 * the order written, taken over (their strings move into h, the array is
 * freed). Adds the enqueue, the claims and what the success path keeps on
 * the job row. -1 when out of memory (h is then the caller's to free). */
int pawl__store_history_assemble(pawl_history_t *h, const pawl_job_t *j,
                           pawl_event_t *rows, size_t nrows);

/* Frees event rows that were read but not assembled: their strings and
 * the array. */
void pawl__store_events_free(pawl_event_t *rows, size_t nrows);

/* ---- rows every backend reads the same way (common/rows.c) ------------- */

/* One row of a backend's result (history and log rows), read column by
 * column through the backend's own accessors; what the columns mean is
 * decided here, once.
 * text: the column's text and its length in bytes (without the NUL), or
 * NULL for SQL NULL; int64 and dbl: 0 for NULL; id: all zero for NULL. */
typedef struct store_row {
  const char *(*text)(const struct store_row *r, int col, size_t *len);
  int64_t (*int64)(const struct store_row *r, int col);
  double (*dbl)(const struct store_row *r, int col);
  void (*id)(const struct store_row *r, int col, pawl_id_t *out);
  const void *res;          /* the backend's result (statement, PGresult) */
  int row;                  /* the row in it, where it has several */
} store_row_t;

/* The columns of a job row, in the order every backend selects them
 * (SQLITE_JOB_COLS, PG_JOB_COLS); a backend may select more after them. */
enum store_job_col {
  STORE_JOB_ID, STORE_JOB_TYPE, STORE_JOB_QUEUE, STORE_JOB_STATE,
  STORE_JOB_PAUSED_FROM, STORE_JOB_PRIORITY, STORE_JOB_PAYLOAD,
  STORE_JOB_PARAMS, STORE_JOB_TAGS, STORE_JOB_RUN_AT, STORE_JOB_ATTEMPT,
  STORE_JOB_MAX_ATTEMPTS, STORE_JOB_TIMEOUT_S, STORE_JOB_IDEMPOTENCY_KEY,
  STORE_JOB_BUSINESS_KEY, STORE_JOB_CORRELATION_ID, STORE_JOB_ENQUEUED_BY,
  STORE_JOB_CREATED_AT, STORE_JOB_UPDATED_AT, STORE_JOB_STARTED_AT,
  STORE_JOB_FINISHED_AT, STORE_JOB_LEASE_OWNER, STORE_JOB_LEASE_EXPIRES,
  STORE_JOB_LAST_ERROR, STORE_JOB_RESULT, STORE_JOB_RECOVERIES,
  STORE_JOB_PROGRESS_DONE, STORE_JOB_PROGRESS_TOTAL, STORE_JOB_VERSION,
  STORE_JOB_ORDERING_KEY, /* per-key ordering */
  STORE_JOB_DEPTH, /* generation of jobs enqueued by jobs (SQLite V016) */
  STORE_JOB_NCOLS
};

/* The job columns by what they hold: texts (NULL for NULL), integers (0
 * for NULL) and the two reals (progress); the id is STORE_JOB_ID. */
#define STORE_JOB_NTEXT 13
#define STORE_JOB_NINT 15
extern const unsigned char pawl__store_job_texts[STORE_JOB_NTEXT];
extern const unsigned char pawl__store_job_ints[STORE_JOB_NINT];

/* A job row as a backend read it: the columns of pawl__store_job_texts
 * and pawl__store_job_ints, the id and the progress, each read the
 * backend's own way (what they mean is decided once, in
 * pawl__store_job_from_row). Text is borrowed from the backend's result
 * until the row is packed. Claiming reads a batch of rows, so the backend
 * fills this with plain loops rather than through store_row_t's calls. */
typedef struct store_job_row {
  pawl_id_t id;
  const char *text[STORE_JOB_NCOLS];
  size_t len[STORE_JOB_NCOLS];  /* bytes of each text, without the NUL */
  int64_t num[STORE_JOB_NCOLS]; /* integers, 0 for NULL */
  double progress_done, progress_total; /* 0 for NULL */
} store_job_row_t;

/* A pawl_job_t from a job row, in one allocation (the job and its
 * strings: pawl_job_free() is one pawl__free(), and claiming a batch builds
 * many), with `owner` (when not NULL) as its lease owner instead of the
 * row's, and store_key 0. NULL when out of memory. */
pawl_job_t *pawl__store_job_from_row(const store_job_row_t *r,
                                     const char *owner);

/* The rows of a job's history and logs, columns in this order:
 *   attempts: attempt, node, scheduled_at, started_at, ended_at, outcome,
 *             error;
 *   events:   at, from_state, to_state, actor, reason, attempt;
 *   logs:     attempt, at, level, message, fields.
 * Each fills one zeroed element from a row; -1 when out of memory (what
 * was copied is in the element, for the caller's free). */
int pawl__store_attempt_fill(pawl_attempt_t *a, const store_row_t *r);
int pawl__store_event_fill(pawl_event_t *e, const store_row_t *r);
int pawl__store_log_fill(pawl_log_record_t *l, const store_row_t *r);

/* Restartable steps: a row of pawl_steps, columns in
 * this order (SQLITE_STEP_COLS, PG_STEP_COLS): seq, attempt, idx, name,
 * status, started_at, ended_at, exit_code, exit_message, the six counts
 * (read, written, filtered, skipped, commits, rollbacks), checkpoint,
 * checkpoint_at. Fills a zeroed element; -1 when out of memory (what was
 * copied is in it, for pawl_steps_free). */
#define STORE_STEP_NCOLS 17
int pawl__store_step_fill(pawl_step_exec_t *e, const store_row_t *r);
/* Appends a zeroed element to s->execs; NULL when out of memory. */
pawl_step_exec_t *pawl__store_step_push(pawl_steps_t *s);


/* The columns of a recurring definition's row, in the order every backend
 * selects them (SQLITE_REC_COLS, PG_REC_COLS): name, expr, tz, misfire,
 * catch_up_limit, type, payload, queue, priority, max_attempts, timeout_s,
 * enabled, paused, source, script, next_fire_at, last_fire_at, last_job_id,
 * created_at, updated_at, version (booleans and times as integers). Fills
 * one zeroed element; -1 when out of memory (what was copied is in the
 * element, for the caller's free). */
int pawl__store_rec_fill(pawl_recurring_t *d, const store_row_t *r);

/* ---- finishing and transitions, decided once (common/plan.c) ----------- */

/* What ending an attempt with an outcome other than success records (the
 * same for every backend): the attempt row's outcome and error, the state
 * the job goes to, when it runs again, whether the attempt is given back
 * (snooze, release: it does not count), and the event's reason. */
typedef struct store_ending {
  const char *outcome;      /* "failed", "retry", "snoozed", "released" */
  const char *error;        /* the attempt's error (failed, retry), or NULL */
  int to;                   /* PAWL_FAILED or PAWL_PENDING */
  int64_t run_at;           /* pending: when it runs again; -1: where it
                               was in line, run_at and rank kept (a
                               release), or not at all (failed) */
  int give_back;
  char why[96];
} store_ending_t;

/* Plans the ending of outcome `o` at `now` (the delays in reasons are
 * measured from it). PAWL_EINVAL (st->errmsg says why) for a success or an
 * unknown kind. */
int pawl__store_plan_ending(store_t *st, const pawl_outcome_t *o, int64_t now,
                            store_ending_t *out);

/* The steps of an operator transition that differ between backends, run by
 * pawl__store_transition() in the one order both follow. Each returns 0 or
 * a PAWL_E* code with st->errmsg set; all run inside the transaction
 * begin() opened. */
typedef struct store_transition_steps {
  int (*begin)(store_t *st);
  /* Commits when rc is 0, else rolls back; returns rc, or the commit's
   * failure. */
  int (*end)(store_t *st, int rc);
  /* Reads the job; locked until the transaction ends when for_update. */
  int (*read)(store_t *st, const pawl_id_t *id, int for_update,
              pawl_job_t **out);
  /* "Now" for the times decided here (run_at, finished_at). */
  int (*now)(store_t *st, int64_t *now);
  /* Records the end of the running attempt (canceled, with the reason);
   * 0 also when there is none to record. */
  int (*end_attempt)(store_t *st, const pawl_id_t *id, int64_t now,
                     const char *reason);
  int (*add_event)(store_t *st, const pawl_id_t *id, int64_t now, int from,
                   int to, const char *actor, const char *reason,
                   int32_t attempt);
  /* Writes the plan as a compare-and-set on j->version: *changed = 1 if
   * the row was updated. PAWL_EKEY, without a message, when the job's
   * business key is held by another live job. */
  int (*update)(store_t *st, const pawl_job_t *j, const store_plan_t *plan,
                int64_t now, int *changed);
  /* Forgets the recorded starts (a manual retry starts the poison count
   * again). */
  int (*forget_starts)(store_t *st, const pawl_id_t *id);
  /* The job (as read) finished now in state `to` (plan->finishes): add it
   * to the throughput bucket of `now`'s minute. */
  int (*finished)(store_t *st, const pawl_job_t *j, int to, int64_t now);
  /* The job went back to pending: tell other nodes (NULL: nothing to do). */
  int (*pending)(store_t *st);
  /* Dependencies: a manual retry of the failed job `id` by
   * `actor`, at `now`; its children still blocked stop counting its end
   * (they count the next one), and those its end canceled go back to
   * blocked, waiting for it again (STORE_OP_REOPEN, in turn for their
   * own children: pawl__store_deps_reopen). NULL: nothing to do. */
  int (*reopen)(store_t *st, const pawl_id_t *id, int64_t now,
                const char *actor);
} store_transition_steps_t;

/* What a backend does for pawl__store_deps_reopen(), each in the caller's
 * transaction. `state` is the state the parent's end was counted in
 * (failed, or canceled for a child reopened in turn). */
typedef struct store_reopen_steps {
  /* The parent's children still blocked stop counting that end
   * (deps_left up by one, deps_unmet down if it did not meet their
   * condition), their rows locked first where the backend locks. */
  int (*uncount)(store_t *st, const pawl_id_t *parent, int state);
  /* The children that end canceled: canceled by the dependencies
   * (deps_left 0 and deps_unmet above 0: an operator's cancel leaves one
   * of them otherwise) with the parent's end among the unmet, and not in
   * a batch (it counted them), not waiting for a signal, and not holding
   * a business key another live job has taken since. *out (pawl__free):
   * their ids, oldest first. */
  int (*canceled)(store_t *st, const pawl_id_t *parent, int state,
                  pawl_id_t **out, size_t *n);
  /* A reopened child counts the parent again: deps_left up by one,
   * deps_unmet down by one. */
  int (*recount)(store_t *st, const pawl_id_t *child);
  /* The parent counts as not ended again if it has children. */
  int (*open)(store_t *st, const pawl_id_t *parent);
} store_reopen_steps_t;

/* A manual retry of the failed job `id` by `actor` (store_transition_steps_t
 * .reopen): its blocked children stop counting its end, and the children
 * its end canceled go back to blocked (STORE_OP_REOPEN, each with an event
 * naming the parent and why), waiting for it again; each of those does
 * the same for its own children, whose cancel was its end's. */
int pawl__store_deps_reopen(store_t *st, const store_transition_steps_t *x,
                            const store_reopen_steps_t *r, const pawl_id_t *id,
                            int64_t now, const char *actor);

/* An operator transition (store_ops.control.transition), the same on every
 * backend: read the job, plan the transition (pawl__store_plan_transition),
 * then, unless it is a no-op or not allowed, end a running attempt, record
 * the event and write the row, all in one transaction. */
int pawl__store_transition(store_t *st, const store_transition_steps_t *x,
                           const pawl_id_t *id, store_op_t op,
                           const char *actor, const char *owner,
                           const char *reason, pawl_job_t **out);

/* Job code acts only on the jobs it enqueued unless the operator granted
 * more (docs/security.md, "Authority over other jobs"): 0 when `owner` is
 * NULL or is the enqueued_by of the job (an empty owner owns nothing) (as
 * read in the caller's
 * transaction; enqueued_by never changes once written), else PAWL_EPERM
 * with a message naming the job, its type and who enqueued it. */
int pawl__store_owner_check(store_t *st, const pawl_id_t *id,
                            const char *type, const char *enqueued_by,
                            const char *owner);

/* The same transition inside the caller's write transaction (x->begin and
 * x->end are not called; `now` is the caller's), for bulk actions. `expect`
 * -1 takes the row as it is; any other value is the version the caller
 * picked, and a row that changed since is refused (PAWL_ECONFLICT) before
 * anything is written. A transition the job already made is a no-op (0). */
int pawl__store_transition_in(store_t *st, const store_transition_steps_t *x,
                              int64_t now, const pawl_id_t *id, store_op_t op,
                              const char *actor, const char *reason,
                              int64_t expect);

/* A pawl_signal_info_t in one allocation (pawl_signal_free() is one
 * pawl__free()), its strings copied (NULL stays NULL). NULL when out of
 * memory. */
pawl_signal_info_t *pawl__store_signal_new(
    const pawl_id_t *job, const char *key, int state, int64_t created_at,
    int64_t timeout_at, const char *decision, const char *payload,
    int64_t delivered_at, const char *delivered_by);

/* A decision for `key` that came after the deadline (`deadline`, ms) of
 * the wait of job `id`, now in state `jstate`: refused with PAWL_ESTATE
 * and a message naming the job, the key and the deadline. The wait has
 * expired (by the caller, or before): the job's outcome is the
 * timeout's. */
int pawl__store_signal_late(store_t *st, const pawl_id_t *id, const char *key,
                            int64_t deadline, int jstate);

/* The reason recorded in a job's history when its wait for `key` ran out at
 * `deadline` (ms): "signal KEY: no decision by TIME". */
void pawl__store_signal_why(char *out, size_t len, const char *key,
                            int64_t deadline);

/* A backend's migrations, embedded at build time from schema/<backend>/;
 * their sums are checked by common/migrate.c. */
typedef struct store_migration {
  int version;
  const char *name;      /* "V001__init.sql" */
  const char *sql;
  size_t len;
} store_migration_t;

/* Whether `recorded`, the checksum pawl_schema holds for migration m of
 * `backend` ("sqlite", "postgres"), is m's: the sum of its text, or, for
 * a migration whose comments alone were edited after it shipped, the sum
 * of the text as shipped. `want` receives the sum of the text now. */
int pawl__store_sum_ok(const char *backend, const store_migration_t *m,
                       const char *recorded, char want[16]);

/* CRC-32 (IEEE) of the script, the checksum recorded when it was applied. */
uint32_t pawl__store_crc32(const void *data, size_t len);

/* ---- limits, decided once ---------------------------------------------------
 *
 * A claim on a database with limits (any row in pawl_limits) runs, in its
 * write transaction (SQLite) or with the limit rows locked (PostgreSQL):
 *   1. read the limits, and the running jobs of those with a max_running
 *      (counted from the running rows: a permit is freed by whatever ends
 *      the running state, lease recovery included);
 *   2. pawl__store_limits_plan(): how many more jobs each may start now,
 *      the least of max_running - running and what its rate window has
 *      left;
 *   3. pick due jobs in claim order, leaving out those of the limits with
 *      nothing left (pawl__store_limit_blocked()), at most c->max;
 *   4. pawl__store_limits_admit() on each picked job in claim order: a job
 *      is taken when each limit it is under (its resource's, its queue's)
 *      has a start left, which it then uses, and, when one of them has a
 *      max_running, a free worker is left (limited_left: a permit is for
 *      running now; a job under rates alone may be claimed ahead, its
 *      start counted when it is claimed); the others stay pending,
 *      untouched (not charged an attempt) for a later claim;
 *   5. lease the taken jobs, and write the rate windows of the limits that
 *      counted starts (pawl__store_limit_window()).
 * A claim may so take fewer than c->max jobs while more are due (a limit
 * ran out within the batch); the next claim leaves that limit's jobs out
 * at step 3. Jobs under no limit never wait for one. */
typedef struct store_limit {
  char *name;               /* a resource, or "queue:" + a queue name */
  int64_t max_running;      /* 0: none */
  int64_t rate, window_ms;  /* 0: none */
  int64_t window_start, window_count; /* as read */
  int64_t running;          /* filled by the backend (max_running only) */
  int64_t left;             /* starts this claim may still make; INT64_MAX
                               for no bound */
  int64_t taken;            /* starts this claim made */
  int64_t window;           /* the window of "now" (rate only) */
  int rate_blocked;         /* left is 0 because of the rate alone */
} store_limit_t;

typedef struct store_limits {
  store_limit_t *v;
  size_t n;
  size_t limited_left;      /* jobs needing a permit this claim may still
                               take (store_claim_t.limited_max) */
} store_limits_t;

/* Adds a limit as read (name copied); -1 when out of memory. */
int pawl__store_limits_add(store_limits_t *l, const char *name,
                           int64_t max_running, int64_t rate,
                           int64_t window_ms, int64_t window_start,
                           int64_t window_count);
void pawl__store_limits_free(store_limits_t *l);

/* The queue a limit names ("queue:NAME"), or NULL for a resource's. */
const char *pawl__store_limit_queue(const store_limit_t *lim);

/* Step 2 at `now` (running filled in). */
void pawl__store_limits_plan(store_limits_t *l, int64_t now,
                             size_t limited_max);

/* Whether a limit has nothing left for this claim (step 3). */
static inline int pawl__store_limit_blocked(const store_limit_t *lim) {
  return lim->left <= 0;
}

/* Step 4 for a picked job of `queue` holding `resource` (NULL: none):
 * 1 when taken (its limits' starts used), 0 when it must wait. */
int pawl__store_limits_admit(store_limits_t *l, const char *queue,
                             const char *resource);

/* Step 5: 1 when the limit's rate window must be written, with the
 * window's start and count to write. */
int pawl__store_limit_window(const store_limit_t *lim, int64_t *start,
                             int64_t *count);

/* When a job held back by limits alone could be claimed next, for
 * next_due(): the end of the window of a limit blocked by its rate alone
 * (lim->rate_blocked); a limit at its max_running has no such time (a
 * finish frees it). */
static inline int64_t pawl__store_limit_window_end(const store_limit_t *lim) {
  return lim->window + lim->window_ms;
}

#endif
