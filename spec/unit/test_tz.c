/* test_tz.c: time zones from TZif files (host/core/tz.c).
 *
 * Expected transitions come from Python's zoneinfo over the same system
 * tzdata (an independent reader of TZif and of the footer rules), e.g.
 *   python3 -c 'from zoneinfo import ZoneInfo; ...'
 * and are written here as numbers. Hand-made TZif images test the parser's
 * paths that the system's files do not take (version 1, rule-only zones,
 * every kind of corruption). */
#include "unit.h"

#include <pthread.h>
#include <stdarg.h>
#include <sys/stat.h>

#include "iso8601.h"
#include "pawl.h"
#include "tz.h"

/* ---- building TZif images ----------------------------------------------- */

typedef struct img {
  unsigned char d[8192];
  size_t n;
} img_t;

static void put(img_t *b, const void *p, size_t n) {
  CHECK(b->n + n <= sizeof b->d);
  memcpy(b->d + b->n, p, n);
  b->n += n;
}
static void put8(img_t *b, unsigned v) {
  unsigned char c = (unsigned char)v;
  put(b, &c, 1);
}
static void put32(img_t *b, uint32_t v) {
  for (int i = 3; i >= 0; i--) put8(b, (v >> (8 * i)) & 0xff);
}
static void put64(img_t *b, uint64_t v) {
  put32(b, (uint32_t)(v >> 32));
  put32(b, (uint32_t)v);
}

typedef struct zspec {
  char version;       /* 0 (v1), '2', '3' */
  size_t ntrans;
  int64_t at[8];
  unsigned idx[8];
  size_t ntypes;
  int32_t off[4];
  const char *footer; /* NULL: none (v1); "" an empty rule */
  uint32_t leapcnt;
} zspec_t;

static void header(img_t *b, char version, uint32_t timecnt, uint32_t typecnt,
                   uint32_t charcnt, uint32_t leapcnt) {
  put(b, "TZif", 4);
  put8(b, (unsigned char)version);
  for (int i = 0; i < 15; i++) put8(b, 0);
  put32(b, 0);       /* isutcnt */
  put32(b, 0);       /* isstdcnt */
  put32(b, leapcnt);
  put32(b, timecnt);
  put32(b, typecnt);
  put32(b, charcnt);
}

static void block(img_t *b, const zspec_t *z, int tsize) {
  for (size_t i = 0; i < z->ntrans; i++) {
    if (tsize == 8) put64(b, (uint64_t)z->at[i]);
    else put32(b, (uint32_t)(int32_t)z->at[i]);
  }
  for (size_t i = 0; i < z->ntrans; i++) put8(b, z->idx[i]);
  for (size_t i = 0; i < z->ntypes; i++) {
    put32(b, (uint32_t)z->off[i]);
    put8(b, 0);
    put8(b, 0);
  }
  put(b, "ABC", 4); /* charcnt 4: "ABC\0" */
  for (uint32_t i = 0; i < z->leapcnt; i++) {
    if (tsize == 8) put64(b, 78796800);
    else put32(b, 78796800);
    put32(b, 1);
  }
}

static img_t build(const zspec_t *z) {
  static img_t b;
  memset(&b, 0, sizeof b);
  if (z->version == 0) {
    header(&b, 0, (uint32_t)z->ntrans, (uint32_t)z->ntypes, 4, z->leapcnt);
    block(&b, z, 4);
    return b;
  }
  /* A v2+ file: a minimal v1 block (RFC 8536 allows it), then the real
   * 64-bit data and the footer. */
  zspec_t v1 = {0};
  v1.ntypes = 1;
  v1.off[0] = z->off[0];
  header(&b, z->version, 0, 1, 4, 0);
  block(&b, &v1, 4);
  header(&b, z->version, (uint32_t)z->ntrans, (uint32_t)z->ntypes, 4,
         z->leapcnt);
  block(&b, z, 8);
  put8(&b, '\n');
  put(&b, z->footer, strlen(z->footer));
  put8(&b, '\n');
  return b;
}

