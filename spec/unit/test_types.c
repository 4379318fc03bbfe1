/* test_types.c: job types' redact lists in the database
 * (pawl_types), on SQLite and PostgreSQL: what a host records, what a view
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
  /* A node whose copy of the script lists fewer names (or none), and
   * leaves a type out: nothing recorded is revealed, the other type's row
   * stays; a name listed anew is added after those recorded. */
  ty_now += 1000;
  CHECK_OK(pawl__types_sync(p, "[[\"mail\",[]]]"));
  ty_names(q, "mail", got, sizeof got);
  CHECK_STR(got, "ssn|card\"no|\xc3\xa9");
  CHECK_OK(pawl__types_sync(p, "[[\"mail\",[\"pin\",\"ssn\"]]]"));
  ty_names(q, "mail", got, sizeof got);
  CHECK_STR(got, "ssn|card\"no|\xc3\xa9|pin");
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

/* Branch names recorded with the types: an enqueue after a
 * parent whose type's names are known is refused for a name its script
 * does not declare, with nothing enqueued; unknown types are not
 * checked. */
static pawl_id_t ty_enq(pawl_t *p, const char *type, const pawl_id_t *after,
                        size_t nafter, const char *when, int want) {
  pawl_enqueue_opts_t o;
  pawl_enqueue_opts_init(&o);
  o.after = after;
  o.nafter = nafter;
  o.when = when;
  pawl_id_t id;
  memset(&id, 0, sizeof id);
  CHECK_INT(pawl_enqueue(p, type, "{}", &o, &id, NULL), ==, want);
  return id;
}

static int ty_counted(const pawl_job_t *job, void *data) {
  (void)job;
  ++*(int *)data;
  return 0;
}

static int ty_count(pawl_t *p) {
  pawl_filter_t f;
  pawl_filter_init(&f);
  int n = 0;
  CHECK_OK(pawl_list(p, &f, ty_counted, &n));
  return n;
}

static void contract_branch_names(const char *url) {
  char copy[4200];
  snprintf(copy, sizeof copy, "%s", url);
  pawl_t *p = ty_open(copy);
  CHECK_OK(pawl__types_sync(p, "[[\"order\",[],[\"big\",\"vip\"]],"
                               "[\"plain\",[],[]],[\"old\",[]]]"));
  pawl_id_t order = ty_enq(p, "order", NULL, 0, NULL, 0);
  pawl_id_t plain = ty_enq(p, "plain", NULL, 0, NULL, 0);
  pawl_id_t other = ty_enq(p, "other", NULL, 0, NULL, 0);
  pawl_id_t old = ty_enq(p, "old", NULL, 0, NULL, 0);
  int before = ty_count(p);
  ty_enq(p, "child", &order, 1, "branch:nope", PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "unknown branch \"nope\"") != NULL);
  CHECK(strstr(pawl_errmsg(p), "declares the branches: big, vip") != NULL);
  ty_enq(p, "child", &plain, 1, "branch:big", PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "declares the branches: none") != NULL);
  pawl_id_t two[2] = {other, order};
  ty_enq(p, "child", two, 2, "branch:nope", PAWL_EINVAL);
  CHECK_INT(ty_count(p), ==, before);
  /* Declared names, and types whose names are not known: accepted. */
  ty_enq(p, "child", &order, 1, "branch:vip", 0);
  ty_enq(p, "child", two, 2, "branch:big", 0);
  ty_enq(p, "child", &other, 1, "branch:anything", 0);
  ty_enq(p, "child", &old, 1, "branch:anything", 0);
  /* A parent that does not exist is the insert's to refuse. */
  pawl_id_t ghost;
  CHECK_OK(pawl_id_parse(&ghost, "01890a5d-ac96-774b-bcce-b302099a8057"));
  ty_enq(p, "child", &ghost, 1, "branch:big", PAWL_ENOTFOUND);
  CHECK_INT(ty_count(p), ==, before + 4);
  pawl_close(p);
}

void test_store_sqlite_branch_names(void) {
  char url[4200];
  snprintf(url, sizeof url, "sqlite:%s/branches.db", unit_tmpdir());
  contract_branch_names(url);
}

void test_store_pg_branch_names(void) {
  contract_branch_names(pgtest_url("branch_names"));
}
