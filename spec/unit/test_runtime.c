/* test_runtime.c: what the stores record about an attempt's times, on
 * both backends, through the public API on an injected clock.
 *
 * An attempt's run time is its body's, as the worker measured it (the
 * outcome's started_at and ended_at), not the time from its claim to the
 * finish's commit: a job claimed ahead of a free worker waits without
 * running, and an outcome waits for the completer's next batch. Every
 * figure built on these times (pawl show's duration_ms and queue_wait_ms,
 * a batch's exec_ms, pawl top's running jobs) is only as true as they
 * are. Each test names its clock readings, so every time is exact. */
#include <stdatomic.h>
#include <string.h>

#include "pawl.h"
#include "pgtest.h"
#include "unit.h"
#include "unit_pawl.h"

#define T0 INT64_C(1800000000000)

static _Atomic int64_t rt_now = T0;

static const char *rt_sqlite_url(const char *name) {
  static char url[4200];
  snprintf(url, sizeof url, "sqlite:%s/%s.db", unit_tmpdir(), name);
  return url;
}

static pawl_t *rt_open(const char *url) {
  atomic_store(&rt_now, T0);
  return unit_open_clocked(url, "node-rt", &rt_now, 3600000);
}

static pawl_id_t rt_enqueue(pawl_t *p, int32_t max_attempts) {
  pawl_enqueue_opts_t o;
  pawl_enqueue_opts_init(&o);
  o.max_attempts = max_attempts;
  pawl_id_t id;
  CHECK_OK(pawl_enqueue(p, "work", NULL, &o, &id, NULL));
  return id;
}

/* Claims `max` jobs (the last `prefetch` of them ahead of a free worker,
 * as the host claims); returns how many, in `jobs`. */
static size_t rt_claim(pawl_t *p, size_t max, size_t prefetch,
                       pawl_job_t ***jobs) {
  pawl_claim_opts_t co;
  memset(&co, 0, sizeof co);
  co.defer_start = 1;
  co.prefetch = prefetch;
  size_t n = 0;
  CHECK_OK(pawl_claim(p, &co, max, jobs, &n));
  return n;
}

static int rt_finish(pawl_t *p, const pawl_job_t *j, pawl_outcome_kind_t kind,
                     int64_t started, int64_t ended) {
  pawl_outcome_t o;
  memset(&o, 0, sizeof o);
  o.id = j->id;
  o.attempt = j->attempt;
  o.kind = kind;
  o.store_key = j->store_key;
  o.error = kind == PAWL_OUT_SUCCEEDED ? NULL : "boom";
  o.run_at = atomic_load(&rt_now) + 3600000; /* a retry stays out of the way */
  o.started_at = started;
  o.ended_at = ended;
  int rc = 0;
  int r = pawl_finish(p, &o, 1, &rc);
  return r ? r : rc;
}

/* The last attempt of job `id`. */
static pawl_attempt_t rt_attempt(pawl_t *p, const pawl_id_t *id,
                                 size_t want) {
  pawl_history_t *h = NULL;
  CHECK_OK(pawl_history(p, id, &h));
  CHECK_INT(h->nattempts, ==, want);
  pawl_attempt_t a = h->attempts[want - 1];
  a.node = a.outcome = a.error = NULL; /* freed below */
  pawl_history_free(h);
  return a;
}

/* A body that started 5 s after its claim and ran 40 ms, its outcome
 * written 4 s later: the attempt ran 40 ms and waited 6 s in all (1 s
 * due, 5 s claimed ahead). Success, retry and failure alike. */
