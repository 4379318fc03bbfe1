/* store_contract_limits.c: resource and rate limits as a store
 * contract, run on SQLite and on PostgreSQL: the limits' admin (set, list,
 * remove, bad input), a resource's and a queue's max_running at claim
 * time, the jobs behind a waiting one, prefetch, the permit of a dead
 * node's job freed by lease recovery, fixed rate windows under an injected
 * clock, next_due with limits, and claims racing on separate connections.
 *
 * Everything goes through the public API on handles whose clock is
 * injected (no sleeping). */
#include <pthread.h>
#include <stdatomic.h>

#include "pawl.h"
#include "pgtest.h"
#include "unit.h"

#define LT0 INT64_C(1800000000000) /* a whole second, minute and hour */

static _Atomic int64_t lim_now = LT0;

static int64_t lim_clock(void *data) {
  (void)data;
  return atomic_load(&lim_now);
}

static pawl_t *lim_open(const char *url, const char *node) {
  pawl_options_t o;
  pawl_options_init(&o);
  o.db = url;
  o.node_id = node;
  o.clock = lim_clock;
  o.lease_ms = 10000;
  o.age_boost_ms = 0;
  pawl_t *p = NULL;
  char err[512];
  if (pawl_open(&p, &o, err, sizeof err))
    unit_fail(__FILE__, __LINE__, "pawl_open(%s): %s", url, err);
  return p;
}

/* Enqueues n jobs of `type` with `resource` (NULL: none) in `queue` (NULL:
 * default) at `priority`. */
static void lim_enq(pawl_t *p, int n, const char *type, const char *queue,
                    const char *resource, int priority) {
  for (int i = 0; i < n; i++) {
    pawl_enqueue_opts_t o;
    pawl_enqueue_opts_init(&o);
    o.queue = queue;
    o.resource = resource;
    o.priority = priority;
    CHECK_OK(pawl_enqueue(p, type, "{}", &o, NULL, NULL));
  }
}

/* Claims up to max (prefetch as given); counts the claimed jobs by type
 * into `counts` (types "a".."z": counts[type[0] - 'a']). */
static size_t lim_claim(pawl_t *p, size_t max, size_t prefetch,
                        pawl_job_t ***out) {
  pawl_claim_opts_t co;
  memset(&co, 0, sizeof co);
  co.prefetch = prefetch;
  pawl_job_t **jobs = NULL;
  size_t n = 0;
  int rc = pawl_claim(p, &co, max, &jobs, &n);
  if (rc) unit_fail(__FILE__, __LINE__, "claim: %s", pawl_errmsg(p));
  if (out)
    *out = jobs;
  else
    pawl_jobs_free(jobs, n);
  return n;
}

static size_t lim_count_type(pawl_job_t **jobs, size_t n, const char *type) {
  size_t c = 0;
  for (size_t i = 0; i < n; i++) c += strcmp(jobs[i]->type, type) == 0;
  return c;
}

static void lim_succeed(pawl_t *p, const pawl_job_t *j) {
  pawl_outcome_t o;
  memset(&o, 0, sizeof o);
  o.id = j->id;
  o.attempt = j->attempt;
  o.kind = PAWL_OUT_SUCCEEDED;
  int rc = 0;
  CHECK_OK(pawl_finish(p, &o, 1, &rc));
  CHECK_INT(rc, ==, 0);
}

/* The limit named `name` as listed (caller frees with pawl_limits_free);
 * NULL when there is none. */
static pawl_limit_t *lim_find(pawl_t *p, const char *name, pawl_limit_t **all,
                              size_t *n) {
  CHECK_OK(pawl_limits(p, all, n));
  for (size_t i = 0; i < *n; i++)
    if (strcmp((*all)[i].name, name) == 0) return &(*all)[i];
  return NULL;
}

static int64_t lim_running(pawl_t *p, const char *name) {
  pawl_limit_t *all = NULL;
  size_t n = 0;
  pawl_limit_t *l = lim_find(p, name, &all, &n);
  CHECK(l != NULL);
  int64_t r = l->running;
  pawl_limits_free(all, n);
  return r;
}

