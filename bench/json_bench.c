/* json_bench.c: what pawl's JSON readers cost (bench/RESULTS.md, "JSON
 * readers").
 *
 *   pawl_json_bench [OP|all] [INPUT|all] [RUNS]
 *
 * OP: validate (pawl__json_validate, what every enqueue pays), decode (the
 * Lua codec's C entry point, pawl__ljson_decode, what every job start
 * pays), redact (pawl__redact_json, what every admin view pays), members
 * (pawl__json_members for two names, what an enqueue with identity pays).
 * INPUT: small (a 200-byte payload), keys64k (a 64 KiB object of many
 * keys), nums1m (a 1 MiB array of numbers), str16m (a document of strings
 * just under PAWL_PAYLOAD_MAX), deep (nesting at JSON_MAX_DEPTH). Prints
 * the best and the median wall time of RUNS runs (default 5).
 *
 * For counts that do not depend on the machine's load, run one OP and
 * INPUT under callgrind, collecting only inside the operation:
 *   valgrind --tool=callgrind --toggle-collect=bench_validate \
 *     build/pawl_json_bench validate nums1m 1
 * (bench_decode, bench_redact, bench_members likewise). The inputs are
 * made the same way on every run. */
#include <lauxlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "json.h"
#include "ljson.h"
#include "lua.h"
#include "redact.h"

typedef struct input {
  const char *name;
  pawl_buf_t text;
} input_t;

static unsigned long bench_rand_state = 12345;

static unsigned bench_rand(void) {
  bench_rand_state = bench_rand_state * 6364136223846793005UL +
                     1442695040888963407UL;
  return (unsigned)(bench_rand_state >> 33);
}

static void make_small(pawl_buf_t *b) {
  pawl__buf_puts(b,
                 "{\"to\":\"alice@example.com\",\"subject\":\"Weekly report "
                 "\\u00e9t\\u00e9\",\"date\":\"2026-01-01\",\"user_id\":"
                 "123456,\"amount\":12.75,\"tags\":[\"mail\",\"weekly\"],"
                 "\"token\":\"tok_8f1e2d\",\"retry\":true,\"locale\":\"fr-FR\","
                 "\"note\":null}");
}

static void make_keys(pawl_buf_t *b) {
  pawl__buf_putc(b, '{');
  for (int i = 0; b->len < 64 * 1024 - 64; i++) {
    char m[96];
    if (i % 4 == 0)
      snprintf(m, sizeof m, "\"key_%06d\":%u,", i, bench_rand() % 100000);
    else if (i % 4 == 1)
      snprintf(m, sizeof m, "\"name_%06d\":\"value %u\",", i, bench_rand());
    else if (i % 4 == 2)
      snprintf(m, sizeof m, "\"flag_%06d\":%s,", i, i % 8 ? "true" : "null");
    else
      snprintf(m, sizeof m, "\"rate_%06d\":%u.%02u,", i,
               bench_rand() % 1000, bench_rand() % 100);
    pawl__buf_puts(b, m);
  }
  pawl__buf_puts(b, "\"date\":\"2026-01-01\",\"user_id\":7}");
}

static void make_nums(pawl_buf_t *b) {
  pawl__buf_putc(b, '[');
  for (int i = 0; b->len < 1024 * 1024 - 32; i++) {
    char m[48];
    unsigned r = bench_rand();
    if (i % 4 == 0)
      snprintf(m, sizeof m, "%u,", r % 1000);
    else if (i % 4 == 1)
      snprintf(m, sizeof m, "%u,", r);
    else if (i % 4 == 2)
      snprintf(m, sizeof m, "-%u.%03u,", r % 10000, r % 1000);
    else
      snprintf(m, sizeof m, "%u.%ue%d,", r % 10, r % 100000,
               (int)(r % 40) - 20);
    pawl__buf_puts(b, m);
  }
  pawl__buf_puts(b, "0]");
}

static void make_strings(pawl_buf_t *b) {
  static const char *const words[] = {
      "lorem", "ipsum", "dolor", "sit", "amet", "caf\xc3\xa9", "na\xc3\xafve",
      "\xe6\x97\xa5\xe6\x9c\xac", "tab\\there", "line\\nbreak", "quote\\\"d",
      "\\u00e9t\\u00e9", "emoji\xf0\x9f\x98\x80", "path\\/to"};
  size_t nw = sizeof words / sizeof words[0];
  pawl__buf_puts(b, "{\"date\":\"2026-01-01\",\"items\":[");
  for (int i = 0; b->len < 16 * 1024 * 1024 - 4096; i++) {
    char m[64];
    snprintf(m, sizeof m, "%s{\"id\":\"item-%08d\",\"text\":\"",
             i ? "," : "", i);
    pawl__buf_puts(b, m);
    for (int w = 0; w < 40; w++) {
      if (w) pawl__buf_putc(b, ' ');
      pawl__buf_puts(b, words[bench_rand() % nw]);
    }
    pawl__buf_puts(b, "\"}");
  }
  pawl__buf_puts(b, "],\"user_id\":7}");
}

