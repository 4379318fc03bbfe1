/* test_uuid7.c: UUIDv7 ids (host/core/uuid7.c).
 *
 * Tests that need a particular time inject a clock through pawl__uuid7_set_clock.
 * Its value is an atomic because the generator reads it from whichever
 * thread makes an id while the test thread moves it. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* nanosleep, clock_gettime under -std=c11 */
#endif
#include <ctype.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>

#include "unit.h"
#include "uuid7.h"

/* ---- helpers ------------------------------------------------------------ */

struct uuid7_tclock {
  _Atomic int64_t now;
  atomic_long polls; /* how often the generator read the clock */
};

static int64_t uuid7_tclock_fn(void *data) {
  struct uuid7_tclock *c = data;
  atomic_fetch_add(&c->polls, 1);
  return atomic_load(&c->now);
}

static void uuid7_tclock_start(struct uuid7_tclock *c, int64_t now) {
  atomic_init(&c->now, now);
  atomic_init(&c->polls, 0);
  pawl__uuid7_set_clock(uuid7_tclock_fn, c);
}

static int64_t uuid7_wall_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static unsigned uuid7_version(const pawl_id_t *id) { return id->bytes[6] >> 4; }

static unsigned uuid7_variant(const pawl_id_t *id) { return id->bytes[8] >> 6; }

/* The 12-bit rand_a field, which the generator uses as its counter. */
static unsigned uuid7_counter_of(const pawl_id_t *id) {
  return (unsigned)(id->bytes[6] & 0x0f) << 8 | id->bytes[7];
}

static int uuid7_cmp(const pawl_id_t *a, const pawl_id_t *b) {
  return memcmp(a->bytes, b->bytes, sizeof a->bytes);
}

/* Checks the fixed bits and that the timestamp is `ms`. */
#define CHECK_V7(id, ms)                                                     \
  do {                                                                       \
    CHECK_INT(uuid7_version(&(id)), ==, 7);                                  \
    CHECK_INT(uuid7_variant(&(id)), ==, 2);                                  \
    CHECK_INT(pawl_id_time_ms(&(id)), ==, (ms));                             \
  } while (0)

/* ---- layout ------------------------------------------------------------- */

void test_uuid7_layout(void) {
  const int64_t t = INT64_C(0x0123456789ab);
  struct uuid7_tclock c;
  uuid7_tclock_start(&c, t);

  pawl_id_t ids[3];
  for (unsigned i = 0; i < 3; i++) {
    pawl_id_new(&ids[i]);
    CHECK_V7(ids[i], t);
    CHECK_INT(uuid7_counter_of(&ids[i]), ==, i);
    /* The timestamp is big-endian in the first six bytes. */
    static const uint8_t be[6] = {0x01, 0x23, 0x45, 0x67, 0x89, 0xab};
    CHECK(memcmp(ids[i].bytes, be, 6) == 0);
    if (i > 0) CHECK(uuid7_cmp(&ids[i - 1], &ids[i]) < 0);
  }
  /* 62 random bits each: equal tails would mean the tail is not random. */
  CHECK(memcmp(ids[0].bytes + 8, ids[1].bytes + 8, 8) != 0);
  CHECK(memcmp(ids[1].bytes + 8, ids[2].bytes + 8, 8) != 0);

  /* A new ms starts the counter again at 0. */
  atomic_store(&c.now, t + 1);
  pawl_id_t next;
  pawl_id_new(&next);
  CHECK_V7(next, t + 1);
  CHECK_INT(uuid7_counter_of(&next), ==, 0);
  CHECK(uuid7_cmp(&ids[2], &next) < 0);

  /* The real clock: the timestamp is the wall clock during the call. */
  pawl__uuid7_set_clock(NULL, NULL);
  int64_t before = uuid7_wall_ms();
  pawl_id_t real;
  pawl_id_new(&real);
  int64_t after = uuid7_wall_ms();
  CHECK_INT(uuid7_version(&real), ==, 7);
  CHECK_INT(uuid7_variant(&real), ==, 2);
  CHECK_INT(pawl_id_time_ms(&real), >=, before);
  CHECK_INT(pawl_id_time_ms(&real), <=, after);
}

