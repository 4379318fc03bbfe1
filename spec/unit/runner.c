/* runner.c: the C unit runner.
 *
 *   pawl_unit            run every test, each in its own process
 *   pawl_unit NAME...    run the named tests
 *   pawl_unit --list     print the test names
 *
 * Each test runs in a forked child whose working directory is a fresh temp
 * dir (removed afterwards, whatever happened) and which is killed after
 * UNIT_TIMEOUT_S seconds. ctest calls the runner once per test name, so each
 * test is also its own ctest entry.
 *
 * A test that exits with UNIT_SKIP was skipped (explicitly disabled by the
 * environment, never silently): the runner says so, and exits with
 * UNIT_SKIP itself when every test it ran was skipped, which ctest reports
 * as "Not Run (Skipped)". */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "unit.h"

#include <errno.h>
#include <ftw.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/wait.h>

#define UNIT_TIMEOUT_S 120
#define UNIT_SKIP 77

/* The build passes -DUNIT_LIST=\"...\" to run a subset while developing. */
#ifndef UNIT_LIST
#define UNIT_LIST "test_list.h"
#endif

/* The marks of an entry are labels for CMake (test_list.h): to the runner
 * each is a test like any other, except that a build without a feature
 * (UNIT_WITHOUT_*: cmake -DPAWL_WITH_...=OFF) leaves out the tests that
 * need it, whose code may name what such a build does not have. */
#define TEST_ENTRY_THREADS(name) TEST_ENTRY(name)
#ifdef UNIT_WITHOUT_POSTGRES
#define TEST_ENTRY_PG(name)
#define TEST_ENTRY_PG_THREADS(name)
#else
#define TEST_ENTRY_PG(name) TEST_ENTRY(name)
#define TEST_ENTRY_PG_THREADS(name) TEST_ENTRY(name)
#endif
#if defined UNIT_WITHOUT_HTTP
#define TEST_ENTRY_HTTP_THREADS(name)
#else
#define TEST_ENTRY_HTTP_THREADS(name) TEST_ENTRY(name)
#endif
#if defined UNIT_WITHOUT_CURL
#define TEST_ENTRY_CURL_THREADS(name)
#else
#define TEST_ENTRY_CURL_THREADS(name) TEST_ENTRY(name)
#endif
#if defined UNIT_WITHOUT_HTTP || defined UNIT_WITHOUT_CURL
#define TEST_ENTRY_HTTP_CURL_THREADS(name)
#else
#define TEST_ENTRY_HTTP_CURL_THREADS(name) TEST_ENTRY(name)
#endif

#define TEST_ENTRY(name) void test_##name(void);
#include UNIT_LIST
#undef TEST_ENTRY

struct unit_test {
  const char *name;
  void (*fn)(void);
};

static const struct unit_test unit_tests[] = {
#define TEST_ENTRY(name) {#name, test_##name},
#include UNIT_LIST
#undef TEST_ENTRY
};

static char unit_dir[4096];

const char *unit_tmpdir(void) { return unit_dir; }

void unit_fail(const char *file, int line, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "%s:%d: check failed: ", file, line);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  fflush(stderr);
  _exit(1);
}

static int unit_rm(const char *path, const struct stat *sb, int flag,
                   struct FTW *ftw) {
  (void)sb, (void)flag, (void)ftw;
  return remove(path);
}

static int unit_run(const struct unit_test *t) {
  const char *base = getenv("TMPDIR");
  snprintf(unit_dir, sizeof unit_dir, "%s/pawl-unit-%s-XXXXXX",
           base ? base : "/tmp", t->name);
  if (mkdtemp(unit_dir) == NULL) {
    fprintf(stderr, "mkdtemp: %s\n", strerror(errno));
    return 1;
  }
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    if (chdir(unit_dir) != 0) _exit(2);
    alarm(UNIT_TIMEOUT_S);
    t->fn();
    fflush(NULL);
    _exit(0);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  nftw(unit_dir, unit_rm, 16, FTW_DEPTH | FTW_PHYS);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    printf("ok   %s\n", t->name);
    return 0;
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == UNIT_SKIP) {
    printf("SKIP %s\n", t->name);
    return UNIT_SKIP;
  }
  if (WIFSIGNALED(status))
    printf("FAIL %s (signal %d%s)\n", t->name, WTERMSIG(status),
           WTERMSIG(status) == SIGALRM ? ": timed out" : "");
  else
    printf("FAIL %s (exit %d)\n", t->name, WEXITSTATUS(status));
  return 1;
}

int main(int argc, char **argv) {
  size_t n = sizeof unit_tests / sizeof unit_tests[0];
  int failed = 0, ran = 0, skipped = 0;
  if (argc == 2 && strcmp(argv[1], "--list") == 0) {
    for (size_t i = 0; i < n; i++) puts(unit_tests[i].name);
    return 0;
  }
  for (size_t i = 0; i < n; i++) {
    int wanted = argc == 1;
    for (int a = 1; a < argc && !wanted; a++)
      wanted = strcmp(argv[a], unit_tests[i].name) == 0;
    if (!wanted) continue;
    ran++;
    int rc = unit_run(&unit_tests[i]);
    if (rc == UNIT_SKIP)
      skipped++;
    else
      failed += rc;
  }
  if (ran == 0) {
    fprintf(stderr, "pawl_unit: no test matched\n");
    return 2;
  }
  printf("%d passed, %d failed, %d skipped\n", ran - failed - skipped, failed,
         skipped);
  if (failed) return 1;
  return skipped == ran ? UNIT_SKIP : 0;
}