static pawl__tz_t *parse_ok(const char *file, int line, const img_t *b) {
  pawl__tz_t *tz = NULL;
  char err[PAWL__TZ_ERRLEN] = "";
  if (pawl__tz_parse("Test/Zone", b->d, b->n, &tz, err, sizeof err) != 0)
    unit_fail(file, line, "refused: %s", err);
  return tz;
}
#define PARSE_OK(b) parse_ok(__FILE__, __LINE__, (b))

static void refused(const char *file, int line, const img_t *b, size_t len,
                    int code, const char *want) {
  pawl__tz_t *tz = NULL;
  char err[PAWL__TZ_ERRLEN] = "";
  int rc = pawl__tz_parse("Test/Zone", b->d, len, &tz, err, sizeof err);
  if (rc != code) unit_fail(file, line, "rc %d, want %d (%s)", rc, code, err);
  if (!strstr(err, want) || !strstr(err, "Test/Zone"))
    unit_fail(file, line, "message \"%s\" lacks \"%s\" or the name", err, want);
  if (tz) unit_fail(file, line, "*out written on failure");
}
#define REFUSED(b, len, code, want) refused(__FILE__, __LINE__, (b), (len), (code), (want))

static int64_t iso_s(const char *s) {
  int64_t ms;
  if (pawl__iso8601_parse(s, &ms) != 0) unit_fail(__FILE__, __LINE__, "bad %s", s);
  return ms / 1000;
}

/* The span around t must be [start, end) with offsets prev|off|next. */
static void span_is(const char *file, int line, const pawl__tz_t *tz, int64_t t,
                    int64_t start, int64_t end, int32_t prev, int32_t off,
                    int32_t next) {
  pawl__tz_span_t sp;
  pawl__tz_span(tz, t, &sp);
  if (sp.start != start || sp.end != end || sp.prev_offset != prev ||
      sp.offset != off || sp.next_offset != next)
    unit_fail(file, line,
              "span at %lld: [%lld, %lld) %d|%d|%d, want [%lld, %lld) %d|%d|%d",
              (long long)t, (long long)sp.start, (long long)sp.end,
              sp.prev_offset, sp.offset, sp.next_offset, (long long)start,
              (long long)end, prev, off, next);
  if (pawl__tz_offset(tz, t) != off) unit_fail(file, line, "offset differs");
}
#define SPAN(tz, t, start, end, prev, off, next)                             \
  span_is(__FILE__, __LINE__, (tz), (t), (start), (end), (prev), (off), (next))

/* A zone changes to off_a at instant a and to off_b at b (a < b), with
 * nothing in between. */
static void changes_are(const char *file, int line, const pawl__tz_t *tz,
                        int64_t a, int32_t off_a, int64_t b, int32_t off_b) {
  pawl__tz_span_t before, after;
  pawl__tz_span(tz, a - 1, &before);
  pawl__tz_span(tz, b, &after);
  if (before.end != a || before.next_offset != off_a ||
      before.offset == off_a)
    unit_fail(file, line, "before %lld: ends %lld, next %d", (long long)a,
              (long long)before.end, before.next_offset);
  if (after.start != b || after.offset != off_b || after.prev_offset != off_a)
    unit_fail(file, line, "from %lld: starts %lld, offset %d|%d",
              (long long)b, (long long)after.start, after.prev_offset,
              after.offset);
  span_is(file, line, tz, a, a, b, before.offset, off_a, off_b);
  span_is(file, line, tz, (a + b) / 2, a, b, before.offset, off_a, off_b);
  span_is(file, line, tz, b - 1, a, b, before.offset, off_a, off_b);
}
#define CHANGES(tz, a, off_a, b, off_b)                                      \
  changes_are(__FILE__, __LINE__, (tz), (a), (off_a), (b), (off_b))

