/* locks.c: PostgreSQL store, named locks with an owner and an expiry (store.h,
 * "locks"). */
#include "pg_int.h"

/* The SQL of this file's statements, by their ids (pg_int.h,
 * "Statements"). */
#define PG_HERE PG__LOCKS
const char *const pawl__pg_sql_locks[PG__NODES - PG__LOCKS] = {
    PG_AT(PG_LOCK_ACQUIRE) =
        "INSERT INTO pawl_locks AS l (name, owner, acquired_at, expires_at) "
        "VALUES ($1::text, $2::text, pawl_now($3::bigint), "
        "pawl_now($3::bigint) + $4::float8 * interval '1 millisecond') "
        "ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, "
        "acquired_at = CASE WHEN l.owner = excluded.owner THEN l.acquired_at "
        "ELSE excluded.acquired_at END, expires_at = excluded.expires_at "
        "WHERE l.owner = excluded.owner OR l.expires_at <= "
        "pawl_now($3::bigint)",
    PG_AT(PG_LOCK_EXTEND) =
        "UPDATE pawl_locks SET expires_at = pawl_now($3::bigint) "
        "+ $4::float8 * interval '1 millisecond' WHERE name = "
        "$1::text AND owner = $2::text AND expires_at > "
        "pawl_now($3::bigint)",
    PG_AT(PG_LOCK_RELEASE) =
        "DELETE FROM pawl_locks WHERE name = $1::text AND "
        "owner = $2::text",
};
#undef PG_HERE

/* ---- locks --------------------------------------------------------------- */

static int pg_lock_write(pg_store_t *s, int stmt, const char *name,
                         const char *owner, int64_t ttl_ms, int *changed,
                         const char *what) {
  pg_params_t pp;
  pp_str(&pp, 0, name);
  pp_str(&pp, 1, owner);
  pp_now(s, &pp, 2);
  pp_int(&pp, 3, ttl_ms);
  PGresult *res;
  int rc =
      pawl__pg_run(s, stmt, stmt == PG_LOCK_RELEASE ? 2 : 4, pp.v, &res, what);
  if (rc) return rc;
  if (changed) *changed = pg_changed(res) == 1;
  PQclear(res);
  return 0;
}

int pawl__pg_lock_acquire(store_t *base, const char *name, const char *owner,
                          int64_t ttl_ms, int *got) {
  return pg_lock_write((pg_store_t *)base, PG_LOCK_ACQUIRE, name, owner,
                       ttl_ms, got, "acquire lock");
}

int pawl__pg_lock_extend(store_t *base, const char *name, const char *owner,
                         int64_t ttl_ms, int *ok) {
  return pg_lock_write((pg_store_t *)base, PG_LOCK_EXTEND, name, owner, ttl_ms,
                       ok, "extend lock");
}

int pawl__pg_lock_release(store_t *base, const char *name, const char *owner) {
  return pg_lock_write((pg_store_t *)base, PG_LOCK_RELEASE, name, owner, 0,
                       NULL, "release lock");
}
