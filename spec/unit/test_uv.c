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

/* ---- other threads: siblings wake the loop; the handle refuses them ----- */

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>

#define UVT_THREADS 4
#define UVT_PER_THREAD 10000

static _Atomic int uvt_runs[UVT_THREADS * UVT_PER_THREAD];

static int uvt_counted(const pawl_job_t *job, pawl_ctx_t *ctx, void *ud) {
  (void)ctx;
  (void)ud;
  if (!pthread_equal(pthread_self(), uvt_loop_thread))
    atomic_fetch_add(&uvt_off_loop, 1);
  long i = strtol(job->payload + 5, NULL, 10); /* {"i":N} */
  if (i >= 0 && i < UVT_THREADS * UVT_PER_THREAD)
    atomic_fetch_add(&uvt_runs[i], 1);
  atomic_fetch_add(&uvt_ran, 1);
  return PAWL_JOB_OK;
}

static void uvt_integrity(const char *path) {
  sqlite3 *db = NULL;
  CHECK_INT(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), ==,
            SQLITE_OK);
  sqlite3_stmt *st = NULL;
  CHECK_INT(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL),
            ==, SQLITE_OK);
  CHECK_INT(sqlite3_step(st), ==, SQLITE_ROW);
  CHECK_STR((const char *)sqlite3_column_text(st, 0), "ok");
  sqlite3_finalize(st);
  sqlite3_close(db);
}

typedef struct {
  pawl_t *p; /* the attached handle: refuses this thread */
  pawl_t *q; /* this thread's sibling */
  int index;
  int enq_rc, attach_rc, detach_rc, step_rc;
} uvt_feeder_t;

static void *uvt_feeder(void *arg) {
  uvt_feeder_t *f = arg;
  f->enq_rc = pawl_enqueue(f->p, "counted", "{\"i\":-1}", NULL, NULL, NULL);
  /* Refused before the loop is looked at: a loop never initialised (a
   * real one would be made and closed on this thread, which libuv closes
   * with a raw syscall that ThreadSanitizer does not see). */
  static uv_loop_t never_used;
  f->attach_rc = pawl_attach_uv(f->p, &never_used, NULL);
  f->detach_rc = pawl_detach_uv(f->p);
  f->step_rc = pawl_step(f->p, 1);
  pawl_close(f->p); /* refused: attached, and not the loop's thread */
  char payload[32];
  for (int k = 0; k < UVT_PER_THREAD; k++) {
    snprintf(payload, sizeof payload, "{\"i\":%d}",
             f->index * UVT_PER_THREAD + k);
    CHECK_OK(pawl_enqueue(f->q, "counted", payload, NULL, NULL, NULL));
  }
  return NULL;
}

/* Four threads enqueue 10,000 jobs each through siblings while the handle
 * is attached to this thread's loop, with the poll a minute away: the
 * jobs come in through the wake (uv_async). Every job runs exactly once,
 * on the loop thread; what the threads ask of the attached handle itself
 * (enqueue, attach, detach, step, close) is refused and changes nothing;
 * the database is intact. */
void test_uv_sibling_threads(void) {
  uv_loop_t loop;
  CHECK_INT(uv_loop_init(&loop), ==, 0);
  uvt_loop_thread = pthread_self();
  pawl_t *p = uvt_open("sqlite:uv_sib.db");
  CHECK_OK(pawl_define_c(p, "counted", uvt_counted, NULL, NULL));
  pawl_host_opts_t ho;
  pawl_host_opts_init(&ho);
  ho.log_level = PAWL_LOG_ERROR;
  ho.poll_ms = 60000;
  pawl_uv_opts_t o;
  pawl_uv_opts_init(&o);
  o.host = &ho;
  CHECK_OK(pawl_attach_uv(p, &loop, &o));
  uvt_feeder_t f[UVT_THREADS];
  pthread_t t[UVT_THREADS];
  for (int i = 0; i < UVT_THREADS; i++) {
    f[i] = (uvt_feeder_t){.p = p, .index = i};
    CHECK_OK(pawl_sibling(p, &f[i].q));
    CHECK_INT(pthread_create(&t[i], NULL, uvt_feeder, &f[i]), ==, 0);
  }
  uvt_state_t s = {.p = p, .want = UVT_THREADS * UVT_PER_THREAD};
  uvt_run(&loop, &s);
  for (int i = 0; i < UVT_THREADS; i++) {
    CHECK_INT(pthread_join(t[i], NULL), ==, 0);
    CHECK_INT(f[i].enq_rc, ==, PAWL_EMISUSE);
    CHECK_INT(f[i].attach_rc, ==, PAWL_EBUSY);
    CHECK_INT(f[i].detach_rc, ==, PAWL_EMISUSE);
    CHECK_INT(f[i].step_rc, ==, PAWL_EMISUSE);
    pawl_close(f[i].q);
  }
  CHECK_INT(atomic_load(&uvt_ran), ==, UVT_THREADS * UVT_PER_THREAD);
  CHECK_INT(atomic_load(&uvt_off_loop), ==, 0);
  for (int i = 0; i < UVT_THREADS * UVT_PER_THREAD; i++)
    if (atomic_load(&uvt_runs[i]) != 1)
      unit_fail(__FILE__, __LINE__, "job %d ran %d times", i,
                atomic_load(&uvt_runs[i]));
  pawl_close(p);
  CHECK_INT(uv_loop_close(&loop), ==, 0);
  uvt_integrity("uv_sib.db");
}

