/* bounds.h: the one checker of numbers that come from outside.
 *
 * Every entry point (the C API in api/pawl.c, the CLI, job code's pawl.*
 * calls in lua/host_fns.c, the Lua module) checks a number here before converting or
 * adding it: a double from Lua may be NaN, infinite, fractional or far
 * beyond int64 (converting those is undefined behaviour in C), and an
 * integer from C may be anything. The ranges are the PAWL_*_MAX constants
 * of pawl.h; the message names the value and its range. */
#ifndef PAWL_BOUNDS_H
#define PAWL_BOUNDS_H

#include <stddef.h>
#include <stdint.h>

/* Checks that `v` is finite, whole when `whole` is set, and within
 * [min, max] (`unit`, e.g. "seconds", or NULL, is named after the range).
 * Returns 0, or -1 with "WHAT must be ... (got V)" in err. */
int pawl__bounds_check(const char *what, double v, double min, double max,
                 int whole, const char *unit, char *err, size_t errlen);

/* The same for an integer. */
int pawl__bounds_check_int(const char *what, int64_t v, int64_t min, int64_t max,
                     const char *unit, char *err, size_t errlen);

/* *out = t + d when the sum is a time pawl stores (0..PAWL_TIME_MAX_MS);
 * -1 otherwise, an overflow included (*out is then untouched). */
int pawl__bounds_add_time(int64_t t, int64_t d, int64_t *out);

/* Reads a size in bytes: a whole number of bytes ("1048576"), or one with
 * a unit K, M, G or T (powers of 1024; "64M", "1G", "512KiB" and "64 MB"
 * read alike), within [min, max]. Returns 0 with *out set, or -1 with
 * "WHAT must be a size between MIN and MAX ... (got "TEXT")" in err. */
int pawl__bounds_size(const char *what, const char *text, int64_t min,
                      int64_t max, int64_t *out, char *err, size_t errlen);

/* The same check for a size given as a number of bytes. */
int pawl__bounds_size_num(const char *what, double v, int64_t min, int64_t max,
                          int64_t *out, char *err, size_t errlen);

/* Writes `bytes` the way people read it: "256 MiB", "1 GiB", "1536 KiB",
 * "1000 bytes" (the largest unit that divides it exactly). */
void pawl__bounds_size_text(int64_t bytes, char *buf, size_t len);

#endif
