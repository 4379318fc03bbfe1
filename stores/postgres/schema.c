/* schema.c: PostgreSQL store, migrations and the schema version (store.h,
 * "schema"). */
#include "pg_int.h"

extern const store_migration_t pawl__store_postgres_migrations[];
extern const size_t pawl__store_postgres_migration_count;

/* ---- schema and migrations ----------------------------------------------- */

/* The advisory lock that serializes migrations of one database: every pawl
 * starting at once takes it in turn, and the first applies what is
 * pending. ('pawl' in ASCII.) */
#define PG_MIGRATE_LOCK "1885435756"

/* Runs a query with no parameters that returns one integer. */
int pawl__pg_query_int(pg_store_t *s, const char *sql, int64_t *out,
                       const char *what) {
  PGresult *res = PQexec(s->conn, sql);
  int rc = 0;
  if (PQresultStatus(res) != PGRES_TUPLES_OK)
    rc = pawl__pg_fail(s, res, what);
  else
    *out = PQntuples(res) ? pg_int(res, 0, 0) : 0;
  PQclear(res);
  return rc;
}

static int pg_has_schema_table(pg_store_t *s, int *exists) {
  int64_t v = 0;
  int rc =
      pawl__pg_query_int(s,
                         "SELECT count(*) FROM pg_tables WHERE schemaname = "
                         "current_schema() AND tablename = 'pawl_schema'",
                         &v, "read schema");
  *exists = v > 0;
  return rc;
}

/* Checks what is recorded in pawl_schema against the migrations this build
 * carries: an applied script whose checksum changed, or a version newer than
 * we know, is refused. *applied receives the highest applied version. */
static int pg_check_applied(pg_store_t *s, int *applied) {
  PGresult *res = PQexec(s->conn, "SELECT version, name, checksum FROM "
                                  "pawl_schema ORDER BY version");
  if (PQresultStatus(res) != PGRES_TUPLES_OK) {
    int rc = pawl__pg_fail(s, res, "read pawl_schema");
    PQclear(res);
    return rc;
  }
  *applied = 0;
  int err = 0;
  for (int i = 0; i < PQntuples(res) && !err; i++) {
    int v = (int)pg_int(res, i, 0);
    const char *name = pg_val(res, i, 1), *sum = pg_val(res, i, 2);
    *applied = v;
    if ((size_t)v > pawl__store_postgres_migration_count || v < 1) {
      err = pawl__store_fail(&s->base, PAWL_ESCHEMA,
                       "database %s is at schema version %d, newer than this "
                       "pawl knows (%zu): upgrade pawl",
                       PQdb(s->conn), v, pawl__store_postgres_migration_count);
      break;
    }
    const store_migration_t *m = &pawl__store_postgres_migrations[v - 1];
    char want[16];
    if (!pawl__store_sum_ok("postgres", m, sum, want))
      err = pawl__store_fail(&s->base, PAWL_ESCHEMA,
                       "migration %s was changed after it was applied to "
                       "database %s (checksum recorded %s, file now %s)",
                       name ? name : m->name, PQdb(s->conn),
                       sum ? sum : "(none)", want);
  }
  PQclear(res);
  return err;
}

/* Creates pawl_schema in an empty schema; refuses a schema that holds other
 * tables but no pawl_schema (not a pawl database). */
static int pg_check_schema_table(pg_store_t *s, int create) {
  int exists = 0, rc = pg_has_schema_table(s, &exists);
  if (rc || exists) return rc;
  int64_t ntables = 0;
  if ((rc = pawl__pg_query_int(
           s,
           "SELECT count(*) FROM pg_tables WHERE schemaname = "
           "current_schema()",
           &ntables, "read schema")))
    return rc;
  if (ntables > 0) {
    PGresult *res = PQexec(s->conn, "SELECT current_schema()");
    const char *schema = PQresultStatus(res) == PGRES_TUPLES_OK &&
                                 PQntuples(res) == 1 && !PQgetisnull(res, 0, 0)
                             ? PQgetvalue(res, 0, 0)
                             : "?";
    int rc = pawl__store_fail(&s->base, PAWL_ESCHEMA,
                        "database %s is not a pawl database (schema %s has "
                        "%lld table%s but no pawl_schema)",
                        PQdb(s->conn), schema, (long long)ntables,
                        ntables == 1 ? "" : "s");
    PQclear(res);
    return rc;
  }
  if (!create)
    return pawl__store_fail(&s->base, PAWL_ESCHEMA,
                      "no pawl database in PostgreSQL database %s (its "
                      "current schema has no pawl tables): create it with "
                      "`pawl migrate`",
                      PQdb(s->conn));
  return pawl__pg_cmd(s,
                      "CREATE TABLE pawl_schema (version integer PRIMARY KEY, "
                      "name text NOT NULL, checksum text NOT NULL, applied_at "
                      "timestamptz NOT NULL DEFAULT now())",
                      "create pawl_schema");
}

