/* pgtest.h: PostgreSQL for unit tests.
 *
 * The tests share one throwaway server per test run (spec/support/
 * pg_server.sh, started by the ctest fixture `pg`); its URL is in the file
 * named by PAWL_TEST_PG_URL_FILE. Each test gets a fresh schema of its own
 * on that server, chosen through the connection's search_path, so tests
 * can run in parallel without seeing each other's tables. */
#ifndef PAWL_PGTEST_H
#define PAWL_PGTEST_H

#include <libpq-fe.h>

/* A pawl database URL ("postgres:CONNINFO") for a new, empty schema named
 * after `name` and this process. Ends the test as skipped (exit 77) when
 * PAWL_TEST_NO_PG is set; fails it when no server is available. The string
 * is static: copy it to keep two. */
const char *pgtest_url(const char *name);

/* pgtest_url() in a new database of its own (named as the schema), for a
 * test that counts what a statement reads: a transaction another test
 * keeps open in a shared database holds back the removal of dead row
 * versions there (VACUUM keeps what an older snapshot may still see), and
 * an index scan then reads past their entries. */
const char *pgtest_db_url(const char *name);

/* The schema of the last pgtest_url() or pgtest_db_url(). */
const char *pgtest_schema(void);

/* A plain libpq connection to `url` (as pgtest_url() returned), for
 * checks the API cannot make. Fails the test if it cannot connect. */
PGconn *pgtest_connect(const char *url);

/* Runs SQL on `c`; fails the test on error. */
void pgtest_exec(PGconn *c, const char *sql);

/* Runs a query returning one integer; fails the test otherwise. */
long long pgtest_int(PGconn *c, const char *sql);

#endif