/* ---- pawl_close while attached ------------------------------------------ */

typedef struct {
  pawl_t *p;
  int closed;
  int ev_detach_rc, ev_calls;
} uvt_close_t;

static void uvt_close_event(void *data, const pawl_job_event_t *ev) {
  (void)ev;
  uvt_close_t *c = data;
  c->ev_calls++;
  c->ev_detach_rc = pawl_detach_uv(c->p); /* inside a step: refused */
  pawl_close(c->p);                       /* inside a step: nothing */
}

static void uvt_close_watch(uv_timer_t *t) {
  uvt_close_t *c = t->data;
  if (atomic_load(&uvt_ran) < 3) return;
  /* Closed while still attached, from a callback of the loop's own: the
   * handle is detached first, and the loop ends by itself once the
   * handles are closed (no timer of a freed handle fires). */
  pawl_close(c->p);
  c->closed = 1;
  uv_close((uv_handle_t *)t, NULL);
}

static void uvt_close_guard(uv_timer_t *t) {
  (void)t;
  unit_fail(__FILE__, __LINE__, "the loop did not end after pawl_close");
}

void test_uv_close_attached(void) {
  uv_loop_t loop;
  CHECK_INT(uv_loop_init(&loop), ==, 0);
  uvt_loop_thread = pthread_self();
  pawl_t *p = uvt_open("sqlite:uv_close.db");
  uvt_close_t c = {.p = p};
  pawl_host_opts_t ho;
  pawl_host_opts_init(&ho);
  ho.log_level = PAWL_LOG_ERROR;
  ho.event_fn = uvt_close_event;
  ho.event_data = &c;
  pawl_uv_opts_t o;
  pawl_uv_opts_init(&o);
  o.host = &ho;
  CHECK_OK(pawl_attach_uv(p, &loop, &o));
  for (int i = 0; i < 3; i++)
    CHECK_OK(pawl_enqueue(p, "work", NULL, NULL, NULL, NULL));
  uv_timer_t watch, guard;
  uv_timer_init(&loop, &watch);
  uv_timer_init(&loop, &guard);
  watch.data = &c;
  uv_timer_start(&watch, uvt_close_watch, 1, 1);
  uv_timer_start(&guard, uvt_close_guard, 120000, 0);
  uv_unref((uv_handle_t *)&guard);
  uv_run(&loop, UV_RUN_DEFAULT); /* returns once nothing keeps it alive */
  CHECK_INT(c.closed, ==, 1);
  CHECK_INT(atomic_load(&uvt_ran), ==, 3);
  CHECK_INT(c.ev_calls, >, 0);
  CHECK_INT(c.ev_detach_rc, ==, PAWL_EMISUSE);
  uv_close((uv_handle_t *)&guard, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  CHECK_INT(uv_loop_close(&loop), ==, 0);
}

/* pawl_attach_uv on a handle stepping on another thread: PAWL_EBUSY, and
 * the stepping thread's handle is untouched; after pawl_wait the message
 * says the host stopped. */
typedef struct {
  pawl_t *p;
  int rc;
} uvt_other_attach_t;

static void *uvt_other_attach(void *arg) {
  uvt_other_attach_t *a = arg;
  static uv_loop_t never_used; /* refused before it is looked at */
  a->rc = pawl_attach_uv(a->p, &never_used, NULL);
  return NULL;
}

void test_uv_attach_busy(void) {
  pawl_t *p = uvt_open("sqlite:uv_busy.db");
  pawl_host_opts_t ho;
  pawl_host_opts_init(&ho);
  ho.log_level = PAWL_LOG_ERROR;
  CHECK_OK(pawl_step_start(p, &ho));
  uvt_other_attach_t a = {.p = p};
  pthread_t t;
  CHECK_INT(pthread_create(&t, NULL, uvt_other_attach, &a), ==, 0);
  CHECK_INT(pthread_join(t, NULL), ==, 0);
  CHECK_INT(a.rc, ==, PAWL_EBUSY);
  CHECK_OK(pawl_enqueue(p, "work", NULL, NULL, NULL, NULL));
  CHECK_INT(pawl_step(p, 5), ==, 1);
  pawl_close(p);
  p = uvt_open("sqlite:uv_busy.db");
  CHECK_OK(pawl_start(p, &ho));
  pawl_stop(p, PAWL_STOP_NOW);
  CHECK_OK(pawl_wait(p, -1));
  uv_loop_t loop;
  CHECK_INT(uv_loop_init(&loop), ==, 0);
  CHECK_INT(pawl_attach_uv(p, &loop, NULL), ==, PAWL_EBUSY);
  CHECK(strstr(pawl_errmsg(p), "has stopped") != NULL);
  pawl_close(p);
  CHECK_INT(uv_loop_close(&loop), ==, 0);
}
