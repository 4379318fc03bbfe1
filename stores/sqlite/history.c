/* history.c: SQLite store, a job's history (its attempts and events) and its
 * log lines (store.h, "history", and "jobs".logs). */
#include "sqlite_int.h"

/* The SQL of this file's statements, by their ids (sqlite_int.h,
 * "Statements"). */
#define SQ_HERE SQ__HISTORY
const char *const pawl__sq_sql_history[SQ__LOCKS - SQ__HISTORY] = {
    SQ_AT(SQ_ATTEMPTS) =
        "SELECT attempt, node, scheduled_at, started_at, "
        "ended_at, outcome, error, trace FROM pawl_attempts WHERE "
        "job_id = ?1 ORDER BY seq",
    SQ_AT(SQ_EVENTS) =
        "SELECT at, from_state, to_state, actor, reason, attempt "
        "FROM pawl_events WHERE job_id = ?1 ORDER BY seq",
    SQ_AT(SQ_LOGS) =
        "SELECT attempt, at, level, message, fields FROM pawl_logs "
        "WHERE job_id = ?1 ORDER BY seq",
};
#undef SQ_HERE

/* ---- history ------------------------------------------------------------ */

/* History: the rows written for failures and operator actions, put
 * together with what the success path keeps on the job row by
 * pawl__store_history_assemble(). */
int pawl__sq_history(store_t *base, const pawl_id_t *id,
                     pawl_history_t **out) {
  sq_store_t *s = (sq_store_t *)base;
  pawl_history_t *h = pawl__calloc(1, sizeof *h);
  pawl_job_t *j = NULL;
  pawl_event_t *rows = NULL;
  size_t nrows = 0;
  if (!h) return pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
  /* A read transaction gives one consistent snapshot of the three tables. */
  int rc = sqlite3_exec(s->db, "BEGIN", 0, 0, 0);
  if (rc != SQLITE_OK) {
    pawl__free(h);
    return pawl__sq_fail(s, rc, "begin read");
  }
  rc = pawl__sq_read_job(s, id, &j);
  int oom = 0, step;
  sqlite3_stmt *st = NULL;
  if (!rc && !(st = sq_stmt(s, SQ_ATTEMPTS))) rc = PAWL_ESTORE;
  if (!rc) {
    sq_bind_id(st, 1, id);
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
      pawl_attempt_t *a =
          pawl__store_push((void **)&h->attempts, &h->nattempts, sizeof *a);
      if (!a) {
        oom = 1;
        break;
      }
      store_row_t r = pawl__sq_row(st);
      if ((oom = pawl__store_attempt_fill(a, &r) != 0)) break;
    }
    if (!oom && step != SQLITE_DONE)
      rc = pawl__sq_fail(s, step, "read attempts");
    sqlite3_reset(st);
  }
  if (!rc && !oom && !(st = sq_stmt(s, SQ_EVENTS))) rc = PAWL_ESTORE;
  if (!rc && !oom) {
    sq_bind_id(st, 1, id);
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
      pawl_event_t *e = pawl__store_push((void **)&rows, &nrows, sizeof *e);
      if (!e) {
        oom = 1;
        break;
      }
      store_row_t r = pawl__sq_row(st);
      if ((oom = pawl__store_event_fill(e, &r) != 0)) break;
    }
    if (!oom && step != SQLITE_DONE) rc = pawl__sq_fail(s, step, "read events");
    sqlite3_reset(st);
  }
  sqlite3_exec(s->db, "COMMIT", 0, 0, 0);
  if (!rc && !oom)
    oom = pawl__store_history_assemble(h, j, rows, nrows) != 0;
  else
    pawl__store_events_free(rows, nrows);
  pawl_job_free(j);
  if (!rc && oom) rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
  if (rc) {
    pawl_history_free(h);
    return rc;
  }
  *out = h;
  return 0;
}

/* ---- logs --------------------------------------------------------------- */

int pawl__sq_logs(store_t *base, const pawl_id_t *id, pawl_log_record_t **out,
                  size_t *n) {
  sq_store_t *s = (sq_store_t *)base;
  pawl_log_record_t *recs = NULL;
  size_t count = 0;
  int rc = 0, step, oom = 0;
  /* One read transaction: the lines and the job's existence agree. */
  int src = sqlite3_exec(s->db, "BEGIN", 0, 0, 0);
  if (src != SQLITE_OK) return pawl__sq_fail(s, src, "begin read");
  sqlite3_stmt *st = sq_stmt(s, SQ_LOGS);
  if (!st) rc = PAWL_ESTORE;
  if (!rc) {
    sq_bind_id(st, 1, id);
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
      pawl_log_record_t *r = pawl__store_push((void **)&recs, &count, sizeof *recs);
      if (!r) {
        oom = 1;
        break;
      }
      store_row_t row = pawl__sq_row(st);
      if (pawl__store_log_fill(r, &row) != 0) oom = 1;
    }
    if (!oom && step != SQLITE_DONE) rc = pawl__sq_fail(s, step, "read logs");
    sqlite3_reset(st);
  }
  if (!rc && !oom && count == 0) {
    /* No lines: say whether that is because there is no such job. */
    st = sq_stmt(s, SQ_EXISTS);
    if (!st) {
      rc = PAWL_ESTORE;
    } else {
      sq_bind_id(st, 1, id);
      step = sqlite3_step(st);
      sqlite3_reset(st);
      if (step == SQLITE_DONE) {
        rc = pawl__store_no_job(base, id);
      } else if (step != SQLITE_ROW) {
        rc = pawl__sq_fail(s, step, "read job");
      }
    }
  }
  sqlite3_exec(s->db, "COMMIT", 0, 0, 0);
  if (!rc && oom) rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
  if (rc) {
    pawl_logs_free(recs, count);
    return rc;
  }
  *out = recs;
  *n = count;
  return 0;
}
