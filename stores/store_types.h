/* store_types.h: the types the store interface passes (stores/store.h):
 * how a store is opened, the rows it takes and gives (new jobs, claims,
 * nodes, matches and picks, statistics, recurring definitions, queues,
 * replacements, alerts, retention rows), the options of its operations
 * and the callbacks that receive their results. store.h includes it;
 * nothing else needs to. */
#ifndef PAWL_STORE_TYPES_H
#define PAWL_STORE_TYPES_H

#include "pawl.h"

typedef struct store store_t;

/* How a store is opened. Strings are borrowed for the call. */
typedef struct store_config {
  const char *url;          /* "sqlite:PATH", "postgres://...", "postgres:CONNINFO" */
  pawl_clock_fn clock;      /* NULL: the database clock */
  void *clock_data;
  int sync_full;            /* SQLite: synchronous=FULL */
  int busy_timeout_ms;
  int64_t age_boost_ms;     /* -1: keep the stored setting */
  int no_migrate;
  int create;               /* create a missing database (pawl_options_t) */
  int check_writable;       /* SQLite: take the write lock once at open */
  unsigned file_mode;       /* SQLite: bits of a file it creates; 0: 0600 */
  int64_t poison_recoveries; /* recoveries beyond this fail the job; 0: 3 */
  /* Optional pthread_mutex_t shared by the connections of one process to
   * one database: writers take it around their write transactions, so
   * they queue in-process instead of meeting SQLite's busy handler (which
   * sleeps a millisecond and more between tries). */
  void *write_gate;
  /* SQLite: no checkpoint inside commits (wal_autocheckpoint = 0); the
   * owner runs maintenance.checkpoint() from a thread of its own, so the
   * checkpoint's fsync stays off the jobs' path. */
  int no_autocheckpoint;
} store_config_t;

/* A job to insert. Strings are borrowed. `tags` is a JSON array text. */
typedef struct store_new_job {
  pawl_id_t id;
  const char *type;
  const char *queue;
  int32_t priority;
  const char *payload;
  const char *params;
  const char *tags;
  int64_t run_at;
  int32_t max_attempts;
  int32_t timeout_s;
  const char *idempotency_key;
  const char *business_key;
  int return_existing;
  const char *correlation_id;
  const char *enqueued_by;
  int blocked;
  /* Per-key ordering: jobs with the same key run one at a
   * time, in enqueue order; NULL for none. */
  const char *ordering_key;
  const char *resource;     /* limits: NULL for none */
  /* Signals: the job waits (blocked) for a decision for this
   * key; NULL for none. The row of pawl_signals is written with the job's,
   * for new jobs only. signal_timeout_at: 0 for none. */
  const char *signal_key;
  int64_t signal_timeout_at;
  /* Batches: the batch this job is a child of; NULL for none.
   * Only batch.create() inserts children. */
  const pawl_id_t *batch_id;
  /* Dependencies: the job waits in `blocked` until these
   * parents (nafter, distinct, existing: PAWL_ENOTFOUND names one that
   * does not) have ended, on the condition `when` ("success", "failure",
   * "done", "branch:NAME"; NULL: "success"). after_prev: it also waits
   * for the job before it in the same insert() call to succeed (a
   * chain), whichever id that one got (a duplicate's too). */
  const pawl_id_t *after;
  size_t nafter;
  const char *when;
  int after_prev;
  /* Job instances: the identity key of the job's
   * instance (host/api/steps.c), NULL for none. The insert records it in
   * pawl_instances in its transaction, taking the instance over from a
   * canceled (or deleted) job; one held by any other job refuses the
   * whole call with PAWL_ECONFLICT (the caller looks it up again). */
  const char *instance_key;
  /* The generation (pawl_enqueue_opts_t.depth): 0 for none. */
  int32_t depth;
} store_new_job_t;

/* ---- batches (pawl_batches, pawl_batch_callbacks,
 * schema SQLite V010, PostgreSQL V009) ------------------------------------ */

/* A batch to create: its id, and its callbacks by role (index
 * PAWL_BATCH_ON_SUCCESS - 1 ...; NULL: none), each the job it becomes when
 * it fires (id, type, queue, priority, payload, tags, max_attempts,
 * timeout_s, correlation_id, enqueued_by are kept; nothing else). */
typedef struct store_batch_new {
  pawl_id_t id;
  const char *enqueued_by;
  const store_new_job_t *callbacks[3];
  /* The batch's identity (pawl_batch_opts_t.key), NULL for none. When a
   * batch has it already, create() writes nothing: *found is set to 1,
   * *found_id to its id and found_ids[0..n) to its children's ids in
   * enqueue order; one of another size is PAWL_ECONFLICT. found,
   * found_id and found_ids are the caller's (needed with ident). */
  const char *ident;
  int *found;
  pawl_id_t *found_id;
  pawl_id_t *found_ids;
} store_batch_new_t;

