/* terminal.c: SQLite store, the finish: outcomes written many per
 * transaction (succeed, retry, fail, snooze), with their attempts, events
 * and logs, and the throughput buckets (store.h, "terminal" and
 * "Throughput"). */
#include "sqlite_int.h"

/* The outbox row of job ?1, moved to failed at ?2 (now) in this
 * transaction. */
#define SQLITE_ALERT_ADD                                                     \
  "INSERT INTO pawl_alerts (job_id, type, queue, attempt, error, "           \
  "created_at) SELECT id, type, queue, attempt, last_error, ?2 FROM "        \
  "pawl_jobs WHERE id = ?1 AND state = 3"

/* The branches that fired when job ?1 succeeded (?2, a JSON array). */
#define SQLITE_DEPS_BRANCHES                                                 \
  "UPDATE pawl_jobs SET branches = ?2 WHERE id = ?1 AND state = 2"

/* The SQL of this file's statements, by their ids (sqlite_int.h,
 * "Statements"). */
#define SQ_HERE SQ__TERMINAL
const char *const pawl__sq_sql_terminal[SQ__CONTROL - SQ__TERMINAL] = {
    SQ_AT(SQ_SUCCEED) = SQLITE_SQL_SUCCEED,
    SQ_AT(SQ_SUCCEED_SEQ) = SQLITE_SQL_SUCCEED_SEQ,
    SQ_AT(SQ_SUCCEED_MANY) = SQLITE_SQL_SUCCEED_MANY,
    /* Records the attempt being finished from the row as it is before the
     * change; with a token (?5) it only matches the holder's attempt ?6,
     * which is how a stale outcome is detected. ?7, ?8: the body's start
     * and end as its worker measured them (NULL: not measured); ?9 the
     * error's traceback (NULL: none). */
    SQ_AT(SQ_ATTEMPT_ADD) =
        "INSERT INTO pawl_attempts (job_id, attempt, node, scheduled_at, "
        "started_at, ended_at, outcome, error, trace) SELECT id, attempt, "
        "lease_owner, run_at, " SQLITE_SQL_RUN_START("?7") ", "
        SQLITE_SQL_RUN_END("?7", "?8", "?2") ", ?3, ?4, ?9 FROM pawl_jobs "
        "WHERE id = ?1 AND state = 1 AND (?5 IS NULL OR "
        "(lease_token = ?5 AND attempt = ?6))",
    /* An event whose actor is the node that held the job. */
    SQ_AT(SQ_EVENT_FROM_ROW) =
        "INSERT INTO pawl_events (job_id, at, from_state, to_state, actor, "
        "reason, attempt) SELECT id, ?2, state, ?3, lease_owner, ?4, attempt "
        "FROM pawl_jobs WHERE id = ?1",
    SQ_AT(SQ_EVENT_ADD) =
        "INSERT INTO pawl_events (job_id, at, from_state, "
        "to_state, actor, reason, attempt) VALUES (?1, ?2, ?3, "
        "?4, ?5, ?6, ?7)",
    /* pawl_dep_note(): a parent with children to release,
     * and the row's ordering key for its holds (pawl__sq_keys_flush()). */
    SQ_AT(SQ_FAIL) =
        "UPDATE pawl_jobs SET state = 3, last_error = ?1, "
        "finished_at = ?2, updated_at = pawl_dep_note(?2, CASE WHEN "
        "deps_open THEN seq END, ordering_key), lease_expires = NULL, "
        "held = 0, version = version + 1 WHERE id = ?3",
    /* Back to pending: retry (?3 = 0), snooze or release (?3 = 1: the
     * attempt is given back), due at ?1; NULL (a release): where it was,
     * since it never ran, its run_at and rank kept. ?7: the job lets
     * later jobs of its ordering key pass while it waits (a retry under
     * ordering = "skip_failed"). Due later than now: early (V018); the key
     * noted for its holds. */
    SQ_AT(SQ_REQUEUE) =
        "UPDATE pawl_jobs SET state = 0, run_at = coalesce(?1, run_at), "
        "rank = CASE WHEN ?1 IS NULL THEN rank ELSE pawl_rank(priority, ?1, "
        SQLITE_SQL_QUEUE_BOOST("?2") ") END, attempt = attempt - ?3, "
        "last_error = coalesce(?4, last_error), updated_at = "
        "pawl_key_note(?5, ordering_key), early = coalesce(?1 > ?5, 0), "
        "lease_expires = NULL, ordering_skip = ?7, version = version + 1 "
        "WHERE id = ?6",
    /* Through the job row, so that a line for a job that is gone (deleted
     * by retention) is dropped instead of breaking the batch. */
    SQ_AT(SQ_LOG_ADD) = "INSERT INTO pawl_logs (job_id, attempt, at, level, "
                        "message, fields) SELECT id, ?2, ?3, ?4, ?5, ?6 FROM "
                        "pawl_jobs WHERE id = ?1",
    /* Throughput buckets (store.h, "Throughput"): ?1 the minute, ?2 the
     * state, ?3 the queue, ?4 how many; or by the job's id ?2 (its state
     * and queue as the row has them now: a failure); the trim of buckets
     * before minute ?1. */
    SQ_AT(SQ_TP_ADD) =
        "INSERT INTO pawl_throughput (minute, state, queue, count) "
        "VALUES (?1, ?2, ?3, ?4)" SQLITE_SQL_TP_UPSERT,
    SQ_AT(SQ_TP_ADD_ID) =
        "INSERT INTO pawl_throughput (minute, state, queue, "
        "count) SELECT ?1, state, queue, 1 FROM pawl_jobs WHERE "
        "id = ?2" SQLITE_SQL_TP_UPSERT,
    SQ_AT(SQ_TP_TRIM) = "DELETE FROM pawl_throughput WHERE minute < ?1",
    SQ_AT(SQ_DEPS_BRANCHES) = SQLITE_DEPS_BRANCHES,
    SQ_AT(SQ_ALERT_ADD) = SQLITE_ALERT_ADD,
};
#undef SQ_HERE