static int64_t lim_next_due(pawl_t *p) {
  int64_t at = -1;
  CHECK_OK(pawl_next_due(p, NULL, &at));
  return at;
}

/* ---- the limits' admin ------------------------------------------------------ */

static void contract_limits_admin(const char *url) {
  atomic_store(&lim_now, LT0);
  pawl_t *p = lim_open(url, "node-a");
  pawl_limit_t *all = NULL;
  size_t n = 9;
  CHECK_OK(pawl_limits(p, &all, &n));
  CHECK_INT(n, ==, 0);
  CHECK(all == NULL);
  CHECK_OK(pawl_limit_set(p, "smtp", 5, 0, 0));
  CHECK_OK(pawl_limit_set(p, "queue:mail", 0, 100, 60000));
  CHECK_OK(pawl_limit_set(p, "api", 2, 10, 1000));
  CHECK_OK(pawl_limits(p, &all, &n));
  CHECK_INT(n, ==, 3);
  CHECK_STR(all[0].name, "api"); /* by name */
  CHECK_INT(all[0].max_running, ==, 2);
  CHECK_INT(all[0].rate, ==, 10);
  CHECK_INT(all[0].rate_window_ms, ==, 1000);
  CHECK_STR(all[1].name, "queue:mail");
  CHECK_INT(all[1].max_running, ==, 0);
  CHECK_INT(all[1].rate, ==, 100);
  CHECK_STR(all[2].name, "smtp");
  CHECK_INT(all[2].max_running, ==, 5);
  CHECK_INT(all[2].rate, ==, 0);
  CHECK_INT(all[2].rate_window_ms, ==, 0);
  CHECK_INT(all[2].running, ==, 0);
  CHECK_INT(all[2].updated_at, ==, LT0);
  pawl_limits_free(all, n);

  /* Set replaces: smtp loses its max and gains a rate. */
  CHECK_OK(pawl_limit_set(p, "smtp", 0, 3, 2000));
  pawl_limit_t *l = lim_find(p, "smtp", &all, &n);
  CHECK(l && l->max_running == 0 && l->rate == 3 && l->rate_window_ms == 2000);
  pawl_limits_free(all, n);

  /* Bad input: refused with the value and the range, nothing changed. */
  struct {
    const char *name;
    int64_t max, rate, window;
    const char *says;
  } bad[] = {
      {"smtp", 0, 0, 0, "give a max_running"},
      {"smtp", -1, 0, 0, "between 1 and 1000000"},
      {"smtp", 1000001, 0, 0, "(got 1000001)"},
      {"smtp", 0, 1000001, 1000, "between 1 and 1000000"},
      {"smtp", 0, 5, 0, "rate window must be between 1 and 86400000"},
      {"smtp", 0, 5, 86400001, "(got 86400001)"},
      {"smtp", 3, 0, 1000, "without a rate"},
      {"", 3, 0, 0, "must not be empty"},
      {"queue:", 3, 0, 0, "names no queue"},
      {"a\nb", 3, 0, 0, "control character"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    CHECK_INT(pawl_limit_set(p, bad[i].name, bad[i].max, bad[i].rate,
                             bad[i].window),
              ==, PAWL_EINVAL);
    if (!strstr(pawl_errmsg(p), bad[i].says))
      unit_fail(__FILE__, __LINE__, "case %zu: \"%s\" does not say \"%s\"", i,
                pawl_errmsg(p), bad[i].says);
  }
  CHECK_INT(pawl_limit_set(p, NULL, 3, 0, 0), ==, PAWL_EINVAL);
  l = lim_find(p, "smtp", &all, &n);
  CHECK_INT(n, ==, 3);
  CHECK(l && l->max_running == 0 && l->rate == 3 && l->rate_window_ms == 2000);
  pawl_limits_free(all, n);

  /* A resource named like a queue's limit is refused at enqueue. */
  pawl_enqueue_opts_t o;
  pawl_enqueue_opts_init(&o);
  o.resource = "queue:mail";
  CHECK_INT(pawl_enqueue(p, "x", "{}", &o, NULL, NULL), ==, PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "must not begin with \"queue:\""));
  o.resource = "";
  CHECK_INT(pawl_enqueue(p, "x", "{}", &o, NULL, NULL), ==, PAWL_EINVAL);

  CHECK_OK(pawl_limit_remove(p, "api"));
  CHECK_INT(pawl_limit_remove(p, "api"), ==, PAWL_ENOTFOUND);
  CHECK(strstr(pawl_errmsg(p), "no limit named \"api\""));
  CHECK_OK(pawl_limits(p, &all, &n));
  CHECK_INT(n, ==, 2);
  pawl_limits_free(all, n);
  pawl_close(p);
}

