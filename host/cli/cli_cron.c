/* cli_cron.c: `pawl cron next EXPR [--tz ZONE] [--from TIME] [--count N]`.
 *
 * Prints the next N fire times of an expression, one per line, as the
 * zone's local time with its offset, so that an operator can check an
 * expression before deploying it. Opens no database. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cron.h"
#include "iso8601.h"
#include "pawl.h"
#include "tz.h"

#define CLI_CRON_MAX_COUNT 1000

int cli_cron_next(const char *expr, const char *tzname, const char *from,
                  const char *count, char *err, size_t errlen);

int cli_cron_next(const char *expr, const char *tzname, const char *from,
                  const char *count, char *err, size_t errlen) {
  long n = 5;
  if (count) {
    char *end = NULL;
    errno = 0;
    n = strtol(count, &end, 10);
    if (!*count || *end || errno || n < 1 || n > CLI_CRON_MAX_COUNT ||
        !(count[0] >= '0' && count[0] <= '9')) {
      snprintf(err, errlen, "--count must be between 1 and %d, got \"%s\"",
               CLI_CRON_MAX_COUNT, count);
      return 2;
    }
  }
  int64_t after;
  if (from) {
    if (pawl__iso8601_parse(from, &after) != 0) {
      snprintf(err, errlen,
               "--from expects an ISO 8601 time with a zone, like "
               "2026-03-29T00:00:00+01:00 or 2026-03-29 (midnight UTC), got "
               "\"%s\"",
               from);
      return 2;
    }
    if (after < PAWL__CRON_MIN_MS || after > PAWL__CRON_MAX_MS) {
      snprintf(err, errlen,
               "--from must lie in the years 0001 to 9999 (UTC), got \"%s\"",
               from);
      return 2;
    }
  } else {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    after = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
  }
  const pawl__tz_t *tz;
  char msg[PAWL__TZ_ERRLEN];
  int rc = pawl__tz_get(tzname, &tz, msg, sizeof msg);
  if (rc) {
    snprintf(err, errlen, "--tz: %s", msg);
    return rc == PAWL_EINVAL ? 2 : 1;
  }
  pawl__cron_t c;
  if (pawl__cron_parse(expr, &c, msg, sizeof msg) != 0) {
    snprintf(err, errlen, "bad cron expression: %s", msg);
    return 2;
  }
  long printed = 0;
  for (; printed < n; printed++) {
    int64_t next;
    if (pawl__cron_next(&c, tz, after, &next) != 0) break;
    char text[PAWL__TZ_STRLEN];
    pawl__tz_format(tz, next, text);
    printf("%s\n", text);
    after = next;
  }
  if (printed == 0) {
    char at[PAWL__TZ_STRLEN];
    pawl__tz_format(tz, after, at);
    snprintf(err, errlen, "no fire time after %s before the year 10000", at);
    return 1;
  }
  return 0;
}
