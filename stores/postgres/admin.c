/* admin.c: PostgreSQL store, administration (store.h, "admin"). */
#include "pg_int.h"

#include "pg_admin_sql.h"
/* The SQL of this file's statements, by their ids (pg_int.h,
 * "Statements"). */
#define PG_HERE PG__ADMIN
const char *const pawl__pg_sql_admin[PG__METRICS - PG__ADMIN] = {
    /* administration (pg_admin_sql.h) */
    PG_AT(PG_ADM_COUNT_ST) = PG_ADM_COUNT,
    PG_AT(PG_ADM_COUNT_FAILED_ST) = PG_ADM_COUNT_FAILED,
    PG_AT(PG_ADM_PICK_ST) = PG_ADM_PICK,
    PG_AT(PG_ADM_PICK_FAILED_ST) = PG_ADM_PICK_FAILED,
    PG_AT(PG_ADM_LIST_ST) = PG_ADM_LIST,
    PG_AT(PG_ADM_STATS_PENDING_ST) = PG_ADM_STATS_PENDING,
    PG_AT(PG_ADM_STATS_RUNNING_ST) = PG_ADM_STATS_RUNNING,
    PG_AT(PG_ADM_STATS_DONE_ST) = PG_ADM_STATS_DONE,
    PG_AT(PG_ADM_STATS_TP_ST) = PG_ADM_STATS_TP,
    PG_AT(PG_ADM_RUNNING_ST) = PG_ADM_RUNNING,
    PG_AT(PG_ADM_LOCKS_ST) = PG_ADM_LOCKS,
};
#undef PG_HERE

/* ---- administration (host/api/admin.c) ------------------------------------
 * Bulk actions, filtered listings, statistics, locks and running jobs per
 * node. The SQL is in pg_admin_sql.h. */

/* Sets $1..$5 of PG_ADM_MATCH. */
static void pg_adm_match(pg_params_t *pp, const store_match_t *m) {
  pp_int(pp, 0, (int64_t)m->states);
  pp_str(pp, 1, m->f->queue);
  pp_str(pp, 2, m->f->type);
  pp_str(pp, 3, m->f->tag);
  if (m->cutoff)
    pp_int(pp, 4, m->cutoff);
  else
    pp_str(pp, 4, NULL);
}

static int pg_adm_failed_only(const store_match_t *m) {
  return m->states == (1u << PAWL_FAILED);
}

int pawl__pg_adm_count(store_t *base, const store_match_t *m, int64_t max,
                       int64_t *n) {
  pg_store_t *s = (pg_store_t *)base;
  pg_params_t pp;
  pg_adm_match(&pp, m);
  pp_int(&pp, 5, max);
  PGresult *res;
  int rc = pawl__pg_run(
      s, pg_adm_failed_only(m) ? PG_ADM_COUNT_FAILED_ST : PG_ADM_COUNT_ST, 6,
      pp.v, &res, "count jobs");
  if (rc) return rc;
  *n = PQntuples(res) == 1 ? pg_int(res, 0, 0) : 0;
  PQclear(res);
  return 0;
}

int pawl__pg_adm_pick(store_t *base, const store_match_t *m,
                      const store_pick_t *after, size_t max, store_pick_t *out,
                      size_t *n) {
  pg_store_t *s = (pg_store_t *)base;
  static const pawl_id_t zero; /* ids are UUIDv7s: never all zero */
  pg_params_t pp;
  pg_adm_match(&pp, m);
  pp_id(&pp, 5, after ? &after->id : &zero);
  pp_int(&pp, 6, (int64_t)max);
  PGresult *res;
  int rc = pawl__pg_run(
      s, pg_adm_failed_only(m) ? PG_ADM_PICK_FAILED_ST : PG_ADM_PICK_ST, 7,
      pp.v, &res, "pick jobs");
  if (rc) return rc;
  size_t k = 0;
  for (int i = 0; i < PQntuples(res) && k < max; i++, k++) {
    pg_id(res, i, 0, &out[k].id);
    out[k].version = pg_int(res, i, 1);
    out[k].key = 0;
  }
  PQclear(res);
  *n = k;
  return 0;
}

/* One transaction for the batch, the rows locked in id order (the order
 * finishing batches lock theirs in, so the two never deadlock); each job
 * under a savepoint, so that a job refused halfway (a business key held)
 * is undone alone and the batch goes on. */
int pawl__pg_adm_apply(store_t *base, store_op_t op, const char *actor,
                       const char *reason, const store_pick_t *picks, size_t n,
                       pawl_bulk_result_t *r) {
  pg_store_t *s = (pg_store_t *)base;
  pawl_bulk_result_t got = {0, 0, 0};
  int64_t now = 0;
  int rc = pawl__pg_begin(s);
  if (!rc) rc = pawl__pg_tx_now(base, &now);
  for (size_t i = 0; i < n && !rc; i++) {
    if ((rc = pawl__pg_cmd(s, "SAVEPOINT pawl_bulk", "savepoint"))) break;
    int one = pawl__store_transition_in(
        base, &pawl__pg_transition_steps, now, &picks[i].id, op, actor, reason,
        picks[i].version);
    if (one == 0) {
      got.changed++;
      rc = pawl__pg_cmd(s, "RELEASE SAVEPOINT pawl_bulk", "release savepoint");
      continue;
    }
    if (one == PAWL_ECONFLICT || one == PAWL_ENOTFOUND)
      got.skipped++;
    else if (one == PAWL_EKEY || one == PAWL_ESTATE)
      got.refused++;
    else
      rc = one; /* the database failed: the whole batch goes */
    if (!rc) {
      base->errmsg[0] = 0;
      rc = pawl__pg_cmd(s, "ROLLBACK TO SAVEPOINT pawl_bulk",
                        "roll back to savepoint");
    }
  }
  rc = pawl__pg_end(s, rc);
  if (!rc) {
    r->changed += got.changed;
    r->skipped += got.skipped;
    r->refused += got.refused;
  }
  return rc;
}