/* ---- max_running ----------------------------------------------------------- */

static void contract_limits_max_running(const char *url) {
  atomic_store(&lim_now, LT0);
  pawl_t *p = lim_open(url, "node-a");
  CHECK_OK(pawl_limit_set(p, "smtp", 2, 0, 0));
  /* Five smtp jobs first in claim order, then three without a resource,
   * then one of an unlimited resource. */
  lim_enq(p, 5, "s", NULL, "smtp", 10);
  lim_enq(p, 3, "f", NULL, NULL, 5);
  lim_enq(p, 1, "u", NULL, "unlimited", 0);
  pawl_job_t **jobs = NULL;
  size_t got = lim_claim(p, 10, 0, &jobs);
  /* Two smtp jobs; the three waiting are skipped and those behind them
   * taken. */
  CHECK_INT(got, ==, 6);
  CHECK_INT(lim_count_type(jobs, got, "s"), ==, 2);
  CHECK_INT(lim_count_type(jobs, got, "f"), ==, 3);
  CHECK_INT(lim_count_type(jobs, got, "u"), ==, 1);
  CHECK_INT(lim_running(p, "smtp"), ==, 2);
  /* The waiting ones were not charged an attempt. */
  pawl_filter_t f;
  pawl_filter_init(&f);
  f.state = PAWL_PENDING;
  f.type = "s";
  pawl_job_t **none = NULL;
  CHECK_INT(lim_claim(p, 10, 0, &none), ==, 0);
  pawl_jobs_free(none, 0);
  /* A finish frees a permit. */
  size_t first = 0;
  while (strcmp(jobs[first]->type, "s") != 0) first++;
  lim_succeed(p, jobs[first]);
  CHECK_INT(lim_running(p, "smtp"), ==, 1);
  pawl_job_t **more = NULL;
  CHECK_INT(lim_claim(p, 10, 0, &more), ==, 1);
  CHECK_STR(more[0]->type, "s");
  CHECK_INT(more[0]->attempt, ==, 1);
  pawl_jobs_free(more, 1);
  pawl_jobs_free(jobs, got);

  /* A queue's limit: at most one running of queue "mail". */
  CHECK_OK(pawl_limit_set(p, "queue:mail", 1, 0, 0));
  lim_enq(p, 3, "m", "mail", NULL, 0);
  CHECK_INT(lim_claim(p, 10, 0, &jobs), ==, 1);
  CHECK_STR(jobs[0]->type, "m");
  pawl_jobs_free(jobs, 1);
  CHECK_INT(lim_claim(p, 10, 0, NULL), ==, 0);
  CHECK_INT(lim_running(p, "queue:mail"), ==, 1);
  /* Removed: they all run. */
  CHECK_OK(pawl_limit_remove(p, "queue:mail"));
  CHECK_OK(pawl_limit_remove(p, "smtp"));
  CHECK_INT(lim_claim(p, 10, 0, NULL), ==, 4); /* 2 mail, 2 smtp */
  pawl_close(p);
}

/* A job under two limits (its queue's and its resource's) needs a start
 * left in both. */
static void contract_limits_both_keys(const char *url) {
  atomic_store(&lim_now, LT0);
  pawl_t *p = lim_open(url, "node-a");
  CHECK_OK(pawl_limit_set(p, "smtp", 3, 0, 0));
  CHECK_OK(pawl_limit_set(p, "queue:mail", 2, 0, 0));
  lim_enq(p, 4, "a", "mail", "smtp", 0);
  lim_enq(p, 4, "b", "other", "smtp", 0);
  pawl_job_t **jobs = NULL;
  size_t got = lim_claim(p, 10, 0, &jobs);
  CHECK_INT(got, ==, 3); /* smtp's 3: at most 2 of them from mail */
  CHECK(lim_count_type(jobs, got, "a") <= 2);
  pawl_jobs_free(jobs, got);
  CHECK_INT(lim_claim(p, 10, 0, NULL), ==, 0);
  pawl_close(p);
}