/* Applies one migration in its own transaction. */
static int pg_apply(pg_store_t *s, const store_migration_t *m) {
  int rc = pawl__pg_cmd(s, "BEGIN", "begin migration");
  if (rc) return rc;
  char *sql = pawl__strndup(m->sql, m->len);
  if (!sql)
    return pawl__pg_end(
        s, pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory"));
  PGresult *res = PQexec(s->conn, sql);
  pawl__free(sql);
  if (PQresultStatus(res) != PGRES_COMMAND_OK &&
      PQresultStatus(res) != PGRES_TUPLES_OK) {
    char msg[300];
    pawl__pg_message(s, res, msg, sizeof msg);
    rc = pawl__store_fail(&s->base, pawl__pg_code(s, res),
                          "migration %s failed: %s", m->name, msg);
    PQclear(res);
    return pawl__pg_end(s, rc);
  }
  PQclear(res);
  char version[16], sum[16];
  snprintf(version, sizeof version, "%d", m->version);
  snprintf(sum, sizeof sum, "%08x", pawl__store_crc32(m->sql, m->len));
  const char *v[3] = {version, m->name, sum};
  res = PQexecParams(s->conn,
                     "INSERT INTO pawl_schema (version, name, checksum) "
                     "VALUES ($1::int, $2::text, $3::text)",
                     3, NULL, v, NULL, NULL, 0);
  if (PQresultStatus(res) != PGRES_COMMAND_OK)
    rc = pawl__pg_fail(s, res, "record migration");
  PQclear(res);
  return pawl__pg_end(s, rc);
}

/* Migrations run under a session advisory lock: concurrent starts queue
 * on it, and each re-reads the applied versions once it holds it. */
/* create: make pawl's tables in a database without them; migrate: apply
 * pending migrations to one that has them. */
static int pg_migrate_locked(pg_store_t *s, int create, int migrate) {
  int rc = pg_check_schema_table(s, create && migrate);
  if (rc) return rc;
  int applied = 0;
  if ((rc = pg_check_applied(s, &applied))) return rc;
  if (!migrate) return 0;
  for (size_t i = (size_t)applied;
       i < pawl__store_postgres_migration_count && !rc; i++)
    rc = pg_apply(s, &pawl__store_postgres_migrations[i]);
  return rc;
}

int pawl__pg_migrate_with(pg_store_t *s, int create, int migrate) {
  int rc = pawl__pg_ready(s);
  if (rc) return rc;
  if ((rc = pawl__pg_cmd(s, "SELECT pg_advisory_lock(" PG_MIGRATE_LOCK ")",
                         "lock for migration")))
    return rc;
  rc = pg_migrate_locked(s, create, migrate);
  PGresult *res =
      PQexec(s->conn, "SELECT pg_advisory_unlock(" PG_MIGRATE_LOCK ")");
  PQclear(res);
  return rc;
}

int pawl__pg_migrate(store_t *base) {
  return pawl__pg_migrate_with((pg_store_t *)base, 1, 1);
}

int pawl__pg_version(store_t *base, int *current, int *latest) {
  pg_store_t *s = (pg_store_t *)base;
  int rc = pawl__pg_ready(s);
  int exists = 0, applied = 0;
  if (!rc) rc = pg_has_schema_table(s, &exists);
  if (!rc && exists) rc = pg_check_applied(s, &applied);
  if (rc) return rc;
  *current = applied;
  *latest = (int)pawl__store_postgres_migration_count;
  return 0;
}