/* How a child's move between states changes its batch's counters
 * (succeeded, failed, canceled): a child counts in the class of the state
 * it ended in; paused from failed still counts as failed; any other state
 * has not ended. Fills d[0..2] with the change; returns 1 if any. */
static inline int store_batch_delta(int from, int from_paused, int to,
                                    int to_paused, int64_t d[3]) {
  int a = from == PAWL_PAUSED ? (from_paused == PAWL_FAILED ? PAWL_FAILED : -1)
                              : from;
  int b = to == PAWL_PAUSED ? (to_paused == PAWL_FAILED ? PAWL_FAILED : -1)
                            : to;
  d[0] = (b == PAWL_SUCCEEDED) - (a == PAWL_SUCCEEDED);
  d[1] = (b == PAWL_FAILED) - (a == PAWL_FAILED);
  d[2] = (b == PAWL_CANCELED) - (a == PAWL_CANCELED);
  return d[0] || d[1] || d[2];
}

/* What a claim asks for. */
typedef struct store_claim {
  const char *const *queues;
  size_t nqueues;
  size_t max;
  const char *owner;        /* node id, shown in history */
  const pawl_id_t *token;   /* the owner's incarnation: leases belong to it */
  int64_t lease_ms;
  /* Limits: at most this many of the jobs claimed may need a
   * permit (be under a limit with a max_running); the rest of max is a
   * prefetch, which jobs under rate-only limits may fill (see
   * pawl_claim_opts_t). */
  size_t limited_max;
  /* The jobs picked from this index on are claimed ahead of a free
   * worker (pawl_claim_opts_t.defer_start with a prefetch): their
   * started_at stays NULL (they show as claimed, not running) until
   * their start is recorded (claim.start, or a PAWL_OUT_STARTED
   * outcome). max (or more): none is. */
  size_t ahead_from;
} store_claim_t;

/* Operator and flow transitions, each a compare-and-set. */
typedef enum store_op {
  STORE_OP_CANCEL,  /* pending, running, blocked, paused -> canceled */
  STORE_OP_PAUSE,   /* pending, failed -> paused */
  STORE_OP_RESUME,  /* paused -> the state it came from */
  STORE_OP_RETRY,   /* failed -> pending, attempts reset */
  STORE_OP_UNBLOCK, /* blocked -> pending (its condition is met) */
  STORE_OP_EXPIRE,  /* blocked -> failed (its wait timed out) */
  STORE_OP_REOPEN   /* canceled -> blocked (a dependency's cancel undone:
                       the parent whose end canceled it was retried) */
} store_op_t;

/* A node as recorded in the node table. */
typedef struct store_node {
  const char *id;
  const pawl_id_t *incarnation;
  const char *version;
  const char *queues;       /* comma-separated, "" for all */
  int64_t started_at;
  int64_t last_beat;        /* filled by list() */
  int64_t stopped_at;       /* filled by list(): 0 while it runs, else
                               when it stopped cleanly (nodes.stop) */
} store_node_t;

typedef int (*store_node_cb)(const store_node_t *node, void *data);

/* ---- administration (the admin ops group below) ---------------------------- */

/* Which jobs a bulk action, a count or a listing looks at. */
typedef struct store_match {
  const pawl_filter_t *f;  /* state, queue, type, tag (limit is the
                              caller's; older_than_ms gives cutoff) */
  unsigned states;         /* bit (1u << state) per state that matches:
                              the states the action moves from, narrowed
                              to f->state when given */
  int64_t cutoff;          /* 0: none; else coalesce(finished_at,
                              created_at) < cutoff */
} store_match_t;

/* A job a bulk action picked: the version its compare-and-set expects,
 * and where the walk goes on from. */
typedef struct store_pick {
  pawl_id_t id;
  int64_t version;
  int64_t key;             /* the backend's walk key (SQLite: seq) */
} store_pick_t;

/* Throughput: jobs finished (succeeded, failed, canceled) per minute of
 * the store's clock, state and queue, in the table pawl_throughput (schema
 * SQLite V004, PostgreSQL V003). The finish path adds its batch's counts
 * (one UPSERT per distinct state and queue), as do recovery into failed and
 * the operator transitions that finish a job (cancel, expire), in the
 * transaction that moves the jobs. Buckets older than STORE_TP_KEEP
 * minutes are deleted by the next writer that sees the minute change.
 * A window of N minutes counts the buckets from minute (now / 1 min) - N:
 * the last N minutes and up to one more (the oldest bucket, whole). */
#define STORE_TP_MINUTE_MS INT64_C(60000)
#define STORE_TP_KEEP 30

/* The minute bucket of a time (floor: times before 1970 too). */
static inline int64_t store_tp_minute(int64_t ms) {
  return ms >= 0 ? ms / STORE_TP_MINUTE_MS
                 : -((-(ms + 1)) / STORE_TP_MINUTE_MS) - 1;
}