/* A prefetch takes no job under a limit, and reaches the jobs behind. */
static void contract_limits_prefetch(const char *url) {
  atomic_store(&lim_now, LT0);
  pawl_t *p = lim_open(url, "node-a");
  CHECK_OK(pawl_limit_set(p, "smtp", 5, 0, 0));
  lim_enq(p, 4, "s", NULL, "smtp", 10);
  lim_enq(p, 4, "f", NULL, NULL, 0);
  pawl_job_t **jobs = NULL;
  size_t got = lim_claim(p, 4, 4, &jobs); /* all of it a prefetch */
  CHECK_INT(got, ==, 4);
  CHECK_INT(lim_count_type(jobs, got, "f"), ==, 4);
  pawl_jobs_free(jobs, got);
  got = lim_claim(p, 4, 3, &jobs); /* one job for a free worker */
  CHECK_INT(got, ==, 1);
  CHECK_STR(jobs[0]->type, "s");
  pawl_jobs_free(jobs, got);
  pawl_claim_opts_t co;
  memset(&co, 0, sizeof co);
  co.prefetch = 5;
  CHECK_INT(pawl_claim(p, &co, 4, &jobs, &got), ==, PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "prefetch must be between 0 and max"));
  pawl_close(p);
}

/* A limit with only a rate is claimed ahead like any job (a start is a
 * claim, and a job claimed ahead holds no permit): a claim with one free
 * worker and a prefetch of 99 takes what the window has left, not one.
 * A job that also needs a permit (a max_running on its queue) is still
 * claimed only for a free worker. */
static void contract_limits_rate_prefetch(const char *url) {
  atomic_store(&lim_now, LT0);
  pawl_t *p = lim_open(url, "node-a");
  CHECK_OK(pawl_limit_set(p, "api", 0, 30, 1000));
  lim_enq(p, 40, "a", NULL, "api", 0);
  pawl_job_t **jobs = NULL;
  size_t got = lim_claim(p, 100, 99, &jobs);
  CHECK_INT(got, ==, 30);
  CHECK_INT(lim_count_type(jobs, got, "a"), ==, 30);
  pawl_jobs_free(jobs, got);
  /* All of it a prefetch: still nothing more in this window. */
  CHECK_INT(lim_claim(p, 100, 100, NULL), ==, 0);
  atomic_store(&lim_now, LT0 + 1000);
  CHECK_INT(lim_claim(p, 100, 100, NULL), ==, 10);
  /* A rate-only resource in a queue with a max_running: the permit
   * decides, so only the free worker's job is taken. */
  CHECK_OK(pawl_limit_set(p, "queue:mail", 10, 0, 0));
  lim_enq(p, 5, "m", "mail", "api", 0);
  CHECK_INT(lim_claim(p, 5, 4, &jobs), ==, 1);
  CHECK_STR(jobs[0]->type, "m");
  pawl_jobs_free(jobs, 1);
  CHECK_INT(lim_claim(p, 5, 5, NULL), ==, 0);
  pawl_close(p);
}

/* ---- lease recovery frees a permit ------------------------------------------ */

static void contract_limits_recover_frees(const char *url) {
  atomic_store(&lim_now, LT0);
  pawl_t *dead = lim_open(url, "node-dead");
  pawl_t *p = lim_open(url, "node-b");
  CHECK_OK(pawl_limit_set(p, "smtp", 1, 0, 0));
  lim_enq(p, 2, "s", NULL, "smtp", 0);
  CHECK_INT(lim_claim(dead, 5, 0, NULL), ==, 1); /* and never finishes */
  CHECK_INT(lim_claim(p, 5, 0, NULL), ==, 0);
  atomic_fetch_add(&lim_now, 10001); /* the lease expired */
  CHECK_INT(lim_claim(p, 5, 0, NULL), ==, 0); /* not recovered yet */
  size_t n = 0;
  CHECK_OK(pawl_recover(p, &n));
  CHECK_INT(n, ==, 1);
  CHECK_INT(lim_running(p, "smtp"), ==, 0);
  pawl_job_t **jobs = NULL;
  CHECK_INT(lim_claim(p, 5, 0, &jobs), ==, 1);
  CHECK_INT(lim_running(p, "smtp"), ==, 1);
  pawl_jobs_free(jobs, 1);
  pawl_close(dead);
  pawl_close(p);
}

