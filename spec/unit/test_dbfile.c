/* test_dbfile.c: who may create a database, and with which permissions.
 *
 * A handle creates a missing database only when asked (pawl_options_t
 * .create, on by default in the API, off in the CLI but for `migrate`); a
 * new SQLite file and its -wal and -shm files get file_mode (0600 by
 * default) whatever the umask; in-memory databases are refused. */
#include <pthread.h>
#include <sys/stat.h>

#include "pawl.h"
#include "pgtest.h"
#include "unit.h"

static int open_with(const char *url, int create, unsigned mode, pawl_t **p,
                     char *err, size_t errlen) {
  pawl_options_t o;
  pawl_options_init(&o);
  o.db = url;
  o.create = create;
  o.file_mode = mode;
  *p = NULL;
  return pawl_open(p, &o, err, errlen);
}

static unsigned mode_of(const char *path) {
  struct stat sb;
  if (stat(path, &sb) != 0)
    unit_fail(__FILE__, __LINE__, "stat %s failed", path);
  return (unsigned)(sb.st_mode & 07777);
}

/* Opens (creating) `name`, writes a job so the -wal and -shm files exist,
 * and checks all three files have `want`. */
static void check_modes(const char *name, unsigned mode, unsigned want) {
  char url[256], wal[256], shm[256];
  snprintf(url, sizeof url, "sqlite:%s", name);
  snprintf(wal, sizeof wal, "%s-wal", name);
  snprintf(shm, sizeof shm, "%s-shm", name);
  pawl_t *p;
  char err[512];
  if (open_with(url, 1, mode, &p, err, sizeof err))
    unit_fail(__FILE__, __LINE__, "open %s: %s", url, err);
  CHECK_OK(pawl_enqueue(p, "t", "{\"card\":\"4242\"}", NULL, NULL, NULL));
  CHECK_INT(mode_of(name), ==, want);
  CHECK_INT(mode_of(wal), ==, want);
  CHECK_INT(mode_of(shm), ==, want);
  pawl_close(p);
}

void test_dbfile_mode_default(void) {
  umask(022); /* the usual one, which gave 0644 before */
  check_modes("default.db", 0, 0600);
}

void test_dbfile_mode_option(void) {
  umask(022);
  check_modes("group.db", 0640, 0640);
  /* Exactly the bits asked for: the umask does not take group write. */
  umask(077);
  check_modes("shared.db", 0660, 0660);
  umask(022);
  /* An existing file keeps its mode (the operator's choice), and so do
   * the files SQLite makes beside it. */
  CHECK_INT(chmod("group.db", 0644), ==, 0);
  check_modes("group.db", 0, 0644);
  /* Bits that would lock the owner out, or go beyond rwx, are refused. */
  static const unsigned bad[] = {0400, 0200, 0444, 01600, 04600, 010000};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    pawl_t *p;
    char err[512];
    CHECK_INT(open_with("sqlite:bad.db", 1, bad[i], &p, err, sizeof err), ==,
              PAWL_EINVAL);
    CHECK(strstr(err, "0600") != NULL);
    CHECK(access("bad.db", F_OK) != 0);
  }
}

void test_dbfile_no_create(void) {
  pawl_t *p;
  char err[512];
  /* Missing: refused, and nothing is created. */
  CHECK_INT(open_with("sqlite:typo.db", 0, 0, &p, err, sizeof err), ==,
            PAWL_EIO);
  CHECK(strstr(err, "no database at sqlite:typo.db") != NULL);
  CHECK(strstr(err, "pawl migrate") != NULL);
  CHECK(access("typo.db", F_OK) != 0);
  /* An empty file is no database either, and stays empty. */
  FILE *f = fopen("empty.db", "w");
  CHECK(f != NULL);
  fclose(f);
  CHECK_INT(open_with("sqlite:empty.db", 0, 0, &p, err, sizeof err), ==,
            PAWL_EIO);
  CHECK(strstr(err, "empty") != NULL);
  struct stat sb;
  CHECK_INT(stat("empty.db", &sb), ==, 0);
  CHECK_INT(sb.st_size, ==, 0);
  /* Once created, it opens without create. */
  CHECK_OK(open_with("sqlite:typo.db", 1, 0, &p, err, sizeof err));
  pawl_close(p);
  CHECK_OK(open_with("sqlite:typo.db", 0, 0, &p, err, sizeof err));
  CHECK_OK(pawl_enqueue(p, "t", NULL, NULL, NULL, NULL));
  pawl_close(p);
  /* The API's default is to create (see pawl.h for why). */
  pawl_options_t o;
  pawl_options_init(&o);
  CHECK_INT(o.create, ==, 1);
}

void test_dbfile_memory_refused(void) {
  static const char *const urls[] = {
      "sqlite::memory:", "sqlite:file::memory:",
      "sqlite:file:mem.db?mode=memory&cache=shared", "sqlite:file:plain.db"};
  for (size_t i = 0; i < sizeof urls / sizeof urls[0]; i++) {
    pawl_t *p;
    char err[512];
    int rc = open_with(urls[i], 1, 0, &p, err, sizeof err);
    if (rc != PAWL_EINVAL)
      unit_fail(__FILE__, __LINE__, "%s: rc %d (%s)", urls[i], rc, err);
    CHECK(err[0] != 0);
  }
  CHECK(access("plain.db", F_OK) != 0);
  CHECK(access("file:plain.db", F_OK) != 0);
}

/* PostgreSQL: a database without pawl's tables is created only when
 * asked; without create, the schema is left untouched. */
void test_pg_open_no_create(void) {
  const char *url = pgtest_url("no_create");
  pawl_t *p;
  char err[512];
  CHECK_INT(open_with(url, 0, 0, &p, err, sizeof err), ==, PAWL_ESCHEMA);
  CHECK(strstr(err, "no pawl database in") != NULL);
  PGconn *c = pgtest_connect(url);
  CHECK_INT(pgtest_int(c, "SELECT count(*) FROM pg_tables WHERE schemaname = "
                          "current_schema()"),
            ==, 0);
  CHECK_OK(open_with(url, 1, 0, &p, err, sizeof err));
  pawl_close(p);
  CHECK_OK(open_with(url, 0, 0, &p, err, sizeof err));
  CHECK_OK(pawl_enqueue(p, "t", NULL, NULL, NULL, NULL));
  pawl_close(p);
  PQfinish(c);
}

/* Handles opened on several threads at once: pawl_open is documented as
 * callable from any thread, so what it reads of the process (the user name
 * for the default principal) must be read the thread-safe way. Run under
 * ThreadSanitizer ("concurrent" in the name). */
static void *open_many(void *arg) {
  const char *url = arg;
  for (int i = 0; i < 10; i++) {
    pawl_t *p;
    char err[512];
    if (open_with(url, 0, 0, &p, err, sizeof err))
      unit_fail(__FILE__, __LINE__, "open %s: %s", url, err);
    pawl_close(p);
  }
  return NULL;
}

void test_dbfile_open_concurrent(void) {
  static char url[300];
  snprintf(url, sizeof url, "sqlite:%s", "concurrent.db");
  pawl_t *p;
  char err[512];
  if (open_with(url, 1, 0, &p, err, sizeof err)) /* created (migrated) once */
    unit_fail(__FILE__, __LINE__, "open %s: %s", url, err);
  pawl_close(p);
  pthread_t t[4];
  for (int i = 0; i < 4; i++)
    CHECK_INT(pthread_create(&t[i], NULL, open_many, url), ==, 0);
  for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
}
