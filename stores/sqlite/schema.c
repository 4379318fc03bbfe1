/* schema.c: SQLite store, the schema: the migrations table, applying the
 * embedded migrations (schema/sqlite/V*.sql) in order, each checksummed, and
 * the version a database is at (store.h, "schema"). */
#include "sqlite_int.h"

extern const store_migration_t pawl__store_sqlite_migrations[];
extern const size_t pawl__store_sqlite_migration_count;

/* ---- schema and migrations ---------------------------------------------- */

int pawl__sq_table_exists(sq_store_t *s, const char *name, int *exists) {
  sqlite3_stmt *st;
  int rc = sqlite3_prepare_v2(
      s->db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1",
      -1, &st, NULL);
  if (rc != SQLITE_OK) return pawl__sq_fail(s, rc, "read schema");
  sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
  rc = sqlite3_step(st);
  *exists = rc == SQLITE_ROW;
  sqlite3_finalize(st);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE)
    return pawl__sq_fail(s, rc, "read schema");
  return 0;
}

int pawl__sq_count_tables(sq_store_t *s, int *n) {
  sqlite3_stmt *st;
  int rc = sqlite3_prepare_v2(
      s->db, "SELECT count(*) FROM sqlite_master WHERE type = 'table'", -1,
      &st, NULL);
  if (rc != SQLITE_OK) return pawl__sq_fail(s, rc, "read schema");
  rc = sqlite3_step(st);
  *n = rc == SQLITE_ROW ? sqlite3_column_int(st, 0) : 0;
  sqlite3_finalize(st);
  if (rc != SQLITE_ROW) return pawl__sq_fail(s, rc, "read schema");
  return 0;
}

/* Checks what is recorded in pawl_schema against the migrations this build
 * carries: an applied script whose checksum changed, or a version newer than
 * we know, is refused. *applied receives the highest applied version. */
static int sq_check_applied(sq_store_t *s, int *applied) {
  sqlite3_stmt *st;
  int rc = sqlite3_prepare_v2(
      s->db, "SELECT version, name, checksum FROM pawl_schema ORDER BY version",
      -1, &st, NULL);
  if (rc != SQLITE_OK) return pawl__sq_fail(s, rc, "read pawl_schema");
  *applied = 0;
  int err = 0;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    int v = sqlite3_column_int(st, 0);
    const char *name = (const char *)sqlite3_column_text(st, 1);
    const char *sum = (const char *)sqlite3_column_text(st, 2);
    *applied = v;
    if ((size_t)v > pawl__store_sqlite_migration_count || v < 1) {
      err = pawl__store_fail(&s->base, PAWL_ESCHEMA,
                       "database sqlite:%s is at schema version %d, newer "
                       "than this pawl knows (%zu): upgrade pawl",
                       s->path, v, pawl__store_sqlite_migration_count);
      break;
    }
    const store_migration_t *m = &pawl__store_sqlite_migrations[v - 1];
    char want[16];
    if (!pawl__store_sum_ok("sqlite", m, sum, want)) {
      err = pawl__store_fail(&s->base, PAWL_ESCHEMA,
                       "migration %s was changed after it was applied to "
                       "sqlite:%s (checksum recorded %s, file now %s)",
                       name ? name : m->name, s->path, sum ? sum : "(none)",
                       want);
      break;
    }
  }
  if (!err && rc != SQLITE_DONE) err = pawl__sq_fail(s, rc, "read pawl_schema");
  sqlite3_finalize(st);
  return err;
}

/* Applies one migration in its own transaction, unless another process got
 * there first: BEGIN IMMEDIATE serializes concurrent starts, and the version
 * is re-read under the lock. */