/* ---- rate limits ------------------------------------------------------------ */

static void contract_limits_rate(const char *url) {
  atomic_store(&lim_now, LT0 + 250);
  pawl_t *p = lim_open(url, "node-a");
  CHECK_OK(pawl_limit_set(p, "api", 0, 3, 1000));
  lim_enq(p, 10, "a", NULL, "api", 0);
  lim_enq(p, 1, "f", NULL, NULL, -1);
  pawl_job_t **jobs = NULL;
  size_t got = lim_claim(p, 10, 0, &jobs);
  /* The batch picked ten api jobs and took three; the next claim leaves
   * api out and reaches the job behind them. */
  CHECK_INT(got, ==, 3);
  CHECK_INT(lim_count_type(jobs, got, "a"), ==, 3);
  /* Finishing does not give a start back. */
  for (size_t i = 0; i < got; i++) lim_succeed(p, jobs[i]);
  pawl_jobs_free(jobs, got);
  CHECK_INT(lim_claim(p, 10, 0, &jobs), ==, 1);
  CHECK_STR(jobs[0]->type, "f");
  pawl_jobs_free(jobs, 1);
  CHECK_INT(lim_claim(p, 10, 0, NULL), ==, 0);
  /* The poller waits for the next window, not a spin on the due jobs. */
  CHECK_INT(lim_next_due(p), ==, LT0 + 1000);
  pawl_limit_t *all = NULL;
  size_t n = 0;
  pawl_limit_t *l = lim_find(p, "api", &all, &n);
  CHECK(l && l->window_start == LT0 && l->window_count == 3);
  pawl_limits_free(all, n);
  atomic_store(&lim_now, LT0 + 999);
  CHECK_INT(lim_claim(p, 10, 0, NULL), ==, 0);
  atomic_store(&lim_now, LT0 + 1000);
  CHECK_INT(lim_claim(p, 2, 0, NULL), ==, 2);
  CHECK_INT(lim_claim(p, 10, 0, NULL), ==, 1);
  CHECK_INT(lim_claim(p, 10, 0, NULL), ==, 0);
  /* A claim whose clock is behind the counted window takes nothing. */
  atomic_store(&lim_now, LT0 + 2000);
  CHECK_INT(lim_claim(p, 1, 0, NULL), ==, 1);
  atomic_store(&lim_now, LT0 + 1500);
  CHECK_INT(lim_claim(p, 10, 0, NULL), ==, 0);
  /* Changing the rate keeps the window's count; changing the window's
   * length starts afresh. */
  atomic_store(&lim_now, LT0 + 2000);
  CHECK_OK(pawl_limit_set(p, "api", 0, 2, 1000));
  CHECK_INT(lim_claim(p, 10, 0, NULL), ==, 1);
  CHECK_OK(pawl_limit_set(p, "api", 0, 2, 500));
  CHECK_INT(lim_claim(p, 10, 0, NULL), ==, 2);
  pawl_close(p);
}

/* Starts under a rate limit with an injected clock moving in uneven steps
 * and claims of random sizes and prefetches: no fixed window ever holds more than N starts, and while work is waiting
 * every window gets its N. */