/* ---- threads: uniqueness and global order ------------------------------- */

#define UUID7_THREADS 4
#define UUID7_PER_THREAD 250000

/* One id and the interval of its generation on a global sequence:
 * `start` is read before pawl_id_new, `end` is the value the thread's
 * increment replaced after it. Another id whose `start` exceeds this `end`
 * read our increment (or a later one), so its generation began after ours
 * had finished: it must compare greater. */
struct uuid7_rec {
  pawl_id_t id;
  uint64_t start, end;
};

static atomic_uint_fast64_t uuid7_seq;

static void *uuid7_worker(void *arg) {
  struct uuid7_rec *r = arg;
  for (size_t i = 0; i < UUID7_PER_THREAD; i++) {
    r[i].start = atomic_load(&uuid7_seq);
    int64_t before = uuid7_wall_ms();
    pawl_id_new(&r[i].id);
    int64_t after = uuid7_wall_ms();
    r[i].end = atomic_fetch_add(&uuid7_seq, 1);
    /* Never behind the call. Ahead of the wall clock only by running out
     * of counter: when more than 4,096 ids are made in one ms, the next
     * one takes the next ms (uuid7.c, "Never waiting"), so the lead is at
     * most one ms per 4,096 ids made so far. Four threads on a fast
     * machine do make that many in a ms. */
    int64_t ms = pawl_id_time_ms(&r[i].id);
    CHECK_INT(ms, >=, before);
    CHECK_INT(ms, <=, after + (int64_t)(r[i].end / 4096) + 1);
  }
  return NULL;
}

static int uuid7_rec_cmp(const void *a, const void *b) {
  return uuid7_cmp(&((const struct uuid7_rec *)a)->id,
                   &((const struct uuid7_rec *)b)->id);
}

void test_uuid7_threads_unique_ordered(void) {
  const size_t n = (size_t)UUID7_THREADS * UUID7_PER_THREAD;
  struct uuid7_rec *recs = calloc(n, sizeof *recs);
  CHECK(recs != NULL);
  atomic_init(&uuid7_seq, 0);

  pthread_t th[UUID7_THREADS];
  for (int t = 0; t < UUID7_THREADS; t++)
    CHECK_INT(pthread_create(&th[t], NULL, uuid7_worker,
                             recs + (size_t)t * UUID7_PER_THREAD),
              ==, 0);
  for (int t = 0; t < UUID7_THREADS; t++)
    CHECK_INT(pthread_join(th[t], NULL), ==, 0);

  /* Each thread's ids in the order it made them. */
  for (int t = 0; t < UUID7_THREADS; t++) {
    const struct uuid7_rec *r = recs + (size_t)t * UUID7_PER_THREAD;
    for (size_t i = 0; i < UUID7_PER_THREAD; i++) {
      CHECK_INT(uuid7_version(&r[i].id), ==, 7);
      CHECK_INT(uuid7_variant(&r[i].id), ==, 2);
      if (i > 0) CHECK(uuid7_cmp(&r[i - 1].id, &r[i].id) < 0);
    }
  }

  /* Unique: strictly increasing once sorted. Not just thanks to the random
   * tail: timestamp + counter (the first 8 bytes) must be unique too. */
  qsort(recs, n, sizeof *recs, uuid7_rec_cmp);
  for (size_t i = 1; i < n; i++)
    CHECK(memcmp(recs[i - 1].id.bytes, recs[i].id.bytes, 8) < 0);

  /* Global order, every pair at once: walking the ids in memcmp order, no id
   * may have finished (end) before the start of an id that sorts below it.
   * So each `end` must be >= every `start` seen so far. */
  uint64_t max_start = 0;
  for (size_t i = 0; i < n; i++) {
    if (i > 0 && recs[i].end < max_start)
      unit_fail(__FILE__, __LINE__,
                "id #%zu (end %llu) sorts above an id started at %llu", i,
                (unsigned long long)recs[i].end,
                (unsigned long long)max_start);
    if (recs[i].start > max_start) max_start = recs[i].start;
  }
  CHECK_INT(atomic_load(&uuid7_seq), ==, n);
  free(recs);
}