static void rt_measured(const char *url) {
  pawl_t *p = rt_open(url);
  pawl_outcome_kind_t kinds[3] = {PAWL_OUT_SUCCEEDED, PAWL_OUT_RETRY,
                                  PAWL_OUT_FAILED};
  for (int k = 0; k < 3; k++) {
    int64_t base = atomic_load(&rt_now);
    pawl_id_t id = rt_enqueue(p, 3);
    atomic_store(&rt_now, base + 1000);
    pawl_job_t **jobs = NULL;
    CHECK_INT(rt_claim(p, 1, 0, &jobs), ==, 1);
    atomic_store(&rt_now, base + 10000);
    CHECK_INT(rt_finish(p, jobs[0], kinds[k], base + 6000, base + 6040), ==,
              0);
    pawl_attempt_t a = rt_attempt(p, &id, 1);
    CHECK_INT(a.scheduled_at, ==, base);
    CHECK_INT(a.started_at, ==, base + 6000);
    CHECK_INT(a.ended_at, ==, base + 6040);
    if (kinds[k] == PAWL_OUT_SUCCEEDED) {
      pawl_job_t *j = NULL;
      CHECK_OK(pawl_get(p, &id, &j));
      CHECK_INT(j->started_at, ==, base + 6000);
      CHECK_INT(j->finished_at, ==, base + 6040);
      pawl_job_free(j);
    }
    pawl_jobs_free(jobs, 1);
    atomic_store(&rt_now, base + 20000);
  }
  pawl_close(p);
}

/* Times outside the claim and the finish are kept within them; times not
 * measured are the claim's and the finish's; bad ones are refused. */
static void rt_bounds(const char *url) {
  pawl_t *p = rt_open(url);
  struct {
    int64_t start, end;       /* offsets from the claim; -1: 0 (none) */
    int64_t want_start, want_end;
  } cases[] = {
      {-500, 100, 0, 100},    /* started before its claim: the claim */
      {200, 9000, 200, 3000}, /* ended after the finish: the finish */
      {-1, -1, 0, 3000},      /* not measured: claim to finish */
      {200, -1, 200, 3000},   /* no end: the finish */
      {-1, 100, 0, 100},      /* no start: the claim */
      {5000, 6000, 3000, 3000}, /* both after the finish */
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    int64_t claim = atomic_load(&rt_now) + 1000;
    pawl_id_t id = rt_enqueue(p, 1);
    atomic_store(&rt_now, claim);
    pawl_job_t **jobs = NULL;
    CHECK_INT(rt_claim(p, 1, 0, &jobs), ==, 1);
    atomic_store(&rt_now, claim + 3000);
    int64_t s = cases[i].start < 0 ? 0 : claim + cases[i].start;
    int64_t e = cases[i].end < 0 ? 0 : claim + cases[i].end;
    if (cases[i].start == -500) s = claim - 500;
    CHECK_INT(rt_finish(p, jobs[0], i % 2 ? PAWL_OUT_FAILED
                                          : PAWL_OUT_SUCCEEDED, s, e),
              ==, 0);
    pawl_attempt_t a = rt_attempt(p, &id, 1);
    if (a.started_at != claim + cases[i].want_start ||
        a.ended_at != claim + cases[i].want_end)
      unit_fail(__FILE__, __LINE__,
                "case %zu: started %+lld ended %+lld, want %+lld %+lld", i,
                (long long)(a.started_at - claim),
                (long long)(a.ended_at - claim),
                (long long)cases[i].want_start, (long long)cases[i].want_end);
    pawl_jobs_free(jobs, 1);
  }
  /* Refused before anything is written. */
  pawl_id_t id = rt_enqueue(p, 1);
  pawl_job_t **jobs = NULL;
  CHECK_INT(rt_claim(p, 1, 0, &jobs), ==, 1);
  int64_t now = atomic_load(&rt_now);
  CHECK_INT(rt_finish(p, jobs[0], PAWL_OUT_SUCCEEDED, now, now - 1), ==,
            PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "before started_at") != NULL);
  CHECK_INT(rt_finish(p, jobs[0], PAWL_OUT_SUCCEEDED, -5, 0), ==,
            PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "started_at") != NULL);
  CHECK_INT(rt_finish(p, jobs[0], PAWL_OUT_SUCCEEDED, 0,
                      PAWL_TIME_MAX_MS + 1),
            ==, PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "ended_at") != NULL);
  pawl_job_t *j = NULL;
  CHECK_OK(pawl_get(p, &id, &j));
  CHECK_INT(j->state, ==, PAWL_RUNNING);
  pawl_job_free(j);
  pawl_jobs_free(jobs, 1);
  pawl_close(p);
}