static void contract_limits_rate_windows(const char *url) {
  enum { N = 7, W = 100, WINDOWS = 40 };
  atomic_store(&lim_now, LT0);
  pawl_t *p = lim_open(url, "node-a");
  CHECK_OK(pawl_limit_set(p, "api", 0, N, W));
  lim_enq(p, N * WINDOWS + 20, "a", NULL, "api", 0);
  int counts[WINDOWS + 2];
  memset(counts, 0, sizeof counts);
  unsigned seed = 12345;
  while (atomic_load(&lim_now) < LT0 + (int64_t)WINDOWS * W) {
    seed = seed * 1103515245u + 12345u;
    size_t max = 1 + (seed >> 16) % 4;
    /* Part of the claim a prefetch, which a rate-only limit is claimed
     * for like a free worker. */
    size_t prefetch = (seed >> 20) % (max + 1);
    pawl_job_t **jobs = NULL;
    size_t got = lim_claim(p, max, prefetch, &jobs);
    for (size_t i = 0; i < got; i++) {
      int64_t w = (jobs[i]->started_at - LT0) / W;
      CHECK(w >= 0 && w < WINDOWS + 2);
      counts[w]++;
      lim_succeed(p, jobs[i]);
    }
    pawl_jobs_free(jobs, got);
    if (got == 0) {
      /* Nothing more now: the next due time is the next window. */
      int64_t due = lim_next_due(p);
      int64_t now = atomic_load(&lim_now);
      CHECK_INT(due, ==, now - now % W + W);
    }
    atomic_fetch_add(&lim_now, (int64_t)((seed >> 8) % 23));
  }
  for (int w = 0; w < WINDOWS; w++) {
    if (counts[w] != N)
      unit_fail(__FILE__, __LINE__, "window %d had %d starts, not %d", w,
                counts[w], N);
  }
  pawl_close(p);
}

/* ---- next_due ---------------------------------------------------------------- */

static void contract_limits_next_due(const char *url) {
  atomic_store(&lim_now, LT0);
  pawl_t *p = lim_open(url, "node-a");
  CHECK_OK(pawl_limit_set(p, "smtp", 1, 0, 0));
  lim_enq(p, 2, "s", NULL, "smtp", 0);
  CHECK_INT(lim_next_due(p), ==, LT0);
  CHECK_INT(lim_claim(p, 5, 0, NULL), ==, 1);
  /* The other smtp job waits for a finish: not due. */
  CHECK_INT(lim_next_due(p), ==, 0);
  pawl_enqueue_opts_t o;
  pawl_enqueue_opts_init(&o);
  o.delay_ms = 5000;
  CHECK_OK(pawl_enqueue(p, "later", "{}", &o, NULL, NULL));
  CHECK_INT(lim_next_due(p), ==, LT0 + 5000);
  /* Limited to a queue the claimer does not serve: not its business. */
  CHECK_OK(pawl_limit_set(p, "queue:mail", 0, 1, 60000));
  lim_enq(p, 2, "m", "mail", NULL, 0);
  CHECK_INT(lim_claim(p, 5, 0, NULL), ==, 1);
  CHECK_INT(lim_next_due(p), ==, LT0 + 5000);
  atomic_store(&lim_now, LT0 + 30000);
  CHECK_INT(lim_next_due(p), ==, LT0 + 5000);
  CHECK_INT(lim_claim(p, 5, 0, NULL), ==, 1); /* "later" */
  CHECK_INT(lim_next_due(p), ==, LT0 + 60000); /* mail's next window */
  const char *q[] = {"default"};
  pawl_claim_opts_t co;
  memset(&co, 0, sizeof co);
  co.queues = q;
  co.nqueues = 1;
  int64_t at = -1;
  CHECK_OK(pawl_next_due(p, &co, &at));
  CHECK_INT(at, ==, 0);
  pawl_close(p);
}

/* ---- claims racing on separate connections ---------------------------------- */

typedef struct lim_racer {
  pawl_t *p;               /* opened by the main thread (pawl_open is not
                              meant to race itself: getpwuid) */
  _Atomic int *go;
  size_t got;
} lim_racer_t;

static void *lim_race(void *arg) {
  lim_racer_t *r = arg;
  while (!atomic_load(r->go)) {
  }
  for (int i = 0; i < 20; i++) r->got += lim_claim(r->p, 3, 0, NULL);
  return NULL;
}

/* Six connections claim batches of 3 at once, nobody finishing: exactly
 * the limit's 5 are taken, never 6. */
