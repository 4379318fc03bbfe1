/* step_bench.c: the cost of an idle pawl_step() (nothing due) on SQLite,
 * the price a game pays each frame when there is no work (it
 * must stay under 20 us).
 *
 *   pawl_step_bench [CALLS]      (default 200,000)
 *
 * In a temp dir: a database with one job script and, for the "backlog"
 * run, 10,000 jobs due in an hour (the idle check must not read them).
 * Three runs of CALLS idle steps each; per run the mean and the 50th, 99th
 * and 99.9th percentiles of single calls. The idle check looks at the
 * scripts directory every reload_ms and at the database anyway every
 * poll_ms: both are left at their defaults (1 s), so a run of many calls
 * includes those looks at their real rate. Not run by the tests;
 * bench/RESULTS.md records figures. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pawl.h"

static int64_t bench_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int bench_cmp(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

static void bench_run(pawl_t *p, const char *name, long calls, int64_t *t) {
  for (int run = 0; run < 3; run++) {
    int64_t total = 0;
    for (long i = 0; i < calls; i++) {
      int64_t a = bench_ns();
      int rc = pawl_step(p, 2);
      t[i] = bench_ns() - a;
      total += t[i];
      if (rc != 0) {
        fprintf(stderr, "pawl_step: %d %s\n", rc, pawl_errmsg(p));
        exit(1);
      }
    }
    qsort(t, (size_t)calls, sizeof *t, bench_cmp);
    printf("%-8s run %d: mean %6.2f us  p50 %6.2f  p99 %6.2f  p99.9 %7.2f "
           "max %8.2f\n",
           name, run + 1, (double)total / calls / 1000.0,
           (double)t[calls / 2] / 1000.0, (double)t[calls * 99 / 100] / 1000.0,
           (double)t[calls * 999 / 1000] / 1000.0,
           (double)t[calls - 1] / 1000.0);
  }
}

int main(int argc, char **argv) {
  long calls = argc > 1 ? atol(argv[1]) : 200000;
  if (calls < 1000) calls = 1000;
  char dir[] = "/tmp/pawl-step-bench-XXXXXX";
  if (!mkdtemp(dir) || chdir(dir) != 0) return 1;
  mkdir("scripts", 0700);
  FILE *f = fopen("scripts/ok.lua", "w");
  if (!f) return 1;
  fputs("return { run = function() return 1 end }\n", f);
  fclose(f);
  pawl_options_t o;
  pawl_options_init(&o);
  o.db = "sqlite:bench.db";
  pawl_t *p = NULL;
  char err[512];
  if (pawl_open(&p, &o, err, sizeof err)) {
    fprintf(stderr, "open: %s\n", err);
    return 1;
  }
  pawl_host_opts_t ho;
  pawl_host_opts_init(&ho);
  ho.scripts_dir = "scripts";
  ho.log_level = PAWL_LOG_WARN;
  if (pawl_step_start(p, &ho)) {
    fprintf(stderr, "step: %s\n", pawl_errmsg(p));
    return 1;
  }
  int64_t *t = malloc((size_t)calls * sizeof *t);
  if (!t) return 1;
  pawl_step(p, 2);
  bench_run(p, "empty", calls, t);
  /* A backlog due later: the idle check must stay as cheap. */
  pawl_enqueue_opts_t eo;
  pawl_enqueue_opts_init(&eo);
  eo.delay_ms = 3600000;
  for (int i = 0; i < 10000; i++) pawl_enqueue(p, "ok", NULL, &eo, NULL, NULL);
  pawl_step(p, 2);
  bench_run(p, "backlog", calls, t);
  free(t);
  pawl_close(p);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) return 1;
  return 0;
}
