/* bounds.c: the one checker of numbers from outside; see bounds.h. */
#include "bounds.h"

#include <math.h>
#include <stdio.h>

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