static void contract_limits_concurrent_claims(const char *url) {
  enum { RACERS = 6 };
  atomic_store(&lim_now, LT0);
  pawl_t *p = lim_open(url, "setup");
  CHECK_OK(pawl_limit_set(p, "smtp", 5, 0, 0));
  lim_enq(p, 40, "s", NULL, "smtp", 0);
  _Atomic int go = 0;
  lim_racer_t r[RACERS];
  pthread_t t[RACERS];
  for (int i = 0; i < RACERS; i++) {
    char node[32];
    snprintf(node, sizeof node, "racer-%d", i);
    memset(&r[i], 0, sizeof r[i]);
    r[i].p = lim_open(url, node); /* a connection each */
    r[i].go = &go;
  }
  for (int i = 0; i < RACERS; i++)
    CHECK_INT(pthread_create(&t[i], NULL, lim_race, &r[i]), ==, 0);
  atomic_store(&go, 1);
  size_t total = 0;
  for (int i = 0; i < RACERS; i++) {
    pthread_join(t[i], NULL);
    total += r[i].got;
    pawl_close(r[i].p);
  }
  CHECK_INT(total, ==, 5);
  CHECK_INT(lim_running(p, "smtp"), ==, 5);
  pawl_close(p);
}

/* ---- with queues and per-key ordering --------------------------------------- */

/* Enqueues one job of `type` in `queue` with `resource` and ordering key
 * `key` (NULL: none). */
static void lim_enq_key(pawl_t *p, const char *type, const char *queue,
                        const char *resource, const char *key, int priority) {
  pawl_enqueue_opts_t o;
  pawl_enqueue_opts_init(&o);
  o.queue = queue;
  o.resource = resource;
  o.ordering_key = key;
  o.priority = priority;
  CHECK_OK(pawl_enqueue(p, type, "{}", &o, NULL, NULL));
}

/* Claims up to 10 for free workers: exactly one job, of type `type`. */
static void lim_claim_one(pawl_t *p, const char *type) {
  pawl_job_t **jobs = NULL;
  size_t n = lim_claim(p, 10, 0, &jobs);
  CHECK_INT(n, ==, 1);
  if (n == 1) {
    CHECK_STR(jobs[0]->type, type);
    lim_succeed(p, jobs[0]);
  }
  pawl_jobs_free(jobs, n);
}

/* A job under a limit in a paused queue is neither claimed nor due; the
 * same resource's job in another queue is; after the resume it is. */
static void contract_limits_queue_paused(const char *url) {
  atomic_store(&lim_now, LT0);
  pawl_t *p = lim_open(url, "node-a");
  CHECK_OK(pawl_limit_set(p, "smtp", 5, 0, 0));
  lim_enq(p, 2, "m", "mail", "smtp", 0);
  lim_enq(p, 1, "o", "other", "smtp", 0);
  CHECK_OK(pawl_queue_pause(p, "mail", NULL, NULL));
  pawl_job_t **jobs = NULL;
  size_t n = lim_claim(p, 10, 0, &jobs);
  CHECK_INT(n, ==, 1);
  CHECK_INT(lim_count_type(jobs, n, "o"), ==, 1);
  pawl_jobs_free(jobs, n);
  CHECK_INT(lim_claim(p, 10, 0, NULL), ==, 0);
  CHECK_INT(lim_next_due(p), ==, 0); /* the paused queue's jobs: not due */
  CHECK_OK(pawl_queue_resume(p, "mail", NULL));
  n = lim_claim(p, 10, 0, &jobs);
  CHECK_INT(n, ==, 2);
  CHECK_INT(lim_count_type(jobs, n, "m"), ==, 2);
  pawl_jobs_free(jobs, n);
  CHECK_INT(lim_running(p, "smtp"), ==, 3);
  pawl_close(p);
}

/* Keyed jobs under a resource limit of 2: one job per key at a time, in
 * enqueue order, and never more than 2 running. */