/* ---- tests -------------------------------------------------------------- */

void test_tz_tzif_v1(void) {
  zspec_t z = {0};
  z.ntrans = 3;
  z.at[0] = -100000; /* before the epoch: 32-bit times are signed */
  z.at[1] = 1000000000;
  z.at[2] = 1100000000;
  z.idx[0] = 1;
  z.idx[1] = 2;
  z.idx[2] = 1;
  z.ntypes = 3;
  z.off[0] = -18000; /* type 0: before the first transition */
  z.off[1] = 3600;
  z.off[2] = 7200;
  img_t b = build(&z);
  pawl__tz_t *tz = PARSE_OK(&b);
  CHECK_STR(pawl__tz_name(tz), "Test/Zone");
  SPAN(tz, INT64_MIN, INT64_MIN, -100000, -18000, -18000, 3600);
  SPAN(tz, -100001, INT64_MIN, -100000, -18000, -18000, 3600);
  SPAN(tz, -100000, -100000, 1000000000, -18000, 3600, 7200);
  SPAN(tz, 999999999, -100000, 1000000000, -18000, 3600, 7200);
  SPAN(tz, 1000000000, 1000000000, 1100000000, 3600, 7200, 3600);
  /* No footer: the last type holds for ever. */
  SPAN(tz, 1100000000, 1100000000, INT64_MAX, 7200, 3600, 3600);
  SPAN(tz, INT64_MAX, 1100000000, INT64_MAX, 7200, 3600, 3600);
  pawl__tz_free(tz);

  /* A transition that keeps the offset (only the abbreviation or the DST
   * flag changes) is no boundary. */
  z.ntrans = 2;
  z.at[0] = 1000;
  z.idx[0] = 1;
  z.at[1] = 2000;
  z.idx[1] = 3;
  z.ntypes = 4;
  z.off[3] = 3600;
  b = build(&z);
  tz = PARSE_OK(&b);
  SPAN(tz, 1500, 1000, INT64_MAX, -18000, 3600, 3600);
  pawl__tz_free(tz);
}

