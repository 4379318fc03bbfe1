/* uuid7.h: UUIDv7 generation (RFC 9562 section 5.7), internals.
 *
 * The public functions (pawl_id_new, pawl_id_format, pawl_id_parse,
 * pawl_id_time_ms) are declared in pawl.h. Layout of an id made here:
 *
 *   bytes 0-5   48-bit Unix ms timestamp, big-endian
 *   byte  6     version 7 in the high nibble, counter bits 11-8 below it
 *   byte  7     counter bits 7-0
 *   byte  8     variant 10 in the top two bits, 6 random bits
 *   bytes 9-15  56 random bits
 *
 * The 12-bit rand_a field is a per-millisecond counter (RFC 9562 method 1,
 * "fixed bit-length dedicated counter") starting at 0 in each new ms, so
 * timestamp + counter is unique and strictly increasing across the process
 * and memcmp order is generation order. A clock that stands still or steps
 * back never makes pawl_id_new wait: the id carries on from the last one
 * (the counter, then the timestamp by one ms; RFC 9562 section 6.2). */
#ifndef PAWL_UUID7_H
#define PAWL_UUID7_H

#include <stdint.h>

#include "pawl.h"

/* Highest value of the per-millisecond counter (12 bits). */
#define UUID7_COUNTER_MAX 4095

/* A wall clock in Unix ms. */
typedef int64_t (*uuid7_clock_fn)(void *data);

/* Test seam: makes every later pawl_id_new read `fn(data)` instead of
 * CLOCK_REALTIME; NULL restores the real clock. Process-wide. It also resets
 * the sequence (last ms and counter), because the ids of one clock are not
 * ordered against those of another: without the reset, a test clock behind
 * the previous one would only carry on the previous clock's sequence. `fn` may be called
 * from any thread that makes an id, under an internal lock, so it must be
 * thread-safe and must not make ids itself. */
void pawl__uuid7_set_clock(uuid7_clock_fn fn, void *data);

#endif
