/* clock.h: the monotonic clock, for deadlines, timers and timed waits.
 *
 * Wall-clock time for decisions comes from the store (pawl_now()); this
 * one only measures durations, so that a clock stepped by NTP never makes
 * a timeout fire early or late. */
#ifndef PAWL_CLOCK_H
#define PAWL_CLOCK_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

/* Monotonic milliseconds (CLOCK_MONOTONIC), for deadlines and timers. */
int64_t pawl__mono_ms(void);

/* An absolute CLOCK_MONOTONIC time `ms` from now, for
 * pthread_cond_timedwait on a condition variable made by
 * pawl__cond_init_mono(). */
struct timespec pawl__mono_deadline(int64_t ms);

/* Initialises `c` to time its waits by the monotonic clock. */
void pawl__cond_init_mono(pthread_cond_t *c);

#endif