/* ---- hand-off between threads ------------------------------------------- */

/* Threads take turns: each waits for its turn (acquire), reads the id the
 * previous thread published, makes one and checks it is greater, publishes
 * it and passes the turn on (release). Every id is thus made strictly after
 * the previous one, on another thread. */
#define UUID7_HANDOFF_THREADS 3
#define UUID7_HANDOFF_ROUNDS 10000

struct uuid7_handoff {
  atomic_int turn;
  pawl_id_t slot; /* written only by the thread holding the turn */
};

struct uuid7_player {
  struct uuid7_handoff *h;
  int me;
};

static void *uuid7_player_run(void *arg) {
  struct uuid7_player *p = arg;
  struct uuid7_handoff *h = p->h;
  for (int r = 0; r < UUID7_HANDOFF_ROUNDS; r++) {
    while (atomic_load_explicit(&h->turn, memory_order_acquire) != p->me)
      sched_yield();
    pawl_id_t id;
    pawl_id_new(&id);
    CHECK(uuid7_cmp(&h->slot, &id) < 0);
    h->slot = id;
    atomic_store_explicit(&h->turn, (p->me + 1) % UUID7_HANDOFF_THREADS,
                          memory_order_release);
  }
  return NULL;
}

void test_uuid7_handoff_ordered(void) {
  struct uuid7_handoff h;
  pawl_id_new(&h.slot);
  atomic_init(&h.turn, 0);
  pthread_t th[UUID7_HANDOFF_THREADS];
  struct uuid7_player pl[UUID7_HANDOFF_THREADS];
  for (int t = 0; t < UUID7_HANDOFF_THREADS; t++) {
    pl[t] = (struct uuid7_player){&h, t};
    CHECK_INT(pthread_create(&th[t], NULL, uuid7_player_run, &pl[t]), ==, 0);
  }
  for (int t = 0; t < UUID7_HANDOFF_THREADS; t++)
    CHECK_INT(pthread_join(th[t], NULL), ==, 0);
  CHECK_INT(atomic_load(&h.turn), ==, 0);
}

/* ---- text form ---------------------------------------------------------- */

void test_uuid7_roundtrip(void) {
  for (int i = 0; i < 10000; i++) {
    pawl_id_t id, back;
    char text[PAWL_ID_STRLEN];
    pawl_id_new(&id);
    memset(text, 'x', sizeof text);
    pawl_id_format(&id, text);
    CHECK_INT(strlen(text), ==, 36);
    for (int j = 0; j < 36; j++) {
      if (j == 8 || j == 13 || j == 18 || j == 23)
        CHECK(text[j] == '-');
      else
        CHECK(isxdigit((unsigned char)text[j]) &&
              !isupper((unsigned char)text[j]));
    }
    CHECK_OK(pawl_id_parse(&back, text));
    CHECK(uuid7_cmp(&id, &back) == 0);

    /* Upper case, and mixed case, parse to the same id. */
    char upper[PAWL_ID_STRLEN];
    for (int j = 0; j < PAWL_ID_STRLEN; j++)
      upper[j] = (char)toupper((unsigned char)text[j]);
    memset(&back, 0, sizeof back);
    CHECK_OK(pawl_id_parse(&back, upper));
    CHECK(uuid7_cmp(&id, &back) == 0);
    for (int j = 0; j < 36; j += 2) upper[j] = text[j];
    memset(&back, 0, sizeof back);
    CHECK_OK(pawl_id_parse(&back, upper));
    CHECK(uuid7_cmp(&id, &back) == 0);
  }

  /* The example UUIDv7 of RFC 9562 (appendix A.6). */
  pawl_id_t id;
  char text[PAWL_ID_STRLEN];
  CHECK_OK(pawl_id_parse(&id, "017F22E2-79B0-7CC3-98C4-DC0C0C07398F"));
  static const uint8_t want[16] = {0x01, 0x7f, 0x22, 0xe2, 0x79, 0xb0,
                                   0x7c, 0xc3, 0x98, 0xc4, 0xdc, 0x0c,
                                   0x0c, 0x07, 0x39, 0x8f};
  CHECK(memcmp(id.bytes, want, 16) == 0);
  CHECK_INT(pawl_id_time_ms(&id), ==, INT64_C(0x017F22E279B0));
  pawl_id_format(&id, text);
  CHECK_STR(text, "017f22e2-79b0-7cc3-98c4-dc0c0c07398f");

  /* Any UUID parses, not just version 7. */
  static const char *const others[] = {
      "00000000-0000-0000-0000-000000000000",
      "ffffffff-ffff-ffff-ffff-ffffffffffff",
      "f81d4fae-7dec-11d0-a765-00a0c91e6bf6", /* version 1 */
      "919108f7-52d1-4320-9bac-f847db4148a8", /* version 4 */
  };
  for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
    CHECK_OK(pawl_id_parse(&id, others[i]));
    pawl_id_format(&id, text);
    CHECK_STR(text, others[i]);
  }
}

