/* uuid7.c: UUIDv7 ids (RFC 9562 section 5.7). See uuid7.h for the layout.
 *
 * Ordering: the timestamp and the 12-bit counter are taken together under
 * one mutex, so every id gets a (ms, counter) pair strictly greater than
 * that of any id whose generation finished before it started, on any
 * thread. The random tail comes after those 60 bits, so it can never undo
 * that order and needs no lock.
 *
 * Never waiting: when the clock reads the last ms handed out or an
 * earlier one (a stepped-back clock: NTP, a VM restored from a snapshot),
 * the id carries on from the last one instead of waiting for the clock to
 * catch up, as RFC 9562 section 6.2 allows: the counter goes up, and when
 * it is used up the timestamp moves on by one ms. So after a step back of
 * an hour ids keep coming at once, their timestamps a little ahead of the
 * clock (one ms per 4,096 ids) until it catches up. Before, every id (and
 * so every enqueue and pawl_open) waited out the hour. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* getrandom, clock_gettime */
#endif
#include "uuid7.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

/* Largest timestamp that fits the 48-bit field. */
#define UUID7_MS_MAX ((INT64_C(1) << 48) - 1)

static pthread_mutex_t uuid7_lock = PTHREAD_MUTEX_INITIALIZER;
/* Guarded by uuid7_lock. */
static uuid7_clock_fn uuid7_clock; /* NULL: CLOCK_REALTIME */
static void *uuid7_clock_data;
static int64_t uuid7_last_ms = -1; /* ms of the last id; -1: none yet */
static unsigned uuid7_counter;     /* counter of the last id */

static pthread_once_t uuid7_once = PTHREAD_ONCE_INIT;

/* fork() copies the lock as it is. If another thread held it at that
 * moment the child could never make an id, so hold it across the fork
 * ourselves and release it on both sides. */
static void uuid7_prefork(void) { pthread_mutex_lock(&uuid7_lock); }

static void uuid7_postfork(void) { pthread_mutex_unlock(&uuid7_lock); }

static void uuid7_init(void) {
  pthread_atfork(uuid7_prefork, uuid7_postfork, uuid7_postfork);
}

/* Caller holds uuid7_lock. */
static int64_t uuid7_now(void) {
  int64_t ms;
  if (uuid7_clock != NULL) {
    ms = uuid7_clock(uuid7_clock_data);
  } else {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
  }
  /* The field is unsigned 48 bits: a clock outside it (before 1970, after
   * year 10889) is broken, but must still yield ids rather than hang. */
  if (ms < 0) return 0;
  if (ms > UUID7_MS_MAX) return UUID7_MS_MAX;
  return ms;
}

/* Fallback for kernels or sandboxes (seccomp) without getrandom(2). */
/* Last resort when the kernel gives no randomness at all (a sandbox that
 * forbids both getrandom and /dev/urandom): bits mixed from the pid, the
 * thread, two clocks and a process-wide counter through splitmix64. Weaker
 * than a CSPRNG, but ids stay unique within the process (timestamp and
 * counter see to that) and very likely across processes, and pawl never
 * aborts on a job's path. */
static void uuid7_fallback(uint8_t *buf, size_t len) {
  static _Atomic uint64_t calls;
  struct timespec mono, real;
  clock_gettime(CLOCK_MONOTONIC, &mono);
  clock_gettime(CLOCK_REALTIME, &real);
  uint64_t x = (uint64_t)getpid() << 32 ^ (uint64_t)(uintptr_t)pthread_self() ^
               (uint64_t)mono.tv_nsec << 20 ^ (uint64_t)real.tv_sec ^
               (uint64_t)real.tv_nsec ^ atomic_fetch_add(&calls, 1) * 0x9e3779b97f4a7c15u;
  for (size_t i = 0; i < len; i++) {
    if (i % 8 == 0) {
      x += 0x9e3779b97f4a7c15u;
      uint64_t z = x;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
      x ^= z ^ (z >> 31);
    }
    buf[i] = (uint8_t)(x >> (8 * (i % 8)));
  }
}

