/* test_cron.c: cron expressions (host/core/cron.c) and time zones
 * (host/core/tz.c).
 *
 * The hand-written vectors below are checked three ways: by hand (the
 * comments say why each answer is right), against Python's zoneinfo for the
 * zones' transitions, and, for the generated cases of cron_vs_croner,
 * against an independent implementation (croner, run by node). */
#include "unit.h"

#include <stdarg.h>
#include <sys/stat.h>

#include "cron.h"
#include "iso8601.h"
#include "pawl.h"
#include "tz.h"

/* ---- helpers ------------------------------------------------------------ */

static const pawl__tz_t *zone(const char *name) {
  const pawl__tz_t *tz = NULL;
  char err[PAWL__TZ_ERRLEN];
  if (pawl__tz_get(name, &tz, err, sizeof err) != 0)
    unit_fail(__FILE__, __LINE__, "zone %s: %s", name, err);
  return tz;
}

static int64_t ms_of(const char *file, int line, const char *iso) {
  int64_t ms;
  if (pawl__iso8601_parse(iso, &ms) != 0) unit_fail(file, line, "bad time %s", iso);
  return ms;
}

static pawl__cron_t parse_ok(const char *file, int line, const char *expr) {
  pawl__cron_t c;
  char err[PAWL__CRON_ERRLEN] = "";
  if (pawl__cron_parse(expr, &c, err, sizeof err) != 0)
    unit_fail(file, line, "\"%s\" refused: %s", expr, err);
  return c;
}

/* The next fire times of expr in zone after `from`, as local ISO text,
 * must be want[0..] (NULL-terminated). */
static void check_fires(const char *file, int line, const char *expr,
                        const char *zname, const char *from,
                        const char *const *want) {
  pawl__cron_t c = parse_ok(file, line, expr);
  const pawl__tz_t *tz = zone(zname);
  int64_t t = ms_of(file, line, from);
  for (int i = 0; want[i]; i++) {
    int64_t next = 0;
    int rc = pawl__cron_next(&c, tz, t, &next);
    if (rc != 0)
      unit_fail(file, line, "\"%s\" in %s after %s: fire %d: error %d", expr,
                zname, from, i, rc);
    char got[PAWL__TZ_STRLEN];
    pawl__tz_format(tz, next, got);
    if (strcmp(got, want[i]) != 0)
      unit_fail(file, line, "\"%s\" in %s after %s: fire %d is %s, want %s",
                expr, zname, from, i, got, want[i]);
    if (next <= t)
      unit_fail(file, line, "\"%s\": fire %d does not move forward", expr, i);
    t = next;
  }
}
#define FIRES(expr, zone, from, ...)                                         \
  check_fires(__FILE__, __LINE__, (expr), (zone), (from),                    \
              (const char *const[]){__VA_ARGS__, NULL})

/* expr must be refused with a message containing `want`. */
static void check_refused(const char *file, int line, const char *expr,
                          const char *want) {
  pawl__cron_t c;
  memset(&c, 0x5a, sizeof c);
  pawl__cron_t before = c;
  char err[PAWL__CRON_ERRLEN] = "";
  int rc = pawl__cron_parse(expr, &c, err, sizeof err);
  if (rc != PAWL_EINVAL)
    unit_fail(file, line, "\"%s\" accepted (rc %d), want \"%s\"", expr, rc,
              want);
  if (!strstr(err, want))
    unit_fail(file, line, "\"%s\": message \"%s\" lacks \"%s\"", expr, err,
              want);
  if (strchr(err, '\n'))
    unit_fail(file, line, "\"%s\": message has a newline: %s", expr, err);
  if (memcmp(&c, &before, sizeof c) != 0)
    unit_fail(file, line, "\"%s\": refused, but *out was written", expr);
}
#define REFUSED(expr, want) check_refused(__FILE__, __LINE__, (expr), (want))

/* ---- parsing ------------------------------------------------------------ */

void test_cron_parse_fields(void) {
  pawl__cron_t c = parse_ok(__FILE__, __LINE__, "*/15 0-5,12 * * *");
  CHECK(c.seconds == 1);
  CHECK(c.minutes == ((1ull << 0) | (1ull << 15) | (1ull << 30) | (1ull << 45)));
  CHECK(c.hours == (0x3Fu | (1u << 12)));
  CHECK(c.months == 0x1FFE);
  CHECK_INT(c.fields, ==, 5);
  CHECK_INT(c.interval, ==, 1);

  /* Six fields: seconds first. */
  c = parse_ok(__FILE__, __LINE__, "10-30/10 0 0 1 1 *");
  CHECK(c.seconds == ((1ull << 10) | (1ull << 20) | (1ull << 30)));
  CHECK_INT(c.fields, ==, 6);

  /* v/s runs to the field's end (Quartz); a step past the range is fine. */
  c = parse_ok(__FILE__, __LINE__, "50/5 20/3 * * *");
  CHECK(c.minutes == ((1ull << 50) | (1ull << 55)));
  CHECK(c.hours == ((1u << 20) | (1u << 23)));
  c = parse_ok(__FILE__, __LINE__, "0-10/20 * * * *");
  CHECK(c.minutes == 1);

  /* Names, any case; Sunday is 0 and 7, and closes a range as 7. */
  c = parse_ok(__FILE__, __LINE__, "0 0 * jan-Mar,DEC mon-fri");
  CHECK(c.months == ((1u << 1) | (1u << 2) | (1u << 3) | (1u << 12)));
  pawl__cron_t d = parse_ok(__FILE__, __LINE__, "0 0 * 1-3,12 1-5");
  CHECK(memcmp(&c, &d, sizeof c) == 0);
  c = parse_ok(__FILE__, __LINE__, "0 0 * * 7");
  d = parse_ok(__FILE__, __LINE__, "0 0 * * SUN");
  CHECK(memcmp(&c, &d, sizeof c) == 0);
  c = parse_ok(__FILE__, __LINE__, "0 0 * * FRI-SUN");
  d = parse_ok(__FILE__, __LINE__, "0 0 * * 5-7");
  pawl__cron_t e = parse_ok(__FILE__, __LINE__, "0 0 * * 0,5,6");
  CHECK(memcmp(&c, &d, sizeof c) == 0);
  CHECK(memcmp(&c, &e, sizeof c) == 0);

  /* ? is * in the day fields. */
  c = parse_ok(__FILE__, __LINE__, "0 0 ? * *");
  d = parse_ok(__FILE__, __LINE__, "0 0 * * ?");
  CHECK(memcmp(&c, &d, sizeof c) == 0);

  /* Macros are their expressions, any case. */
  static const char *const macros[][2] = {
      {"@yearly", "0 0 1 1 *"},  {"@annually", "0 0 1 1 *"},
      {"@monthly", "0 0 1 * *"}, {"@weekly", "0 0 * * 0"},
      {"@daily", "0 0 * * *"},   {"@midnight", "0 0 * * *"},
      {"@hourly", "0 * * * *"},  {"  @DAILY\t", "0 0 * * *"}};
  for (size_t i = 0; i < sizeof macros / sizeof macros[0]; i++) {
    c = parse_ok(__FILE__, __LINE__, macros[i][0]);
    d = parse_ok(__FILE__, __LINE__, macros[i][1]);
    CHECK(memcmp(&c, &d, sizeof c) == 0);
  }

  /* Blanks around and between fields are one separator. */
  c = parse_ok(__FILE__, __LINE__, "  0\t0   *  * *  ");
  d = parse_ok(__FILE__, __LINE__, "0 0 * * *");
  CHECK(memcmp(&c, &d, sizeof c) == 0);
}

