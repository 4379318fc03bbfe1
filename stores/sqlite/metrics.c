/* metrics.c: SQLite store, the figures read for the operator: the gauges of
 * /metrics (store.h, "metrics") and `pawl top` (store.h, "top"), two groups
 * small enough to share a file. */
#include "sqlite_int.h"
#include "sqlite_admin_sql.h"

/* The SQL of this file's statements, by their ids (sqlite_int.h,
 * "Statements"). */
#define SQ_HERE SQ__METRICS
const char *const pawl__sq_sql_metrics[SQ_COUNT - SQ__METRICS] = {
    SQ_AT(SQ_MET_TP) = SQLITE_MET_TP,
    /* pawl top: the buckets from minute ?1 on; the running
     * jobs through their partial index (the literal state = 1 lets the
     * planner use it), longest running first. */
    SQ_AT(SQ_TOP_TP) =
        "SELECT minute, state, queue, count FROM pawl_throughput "
        "WHERE minute >= ?1 ORDER BY minute, state, queue",
    SQ_AT(SQ_TOP_RUNNING) =
        "SELECT " SQLITE_JOB_COLS " FROM pawl_jobs INDEXED BY "
        "pawl_jobs_running WHERE state = 1 ORDER BY "
        "started_at IS NULL, started_at, id LIMIT ?1",
};
#undef SQ_HERE

/* The metrics' gauges (store.h, "metrics"): the live rows as pawl__sq_adm_stats
 * reads them, the throughput since `since`, the tally when `full`. */
int pawl__sq_met_gauges(store_t *base, int64_t now, int64_t since, int full,
                        store_stat_cb cb, void *data) {
  sq_store_t *s = (sq_store_t *)base;
  static const int ids[2] = {SQ_ADM_STATS_PENDING, SQ_ADM_STATS_RUNNING};
  int rc = pawl__sq_adm_exec(s, SQ_ADM_BEGIN_READ, "begin read"),
      step = SQLITE_DONE;
  for (int q = 0; q < 3 && !rc; q++) {
    sqlite3_stmt *st = sq_stmt(s, q < 2 ? ids[q] : SQ_MET_TP);
    if (!st) {
      rc = PAWL_ESTORE;
      break;
    }
    if (q == 0) sqlite3_bind_int64(st, 1, now);
    if (q == 2) sqlite3_bind_int64(st, 1, since);
    while (!rc && (step = sqlite3_step(st)) == SQLITE_ROW) {
      store_stat_row_t row = {0};
      int c = 0;
      row.state = q == 0 ? PAWL_PENDING : q == 1 ? PAWL_RUNNING
                                                 : sqlite3_column_int(st, c++);
      /* Valid until the next step: the callback copies what it keeps. */
      row.queue = (const char *)sqlite3_column_text(st, c++);
      if (!row.queue) {
        rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
        break;
      }
      if (q == 2)
        row.since = sqlite3_column_int64(st, c++);
      else
        row.count = sqlite3_column_int64(st, c++);
      if (q == 0) row.oldest_due = sqlite3_column_int64(st, c++);
      if (cb(&row, data))
        rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
    }
    if (!rc && step != SQLITE_DONE) rc = pawl__sq_fail(s, step, "read gauges");
    sqlite3_reset(st);
  }
  if (!rc && full) rc = pawl__sq_adm_tally(s, cb, data);
  if (!sqlite3_get_autocommit(s->db)) {
    int end = pawl__sq_adm_exec(s, SQ_COMMIT, "end read");
    if (!rc) rc = end;
  }
  return rc;
}

/* ---- top (store.h, "top") -------------------------------------------------- */

int pawl__sq_top_throughput(store_t *base, int64_t since, store_tp_cb cb,
                            void *data) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_TOP_TP);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_int64(st, 1, since);
  int rc, err = 0;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    const char *q = (const char *)sqlite3_column_text(st, 2);
    if (!q || cb(sqlite3_column_int64(st, 0), sqlite3_column_int(st, 1), q,
                 sqlite3_column_int64(st, 3), data)) {
      err = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
      break;
    }
  }
  if (!err && rc != SQLITE_DONE) err = pawl__sq_fail(s, rc, "read throughput");
  sqlite3_reset(st);
  return err;
}

int pawl__sq_top_running(store_t *base, int limit, pawl_job_cb cb,
                         void *data) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_TOP_RUNNING);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_int(st, 1, limit);
  return pawl__sq_list_rows(s, st, cb, data);
}