/* One (state, queue) of the statistics. */
typedef struct store_stat_row {
  const char *queue;
  int state;
  int64_t count;
  int64_t in_1m, in_5m, in_15m; /* succeeded, failed, canceled: finished
                                   within the last 1, 5, 15 minutes */
  int64_t oldest_due;           /* pending: the earliest run_at <= now;
                                   0 when none is due */
  int64_t since;                /* metrics.gauges' throughput rows: jobs
                                   that finished in this state from minute
                                   `since` on (their count is 0) */
} store_stat_row_t;

typedef int (*store_stat_cb)(const store_stat_row_t *row, void *data);
typedef int (*store_lock_cb)(const pawl_lock_info_t *lock, void *data);
typedef int (*store_owner_cb)(const char *owner, int64_t running,
                              void *data);
/* One throughput bucket (store.h, "Throughput"); `queue` is borrowed for
 * the call. Non-zero stops the walk (out of memory). */
typedef int (*store_tp_cb)(int64_t minute, int state, const char *queue,
                           int64_t count, void *data);


/* ---- recurring definitions (the table
 * pawl_recurring, schema SQLite V005, PostgreSQL V004) ---------------------- */

/* How put() writes a definition. */
#define STORE_REC_ADD 0    /* an operator's: PAWL_EKEY if the name is taken */
#define STORE_REC_SCRIPT 1 /* a script's: inserted, or written over the
                              script-born one of that name (enabled again);
                              an operator's of that name is left alone */

/* One definition's step in a tick (advance()): a compare-and-set on its
 * next_fire_at, with the jobs of the occurrences it fires, in one
 * transaction. */
typedef struct store_rec_advance {
  const char *name;
  int64_t expect_next;     /* the next_fire_at the tick read */
  int64_t next;            /* the new next_fire_at; 0: none (NULL) */
  int64_t last_fire;       /* the last occurrence fired; 0: unchanged */
  const store_new_job_t *jobs; /* enqueued only if the row still had
                              expect_next (each with its idempotency key) */
  size_t njobs;
  /* out: */
  int advanced;            /* 1: the row had expect_next and moved on */
  size_t made;             /* jobs newly made (not duplicates) */
} store_rec_advance_t;

/* ---- queues (pause, resume, per-queue age boost) -------------------------- */

/* A row of pawl_queues (schema SQLite V006, PostgreSQL V005): a queue an
 * operator paused or gave an age boost of its own. Strings are borrowed
 * for the callback. */
typedef struct store_queue_row {
  const char *name;
  int paused;
  int64_t paused_at;        /* 0 when not paused */
  const char *paused_by;    /* NULL when not paused */
  const char *reason;       /* NULL: none given */
  int64_t age_boost_ms;     /* -1: the database's setting (age_boost_ms) */
} store_queue_row_t;

typedef int (*store_queue_cb)(const store_queue_row_t *row, void *data);

/* ---- signals and replace (pawl_signals, pawl_replacements:
 * schema SQLite V009, PostgreSQL V008) ------------------------------------ */

/* A replacement (store_ops.flow.replace): `job` is inserted and, in the
 * same transaction, the old job (read with the version the caller built
 * `job` from) is canceled when it is live, and the two are linked. */
typedef struct store_replace {
  const pawl_id_t *old_id;
  int64_t expect_version;    /* the old job's version as the caller read it */
  const store_new_job_t *job;
  const char *actor;
  const char *reason;        /* the old job's cancel event */
  /* NULL, or the enqueued_by the old job must have (job code acting
   * without a grant): PAWL_EPERM otherwise, decided on the row the
   * transaction reads, nothing written. */
  const char *owner;
} store_replace_t;

/* A row of the alert outbox (see ops alerts). Strings owned. */
typedef struct store_alert {
  int64_t seq;
  int kind;                  /* 0 a dead job, 1 a window that ended with
                                suppressed alerts */
  pawl_id_t job_id;          /* kind 1: the last suppressed job */
  char *type, *queue, *error;
  int32_t attempt;
  int64_t created_at;        /* ms */
  int verdict;               /* 0 not decided, 1 run the hooks, 2 suppressed */
  int64_t count, suppressed, first_at, last_at;
} store_alert_t;

/* ---- retention (finished jobs deleted or archived) ----------------------- */

/* A job as the retention walk reads it (store_ops.retention.scan): where
 * the walk goes on from (pick.key, pick.id), the version a removal
 * expects, and what the policy decides by. Names are at most 200 bytes
 * (the API refuses longer ones). */
typedef struct store_retain_row {
  store_pick_t pick;
  int state;
  int64_t created_at;
  int64_t finished_at;     /* 0: NULL */
  char queue[201];
  char type[201];
} store_retain_row_t;

#endif