/* The body's start and end an outcome carries, capped at the finish's
 * `now` (SQLITE_SQL_RUN_START keeps the start after the claim); an end
 * before the start is the start. 0: not measured (bound as NULL). */
static void sq_run_times(const pawl_outcome_t *o, int64_t now, int64_t *start,
                         int64_t *end) {
  *start = o && o->started_at ? (o->started_at < now ? o->started_at : now)
                              : 0;
  *end = o && o->ended_at ? (o->ended_at < now ? o->ended_at : now) : 0;
  if (*end && *start && *end < *start) *end = *start;
}

static void sq_bind_time(sqlite3_stmt *st, int i, int64_t v) {
  if (v)
    sqlite3_bind_int64(st, i, v);
  else
    sqlite3_bind_null(st, i);
}

static int sq_add_attempt_run(sq_store_t *s, const pawl_id_t *id,
                              int64_t now, const char *outcome,
                              const char *error, const pawl_id_t *token,
                              int32_t attempt, const pawl_outcome_t *o);

int pawl__sq_add_attempt(sq_store_t *s, const pawl_id_t *id, int64_t now,
                         const char *outcome, const char *error,
                         const pawl_id_t *token, int32_t attempt) {
  return sq_add_attempt_run(s, id, now, outcome, error, token, attempt, NULL);
}