void test_tz_tzif_footer(void) {
  /* Berlin's rule after a table that ends in 1996 (as a "slim" file
   * does): the table's changes up to 2100 are appended at load, later
   * years are computed. Expected instants from Python's zoneinfo. */
  zspec_t z = {0};
  z.version = '2';
  z.ntrans = 2;
  z.at[0] = 828234000; /* 1996-03-31T01:00:00Z */
  z.idx[0] = 1;
  z.at[1] = 846378000; /* 1996-10-27T01:00:00Z */
  z.idx[1] = 0;
  z.ntypes = 2;
  z.off[0] = 3600;
  z.off[1] = 7200;
  z.footer = "CET-1CEST,M3.5.0,M10.5.0/3";
  img_t b = build(&z);
  pawl__tz_t *tz = PARSE_OK(&b);
  SPAN(tz, 846378000, 846378000, 859683600, 7200, 3600, 7200); /* 1997-03-30 */
  CHANGES(tz, iso_s("2026-03-29T01:00:00Z"), 7200, iso_s("2026-10-25T01:00:00Z"), 3600);
  CHANGES(tz, iso_s("2027-03-28T01:00:00Z"), 7200, iso_s("2027-10-31T01:00:00Z"), 3600);
  CHANGES(tz, iso_s("2100-03-28T01:00:00Z"), 7200, iso_s("2100-10-31T01:00:00Z"), 3600);
  CHANGES(tz, iso_s("2101-03-27T01:00:00Z"), 7200, iso_s("2101-10-30T01:00:00Z"), 3600);
  CHANGES(tz, iso_s("2500-03-28T01:00:00Z"), 7200, iso_s("2500-10-31T01:00:00Z"), 3600);
  pawl__tz_free(tz);

  /* A rule alone (no transitions at all), southern hemisphere, 30-minute
   * DST: Lord Howe's footer. */
  z.ntrans = 0;
  z.ntypes = 1;
  z.off[0] = 37800;
  z.footer = "<+1030>-10:30<+11>-11,M10.1.0,M4.1.0";
  b = build(&z);
  tz = PARSE_OK(&b);
  CHANGES(tz, iso_s("2026-04-04T15:00:00Z"), 37800, iso_s("2026-10-03T15:30:00Z"), 39600);
  CHANGES(tz, iso_s("2027-04-03T15:00:00Z"), 37800, iso_s("2027-10-02T15:30:00Z"), 39600);
  CHANGES(tz, iso_s("2500-04-03T15:00:00Z"), 37800, iso_s("2500-10-02T15:30:00Z"), 39600);
  pawl__tz_free(tz);

  /* Rule times before midnight and past 24:00 (RFC 8536 3.3.1): Nuuk's
   * "-1" and "0", Chatham's 2:45/3:45 with a 12:45 offset. */
  z.footer = "<-02>2<-01>,M3.5.0/-1,M10.5.0/0";
  z.off[0] = -7200;
  b = build(&z);
  tz = PARSE_OK(&b);
  CHANGES(tz, 1901149200, -3600, 1919293200, -7200); /* 2030 */
  pawl__tz_free(tz);
  z.footer = "<+1245>-12:45<+1345>,M9.5.0/2:45,M4.1.0/3:45";
  z.off[0] = 45900;
  b = build(&z);
  tz = PARSE_OK(&b);
  CHANGES(tz, 1901714400, 45900, 1916834400, 49500); /* 2030 */
  pawl__tz_free(tz);
  /* Julian days: J60 is March 1st even in leap years; n counts February
   * 29th (59 is February 29th in 2028, March 1st in 2027). */
  z.footer = "AAA0BBB,J60/0,59/0";
  z.off[0] = 0;
  b = build(&z);
  tz = PARSE_OK(&b);
  SPAN(tz, iso_s("2028-02-29T12:00:00Z"), iso_s("2028-02-29T00:00:00Z") - 3600,
       iso_s("2028-03-01T00:00:00Z"), 3600, 0, 3600);
  SPAN(tz, iso_s("2027-06-01T00:00:00Z"), iso_s("2027-03-01T00:00:00Z"),
       iso_s("2028-02-29T00:00:00Z") - 3600, 0, 3600, 0);
  pawl__tz_free(tz);
  /* DST all year (RFC 8536's example): a constant offset, no boundaries. */
  z.footer = "EST5EDT,0/0,J365/25";
  b = build(&z);
  tz = PARSE_OK(&b);
  SPAN(tz, iso_s("2030-06-01T00:00:00Z"), INT64_MIN, INT64_MAX, -14400, -14400, -14400);
  SPAN(tz, iso_s("2030-12-31T23:59:59Z"), INT64_MIN, INT64_MAX, -14400, -14400, -14400);
  pawl__tz_free(tz);
  /* No DST; an empty footer keeps the last type. */
  z.footer = "<+0545>-5:45";
  b = build(&z);
  tz = PARSE_OK(&b);
  SPAN(tz, 0, INT64_MIN, INT64_MAX, 20700, 20700, 20700);
  pawl__tz_free(tz);
  z.footer = "";
  z.off[0] = 19800;
  b = build(&z);
  tz = PARSE_OK(&b);
  SPAN(tz, 0, INT64_MIN, INT64_MAX, 19800, 19800, 19800);
  pawl__tz_free(tz);
  /* DST without a rule: POSIX's default (the United States' rule). */
  z.footer = "EST5EDT";
  b = build(&z);
  tz = PARSE_OK(&b);
  CHANGES(tz, iso_s("2026-03-08T07:00:00Z"), -14400, iso_s("2026-11-01T06:00:00Z"), -18000);
  pawl__tz_free(tz);
}

