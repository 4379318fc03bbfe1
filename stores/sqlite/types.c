/* types.c: SQLite store, job types: the redact lists and branches each
 * node's scripts declare (table pawl_types; store.h, "types"). */
#include "sqlite_int.h"

/* The SQL of this file's statements, by their ids (sqlite_int.h,
 * "Statements"). */
#define SQ_HERE SQ__TYPES
const char *const pawl__sq_sql_types[SQ__RECURRING - SQ__TYPES] = {
    /* ?1: [[type, [field, ...], [branch, ...]], ...]; "WHERE true" keeps
     * the upsert's ON from being read as a join's. A type's redact list
     * only grows: the names a node's script lists are added to those
     * recorded, so a node with an older copy of the script (no `redact`)
     * cannot reveal a field that another node's copy hides. */
    SQ_AT(SQ_TYPES_SYNC) =
        "INSERT INTO pawl_types (type, redact, branches, updated_at) SELECT "
        "json_extract(value, '$[0]'), json(json_extract(value, '$[1]')), "
        "json(json_extract(value, '$[2]')), ?2 "
        "FROM json_each(?1) WHERE true ON CONFLICT (type) DO UPDATE SET "
        "redact = (SELECT json_group_array(value) FROM (SELECT 0 AS src, "
        "key, value FROM json_each(pawl_types.redact) UNION ALL SELECT 1, "
        "n.key, n.value FROM json_each(excluded.redact) AS n WHERE n.value "
        "NOT IN (SELECT value FROM json_each(pawl_types.redact)) ORDER BY "
        "src, key)), branches = excluded.branches, "
        "updated_at = excluded.updated_at WHERE EXISTS (SELECT 1 FROM "
        "json_each(excluded.redact) AS n WHERE n.value NOT IN (SELECT value "
        "FROM json_each(pawl_types.redact))) OR "
        "pawl_types.branches IS NOT excluded.branches",
    SQ_AT(SQ_TYPE_REDACT) = "SELECT redact, branches FROM pawl_types WHERE "
                            "type = ?1",
};
#undef SQ_HERE

/* ---- job types ----------------------------------------------------------- */

int pawl__sq_types_sync(store_t *base, const char *types) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_TYPES_SYNC);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_text(st, 1, types, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 2, pawl__store_now(base));
  return sq_exec_write(s, st, "record job types");
}

int pawl__sq_type_get(store_t *base, const char *type, char **out,
                      char **branches) {
  sq_store_t *s = (sq_store_t *)base;
  *out = NULL;
  if (branches) *branches = NULL;
  sqlite3_stmt *st = sq_stmt(s, SQ_TYPE_REDACT);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_text(st, 1, type, -1, SQLITE_STATIC);
  int rc = 0, step = sqlite3_step(st);
  if (step == SQLITE_ROW) {
    const char *b = (const char *)sqlite3_column_text(st, 1);
    if (pawl__store_dup(out, (const char *)sqlite3_column_text(st, 0)) ||
        (branches && b && pawl__store_dup(branches, b))) {
      pawl__free(*out);
      *out = NULL;
      rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
    }
  } else if (step != SQLITE_DONE) {
    rc = pawl__sq_fail(s, step, "read a job type");
  }
  sqlite3_reset(st);
  return rc;
}