/* pawl__sq_add_attempt() for an outcome `o` that may carry the body's times. */
static int sq_add_attempt_run(sq_store_t *s, const pawl_id_t *id,
                              int64_t now, const char *outcome,
                              const char *error, const pawl_id_t *token,
                              int32_t attempt, const pawl_outcome_t *o) {
  sqlite3_stmt *st = sq_stmt(s, SQ_ATTEMPT_ADD);
  if (!st) return PAWL_ESTORE;
  int64_t start, end;
  sq_run_times(o, now, &start, &end);
  sq_bind_time(st, 7, start);
  sq_bind_time(st, 8, end);
  sq_bind_id(st, 1, id);
  sqlite3_bind_int64(st, 2, now);
  sqlite3_bind_text(st, 3, outcome, -1, SQLITE_STATIC);
  sq_bind_text(st, 4, error);
  sq_bind_id(st, 5, token);
  sqlite3_bind_int(st, 6, attempt);
  /* Only a failure or a retry has a traceback of its error. */
  sq_bind_text(st, 9,
               o && (o->kind == PAWL_OUT_FAILED || o->kind == PAWL_OUT_RETRY)
                   ? o->trace
                   : NULL);
  int rc = sq_exec(s, st, "record attempt");
  if (rc) return rc;
  return sqlite3_changes(s->db) == 1 ? 0 : PAWL_ELEASE;
}

int pawl__sq_event_from_row(sq_store_t *s, const pawl_id_t *id, int64_t now,
                            int to, const char *reason) {
  sqlite3_stmt *st = sq_stmt(s, SQ_EVENT_FROM_ROW);
  if (!st) return PAWL_ESTORE;
  sq_bind_id(st, 1, id);
  sqlite3_bind_int64(st, 2, now);
  sqlite3_bind_int(st, 3, to);
  sq_bind_text(st, 4, reason);
  return sq_exec(s, st, "record event");
}

int pawl__sq_add_event(sq_store_t *s, const pawl_id_t *id, int64_t now,
                       int from, int to, const char *actor,
                       const char *reason, int32_t attempt) {
  sqlite3_stmt *st = sq_stmt(s, SQ_EVENT_ADD);
  if (!st) return PAWL_ESTORE;
  sq_bind_id(st, 1, id);
  sqlite3_bind_int64(st, 2, now);
  sqlite3_bind_int(st, 3, from);
  sqlite3_bind_int(st, 4, to);
  sq_bind_text(st, 5, actor);
  sq_bind_text(st, 6, reason);
  sqlite3_bind_int(st, 7, attempt);
  return sq_exec(s, st, "record event");
}

static int sq_requeue(sq_store_t *s, const pawl_id_t *id, int64_t run_at,
                      int give_back, const char *error, int64_t now,
                      int ordering_skip) {
  sqlite3_stmt *st = sq_stmt(s, SQ_REQUEUE);
  if (!st) return PAWL_ESTORE;
  if (run_at < 0)
    sqlite3_bind_null(st, 1);
  else
    sqlite3_bind_int64(st, 1, run_at);
  sqlite3_bind_int64(st, 2, s->boost_ms);
  sqlite3_bind_int(st, 3, give_back);
  sq_bind_text(st, 4, error);
  sqlite3_bind_int64(st, 5, now);
  sq_bind_id(st, 6, id);
  sqlite3_bind_int(st, 7, ordering_skip);
  return sq_exec(s, st, "requeue job");
}

/* ---- throughput (store.h, "Throughput") -------------------------------- */

/* Deletes the buckets too old to be read, once per minute change seen by
 * this connection (inside the caller's write transaction: rolled back
 * with it, and then simply done again at the next write). */
int pawl__sq_tp_trim(sq_store_t *s, int64_t minute) {
  if (minute == s->tp_minute) return 0;
  sqlite3_stmt *st = sq_stmt(s, SQ_TP_TRIM);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_int64(st, 1, minute - STORE_TP_KEEP);
  int rc = sq_exec(s, st, "trim throughput");
  if (!rc) s->tp_minute = minute;
  return rc;
}

/* Job `id`, just finished at `now`, added to its bucket (its state and
 * queue as the row has them now). */
static int sq_tp_add_id(sq_store_t *s, const pawl_id_t *id, int64_t now) {
  int64_t minute = store_tp_minute(now);
  int rc = pawl__sq_tp_trim(s, minute);
  if (rc) return rc;
  sqlite3_stmt *st = sq_stmt(s, SQ_TP_ADD_ID);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_int64(st, 1, minute);
  sq_bind_id(st, 2, id);
  return sq_exec(s, st, "count finished job");
}

/* One success of queue `q` in this finish (copied). -1 when out of
 * memory. */