void test_uuid7_parse_rejects(void) {
  static const char *const bad[] = {
      "",
      "017f22e2-79b0-7cc3-98c4-dc0c0c07398",   /* 35 chars */
      "017f22e2-79b0-7cc3-98c4-dc0c0c07398f0", /* 37 chars */
      "017f22e-279b0-7cc3-98c4-dc0c0c07398f",  /* misplaced dash */
      "017f22e2-79b07-cc3-98c4-dc0c0c07398f",
      "017f22e2-79b0-7cc39-8c4-dc0c0c07398f",
      "017f22e2-79b0-7cc3-98c4d-c0c0c07398f",
      "017f22e2-79b0-7cc3-98c4-dc0c0c07398g", /* non-hex */
      "017f22e2-79b0-7cc3-98c4-dc0c0c07398 ",
      "017f22e2-79b0-7cc3-98c4-dc0c0c0739-f",
      "+17f22e2-79b0-7cc3-98c4-dc0c0c07398f",
      "0x7f22e2-79b0-7cc3-98c4-dc0c0c07398f",
      "{017f22e2-79b0-7cc3-98c4-dc0c0c07398f}", /* braces */
      "017f22e279b07cc398c4dc0c0c07398f",       /* no dashes */
      "urn:uuid:017f22e2-79b0-7cc3-98c4-dc0c0c07398f",
      " 017f22e2-79b0-7cc3-98c4-dc0c0c07398f",
      "017f22e2-79b0-7cc3-98c4-dc0c0c07398f ", /* trailing garbage */
      "017f22e2-79b0-7cc3-98c4-dc0c0c07398f\n",
      "017f22e2-79b0-7cc3-98c4-dc0c0c07398fzz",
      "017f22e2_79b0_7cc3_98c4_dc0c0c07398f",
      "-",
      "------------------------------------",
  };
  pawl_id_t out;
  static const uint8_t untouched[16] = {0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5,
                                        0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5,
                                        0xa5, 0xa5, 0xa5, 0xa5};
  memset(&out, 0xa5, sizeof out);
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    if (pawl_id_parse(&out, bad[i]) != PAWL_EINVAL)
      unit_fail(__FILE__, __LINE__, "parsed \"%s\"", bad[i]);
    CHECK(memcmp(out.bytes, untouched, 16) == 0);
  }
  CHECK_INT(pawl_id_parse(&out, NULL), ==, PAWL_EINVAL);
  CHECK_INT(pawl_id_parse(NULL, "017f22e2-79b0-7cc3-98c4-dc0c0c07398f"), ==,
            PAWL_EINVAL);
  CHECK(memcmp(out.bytes, untouched, 16) == 0);

  /* Every byte value at every position of a valid id: it parses only if it
   * is a hex digit where a digit belongs or the dash where a dash belongs.
   * (Byte 0 cuts the string short.) */
  const char *good = "017f22e2-79b0-7cc3-98c4-dc0c0c07398f";
  for (int pos = 0; pos < 36; pos++) {
    int dash = pos == 8 || pos == 13 || pos == 18 || pos == 23;
    for (int c = 0; c < 256; c++) {
      char s[PAWL_ID_STRLEN];
      memcpy(s, good, sizeof s);
      s[pos] = (char)c;
      int ok = dash ? c == '-' : c != 0 && isxdigit(c);
      int rc = pawl_id_parse(&out, s);
      if (rc != (ok ? PAWL_OK : PAWL_EINVAL))
        unit_fail(__FILE__, __LINE__, "byte 0x%02x at %d: rc %d", c, pos, rc);
    }
  }
}