void test_tz_tzif_refusals(void) {
  zspec_t z = {0};
  z.version = '2';
  z.ntrans = 1;
  z.at[0] = 1000;
  z.idx[0] = 1;
  z.ntypes = 2;
  z.off[0] = 0;
  z.off[1] = 3600;
  z.footer = "CET-1CEST,M3.5.0,M10.5.0/3";
  img_t good = build(&z);
  pawl__tz_free(PARSE_OK(&good));

  img_t b = good;
  b.d[0] = 'X';
  REFUSED(&b, b.n, PAWL_EIO, "not a TZif file");
  REFUSED(&good, 20, PAWL_EIO, "not a TZif file");
  b = good;
  b.d[4] = 'x';
  REFUSED(&b, b.n, PAWL_EIO, "unknown TZif version");
  /* Every truncation is refused, never read past. */
  for (size_t len = 44; len < good.n; len++) {
    pawl__tz_t *tz = NULL;
    char err[PAWL__TZ_ERRLEN];
    if (pawl__tz_parse("Test/Zone", good.d, len, &tz, err, sizeof err) == 0)
      unit_fail(__FILE__, __LINE__, "truncated to %zu bytes: accepted", len);
  }
  REFUSED(&good, 60, PAWL_EIO, "truncated TZif file (no second header)");
  REFUSED(&good, good.n - 1, PAWL_EIO, "TZif footer missing");

  z.leapcnt = 1;
  b = build(&z);
  REFUSED(&b, b.n, PAWL_EIO, "leap-second data (a right/ zone) is not supported");
  z.leapcnt = 0;
  z.ntrans = 2;
  z.at[1] = 1000;
  z.idx[1] = 0;
  b = build(&z);
  REFUSED(&b, b.n, PAWL_EIO, "transitions out of order");
  z.at[1] = 2000;
  z.idx[1] = 2;
  b = build(&z);
  REFUSED(&b, b.n, PAWL_EIO, "bad type index");
  z.ntrans = 1;
  z.off[1] = 100000;
  b = build(&z);
  REFUSED(&b, b.n, PAWL_EIO, "bad local time type 1");
  z.off[1] = 3600;
  static const char *const bad_rules[] = {
      "CE-1",        "CET",          "CET-1CEST,M3.5.0",   "CET-1CEST,M13.5.0,M10.5.0",
      "CET-1CEST,M3.6.0,M10.5.0", "CET-1CEST,J0,J365", "CET-1CEST,366,1",
      "CET-1CEST,M3.5.0/168,M10.5.0", "CET-25", "<+1>-1", "CET-1CEST,M3.5.0,M10.5.0x"};
  for (size_t i = 0; i < sizeof bad_rules / sizeof bad_rules[0]; i++) {
    z.footer = bad_rules[i];
    b = build(&z);
    REFUSED(&b, b.n, PAWL_EIO, "bad POSIX TZ rule");
  }
  /* Header counts that do not fit: typecnt 0. */
  b = good;
  size_t second = 44 + 6 + 4; /* v1 block: one type, 4 chars */
  memset(b.d + second + 36, 0, 4);
  REFUSED(&b, b.n, PAWL_EIO, "bad TZif header counts");
  /* A huge timecnt claims more data than there is. */
  b = good;
  memset(b.d + second + 32, 0xff, 4);
  REFUSED(&b, b.n, PAWL_EIO, "truncated TZif file");
}