static int sq_tp_note(sq_store_t *s, const char *q) {
  if (!q) return -1;
  /* Batches are mostly of one queue: the last entry noted first. */
  if (s->ntp && s->tp_last < s->ntp && strcmp(s->tp[s->tp_last].queue, q) == 0) {
    s->tp[s->tp_last].n++;
    return 0;
  }
  for (size_t i = 0; i < s->ntp; i++)
    if (strcmp(s->tp[i].queue, q) == 0) {
      s->tp[s->tp_last = i].n++;
      return 0;
    }
  if (s->ntp == s->tpcap) {
    size_t cap = s->tpcap ? s->tpcap * 2 : 4;
    struct sq_tp *g = pawl__realloc(s->tp, cap * sizeof *g);
    if (!g) return -1;
    s->tp = g;
    s->tpcap = cap;
  }
  if (!(s->tp[s->ntp].queue = pawl__strdup(q))) return -1;
  s->tp[s->tp_last = s->ntp++].n = 1;
  return 0;
}

/* pawl_tp_note(queue, v, batch, seq, key) [SQL]: notes one success of `queue`
 * for this finish's throughput count (and of `batch`, when not NULL, for its
 * counters: pawl__sq_batch_flush()) and returns v. The success UPDATE
 * (SQLITE_SQL_SUCCEED_SET) sets updated_at through it, so it runs exactly once
 * per row written, with the row's queue at hand: counting a batch by queue
 * costs a function call per row, where reading the rows back (or RETURNING,
 * which stages each row in a temporary table) costs a statement
 * (bench/RESULTS.md). A failure to note is reported after the statement
 * (s->tp_oom): the finish then fails and rolls back. `seq` (dependencies): the
 * row's seq when it has children to release (deps_open), noted for
 * pawl__sq_deps_flush(); NULL for every other row, so a job without children
 * costs a CASE. `key`: the row's ordering key (NULL for nearly every job),
 * noted for its holds. */
void pawl__sq_tp_note_fn(sqlite3_context *ctx, int argc, sqlite3_value **v) {
  (void)argc;
  sq_store_t *s = sqlite3_user_data(ctx);
  if (sq_tp_note(s, (const char *)sqlite3_value_text(v[0])) != 0)
    s->tp_oom = 1;
  /* The row's batch: NULL for nearly every job. */
  if (sqlite3_value_type(v[2]) != SQLITE_NULL &&
      pawl__sq_batch_note(s, v[2]) != 0)
    s->tp_oom = 1;
  /* Dependencies: NULL for a job without children. */
  if (sqlite3_value_type(v[3]) != SQLITE_NULL)
    pawl__sq_deps_note(s, sqlite3_value_int64(v[3]));
  if (sqlite3_value_type(v[4]) != SQLITE_NULL)
    pawl__sq_key_note(s, (const char *)sqlite3_value_text(v[4]));
  sqlite3_result_value(ctx, v[1]);
}

/* The finish's successes noted by sq_tp_note(), added to their buckets:
 * one UPSERT per queue. */
static int sq_tp_flush(sq_store_t *s, int64_t now) {
  int64_t minute = store_tp_minute(now);
  int rc = 0;
  for (size_t i = 0; i < s->ntp && !rc; i++) {
    if (!s->tp[i].n) continue;
    if ((rc = pawl__sq_tp_trim(s, minute))) break;
    sqlite3_stmt *st = sq_stmt(s, SQ_TP_ADD);
    if (!st) return PAWL_ESTORE;
    sqlite3_bind_int64(st, 1, minute);
    sqlite3_bind_int(st, 2, PAWL_SUCCEEDED);
    sqlite3_bind_text(st, 3, s->tp[i].queue, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 4, s->tp[i].n);
    rc = sq_exec(s, st, "count finished jobs");
    s->tp[i].n = 0;
  }
  return rc;
}

/* The alert outbox row of job `id`, which moved to failed in this
 * transaction (schema V014 says why this is no trigger). */
