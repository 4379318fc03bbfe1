/* cron_bench.c: the cost of pawl__cron_next (host/core/cron.c).
 *
 *   pawl_cron_bench [CALLS]      (default 1,000,000)
 *
 * Three runs of CALLS next-fire computations each, over a mix of
 * expressions (common, rare and second-level ones) and zones (UTC, DST in
 * both hemispheres, 30- and 45-minute offsets):
 *
 *   random   each call from a random instant in 2026-2036 (the zones'
 *            tables), the cost a ticker pays for one definition;
 *   chained  each call from the previous fire time, as a ticker advancing
 *            one definition does (from 2026 again once a rare expression
 *            runs past the year 9999);
 *   rule     random instants in 2200-2210, past every table, where the
 *            zones' footer rules are evaluated on the fly.
 *
 * Then the same per expression (random, CALLS / 10 each), and the cost of
 * parsing. Not run by the tests; bench/RESULTS.md records figures. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cron.h"
#include "pawl.h"
#include "tz.h"

static const char *const exprs[] = {
    "*/15 * * * *",       "0 0 * * *",         "30 2 * * *",
    "0 9-17 * * MON-FRI", "0 0 L * *",         "0 12 15W * *",
    "0 8 ? * MON#2",      "*/10 * * * * *",    "0 0 29 2 *",
    "0 0 ? 2 MON#5",      "@hourly",           "5 4 * * SUN",
    "0 0 1 1 *",          "0 22 * * 5L",       "0,30 2 * * *"};
#define NEXPR (sizeof exprs / sizeof exprs[0])

static const char *const zones[] = {"UTC",           "Europe/Berlin",
                                    "America/New_York", "Australia/Lord_Howe",
                                    "Asia/Kolkata",  "Pacific/Chatham"};
#define NZONE (sizeof zones / sizeof zones[0])

static uint64_t rng_state = 0x2545F4914F6CDD1Dull;
static uint64_t rng(void) {
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 0x2545F4914F6CDD1Dull;
}

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static pawl__cron_t crons[NEXPR];
static const pawl__tz_t *tzs[NZONE];
static int64_t *starts;

/* CALLS computations; returns ns per call. mode 0 random, 1 chained. */
static double run(long calls, int mode, int only_expr, int64_t lo, int64_t hi,
                  uint64_t *sum) {
  for (long i = 0; i < calls; i++)
    starts[i] = lo + (int64_t)(rng() % (uint64_t)(hi - lo));
  int64_t prev[NEXPR][NZONE];
  for (size_t e = 0; e < NEXPR; e++)
    for (size_t z = 0; z < NZONE; z++) prev[e][z] = lo;
  double t0 = now_ns();
  for (long i = 0; i < calls; i++) {
    size_t e = only_expr >= 0 ? (size_t)only_expr : (size_t)i % NEXPR;
    size_t z = (size_t)(i / (long)NEXPR) % NZONE;
    int64_t after = mode == 1 ? prev[e][z] : starts[i];
    int64_t out = 0;
    int rc = pawl__cron_next(&crons[e], tzs[z], after, &out);
    if (rc == PAWL_ENOTFOUND && mode == 1) /* chained past 9999: restart */
      rc = pawl__cron_next(&crons[e], tzs[z], lo, &out);
    if (rc != 0) {
      fprintf(stderr, "cron_bench: %s in %s: no fire time\n", exprs[e], zones[z]);
      exit(1);
    }
    prev[e][z] = out;
    *sum += (uint64_t)out;
  }
  return (now_ns() - t0) / (double)calls;
}

int main(int argc, char **argv) {
  long calls = argc > 1 ? atol(argv[1]) : 1000000;
  if (calls < 1000 || calls > 100000000) {
    fprintf(stderr, "usage: pawl_cron_bench [CALLS, 1000-100000000]\n");
    return 2;
  }
  char err[PAWL__CRON_ERRLEN];
  double t0 = now_ns();
  int nparse = 0;
  for (int r = 0; r < 20000; r++)
    for (size_t e = 0; e < NEXPR; e++, nparse++)
      if (pawl__cron_parse(exprs[e], &crons[e], err, sizeof err) != 0) {
        fprintf(stderr, "cron_bench: %s: %s\n", exprs[e], err);
        return 1;
      }
  double parse_ns = (now_ns() - t0) / nparse;
  for (size_t z = 0; z < NZONE; z++)
    if (pawl__tz_get(zones[z], &tzs[z], err, sizeof err) != 0) {
      fprintf(stderr, "cron_bench: %s\n", err);
      return 1;
    }
  starts = malloc((size_t)calls * sizeof *starts);
  if (!starts) return 1;

  const int64_t y2026 = INT64_C(1767225600000), y2036 = INT64_C(2082758400000);
  const int64_t y2200 = INT64_C(7258118400000), y2210 = INT64_C(7573651200000);
  uint64_t sum = 0;
  printf("%ld calls each, %zu expressions x %zu zones\n", calls, NEXPR, NZONE);
  printf("random  (2026-2036): %7.1f ns per call\n",
         run(calls, 0, -1, y2026, y2036, &sum));
  printf("chained (2026-):     %7.1f ns per call\n",
         run(calls, 1, -1, y2026, y2036, &sum));
  printf("rule    (2200-2210): %7.1f ns per call\n",
         run(calls, 0, -1, y2200, y2210, &sum));
  printf("parse:               %7.1f ns per expression\n", parse_ns);
  printf("per expression, random 2026-2036, all zones:\n");
  for (size_t e = 0; e < NEXPR; e++)
    printf("  %-20s %7.1f ns\n", exprs[e],
           run(calls / 10, 0, (int)e, y2026, y2036, &sum));
  printf("(checksum %llu)\n", (unsigned long long)sum);
  free(starts);
  return 0;
}
