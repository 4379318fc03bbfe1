/* test_admin.c: what the admin API decides without a database:
 * durations as operators write them. */
#include "pawl.h"
#include "unit.h"

static int64_t dur(const char *s) {
  int64_t ms = -1;
  char err[200];
  if (pawl_duration_parse(s, &ms, err, sizeof err))
    unit_fail(__FILE__, __LINE__, "%s: %s", s, err);
  return ms;
}

void test_admin_duration(void) {
  CHECK_INT(dur("90s"), ==, 90000);
  CHECK_INT(dur("15m"), ==, 900000);
  CHECK_INT(dur("2h"), ==, 7200000);
  CHECK_INT(dur("7d"), ==, 7 * 86400000LL);
  CHECK_INT(dur("1w"), ==, 604800000LL);
  CHECK_INT(dur("250ms"), ==, 250);
  CHECK_INT(dur("30"), ==, 30000);
  CHECK_INT(dur("0.5"), ==, 500);
  CHECK_INT(dur("0"), ==, 0);
  CHECK_INT(dur("3650d"), ==, PAWL_DELAY_MAX_MS);
  char err[200];
  int64_t ms = 42;
  const char *bad[] = {"", "h", "1.5h", "1x", "-1s", " 1s", "1s ", "1e3",
                       "1.", "s1", NULL};
  for (int i = 0; bad[i]; i++) {
    if (pawl_duration_parse(bad[i], &ms, err, sizeof err) != PAWL_EINVAL)
      unit_fail(__FILE__, __LINE__, "\"%s\" was taken", bad[i]);
    CHECK(strstr(err, "not a duration") != NULL);
  }
  /* Past ten years, however many digits. */
  const char *big[] = {"3651d", "999999999999999999999999s", "522w",
                       "315360001", NULL};
  for (int i = 0; big[i]; i++) {
    if (pawl_duration_parse(big[i], &ms, err, sizeof err) != PAWL_EINVAL)
      unit_fail(__FILE__, __LINE__, "\"%s\" was taken", big[i]);
    CHECK(strstr(err, "at most 315360000 s") != NULL);
  }
  CHECK_INT(ms, ==, 42); /* refused: untouched */
  CHECK_INT(pawl_duration_parse(NULL, &ms, NULL, 0), ==, PAWL_EINVAL);
}
