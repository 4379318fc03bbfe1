/* wake_bench.c: how soon a job enqueued on another thread starts on a
 * stepping or attached handle: from the pawl_enqueue() call on the other
 * thread to the first instruction of the job's body, on the owner's
 * thread.
 *
 *   pawl_wake_bench MODE [JOBS]      (default 2,000 jobs)
 *
 * MODE:
 *   step  the owner sleeps in pawl_step_wait() and steps; the other thread
 *         enqueues on a sibling (pawl_sibling()).
 *   uv    the handle is attached to a libuv loop (PAWL_UV_LOOP); the other
 *         thread enqueues on a sibling.
 *   open  as uv, but the other thread enqueues on a handle of its own
 *         (pawl_open()): no wake, the loop sees it at its next poll
 *         (poll_ms, 1 s by default). What embedders had before siblings.
 *
 * One job at a time: the other thread waits until the job has run, then
 * 0.5 to 2.5 ms more (so the owner is back asleep), and enqueues the
 * next. Prints the 50th, 90th, 99th percentiles and the max in
 * microseconds. In a temp dir. Not run by the tests; bench/RESULTS.md
 * records figures. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

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

static long jobs = 2000;
static int64_t *lat, *lat_ret;
static _Atomic long done;
static _Atomic int64_t sent_at, started_at;

static int bench_job(const pawl_job_t *job, pawl_ctx_t *ctx, void *ud) {
  (void)job;
  (void)ctx;
  (void)ud;
  int64_t now = bench_ns();
  long i = atomic_load(&done);
  if (i < jobs) lat[i] = now - atomic_load(&sent_at);
  atomic_store(&started_at, now);
  atomic_store(&done, i + 1);
  return PAWL_JOB_OK;
}

static void bench_sleep_us(long us) {
  struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
  nanosleep(&ts, NULL);
}

static void *bench_feeder(void *arg) {
  pawl_t *q = arg;
  for (long i = 0; i < jobs; i++) {
    bench_sleep_us(500 + rand() % 2000);
    atomic_store(&sent_at, bench_ns());
    if (pawl_enqueue(q, "j", NULL, NULL, NULL, NULL) != 0) {
      fprintf(stderr, "enqueue: %s\n", pawl_errmsg(q));
      exit(1);
    }
    int64_t returned = bench_ns();
    while (atomic_load(&done) <= i) bench_sleep_us(50);
    /* The insert's own time left out (negative: the job had started
     * before the enqueue returned). */
    lat_ret[i] = atomic_load(&started_at) - returned;
  }
  return NULL;
}

static void bench_watch(uv_timer_t *t) {
  pawl_t *p = t->data;
  if (atomic_load(&done) < jobs) return;
  pawl_detach_uv(p);
  uv_close((uv_handle_t *)t, NULL);
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "step";
  if (argc > 2) jobs = atol(argv[2]);
  if (jobs < 1 || (strcmp(mode, "step") && strcmp(mode, "uv") &&
                   strcmp(mode, "open"))) {
    fprintf(stderr, "usage: pawl_wake_bench step|uv|open [JOBS]\n");
    return 2;
  }
  lat = calloc((size_t)jobs, sizeof *lat);
  lat_ret = calloc((size_t)jobs, sizeof *lat_ret);
  char dir[] = "/tmp/pawl_wake_XXXXXX";
  if (!lat || !lat_ret || !mkdtemp(dir) || chdir(dir) != 0) return 1;
  pawl_options_t o;
  pawl_options_init(&o);
  o.db = "sqlite:wake.db";
  o.node_id = "bench";
  pawl_t *p = NULL, *q = NULL;
  char err[512];
  if (pawl_open(&p, &o, err, sizeof err)) {
    fprintf(stderr, "open: %s\n", err);
    return 1;
  }
  pawl_define_c(p, "j", bench_job, NULL, NULL);
  pawl_host_opts_t ho;
  pawl_host_opts_init(&ho);
  ho.log_level = PAWL_LOG_WARN;
  int rc = strcmp(mode, "open") == 0 ? pawl_open(&q, &o, err, sizeof err)
                                     : pawl_sibling(p, &q);
  if (rc) {
    fprintf(stderr, "second handle: %s\n", err);
    return 1;
  }
  pthread_t t;
  if (strcmp(mode, "step") == 0) {
    if (pawl_step_start(p, &ho)) return 1;
    pthread_create(&t, NULL, bench_feeder, q);
    while (atomic_load(&done) < jobs) {
      if (pawl_step_wait(p, 10000) < 0 || pawl_step(p, 5) < 0) {
        fprintf(stderr, "step: %s\n", pawl_errmsg(p));
        return 1;
      }
    }
  } else {
    uv_loop_t loop;
    uv_loop_init(&loop);
    pawl_uv_opts_t uo;
    pawl_uv_opts_init(&uo);
    uo.host = &ho;
    if (pawl_attach_uv(p, &loop, &uo)) {
      fprintf(stderr, "attach: %s\n", pawl_errmsg(p));
      return 1;
    }
    uv_timer_t watch;
    uv_timer_init(&loop, &watch);
    watch.data = p;
    uv_timer_start(&watch, bench_watch, 100, 100);
    pthread_create(&t, NULL, bench_feeder, q);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
  }
  pthread_join(t, NULL);
  pawl_close(q);
  pawl_close(p);
  qsort(lat, (size_t)jobs, sizeof *lat, bench_cmp);
  qsort(lat_ret, (size_t)jobs, sizeof *lat_ret, bench_cmp);
  printf("%-4s jobs %ld, from the enqueue call: p50 %.0f us, p90 %.0f us, "
         "p99 %.0f us, max %.0f us; from its return: p50 %.0f us, p99 %.0f "
         "us\n",
         mode, jobs, lat[jobs / 2] / 1e3, lat[jobs * 90 / 100] / 1e3,
         lat[jobs * 99 / 100] / 1e3, lat[jobs - 1] / 1e3,
         lat_ret[jobs / 2] / 1e3, lat_ret[jobs * 99 / 100] / 1e3);
  unlink("wake.db");
  unlink("wake.db-wal");
  unlink("wake.db-shm");
  if (chdir("/") == 0) rmdir(dir);
  return 0;
}
