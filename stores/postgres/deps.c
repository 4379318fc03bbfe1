/* deps.c: PostgreSQL store, dependencies (store.h, "deps"). */
#include "pg_int.h"

/* The SQL of this file's statements, by their ids (pg_int.h,
 * "Statements"). */
#define PG_HERE PG__DEPS
const char *const pawl__pg_sql_deps[PG__STEPS - PG__DEPS] = {
    /* dependencies (the functions are in
     * schema/postgres/V010__deps.sql) */
    PG_AT(PG_DEPS_RELEASE) = "SELECT pawl_deps_release($1::uuid[], $2::bigint)",
    PG_AT(PG_DEPS_LINK) = "SELECT pawl_deps_link($1::uuid, $2::uuid[], "
                     "$3::text[], $4::bigint)",
    /* A manual retry (pawl__store_deps_reopen; see SQLITE_DEPS_UNCOUNT
     * and the ones after it): the children of parent $1 that may change,
     * blocked or canceled, are locked first, in id order, as
     * pawl_deps_release locks them. $2: the state the parent's end was
     * counted in. */
    PG_AT(PG_DEPS_LOCK_KIDS) =
        "SELECT 1 FROM pawl_jobs AS j JOIN pawl_deps AS d ON d.child = j.id "
        "WHERE d.parent = $1::uuid AND j.state IN (4, 6) ORDER BY j.id FOR "
        "NO KEY UPDATE OF j",
    PG_AT(PG_DEPS_UNCOUNT) =
        "UPDATE pawl_jobs AS j SET deps_left = j.deps_left + 1, deps_unmet "
        "= j.deps_unmet - (NOT pawl_deps_met(d.cond, $2::smallint, "
        "NULL))::integer FROM pawl_deps AS d WHERE d.parent = $1::uuid AND "
        "j.id = d.child AND j.state = 6",
    PG_AT(PG_DEPS_CANCELED) =
        "SELECT j.id FROM pawl_deps AS d JOIN pawl_jobs AS j ON j.id = "
        "d.child WHERE d.parent = $1::uuid AND j.state = 4 AND j.deps_left "
        "= 0 AND j.deps_unmet > 0 AND NOT pawl_deps_met(d.cond, "
        "$2::smallint, NULL) AND j.batch_id IS NULL AND NOT EXISTS (SELECT "
        "1 FROM pawl_signals AS s WHERE s.job_id = j.id) AND "
        "(j.business_key IS NULL OR NOT EXISTS (SELECT 1 FROM pawl_jobs AS "
        "o WHERE o.business_key = j.business_key AND o.state IN (0, 1, 5, "
        "6))) ORDER BY j.id",
    PG_AT(PG_DEPS_RECOUNT) =
        "UPDATE pawl_jobs SET deps_left = deps_left + 1, deps_unmet = "
        "deps_unmet - 1 WHERE id = $1::uuid",
    PG_AT(PG_DEPS_REOPEN_SELF) =
        "UPDATE pawl_jobs SET deps_open = EXISTS (SELECT 1 FROM pawl_deps "
        "WHERE parent = $1::uuid) WHERE id = $1::uuid",
    PG_AT(PG_DEPS_LIST) =
        "SELECT 1, p.id, p.type, p.state, d.cond FROM pawl_deps AS d JOIN "
        "pawl_jobs AS p ON p.id = d.parent WHERE d.child = $1::uuid UNION ALL "
        "SELECT 0, c.id, c.type, c.state, d.cond FROM pawl_deps AS d JOIN "
        "pawl_jobs AS c ON c.id = d.child WHERE d.parent = $1::uuid "
        "ORDER BY 1 DESC, 2",
};
#undef PG_HERE

/* ---- dependencies -------------------------------------------------------- */

/* The children of job `id`, just ended by an operator transition, counted
 * and settled in its transaction (pawl_deps_release() in
 * schema/postgres/V010__deps.sql, which argues why each end counts once). */
int pawl__pg_deps_release_one(pg_store_t *s, const pawl_id_t *id) {
  char text[PAWL_ID_STRLEN], arr[PAWL_ID_STRLEN + 2];
  pawl_id_format(id, text);
  snprintf(arr, sizeof arr, "{%s}", text);
  pg_params_t pp;
  pp_str(&pp, 0, arr);
  pp_now(s, &pp, 1);
  return pawl__pg_run(s, PG_DEPS_RELEASE, 2, pp.v, NULL,
                      "release the children of an ended job");
}

/* Links the new blocked job j to its parents (and `prev`, for a chain),
 * inside the insert's transaction (pawl_deps_link()). */