int pawl__sq_alert_add(sq_store_t *s, const pawl_id_t *id, int64_t now) {
  sqlite3_stmt *st = sq_stmt(s, SQ_ALERT_ADD);
  if (!st) return PAWL_ESTORE;
  sq_bind_id(st, 1, id);
  sqlite3_bind_int64(st, 2, now);
  return sq_exec(s, st, "write the job's alert");
}

int pawl__sq_fail_job(sq_store_t *s, const pawl_id_t *id, const char *error,
                      int64_t now) {
  sqlite3_stmt *st = sq_stmt(s, SQ_FAIL);
  if (!st) return PAWL_ESTORE;
  sq_bind_text(st, 1, error);
  sqlite3_bind_int64(st, 2, now);
  sq_bind_id(st, 3, id);
  int rc = sq_exec(s, st, "fail job");
  if (!rc) rc = pawl__sq_alert_add(s, id, now);
  if (!rc) rc = pawl__sq_batch_count_job(s, id, 0, 1, 0, now);
  return rc ? rc : sq_tp_add_id(s, id, now);
}

/* The branches that fired when a job succeeded, written only
 * for the outcomes that carry them. */
static int sq_deps_branches(sq_store_t *s, const pawl_outcome_t *o) {
  sqlite3_stmt *st = sq_stmt(s, SQ_DEPS_BRANCHES);
  if (!st) return PAWL_ESTORE;
  sq_bind_id(st, 1, &o->id);
  sqlite3_bind_text(st, 2, o->branches, -1, SQLITE_STATIC);
  return sq_exec(s, st, "record fired branches");
}

/* One outcome inside the finish transaction. PAWL_ELEASE when the job is not
 * held by `token` under that attempt any more. A success is noted for the
 * batch's throughput count (sq_tp_note()); a failure is counted here. */
static int sq_finish_one(sq_store_t *s, const pawl_id_t *token,
                         const pawl_outcome_t *o, int64_t now) {
  int rc;
  if (o->kind == PAWL_OUT_STARTED)
    return pawl__sq_run_start(s, &o->id, token, o->attempt, o->started_at, now);
  if (o->kind == PAWL_OUT_SUCCEEDED) {
    /* The claim's store_key finds the row without the id index. It is a
     * hint, the id is the truth: a key that names another row falls back
     * to the id. */
    int by_key = o->store_key > 0;
    for (;;) {
      sqlite3_stmt *st = sq_stmt(s, by_key ? SQ_SUCCEED_SEQ : SQ_SUCCEED);
      if (!st) return PAWL_ESTORE;
      sq_bind_text(st, 1, o->result);
      sqlite3_bind_int64(st, 2, now);
      sq_bind_id(st, 3, &o->id);
      sq_bind_id(st, 4, token);
      sqlite3_bind_int(st, 5, o->attempt);
      if (by_key) sqlite3_bind_int64(st, 6, o->store_key);
      int64_t start, end;
      sq_run_times(o, now, &start, &end);
      sq_bind_time(st, 7, start);
      sq_bind_time(st, 8, end);
      /* The statement notes the row's queue (pawl_tp_note()). */
      if ((rc = sq_exec(s, st, "complete job"))) return rc;
      if (s->tp_oom)
        return pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
      if (sqlite3_changes(s->db) == 1)
        return o->branches ? sq_deps_branches(s, o) : 0;
      if (!by_key) return PAWL_ELEASE;
      by_key = 0;
    }
  }
  store_ending_t e;
  if ((rc = pawl__store_plan_ending(&s->base, o, now, &e))) return rc;
  rc = sq_add_attempt_run(s, &o->id, now, e.outcome, e.error, token,
                          o->attempt, o);
  if (!rc) rc = pawl__sq_event_from_row(s, &o->id, now, e.to, e.why);
  if (rc) return rc;
  if (e.to == PAWL_FAILED) return pawl__sq_fail_job(s, &o->id, e.error, now);
  return sq_requeue(s, &o->id, e.run_at, e.give_back,
                    e.error, now,
                    o->kind == PAWL_OUT_RETRY && o->ordering_skip);
}