/* A batch's exec_ms sums its children's bodies: three children claimed
 * together, each run 10 ms one after the other, their outcomes written
 * together 20 s later, ran 30 ms, not 60 s. */
static void rt_batch(const char *url) {
  pawl_t *p = rt_open(url);
  pawl_enqueue_item_t items[3] = {
      {"work", NULL, NULL}, {"work", NULL, NULL}, {"work", NULL, NULL}};
  pawl_id_t batch;
  CHECK_OK(pawl_batch_enqueue(p, items, 3, NULL, &batch, NULL));
  pawl_job_t **jobs = NULL;
  CHECK_INT(rt_claim(p, 3, 2, &jobs), ==, 3);
  atomic_store(&rt_now, T0 + 20000);
  pawl_outcome_t outs[3];
  memset(outs, 0, sizeof outs);
  for (int i = 0; i < 3; i++) {
    outs[i].id = jobs[i]->id;
    outs[i].attempt = jobs[i]->attempt;
    outs[i].kind = PAWL_OUT_SUCCEEDED;
    outs[i].started_at = T0 + 1000 + 10 * i;
    outs[i].ended_at = T0 + 1010 + 10 * i;
  }
  CHECK_OK(pawl_finish(p, outs, 3, NULL));
  pawl_batch_t b;
  CHECK_OK(pawl_batch_get(p, &batch, &b));
  CHECK_INT(b.succeeded, ==, 3);
  CHECK_INT(b.exec_ms, ==, 30);
  pawl_jobs_free(jobs, 3);
  pawl_close(p);
}

/* Events of job `id` are in non-decreasing time. */
static void rt_events_ordered(pawl_t *p, const pawl_id_t *id) {
  pawl_history_t *h = NULL;
  CHECK_OK(pawl_history(p, id, &h));
  for (size_t i = 1; i < h->nevents; i++)
    if (h->events[i].at < h->events[i - 1].at)
      unit_fail(__FILE__, __LINE__, "event %zu (%s) at %lld before %lld", i,
                h->events[i].reason, (long long)h->events[i].at,
                (long long)h->events[i - 1].at);
  pawl_history_free(h);
}

/* A claim with a prefetch: the jobs past max - prefetch are claimed
 * ahead, not started (started_at 0, their attempt "claimed", their claim
 * event at the claim); pawl_begin() or a STARTED outcome records the
 * start, capped at now; a job handed back unstarted keeps no start, and
 * its events stay in order. */
