/* locks.c: SQLite store, named locks with an owner and an expiry (store.h,
 * "locks"). */
#include "sqlite_int.h"

/* The SQL of this file's statements, by their ids (sqlite_int.h,
 * "Statements"). */
#define SQ_HERE SQ__LOCKS
const char *const pawl__sq_sql_locks[SQ__NODES - SQ__LOCKS] = {
    SQ_AT(SQ_LOCK_ACQUIRE) =
        "INSERT INTO pawl_locks (name, owner, acquired_at, expires_at) "
        "VALUES (?1, ?2, ?3, ?4) ON CONFLICT (name) DO UPDATE SET "
        "owner = excluded.owner, acquired_at = CASE WHEN pawl_locks.owner = "
        "excluded.owner THEN pawl_locks.acquired_at ELSE excluded.acquired_at "
        "END, expires_at = excluded.expires_at WHERE pawl_locks.owner = "
        "excluded.owner OR pawl_locks.expires_at <= ?3",
    SQ_AT(SQ_LOCK_EXTEND) =
        "UPDATE pawl_locks SET expires_at = ?3 WHERE name = ?1 "
        "AND owner = ?2 AND expires_at > ?4",
    SQ_AT(SQ_LOCK_RELEASE) = "DELETE FROM pawl_locks WHERE name = ?1 AND "
                             "owner = ?2",
};
#undef SQ_HERE

/* ---- locks -------------------------------------------------------------- */

int pawl__sq_lock_acquire(store_t *base, const char *name, const char *owner,
                          int64_t ttl_ms, int *got) {
  sq_store_t *s = (sq_store_t *)base;
  int64_t now = pawl__store_now(base);
  sqlite3_stmt *st = sq_stmt(s, SQ_LOCK_ACQUIRE);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 2, owner, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 3, now);
  sqlite3_bind_int64(st, 4, now + ttl_ms);
  int rc = sq_exec_write(s, st, "acquire lock");
  if (!rc) *got = sqlite3_changes(s->db) == 1;
  return rc;
}

int pawl__sq_lock_extend(store_t *base, const char *name, const char *owner,
                         int64_t ttl_ms, int *ok) {
  sq_store_t *s = (sq_store_t *)base;
  int64_t now = pawl__store_now(base);
  sqlite3_stmt *st = sq_stmt(s, SQ_LOCK_EXTEND);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 2, owner, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 3, now + ttl_ms);
  sqlite3_bind_int64(st, 4, now);
  int rc = sq_exec_write(s, st, "extend lock");
  if (!rc) *ok = sqlite3_changes(s->db) == 1;
  return rc;
}

int pawl__sq_lock_release(store_t *base, const char *name, const char *owner) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_LOCK_RELEASE);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 2, owner, -1, SQLITE_STATIC);
  return sq_exec_write(s, st, "release lock");
}