/* ---- a run of successes in one statement (SQLITE_SQL_SUCCEED_MANY) ---- */

/* Seq order, then the outcomes' order: the first outcome of a seq is the
 * one the statement may write, as the first would be written one by one
 * (a repeat then finds the job ended, and is refused as stale). */
static int sq_fin_cmp(const void *a, const void *b) {
  const struct sq_fin *x = a, *y = b;
  if (x->seq != y->seq) return x->seq < y->seq ? -1 : 1;
  return x->o < y->o ? -1 : x->o > y->o;
}

static int sq_fin_id_cmp(const void *a, const void *b) {
  const struct sq_fin *x = a, *y = b;
  return memcmp(x->o->id.bytes, y->o->id.bytes, sizeof x->o->id.bytes);
}

/* The first outcome of `seq` in s->fin, or NULL. The statement visits its
 * rows in seq order, each several times in a row (one call per column),
 * so the last place found is looked at first. */
static struct sq_fin *sq_fin_find(sq_store_t *s, int64_t seq) {
  size_t p = s->fin_pos;
  if (p < s->nfin && s->fin[p].seq == seq) return &s->fin[p];
  size_t lo = 0, hi = s->nfin;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (s->fin[mid].seq < seq)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo == s->nfin || s->fin[lo].seq != seq) return NULL;
  s->fin_pos = lo;
  return &s->fin[lo];
}

static struct sq_fin *sq_fin_arg(sqlite3_context *ctx, sqlite3_value *seq) {
  return sq_fin_find(sqlite3_user_data(ctx), sqlite3_value_int64(seq));
}

/* pawl_fin_ok(seq, id, attempt): whether the row is the one the outcome
 * of its seq names, under that attempt (its state and lease token are
 * the statement's own test). */
void pawl__sq_fin_ok_fn(sqlite3_context *ctx, int argc, sqlite3_value **v) {
  (void)argc;
  struct sq_fin *f = sq_fin_arg(ctx, v[0]);
  int ok = f && !f->done &&
           sqlite3_value_bytes(v[1]) == (int)sizeof f->o->id.bytes &&
           memcmp(sqlite3_value_blob(v[1]), f->o->id.bytes,
                  sizeof f->o->id.bytes) == 0 &&
           sqlite3_value_int64(v[2]) == f->o->attempt;
  sqlite3_result_int(ctx, ok);
}

/* pawl_fin_result(seq): the outcome's result, and the outcome is written:
 * a SET expression, evaluated once for each row the statement writes. */
void pawl__sq_fin_result_fn(sqlite3_context *ctx, int argc, sqlite3_value **v) {
  (void)argc;
  struct sq_fin *f = sq_fin_arg(ctx, v[0]);
  if (!f) {
    sqlite3_result_error(ctx, "pawl_fin_result: no outcome for the row", -1);
    return;
  }
  f->done = 1;
  if (f->o->result)
    sqlite3_result_text(ctx, f->o->result, -1, SQLITE_STATIC);
  else
    sqlite3_result_null(ctx);
}

/* SQLITE_SQL_RUN_START for outcome `o` and the row's started_at `row`
 * (NULL: claimed ahead, not recorded): the run's start, 0 for NULL; the
 * body's end as measured (capped at `now`; 0: not measured) into *end. */
static int64_t sq_fin_run_start(const pawl_outcome_t *o, int64_t now,
                                sqlite3_value *row, int64_t *end) {
  int64_t start;
  sq_run_times(o, now, &start, end);
  int has_row = sqlite3_value_type(row) != SQLITE_NULL;
  int64_t r = has_row ? sqlite3_value_int64(row) : 0;
  if (!start) return r;
  return has_row && r > start ? r : start;
}

