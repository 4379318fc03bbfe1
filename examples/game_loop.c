/* game_loop.c: pawl in a game's frame loop (step mode, no threads).
 *
 * A fixed timestep at 60 frames per second: each frame "updates the game"
 * (here: enqueues some work every few frames), then gives pawl a 2 ms
 * budget with pawl_step(), then sleeps until the next frame. At the end
 * it prints how many jobs ran and the worst frame overrun (how far a
 * frame's work went past its 16.7 ms): a figure for the reader, measured
 * on this machine, never asserted by the tests.
 *
 *   game_loop DB_PATH [FRAMES]      (default 300 frames: 5 seconds) */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <pawl.h>

static int64_t mono_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* A job of the game's: a little work in C (a real game: path finding,
 * saving, talking to a server). */
static int score(const pawl_job_t *job, pawl_ctx_t *ctx, void *ud) {
  (void)job;
  long *done = ud;
  volatile double x = 0;
  for (int i = 0; i < 20000; i++) x += i * 0.5;
  (*done)++;
  return pawl_ctx_set_result(ctx, "{\"ok\":true}") ? PAWL_JOB_FAILED
                                                  : PAWL_JOB_OK;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: game_loop DB_PATH [FRAMES]\n");
    return 2;
  }
  int frames = argc > 2 ? atoi(argv[2]) : 300;
  char db[1024];
  snprintf(db, sizeof db, "sqlite:%s", argv[1]);
  pawl_options_t o;
  pawl_options_init(&o);
  o.db = db;
  pawl_t *p = NULL;
  char err[512];
  if (pawl_open(&p, &o, err, sizeof err)) {
    fprintf(stderr, "game_loop: %s\n", err);
    return 1;
  }
  long done = 0;
  pawl_define_c(p, "score", score, &done, NULL);
  pawl_define(p, "greet", "return { run = function(job) "
                          "return 'hello ' .. job.payload.name end }");
  pawl_host_opts_t ho;
  pawl_host_opts_init(&ho);
  ho.log_level = PAWL_LOG_WARN;
  if (pawl_step_start(p, &ho)) {
    fprintf(stderr, "game_loop: %s\n", pawl_errmsg(p));
    return 1;
  }
  const int64_t frame_us = 1000000 / 60;
  int64_t next = mono_us(), worst = 0;
  long enqueued = 0, ran = 0;
  for (int f = 0; f < frames; f++) {
    int64_t start = mono_us();
    if (f % 3 == 0) {
      pawl_enqueue(p, "score", NULL, NULL, NULL, NULL);
      pawl_enqueue(p, "greet", "{\"name\":\"player\"}", NULL, NULL, NULL);
      enqueued += 2;
    }
    int n = pawl_step(p, 2);
    if (n > 0) ran += n;
    int64_t over = mono_us() - start - frame_us;
    if (over > worst) worst = over;
    next += frame_us;
    int64_t wait = next - mono_us();
    if (wait > 0) {
      struct timespec ts = {wait / 1000000, (wait % 1000000) * 1000};
      nanosleep(&ts, NULL);
    }
  }
  /* What is left after the last frame. */
  for (int i = 0; i < 1000 && ran < enqueued; i++) {
    int n = pawl_step(p, 50);
    if (n < 0) break;
    ran += n;
  }
  printf("frames %d, jobs enqueued %ld, ran %ld (C jobs %ld), "
         "worst frame overrun %.3f ms\n",
         frames, enqueued, ran, done, worst > 0 ? worst / 1000.0 : 0.0);
  pawl_close(p);
  return ran == enqueued ? 0 : 1;
}
