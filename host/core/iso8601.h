/* iso8601.h: UTC timestamps as ISO 8601 / RFC 3339 text, both ways.
 *
 * pawl stores times as int64 milliseconds since the Unix epoch; people and
 * tools read and write them as text. Both directions are pure arithmetic on
 * the proleptic Gregorian calendar: nothing here reads the locale, $TZ or the
 * C library's time-zone state, so the same input gives the same output on
 * every machine and in every thread. */
#ifndef PAWL_ISO8601_H
#define PAWL_ISO8601_H

#include <stdint.h>

/* Longest text pawl__iso8601_format() writes, plus its NUL. */
#define ISO8601_STRLEN 32

/* Writes `ms` as UTC with milliseconds, "2026-11-21T21:05:03.123Z", and a
 * NUL into `out`. Times before the epoch work (floor division); years
 * outside 0000-9999 are written with as many digits as they need (and a '-'
 * before year 0), which still fits the buffer for every int64 value. */
void pawl__iso8601_format(int64_t ms, char out[ISO8601_STRLEN]);

/* Parses one timestamp, the whole string, into *ms (ms since the epoch):
 *
 *   YYYY-MM-DD                              midnight UTC
 *   YYYY-MM-DDTHH:MM:SS[.f...]Z             UTC
 *   YYYY-MM-DDTHH:MM:SS[.f...]+HH:MM        with an offset (or -HH:MM)
 *
 * 'T' may also be a space or 't', 'Z' also 'z' (RFC 3339 section 5.6). The
 * fraction has 1 to 9 digits; digits past milliseconds are dropped
 * (truncated, never rounded into the next second). A time needs its zone:
 * local time is refused rather than guessed. Fields are range-checked
 * (month 1-12, day within the month with leap years, hour 0-23, minute
 * 0-59, second 0-60 for a leap second, offset up to 23:59). Returns 0, or
 * -1 leaving *ms untouched. */
int pawl__iso8601_parse(const char *s, int64_t *ms);

#endif