/* pawl_fin_start(seq, started_at): the run's start (SQLITE_SQL_RUN_START). */
void pawl__sq_fin_start_fn(sqlite3_context *ctx, int argc, sqlite3_value **v) {
  (void)argc;
  sq_store_t *s = sqlite3_user_data(ctx);
  struct sq_fin *f = sq_fin_arg(ctx, v[0]);
  if (!f) {
    sqlite3_result_error(ctx, "pawl_fin_start: no outcome for the row", -1);
    return;
  }
  int64_t end, start = sq_fin_run_start(f->o, s->fin_now, v[1], &end);
  if (start)
    sqlite3_result_int64(ctx, start);
  else
    sqlite3_result_null(ctx);
}

/* pawl_fin_end(seq, started_at): the run's end (SQLITE_SQL_RUN_END): the
 * finish's now when not measured, else not before the run's start. */
void pawl__sq_fin_end_fn(sqlite3_context *ctx, int argc, sqlite3_value **v) {
  (void)argc;
  sq_store_t *s = sqlite3_user_data(ctx);
  struct sq_fin *f = sq_fin_arg(ctx, v[0]);
  if (!f) {
    sqlite3_result_error(ctx, "pawl_fin_end: no outcome for the row", -1);
    return;
  }
  int64_t end, start = sq_fin_run_start(f->o, s->fin_now, v[1], &end);
  sqlite3_result_int64(ctx, !end ? s->fin_now : start > end ? start : end);
}

/* Writes the run of successes outs[from..to) (each with a row key) by one
 * statement; the ones it did not write (a stale attempt, a foreign key)
 * then go one by one by their id, as SUCCEED_SEQ's fallback. A run with
 * two outcomes of one job goes one by one, in order. Their results into
 * rcs; a failure of the statement is the finish's. */
static int sq_finish_run(sq_store_t *s, const pawl_id_t *token,
                         const pawl_outcome_t *outs, size_t from, size_t to,
                         int64_t now, int *rcs) {
  size_t n = to - from;
  if (n > s->fincap) {
    struct sq_fin *g = pawl__realloc(s->fin, n * sizeof *g);
    if (!g) return pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
    s->fin = g;
    s->fincap = n;
  }
  for (size_t i = 0; i < n; i++)
    s->fin[i] = (struct sq_fin){outs[from + i].store_key, &outs[from + i], 0};
  /* Two outcomes of one job: written one by one, in order, so that the
   * first wins whatever row keys they carry (the statement would write
   * the one its row's key names). */
  qsort(s->fin, n, sizeof *s->fin, sq_fin_id_cmp);
  for (size_t i = 1; i < n; i++)
    if (sq_fin_id_cmp(&s->fin[i - 1], &s->fin[i]) == 0) {
      int rc = 0;
      for (size_t k = from; k < to && !rc; k++) {
        int r = sq_finish_one(s, token, &outs[k], now);
        if (r == PAWL_ELEASE || r == PAWL_EINVAL) {
          if (rcs) rcs[k] = r;
        } else if (r) {
          rc = r;
        } else if (rcs) {
          rcs[k] = 0;
        }
      }
      return rc;
    }
  qsort(s->fin, n, sizeof *s->fin, sq_fin_cmp);
  s->nfin = n;
  s->fin_pos = 0;
  s->fin_now = now;
  pawl_buf_t seqs;
  pawl__buf_init(&seqs);
  for (size_t i = 0; i < n; i++)
    if (!i || s->fin[i].seq != s->fin[i - 1].seq)
      sq_seq_put(&seqs, s->fin[i].seq);
  pawl__buf_putc(&seqs, ']');
  int rc = seqs.oom ? pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory")
                    : 0;
  sqlite3_stmt *st = rc ? NULL : sq_stmt(s, SQ_SUCCEED_MANY);
  if (!rc && !st) rc = PAWL_ESTORE;
  if (!rc) {
    sqlite3_bind_text(st, 1, seqs.data, (int)seqs.len, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, now);
    sq_bind_id(st, 3, token);
    /* The statement notes each row's queue (pawl_tp_note()). */
    rc = sq_exec(s, st, "complete jobs");
  }
  pawl__buf_free(&seqs);
  if (!rc && s->tp_oom)
    rc = pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
  /* Which were written, by their place in outs. */
  unsigned char *done = rc ? NULL : pawl__calloc(n, 1);
  if (!rc && !done) rc = pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
  for (size_t i = 0; !rc && i < n; i++)
    if (s->fin[i].done) done[s->fin[i].o - &outs[from]] = 1;
  s->nfin = 0;
  for (size_t i = 0; !rc && i < n; i++) {
    const pawl_outcome_t *o = &outs[from + i];
    int r = 0;
    if (done[i]) {
      if (o->branches) r = sq_deps_branches(s, o);
    } else {
      pawl_outcome_t by_id = *o;
      by_id.store_key = 0;
      r = sq_finish_one(s, token, &by_id, now);
    }
    if (r == PAWL_ELEASE || r == PAWL_EINVAL) {
      if (rcs) rcs[from + i] = r;
    } else if (r) {
      rc = r;
    } else if (rcs) {
      rcs[from + i] = 0;
    }
  }
  pawl__free(done);
  return rc;
}

