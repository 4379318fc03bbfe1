/* test_redact.c: database passwords never reach a message (host/core/redact.c,
 * and pawl_open() on URLs libpq cannot read, which needs no server). */
#include "pawl.h"
#include "redact.h"
#include "unit.h"

#define SECRET "SuperSecret99"

/* No form of SECRET (whole, or a piece of four bytes or more) in s. */
static void check_clean(const char *what, const char *s) {
  static const char *const pieces[] = {SECRET, "Super", "Secret", "ecret99",
                                       "S%75per"};
  for (size_t i = 0; i < sizeof pieces / sizeof pieces[0]; i++)
    if (strstr(s, pieces[i]))
      unit_fail(__FILE__, __LINE__, "%s shows \"%s\": %s", what, pieces[i], s);
}

void test_redact_url_forms(void) {
  static const struct {
    const char *url, *want;
  } cases[] = {
      {"postgres://alice:" SECRET "@db.example/jobs",
       "postgres://alice:***@db.example/jobs"},
      {"postgresql://alice:" SECRET "@[::1]:5433/jobs?sslmode=require",
       "postgresql://alice:***@[::1]:5433/jobs?sslmode=require"},
      /* Malformed: the IPv6 bracket is not closed. */
      {"postgres://alice:" SECRET "@[::1/db", "postgres://alice:***@[::1/db"},
      /* A bad percent-escape, and '@' or '/' inside the password. */
      {"postgres://alice:Super%zz" SECRET "@h/db", "postgres://alice:***@h/db"},
      {"postgres://alice:Su@per" SECRET "@h/db", "postgres://alice:***@h/db"},
      {"postgres://alice:Super/" SECRET "@h/db", "postgres://alice:***@h/db"},
      /* In the query, also under a percent-encoded name. */
      {"postgres://alice@h/db?sslmode=disable&password=" SECRET "&x=1",
       "postgres://alice@h/db?sslmode=disable&password=***&x=1"},
      {"postgres://h/db?pass%77ord=" SECRET, "postgres://h/db?pass%77ord=***"},
      /* Connection strings, bare, quoted, escaped, unterminated. */
      {"postgres:host=/run/pg password=" SECRET " dbname=jobs",
       "postgres:host=/run/pg password=*** dbname=jobs"},
      {"postgres:password = '" SECRET " and more' host=x",
       "postgres:password = '***' host=x"},
      {"postgres:password=Super\\ " SECRET " host=x",
       "postgres:password=*** host=x"},
      {"postgres:host=x password='" SECRET, "postgres:host=x password='***"},
      /* A scheme pawl does not know (the "not understood" message). */
      {"postgresx://alice:" SECRET "@h/db", "postgresx://alice:***@h/db"},
      /* Nothing to hide. */
      {"sqlite:./pawl.db", "sqlite:./pawl.db"},
      {"postgres://alice@[::1]/db", "postgres://alice@[::1]/db"},
      {"postgres:host=/run/pg dbname=jobs", "postgres:host=/run/pg dbname=jobs"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char out[512];
    pawl__redact_url(cases[i].url, out, sizeof out);
    if (strcmp(out, cases[i].want) != 0)
      unit_fail(__FILE__, __LINE__, "pawl__redact_url(%s) = %s, want %s",
                cases[i].url, out, cases[i].want);
  }
  /* Truncation keeps the NUL and never overruns. */
  char tiny[8];
  pawl__redact_url("postgres://alice:" SECRET "@h/db", tiny, sizeof tiny);
  CHECK_INT(strlen(tiny), ==, 7);
}

void test_redact_message_quotes(void) {
  static const struct {
    const char *conninfo, *msg;
    int malformed;
  } cases[] = {
      /* libpq's messages for URLs it cannot read quote the URL or the
       * token it stumbled on. */
      {"postgres://alice:" SECRET "@[::1/db",
       "end of string reached when looking for matching \"]\" in IPv6 host "
       "address in URI: \"postgres://alice:" SECRET "@[::1/db\"",
       1},
      {"postgres://alice:Super%zz" SECRET "@h/db",
       "invalid percent-encoded token: \"Super%zz" SECRET "\"", 1},
      {"postgres://alice:S%75per" SECRET "@h/db",
       "password authentication failed: \"Super" SECRET "\"", 0},
      {"postgres://alice:Super/" SECRET "@h/db",
       "invalid integer value \"Super\" for connection option \"port\"", 0},
      {"password=" SECRET " host='x", "unterminated quoted string near "
                                      "password=" SECRET " host='x",
       1},
      {"host=x password='Super\\'" SECRET "'",
       "something about Super'" SECRET, 0},
      /* A message quoting a URL we were not told about. */
      {NULL, "cannot reach postgres://bob:" SECRET "@h/db (password="
             SECRET ")", 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char out[512];
    pawl__redact_message(cases[i].conninfo, cases[i].msg, cases[i].malformed, out,
                   sizeof out);
    check_clean(cases[i].msg, out);
    CHECK(strstr(out, REDACT_MARK) != NULL);
  }
  /* What libpq names in one character stays: it tells where to look. */
  char out[512];
  pawl__redact_message(cases[0].conninfo, cases[0].msg, 1, out, sizeof out);
  CHECK(strstr(out, "\"]\"") != NULL);
  /* A short password is hidden where it stands alone, not inside words. */
  pawl__redact_message("postgres://alice:ab@h/db",
                 "user alice: password \"ab\" rejected by abbey", 0, out,
                 sizeof out);
  CHECK_STR(out, "user alice: password \"***\" rejected by abbey");
  /* No password: the message is kept as it is. */
  pawl__redact_message("postgres://alice@[::1/db", "missing \"]\" in \"x\"", 1, out,
                 sizeof out);
  CHECK_STR(out, "missing \"]\" in \"x\"");
}

/* pawl_open on URLs that libpq cannot read, or reads into a host or port
 * made of the password: the message (and pawl_errmsg) never shows it. No
 * server is needed: these fail before or at connecting. */
void test_redact_pg_open_messages(void) {
  static const char *const urls[] = {
      "postgres://alice:" SECRET "@[::1/db",
      "postgres://alice:Super%zz" SECRET "@localhost/db",
      "postgresql://alice@localhost/db?password=" SECRET "&foo=%zz",
      "postgres:password=" SECRET " host='x",
      "postgres://alice:Super/" SECRET "@localhost/db",
      "postgres:host=/nonexistent-dir password='" SECRET "' connect_timeout=1",
      "postgresx://alice:" SECRET "@localhost/db",
  };
  for (size_t i = 0; i < sizeof urls / sizeof urls[0]; i++) {
    pawl_options_t o;
    pawl_options_init(&o);
    o.db = urls[i];
    pawl_t *p = NULL;
    char err[512] = "";
    int rc = pawl_open(&p, &o, err, sizeof err);
    CHECK(rc != 0);
    CHECK(err[0] != 0);
    check_clean(urls[i], err);
  }
}