static int sq_apply(sq_store_t *s, const store_migration_t *m) {
  int rc = sqlite3_exec(s->db, "BEGIN IMMEDIATE", 0, 0, 0);
  if (rc != SQLITE_OK) return pawl__sq_fail(s, rc, "begin migration");
  int applied = 0, err = sq_check_applied(s, &applied);
  if (err || applied >= m->version) {
    sqlite3_exec(s->db, "ROLLBACK", 0, 0, 0);
    return err;
  }
  if (applied != m->version - 1) {
    sqlite3_exec(s->db, "ROLLBACK", 0, 0, 0);
    return pawl__store_fail(&s->base, PAWL_ESCHEMA,
                      "cannot apply %s: database is at version %d",
                      m->name, applied);
  }
  char *sql = pawl__strndup(m->sql, m->len), *msg = NULL;
  if (!sql) {
    sqlite3_exec(s->db, "ROLLBACK", 0, 0, 0);
    return pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
  }
  rc = sqlite3_exec(s->db, sql, 0, 0, &msg);
  pawl__free(sql);
  if (rc != SQLITE_OK) {
    err = pawl__store_fail(&s->base, pawl__sq_rc_to_err(rc),
                           "migration %s failed: %s", m->name,
                           msg ? msg : sqlite3_errstr(rc));
    sqlite3_free(msg);
    sqlite3_exec(s->db, "ROLLBACK", 0, 0, 0);
    return err;
  }
  sqlite3_stmt *st;
  rc = sqlite3_prepare_v2(s->db,
                          "INSERT INTO pawl_schema (version, name, checksum, "
                          "applied_at) VALUES (?1, ?2, ?3, ?4)",
                          -1, &st, NULL);
  if (rc == SQLITE_OK) {
    char sum[16];
    snprintf(sum, sizeof sum, "%08x", pawl__store_crc32(m->sql, m->len));
    sqlite3_bind_int(st, 1, m->version);
    sqlite3_bind_text(st, 2, m->name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, sum, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 4, pawl__store_now(&s->base));
    rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc == SQLITE_DONE) rc = SQLITE_OK;
  }
  if (rc != SQLITE_OK) {
    err = pawl__sq_fail(s, rc, "record migration");
    sqlite3_exec(s->db, "ROLLBACK", 0, 0, 0);
    return err;
  }
  rc = sqlite3_exec(s->db, "COMMIT", 0, 0, 0);
  if (rc != SQLITE_OK) {
    err = pawl__sq_fail(s, rc, "commit migration");
    sqlite3_exec(s->db, "ROLLBACK", 0, 0, 0);
    return err;
  }
  return 0;
}

/* Makes sure this is a pawl database (or an empty file we may claim) with a
 * pawl_schema table. */
static int sq_check_schema_table(sq_store_t *s, int create);

/* The check and the creation happen under one write lock, so a process
 * starting at the same moment sees either no tables or pawl_schema, never
 * half of one and half of the other. */
int pawl__sq_prepare_schema_table(sq_store_t *s, int create) {
  int rc = sqlite3_exec(s->db, create ? "BEGIN IMMEDIATE" : "BEGIN", 0, 0, 0);
  if (rc != SQLITE_OK) return pawl__sq_fail(s, rc, "begin");
  int err = sq_check_schema_table(s, create);
  rc = sqlite3_exec(s->db, err ? "ROLLBACK" : "COMMIT", 0, 0, 0);
  if (!err && rc != SQLITE_OK) {
    err = pawl__sq_fail(s, rc, "create pawl_schema");
    sqlite3_exec(s->db, "ROLLBACK", 0, 0, 0);
  }
  return err;
}

static int sq_check_schema_table(sq_store_t *s, int create) {
  int exists = 0, rc = pawl__sq_table_exists(s, "pawl_schema", &exists);
  if (rc) return rc;
  if (exists) return 0;
  int ntables = 0;
  if ((rc = pawl__sq_count_tables(s, &ntables))) return rc;
  if (ntables > 0)
    return pawl__store_fail(&s->base, PAWL_ESCHEMA,
                      "sqlite:%s is not a pawl database (it has %d "
                      "table%s but no pawl_schema)",
                      s->path, ntables, ntables == 1 ? "" : "s");
  if (!create)
    return pawl__store_fail(&s->base, PAWL_ESCHEMA,
                      "sqlite:%s has no pawl schema yet: run `pawl migrate`",
                      s->path);
  rc = sqlite3_exec(s->db,
                    "CREATE TABLE pawl_schema ("
                    "version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
                    "checksum TEXT NOT NULL, applied_at INTEGER NOT NULL)",
                    0, 0, 0);
  if (rc != SQLITE_OK) return pawl__sq_fail(s, rc, "create pawl_schema");
  return 0;
}

/* Every command opens the store this way, so a database already at this
 * pawl's version is checked with reads alone: a write lock per migration
 * would queue `pawl show` behind a busy host's writers, where SQLite's
 * busy handler can lose the race for the lock until its timeout. */
int pawl__sq_migrate(store_t *base) {
  sq_store_t *s = (sq_store_t *)base;
  int exists = 0, applied = 0;
  int rc = pawl__sq_table_exists(s, "pawl_schema", &exists);
  if (rc) return rc;
  if (exists) {
    if ((rc = sq_check_applied(s, &applied))) return rc;
    if ((size_t)applied == pawl__store_sqlite_migration_count) return 0;
  }
  rc = pawl__sq_prepare_schema_table(s, 1);
  if (rc) return rc;
  for (size_t i = 0; i < pawl__store_sqlite_migration_count; i++)
    if ((rc = sq_apply(s, &pawl__store_sqlite_migrations[i]))) return rc;
  return 0;
}

int pawl__sq_version(store_t *base, int *current, int *latest) {
  sq_store_t *s = (sq_store_t *)base;
  int exists = 0, rc = pawl__sq_table_exists(s, "pawl_schema", &exists);
  if (rc) return rc;
  int applied = 0;
  if (exists && (rc = sq_check_applied(s, &applied))) return rc;
  *current = applied;
  *latest = (int)pawl__store_sqlite_migration_count;
  return 0;
}