/* The system's zones, against Python's zoneinfo. */
void test_tz_system_zones(void) {
  const pawl__tz_t *tz;
  char err[PAWL__TZ_ERRLEN];
  CHECK_OK(pawl__tz_get("Europe/Berlin", &tz, err, sizeof err));
  CHANGES(tz, 1774746000, 7200, 1792890000, 3600);               /* 2026 */
  CHANGES(tz, iso_s("2027-03-28T01:00:00Z"), 7200, iso_s("2027-10-31T01:00:00Z"), 3600);
  CHANGES(tz, iso_s("2100-03-28T01:00:00Z"), 7200, iso_s("2100-10-31T01:00:00Z"), 3600);
  CHANGES(tz, iso_s("2500-03-28T01:00:00Z"), 7200, iso_s("2500-10-31T01:00:00Z"), 3600);
  CHECK_INT(pawl__tz_offset(tz, iso_s("1945-06-01T00:00:00Z")), ==, 10800); /* CEMT */
  CHECK_OK(pawl__tz_get("America/New_York", &tz, err, sizeof err));
  CHANGES(tz, iso_s("2026-03-08T07:00:00Z"), -14400, iso_s("2026-11-01T06:00:00Z"), -18000);
  CHANGES(tz, iso_s("2027-03-14T07:00:00Z"), -14400, iso_s("2027-11-07T06:00:00Z"), -18000);
  CHANGES(tz, iso_s("2100-03-14T07:00:00Z"), -14400, iso_s("2100-11-07T06:00:00Z"), -18000);
  CHANGES(tz, iso_s("2500-03-14T07:00:00Z"), -14400, iso_s("2500-11-07T06:00:00Z"), -18000);
  CHECK_OK(pawl__tz_get("Australia/Lord_Howe", &tz, err, sizeof err));
  CHANGES(tz, iso_s("2026-04-04T15:00:00Z"), 37800, iso_s("2026-10-03T15:30:00Z"), 39600);
  CHANGES(tz, iso_s("2027-04-03T15:00:00Z"), 37800, iso_s("2027-10-02T15:30:00Z"), 39600);
  CHANGES(tz, iso_s("2100-04-03T15:00:00Z"), 37800, iso_s("2100-10-02T15:30:00Z"), 39600);
  CHECK_OK(pawl__tz_get("America/Nuuk", &tz, err, sizeof err));
  CHANGES(tz, 1901149200, -3600, 1919293200, -7200); /* 2030 */
  CHANGES(tz, 4109878800, -3600, 4128627600, -7200); /* 2100 */
  CHECK_OK(pawl__tz_get("Pacific/Chatham", &tz, err, sizeof err));
  CHANGES(tz, 1901714400, 45900, 1916834400, 49500); /* 2030 */
  CHANGES(tz, 4110444000, 45900, 4125564000, 49500); /* 2100 */
  CHECK_OK(pawl__tz_get("Asia/Kathmandu", &tz, err, sizeof err));
  CHECK_INT(pawl__tz_offset(tz, iso_s("2030-01-01T00:00:00Z")), ==, 20700);
  CHECK_OK(pawl__tz_get("America/Sao_Paulo", &tz, err, sizeof err));
  CHECK_INT(pawl__tz_offset(tz, iso_s("2030-01-01T00:00:00Z")), ==, -10800);
  CHECK_INT(pawl__tz_offset(tz, iso_s("2018-01-01T00:00:00Z")), ==, -7200);
}