static void contract_limits_ordering(const char *url) {
  atomic_store(&lim_now, LT0);
  pawl_t *p = lim_open(url, "node-a");
  CHECK_OK(pawl_limit_set(p, "smtp", 2, 0, 0));
  lim_enq_key(p, "a1", NULL, "smtp", "acct:1", 0);
  lim_enq_key(p, "a2", NULL, "smtp", "acct:1", 0);
  lim_enq_key(p, "a3", NULL, "smtp", "acct:1", 0);
  lim_enq_key(p, "b1", NULL, "smtp", "acct:2", 0);
  lim_enq_key(p, "c1", NULL, "smtp", "acct:3", 0);
  pawl_job_t **first = NULL;
  size_t n = lim_claim(p, 10, 0, &first);
  CHECK_INT(n, ==, 2); /* a1 and b1: a2 waits for a1, c1 for a permit */
  CHECK_INT(lim_count_type(first, n, "a1"), ==, 1);
  CHECK_INT(lim_count_type(first, n, "b1"), ==, 1);
  CHECK_INT(lim_claim(p, 10, 0, NULL), ==, 0);
  for (size_t i = 0; i < n; i++)
    if (strcmp(first[i]->type, "a1") == 0) lim_succeed(p, first[i]);
  pawl_job_t **next = NULL;
  size_t m = lim_claim(p, 10, 0, &next);
  CHECK_INT(m, ==, 1); /* a2 (before c1 in line); b1 holds the other */
  CHECK_INT(lim_count_type(next, m, "a2"), ==, 1);
  CHECK_INT(lim_running(p, "smtp"), ==, 2);
  for (size_t i = 0; i < n; i++)
    if (strcmp(first[i]->type, "b1") == 0) lim_succeed(p, first[i]);
  for (size_t i = 0; i < m; i++) lim_succeed(p, next[i]);
  pawl_jobs_free(first, n);
  pawl_jobs_free(next, m);
  n = lim_claim(p, 10, 0, &first);
  CHECK_INT(n, ==, 2);
  CHECK_INT(lim_count_type(first, n, "a3"), ==, 1);
  CHECK_INT(lim_count_type(first, n, "c1"), ==, 1);
  pawl_jobs_free(first, n);
  pawl_close(p);
}

/* A queue's limit (one at a time) on a queue with an age boost of its
 * own (+1 priority a minute): its jobs start in the boosted rank order,
 * A (0, waited 10 min), C (3, new), B (0, new); without the boost C
 * would come first. */
static void contract_limits_queue_boost(const char *url) {
  atomic_store(&lim_now, LT0);
  pawl_t *p = lim_open(url, "node-a"); /* database boost 0 */
  CHECK_OK(pawl_limit_set(p, "queue:mail", 1, 0, 0));
  CHECK_OK(pawl_queue_set_age_boost(p, "mail", 60000));
  lim_enq_key(p, "a", "mail", NULL, NULL, 0);
  atomic_store(&lim_now, LT0 + 600000);
  lim_enq_key(p, "b", "mail", NULL, NULL, 0);
  lim_enq_key(p, "c", "mail", NULL, NULL, 3);
  lim_claim_one(p, "a");
  lim_claim_one(p, "c");
  lim_claim_one(p, "b");
  pawl_close(p);
}

/* ---- registration -------------------------------------------------------------- */

#define LIMITS_CONTRACT_TESTS(X) \
  X(admin)                       \
  X(max_running)                 \
  X(both_keys)                   \
  X(prefetch)                    \
  X(rate_prefetch)               \
  X(recover_frees)               \
  X(rate)                        \
  X(rate_windows)                \
  X(next_due)                    \
  X(concurrent_claims)           \
  X(queue_paused)                \
  X(ordering)                    \
  X(queue_boost)

static const char *lim_sqlite_url(const char *name) {
  static char url[4200];
  snprintf(url, sizeof url, "sqlite:%s/limits_%s.db", unit_tmpdir(), name);
  return url;
}

#define LIMITS_SQLITE(name)                                                  \
  void test_store_sqlite_limits_##name(void) {                               \
    contract_limits_##name(lim_sqlite_url(#name));                           \
  }
#define LIMITS_PG(name)                                                      \
  void test_store_pg_limits_##name(void) {                                   \
    contract_limits_##name(pgtest_url("limits_" #name));                     \
  }
LIMITS_CONTRACT_TESTS(LIMITS_SQLITE)
LIMITS_CONTRACT_TESTS(LIMITS_PG)
