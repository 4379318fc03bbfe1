/* test_types.c: job types' redact lists in the database (issue 16,
 * pawl_types), on SQLite and PostgreSQL: what a host records, what a view
 * reads back, a row written only where its list changed, and the names
 * parser. */
#include "pawl.h"
#include "pawl_internal.h"
#include "alloc.h"
#include "pgtest.h"
#include "redact.h"
#include "unit.h"

static int64_t ty_now = INT64_C(1800000000000);
static int64_t ty_clock(void *data) {
  (void)data;
  return ty_now;
}

static pawl_t *ty_open(const char *url) {
  pawl_options_t o;
  pawl_options_init(&o);
  o.db = url;
  o.clock = ty_clock;
  pawl_t *p = NULL;
  char err[512];
  if (pawl_open(&p, &o, err, sizeof err))
    unit_fail(__FILE__, __LINE__, "pawl_open(%s): %s", url, err);
  return p;
}

/* The names of `type` joined by '|', or "(none)". */
static void ty_names(pawl_t *p, const char *type, char *out, size_t len) {
  char **names;
  size_t n;
  CHECK_OK(pawl_type_redact(p, type, &names, &n));
  if (!names) {
    CHECK_INT(n, ==, 0);
    snprintf(out, len, "(none)");
    return;
  }
  out[0] = 0;
  for (size_t i = 0; i < n; i++)
    snprintf(out + strlen(out), len - strlen(out), "%s%s", i ? "|" : "",
             names[i]);
  CHECK(names[n] == NULL);
  pawl_names_free(names);
}

static void contract_types(const char *url) {
  char copy[4200], got[400];
  snprintf(copy, sizeof copy, "%s", url);
  pawl_t *p = ty_open(copy);
  ty_names(p, "mail", got, sizeof got);
  CHECK_STR(got, "(none)");
  CHECK_OK(pawl__types_sync(p, "[[\"mail\",[\"ssn\",\"card\\\"no\",\"\\u00e9\"]],"
                               "[\"plain\",[]]]"));
  ty_names(p, "mail", got, sizeof got);
  CHECK_STR(got, "ssn|card\"no|\xc3\xa9");
  ty_names(p, "plain", got, sizeof got);
  CHECK_STR(got, "");
  /* A second handle (a view elsewhere) reads the same. */
  pawl_t *q = ty_open(copy);
  ty_names(q, "mail", got, sizeof got);
  CHECK_STR(got, "ssn|card\"no|\xc3\xa9");
  /* A reload that drops a list and leaves a type out: the list is
   * replaced, the other type's row stays. */
  ty_now += 1000;
  CHECK_OK(pawl__types_sync(p, "[[\"mail\",[]]]"));
  ty_names(q, "mail", got, sizeof got);
  CHECK_STR(got, "");
  CHECK_OK(pawl__types_sync(p, "[[\"plain\",[\"pin\"]]]"));
  ty_names(q, "plain", got, sizeof got);
  CHECK_STR(got, "pin");
  CHECK_OK(pawl__types_sync(p, "[]"));
  /* Bad input: refused with a message, nothing written. */
  CHECK_INT(pawl__types_sync(p, "[[\"x\""), ==, PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "job types to record") != NULL);
  char **names;
  size_t n;
  CHECK_INT(pawl_type_redact(p, "", &names, &n), ==, PAWL_EINVAL);
  CHECK(names == NULL);
  pawl_close(q);
  pawl_close(p);
}

void test_store_sqlite_types(void) {
  char url[4200];
  snprintf(url, sizeof url, "sqlite:%s/types.db", unit_tmpdir());
  contract_types(url);
}

void test_store_pg_types(void) { contract_types(pgtest_url("types")); }

void test_redact_names_parse(void) {
  char **names;
  size_t n;
  CHECK_INT(pawl__redact_names(" [ \"a\" , \"b\\u0063\" ] ", &names, &n), ==, 0);
  CHECK_INT(n, ==, 2);
  CHECK_STR(names[0], "a");
  CHECK_STR(names[1], "bc");
  CHECK(names[2] == NULL);
  pawl__free(names);
  CHECK_INT(pawl__redact_names("[]", &names, &n), ==, 0);
  CHECK_INT(n, ==, 0);
  CHECK(names && names[0] == NULL);
  pawl__free(names);
  static const char *const bad[] = {"", "{}", "[1]", "[\"a\",]", "[\"a\"",
                                    "[\"a\"] x", "[,]", "[\"a\" \"b\"]"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    CHECK_INT(pawl__redact_names(bad[i], &names, &n), ==, -1);
    CHECK(names == NULL);
  }
}