void test_tz_names(void) {
  const pawl__tz_t *tz = NULL, *again = NULL;
  char err[PAWL__TZ_ERRLEN];
  CHECK_OK(pawl__tz_get(NULL, &tz, err, sizeof err));
  CHECK(tz == pawl__tz_utc());
  CHECK_OK(pawl__tz_get("UTC", &tz, err, sizeof err));
  CHECK(tz == pawl__tz_utc());
  CHECK_STR(pawl__tz_name(tz), "UTC");
  SPAN(tz, 0, INT64_MIN, INT64_MAX, 0, 0, 0);
  /* Cached: the same zone every time. */
  CHECK_OK(pawl__tz_get("Europe/Berlin", &tz, err, sizeof err));
  CHECK_OK(pawl__tz_get("Europe/Berlin", &again, err, sizeof err));
  CHECK(tz == again);
  CHECK_STR(pawl__tz_name(tz), "Europe/Berlin");
  CHECK_OK(pawl__tz_get("Etc/GMT+5", &tz, err, sizeof err));
  CHECK_INT(pawl__tz_offset(tz, 0), ==, -18000);

  static const struct {
    const char *name;
    int code;
    const char *want;
  } bad[] = {
      {"Mars/Olympus_Mons", PAWL_EINVAL,
       "unknown time zone \"Mars/Olympus_Mons\" (no file "},
      {"Europe/Berlin/x", PAWL_EINVAL, "unknown time zone \"Europe/Berlin/x\""},
      {"Europe", PAWL_EINVAL, "unknown time zone \"Europe\" ("},
      {"", PAWL_EINVAL, "empty time zone name"},
      {"../../../etc/passwd", PAWL_EINVAL, "no empty, \".\" or \"..\" parts"},
      {"Europe/../Europe/Berlin", PAWL_EINVAL, "\"..\" parts"},
      {"/etc/localtime", PAWL_EINVAL, "relative to the zone directory"},
      {"Europe//Berlin", PAWL_EINVAL, "no empty"},
      {"./UTC", PAWL_EINVAL, "no empty"},
      {"Europe/Berlin/", PAWL_EINVAL, "no empty"},
      {"Europe/Ber lin", PAWL_EINVAL, "character 0x20 is not allowed"},
      {"Europe\\Berlin", PAWL_EINVAL, "character 0x5c is not allowed"},
      {"Europe/Berlin\n", PAWL_EINVAL, "character 0x0a is not allowed"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    tz = NULL;
    err[0] = '\0';
    int rc = pawl__tz_get(bad[i].name, &tz, err, sizeof err);
    if (rc != bad[i].code || !strstr(err, bad[i].want) || strchr(err, '\n') || tz)
      unit_fail(__FILE__, __LINE__, "\"%s\": rc %d, message \"%s\", want \"%s\"",
                bad[i].name, rc, err, bad[i].want);
  }
  char longname[PAWL__TZ_NAME_MAX + 2];
  memset(longname, 'a', sizeof longname - 1);
  longname[sizeof longname - 1] = '\0';
  CHECK_INT(pawl__tz_get(longname, &tz, err, sizeof err), ==, PAWL_EINVAL);
  CHECK(strstr(err, "longer than 255"));

  /* $TZDIR replaces /usr/share/zoneinfo (the test's own process: the
   * library never sets it). A file that is not TZif is PAWL_EIO. */
  CHECK(mkdir("zones", 0700) == 0);
  CHECK(mkdir("zones/Test", 0700) == 0);
  zspec_t z = {0};
  z.version = '2';
  z.ntypes = 1;
  z.off[0] = 4 * 3600 + 30 * 60;
  z.footer = "<+0430>-4:30";
  img_t b = build(&z);
  FILE *f = fopen("zones/Test/Four_Thirty", "wb");
  CHECK(f && fwrite(b.d, 1, b.n, f) == b.n && fclose(f) == 0);
  f = fopen("zones/Test/Junk", "wb");
  CHECK(f && fputs("not a zone\n", f) >= 0 && fclose(f) == 0);
  char dir[4200];
  snprintf(dir, sizeof dir, "%s/zones", unit_tmpdir());
  CHECK(setenv("TZDIR", dir, 1) == 0);
  CHECK_OK(pawl__tz_get("Test/Four_Thirty", &tz, err, sizeof err));
  CHECK_INT(pawl__tz_offset(tz, 0), ==, 16200);
  CHECK_INT(pawl__tz_get("Test/Junk", &tz, err, sizeof err), ==, PAWL_EIO);
  CHECK(strstr(err, "time zone \"Test/Junk\": not a TZif file"));
  CHECK_INT(pawl__tz_get("Europe/Berlin", &tz, err, sizeof err), ==, PAWL_EINVAL);
  CHECK(strstr(err, dir));
  /* Unreadable: PAWL_EIO (root reads anything: skip that part then). */
  if (geteuid() != 0) {
    f = fopen("zones/Test/Locked", "wb");
    CHECK(f && fwrite(b.d, 1, b.n, f) == b.n && fclose(f) == 0);
    CHECK(chmod("zones/Test/Locked", 0) == 0);
    CHECK_INT(pawl__tz_get("Test/Locked", &tz, err, sizeof err), ==, PAWL_EIO);
    CHECK(strstr(err, "cannot open"));
  }
  unsetenv("TZDIR");
}

void test_tz_format(void) {
  const pawl__tz_t *tz;
  char err[PAWL__TZ_ERRLEN], out[PAWL__TZ_STRLEN];
  pawl__tz_format(pawl__tz_utc(), 0, out);
  CHECK_STR(out, "1970-01-01T00:00:00+00:00");
  pawl__tz_format(pawl__tz_utc(), -1, out);
  CHECK_STR(out, "1969-12-31T23:59:59.999+00:00");
  CHECK_OK(pawl__tz_get("Europe/Berlin", &tz, err, sizeof err));
  pawl__tz_format(tz, INT64_C(1774746000000), out);
  CHECK_STR(out, "2026-03-29T03:00:00+02:00");
  pawl__tz_format(tz, INT64_C(1774745999123), out);
  CHECK_STR(out, "2026-03-29T01:59:59.123+01:00");
  /* Local mean time has seconds in its offset (Berlin: +00:53:28). */
  pawl__tz_format(tz, iso_s("1890-01-01T00:00:00Z") * 1000, out);
  CHECK_STR(out, "1890-01-01T00:53:28+00:53:28");
  CHECK_OK(pawl__tz_get("America/St_Johns", &tz, err, sizeof err));
  pawl__tz_format(tz, iso_s("2026-01-15T12:00:00Z") * 1000, out);
  CHECK_STR(out, "2026-01-15T08:30:00-03:30");
  pawl__tz_format(pawl__tz_utc(), INT64_C(253402300800000), out);
  CHECK_STR(out, "+10000-01-01T00:00:00+00:00");
  /* The extremes stay within the buffer. */
  pawl__tz_format(tz, INT64_MAX, out);
  CHECK(strlen(out) < PAWL__TZ_STRLEN);
  pawl__tz_format(tz, INT64_MIN, out);
  CHECK(strlen(out) < PAWL__TZ_STRLEN);
}

/* Many threads asking for the same zones at once get one copy each. */
#define TZ_THREADS 8
static const char *const tz_thread_zones[] = {
    "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Tokyo",
    "Europe/London", "Pacific/Auckland", "America/Sao_Paulo", "Africa/Cairo"};
static const pawl__tz_t *tz_seen[TZ_THREADS][8];

static void *tz_thread(void *arg) {
  int k = (int)(intptr_t)arg;
  char err[PAWL__TZ_ERRLEN];
  for (int round = 0; round < 50; round++)
    for (int i = 0; i < 8; i++) {
      const pawl__tz_t *tz;
      int j = (i + k) % 8;
      if (pawl__tz_get(tz_thread_zones[j], &tz, err, sizeof err) != 0)
        return (void *)1;
      if (tz_seen[k][j] && tz_seen[k][j] != tz) return (void *)2;
      tz_seen[k][j] = tz;
      (void)pawl__tz_offset(tz, 1800000000 + round);
    }
  return NULL;
}

void test_tz_get_threads(void) {
  pthread_t th[TZ_THREADS];
  for (int i = 0; i < TZ_THREADS; i++)
    CHECK(pthread_create(&th[i], NULL, tz_thread, (void *)(intptr_t)i) == 0);
  for (int i = 0; i < TZ_THREADS; i++) {
    void *rc = (void *)9;
    CHECK(pthread_join(th[i], &rc) == 0);
    CHECK(rc == NULL);
  }
  for (int i = 1; i < TZ_THREADS; i++)
    for (int j = 0; j < 8; j++) CHECK(tz_seen[i][j] == tz_seen[0][j]);
}
