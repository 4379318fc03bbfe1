/* types.c: PostgreSQL store, job types (store.h, "types"). */
#include "pg_int.h"

/* The SQL of this file's statements, by their ids (pg_int.h,
 * "Statements"). */
#define PG_HERE PG__TYPES
const char *const pawl__pg_sql_types[PG__RECURRING - PG__TYPES] = {
    /* $1: [[type, [field, ...], [branch, ...]], ...]. A type's redact
     * list only grows: the names a node's script lists are added to those
     * recorded, so a node with an older copy of the script (no `redact`)
     * cannot reveal a field that another node's copy hides. */
    PG_AT(PG_TYPES_SYNC) =
        "INSERT INTO pawl_types AS t (type, redact, branches, updated_at) "
        "SELECT e->>0, e->1, e->2, pawl_now($2::bigint) FROM "
        "jsonb_array_elements($1::jsonb) AS e ON CONFLICT (type) DO UPDATE "
        "SET redact = t.redact || coalesce((SELECT jsonb_agg(n.v ORDER BY "
        "n.i) FROM jsonb_array_elements(excluded.redact) WITH ORDINALITY AS "
        "n(v, i) WHERE NOT t.redact @> jsonb_build_array(n.v)), '[]'), "
        "branches = excluded.branches, updated_at = excluded.updated_at "
        "WHERE EXISTS (SELECT 1 FROM jsonb_array_elements(excluded.redact) "
        "AS n(v) WHERE NOT t.redact @> jsonb_build_array(n.v)) OR "
        "t.branches IS DISTINCT FROM excluded.branches",
    PG_AT(PG_TYPE_REDACT) =
        "SELECT redact::text, branches::text FROM pawl_types "
        "WHERE type = $1::text",
};
#undef PG_HERE

/* ---- job types ----------------------------------------------------------- */

int pawl__pg_types_sync(store_t *base, const char *types) {
  pg_store_t *s = (pg_store_t *)base;
  pg_params_t pp;
  pp_str(&pp, 0, types);
  pp_now(s, &pp, 1);
  return pawl__pg_run(s, PG_TYPES_SYNC, 2, pp.v, NULL, "record job types");
}

int pawl__pg_type_get(store_t *base, const char *type, char **out,
                      char **branches) {
  pg_store_t *s = (pg_store_t *)base;
  *out = NULL;
  if (branches) *branches = NULL;
  const char *v[1] = {type};
  PGresult *res;
  int rc = pawl__pg_run(s, PG_TYPE_REDACT, 1, v, &res, "read a job type");
  if (rc) return rc;
  if (PQntuples(res) == 1 &&
      (pawl__store_dup(out, pg_val(res, 0, 0)) ||
       (branches && !PQgetisnull(res, 0, 1) &&
        pawl__store_dup(branches, pg_val(res, 0, 1))))) {
    pawl__free(*out);
    *out = NULL;
    rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
  }
  PQclear(res);
  return rc;
}
