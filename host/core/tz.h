/* tz.h: IANA time zones from the system's tzdata, and the civil calendar.
 *
 * A zone is loaded by name ("Europe/Berlin") from a TZif file (RFC 8536)
 * under /usr/share/zoneinfo, or under $TZDIR when that is set: the version 1
 * data, or the 64-bit version 2+ data and the POSIX TZ string in its footer,
 * which gives the rule for every instant after the file's last transition
 * (a "slim" file ends at the last rule change; a "fat" one in 2037). No
 * offsets are written by hand here, and nothing reads or changes $TZ, the
 * locale or the C library's time-zone state (localtime and setenv("TZ")
 * are neither thread-safe nor per zone).
 *
 * Loaded zones are immutable and cached for the life of the process, keyed
 * by file path: every pawl__tz_get() of the same name returns the same
 * pointer, from any thread, and callers never free it. "UTC" (and a NULL
 * name) is built in and needs no tzdata.
 *
 * Times here are int64 seconds since the Unix epoch (TZif's unit); offsets
 * are seconds east of UTC, within +-26 hours (RFC 8536's bound). A "wall"
 * or local time is instant + offset, in the same seconds, so that the civil
 * calendar below turns it into a date and a time of day. */
#ifndef PAWL_TZ_H
#define PAWL_TZ_H

#include <stddef.h>
#include <stdint.h>

typedef struct pawl__tz pawl__tz_t;

/* Longest zone name accepted. */
#define PAWL__TZ_NAME_MAX 255
/* Largest TZif file read (the biggest real one is a few KiB). */
#define PAWL__TZ_FILE_MAX (1 << 20)
/* Room for the message of a failed pawl__tz_get (longer ones are cut). */
#define PAWL__TZ_ERRLEN 512

/* A stretch of time with one UTC offset: the instants [start, end). */
typedef struct pawl__tz_span {
  int64_t start;       /* INT64_MIN: from the beginning of time */
  int64_t end;         /* INT64_MAX: for ever */
  int32_t offset;      /* seconds east of UTC inside the span */
  int32_t prev_offset; /* the offset just before start (== offset if none) */
  int32_t next_offset; /* the offset from end on (== offset if none) */
} pawl__tz_span_t;

/* The built-in UTC zone. Never NULL. */
const pawl__tz_t *pawl__tz_utc(void);

/* The zone called `name`, loaded and cached on first use: *out receives a
 * pointer valid for the life of the process (do not free it). NULL or
 * "UTC" give the built-in UTC. Thread-safe.
 *
 * Returns 0, or
 *   PAWL_EINVAL  a bad or unknown name: empty, longer than
 *                PAWL__TZ_NAME_MAX, starting with '/', with an empty, "."
 *                or ".." part, a character outside [A-Za-z0-9/_+-.], or no
 *                such file (a directory is no zone either);
 *   PAWL_EIO     the file exists but cannot be read or is not valid TZif
 *                (also: leap-second "right/" zones, not supported);
 *   PAWL_ENOMEM  out of memory.
 * On failure a one-line message naming the zone goes to err (errlen bytes,
 * may be 0), and *out is left untouched. */
int pawl__tz_get(const char *name, const pawl__tz_t **out, char *err,
                 size_t errlen);

/* Parses a TZif image (not cached, not named after a file): for tests and
 * for callers with their own data. The caller frees *out with
 * pawl__tz_free(). Same codes as pawl__tz_get, PAWL_EIO for bad data. */
int pawl__tz_parse(const char *name, const unsigned char *data, size_t len,
                   pawl__tz_t **out, char *err, size_t errlen);
/* Frees a zone from pawl__tz_parse (never one from pawl__tz_get). NULL is
 * a no-op. */
void pawl__tz_free(pawl__tz_t *tz);

/* The zone's name as given ("UTC" for the built-in one). Borrowed from the
 * zone. */
const char *pawl__tz_name(const pawl__tz_t *tz);

/* The span of constant offset that contains instant t (seconds). Instants
 * past the file's table follow its footer rule, computed on the fly for any
 * year. |t| beyond PAWL__TZ_T_MAX is treated as the bound itself. */
#define PAWL__TZ_T_MAX INT64_C(10000000000000) /* about 317,000 years */
void pawl__tz_span(const pawl__tz_t *tz, int64_t t, pawl__tz_span_t *out);

/* The UTC offset (seconds east) at instant t. */
int32_t pawl__tz_offset(const pawl__tz_t *tz, int64_t t);

/* Longest text pawl__tz_format writes, plus its NUL. */
#define PAWL__TZ_STRLEN 48

/* Writes instant `ms` (milliseconds since the epoch) as the zone's local
 * time with its offset, "2026-03-29T03:00:00+02:00" (".123" after the
 * seconds when ms has a fraction; "+00:53:28" when the offset has seconds,
 * as local mean times before 1900 do). */
void pawl__tz_format(const pawl__tz_t *tz, int64_t ms,
                     char out[PAWL__TZ_STRLEN]);

/* ---- the proleptic Gregorian calendar (Howard Hinnant's algorithms) ---- */

/* Days since 1970-01-01 of y-m-d (m 1-12, d 1-31; d may run past the
 * month, which counts on into the next). Exact for |y| < 2^40. */
int64_t pawl__days_from_civil(int64_t y, int m, int d);
/* The date of day z since 1970-01-01. */
void pawl__civil_from_days(int64_t z, int64_t *y, int *m, int *d);
/* 0 = Sunday ... 6 = Saturday, of day z since 1970-01-01. */
int pawl__weekday(int64_t z);
int pawl__is_leap(int64_t y);
/* Days in month m (1-12) of year y. */
int pawl__month_days(int64_t y, int m);

#endif
