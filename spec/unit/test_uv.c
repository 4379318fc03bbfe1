/* test_uv.c: pawl attached to a libuv loop (pawl_attach_uv). Loop mode:
 * jobs run on the loop thread, enqueues on the loop thread wake it at
 * once, another handle's are seen at the next poll. Threads mode: the
 * loop keeps turning while a job is held by a gate. No sleeps: the loop
 * is stopped by what the test sees happen, with a generous guard timer. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdatomic.h>
#include <uv.h>

#include "pawl.h"
#include "unit.h"

static _Atomic int uvt_ran, uvt_off_loop, uvt_gate, uvt_started;
static pthread_t uvt_loop_thread;

static int uvt_work(const pawl_job_t *job, pawl_ctx_t *ctx, void *ud) {
  (void)job;
  (void)ctx;
  (void)ud;
  if (!pthread_equal(pthread_self(), uvt_loop_thread))
    atomic_fetch_add(&uvt_off_loop, 1);
  atomic_fetch_add(&uvt_ran, 1);
  return PAWL_JOB_OK;
}

/* Held until the test opens the gate (a minute at most). */
static int uvt_gated(const pawl_job_t *job, pawl_ctx_t *ctx, void *ud) {
  (void)job;
  (void)ctx;
  (void)ud;
  atomic_store(&uvt_started, 1);
  for (int i = 0; i < 60000 && !atomic_load(&uvt_gate); i++) {
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  atomic_fetch_add(&uvt_ran, 1);
  return PAWL_JOB_OK;
}

static pawl_t *uvt_open(const char *db) {
  pawl_options_t o;
  pawl_options_init(&o);
  o.db = db;
  o.node_id = "node-uv";
  pawl_t *p = NULL;
  char err[512];
  if (pawl_open(&p, &o, err, sizeof err))
    unit_fail(__FILE__, __LINE__, "open: %s", err);
  CHECK_OK(pawl_define_c(p, "work", uvt_work, NULL, NULL));
  CHECK_OK(pawl_define_c(p, "gated", uvt_gated, NULL, NULL));
  return p;
}

typedef struct {
  pawl_t *p;
  int want;
  int ticks_while_held;
  int failed;
} uvt_state_t;

static void uvt_guard(uv_timer_t *t) {
  uvt_state_t *s = t->data;
  s->failed = 1;
  uv_stop(t->loop);
}

static void uvt_watch(uv_timer_t *t) {
  uvt_state_t *s = t->data;
  if (atomic_load(&uvt_started) && !atomic_load(&uvt_gate)) {
    /* The loop turns while the job is held. */
    if (++s->ticks_while_held >= 5) atomic_store(&uvt_gate, 1);
  }
  if (atomic_load(&uvt_ran) >= s->want) {
    CHECK_OK(pawl_detach_uv(s->p));
    uv_close((uv_handle_t *)t, NULL);
    uv_stop(t->loop);
  }
}

static void uvt_enqueue_later(uv_timer_t *t) {
  uvt_state_t *s = t->data;
  for (int i = 0; i < 2; i++)
    CHECK_OK(pawl_enqueue(s->p, "work", NULL, NULL, NULL, NULL));
  uv_close((uv_handle_t *)t, NULL);
}

static void *uvt_other_handle(void *arg) {
  (void)arg;
  pawl_t *p2 = uvt_open("sqlite:uv_loop.db");
  CHECK_OK(pawl_enqueue(p2, "work", NULL, NULL, NULL, NULL));
  pawl_close(p2);
  return NULL;
}

static void uvt_run(uv_loop_t *loop, uvt_state_t *s) {
  uv_timer_t watch, guard;
  uv_timer_init(loop, &watch);
  uv_timer_init(loop, &guard);
  watch.data = guard.data = s;
  uv_timer_start(&watch, uvt_watch, 1, 1);
  uv_timer_start(&guard, uvt_guard, 120000, 0);
  uv_unref((uv_handle_t *)&guard);
  uv_run(loop, UV_RUN_DEFAULT);
  CHECK_INT(s->failed, ==, 0);
  uv_close((uv_handle_t *)&guard, NULL);
  if (!uv_is_closing((uv_handle_t *)&watch))
    uv_close((uv_handle_t *)&watch, NULL);
  uv_run(loop, UV_RUN_DEFAULT); /* the close callbacks */
}

void test_uv_loop_runs_jobs(void) {
  uv_loop_t loop;
  CHECK_INT(uv_loop_init(&loop), ==, 0);
  uvt_loop_thread = pthread_self();
  pawl_t *p = uvt_open("sqlite:uv_loop.db");
  for (int i = 0; i < 3; i++)
    CHECK_OK(pawl_enqueue(p, "work", NULL, NULL, NULL, NULL));
  pawl_host_opts_t ho;
  pawl_host_opts_init(&ho);
  ho.log_level = PAWL_LOG_ERROR;
  ho.poll_ms = 50; /* another handle's enqueue: seen at the next poll */
  pawl_uv_opts_t o;
  pawl_uv_opts_init(&o);
  o.budget_ms = 2;
  o.host = &ho;
  CHECK_OK(pawl_attach_uv(p, &loop, &o));
  CHECK_INT(pawl_attach_uv(p, &loop, &o), ==, PAWL_EBUSY);
  uvt_state_t s = {.p = p, .want = 6};
  uv_timer_t later;
  uv_timer_init(&loop, &later);
  later.data = &s;
  uv_timer_start(&later, uvt_enqueue_later, 5, 0);
  pthread_t t;
  CHECK_INT(pthread_create(&t, NULL, uvt_other_handle, NULL), ==, 0);
  uvt_run(&loop, &s);
  CHECK_INT(pthread_join(t, NULL), ==, 0);
  CHECK_INT(atomic_load(&uvt_ran), ==, 6);
  CHECK_INT(atomic_load(&uvt_off_loop), ==, 0);
  CHECK_INT(pawl_detach_uv(p), ==, PAWL_EINVAL);
  pawl_close(p);
  CHECK_INT(uv_loop_close(&loop), ==, 0);
}

void test_uv_threads_loop_serves_while_job_runs(void) {
  uv_loop_t loop;
  CHECK_INT(uv_loop_init(&loop), ==, 0);
  uvt_loop_thread = pthread_self();
  pawl_t *p = uvt_open("sqlite:uv_threads.db");
  pawl_host_opts_t ho;
  pawl_host_opts_init(&ho);
  ho.log_level = PAWL_LOG_ERROR;
  ho.workers = 2;
  pawl_uv_opts_t o;
  pawl_uv_opts_init(&o);
  o.mode = PAWL_UV_THREADS;
  o.host = &ho;
  CHECK_OK(pawl_attach_uv(p, &loop, &o));
  CHECK_OK(pawl_enqueue(p, "gated", NULL, NULL, NULL, NULL));
  CHECK_OK(pawl_enqueue(p, "work", NULL, NULL, NULL, NULL));
  uvt_state_t s = {.p = p, .want = 2};
  uvt_run(&loop, &s);
  CHECK_INT(s.ticks_while_held, >=, 5);
  CHECK_INT(atomic_load(&uvt_ran), ==, 2);
  CHECK_INT(atomic_load(&uvt_off_loop), ==, 1); /* work ran on a worker */
  pawl_close(p);
  CHECK_INT(uv_loop_close(&loop), ==, 0);
}

void test_uv_refusals(void) {
  uv_loop_t loop;
  CHECK_INT(uv_loop_init(&loop), ==, 0);
  pawl_t *p = uvt_open("sqlite:uv_ref.db");
  pawl_uv_opts_t o;
  pawl_uv_opts_init(&o);
  o.mode = PAWL_UV_THREADPOOL;
  CHECK_INT(pawl_attach_uv(p, &loop, &o), ==, PAWL_EINVAL);
  o.mode = 7;
  CHECK_INT(pawl_attach_uv(p, &loop, &o), ==, PAWL_EINVAL);
  o.mode = PAWL_UV_LOOP;
  o.budget_ms = 1001;
  CHECK_INT(pawl_attach_uv(p, &loop, &o), ==, PAWL_EINVAL);
  CHECK_INT(pawl_attach_uv(p, NULL, NULL), ==, PAWL_EINVAL);
  CHECK_INT(pawl_detach_uv(p), ==, PAWL_EINVAL);
  /* A handle with threads: not in loop mode. */
  pawl_host_opts_t ho;
  pawl_host_opts_init(&ho);
  ho.log_level = PAWL_LOG_ERROR;
  CHECK_OK(pawl_start(p, &ho));
  CHECK_INT(pawl_attach_uv(p, &loop, NULL), ==, PAWL_EBUSY);
  pawl_close(p);
  CHECK_INT(uv_loop_close(&loop), ==, 0);
}
