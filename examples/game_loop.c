/* game_loop.c: pawl in a game's frame loop (step mode, no threads of
 * pawl's).
 *
 * A fixed timestep at 60 frames per second: each frame "updates the game"
 * (here: enqueues some work every few frames), then gives pawl a 2 ms
 * budget with pawl_step(), then sleeps until the next frame. At the end
 * it prints how many jobs ran, the worst time pawl took in a frame
 * (enqueues and step) and the worst frame overrun (how far a frame's work
 * went past its 16.7 ms): figures for the reader, measured on this
 * machine, never asserted by the tests.
 *
 * Checkpoints: SQLite's automatic checkpoint would run inside a commit
 * of pawl_step() or pawl_enqueue() now and then (an fsync: 10 ms and more
 * on a disk), that is inside a frame. So the handle is opened with
 * manual_checkpoint, and a thread of the game's own checkpoints through a
 * sibling handle (pawl_sibling(): its own connection; a checkpoint never
 * blocks the frame's writes). A game without threads would call
 * pawl_checkpoint() between levels or on a loading screen instead.
 *
 *   game_loop DB_PATH [FRAMES [auto]]
 *     FRAMES: default 300 (5 seconds); "auto": SQLite's automatic
 *     checkpoints instead (what the defaults do), for comparison. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* The game's checkpointer thread: every 100 ms, off the frame. */
typedef struct {
  pawl_t *q; /* a sibling of the game's handle, this thread's own */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int stop;
  long checkpoints, failures;
} checkpointer_t;

static void *checkpointer_main(void *arg) {
  checkpointer_t *c = arg;
  pthread_mutex_lock(&c->mu);
  while (!c->stop) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 100 * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&c->cv, &c->mu, &ts);
    pthread_mutex_unlock(&c->mu);
    if (pawl_checkpoint(c->q) == 0)
      c->checkpoints++;
    else
      c->failures++;
    pthread_mutex_lock(&c->mu);
  }
  pthread_mutex_unlock(&c->mu);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: game_loop DB_PATH [FRAMES [auto]]\n");
    return 2;
  }
  int frames = argc > 2 ? atoi(argv[2]) : 300;
  int autockpt = argc > 3 && strcmp(argv[3], "auto") == 0;
  char db[1024];
  snprintf(db, sizeof db, "sqlite:%s", argv[1]);
  pawl_options_t o;
  pawl_options_init(&o);
  o.db = db;
  o.manual_checkpoint = !autockpt; /* no checkpoint inside a frame */
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
  checkpointer_t c = {.stop = 0};
  pthread_mutex_init(&c.mu, NULL);
  pthread_cond_init(&c.cv, NULL);
  pthread_t ckpt;
  if (!autockpt) {
    if (pawl_sibling(p, &c.q) ||
        pthread_create(&ckpt, NULL, checkpointer_main, &c) != 0) {
      fprintf(stderr, "game_loop: checkpointer: %s\n", pawl_errmsg(p));
      return 1;
    }
  }
  const int64_t frame_us = 1000000 / 60;
  int64_t next = mono_us(), worst = 0, worst_pawl = 0;
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
    int64_t took = mono_us() - start;
    if (took > worst_pawl) worst_pawl = took;
    int64_t over = took - frame_us;
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
  if (!autockpt) {
    pthread_mutex_lock(&c.mu);
    c.stop = 1;
    pthread_cond_signal(&c.cv);
    pthread_mutex_unlock(&c.mu);
    pthread_join(ckpt, NULL);
    /* The last pages, before the game exits (a loading screen would do
     * the same between levels). */
    if (pawl_checkpoint(c.q) == 0) c.checkpoints++;
    pawl_close(c.q);
  }
  printf("frames %d, jobs enqueued %ld, ran %ld (C jobs %ld), "
         "worst pawl time in a frame %.3f ms, worst frame overrun %.3f ms, "
         "checkpoints %s %ld (failed %ld)\n",
         frames, enqueued, ran, done, worst_pawl / 1000.0,
         worst > 0 ? worst / 1000.0 : 0.0,
         autockpt ? "automatic, in frames:" : "off the frame:", c.checkpoints,
         c.failures);
  pawl_close(p);
  return ran == enqueued && c.failures == 0 &&
                 (autockpt || c.checkpoints > 0)
             ? 0
             : 1;
}
