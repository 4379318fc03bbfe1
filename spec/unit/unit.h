/* unit.h: the C unit runner's assertions.
 *
 * Every test is a `void test_NAME(void)` listed in test_list.h. The runner
 * (runner.c) runs each one in its own forked process, inside a fresh temp
 * directory that is its working directory, with an alarm as timeout. A failed
 * check prints file:line and exits the child with status 1, so a test never
 * has to clean up after a failure: the runner removes the temp dir. */
#ifndef PAWL_UNIT_H
#define PAWL_UNIT_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void unit_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 3, 4)));

/* The test's temp dir (absolute path); also the working directory. */
const char *unit_tmpdir(void);

#define CHECK(cond)                                                          \
  do {                                                                       \
    if (!(cond)) unit_fail(__FILE__, __LINE__, "CHECK(%s)", #cond);          \
  } while (0)

#define CHECK_INT(a, op, b)                                                  \
  do {                                                                       \
    long long a_ = (long long)(a), b_ = (long long)(b);                      \
    if (!(a_ op b_))                                                         \
      unit_fail(__FILE__, __LINE__, "%s %s %s (%lld vs %lld)", #a, #op, #b,  \
                a_, b_);                                                     \
  } while (0)

#define CHECK_STR(a, b)                                                      \
  do {                                                                       \
    const char *a_ = (a), *b_ = (b);                                         \
    if (a_ == NULL || b_ == NULL || strcmp(a_, b_) != 0)                     \
      unit_fail(__FILE__, __LINE__, "%s == %s (\"%s\" vs \"%s\")", #a, #b,   \
                a_ ? a_ : "(null)", b_ ? b_ : "(null)");                     \
  } while (0)

/* CHECK_OK(expr): expr returns a pawl error code that must be 0. */
#define CHECK_OK(expr)                                                       \
  do {                                                                       \
    int rc_ = (expr);                                                        \
    if (rc_ != 0)                                                            \
      unit_fail(__FILE__, __LINE__, "%s returned %d", #expr, rc_);           \
  } while (0)

#endif