/* Which expressions are interval ones (docs/scheduling.md, "Daylight-saving time"). */
void test_cron_parse_classes(void) {
  static const struct {
    const char *expr;
    int interval;
  } cases[] = {
      {"30 2 * * *", 0},        {"0 */2 * * *", 0},   {"30 1,2 * * *", 0},
      {"0 9-17 * * MON-FRI", 0}, {"15 30 2 * * *", 0}, {"@daily", 0},
      {"*/15 * * * *", 1},      {"*/15 2 * * *", 1},  {"0,30 2 * * *", 1},
      {"0 * * * *", 1},         {"@hourly", 1},       {"30 * * * 1", 1},
      {"* 30 2 * * *", 1},      {"0-59 30 2 * * *", 1}, {"0 0 0-23 * * *", 1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    pawl__cron_t c = parse_ok(__FILE__, __LINE__, cases[i].expr);
    if (c.interval != cases[i].interval)
      unit_fail(__FILE__, __LINE__, "\"%s\": interval %d, want %d",
                cases[i].expr, c.interval, cases[i].interval);
  }
}

void test_cron_parse_refusals(void) {
  REFUSED("", "expected 5 or 6 fields, got 0");
  REFUSED("   ", "expected 5 or 6 fields, got 0");
  REFUSED("* * * *", "expected 5 or 6 fields, got 4");
  REFUSED("0 0 0 1 1 * 2026", "expected 5 or 6 fields, got 7");
  REFUSED("60 * * * *", "minute: 60 is out of range 0-59");
  REFUSED("60 0 * * * *", "second: 60 is out of range 0-59");
  REFUSED("0 24 * * *", "hour: 24 is out of range 0-23");
  REFUSED("0 0 32 * *", "day-of-month: 32 is out of range 1-31");
  REFUSED("0 0 0 * *", "day-of-month: 0 is out of range 1-31");
  REFUSED("0 0 * 13 *", "month: 13 is out of range 1-12");
  REFUSED("0 0 * 0 *", "month: 0 is out of range 1-12");
  REFUSED("0 0 * * 8", "day-of-week: 8 is out of range 0-7");
  REFUSED("99999999999999999999 * * * *", "minute: 99999999999999999999 is out of range 0-59");
  REFUSED("0 0 * FOO *", "unknown month name FOO");
  REFUSED("0 0 * January *", "unknown month name January");
  REFUSED("0 0 * * Funday", "unknown weekday name Funday");
  REFUSED("0 0 * * MON-FOO", "unknown weekday name FOO");
  REFUSED("MON * * * *", "minute: expected a number, got \"MON\"");
  REFUSED("0 22-2 * * *", "hour: range 22-2 goes backwards");
  REFUSED("0 0 * * SAT-MON", "day-of-week: range SAT-MON goes backwards");
  REFUSED("*/0 * * * *", "minute: 0 in step is out of range 1-59");
  REFUSED("*/60 * * * *", "minute: 60 in step is out of range 1-59");
  REFUSED("0 0 */31 * *", "day-of-month: 31 in step is out of range 1-30");
  REFUSED("1-5/ * * * *", "minute: expected a number");
  REFUSED("? * * * *", "minute: ? is only for day-of-month and day-of-week");
  REFUSED("*,5 * * * *", "minute: * stands alone, not in a list");
  REFUSED("0 0 ?,1 * *", "day-of-month: ? stands alone");
  REFUSED("1,,2 * * * *", "minute: empty item in the list \"1,,2\"");
  REFUSED("1, * * * *", "minute: empty item");
  REFUSED("1-2-3 * * * *", "minute: unexpected \"-3\" in \"1-2-3\"");
  REFUSED("5x * * * *", "minute: unexpected \"x\"");
  REFUSED("-5 * * * *", "minute: expected a number, got \"-5\"");
  REFUSED("** * * * *", "minute: unexpected \"*\" after *");
  REFUSED("0 0 L-31 * *", "day-of-month: 31 in L-n is out of range 0-30");
  REFUSED("0 0 L-x * *", "day-of-month: expected a number");
  REFUSED("0 0 LX * *", "day-of-month: bad L form \"LX\"");
  REFUSED("0 0 1-5W * *", "day-of-month: W takes a single day, like 15W");
  REFUSED("0 0 32W * *", "day-of-month: 32 is out of range 1-31");
  REFUSED("0 0 W * *", "day-of-month: expected a number");
  REFUSED("0 0 * * L", "day-of-week: L needs a weekday before it, like 5L");
  REFUSED("0 0 * * MON#6", "day-of-week: 6 in #n (a month has at most 5 of a weekday) is out of range 1-5");
  REFUSED("0 0 * * 1#0", "out of range 1-5");
  REFUSED("0 0 * * 1#2x", "day-of-week: unexpected \"x\" after #2");
  REFUSED("0 0 * * 5LL", "day-of-week: unexpected \"L\" after L");
  REFUSED("@reboot", "@reboot is not supported");
  REFUSED("@fortnightly", "unknown macro @fortnightly");
  REFUSED("@daily 5", "unexpected \"5\" after @daily");
  REFUSED("0\x01 * * * *", "minute: unexpected \"\\x01\"");
  /* Never fires: refused at once, not searched for. */
  REFUSED("0 0 30 2 *", "never fires: day-of-month 30 does not occur in month 2");
  REFUSED("0 0 31 4 *", "never fires: day-of-month 31 does not occur in month 4");
  REFUSED("0 0 31 APR,JUN,SEP,NOV *", "never fires");
  REFUSED("0 0 30,31 2 ?", "never fires");
  REFUSED("0 0 L-29 2 *", "never fires");
  REFUSED("0 0 30W 2 *", "never fires");
  REFUSED("0 0 0 31 2 *", "never fires");
  char longer[PAWL__CRON_TEXT_MAX + 10];
  memset(longer, ' ', sizeof longer - 1);
  longer[sizeof longer - 1] = '\0';
  REFUSED(longer, "expression longer than 1024 characters");
  /* A message never carries more than a bounded piece of the input. */
  char big[600];
  memset(big, '9', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  memcpy(big + 500, " * * * *", 8);
  big[508] = '\0';
  char want[100] = "minute: ";
  memset(want + 8, '9', 40);
  strcpy(want + 48, "... is out of range 0-59");
  REFUSED(big, want);

  /* Rare but possible: accepted, and found (below). */
  parse_ok(__FILE__, __LINE__, "0 0 29 2 *");
  parse_ok(__FILE__, __LINE__, "0 0 ? 2 MON#5");
  parse_ok(__FILE__, __LINE__, "0 0 L-30 * *");
  parse_ok(__FILE__, __LINE__, "0 0 31W * *");
  parse_ok(__FILE__, __LINE__, "0 0 30 2 MON"); /* Vixie OR: Mondays */
}

/* ---- fire times in UTC: the calendar ------------------------------------- */

void test_cron_next_calendar(void) {
  /* Steps, ranges, lists, and strictly after. */
  FIRES("*/15 * * * *", "UTC", "2026-01-01T00:00:00Z", "2026-01-01T00:15:00+00:00",
        "2026-01-01T00:30:00+00:00");
  FIRES("*/15 * * * *", "UTC", "2026-01-01T00:14:59.999Z",
        "2026-01-01T00:15:00+00:00");
  FIRES("10-30/10 9 * * *", "UTC", "2026-01-01T09:10:00Z", "2026-01-01T09:20:00+00:00",
        "2026-01-01T09:30:00+00:00", "2026-01-02T09:10:00+00:00");
  FIRES("*/20 * * * * *", "UTC", "2026-12-31T23:59:40Z", "2027-01-01T00:00:00+00:00",
        "2027-01-01T00:00:20+00:00");
  FIRES("0 0 * jan-mar,dec mon-fri", "UTC", "2026-03-31T00:00:00Z",
        "2026-12-01T00:00:00+00:00");
  FIRES("@yearly", "UTC", "2026-06-01T00:00:00Z", "2027-01-01T00:00:00+00:00");
  FIRES("@weekly", "UTC", "2026-01-01T00:00:00Z", "2026-01-04T00:00:00+00:00");
  /* Month ends and leap years. */
  FIRES("0 0 31 * *", "UTC", "2026-01-31T00:00:00Z", "2026-03-31T00:00:00+00:00",
        "2026-05-31T00:00:00+00:00", "2026-07-31T00:00:00+00:00",
        "2026-08-31T00:00:00+00:00");
  FIRES("0 0 29 2 *", "UTC", "2026-01-01T00:00:00Z", "2028-02-29T00:00:00+00:00",
        "2032-02-29T00:00:00+00:00");
  /* 2100 is not a leap year (divisible by 100, not by 400); 2000 was. */
  FIRES("0 0 29 2 *", "UTC", "2096-03-01T00:00:00Z", "2104-02-29T00:00:00+00:00");
  FIRES("0 0 29 2 *", "UTC", "1996-03-01T00:00:00Z", "2000-02-29T00:00:00+00:00");
  /* L, L-n: the last day, n days before it. */
  FIRES("0 0 L * *", "UTC", "2026-01-30T00:00:00Z", "2026-01-31T00:00:00+00:00",
        "2026-02-28T00:00:00+00:00", "2026-03-31T00:00:00+00:00",
        "2026-04-30T00:00:00+00:00");
  FIRES("0 0 L 2 *", "UTC", "2027-03-01T00:00:00Z", "2028-02-29T00:00:00+00:00",
        "2029-02-28T00:00:00+00:00");
  FIRES("0 0 L-3 * *", "UTC", "2026-02-01T00:00:00Z", "2026-02-25T00:00:00+00:00",
        "2026-03-28T00:00:00+00:00", "2026-04-27T00:00:00+00:00");
  FIRES("0 0 L-3 2 *", "UTC", "2027-03-01T00:00:00Z", "2028-02-26T00:00:00+00:00");
  /* L-30 is the 1st of a 31-day month only. */
  FIRES("0 0 L-30 * *", "UTC", "2026-01-02T00:00:00Z", "2026-03-01T00:00:00+00:00",
        "2026-05-01T00:00:00+00:00");
  /* LW: the last weekday. 2026-01-31 is a Saturday, 2026-05-31 a Sunday. */
  FIRES("0 0 LW * *", "UTC", "2026-01-01T00:00:00Z", "2026-01-30T00:00:00+00:00",
        "2026-02-27T00:00:00+00:00", "2026-03-31T00:00:00+00:00",
        "2026-04-30T00:00:00+00:00", "2026-05-29T00:00:00+00:00");
  /* nW: the weekday nearest day n, never leaving the month. 2026-02-15 is
   * a Sunday (-> Monday 16th), 2026-08-15 a Saturday (-> Friday 14th),
   * 2026-08-01 a Saturday (-> Monday 3rd, not Friday July 31st), 2026-05-31
   * a Sunday (-> Friday 29th, not Monday June 1st). */
  FIRES("0 0 15W * *", "UTC", "2026-01-31T00:00:00Z", "2026-02-16T00:00:00+00:00");
  FIRES("0 0 15W * *", "UTC", "2026-07-31T00:00:00Z", "2026-08-14T00:00:00+00:00");
  FIRES("0 0 1W * *", "UTC", "2026-07-02T00:00:00Z", "2026-08-03T00:00:00+00:00");
  FIRES("0 0 31W * *", "UTC", "2026-05-01T00:00:00Z", "2026-05-29T00:00:00+00:00",
        "2026-07-31T00:00:00+00:00");
  FIRES("0 0 1W,15W * *", "UTC", "2026-07-31T00:00:00Z", "2026-08-03T00:00:00+00:00",
        "2026-08-14T00:00:00+00:00");
  /* d#n: the n-th weekday d; dL: the last one. */
  FIRES("0 0 ? * MON#2", "UTC", "2026-01-01T00:00:00Z", "2026-01-12T00:00:00+00:00",
        "2026-02-09T00:00:00+00:00");
  FIRES("0 0 ? * SUN#5", "UTC", "2026-01-01T00:00:00Z", "2026-03-29T00:00:00+00:00",
        "2026-05-31T00:00:00+00:00");
  FIRES("0 0 * * 5L", "UTC", "2026-01-01T00:00:00Z", "2026-01-30T00:00:00+00:00",
        "2026-02-27T00:00:00+00:00");
  FIRES("0 0 * * friL", "UTC", "2026-01-01T00:00:00Z", "2026-01-30T00:00:00+00:00");
  FIRES("0 0 * * 7L", "UTC", "2026-01-01T00:00:00Z", "2026-01-25T00:00:00+00:00");
  /* Five Mondays in February: a leap year whose February starts on a
   * Monday. 2044, 2072, then (2100 not being leap) 2112. */
  FIRES("0 0 ? 2 MON#5", "UTC", "2026-01-01T00:00:00Z", "2044-02-29T00:00:00+00:00",
        "2072-02-29T00:00:00+00:00", "2112-02-29T00:00:00+00:00");
  /* Vixie: both day fields restricted, either matches. 2026-01-01 is a
   * Thursday: the 1st, or Sundays. */
  FIRES("0 0 1 * 7", "UTC", "2025-12-31T00:00:00Z", "2026-01-01T00:00:00+00:00",
        "2026-01-04T00:00:00+00:00", "2026-01-11T00:00:00+00:00");
  /* Mondays of February and February 29th: 2028-02-29 is a Tuesday. */
  FIRES("0 0 29 2 MON", "UTC", "2028-02-26T00:00:00Z", "2028-02-28T00:00:00+00:00",
        "2028-02-29T00:00:00+00:00", "2029-02-05T00:00:00+00:00");
  /* Only a bare star or ? leaves a day field unrestricted: a step over the
   * whole range (odd days here) is a restriction, so it ORs with Monday. */
  FIRES("0 0 */2 * MON", "UTC", "2026-01-01T00:00:00Z", "2026-01-03T00:00:00+00:00",
        "2026-01-05T00:00:00+00:00", "2026-01-07T00:00:00+00:00",
        "2026-01-09T00:00:00+00:00", "2026-01-11T00:00:00+00:00",
        "2026-01-12T00:00:00+00:00");
  /* L with weekdays (OR), and L in a list. */
  FIRES("0 0 L * 5L", "UTC", "2026-02-01T00:00:00Z", "2026-02-27T00:00:00+00:00",
        "2026-02-28T00:00:00+00:00", "2026-03-27T00:00:00+00:00");
  FIRES("0 0 1,L * *", "UTC", "2026-01-30T00:00:00Z", "2026-01-31T00:00:00+00:00",
        "2026-02-01T00:00:00+00:00", "2026-02-28T00:00:00+00:00");
  /* The end of the supported range. */
  FIRES("59 23 31 12 *", "UTC", "9999-12-30T00:00:00Z", "9999-12-31T23:59:00+00:00");
  FIRES("0 0 1 1 *", "UTC", "0001-01-01T00:00:00Z", "0002-01-01T00:00:00+00:00");
}

void test_cron_next_limits(void) {
  pawl__cron_t c = parse_ok(__FILE__, __LINE__, "59 23 31 12 *");
  int64_t out = 42;
  /* Nothing after the last minute of 9999. */
  CHECK_INT(pawl__cron_next(&c, NULL, PAWL__CRON_MAX_MS, &out), ==, PAWL_ENOTFOUND);
  CHECK_INT(out, ==, 42);
  c = parse_ok(__FILE__, __LINE__, "0 0 29 2 *");
  CHECK_INT(pawl__cron_next(&c, NULL, ms_of(__FILE__, __LINE__, "9996-03-01T00:00:00Z"),
                            &out), ==, PAWL_ENOTFOUND);
  CHECK_INT(pawl__cron_next(&c, NULL, PAWL__CRON_MAX_MS + 1, &out), ==, PAWL_EINVAL);
  CHECK_INT(pawl__cron_next(&c, NULL, PAWL__CRON_MIN_MS - 1, &out), ==, PAWL_EINVAL);
  CHECK_INT(pawl__cron_next(&c, NULL, INT64_MAX, &out), ==, PAWL_EINVAL);
  CHECK_INT(pawl__cron_next(&c, NULL, INT64_MIN, &out), ==, PAWL_EINVAL);
  CHECK_INT(out, ==, 42);
  CHECK_OK(pawl__cron_next(&c, NULL, PAWL__CRON_MIN_MS, &out));
  CHECK_INT(out, ==, ms_of(__FILE__, __LINE__, "0004-02-29T00:00:00Z"));
  /* Far-off zones at the edges of the range. */
  const pawl__tz_t *kiri = zone("Pacific/Kiritimati"); /* +14:00 */
  c = parse_ok(__FILE__, __LINE__, "0 0 * * *");
  CHECK_INT(pawl__cron_next(&c, kiri, ms_of(__FILE__, __LINE__, "9999-12-31T00:00:00Z"),
                            &out), ==, PAWL_ENOTFOUND);
  CHECK_OK(pawl__cron_next(&c, kiri, ms_of(__FILE__, __LINE__, "9999-12-30T00:00:00Z"),
                           &out));
  CHECK_INT(out, ==, ms_of(__FILE__, __LINE__, "9999-12-30T10:00:00Z"));
}

/* Every fire time of a few expressions over years, against a brute-force
 * scan in UTC (minute by minute, which pawl__cron_next never does). */
void test_cron_next_bruteforce_utc(void) {
  static const char *const exprs[] = {
      "*/7 3-5 * * *",  "0 0 L * *",        "30 12 15W * *", "0 6 ? * MON#1",
      "0 0 LW * *",     "0 0 1,15 * FRI",   "0 0 * * 5L",    "45 23 L-2 2,3 *",
      "0 0 29 2 *",     "0 12 */10 * 1-5",  "0 0 31W * *",   "59 23 1 * SUN#5"};
  int64_t start = ms_of(__FILE__, __LINE__, "2027-12-01T00:00:00Z");
  int64_t end = ms_of(__FILE__, __LINE__, "2032-03-01T00:00:00Z");
  for (size_t i = 0; i < sizeof exprs / sizeof exprs[0]; i++) {
    pawl__cron_t c = parse_ok(__FILE__, __LINE__, exprs[i]);
    int64_t t = start, next = 0;
    CHECK_OK(pawl__cron_next(&c, NULL, t, &next));
    for (int64_t m = start / 1000 + 60; m < end / 1000; m += 60) {
      if (!pawl__cron_matches_wall(&c, m)) continue;
      if (next != m * 1000) {
        char a[PAWL__TZ_STRLEN], b[PAWL__TZ_STRLEN];
        pawl__tz_format(pawl__tz_utc(), next, a);
        pawl__tz_format(pawl__tz_utc(), m * 1000, b);
        unit_fail(__FILE__, __LINE__, "\"%s\": next is %s, scan says %s",
                  exprs[i], a, b);
      }
      CHECK_OK(pawl__cron_next(&c, NULL, next, &next));
    }
  }
}

/* ---- daylight-saving time ------------------------------------------------ */

/* Europe/Berlin: CET (+01) / CEST (+02), changing at 01:00 UTC on the last
 * Sundays of March (02:00 -> 03:00 local) and October (03:00 -> 02:00). */
void test_cron_dst_berlin(void) {
  /* Wall-clock: 02:30 does not exist on 2026-03-29: once, at 03:00, the
   * first instant after the gap; on 2026-10-25 it happens twice: once, at
   * the first (+02:00). */
  FIRES("30 2 * * *", "Europe/Berlin", "2026-03-28T00:00:00Z",
        "2026-03-28T02:30:00+01:00", "2026-03-29T03:00:00+02:00",
        "2026-03-30T02:30:00+02:00");
  FIRES("30 2 * * *", "Europe/Berlin", "2026-10-24T12:00:00Z",
        "2026-10-25T02:30:00+02:00", "2026-10-26T02:30:00+01:00");
  /* After the first occurrence, the second one is not due either. */
  FIRES("30 2 * * *", "Europe/Berlin", "2026-10-25T02:45:00+02:00",
        "2026-10-26T02:30:00+01:00");
  FIRES("30 2 * * *", "Europe/Berlin", "2026-10-25T02:10:00+01:00",
        "2026-10-26T02:30:00+01:00");
  /* After the gap's fire, the next day. */
  FIRES("30 2 * * *", "Europe/Berlin", "2026-03-29T03:00:00+02:00",
        "2026-03-30T02:30:00+02:00");
  FIRES("15 30 2 * * *", "Europe/Berlin", "2026-03-28T12:00:00Z",
        "2026-03-29T03:00:00+02:00");
  /* Several wall-clock times in one gap fire once, together. */
  FIRES("0 */2 * * *", "Europe/Berlin", "2026-03-28T23:30:00+01:00",
        "2026-03-29T00:00:00+01:00", "2026-03-29T03:00:00+02:00",
        "2026-03-29T04:00:00+02:00");
  FIRES("0 */2 * * *", "Europe/Berlin", "2026-10-24T23:30:00+02:00",
        "2026-10-25T00:00:00+02:00", "2026-10-25T02:00:00+02:00",
        "2026-10-25T04:00:00+01:00");
  /* Interval: every real instant whose wall time matches, so every 15 real
   * minutes through the gap and through the repeated hour. */
  /* ... also when the next match after the first pass is days away (a
   * bug the comparison with croner found: the search jumped over the
   * repeated hour). */
  FIRES("*/15 2 * * SUN", "Europe/Berlin", "2026-10-25T02:45:00+02:00",
        "2026-10-25T02:00:00+01:00", "2026-10-25T02:15:00+01:00",
        "2026-10-25T02:30:00+01:00", "2026-10-25T02:45:00+01:00",
        "2026-11-01T02:00:00+01:00");
  FIRES("0,55 2 * OCT fri-sun", "Europe/Berlin", "2035-10-28T02:55:00+02:00",
        "2035-10-28T02:00:00+01:00", "2035-10-28T02:55:00+01:00",
        "2036-10-03T02:00:00+02:00");
  FIRES("*/15 * * * *", "Europe/Berlin", "2026-03-29T01:40:00+01:00",
        "2026-03-29T01:45:00+01:00", "2026-03-29T03:00:00+02:00",
        "2026-03-29T03:15:00+02:00");
  FIRES("*/30 * * * *", "Europe/Berlin", "2026-10-25T00:50:00+02:00",
        "2026-10-25T01:00:00+02:00", "2026-10-25T01:30:00+02:00",
        "2026-10-25T02:00:00+02:00", "2026-10-25T02:30:00+02:00",
        "2026-10-25T02:00:00+01:00", "2026-10-25T02:30:00+01:00",
        "2026-10-25T03:00:00+01:00");
  /* ... and from inside the repeated hour. */
  FIRES("*/30 * * * *", "Europe/Berlin", "2026-10-25T02:40:00+02:00",
        "2026-10-25T02:00:00+01:00", "2026-10-25T02:30:00+01:00");
  /* Hourly is an interval: it keeps every real hour. */
  FIRES("0 * * * *", "Europe/Berlin", "2026-10-25T00:30:00+02:00",
        "2026-10-25T01:00:00+02:00", "2026-10-25T02:00:00+02:00",
        "2026-10-25T02:00:00+01:00", "2026-10-25T03:00:00+01:00");
  FIRES("10 * * * *", "Europe/Berlin", "2026-03-29T01:00:00+01:00",
        "2026-03-29T01:10:00+01:00", "2026-03-29T03:10:00+02:00");
  /* An interval confined to the missing hour skips that day. */
  FIRES("*/15 2 * * *", "Europe/Berlin", "2026-03-28T12:00:00Z",
        "2026-03-30T02:00:00+02:00");
  FIRES("0,30 2 * * *", "Europe/Berlin", "2026-10-24T12:00:00Z",
        "2026-10-25T02:00:00+02:00", "2026-10-25T02:30:00+02:00",
        "2026-10-25T02:00:00+01:00", "2026-10-25T02:30:00+01:00",
        "2026-10-26T02:00:00+01:00");
  /* Seconds: every 20 seconds of 02:xx, both passes. */
  FIRES("*/20 * 2 * * *", "Europe/Berlin", "2026-10-25T02:59:30+02:00",
        "2026-10-25T02:59:40+02:00", "2026-10-25T02:00:00+01:00",
        "2026-10-25T02:00:20+01:00");
  /* Another year: 2027-03-28 and 2027-10-31. */
  FIRES("30 2 * * *", "Europe/Berlin", "2027-03-27T12:00:00Z",
        "2027-03-28T03:00:00+02:00", "2027-03-29T02:30:00+02:00");
  FIRES("30 2 * * *", "Europe/Berlin", "2027-10-30T12:00:00Z",
        "2027-10-31T02:30:00+02:00", "2027-11-01T02:30:00+01:00");
  FIRES("*/20 * * * *", "Europe/Berlin", "2027-10-31T02:30:00+02:00",
        "2027-10-31T02:40:00+02:00", "2027-10-31T02:00:00+01:00",
        "2027-10-31T02:20:00+01:00");
  /* Days and months are counted on the wall clock: midnight stays local. */
  FIRES("0 0 L * *", "Europe/Berlin", "2026-03-01T00:00:00Z",
        "2026-03-31T00:00:00+02:00", "2026-04-30T00:00:00+02:00");
}

/* America/New_York: EST (-05) / EDT (-04), 02:00 -> 03:00 on the second
 * Sunday of March, 02:00 -> 01:00 on the first Sunday of November. */
void test_cron_dst_new_york(void) {
  FIRES("30 2 * * *", "America/New_York", "2026-03-07T12:00:00Z",
        "2026-03-08T03:00:00-04:00", "2026-03-09T02:30:00-04:00");
  FIRES("30 1 * * *", "America/New_York", "2026-10-31T12:00:00Z",
        "2026-11-01T01:30:00-04:00", "2026-11-02T01:30:00-05:00");
  FIRES("*/30 * * * *", "America/New_York", "2026-11-01T00:50:00-04:00",
        "2026-11-01T01:00:00-04:00", "2026-11-01T01:30:00-04:00",
        "2026-11-01T01:00:00-05:00", "2026-11-01T01:30:00-05:00",
        "2026-11-01T02:00:00-05:00");
  FIRES("*/15 * * * *", "America/New_York", "2026-03-08T01:40:00-05:00",
        "2026-03-08T01:45:00-05:00", "2026-03-08T03:00:00-04:00");
  /* 02:00 does not exist: fires at 03:00, with the natural 03:00 of
   * another expression at the same instant. */
  FIRES("0 2 * * *", "America/New_York", "2027-03-13T12:00:00Z",
        "2027-03-14T03:00:00-04:00", "2027-03-15T02:00:00-04:00");
  FIRES("0 1 * * *", "America/New_York", "2027-11-06T12:00:00Z",
        "2027-11-07T01:00:00-04:00", "2027-11-08T01:00:00-05:00");
  FIRES("0 0 1 * * *", "America/New_York", "2027-11-07T00:30:00-04:00",
        "2027-11-07T01:00:00-04:00", "2027-11-08T01:00:00-05:00");
  FIRES("0 * * * *", "America/New_York", "2027-11-07T00:30:00-04:00",
        "2027-11-07T01:00:00-04:00", "2027-11-07T01:00:00-05:00",
        "2027-11-07T02:00:00-05:00");
}

/* Australia/Lord_Howe: +10:30 / +11, a 30-minute shift: 02:00 -> 02:30 on
 * the first Sunday of October, 02:00 -> 01:30 on the first Sunday of
 * April. */
void test_cron_dst_lord_howe(void) {
  /* 2026-10-04 02:15 does not exist: once, at 02:30 (+11). */
  FIRES("15 2 * * *", "Australia/Lord_Howe", "2026-10-03T00:00:00Z",
        "2026-10-04T02:30:00+11:00", "2026-10-05T02:15:00+11:00");
  FIRES("*/15 * * * *", "Australia/Lord_Howe", "2026-10-04T01:40:00+10:30",
        "2026-10-04T01:45:00+10:30", "2026-10-04T02:30:00+11:00",
        "2026-10-04T02:45:00+11:00");
  /* 01:30-01:59 happens twice on 2026-04-05. */
  FIRES("*/15 * * * *", "Australia/Lord_Howe", "2026-04-05T01:20:00+11:00",
        "2026-04-05T01:30:00+11:00", "2026-04-05T01:45:00+11:00",
        "2026-04-05T01:30:00+10:30", "2026-04-05T01:45:00+10:30",
        "2026-04-05T02:00:00+10:30");
  FIRES("45 1 * * *", "Australia/Lord_Howe", "2026-04-04T00:00:00Z",
        "2026-04-05T01:45:00+11:00", "2026-04-06T01:45:00+10:30");
  FIRES("30 * * * *", "Australia/Lord_Howe", "2026-04-05T00:00:00+11:00",
        "2026-04-05T00:30:00+11:00", "2026-04-05T01:30:00+11:00",
        "2026-04-05T01:30:00+10:30", "2026-04-05T02:30:00+10:30");
  /* Hourly across a 30-minute gap and a 30-minute repeat: 02:00 is in
   * the gap (skipped, 90 real minutes between fires); 01:00 is before the
   * repeated half hour (once). */
  FIRES("0 * * * *", "Australia/Lord_Howe", "2026-10-04T00:30:00+10:30",
        "2026-10-04T01:00:00+10:30", "2026-10-04T03:00:00+11:00");
  FIRES("0 * * * *", "Australia/Lord_Howe", "2026-04-05T00:30:00+11:00",
        "2026-04-05T01:00:00+11:00", "2026-04-05T02:00:00+10:30");
  /* Another year: 2027-04-04 and 2027-10-03. */
  FIRES("15 2 * * *", "Australia/Lord_Howe", "2027-10-02T00:00:00Z",
        "2027-10-03T02:30:00+11:00", "2027-10-04T02:15:00+11:00");
  FIRES("45 1 * * *", "Australia/Lord_Howe", "2027-04-03T00:00:00Z",
        "2027-04-04T01:45:00+11:00", "2027-04-05T01:45:00+10:30");
  FIRES("0 */10 * * * *", "Australia/Lord_Howe", "2027-04-04T01:55:00+11:00",
        "2027-04-04T01:30:00+10:30", "2027-04-04T01:40:00+10:30");
}

/* The ticker's question after a downtime: the missed occurrences, oldest
 * first, at most N, without scanning. */
void test_cron_between(void) {
  pawl__cron_t c = parse_ok(__FILE__, __LINE__, "*/15 * * * *");
  int64_t last = ms_of(__FILE__, __LINE__, "2026-10-25T01:50:00+02:00");
  int64_t now = ms_of(__FILE__, __LINE__, "2026-10-25T02:20:00+01:00");
  int64_t out[8];
  size_t n = 99;
  CHECK_OK(pawl__cron_between(&c, zone("Europe/Berlin"), last, now, out, 8, &n));
  CHECK_INT(n, ==, 6); /* 02:00 02:15 02:30 02:45 (+02), 02:00 02:15 (+01) */
  CHECK_INT(out[0], ==, ms_of(__FILE__, __LINE__, "2026-10-25T02:00:00+02:00"));
  CHECK_INT(out[4], ==, ms_of(__FILE__, __LINE__, "2026-10-25T02:00:00+01:00"));
  CHECK_INT(out[5], ==, ms_of(__FILE__, __LINE__, "2026-10-25T02:15:00+01:00"));
  for (size_t i = 1; i < n; i++) CHECK_INT(out[i] - out[i - 1], ==, 15 * 60000);
  /* At most max, oldest first. */
  CHECK_OK(pawl__cron_between(&c, zone("Europe/Berlin"), last, now, out, 2, &n));
  CHECK_INT(n, ==, 2);
  CHECK_INT(out[1], ==, ms_of(__FILE__, __LINE__, "2026-10-25T02:15:00+02:00"));
  /* until is inclusive; after is not. */
  CHECK_OK(pawl__cron_between(&c, NULL, ms_of(__FILE__, __LINE__, "2026-01-01T00:00:00Z"),
                              ms_of(__FILE__, __LINE__, "2026-01-01T00:30:00Z"), out, 8, &n));
  CHECK_INT(n, ==, 2);
  CHECK_INT(out[1], ==, ms_of(__FILE__, __LINE__, "2026-01-01T00:30:00Z"));
  /* Nothing due. */
  CHECK_OK(pawl__cron_between(&c, NULL, ms_of(__FILE__, __LINE__, "2026-01-01T00:00:00Z"),
                              ms_of(__FILE__, __LINE__, "2026-01-01T00:14:59Z"), out, 8, &n));
  CHECK_INT(n, ==, 0);
  /* A downtime of ten years costs max + 1 calls, not a scan. */
  pawl__cron_t every = parse_ok(__FILE__, __LINE__, "* * * * * *");
  CHECK_OK(pawl__cron_between(&every, NULL, ms_of(__FILE__, __LINE__, "2016-01-01T00:00:00Z"),
                              ms_of(__FILE__, __LINE__, "2026-01-01T00:00:00Z"), out, 3, &n));
  CHECK_INT(n, ==, 3);
  CHECK_INT(out[2], ==, ms_of(__FILE__, __LINE__, "2016-01-01T00:00:03Z"));
  CHECK_INT(pawl__cron_between(&c, NULL, INT64_MIN, 0, out, 8, &n), ==, PAWL_EINVAL);
  CHECK_INT(n, ==, 0);
}

/* ---- against an independent implementation ------------------------------ */

/* cron_vs_croner runs croner (an npm cron library with time zones, L, W
 * and #, pinned in spec/support/cronref and installed there by `make
 * deps`) over a few thousand generated (expression, zone, start) cases and
 * compares the next CASE_FIRES fire times with pawl's.
 *
 * croner follows the same rules as pawl (Vixie's OR of the day fields,
 * Sunday 0 and 7, W never leaving the month, and Vixie-style
 * daylight-saving handling: wall-clock times fire once, at the first
 * occurrence or at the end of a gap; intervals at every real instant), with
 * these differences, each excluded explicitly and counted:
 *
 *  - "L-n": croner has no L-n (n days before the month's last day).
 *  - "LW in a list": croner refuses LW in a list (1,LW).
 *  - "class": which expressions are intervals. pawl: more than one second
 *    or minute an hour, or every hour; croner: any list, range, step or
 *    wildcard in seconds, minutes or hours. They differ for single-minute
 *    expressions over some hours (0 0-5 * * *, 30 1,2 * * *): pawl fires
 *    such a time once, croner twice in a repeated hour and never in a gap.
 *    Excluded only when a matching wall time falls in a gap or repeated
 *    range of a transition inside the compared window; elsewhere the
 *    classes make no difference and the case is compared.
 *
 * pawl's `v/s` (v to the field's end) is written v-END/s for croner, which
 * refuses the short form; that is a translation, not an exclusion.
 *
 * Cases run from 2000 to 2040 (and a tenth in 2090-2110 and 2390-2410,
 * where only the zones' rules remain) in zones whose rules are stable, so
 * that the system's tzdata and node's ICU copy of it agree; four in five start
 * within three days before a transition (when the zone has one). PAWL_CRON_SEED picks another generation. */

#define CASES 4000
#define CASE_FIRES 6

static uint64_t xr_state;
static uint64_t xr(void) {
  xr_state ^= xr_state >> 12;
  xr_state ^= xr_state << 25;
  xr_state ^= xr_state >> 27;
  return xr_state * 0x2545F4914F6CDD1Dull;
}
static int rnd(int n) { return (int)(xr() % (uint64_t)n); }

typedef struct gcase {
  char ours[128], theirs[128];
  const char *zone;
  int64_t after;
  int lminus, lw_list;   /* features croner lacks */
  int croner_interval;   /* croner's class, from the syntax */
} gcase_t;

typedef struct gbuf {
  char *ours, *theirs;
  size_t no, nt;
} gbuf_t;

static void gput(gbuf_t *b, const char *ours, const char *theirs) {
  b->no += (size_t)snprintf(b->ours + b->no, 128 - b->no, "%s", ours);
  b->nt += (size_t)snprintf(b->theirs + b->nt, 128 - b->nt, "%s",
                            theirs ? theirs : ours);
}

static void gprintf(gbuf_t *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void gprintf(gbuf_t *b, const char *fmt, ...) {
  char tmp[64];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  gput(b, tmp, NULL);
}

/* A field of seconds, minutes (hi 59) or hours (hi 23); *single is set when
 * it is one plain value (croner's fixed-time condition). */
static void gen_time_field(gbuf_t *b, int hi, const int *likely, int nlikely,
                           int *single) {
  static const int steps60[] = {2, 3, 4, 5, 6, 10, 12, 15, 20, 30};
  static const int steps24[] = {2, 3, 4, 6, 8, 12};
  const int *steps = hi == 59 ? steps60 : steps24;
  int nsteps = hi == 59 ? 10 : 6;
  int r = rnd(100);
  int v = rnd(3) ? likely[rnd(nlikely)] : rnd(hi + 1);
  *single = 0;
  if (r < 40) {
    gprintf(b, "%d", v);
    *single = 1;
  } else if (r < 52) {
    gput(b, "*", NULL);
  } else if (r < 66) {
    gprintf(b, "*/%d", steps[rnd(nsteps)]);
  } else if (r < 76) {
    int a = rnd(hi), c = a + 1 + rnd(hi - a);
    gprintf(b, "%d-%d", a, c);
  } else if (r < 86) {
    int a = rnd(hi / 2), c = a + 1 + rnd(hi - a);
    gprintf(b, "%d,%d", a, c);
    if (rnd(2) && c < hi) gprintf(b, ",%d", c + 1 + rnd(hi - c));
  } else if (r < 93) {
    int a = rnd(hi / 2), c = a + 1 + rnd(hi - a);
    gprintf(b, "%d-%d/%d", a, c, 1 + rnd(5));
  } else {
    int a = rnd(hi / 2), st = 1 + rnd(20);
    char o[32], t[32];
    snprintf(o, sizeof o, "%d/%d", a, st);
    snprintf(t, sizeof t, "%d-%d/%d", a, hi, st); /* croner's long form */
    gput(b, o, t);
  }
}

static const char *const g_mon[] = {"JAN", "feb", "Mar", "APR", "may", "JUN",
                                    "jul", "AUG", "sep", "OCT", "nov", "DEC"};
static const char *const g_dow[] = {"SUN", "mon", "TUE", "wed",
                                    "THU", "fri", "SAT"};

static void gen_dom(gbuf_t *b, gcase_t *g) {
  int r = rnd(100);
  int d = rnd(2) ? 28 + rnd(4) : 1 + rnd(31);
  if (r < 40) gput(b, "*", NULL);
  else if (r < 48) gput(b, "?", NULL);
  else if (r < 58) gprintf(b, "%d", d);
  else if (r < 63) gprintf(b, "%d-%d", 1 + rnd(14), 15 + rnd(17));
  else if (r < 68) gprintf(b, "%d,%d", 1 + rnd(14), 15 + rnd(17));
  else if (r < 73) gput(b, "L", NULL);
  else if (r < 77) {
    gprintf(b, "L-%d", rnd(6));
    g->lminus = 1;
  } else if (r < 82) gprintf(b, "%dW", d);
  else if (r < 85) gput(b, "LW", NULL);
  else if (r < 87) {
    gprintf(b, "%d,LW", 1 + rnd(15));
    g->lw_list = 1;
  } else if (r < 91) gprintf(b, "*/%d", 2 + rnd(10));
  else if (r < 94) gprintf(b, "%d-%d/%d", 1 + rnd(10), 15 + rnd(17), 2 + rnd(5));
  else if (r < 97) gprintf(b, "%dW,L", 1 + rnd(27));
  else gprintf(b, "%d,%dW", 1 + rnd(10), 11 + rnd(20));
}

static void gen_month(gbuf_t *b) {
  int r = rnd(100);
  if (r < 60) gput(b, "*", NULL);
  else if (r < 70) gprintf(b, "%d", 1 + rnd(12));
  else if (r < 78) gprintf(b, "%s", g_mon[rnd(12)]);
  else if (r < 85) {
    int a = rnd(11), c = a + 1 + rnd(11 - a);
    gprintf(b, "%s-%s", g_mon[a], g_mon[c]);
  } else if (r < 92) gprintf(b, "%d,%d", 1 + rnd(6), 7 + rnd(6));
  else gprintf(b, "*/%d", 2 + rnd(5));
}

static void gen_dow(gbuf_t *b) {
  int r = rnd(100);
  int w = rnd(8);
  const char *name = g_dow[w % 7];
  if (r < 45) gput(b, "*", NULL);
  else if (r < 50) gput(b, "?", NULL);
  else if (r < 58) gprintf(b, "%d", w);
  else if (r < 63) gprintf(b, "%s", name);
  else if (r < 68) gput(b, rnd(2) ? "MON-FRI" : "fri-sun", NULL);
  else if (r < 72) gprintf(b, "%d-%d", rnd(4), 4 + rnd(4));
  else if (r < 76) gprintf(b, "%d,%d", rnd(3), 3 + rnd(5));
  else if (r < 79) gprintf(b, "%dL", w);
  else if (r < 82) gprintf(b, "%sL", name);
  else if (r < 90) gprintf(b, "%s#%d", name, 1 + rnd(5));
  else if (r < 93) gput(b, "*/2", NULL);
  else if (r < 96) gput(b, "1-5/2", NULL);
  else gprintf(b, "%s#%d,%dL", name, 1 + rnd(5), rnd(7));
}

static const char *const g_zones[] = {
    "UTC",              "Europe/Berlin",      "Europe/London",
    "America/New_York", "America/Los_Angeles", "America/St_Johns",
    "America/Sao_Paulo", "Australia/Lord_Howe", "Australia/Sydney",
    "Australia/Adelaide", "Pacific/Auckland", "Pacific/Chatham",
    "Asia/Kolkata",     "Asia/Kathmandu",     "Asia/Tokyo",
    "Africa/Johannesburg"};

static void gen_case(gcase_t *g) {
  memset(g, 0, sizeof *g);
  /* The zone and the start first: half the cases start within three days
   * before a transition, and their expressions lean towards its hours and
   * towards every day, so that many windows cross a change with a
   * matching time in its gap or repeated range. */
  g->zone = g_zones[rnd((int)(sizeof g_zones / sizeof g_zones[0]))];
  int64_t lo = INT64_C(946684800), hi = INT64_C(2208988800); /* 2000-2040 */
  int r = rnd(20);
  if (r == 0) { /* 2090-2110: across the end of the table (2037) and of */
    lo = INT64_C(3786825600); /* the rule's expansion at load (2100) */
    hi = INT64_C(4417977600);
  } else if (r == 1) { /* 2390-2410: the footer rule alone */
    lo = INT64_C(13253932800);
    hi = INT64_C(13885084800);
  }
  int64_t t = lo + (int64_t)(xr() % (uint64_t)(hi - lo));
  int near = 0, hint = 2;
  if (rnd(5)) {
    pawl__tz_span_t sp;
    pawl__tz_span(zone(g->zone), t, &sp);
    if (sp.end != INT64_MAX && sp.end < hi) {
      int r = rnd(3);
      t = sp.end - (r == 0 ? rnd(3 * 86400) : r == 1 ? rnd(6 * 3600) : rnd(5400));
      near = 1;
      int64_t wall = sp.end + (sp.offset < sp.next_offset ? sp.offset : sp.next_offset);
      hint = (int)(((wall % 86400) + 86400) % 86400 / 3600);
    }
  }
  g->after = t * 1000 + (rnd(4) == 0 ? rnd(1000) : 0);

  gbuf_t b = {g->ours, g->theirs, 0, 0};
  static const char *const macros[] = {"@yearly", "@monthly", "@weekly",
                                       "@daily", "@hourly", "@midnight"};
  if (rnd(100) < 3) {
    gput(&b, macros[rnd(6)], NULL);
    g->croner_interval = strcmp(g->ours, "@hourly") == 0;
    return;
  }
  int single, interval = 0;
  static const int lsec[] = {0, 0, 30};
  static const int lmin[] = {0, 15, 30, 45, 10, 40};
  int lhour[5] = {0, 1, 2, 3, 2};
  if (near) {
    lhour[0] = lhour[1] = lhour[2] = hint;
    lhour[3] = (hint + 1) % 24;
    lhour[4] = (hint + 23) % 24;
  }
  if (rnd(4) == 0) {
    gen_time_field(&b, 59, lsec, 3, &single);
    interval |= !single;
    gput(&b, " ", NULL);
  }
  gen_time_field(&b, 59, lmin, 6, &single);
  interval |= !single;
  gput(&b, " ", NULL);
  gen_time_field(&b, 23, lhour, 5, &single);
  interval |= !single;
  gput(&b, " ", NULL);
  if (near && rnd(10) < 8) gput(&b, "*", NULL);
  else gen_dom(&b, g);
  gput(&b, " ", NULL);
  gen_month(&b);
  gput(&b, " ", NULL);
  if (near && rnd(10) < 8) gput(&b, rnd(2) ? "*" : "?", NULL);
  else gen_dow(&b);
  g->croner_interval = interval;
}

/* 1 if a wall time matching c lies in a gap or a repeated range of a
 * transition of tz within [from, to]. */
static int dst_relevant(const pawl__cron_t *c, const pawl__tz_t *tz,
                        int64_t from, int64_t to) {
  pawl__tz_span_t sp;
  pawl__tz_span(tz, from, &sp);
  for (int guard = 0; guard < 10000 && sp.end <= to; guard++) {
    int64_t T = sp.end;
    int32_t a = sp.offset, b = sp.next_offset;
    int64_t lo = T + (a < b ? a : b), hi = T + (a < b ? b : a);
    for (int64_t w = lo; w < hi; w++)
      if (pawl__cron_matches_wall(c, w)) return 1;
    pawl__tz_span(tz, T, &sp);
  }
  return 0;
}

static void fmt_list(char *out, size_t cap, const pawl__tz_t *tz,
                     const int64_t *v, int n) {
  size_t o = 0;
  out[0] = '\0';
  for (int i = 0; i < n && o + PAWL__TZ_STRLEN + 2 < cap; i++) {
    char t[PAWL__TZ_STRLEN];
    pawl__tz_format(tz, v[i], t);
    o += (size_t)snprintf(out + o, cap - o, "%s%s", i ? " " : "", t);
  }
}

void test_cron_vs_croner(void) {
  const char *dir = PAWL_SOURCE_DIR "/spec/support/cronref";
  char path[4096], cmd[8192];
  struct stat sb;
  snprintf(path, sizeof path, "%s/node_modules/croner/package.json", dir);
  if (stat(path, &sb) != 0)
    unit_fail(__FILE__, __LINE__,
              "the reference implementation is not installed (%s): run `make "
              "deps` (npm ci --prefix spec/support/cronref)",
              path);
  if (system("command -v node >/dev/null 2>&1") != 0)
    unit_fail(__FILE__, __LINE__, "node is not installed: run `make deps`");

  const char *seed = getenv("PAWL_CRON_SEED");
  xr_state = seed ? strtoull(seed, NULL, 0) : 0x9E3779B97F4A7C15ull;
  if (!xr_state) xr_state = 1;
  printf("seed %#llx\n", (unsigned long long)xr_state);

  static gcase_t cases[CASES];
  FILE *f = fopen("cases.txt", "w");
  CHECK(f != NULL);
  for (int i = 0; i < CASES; i++) {
    gen_case(&cases[i]);
    fprintf(f, "%d\t%s\t%s\t%lld\t%d\n", i, cases[i].theirs, cases[i].zone,
            (long long)cases[i].after, CASE_FIRES);
  }
  CHECK(fclose(f) == 0);
  snprintf(cmd, sizeof cmd, "node '%s/ref.js' cases.txt > ref.txt", dir);
  CHECK_INT(system(cmd), ==, 0);

  f = fopen("ref.txt", "r");
  CHECK(f != NULL);
  static char line[65536];
  int compared = 0, dst_compared = 0, mismatches = 0, both_never = 0;
  int excl_lminus = 0, excl_lw = 0, excl_class = 0;
  int seen = 0;
  while (fgets(line, sizeof line, f)) {
    char *p = line;
    int id = (int)strtol(p, &p, 10);
    CHECK(id == seen && *p == '\t');
    seen++;
    p++;
    gcase_t *g = &cases[id];
    int64_t theirs[CASE_FIRES];
    int nt = 0, their_err = strncmp(p, "ERR", 3) == 0;
    while (!their_err && *p && *p != '\n' && nt < CASE_FIRES) {
      theirs[nt++] = strtoll(p, &p, 10);
      while (*p == ' ') p++;
    }
    if (g->lminus) {
      excl_lminus++;
      continue;
    }
    if (g->lw_list) {
      excl_lw++;
      continue;
    }
    const pawl__tz_t *tz = zone(g->zone);
    pawl__cron_t c;
    char err[PAWL__CRON_ERRLEN];
    int64_t ours[CASE_FIRES];
    int no = 0, our_err = pawl__cron_parse(g->ours, &c, err, sizeof err) != 0;
    for (int64_t t = g->after; !our_err && no < CASE_FIRES; no++)
      if (pawl__cron_next(&c, tz, t, &ours[no]) != 0) break;
      else t = ours[no];
    int relevant = 0;
    if (!our_err) {
      int64_t last = no ? ours[no - 1] : g->after;
      if (nt && theirs[nt - 1] > last) last = theirs[nt - 1];
      relevant = dst_relevant(&c, tz, g->after / 1000, last / 1000 + 1);
      if (relevant && c.interval != g->croner_interval) {
        excl_class++;
        continue;
      }
    }
    compared++;
    dst_compared += relevant;
    int same = our_err ? (their_err || nt == 0) : (!their_err && nt == no);
    for (int i = 0; same && i < no; i++) same = ours[i] == theirs[i];
    if (our_err && same) both_never++;
    if (!same && ++mismatches <= 20) {
      char a[1024], b[1024], from[PAWL__TZ_STRLEN];
      fmt_list(a, sizeof a, tz, ours, no);
      fmt_list(b, sizeof b, tz, theirs, nt);
      pawl__tz_format(tz, g->after, from);
      printf("MISMATCH %d: \"%s\" (croner \"%s\") in %s after %s\n"
             "  pawl:   %s\n  croner: %s\n",
             id, g->ours, g->theirs, g->zone, from,
             our_err ? err : a, their_err ? p : b);
      fflush(stdout);
    }
  }
  fclose(f);
  printf("%d cases: %d compared (%d across a daylight-saving change with a "
         "matching time in its gap or repeated range, %d that never fire), "
         "%d mismatches; excluded: %d L-n, %d LW in a list, %d class\n",
         CASES, compared, dst_compared, both_never, mismatches, excl_lminus,
         excl_lw, excl_class);
  fflush(stdout);
  CHECK_INT(seen, ==, CASES);
  CHECK_INT(mismatches, ==, 0);
  /* The exclusions must not swallow the comparison. */
  CHECK_INT(compared, >=, CASES * 8 / 10);
  CHECK_INT(dst_compared, >=, 150);
}

/* A whole day skipped: Pacific/Apia went from -10:00 to +14:00 at the end
 * of 2011-12-29, so 2011-12-30 never happened there. */
void test_cron_dst_day_gap(void) {
  /* The four wall-clock times of the missing day fire once, at its end. */
  FIRES("30 */6 * * *", "Pacific/Apia", "2011-12-29T12:00:00-10:00",
        "2011-12-29T12:30:00-10:00", "2011-12-29T18:30:00-10:00",
        "2011-12-31T00:00:00+14:00", "2011-12-31T00:30:00+14:00");
  FIRES("0 12 30 12 *", "Pacific/Apia", "2011-01-01T00:00:00Z",
        "2011-12-31T00:00:00+14:00", "2012-12-30T12:00:00+14:00");
  /* An interval skips the day. */
  FIRES("*/30 * * * *", "Pacific/Apia", "2011-12-29T23:00:00-10:00",
        "2011-12-29T23:30:00-10:00", "2011-12-31T00:00:00+14:00");
}
