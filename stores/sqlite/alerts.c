/* alerts.c: SQLite store, dead-letter alerts (tables pawl_alerts,
 * pawl_alert_windows, schema V014; store.h, "alerts"). Only SQLITE_ALERT_ADD
 * (in terminal.c) is on a job's path: once, when it moves to failed. */
#include "sqlite_int.h"

/* In sq_alert_row()'s order. */
#define SQLITE_ALERT_COLS                                                    \
  "seq, kind, job_id, type, queue, attempt, error, created_at, verdict, "    \
  "count, suppressed, first_at, last_at"

/* Windows ended by ?1 (now): those with suppressed alerts become summary
 * rows (kind 1), then every ended window goes. */
#define SQLITE_ALERT_ROLL                                                    \
  "INSERT INTO pawl_alerts (kind, job_id, type, queue, attempt, error, "     \
  "created_at, count, suppressed, first_at, last_at) SELECT 1, job_id, "     \
  "type, queue, attempt, error, ?1, count, suppressed, first_at, last_at "   \
  "FROM pawl_alert_windows WHERE ends_at <= ?1 AND suppressed > 0"
#define SQLITE_ALERT_ROLL_DEL                                                \
  "DELETE FROM pawl_alert_windows WHERE ends_at <= ?1"

/* Leases to ?1 until ?2 at most ?4 rows free at ?3 (now). */
#define SQLITE_ALERT_TAKE                                                    \
  "UPDATE pawl_alerts SET taken_by = ?1, taken_until = ?2 WHERE seq IN "     \
  "(SELECT seq FROM pawl_alerts WHERE taken_until IS NULL OR taken_until "   \
  "<= ?3 ORDER BY seq LIMIT ?4) RETURNING " SQLITE_ALERT_COLS

#define SQLITE_ALERT_GET                                                     \
  "SELECT taken_by, verdict, count, first_at, last_at FROM pawl_alerts "     \
  "WHERE seq = ?1"

/* Opens window (?1 type, ?2 fp) at ?3 for ?4 ms, or counts into it; the
 * row keeps the last job's id (?5), queue, attempt and error. */
#define SQLITE_ALERT_WINDOW                                                  \
  "INSERT INTO pawl_alert_windows (type, fp, first_at, last_at, ends_at, "   \
  "count, suppressed, job_id, queue, attempt, error) VALUES (?1, ?2, ?3, "   \
  "?3, ?3 + ?4, 1, 0, ?5, ?6, ?7, ?8) ON CONFLICT (type, fp) DO UPDATE SET " \
  "last_at = max(last_at, excluded.last_at), count = count + 1, "            \
  "suppressed = suppressed + 1, job_id = excluded.job_id, queue = "          \
  "excluded.queue, attempt = excluded.attempt, error = excluded.error "      \
  "RETURNING count, first_at, last_at"

#define SQLITE_ALERT_VERDICT                                                 \
  "UPDATE pawl_alerts SET verdict = ?2, count = ?3, first_at = ?4, "         \
  "last_at = ?5 WHERE seq = ?1"

#define SQLITE_ALERT_DONE                                                    \
  "DELETE FROM pawl_alerts WHERE seq = ?1 AND taken_by = ?2"

/* The SQL of this file's statements, by their ids (sqlite_int.h,
 * "Statements"). */
#define SQ_HERE SQ__ALERTS
const char *const pawl__sq_sql_alerts[SQ__RETENTION - SQ__ALERTS] = {
    SQ_AT(SQ_ALERT_ROLL) = SQLITE_ALERT_ROLL,
    SQ_AT(SQ_ALERT_ROLL_DEL) = SQLITE_ALERT_ROLL_DEL,
    SQ_AT(SQ_ALERT_TAKE) = SQLITE_ALERT_TAKE,
    SQ_AT(SQ_ALERT_GET) = SQLITE_ALERT_GET,
    SQ_AT(SQ_ALERT_WINDOW) = SQLITE_ALERT_WINDOW,
    SQ_AT(SQ_ALERT_VERDICT) = SQLITE_ALERT_VERDICT,
    SQ_AT(SQ_ALERT_DONE) = SQLITE_ALERT_DONE,
};
#undef SQ_HERE

/* ---- dead-letter alerts ------------------------------------------------- */

/* Ends the windows whose time is up at `now` (in the caller's
 * transaction). */
static int sq_alert_roll(sq_store_t *s, int64_t now) {
  int ids[2] = {SQ_ALERT_ROLL, SQ_ALERT_ROLL_DEL};
  for (int i = 0; i < 2; i++) {
    sqlite3_stmt *st = sq_stmt(s, ids[i]);
    if (!st) return PAWL_ESTORE;
    sqlite3_bind_int64(st, 1, now);
    int rc = sq_exec(s, st, "end alert windows");
    if (rc) return rc;
  }
  return 0;
}