/* ---- timestamp ---------------------------------------------------------- */

void test_uuid7_time_ms(void) {
  static const int64_t times[] = {
      0, 1, 1000, INT64_C(1645557742000), INT64_C(1700000000123),
      (INT64_C(1) << 48) - 2, (INT64_C(1) << 48) - 1,
  };
  struct uuid7_tclock c;
  uuid7_tclock_start(&c, 0);
  for (size_t i = 0; i < sizeof times / sizeof times[0]; i++) {
    atomic_store(&c.now, times[i]);
    pawl_id_t id;
    pawl_id_new(&id);
    CHECK_V7(id, times[i]);
    CHECK_INT(uuid7_counter_of(&id), ==, 0);
  }

  /* A clock outside the 48-bit field is clamped to it rather than hanging
   * or wrapping. (A new clock starts a new sequence.) */
  uuid7_tclock_start(&c, -5);
  pawl_id_t id;
  pawl_id_new(&id);
  CHECK_V7(id, 0);
  uuid7_tclock_start(&c, INT64_C(1) << 50);
  pawl_id_new(&id);
  CHECK_V7(id, (INT64_C(1) << 48) - 1);

  /* The real clock. */
  pawl__uuid7_set_clock(NULL, NULL);
  for (int i = 0; i < 1000; i++) {
    int64_t before = uuid7_wall_ms();
    pawl_id_new(&id);
    int64_t after = uuid7_wall_ms();
    CHECK_INT(pawl_id_time_ms(&id), >=, before);
    CHECK_INT(pawl_id_time_ms(&id), <=, after);
  }
}

/* ---- a clock that stands still or steps back ----------------------------
 * pawl_id_new never waits for the clock: it reads it once per id and
 * carries on from the last id. The test clock counts its reads; if the
 * generator polls it (the old behaviour: waiting for the clock to catch
 * up), the clock gives in after a few hundred reads and jumps to `rescue`,
 * so a regression fails on the read count instead of hanging the test. */

struct uuid7_rclock {
  int64_t now;
  int64_t rescue; /* where a polled clock jumps to */
  long reads;     /* since the last uuid7_rclock_id() */
};

static int64_t uuid7_rclock_fn(void *data) {
  struct uuid7_rclock *c = data;
  if (++c->reads > 500) c->now = c->rescue;
  return c->now;
}

/* One id, checking that the clock was read exactly once for it. */
static void uuid7_rclock_id(struct uuid7_rclock *c, pawl_id_t *id) {
  c->reads = 0;
  pawl_id_new(id);
  CHECK_INT(c->reads, ==, 1);
}