int pawl__pg_adm_list(store_t *base, const pawl_filter_t *f, pawl_job_cb cb,
                      void *data) {
  pg_store_t *s = (pg_store_t *)base;
  pg_params_t pp;
  pp_opt_int(&pp, 0, f->state >= 0, f->state);
  pp_str(&pp, 1, f->queue);
  pp_str(&pp, 2, f->type);
  pp_str(&pp, 3, f->tag);
  if (f->older_than_ms)
    pp_int(&pp, 4, pawl__store_now(base) - f->older_than_ms);
  else
    pp_str(&pp, 4, NULL);
  pp_int(&pp, 5, f->limit > 0 ? f->limit : 100);
  PGresult *res;
  int rc = pawl__pg_run(s, PG_ADM_LIST_ST, 6, pp.v, &res, "list jobs");
  return rc ? rc : pawl__pg_list_rows(s, res, cb, data);
}

int pawl__pg_adm_stats(store_t *base, int64_t now, store_stat_cb cb,
                       void *data) {
  pg_store_t *s = (pg_store_t *)base;
  static const int ids[4] = {PG_ADM_STATS_PENDING_ST, PG_ADM_STATS_RUNNING_ST,
                             PG_ADM_STATS_DONE_ST, PG_ADM_STATS_TP_ST};
  PGresult *res[4] = {NULL, NULL, NULL, NULL};
  /* One snapshot for every statement. */
  int rc = pawl__pg_ready(s);
  if (!rc)
    rc = pawl__pg_cmd(s, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
                      "begin read");
  if (rc) return rc;
  int64_t minute = store_tp_minute(now);
  for (int q = 0; q < 4 && !rc; q++) {
    pg_params_t pp;
    int np = q == 0 ? 1 : q == 3 ? 3 : 0;
    if (q == 3) {
      pp_int(&pp, 0, minute - 15);
      pp_int(&pp, 1, minute - 5);
      pp_int(&pp, 2, minute - 1);
    } else {
      pp_int(&pp, 0, now);
    }
    rc = pawl__pg_run(s, ids[q], np, pp.v, &res[q], "read statistics");
  }
  for (int q = 0; q < 4 && !rc; q++) {
    for (int i = 0; i < PQntuples(res[q]) && !rc; i++) {
      store_stat_row_t row = {0};
      int c = 0;
      if (q >= 2) row.state = (int)pg_int(res[q], i, c++);
      else row.state = q == 0 ? PAWL_PENDING : PAWL_RUNNING;
      row.queue = pg_val(res[q], i, c++);
      if (q == 3) {
        row.in_15m = pg_int(res[q], i, c++);
        row.in_5m = pg_int(res[q], i, c++);
        row.in_1m = pg_int(res[q], i, c++);
      } else {
        row.count = pg_int(res[q], i, c++);
      }
      if (q == 0) row.oldest_due = pg_int(res[q], i, c++);
      if (!row.queue) continue;
      if (cb(&row, data))
        rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
    }
  }
  for (int q = 0; q < 4; q++) PQclear(res[q]);
  return pawl__pg_end(s, rc);
}

int pawl__pg_adm_locks(store_t *base, store_lock_cb cb, void *data) {
  pg_store_t *s = (pg_store_t *)base;
  PGresult *res;
  int rc = pawl__pg_run(s, PG_ADM_LOCKS_ST, 0, NULL, &res, "list locks");
  if (rc) return rc;
  for (int i = 0; i < PQntuples(res) && !rc; i++) {
    pawl_lock_info_t l = {
        .name = (char *)pg_val(res, i, 0),
        .owner = (char *)pg_val(res, i, 1),
        .acquired_at = pg_int(res, i, 2),
        .expires_at = pg_int(res, i, 3),
    };
    if (cb(&l, data)) rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
  }
  PQclear(res);
  return rc;
}

int pawl__pg_adm_running(store_t *base, store_owner_cb cb, void *data) {
  pg_store_t *s = (pg_store_t *)base;
  PGresult *res;
  int rc =
      pawl__pg_run(s, PG_ADM_RUNNING_ST, 0, NULL, &res, "count running jobs");
  if (rc) return rc;
  for (int i = 0; i < PQntuples(res) && !rc; i++) {
    const char *owner = pg_val(res, i, 0);
    if (cb(owner ? owner : "", pg_int(res, i, 1), data))
      rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
  }
  PQclear(res);
  return rc;
}