int pawl__sq_alert_take(store_t *base, const char *owner, int64_t lease_ms,
                        size_t max, store_alert_t **out, size_t *n) {
  sq_store_t *s = (sq_store_t *)base;
  *out = NULL;
  *n = 0;
  int rc = pawl__sq_begin(s);
  if (rc) return rc;
  int64_t now = pawl__store_now(base); /* under the write lock */
  rc = sq_alert_roll(s, now);
  sqlite3_stmt *st = rc ? NULL : sq_stmt(s, SQ_ALERT_TAKE);
  if (!rc && !st) rc = PAWL_ESTORE;
  store_alert_t *v = NULL;
  size_t count = 0;
  if (!rc) {
    sqlite3_bind_text(st, 1, owner, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, now + lease_ms);
    sqlite3_bind_int64(st, 3, now);
    sqlite3_bind_int64(st, 4, (int64_t)max);
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
      store_alert_t *a = pawl__store_push((void **)&v, &count, sizeof *a);
      if (!a) {
        rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
        break;
      }
      a->seq = sqlite3_column_int64(st, 0);
      a->kind = sqlite3_column_int(st, 1);
      sq_col_id(st, 2, &a->job_id);
      int oom =
          pawl__store_dup(&a->type, (const char *)sqlite3_column_text(st, 3));
      oom |=
          pawl__store_dup(&a->queue, (const char *)sqlite3_column_text(st, 4));
      a->attempt = sqlite3_column_int(st, 5);
      oom |=
          pawl__store_dup(&a->error, (const char *)sqlite3_column_text(st, 6));
      a->created_at = sqlite3_column_int64(st, 7);
      a->verdict = sqlite3_column_int(st, 8);
      a->count = sqlite3_column_int64(st, 9);
      a->suppressed = sqlite3_column_int64(st, 10);
      a->first_at = sqlite3_column_int64(st, 11);
      a->last_at = sqlite3_column_int64(st, 12);
      if (oom) {
        rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
        break;
      }
    }
    if (!rc && step != SQLITE_DONE) rc = pawl__sq_fail(s, step, "take alerts");
    sqlite3_reset(st);
  }
  rc = pawl__sq_end(s, rc);
  if (rc) {
    pawl__store_alerts_free(v, count);
    return rc;
  }
  *out = v;
  *n = count;
  return 0;
}

int pawl__sq_alert_note(store_t *base, const char *owner, int64_t fp,
                        int64_t window_ms, store_alert_t *a) {
  sq_store_t *s = (sq_store_t *)base;
  int rc = pawl__sq_begin(s);
  if (rc) return rc;
  int64_t now = pawl__store_now(base); /* under the write lock */
  sqlite3_stmt *st = sq_stmt(s, SQ_ALERT_GET);
  if (!st) rc = PAWL_ESTORE;
  int step = SQLITE_DONE, decided = 0;
  if (!rc) {
    sqlite3_bind_int64(st, 1, a->seq);
    step = sqlite3_step(st);
    const char *by = step == SQLITE_ROW
                         ? (const char *)sqlite3_column_text(st, 0) : NULL;
    if (step == SQLITE_ROW && by && strcmp(by, owner) == 0) {
      if (sqlite3_column_type(st, 1) != SQLITE_NULL) {
        decided = 1;
        a->verdict = sqlite3_column_int(st, 1);
        a->count = sqlite3_column_int64(st, 2);
        a->first_at = sqlite3_column_int64(st, 3);
        a->last_at = sqlite3_column_int64(st, 4);
      }
    } else if (step == SQLITE_ROW || step == SQLITE_DONE) {
      rc = pawl__store_fail(base, PAWL_ELEASE,
                            "alert %" PRId64 " is no longer held by %s",
                            a->seq, owner);
    } else {
      rc = pawl__sq_fail(s, step, "read alert");
    }
    sqlite3_reset(st);
  }
  if (!rc && !decided) rc = sq_alert_roll(s, now);
  if (!rc && !decided) {
    st = sq_stmt(s, SQ_ALERT_WINDOW);
    if (!st) rc = PAWL_ESTORE;
  }
  if (!rc && !decided) {
    sqlite3_bind_text(st, 1, a->type, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, fp);
    sqlite3_bind_int64(st, 3, now);
    sqlite3_bind_int64(st, 4, window_ms);
    sq_bind_id(st, 5, &a->job_id);
    sqlite3_bind_text(st, 6, a->queue, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 7, a->attempt);
    sq_bind_text(st, 8, a->error);
    step = sqlite3_step(st);
    if (step == SQLITE_ROW) {
      a->count = sqlite3_column_int64(st, 0);
      a->first_at = sqlite3_column_int64(st, 1);
      a->last_at = sqlite3_column_int64(st, 2);
      a->verdict = a->count == 1 ? 1 : 2;
    } else {
      rc = pawl__sq_fail(s, step, "count alert");
    }
    sqlite3_reset(st);
  }
  if (!rc && !decided) {
    st = sq_stmt(s, SQ_ALERT_VERDICT);
    if (!st) rc = PAWL_ESTORE;
  }
  if (!rc && !decided) {
    sqlite3_bind_int64(st, 1, a->seq);
    sqlite3_bind_int(st, 2, a->verdict);
    sqlite3_bind_int64(st, 3, a->count);
    sqlite3_bind_int64(st, 4, a->first_at);
    sqlite3_bind_int64(st, 5, a->last_at);
    rc = sq_exec(s, st, "record alert decision");
  }
  return pawl__sq_end(s, rc);
}

int pawl__sq_alert_done(store_t *base, const char *owner, int64_t seq) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_ALERT_DONE);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_int64(st, 1, seq);
  sqlite3_bind_text(st, 2, owner, -1, SQLITE_STATIC);
  return sq_exec_write(s, st, "remove alert");
}