/* The log lines of one outcome, under its attempt. They were written by
 * the job whatever became of the outcome, so they are kept even when it is
 * refused as stale; a job that no longer exists takes none. */
static int sq_add_logs(sq_store_t *s, const pawl_outcome_t *o, int64_t now) {
  for (size_t i = 0; i < o->nlogs; i++) {
    const pawl_log_entry_t *l = &o->logs[i];
    sqlite3_stmt *st = sq_stmt(s, SQ_LOG_ADD);
    if (!st) return PAWL_ESTORE;
    sq_bind_id(st, 1, &o->id);
    sqlite3_bind_int(st, 2, o->attempt);
    sqlite3_bind_int64(st, 3, l->at ? l->at : now);
    sqlite3_bind_text(st, 4, l->level, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 5, l->message, -1, SQLITE_STATIC);
    sq_bind_text(st, 6, l->fields);
    int rc = sq_exec(s, st, "record log line");
    if (rc) return rc;
  }
  return 0;
}

int pawl__sq_finish(store_t *base, const pawl_id_t *token,
                    const pawl_outcome_t *outs, size_t n, int *rcs) {
  sq_store_t *s = (sq_store_t *)base;
  for (size_t i = 0; i < s->ntp; i++) s->tp[i].n = 0; /* a failed finish's */
  s->tp_oom = 0;
  s->nbn = 0;
  int rc = pawl__sq_begin(s);
  /* Read under the write lock, as the claim's: the times of transactions
   * then follow their order of commit. */
  int64_t now = pawl__store_now(base);
  /* Successes that carry their row key, in runs (nearly every outcome of
   * a busy host): each run is written by one statement once its logs
   * are (sq_finish_run()); the outcomes around it one by one, in order. */
  size_t run = 0; /* the first of the run being gathered */
  for (size_t i = 0; i < n && !rc; i++) {
    if ((rc = sq_add_logs(s, &outs[i], now))) break;
    int in_run = outs[i].kind == PAWL_OUT_SUCCEEDED && outs[i].store_key > 0;
    if (in_run && i + 1 < n) continue;
    size_t end = in_run ? i + 1 : i;
    if (end - run >= 2) {
      rc = sq_finish_run(s, token, outs, run, end, now, rcs);
    } else if (end > run) {
      int r = sq_finish_one(s, token, &outs[run], now);
      if (r == PAWL_ELEASE || r == PAWL_EINVAL) {
        if (rcs) rcs[run] = r;
      } else if (r) {
        rc = r;
      } else if (rcs) {
        rcs[run] = 0;
      }
    }
    run = i + 1;
    if (rc || in_run) continue;
    int r = sq_finish_one(s, token, &outs[i], now);
    if (r == PAWL_ELEASE || r == PAWL_EINVAL) {
      if (rcs) rcs[i] = r;
      continue;
    }
    if (r) rc = r;
    else if (rcs) rcs[i] = 0;
  }
  if (!rc) rc = pawl__sq_batch_flush(s, now);
  if (!rc) rc = sq_tp_flush(s, now);
  return pawl__sq_end(s, rc);
}