static void make_deep(pawl_buf_t *b) {
  /* An object whose member nests to JSON_MAX_DEPTH in all: arrays and
   * objects in turn, a few values at each level. */
  pawl__buf_puts(b, "{\"date\":\"2026-01-01\",\"user_id\":7,\"deep\":");
  int d;
  for (d = 2; d <= JSON_MAX_DEPTH; d++)
    pawl__buf_puts(b, d % 2 ? "{\"k\":1,\"s\":\"x\",\"v\":" : "[1,\"x\",");
  pawl__buf_puts(b, "null");
  for (d = JSON_MAX_DEPTH; d >= 2; d--) pawl__buf_putc(b, d % 2 ? '}' : ']');
  pawl__buf_putc(b, '}');
}

static const char *const member_names[] = {"date", "user_id"};

/* One operation each, never inlined: callgrind's --toggle-collect names
 * them. Each returns 0 when the reader accepted the text. */
__attribute__((noinline)) int bench_validate(const char *s, size_t n) {
  return pawl__json_validate(s, n, NULL, 0);
}

__attribute__((noinline)) int bench_decode(lua_State *L, const char *s,
                                           size_t n) {
  char err[256];
  return pawl__ljson_decode(L, s, n, err, sizeof err);
}

__attribute__((noinline)) int bench_redact(const char *s, size_t n,
                                           pawl_buf_t *out) {
  return pawl__redact_json(s, n, NULL, 0, out, NULL, 0);
}

__attribute__((noinline)) int bench_members(const char *s, size_t n) {
  size_t spans[2][2];
  return pawl__json_members(s, n, JSON_POLICY, member_names, 2, spans, NULL, 0);
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Runs op over in `runs` times; prints best and median. */
static int run(const char *op, input_t *in, int runs, lua_State *L) {
  const char *s = pawl__buf_cstr(&in->text);
  size_t n = in->text.len;
  /* Small inputs are timed in batches, so the clock's grain is not the
   * figure. */
  int reps = n < 4096 ? 20000 : n < 256 * 1024 ? 200 : n < 4 << 20 ? 10 : 1;
  double t[64];
  if (runs > 64) runs = 64;
  if (strcmp(op, "members") == 0 && s[0] != '{') return 0; /* objects only */
  pawl_buf_t out;
  pawl__buf_init(&out);
  for (int r = 0; r < runs; r++) {
    double t0 = now_ms();
    for (int k = 0; k < reps; k++) {
      int rc;
      if (strcmp(op, "validate") == 0) {
        rc = bench_validate(s, n);
      } else if (strcmp(op, "decode") == 0) {
        rc = bench_decode(L, s, n);
        lua_settop(L, 0);
      } else if (strcmp(op, "redact") == 0) {
        pawl__buf_reset(&out);
        rc = bench_redact(s, n, &out);
      } else if (strcmp(op, "members") == 0) {
        rc = bench_members(s, n);
      } else {
        fprintf(stderr, "unknown operation %s (validate, decode, redact, "
                        "members)\n", op);
        return -1;
      }
      if (rc != 0) {
        fprintf(stderr, "%s refused %s\n", op, in->name);
        return -1;
      }
    }
    t[r] = (now_ms() - t0) / reps;
    if (strcmp(op, "decode") == 0) lua_gc(L, LUA_GCCOLLECT, 0);
  }
  pawl__buf_free(&out);
  qsort(t, (size_t)runs, sizeof t[0], cmp_double);
  printf("%-8s %-8s %9zu bytes  best %10.4f ms  median %10.4f ms  %8.1f MB/s\n",
         op, in->name, n, t[0], t[runs / 2], (double)n / 1e3 / t[runs / 2]);
  return 0;
}

int main(int argc, char **argv) {
  const char *op = argc > 1 ? argv[1] : "all";
  const char *which = argc > 2 ? argv[2] : "all";
  int runs = argc > 3 ? atoi(argv[3]) : 5;
  if (runs < 1 || runs > 64) {
    fprintf(stderr, "RUNS must be between 1 and 64 (got %s)\n", argv[3]);
    return 2;
  }
  input_t ins[] = {{"small", {0}}, {"keys64k", {0}}, {"nums1m", {0}},
                   {"str16m", {0}}, {"deep", {0}}};
  void (*make[])(pawl_buf_t *) = {make_small, make_keys, make_nums,
                                  make_strings, make_deep};
  static const char *const ops[] = {"validate", "decode", "redact", "members"};
  lua_State *L = luaL_newstate();
  if (!L) return 1;
  int found = 0, rc = 0;
  for (size_t i = 0; i < sizeof ins / sizeof ins[0]; i++) {
    if (strcmp(which, "all") != 0 && strcmp(which, ins[i].name) != 0) continue;
    found = 1;
    make[i](&ins[i].text);
    for (size_t o = 0; o < 4; o++) {
      if (strcmp(op, "all") != 0 && strcmp(op, ops[o]) != 0) continue;
      if (run(ops[o], &ins[i], runs, L)) rc = 1;
    }
    if (strcmp(op, "all") != 0 && strcmp(op, "validate") != 0 &&
        strcmp(op, "decode") != 0 && strcmp(op, "redact") != 0 &&
        strcmp(op, "members") != 0 && run(op, &ins[i], runs, L))
      rc = 1;
    pawl__buf_free(&ins[i].text);
  }
  lua_close(L);
  if (!found) {
    fprintf(stderr, "unknown input %s (small, keys64k, nums1m, str16m, "
                    "deep)\n", which);
    return 2;
  }
  return rc;
}
