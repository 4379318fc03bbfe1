/* retention.c: PostgreSQL store, retention (store.h, "retention"). */
#include "pg_int.h"

/* The SQL of this file's statements, by their ids (pg_int.h,
 * "Statements"). */
#define PG_HERE PG__RETENTION
const char *const pawl__pg_sql_retention[PG__ADMIN - PG__RETENTION] = {
    /* retention: the walk by primary key (UUIDv7: time
     * ordered), any state (the caller decides). */
    PG_AT(PG_RET_SCAN) = "SELECT id, version, state, pawl_ms(created_at), "
                    "pawl_ms(finished_at), queue, type FROM pawl_jobs WHERE "
                    "id > $1::uuid ORDER BY id LIMIT $2::bigint",
    /* $1 ids, $2 the versions the walk read. The state, version and
     * deps_open are checked by the DELETE itself; the foreign keys cascade
     * to the job's other rows; its dependency edges have none. */
    PG_AT(PG_RET_DELETE) =
        "WITH p AS (SELECT * FROM unnest($1::uuid[], $2::bigint[]) AS "
        "p(id, version)), gone AS (DELETE FROM pawl_jobs AS j USING p WHERE "
        "j.id = p.id AND j.version = p.version AND j.state IN (2, 3, 4) AND "
        "NOT j.deps_open RETURNING j.id), e AS (DELETE FROM pawl_deps WHERE "
        "parent IN (SELECT id FROM gone) OR child IN (SELECT id FROM gone)) "
        "SELECT id FROM gone ORDER BY id",
    /* The same, the rows moved into the archive tables ($3: now): the
     * SELECTs of the job's attempts, events and logs read the statement's
     * snapshot, before the cascade deletes them at its end. */
    PG_AT(PG_RET_ARCHIVE) =
        "WITH p AS (SELECT * FROM unnest($1::uuid[], $2::bigint[]) AS "
        "p(id, version)), gone AS (DELETE FROM pawl_jobs AS j USING p WHERE "
        "j.id = p.id AND j.version = p.version AND j.state IN (2, 3, 4) AND "
        "NOT j.deps_open RETURNING j.*), aj AS (INSERT INTO "
        "pawl_jobs_archive SELECT pawl_now($3::bigint), g.* FROM gone AS g), "
        "aa AS (INSERT INTO pawl_attempts_archive SELECT x.* FROM "
        "pawl_attempts AS x WHERE x.job_id IN (SELECT id FROM gone)), ae AS "
        "(INSERT INTO pawl_events_archive SELECT x.* FROM pawl_events AS x "
        "WHERE x.job_id IN (SELECT id FROM gone)), al AS (INSERT INTO "
        "pawl_logs_archive SELECT x.* FROM pawl_logs AS x WHERE x.job_id IN "
        "(SELECT id FROM gone)), e AS (DELETE FROM pawl_deps WHERE parent IN "
        "(SELECT id FROM gone) OR child IN (SELECT id FROM gone)) SELECT id "
        "FROM gone ORDER BY id",
};
#undef PG_HERE

/* ---- retention ------------------------------------------------------------
 * The walk reads pages by primary key; a page's removal is one statement
 * (its own transaction), the ids and versions passed as arrays. */

int pawl__pg_ret_scan(store_t *base, const store_pick_t *after, size_t max,
                      store_retain_row_t *out, size_t *n) {
  pg_store_t *s = (pg_store_t *)base;
  static const pawl_id_t zero; /* ids are UUIDv7s: never all zero */
  pg_params_t pp;
  pp_id(&pp, 0, after ? &after->id : &zero);
  pp_int(&pp, 1, (int64_t)max);
  PGresult *res;
  int rc =
      pawl__pg_run(s, PG_RET_SCAN, 2, pp.v, &res, "scan jobs for retention");
  if (rc) return rc;
  size_t k = 0;
  for (int i = 0; i < PQntuples(res) && k < max; i++, k++) {
    store_retain_row_t *r = &out[k];
    pg_id(res, i, 0, &r->pick.id);
    r->pick.version = pg_int(res, i, 1);
    r->pick.key = 0;
    r->state = (int)pg_int(res, i, 2);
    r->created_at = pg_int(res, i, 3);
    r->finished_at = pg_int(res, i, 4);
    const char *q = pg_val(res, i, 5), *t = pg_val(res, i, 6);
    snprintf(r->queue, sizeof r->queue, "%s", q ? q : "");
    snprintf(r->type, sizeof r->type, "%s", t ? t : "");
  }
  PQclear(res);
  *n = k;
  return 0;
}

int pawl__pg_ret_remove(store_t *base, const store_retain_row_t *rows, size_t n,
                        int archive, int *removed) {
  pg_store_t *s = (pg_store_t *)base;
  for (size_t i = 0; i < n; i++) removed[i] = 0;
  if (n == 0) return 0;
  pawl_buf_t ids, vers;
  arr_begin(&ids);
  arr_begin(&vers);
  for (size_t i = 0; i < n; i++) {
    arr_id(&ids, &rows[i].pick.id);
    arr_int(&vers, rows[i].pick.version);
  }
  arr_end(&ids);
  arr_end(&vers);
  int rc = 0;
  if (ids.oom || vers.oom)
    rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
  PGresult *res = NULL;
  if (!rc) {
    pg_params_t pp;
    pp_str(&pp, 0, ids.data);
    pp_str(&pp, 1, vers.data);
    pp_now(s, &pp, 2);
    rc = archive
             ? pawl__pg_run(s, PG_RET_ARCHIVE, 3, pp.v, &res, "archive jobs")
             : pawl__pg_run(s, PG_RET_DELETE, 2, pp.v, &res, "delete jobs");
  }
  pawl__buf_free(&ids);
  pawl__buf_free(&vers);
  if (rc) return rc;
  /* Both lists are in the walk's order (by id, as the uuid compares:
   * its bytes): one merge marks the rows that went. */
  size_t k = 0;
  for (int i = 0; i < PQntuples(res); i++) {
    pawl_id_t id;
    pg_id(res, i, 0, &id);
    while (k < n && memcmp(rows[k].pick.id.bytes, id.bytes, 16) < 0) k++;
    if (k < n && memcmp(rows[k].pick.id.bytes, id.bytes, 16) == 0)
      removed[k++] = 1;
  }
  PQclear(res);
  return 0;
}
