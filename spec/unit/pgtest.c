/* pgtest.c: see pgtest.h. */
#include "pgtest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "unit.h"

static char pgtest_schema_name[64];

/* The admin URL from the fixture's file. */
static void pgtest_admin_url(char *out, size_t len) {
  if (getenv("PAWL_TEST_NO_PG")) {
    fprintf(stderr, "PAWL_TEST_NO_PG is set: PostgreSQL test SKIPPED\n");
    fflush(NULL);
    _exit(77);
  }
  const char *file = getenv("PAWL_TEST_PG_URL_FILE");
  if (!file)
    unit_fail(__FILE__, __LINE__,
              "PAWL_TEST_PG_URL_FILE is not set: run this test through "
              "ctest (its fixture starts PostgreSQL), or set "
              "PAWL_TEST_NO_PG=1 to skip PostgreSQL tests");
  FILE *f = fopen(file, "r");
  if (!f || !fgets(out, (int)len, f))
    unit_fail(__FILE__, __LINE__, "no PostgreSQL URL in %s (did pg.start run?)",
              file);
  fclose(f);
  out[strcspn(out, "\r\n")] = 0;
}

static void pgtest_quiet(void *arg, const char *message) {
  (void)arg;
  (void)message;
}

PGconn *pgtest_connect(const char *url) {
  const char *conninfo = strncmp(url, "postgres:", 9) == 0 &&
                                 strncmp(url, "postgres://", 11) != 0
                             ? url + 9
                             : url;
  PGconn *c = PQconnectdb(conninfo);
  if (PQstatus(c) != CONNECTION_OK)
    unit_fail(__FILE__, __LINE__, "connect %s: %s", conninfo,
              PQerrorMessage(c));
  PQsetNoticeProcessor(c, pgtest_quiet, NULL);
  return c;
}

void pgtest_exec(PGconn *c, const char *sql) {
  PGresult *r = PQexec(c, sql);
  ExecStatusType st = PQresultStatus(r);
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
    unit_fail(__FILE__, __LINE__, "%s: %s", sql, PQerrorMessage(c));
  PQclear(r);
}

long long pgtest_int(PGconn *c, const char *sql) {
  PGresult *r = PQexec(c, sql);
  if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1)
    unit_fail(__FILE__, __LINE__, "%s: %s", sql, PQerrorMessage(c));
  long long v = atoll(PQgetvalue(r, 0, 0));
  PQclear(r);
  return v;
}

const char *pgtest_schema(void) { return pgtest_schema_name; }

/* pgtest_url() and pgtest_db_url(): a new schema named after `name`, in
 * a new database of the same name when `own_db` is set. */
static const char *pgtest_new(const char *name, int own_db) {
  static char url[1024];
  char admin[1024];
  pgtest_admin_url(admin, sizeof admin);
  snprintf(pgtest_schema_name, sizeof pgtest_schema_name, "t_%.40s_%d", name,
           (int)getpid());
  PGconn *c = pgtest_connect(admin);
  char sql[128];
  if (own_db) {
    snprintf(sql, sizeof sql, "CREATE DATABASE %s", pgtest_schema_name);
    pgtest_exec(c, sql);
  }
  /* Host, port and user of the server, as a conninfo string of our own. */
  PQconninfoOption *opts = PQconninfo(c);
  const char *host = "", *port = "", *user = "";
  for (PQconninfoOption *o = opts; o && o->keyword; o++) {
    if (!o->val) continue;
    if (strcmp(o->keyword, "host") == 0) host = o->val;
    if (strcmp(o->keyword, "port") == 0) port = o->val;
    if (strcmp(o->keyword, "user") == 0) user = o->val;
  }
  const char *dbname = own_db ? pgtest_schema_name : "postgres";
  snprintf(url, sizeof url,
           "postgres:host=%s port=%s user=%s dbname=%s "
           "options=-csearch_path=%s",
           host, port, user, dbname, pgtest_schema_name);
  PQconninfoFree(opts);
  PQfinish(c);
  /* The schema, in the database the URL names. */
  c = pgtest_connect(url);
  snprintf(sql, sizeof sql, "CREATE SCHEMA %s", pgtest_schema_name);
  pgtest_exec(c, sql);
  PQfinish(c);
  return url;
}

const char *pgtest_url(const char *name) { return pgtest_new(name, 0); }

const char *pgtest_db_url(const char *name) { return pgtest_new(name, 1); }