int pawl__pg_deps_link(pg_store_t *s, const store_new_job_t *j,
                       const pawl_id_t *prev) {
  pawl_buf_t ids, conds;
  arr_begin(&ids);
  arr_begin(&conds);
  const char *when = j->when ? j->when : "success";
  for (size_t i = 0; i < j->nafter; i++) {
    arr_id(&ids, &j->after[i]);
    arr_str(&conds, when);
  }
  if (j->after_prev && prev) {
    int dup = 0;
    for (size_t i = 0; i < j->nafter && !dup; i++)
      dup = memcmp(&j->after[i], prev, sizeof *prev) == 0;
    if (!dup) {
      arr_id(&ids, prev);
      arr_str(&conds, "success");
    }
  }
  arr_end(&ids);
  arr_end(&conds);
  int rc = 0;
  if (ids.oom || conds.oom)
    rc = pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
  PGresult *res = NULL;
  if (!rc) {
    pg_params_t pp;
    pp_id(&pp, 0, &j->id);
    pp_str(&pp, 1, ids.data);
    pp_str(&pp, 2, conds.data);
    pp_now(s, &pp, 3);
    rc = pawl__pg_run(s, PG_DEPS_LINK, 4, pp.v, &res,
                      "link a job to its parents");
  }
  if (!rc && PQntuples(res) == 1 && !PQgetisnull(res, 0, 0))
    rc = pawl__store_fail(&s->base, PAWL_ENOTFOUND, "unknown parent job %s",
                          PQgetvalue(res, 0, 0));
  PQclear(res);
  pawl__buf_free(&ids);
  pawl__buf_free(&conds);
  return rc;
}

static int pg_deps_uncount(store_t *base, const pawl_id_t *parent,
                           int state) {
  pg_store_t *s = (pg_store_t *)base;
  pg_params_t pp;
  pp_id(&pp, 0, parent);
  pp_int(&pp, 1, state);
  int rc =
      pawl__pg_run(s, PG_DEPS_LOCK_KIDS, 1, pp.v, NULL, "lock the children");
  if (!rc)
    rc = pawl__pg_run(s, PG_DEPS_UNCOUNT, 2, pp.v, NULL,
                      "reopen a retried parent");
  return rc;
}

static int pg_deps_canceled(store_t *base, const pawl_id_t *parent,
                            int state, pawl_id_t **out, size_t *n) {
  pg_store_t *s = (pg_store_t *)base;
  *out = NULL;
  *n = 0;
  pg_params_t pp;
  pp_id(&pp, 0, parent);
  pp_int(&pp, 1, state);
  PGresult *res;
  int rc = pawl__pg_run(s, PG_DEPS_CANCELED, 2, pp.v, &res,
                        "find the children a failure canceled");
  if (rc) return rc;
  int rows = PQntuples(res);
  if (rows > 0) {
    *out = pawl__calloc((size_t)rows, sizeof **out);
    if (!*out) rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
    for (int i = 0; !rc && i < rows; i++) pg_id(res, i, 0, &(*out)[i]);
    if (!rc) *n = (size_t)rows;
  }
  PQclear(res);
  return rc;
}

static int pg_deps_recount(store_t *base, const pawl_id_t *child) {
  pg_params_t pp;
  pp_id(&pp, 0, child);
  return pawl__pg_run((pg_store_t *)base, PG_DEPS_RECOUNT, 1, pp.v, NULL,
                      "reopen a child");
}

static int pg_deps_open(store_t *base, const pawl_id_t *parent) {
  pg_params_t pp;
  pp_id(&pp, 0, parent);
  return pawl__pg_run((pg_store_t *)base, PG_DEPS_REOPEN_SELF, 1, pp.v, NULL,
                      "reopen a retried parent");
}

static const store_reopen_steps_t pg_reopen_steps = {
    .uncount = pg_deps_uncount,
    .canceled = pg_deps_canceled,
    .recount = pg_deps_recount,
    .open = pg_deps_open,
};

int pawl__pg_deps_reopen(store_t *base, const pawl_id_t *id, int64_t now,
                         const char *actor) {
  return pawl__store_deps_reopen(base, &pawl__pg_transition_steps,
                                 &pg_reopen_steps, id, now, actor);
}

int pawl__pg_deps_list(store_t *base, const pawl_id_t *id, pawl_dep_cb cb,
                       void *data) {
  pg_store_t *s = (pg_store_t *)base;
  pg_params_t pp;
  pp_id(&pp, 0, id);
  PGresult *res;
  int rc = pawl__pg_run(s, PG_DEPS_LIST, 1, pp.v, &res, "list dependencies");
  if (rc) return rc;
  /* The result is whole before the first call: the callback may use the
   * store. */
  for (int i = 0; i < PQntuples(res); i++) {
    pawl_dep_t d;
    memset(&d, 0, sizeof d);
    d.parent = pg_int(res, i, 0) != 0;
    pg_id(res, i, 1, &d.id);
    d.type = pg_val(res, i, 2);
    d.state = (int)pg_int(res, i, 3);
    d.when = pg_val(res, i, 4);
    if (cb(&d, data)) break;
  }
  PQclear(res);
  return 0;
}
