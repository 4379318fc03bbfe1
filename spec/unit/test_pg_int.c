/* test_pg_int.c: the PostgreSQL store's statement table
 * (stores/postgres/pg_int.h, "Statements"). */
#include "handle.h"
#include "pawl.h"
#include "pg_int.h"
#include "pgtest.h"
#include "unit.h"

PGconn *pawl__store_postgres_conn(store_t *st);

/* Every statement id has SQL in the table of the file that owns it, and
 * the SQL prepares on a freshly migrated schema: a statement whose entry
 * went missing, or a group whose marker is off by one, fails here instead
 * of on the first use of a rare path. The statements are prepared under
 * names of their own on the store's connection (its search path is the
 * test's schema), beside the store's "pawl_<id>" ones. */
void test_pg_statements_prepare(void) {
  const char *url = pgtest_url("stmts");
  pawl_options_t o;
  pawl_options_init(&o);
  o.db = url;
  pawl_t *p = NULL;
  char err[512];
  if (pawl_open(&p, &o, err, sizeof err))
    unit_fail(__FILE__, __LINE__, "pawl_open(%s): %s", url, err);
  PGconn *c = pawl__store_postgres_conn(p->store);
  CHECK(c != NULL);
  for (int id = 0; id < PG_COUNT; id++) {
    const char *sql = pawl__pg_sql(id);
    if (!sql) unit_fail(__FILE__, __LINE__, "statement %d has no SQL", id);
    char name[32];
    snprintf(name, sizeof name, "stmt_check_%d", id);
    PGresult *r = PQprepare(c, name, sql, 0, NULL);
    if (PQresultStatus(r) != PGRES_COMMAND_OK)
      unit_fail(__FILE__, __LINE__, "statement %d does not prepare: %s: %s",
                id, PQresultErrorMessage(r), sql);
    PQclear(r);
  }
  CHECK(pawl__pg_sql(-1) == NULL);
  CHECK(pawl__pg_sql(PG_COUNT) == NULL);
  pawl_close(p);
}