static void rt_ahead(const char *url) {
  pawl_t *p = rt_open(url);
  pawl_id_t ids[4];
  for (int i = 0; i < 4; i++) ids[i] = rt_enqueue(p, 3);
  atomic_store(&rt_now, T0 + 1000);
  pawl_job_t **jobs = NULL;
  CHECK_INT(rt_claim(p, 4, 3, &jobs), ==, 4); /* one free worker */
  CHECK_INT(jobs[0]->started_at, ==, T0 + 1000);
  for (int i = 1; i < 4; i++) CHECK_INT(jobs[i]->started_at, ==, 0);
  for (int i = 0; i < 4; i++) {
    pawl_job_t *j = NULL;
    CHECK_OK(pawl_get(p, &jobs[i]->id, &j));
    CHECK_INT(j->state, ==, PAWL_RUNNING);
    CHECK_INT(j->started_at, ==, i ? 0 : T0 + 1000);
    pawl_job_free(j);
    pawl_history_t *h = NULL;
    CHECK_OK(pawl_history(p, &jobs[i]->id, &h));
    CHECK_INT(h->nattempts, ==, 1);
    CHECK_STR(h->attempts[0].outcome, i ? "claimed" : "running");
    CHECK_INT(h->nevents, ==, 2);
    CHECK_STR(h->events[1].reason, "claimed");
    CHECK_INT(h->events[1].at, ==, T0 + 1000);
    pawl_history_free(h);
  }
  /* pawl_begin() starts jobs[1] now; a STARTED outcome jobs[2] at a time
   * in the past, and one in the future is capped at now. */
  atomic_store(&rt_now, T0 + 3000);
  CHECK_OK(pawl_begin(p, jobs[1]));
  pawl_job_t *j = NULL;
  CHECK_OK(pawl_get(p, &jobs[1]->id, &j));
  CHECK_INT(j->started_at, ==, T0 + 3000);
  pawl_job_free(j);
  pawl_outcome_t st[2];
  memset(st, 0, sizeof st);
  st[0].id = jobs[2]->id;
  st[0].attempt = jobs[2]->attempt;
  st[0].kind = PAWL_OUT_STARTED;
  st[0].started_at = T0 + 2500;
  st[1] = st[0];
  st[1].id = jobs[3]->id;
  st[1].started_at = T0 + 9999;
  int rcs[2] = {-1, -1};
  CHECK_OK(pawl_finish(p, st, 2, rcs));
  CHECK_INT(rcs[0], ==, 0);
  CHECK_INT(rcs[1], ==, 0);
  CHECK_OK(pawl_get(p, &jobs[2]->id, &j));
  CHECK_INT(j->state, ==, PAWL_RUNNING);
  CHECK_INT(j->started_at, ==, T0 + 2500);
  pawl_job_free(j);
  CHECK_OK(pawl_get(p, &jobs[3]->id, &j));
  CHECK_INT(j->started_at, ==, T0 + 3000);
  pawl_job_free(j);
  /* A second start does not move the first. */
  st[0].started_at = T0 + 2900;
  CHECK_OK(pawl_finish(p, st, 1, rcs));
  CHECK_INT(rcs[0], ==, 0);
  CHECK_OK(pawl_get(p, &jobs[2]->id, &j));
  CHECK_INT(j->started_at, ==, T0 + 2500);
  pawl_job_free(j);
  /* A STARTED outcome needs its time. */
  st[0].started_at = 0;
  CHECK_INT(pawl_finish(p, st, 1, rcs), ==, PAWL_EINVAL);
  /* A start for an attempt no longer held is refused. */
  CHECK_OK(pawl_cancel(p, &jobs[3]->id, "no", NULL));
  st[1].started_at = T0 + 3000;
  CHECK_OK(pawl_finish(p, &st[1], 1, rcs));
  CHECK_INT(rcs[0], ==, PAWL_ELEASE);
  CHECK_INT(pawl_begin(p, jobs[3]), ==, PAWL_ELEASE);
  /* A job claimed ahead and handed back unstarted: its attempt has no
   * start, and its events stay in order. */
  pawl_job_t **more = NULL;
  pawl_id_t extra = rt_enqueue(p, 3);
  atomic_store(&rt_now, T0 + 4000);
  CHECK_INT(rt_claim(p, 2, 2, &more), ==, 1);
  CHECK(memcmp(more[0]->id.bytes, extra.bytes, 16) == 0);
  CHECK_INT(more[0]->started_at, ==, 0);
  atomic_store(&rt_now, T0 + 5000);
  CHECK_INT(rt_finish(p, more[0], PAWL_OUT_RELEASE, 0, 0), ==, 0);
  pawl_attempt_t a = rt_attempt(p, &extra, 1);
  CHECK_INT(a.started_at, ==, 0);
  CHECK_INT(a.ended_at, ==, T0 + 5000);
  rt_events_ordered(p, &extra);
  for (int i = 0; i < 4; i++) rt_events_ordered(p, &ids[i]);
  pawl_jobs_free(more, 1);
  pawl_jobs_free(jobs, 4);
  pawl_close(p);
}

void test_runtime_sqlite_measured(void) {
  rt_measured(rt_sqlite_url("measured"));
}
void test_runtime_sqlite_bounds(void) { rt_bounds(rt_sqlite_url("bounds")); }
void test_runtime_sqlite_batch(void) { rt_batch(rt_sqlite_url("batch")); }
void test_runtime_sqlite_ahead(void) { rt_ahead(rt_sqlite_url("ahead")); }
void test_store_pg_runtime_ahead(void) { rt_ahead(pgtest_url("ahead")); }
void test_store_pg_runtime_measured(void) { rt_measured(pgtest_url("measured")); }
void test_store_pg_runtime_bounds(void) { rt_bounds(pgtest_url("bounds")); }
void test_store_pg_runtime_batch(void) { rt_batch(pgtest_url("batch")); }
