/* test_alloc.c: the allocator hook (pawl_set_allocator). A counting
 * allocator puts a header with a magic number before each block: a free
 * of memory it did not allocate (libc's, SQLite's) stops the test at
 * once, and one of its blocks freed by libc's free() is caught by the
 * sanitizer builds (an offset pointer). At close, every block it gave is
 * back. The job Lua states go through it too (lua_newstate, GC64). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pawl.h"
#include "unit.h"

#define AL_MAGIC UINT64_C(0x7061776c616c6c63)

typedef struct {
  uint64_t magic;
  size_t size;
} al_head_t;

static _Atomic long al_allocs, al_frees, al_foreign;

static al_head_t *al_check(void *ptr) {
  al_head_t *h = (al_head_t *)ptr - 1;
  if (h->magic != AL_MAGIC) {
    atomic_fetch_add(&al_foreign, 1);
    fprintf(stderr, "freed a block the test allocator did not give\n");
    abort();
  }
  return h;
}

static void *al_malloc(void *ud, size_t n) {
  (void)ud;
  al_head_t *h = malloc(sizeof *h + n);
  if (!h) return NULL;
  h->magic = AL_MAGIC;
  h->size = n;
  atomic_fetch_add(&al_allocs, 1);
  return h + 1;
}

static void *al_realloc(void *ud, void *ptr, size_t n) {
  if (!ptr) return al_malloc(ud, n);
  al_head_t *h = al_check(ptr);
  al_head_t *g = realloc(h, sizeof *g + n);
  if (!g) return NULL;
  g->size = n;
  return g + 1;
}

static void al_free(void *ud, void *ptr) {
  (void)ud;
  al_head_t *h = al_check(ptr);
  h->magic = 0;
  atomic_fetch_add(&al_frees, 1);
  free(h);
}

static const pawl_allocator_t al_hook = {al_malloc, al_realloc, al_free,
                                         NULL};

static pawl_t *al_open(const char *db) {
  pawl_options_t o;
  pawl_options_init(&o);
  o.db = db;
  o.node_id = "node-alloc";
  pawl_t *p = NULL;
  char err[512];
  if (pawl_open(&p, &o, err, sizeof err))
    unit_fail(__FILE__, __LINE__, "open: %s", err);
  CHECK_OK(pawl_define(p, "ok", "return { run = function(job) "
                                "local t = {} for i = 1, 100 do t[i] = "
                                "tostring(i) end return { n = #t } end }"));
  CHECK_OK(pawl_define(p, "bad", "return { max_attempts = 1, run = "
                                 "function() error('nope') end }"));
  return p;
}

static void al_quiet(pawl_host_opts_t *o) {
  pawl_host_opts_init(o);
  o->log_level = PAWL_LOG_ERROR;
}

static void al_check_balanced(void) {
  CHECK_OK(pawl_set_allocator(NULL));
  CHECK_INT(atomic_load(&al_foreign), ==, 0);
  CHECK_INT(atomic_load(&al_allocs), >, 0);
  CHECK_INT(atomic_load(&al_allocs), ==, atomic_load(&al_frees));
}

void test_alloc_balanced_step(void) {
  CHECK_OK(pawl_set_allocator(&al_hook));
  pawl_t *p = al_open("sqlite:alloc_step.db");
  pawl_host_opts_t o;
  al_quiet(&o);
  long before = atomic_load(&al_allocs);
  CHECK_OK(pawl_step_start(p, &o));
  /* A Lua state with its libraries is thousands of allocations; pawl's
   * own C side of step mode is a few dozen. */
  CHECK_INT(atomic_load(&al_allocs) - before, >, 1000);
  pawl_id_t ok, bad;
  CHECK_OK(pawl_enqueue(p, "ok", NULL, NULL, &ok, NULL));
  CHECK_OK(pawl_enqueue(p, "bad", NULL, NULL, &bad, NULL));
  CHECK_INT(pawl_step(p, 1000), ==, 2);
  pawl_job_t *j = NULL;
  CHECK_OK(pawl_get(p, &ok, &j));
  CHECK_INT(j->state, ==, PAWL_SUCCEEDED);
  pawl_job_free(j);
  pawl_history_t *hist = NULL;
  CHECK_OK(pawl_history(p, &bad, &hist));
  CHECK_INT(hist->nattempts, ==, 1);
  pawl_history_free(hist);
  pawl_stats_t *st = NULL;
  CHECK_OK(pawl_stats(p, &st));
  pawl_stats_free(st);
  pawl_close(p);
  al_check_balanced();
}

void test_alloc_balanced_threads(void) {
  CHECK_OK(pawl_set_allocator(&al_hook));
  pawl_t *p = al_open("sqlite:alloc_threads.db");
  pawl_host_opts_t o;
  al_quiet(&o);
  o.workers = 2;
  o.until_idle = 1;
  o.idle_wait_ms = -1;
  pawl_id_t ids[20];
  for (int i = 0; i < 20; i++)
    CHECK_OK(pawl_enqueue(p, i % 5 ? "ok" : "bad", NULL, NULL, &ids[i], NULL));
  CHECK_OK(pawl_start(p, &o));
  CHECK_OK(pawl_wait(p, -1));
  for (int i = 0; i < 20; i++) {
    pawl_job_t *j = NULL;
    CHECK_OK(pawl_get(p, &ids[i], &j));
    CHECK_INT(j->state, ==, i % 5 ? PAWL_SUCCEEDED : PAWL_FAILED);
    pawl_job_free(j);
  }
  pawl_close(p);
  al_check_balanced();
}

void test_alloc_refusals(void) {
  pawl_allocator_t half = al_hook;
  half.free_fn = NULL;
  CHECK_INT(pawl_set_allocator(&half), ==, PAWL_EINVAL);
  pawl_t *p = al_open("sqlite:alloc_ref.db");
  CHECK_INT(pawl_set_allocator(&al_hook), ==, PAWL_EBUSY);
  pawl_close(p);
  CHECK_OK(pawl_set_allocator(&al_hook));
  CHECK_OK(pawl_set_allocator(NULL));
  CHECK_INT(atomic_load(&al_allocs), ==, 0);
}
