/* test_iso8601.c: UTC timestamps as text (host/core/iso8601.c). */
#include "unit.h"

#include <time.h>

#include "iso8601.h"

/* Parses s, which must be accepted, and returns its time. */
static int64_t parse_ok(const char *file, int line, const char *s) {
  int64_t ms = -12345;
  if (pawl__iso8601_parse(s, &ms) != 0)
    unit_fail(file, line, "rejected valid timestamp \"%s\"", s);
  return ms;
}
#define PARSE(s) parse_ok(__FILE__, __LINE__, (s))

#define CHECK_FORMAT(ms, want)                                               \
  do {                                                                       \
    char out_[ISO8601_STRLEN];                                               \
    pawl__iso8601_format((ms), out_);                                              \
    CHECK_STR(out_, (want));                                                 \
  } while (0)

/* xorshift64*: fixed seed, so a failure replays identically. */
static uint64_t rng_state = 0x2545F4914F6CDD1Dull;
static uint64_t rng(void) {
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 0x2545F4914F6CDD1Dull;
}

void test_iso8601_roundtrip(void) {
  CHECK_FORMAT(0, "1970-01-01T00:00:00.000Z");
  CHECK_FORMAT(-1, "1969-12-31T23:59:59.999Z");
  CHECK_FORMAT(INT64_C(1795295103123), "2026-11-21T21:05:03.123Z");
  CHECK_FORMAT(INT64_C(951782400000), "2000-02-29T00:00:00.000Z");
  CHECK_FORMAT(INT64_C(253402300799999), "9999-12-31T23:59:59.999Z");
  CHECK_FORMAT(INT64_C(-62167219200000), "0000-01-01T00:00:00.000Z");
  CHECK_FORMAT(INT64_C(-62167219200001), "-0001-12-31T23:59:59.999Z");
  CHECK_FORMAT(INT64_C(253402300800000), "10000-01-01T00:00:00.000Z");

  /* The extremes still fit the buffer and are well formed. */
  char out[ISO8601_STRLEN];
  pawl__iso8601_format(INT64_MAX, out);
  CHECK_STR(out, "292278994-08-17T07:12:55.807Z");
  pawl__iso8601_format(INT64_MIN, out);
  CHECK_STR(out, "-292275055-05-16T16:47:04.192Z");

  /* Against the C library's own UTC conversion (gmtime_r ignores $TZ),
   * over every day of 0000-9999 in random steps, at random times of day. */
  int64_t lo = INT64_C(-62167219200000), hi = INT64_C(253402300799999);
  for (int i = 0; i < 200000; i++) {
    int64_t ms = lo + (int64_t)(rng() % (uint64_t)(hi - lo + 1));
    pawl__iso8601_format(ms, out);
    int64_t back = 0;
    if (pawl__iso8601_parse(out, &back) != 0 || back != ms)
      unit_fail(__FILE__, __LINE__, "%lld -> \"%s\" -> %lld", (long long)ms,
                out, (long long)back);
    time_t secs = (time_t)(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
    struct tm tm;
    if (gmtime_r(&secs, &tm) == NULL) continue;
    char want[64];
    snprintf(want, sizeof want, "%04d-%02d-%02dT%02d:%02d:%02d",
             tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
             tm.tm_min, tm.tm_sec);
    if (strncmp(out, want, strlen(want)) != 0)
      unit_fail(__FILE__, __LINE__, "%lld: \"%s\", gmtime says \"%s\"",
                (long long)ms, out, want);
  }
  /* Every ms of a day boundary either side of the epoch and a leap day. */
  for (int64_t ms = -5000; ms <= 5000; ms++) {
    pawl__iso8601_format(ms, out);
    CHECK_INT(PARSE(out), ==, ms);
  }
}

void test_iso8601_parse_forms(void) {
  const int64_t t = INT64_C(1795295103000); /* 2026-11-21T21:05:03Z */
  CHECK_INT(PARSE("2026-11-21T21:05:03Z"), ==, t);
  CHECK_INT(PARSE("2026-11-21t21:05:03z"), ==, t);
  CHECK_INT(PARSE("2026-11-21 21:05:03Z"), ==, t);
  CHECK_INT(PARSE("2026-11-21T21:05:03+00:00"), ==, t);
  CHECK_INT(PARSE("2026-11-21T21:05:03-00:00"), ==, t);
  CHECK_INT(PARSE("2026-11-21T22:35:03+01:30"), ==, t);
  CHECK_INT(PARSE("2026-11-21T16:05:03-05:00"), ==, t);
  CHECK_INT(PARSE("2026-11-22T20:05:03+23:00"), ==, t);

  /* Fractions: 1-9 digits, milliseconds kept, the rest truncated. */
  CHECK_INT(PARSE("2026-11-21T21:05:03.1Z"), ==, t + 100);
  CHECK_INT(PARSE("2026-11-21T21:05:03.12Z"), ==, t + 120);
  CHECK_INT(PARSE("2026-11-21T21:05:03.123Z"), ==, t + 123);
  CHECK_INT(PARSE("2026-11-21T21:05:03.1239Z"), ==, t + 123);
  CHECK_INT(PARSE("2026-11-21T21:05:03.999999999Z"), ==, t + 999);
  CHECK_INT(PARSE("2026-11-21T21:05:03.000000001Z"), ==, t);
  CHECK_INT(PARSE("2026-11-21T22:05:03.5+01:00"), ==, t + 500);

  /* Date only: midnight UTC. */
  CHECK_INT(PARSE("1970-01-01"), ==, 0);
  CHECK_INT(PARSE("2026-11-21"), ==, INT64_C(1795219200000));
  CHECK_INT(PARSE("1969-12-31"), ==, -86400000);

  /* Leap years and month ends. */
  CHECK_INT(PARSE("2000-02-29"), ==, INT64_C(951782400000));
  CHECK_INT(PARSE("2024-02-29T12:00:00Z"), ==, INT64_C(1709208000000));
  CHECK_INT(PARSE("2026-12-31T23:59:59.999Z"), ==,
            PARSE("2027-01-01T00:00:00Z") - 1);
  CHECK_INT(PARSE("0000-01-01T00:00:00Z"), ==, INT64_C(-62167219200000));
  CHECK_INT(PARSE("9999-12-31T23:59:59.999Z"), ==, INT64_C(253402300799999));

  /* A leap second is the first ms of the next minute. */
  CHECK_INT(PARSE("2016-12-31T23:59:60Z"), ==, PARSE("2017-01-01T00:00:00Z"));

  /* An offset can move the date across a day, month or year boundary. */
  CHECK_INT(PARSE("2027-01-01T01:00:00+02:00"), ==,
            PARSE("2026-12-31T23:00:00Z"));

  /* Nothing depends on $TZ or the locale. */
  setenv("TZ", "Pacific/Chatham", 1);
  tzset();
  CHECK_INT(PARSE("2026-11-21T21:05:03Z"), ==, t);
  CHECK_FORMAT(t, "2026-11-21T21:05:03.000Z");

  /* A failed parse leaves the output alone; a good one overwrites it. */
  int64_t ms = 42;
  CHECK_INT(pawl__iso8601_parse("nope", &ms), ==, -1);
  CHECK_INT(ms, ==, 42);
}

void test_iso8601_rejects(void) {
  static const char *bad[] = {
      "", "2026", "2026-11", "2026-1-21", "2026-11-1", "26-11-21",
      "+2026-11-21", "2026/11/21", "2026-11-21T", "2026-11-21T21:05Z",
      "2026-11-21T21:05:03", /* no zone */
      "2026-11-21T21:05:03.123", "2026-11-21T21:5:03Z", "2026-11-21T21:05:3Z",
      "2026-11-21T21:05:03.Z", "2026-11-21T21:05:03.1234567890Z",
      "2026-11-21T21:05:03,5Z", "2026-11-21T21:05:03ZZ",
      "2026-11-21T21:05:03Z ", " 2026-11-21T21:05:03Z", "2026-11-21 ",
      "2026-11-21x", "2026-11-21_21:05:03Z", "2026-11-21T21:05:03+01",
      "2026-11-21T21:05:03+0100", "2026-11-21T21:05:03+1:00",
      "2026-11-21T21:05:03+24:00", "2026-11-21T21:05:03+01:60",
      "2026-11-21T21:05:03 +01:00", "2026-11-21T21:05:03UTC",
      "2026-00-10", "2026-13-10", "2026-01-00", "2026-01-32", "2026-04-31",
      "2026-06-31", "2026-09-31", "2026-11-31", "2026-02-29", "1900-02-29",
      "2100-02-29", "2024-02-30", "2026-11-21T24:00:00Z",
      "2026-11-21T23:60:00Z", "2026-11-21T23:59:61Z", "2026-11-21T-1:00:00Z",
      "２026-11-21", "2026-11-21T21:05:03.１Z", "2026-11-21\nT21:05:03Z",
      "2026-11-21T21:05:03Z\n", "now", "1795295103000"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    int64_t ms = 7;
    if (pawl__iso8601_parse(bad[i], &ms) != -1)
      unit_fail(__FILE__, __LINE__, "accepted \"%s\" as %lld", bad[i],
                (long long)ms);
    CHECK_INT(ms, ==, 7);
  }
  /* A NUL ends the string: what follows it is not read. */
  const char embedded[] = "2026-11-21\0T21:05:03Z";
  int64_t ms = 0;
  CHECK_INT(pawl__iso8601_parse(embedded, &ms), ==, 0);
  CHECK_INT(ms, ==, INT64_C(1795219200000));
  CHECK_INT(pawl__iso8601_parse(NULL, &ms), ==, -1);
}
