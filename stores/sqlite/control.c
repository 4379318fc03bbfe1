/* control.c: SQLite store, operator transitions: the steps
 * pawl__store_transition() runs (stores/common), over one write transaction
 * (store.h, "control"). */
#include "sqlite_int.h"

/* The SQL of this file's statements, by their ids (sqlite_int.h,
 * "Statements"). */
#define SQ_HERE SQ__CONTROL
const char *const pawl__sq_sql_control[SQ__HISTORY - SQ__CONTROL] = {
    SQ_AT(SQ_FORGET_START) = "DELETE FROM pawl_started WHERE job_id = ?1",
    /* Every operator transition: C decides the new values from the row it
     * read, the version check makes it a compare-and-set. A row leaving
     * pending drops its hold; one made pending due later is early (V018);
     * sq_tx_update() notes the key for its holds. */
    SQ_AT(SQ_TRANSITION) =
        "UPDATE pawl_jobs SET state = ?4, paused_from = ?5, run_at = ?6, "
        "rank = ?7, attempt = ?8, last_error = ?9, result = ?10, "
        "finished_at = ?11, recoveries = ?12, lease_expires = ?13, "
        "held = CASE WHEN ?4 = 0 THEN held ELSE 0 END, early = ?4 = 0 AND "
        "?6 > ?1, updated_at = ?1, version = version + 1 WHERE id = ?2 AND "
        "version = ?3",
};
#undef SQ_HERE

/* ---- operator transitions ----------------------------------------------- */


/* The steps of pawl__store_transition() (see store.h), in SQLite. */
static int sq_tx_begin(store_t *base) {
  return pawl__sq_begin((sq_store_t *)base);
}

static int sq_tx_end(store_t *base, int rc) {
  return pawl__sq_end((sq_store_t *)base, rc);
}

/* BEGIN IMMEDIATE holds the write lock: the row read is the row written. */
static int sq_tx_read(store_t *base, const pawl_id_t *id, int for_update,
                      pawl_job_t **out) {
  (void)for_update;
  return pawl__sq_read_job((sq_store_t *)base, id, out);
}

static int sq_tx_now(store_t *base, int64_t *now) {
  *now = pawl__store_now(base);
  return 0;
}

static int sq_tx_end_attempt(store_t *base, const pawl_id_t *id, int64_t now,
                             const char *reason) {
  int rc = pawl__sq_add_attempt((sq_store_t *)base, id, now, "canceled", reason,
                                NULL, 0);
  return rc == PAWL_ELEASE ? 0 : rc;
}

static int sq_tx_event(store_t *base, const pawl_id_t *id, int64_t now,
                       int from, int to, const char *actor,
                       const char *reason, int32_t attempt) {
  return pawl__sq_add_event((sq_store_t *)base, id, now, from, to, actor,
                            reason, attempt);
}

static int sq_tx_update(store_t *base, const pawl_job_t *j,
                        const store_plan_t *plan, int64_t now, int *changed) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_TRANSITION);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_int64(st, 1, now);
  sq_bind_id(st, 2, &j->id);
  sqlite3_bind_int64(st, 3, j->version);
  sqlite3_bind_int(st, 4, plan->to);
  if (plan->paused_from >= 0)
    sqlite3_bind_int(st, 5, plan->paused_from);
  else
    sqlite3_bind_null(st, 5);
  sqlite3_bind_int64(st, 6, plan->run_at);
  int64_t boost;
  int brc = pawl__sq_queue_boost(s, j->queue, &boost);
  if (brc) return brc;
  sqlite3_bind_int64(st, 7, store_rank(j->priority, plan->run_at, boost));
  sqlite3_bind_int(st, 8, plan->attempt);
  sq_bind_text(st, 9, plan->last_error);
  sq_bind_text(st, 10, plan->result);
  sq_bind_opt_int(st, 11, plan->finished_at);
  sqlite3_bind_int(st, 12, plan->recoveries);
  if (plan->to == PAWL_RUNNING)
    sqlite3_bind_int64(st, 13, j->lease_expires);
  else
    sqlite3_bind_null(st, 13);
  int step = sqlite3_step(st);
  sqlite3_reset(st);
  if (step == SQLITE_CONSTRAINT) return PAWL_EKEY;
  if (step != SQLITE_DONE) return pawl__sq_fail(s, step, "update job");
  *changed = sqlite3_changes(s->db) == 1;
  if (*changed && j->ordering_key) pawl__sq_key_note(s, j->ordering_key);
  /* Into the dead-letter set (a signal's wait that expired): its alert. A
   * dead job paused and resumed is not a new one. */
  if (*changed && plan->to == PAWL_FAILED && j->state != PAWL_FAILED &&
      j->state != PAWL_PAUSED) {
    int rc = pawl__sq_alert_add(s, &j->id, now);
    if (rc) return rc;
  }
  /* A child that ends or is taken back moves its batch's counters. */
  int64_t d[3];
  if (*changed && store_batch_delta(j->state, j->paused_from, plan->to,
                                    plan->paused_from, d))
    return pawl__sq_batch_count_job(s, &j->id, d[0], d[1], d[2], now);
  return 0;
}

static int sq_tx_finished(store_t *base, const pawl_job_t *j, int to,
                          int64_t now) {
  sq_store_t *s = (sq_store_t *)base;
  int64_t minute = store_tp_minute(now);
  int rc = pawl__sq_tp_trim(s, minute);
  if (rc) return rc;
  sqlite3_stmt *st = sq_stmt(s, SQ_TP_ADD);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_int64(st, 1, minute);
  sqlite3_bind_int(st, 2, to);
  sqlite3_bind_text(st, 3, j->queue, -1, SQLITE_STATIC);
  sqlite3_bind_int(st, 4, 1);
  if ((rc = sq_exec(s, st, "count finished job"))) return rc;
  return pawl__sq_deps_note_id(s, &j->id);
}

static int sq_tx_forget_starts(store_t *base, const pawl_id_t *id) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *fs = sq_stmt(s, SQ_FORGET_START);
  if (!fs) return PAWL_ESTORE;
  sq_bind_id(fs, 1, id);
  return sq_exec(s, fs, "forget recorded starts");
}

const store_transition_steps_t pawl__sq_transition_steps = {
    .begin = sq_tx_begin,
    .end = sq_tx_end,
    .read = sq_tx_read,
    .now = sq_tx_now,
    .end_attempt = sq_tx_end_attempt,
    .add_event = sq_tx_event,
    .update = sq_tx_update,
    .forget_starts = sq_tx_forget_starts,
    .finished = sq_tx_finished,
    .pending = NULL,
    .reopen = pawl__sq_deps_reopen,
};

int pawl__sq_transition(store_t *base, const pawl_id_t *id, store_op_t op,
                        const char *actor, const char *owner,
                        const char *reason, pawl_job_t **out) {
  return pawl__store_transition(base, &pawl__sq_transition_steps, id, op, actor,
                                owner, reason, out);
}
