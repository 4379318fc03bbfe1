/* iso8601.c: UTC timestamps as text; see iso8601.h.
 *
 * The calendar arithmetic is core/tz.c's (Howard Hinnant's days_from_civil /
 * civil_from_days, "chrono-Compatible Low-Level Date Algorithms"): exact for
 * the proleptic Gregorian calendar over the whole int64 range we need, with
 * no tables and no calls into the C library's time functions, whose results
 * depend on $TZ and are not all thread-safe. */
#include "iso8601.h"

#include "tz.h"

#define ISO8601_MS_PER_DAY INT64_C(86400000)

static int iso8601_leap(int64_t y) {
  return y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
}

static int iso8601_month_days(int64_t y, int m) {
  static const int days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && iso8601_leap(y) ? 29 : days[m - 1];
}

/* Writes v as exactly `width` decimal digits (zero-padded), then `sep`;
 * returns the position after them. */
static char *iso8601_put(char *o, uint64_t v, int width, char sep) {
  for (int i = width - 1; i >= 0; i--) {
    o[i] = (char)('0' + v % 10);
    v /= 10;
  }
  o[width] = sep;
  return o + width + 1;
}

void pawl__iso8601_format(int64_t ms, char out[ISO8601_STRLEN]) {
  /* Floor division, so that times before the epoch count down from the
   * previous midnight instead of up from the next one. */
  int64_t days = ms / ISO8601_MS_PER_DAY;
  int64_t rem = ms % ISO8601_MS_PER_DAY;
  if (rem < 0) {
    rem += ISO8601_MS_PER_DAY;
    days--;
  }
  int64_t y;
  int m, d;
  pawl__civil_from_days(days, &y, &m, &d);
  /* Year 0000-9999 is the ISO 8601 basic range; beyond it, expanded years
   * keep their digits and a sign for years before 0 (year -1 is 2 BC). The
   * digits are written by hand: the widths are known here, and snprintf's
   * truncation checks cannot see the ranges of the fields. */
  char *o = out;
  uint64_t year = y < 0 ? (uint64_t)0 - (uint64_t)y : (uint64_t)y;
  if (y < 0) *o++ = '-';
  int ydigits = 4;
  for (uint64_t v = year / 10000; v > 0; v /= 10) ydigits++;
  o = iso8601_put(o, year, ydigits, '-');
  o = iso8601_put(o, (uint64_t)m, 2, '-');
  o = iso8601_put(o, (uint64_t)d, 2, 'T');
  o = iso8601_put(o, (uint64_t)(rem / 3600000), 2, ':');
  o = iso8601_put(o, (uint64_t)(rem / 60000 % 60), 2, ':');
  o = iso8601_put(o, (uint64_t)(rem / 1000 % 60), 2, '.');
  o = iso8601_put(o, (uint64_t)(rem % 1000), 3, 'Z');
  *o = '\0';
}

/* Reads exactly n ASCII digits (never the locale's idea of a digit). */
static int iso8601_digits(const char **p, int n, int *out) {
  int v = 0;
  for (int i = 0; i < n; i++) {
    char c = (*p)[i];
    if (c < '0' || c > '9') return -1;
    v = v * 10 + (c - '0');
  }
  *p += n;
  *out = v;
  return 0;
}

static int iso8601_expect(const char **p, char c) {
  if (**p != c) return -1;
  (*p)++;
  return 0;
}

int pawl__iso8601_parse(const char *s, int64_t *ms) {
  if (!s) return -1;
  const char *p = s;
  int y, mo, d, hh = 0, mi = 0, ss = 0, frac_ms = 0, off_min = 0;
  if (iso8601_digits(&p, 4, &y) || iso8601_expect(&p, '-') ||
      iso8601_digits(&p, 2, &mo) || iso8601_expect(&p, '-') ||
      iso8601_digits(&p, 2, &d))
    return -1;
  if (mo < 1 || mo > 12 || d < 1 || d > iso8601_month_days(y, mo)) return -1;
  if (*p != '\0') {
    if (*p != 'T' && *p != 't' && *p != ' ') return -1;
    p++;
    if (iso8601_digits(&p, 2, &hh) || iso8601_expect(&p, ':') ||
        iso8601_digits(&p, 2, &mi) || iso8601_expect(&p, ':') ||
        iso8601_digits(&p, 2, &ss))
      return -1;
    if (hh > 23 || mi > 59 || ss > 60) return -1;
    if (*p == '.') {
      p++;
      int n = 0, scale = 100;
      for (; *p >= '0' && *p <= '9'; p++, n++) {
        if (n < 3) frac_ms += (*p - '0') * scale;
        scale /= 10;
      }
      if (n < 1 || n > 9) return -1;
    }
    if (*p == 'Z' || *p == 'z') {
      p++;
    } else if (*p == '+' || *p == '-') {
      int neg = *p == '-', oh, om;
      p++;
      if (iso8601_digits(&p, 2, &oh) || iso8601_expect(&p, ':') ||
          iso8601_digits(&p, 2, &om))
        return -1;
      if (oh > 23 || om > 59) return -1;
      off_min = (neg ? -1 : 1) * (oh * 60 + om);
    } else {
      return -1; /* no zone: refuse to guess local time */
    }
    if (*p != '\0') return -1;
  }
  /* A leap second (ss == 60) lands on the first ms of the next minute: the
   * epoch count has no slot for it, and this keeps the order right. */
  int64_t days = pawl__days_from_civil(y, mo, d);
  int64_t secs = days * 86400 + hh * 3600 + mi * 60 + ss - off_min * 60;
  *ms = secs * 1000 + frac_ms;
  return 0;
}