/* Returns 0 when `len` bytes were read from /dev/urandom. */
static int uuid7_urandom(uint8_t *buf, size_t len) {
  int fd;
  do {
    fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return -1;
  size_t got = 0;
  while (got < len) {
    ssize_t n = read(fd, buf + got, len - got);
    if (n > 0)
      got += (size_t)n;
    else if (n < 0 && errno == EINTR)
      continue;
    else
      break;
  }
  close(fd);
  return got == len ? 0 : -1;
}

/* Fills `buf` from the kernel CSPRNG. Fresh bytes on every call, never a
 * buffer kept in the process: a buffer would be copied by fork() and parent
 * and child would hand out the same "random" tails. */
static void uuid7_random(uint8_t *buf, size_t len) {
  size_t got = 0;
  while (got < len) {
    ssize_t n = getrandom(buf + got, len - got, 0);
    if (n > 0) {
      got += (size_t)n;
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      if (uuid7_urandom(buf + got, len - got) != 0)
        uuid7_fallback(buf + got, len - got);
      return;
    }
  }
}

void pawl__uuid7_set_clock(uuid7_clock_fn fn, void *data) {
  pthread_mutex_lock(&uuid7_lock);
  uuid7_clock = fn;
  uuid7_clock_data = data;
  uuid7_last_ms = -1;
  uuid7_counter = 0;
  pthread_mutex_unlock(&uuid7_lock);
}

void pawl_id_new(pawl_id_t *out) {
  uint8_t rnd[8];
  int64_t ms;
  unsigned counter;

  pthread_once(&uuid7_once, uuid7_init);
  /* Outside the lock: the system call is the slow part, and the tail plays
   * no part in ordering. */
  uuid7_random(rnd, sizeof rnd);

  pthread_mutex_lock(&uuid7_lock);
  int64_t now = uuid7_now();
  if (now > uuid7_last_ms) {
    uuid7_last_ms = now;
    uuid7_counter = 0;
  } else if (uuid7_counter < UUID7_COUNTER_MAX) {
    /* Same ms, or the clock went back: carry on from the last id. */
    uuid7_counter++;
  } else if (uuid7_last_ms < UUID7_MS_MAX) {
    /* Counter used up: the next ms, a little ahead of the clock. */
    uuid7_last_ms++;
    uuid7_counter = 0;
  }
  /* else: the end of the 48-bit field (year 10889) with its counter used
   * up; ids stay unique by their random tail, no longer strictly ordered. */
  ms = uuid7_last_ms;
  counter = uuid7_counter;
  pthread_mutex_unlock(&uuid7_lock);

  uint64_t t = (uint64_t)ms;
  for (int i = 0; i < 6; i++) out->bytes[i] = (uint8_t)(t >> (40 - 8 * i));
  out->bytes[6] = (uint8_t)(0x70 | (counter >> 8));
  out->bytes[7] = (uint8_t)(counter & 0xff);
  out->bytes[8] = (uint8_t)(0x80 | (rnd[0] & 0x3f));
  memcpy(out->bytes + 9, rnd + 1, 7);
}

/* Text positions of the four dashes in "8-4-4-4-12". */
static int uuid7_is_dash_pos(int i) {
  return i == 8 || i == 13 || i == 18 || i == 23;
}

void pawl_id_format(const pawl_id_t *id, char out[PAWL_ID_STRLEN]) {
  static const char hex[] = "0123456789abcdef";
  int b = 0;
  for (int i = 0; i < PAWL_ID_STRLEN - 1; i++) {
    if (uuid7_is_dash_pos(i)) {
      out[i] = '-';
      continue;
    }
    out[i++] = hex[id->bytes[b] >> 4];
    out[i] = hex[id->bytes[b] & 0x0f];
    b++;
  }
  out[PAWL_ID_STRLEN - 1] = '\0';
}

static int uuid7_hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

int pawl_id_parse(pawl_id_t *out, const char *text) {
  pawl_id_t id;
  int b = 0;
  if (out == NULL || text == NULL) return PAWL_EINVAL;
  /* Every check fails on a NUL, so a short string is rejected before we
   * read past its end. Groups have even lengths, so a byte's two digits
   * never straddle a dash. */
  for (int i = 0; i < PAWL_ID_STRLEN - 1; i++) {
    if (uuid7_is_dash_pos(i)) {
      if (text[i] != '-') return PAWL_EINVAL;
      continue;
    }
    int hi = uuid7_hexval(text[i]);
    if (hi < 0) return PAWL_EINVAL;
    int lo = uuid7_hexval(text[++i]);
    if (lo < 0) return PAWL_EINVAL;
    id.bytes[b++] = (uint8_t)(hi << 4 | lo);
  }
  if (text[PAWL_ID_STRLEN - 1] != '\0') return PAWL_EINVAL;
  /* Only now: a failed parse leaves *out untouched. */
  *out = id;
  return PAWL_OK;
}

int64_t pawl_id_time_ms(const pawl_id_t *id) {
  uint64_t t = 0;
  for (int i = 0; i < 6; i++) t = t << 8 | id->bytes[i];
  return (int64_t)t;
}
