/* batch_bench.c: one batch of N children (default 100,000) enqueued in one
 * call of pawl_batch_enqueue(), the bulk path: its time, and how
 * much the process's memory grows during the call (peak RSS, VmHWM, reset
 * before the call through /proc/self/clear_refs, less VmRSS before it).
 * The children's payloads are the caller's and made before the call
 * (their memory is reported apart).
 *
 *   pawl_batch_bench DB [N]     DB: sqlite:PATH or postgres:CONNINFO
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pawl.h"

static long status_kb(const char *field) {
  FILE *f = fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  long kb = -1;
  size_t n = strlen(field);
  while (fgets(line, sizeof line, f))
    if (strncmp(line, field, n) == 0) kb = strtol(line + n + 1, NULL, 10);
  fclose(f);
  return kb;
}

static double mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s DB [N]\n", argv[0]);
    return 2;
  }
  size_t n = argc > 2 ? strtoul(argv[2], NULL, 10) : 100000;
  pawl_options_t o;
  pawl_options_init(&o);
  o.db = argv[1];
  pawl_t *p = NULL;
  char err[512];
  if (pawl_open(&p, &o, err, sizeof err)) {
    fprintf(stderr, "open: %s\n", err);
    return 1;
  }
  long rss0 = status_kb("VmRSS:");
  pawl_enqueue_item_t *items = calloc(n, sizeof *items);
  char (*payloads)[80] = calloc(n, sizeof *payloads);
  pawl_id_t *ids = calloc(n, sizeof *ids);
  if (!items || !payloads || !ids) return 1;
  for (size_t i = 0; i < n; i++) {
    snprintf(payloads[i], sizeof payloads[i], "{\"i\":%zu,\"file\":\"f%zu.csv\"}",
             i, i);
    items[i] = (pawl_enqueue_item_t){"child", payloads[i], NULL};
  }
  pawl_enqueue_item_t done = {"done", "{}", NULL};
  pawl_batch_opts_t bo;
  pawl_batch_opts_init(&bo);
  bo.on_complete = &done;
  long rss1 = status_kb("VmRSS:");
  FILE *cr = fopen("/proc/self/clear_refs", "w");
  int reset = cr && fputs("5", cr) >= 0;
  if (cr) fclose(cr);
  if (!reset) fprintf(stderr, "warning: cannot reset the peak RSS\n");
  double t0 = mono_s();
  pawl_id_t bid;
  int rc = pawl_batch_enqueue(p, items, n, &bo, &bid, ids);
  double t1 = mono_s();
  long hwm = status_kb("VmHWM:");
  if (rc) {
    fprintf(stderr, "batch: %s\n", pawl_errmsg(p));
    return 1;
  }
  pawl_batch_t b;
  if (pawl_batch_get(p, &bid, &b) || b.total != (int64_t)n) {
    fprintf(stderr, "batch get: %s\n", pawl_errmsg(p));
    return 1;
  }
  printf("children %zu: %.2f s (%.0f jobs/s); caller's items %ld KiB; "
         "memory growth during the call %ld KiB (peak %ld KiB, before %ld "
         "KiB)\n",
         n, t1 - t0, (double)n / (t1 - t0), rss1 - rss0, hwm - rss1, hwm,
         rss1);
  free(items);
  free(payloads);
  free(ids);
  pawl_close(p);
  return 0;
}
