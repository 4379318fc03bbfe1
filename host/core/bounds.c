/* bounds.c: the one checker of numbers from outside; see bounds.h. */
#include "bounds.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "pawl.h"

/* "WHAT must be KIND between MIN and MAX UNIT (got GOT)". */
static void bounds_fail(const char *what, const char *kind, double min,
                        double max, const char *unit, const char *got,
                        char *err, size_t errlen) {
  snprintf(err, errlen, "%s must be %s between %.16g and %.16g%s%s (got %s)",
           what, kind, min, max, unit ? " " : "", unit ? unit : "", got);
}

int pawl__bounds_check(const char *what, double v, double min, double max,
                 int whole, const char *unit, char *err, size_t errlen) {
  /* !(v >= min) also catches NaN. */
  if (isfinite(v) && v >= min && v <= max && (!whole || v == floor(v)))
    return 0;
  char got[40];
  /* 16 digits: exact for every integer up to 2^53, short for 0.1. NaN
   * prints without the sign some libcs give it. */
  if (isnan(v))
    snprintf(got, sizeof got, "nan");
  else
    snprintf(got, sizeof got, "%.16g", v);
  bounds_fail(what, whole ? "a whole number" : "a number", min, max, unit,
              got, err, errlen);
  return -1;
}

int pawl__bounds_check_int(const char *what, int64_t v, int64_t min, int64_t max,
                     const char *unit, char *err, size_t errlen) {
  if (v >= min && v <= max) return 0;
  char got[32];
  snprintf(got, sizeof got, "%lld", (long long)v);
  snprintf(err, errlen, "%s must be between %lld and %lld%s%s (got %s)", what,
           (long long)min, (long long)max, unit ? " " : "", unit ? unit : "",
           got);
  return -1;
}

int pawl__bounds_add_time(int64_t t, int64_t d, int64_t *out) {
  int64_t sum;
  if (__builtin_add_overflow(t, d, &sum) || sum < 0 || sum > PAWL_TIME_MAX_MS)
    return -1;
  *out = sum;
  return 0;
}

void pawl__bounds_size_text(int64_t bytes, char *buf, size_t len) {
  static const char *const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  int64_t v = bytes;
  while (u < 4 && v != 0 && v % 1024 == 0) {
    v /= 1024;
    u++;
  }
  snprintf(buf, len, "%lld %s", (long long)v, units[u]);
}

/* "WHAT must be a size between MIN and MAX (...) (got GOT)". */
static int bounds_size_fail(const char *what, int64_t min, int64_t max,
                            const char *got, char *err, size_t errlen) {
  char lo[32], hi[32];
  pawl__bounds_size_text(min, lo, sizeof lo);
  pawl__bounds_size_text(max, hi, sizeof hi);
  snprintf(err, errlen,
           "%s must be a size between %s and %s: bytes, or a number with K, "
           "M, G or T (\"64M\", \"1G\") (got %s)",
           what, lo, hi, got);
  return -1;
}

int pawl__bounds_size(const char *what, const char *text, int64_t min,
                      int64_t max, int64_t *out, char *err, size_t errlen) {
  char got[64];
  snprintf(got, sizeof got, "\"%.40s%s\"", text, strlen(text) > 40 ? "..." : "");
  const char *p = text;
  int64_t v = 0;
  int digits = 0;
  for (; *p >= '0' && *p <= '9'; p++, digits++) {
    /* Past the largest bound: out of range whatever follows. */
    if (v > (INT64_C(1) << 50)) return bounds_size_fail(what, min, max, got, err, errlen);
    v = v * 10 + (*p - '0');
  }
  if (!digits) return bounds_size_fail(what, min, max, got, err, errlen);
  if (*p == ' ') p++;
  int shift = 0;
  switch (*p) {
  case 'k': case 'K': shift = 10; break;
  case 'm': case 'M': shift = 20; break;
  case 'g': case 'G': shift = 30; break;
  case 't': case 'T': shift = 40; break;
  default: break;
  }
  if (shift) {
    p++;
    if (*p == 'i') p++;
    if (*p == 'B' || *p == 'b') p++;
  } else if (*p == 'B' || *p == 'b') {
    p++;
  }
  if (*p != '\0' || (shift && v > (INT64_MAX >> shift)))
    return bounds_size_fail(what, min, max, got, err, errlen);
  v <<= shift;
  if (v < min || v > max) return bounds_size_fail(what, min, max, got, err, errlen);
  *out = v;
  return 0;
}

int pawl__bounds_size_num(const char *what, double v, int64_t min, int64_t max,
                          int64_t *out, char *err, size_t errlen) {
  if (isfinite(v) && v == floor(v) && v >= (double)min && v <= (double)max) {
    *out = (int64_t)v;
    return 0;
  }
  char got[40];
  if (isnan(v))
    snprintf(got, sizeof got, "nan");
  else
    snprintf(got, sizeof got, "%.16g", v);
  return bounds_size_fail(what, min, max, got, err, errlen);
}