void test_uuid7_frozen_clock_carries_on(void) {
  const int64_t t = INT64_C(1700000000000);
  struct uuid7_rclock c = {.now = t, .rescue = t + 1};
  pawl__uuid7_set_clock(uuid7_rclock_fn, &c);

  /* The whole counter of one ms. */
  static pawl_id_t ids[UUID7_COUNTER_MAX + 1];
  for (unsigned i = 0; i <= UUID7_COUNTER_MAX; i++) {
    uuid7_rclock_id(&c, &ids[i]);
    CHECK_V7(ids[i], t);
    CHECK_INT(uuid7_counter_of(&ids[i]), ==, i);
    if (i > 0) CHECK(uuid7_cmp(&ids[i - 1], &ids[i]) < 0);
  }

  /* The 4,097th: the next ms at once, one ms ahead of the frozen clock. */
  pawl_id_t next, after;
  uuid7_rclock_id(&c, &next);
  CHECK_V7(next, t + 1);
  CHECK_INT(uuid7_counter_of(&next), ==, 0);
  CHECK(uuid7_cmp(&ids[UUID7_COUNTER_MAX], &next) < 0);

  /* The clock reaching that ms continues its counter; a later ms starts a
   * new one. */
  c.now = t + 1;
  uuid7_rclock_id(&c, &after);
  CHECK_V7(after, t + 1);
  CHECK_INT(uuid7_counter_of(&after), ==, 1);
  CHECK(uuid7_cmp(&next, &after) < 0);
  c.now = t + 5;
  uuid7_rclock_id(&c, &next);
  CHECK_V7(next, t + 5);
  CHECK_INT(uuid7_counter_of(&next), ==, 0);
  pawl__uuid7_set_clock(NULL, NULL);
}

void test_uuid7_clock_backwards_carries_on(void) {
  const int64_t t = INT64_C(1700000000000), hour = 3600 * 1000;
  struct uuid7_rclock c = {.now = t, .rescue = t};
  pawl__uuid7_set_clock(uuid7_rclock_fn, &c);
  pawl_id_t first, id, prev;
  uuid7_rclock_id(&c, &first);
  CHECK_V7(first, t);

  /* An NTP step back of an hour: the next id comes at once, carrying on
   * from the last one (same ms, next counter value). */
  c.now = t - hour;
  uuid7_rclock_id(&c, &id);
  CHECK_V7(id, t);
  CHECK_INT(uuid7_counter_of(&id), ==, 1);
  CHECK(uuid7_cmp(&first, &id) < 0);

  /* Many more while the clock is behind: strictly increasing, the
   * timestamp moving on one ms per used-up counter, never back. */
  prev = id;
  for (int i = 0; i < 3 * (UUID7_COUNTER_MAX + 1); i++) {
    c.now = t - hour + i / 100; /* the clock creeps on, still behind */
    uuid7_rclock_id(&c, &id);
    CHECK(uuid7_cmp(&prev, &id) < 0);
    CHECK_INT(pawl_id_time_ms(&id), >=, t);
    CHECK_INT(pawl_id_time_ms(&id), <=, t + 3);
    prev = id;
  }
  CHECK_V7(prev, t + 3);

  /* The clock catching up past the carried timestamp takes over again. */
  c.now = t + 10;
  uuid7_rclock_id(&c, &id);
  CHECK_V7(id, t + 10);
  CHECK_INT(uuid7_counter_of(&id), ==, 0);
  CHECK(uuid7_cmp(&prev, &id) < 0);
  pawl__uuid7_set_clock(NULL, NULL);
}

/* The end of the 48-bit field with its counter used up: no wait, no wrap
 * to 1970 (ids stay unique by their random tails). */
void test_uuid7_field_end_no_wait(void) {
  const int64_t end = (INT64_C(1) << 48) - 1;
  struct uuid7_rclock c = {.now = end, .rescue = end};
  pawl__uuid7_set_clock(uuid7_rclock_fn, &c);
  pawl_id_t id, prev;
  memset(&prev, 0, sizeof prev);
  for (unsigned i = 0; i <= UUID7_COUNTER_MAX + 10; i++) {
    uuid7_rclock_id(&c, &id);
    CHECK_V7(id, end);
    CHECK(memcmp(prev.bytes, id.bytes, 16) != 0);
    prev = id;
  }
  pawl__uuid7_set_clock(NULL, NULL);
}
