/* metrics.c: PostgreSQL store, the metrics gauges and `pawl top` (store.h,
 * "metrics", "top"). */
#include "pg_int.h"

#include "pg_admin_sql.h"
/* The SQL of this file's statements, by their ids (pg_int.h,
 * "Statements"). */
#define PG_HERE PG__METRICS
const char *const pawl__pg_sql_metrics[PG_COUNT - PG__METRICS] = {
    PG_AT(PG_MET_TP_ST) = PG_MET_TP,
    /* pawl top: the buckets from minute $1 on; the running
     * jobs (their partial index), longest running first. */
    PG_AT(PG_TOP_TP_Q) =
        "SELECT minute, state, queue, count FROM pawl_throughput "
        "WHERE minute >= $1::bigint ORDER BY minute, state, queue",
    PG_AT(PG_TOP_RUNNING_Q) = "SELECT " PG_JOB_COLS
                              " FROM pawl_jobs AS j WHERE "
                              "j.state = 1 ORDER BY j.started_at, j.id "
                              "LIMIT $1::int",
};
#undef PG_HERE

/* The metrics' gauges (store.h, "metrics"): one snapshot, the live rows
 * as pawl__pg_adm_stats reads them, the throughput since `since`, the exact
 * counts of the other states when `full`. */
int pawl__pg_met_gauges(store_t *base, int64_t now, int64_t since, int full,
                        store_stat_cb cb, void *data) {
  pg_store_t *s = (pg_store_t *)base;
  static const int ids[4] = {PG_ADM_STATS_PENDING_ST, PG_ADM_STATS_RUNNING_ST,
                             PG_MET_TP_ST, PG_ADM_STATS_DONE_ST};
  PGresult *res[4] = {NULL, NULL, NULL, NULL};
  int rc = pawl__pg_ready(s);
  if (!rc)
    rc = pawl__pg_cmd(s, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
                      "begin read");
  if (rc) return rc;
  int nq = full ? 4 : 3;
  for (int q = 0; q < nq && !rc; q++) {
    pg_params_t pp;
    pp_int(&pp, 0, q == 2 ? since : now);
    rc = pawl__pg_run(s, ids[q], q == 0 || q == 2 ? 1 : 0, pp.v, &res[q],
                      "read gauges");
  }
  for (int q = 0; q < nq && !rc; q++) {
    for (int i = 0; i < PQntuples(res[q]) && !rc; i++) {
      store_stat_row_t row = {0};
      int c = 0;
      if (q >= 2) row.state = (int)pg_int(res[q], i, c++);
      else row.state = q == 0 ? PAWL_PENDING : PAWL_RUNNING;
      row.queue = pg_val(res[q], i, c++);
      if (q == 2) row.since = pg_int(res[q], i, c++);
      else row.count = pg_int(res[q], i, c++);
      if (q == 0) row.oldest_due = pg_int(res[q], i, c++);
      if (!row.queue) continue;
      if (cb(&row, data))
        rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
    }
  }
  for (int q = 0; q < 4; q++) PQclear(res[q]);
  return pawl__pg_end(s, rc);
}

/* ---- top (store.h, "top") ------------------------------------------------ */

int pawl__pg_top_throughput(store_t *base, int64_t since, store_tp_cb cb,
                            void *data) {
  pg_store_t *s = (pg_store_t *)base;
  pg_params_t pp;
  pp_int(&pp, 0, since);
  PGresult *res;
  int rc = pawl__pg_run(s, PG_TOP_TP_Q, 1, pp.v, &res, "read throughput");
  if (rc) return rc;
  for (int i = 0; i < PQntuples(res) && !rc; i++) {
    const char *q = pg_val(res, i, 2);
    if (!q || cb(pg_int(res, i, 0), (int)pg_int(res, i, 1), q,
                 pg_int(res, i, 3), data))
      rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
  }
  PQclear(res);
  return rc;
}

int pawl__pg_top_running(store_t *base, int limit, pawl_job_cb cb, void *data) {
  pg_store_t *s = (pg_store_t *)base;
  pg_params_t pp;
  pp_int(&pp, 0, limit);
  PGresult *res;
  int rc =
      pawl__pg_run(s, PG_TOP_RUNNING_Q, 1, pp.v, &res, "list running jobs");
  return rc ? rc : pawl__pg_list_rows(s, res, cb, data);
}
