/* cron.h: cron expressions and their fire times in a time zone.
 *
 * The syntax and every rule are in docs/scheduling.md, "Cron expressions": 5 fields
 * (minute hour day-of-month month day-of-week) or 6 with a leading second;
 * `*`, lists, ranges, steps, month and weekday names, `L`, `L-n`, `nW`,
 * `LW`, `d#n`, `dL`, `?`, the @macros; day-of-month and day-of-week OR-ed
 * when both are restricted (Vixie cron).
 *
 * A parsed expression is a small value (no pointers, nothing to free): it
 * can be copied, stored in another struct, and shared between threads
 * read-only. Computing a fire time allocates nothing and is bounded: the
 * search jumps field by field (month, day, hour, minute, second), never
 * minute by minute, and an expression that can never fire is refused by
 * pawl__cron_parse.
 *
 * Fire times follow the zone's wall clock with these daylight-saving rules
 * (docs/scheduling.md, "Daylight-saving time"):
 *  - A *wall-clock* expression (at most one second and one minute an hour,
 *    and not every hour: `30 2 * * *`, `0 9,17 * * MON-FRI`) fires once per
 *    matching local time: a time that happens twice (fall back) at its
 *    first occurrence; a time that does not exist (spring forward) at the
 *    first instant after the gap.
 *  - An *interval* expression (more than one minute or second an hour, or
 *    every hour: every 15 minutes, `0 * * * *`, `0-59 30 2 * * *`) fires at
 *    every real instant whose wall time matches: twice in a repeated hour,
 *    never in a gap; so it keeps its pace in real time.
 *
 * Instants are int64 milliseconds since the Unix epoch (as everywhere in
 * pawl); fire times are whole seconds. */
#ifndef PAWL_CRON_H
#define PAWL_CRON_H

#include <stddef.h>
#include <stdint.h>

#include "tz.h"

/* Longest expression text accepted. */
#define PAWL__CRON_TEXT_MAX 1024
/* Room for a parse error message (a longer one is cut). */
#define PAWL__CRON_ERRLEN 256

/* The instants pawl__cron_next works between: 0001-01-01T00:00:00Z to
 * 9999-12-31T23:59:59Z. */
#define PAWL__CRON_MIN_MS INT64_C(-62135596800000)
#define PAWL__CRON_MAX_MS INT64_C(253402300799000)

/* A parsed expression. Every set is a bitset, so matching a field is one
 * AND and finding the next value one count-trailing-zeros. */
typedef struct pawl__cron {
  uint64_t seconds; /* bit s: second s (0-59); {0} for 5 fields */
  uint64_t minutes; /* bit m: minute m (0-59) */
  uint32_t hours;   /* bit h: hour h (0-23) */
  uint16_t months;  /* bit m: month m (1-12) */
  uint8_t interval; /* 1: an interval expression (see above) */
  uint8_t fields;   /* 5 or 6, as written (a macro counts as 5) */
  /* The days that match, day-of-month and day-of-week already combined
   * (with L, W, # and the Vixie OR): bit d (1-31) of
   * days[w][len - 28] is day d of a month of `len` days whose 1st is
   * weekday w (0 = Sunday). A month's days depend on nothing else. */
  uint32_t days[7][4];
} pawl__cron_t;

/* Parses `text` into *out. Returns 0, or PAWL_EINVAL with a one-line
 * message in err (errlen bytes, may be 0) that names the field and the
 * value:
 *   "day-of-month: 32 is out of range 1-31"
 *   "month: unknown month name FOO"
 *   "expected 5 or 6 fields, got 4"
 *   "never fires: day-of-month 30 does not occur in month 2"
 * An expression that can never fire (`0 0 30 2 *`, `0 0 31 4,6 *`) is
 * refused here, exactly: the check covers every month length and weekday
 * of the 1st, so whatever passes fires within any 400 years. *out is
 * written only on success. Thread-safe. */
int pawl__cron_parse(const char *text, pawl__cron_t *out, char *err,
                     size_t errlen);

/* The first fire time strictly after `after_ms`, in zone tz (NULL: UTC),
 * into *out_ms. Allocates nothing; its work is bounded: a few span
 * lookups in the zone and a field-by-field search that takes one step per
 * month of the month field it passes (at most 401 years of them, by the
 * parse check; about 40 for the rarest expression, `0 0 ? 2 MON#5`; one or
 * two for common ones), then at most two days, each a bit scan.
 *
 * Returns 0, or
 *   PAWL_EINVAL     after_ms outside [PAWL__CRON_MIN_MS, PAWL__CRON_MAX_MS];
 *   PAWL_ENOTFOUND  no fire time up to PAWL__CRON_MAX_MS (the end of year
 *                   9999), or - only in a zone whose transitions swallow
 *                   every matching time, which no real zone does - none
 *                   within the search's bound.
 * *out_ms is written only on success. Thread-safe. */
int pawl__cron_next(const pawl__cron_t *c, const pawl__tz_t *tz,
                    int64_t after_ms, int64_t *out_ms);

/* The fire times in (after_ms, until_ms], oldest first, at most max of
 * them, into out[0..*n). This is what a ticker asks after a downtime: with
 * `last` the last fire it handled and `now` the clock,
 *
 *     pawl__cron_between(c, tz, last, now, buf, limit, &n)
 *
 * gives the missed occurrences oldest first (catch_up enqueues them all,
 * run_once only buf[0]), and pawl__cron_next(c, tz, now, &next) where to
 * schedule the definition next (the misses past `limit` are skipped; to
 * keep catching up instead, continue from buf[n - 1]). Its cost is n + 1
 * pawl__cron_next calls, whatever the length of the downtime: nothing
 * scans the interval.
 *
 * Returns 0 (also when *n is 0: nothing due), or PAWL_EINVAL for an
 * after_ms out of range. until_ms past PAWL__CRON_MAX_MS is the same as
 * that bound. */
int pawl__cron_between(const pawl__cron_t *c, const pawl__tz_t *tz,
                       int64_t after_ms, int64_t until_ms, int64_t *out,
                       size_t max, size_t *n);

/* 1 if local wall time `wall` (seconds since the epoch of the zone's wall
 * clock, i.e. instant + offset) matches the expression, else 0. Pure
 * calendar matching, no daylight-saving rules; for tests and tools. */
int pawl__cron_matches_wall(const pawl__cron_t *c, int64_t wall);

#endif
