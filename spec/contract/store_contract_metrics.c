/* store_contract_metrics.c: the metrics endpoint's contract suite (see
 * store_contract_metrics.h), on a handle whose clock is injected:
 * - metrics_gauges: what pawl__gauges reads (the live rows, the finishes
 *   from a minute on, the exact counts when full);
 * - metrics_refresh: the refresher's arithmetic (metrics.c) on top of it:
 *   a full read, then finishes added from the buckets without a full
 *   read, a change the buckets do not see (a manual retry of a failed
 *   job) shown at the next recount, and the text it renders. */
#include <stdatomic.h>
#include <string.h>

#include "host.h"
#include "metrics.h"
#include "pawl.h"
#include "pawl_internal.h"
#include "store_contract_metrics.h"
#include "unit.h"
#include "unit_pawl.h"

#define T0 INT64_C(1800000000000)
#define MIN INT64_C(60000)

static _Atomic int64_t met_now = T0;

static void set_now(int64_t ms) { atomic_store(&met_now, ms); }

static pawl_t *open_db(const char *url) {
  set_now(T0);
  return unit_open_clocked(url, "node-m", &met_now, 30000);
}

static pawl_id_t enq(pawl_t *p, const char *queue, int64_t delay_ms) {
  pawl_enqueue_opts_t o;
  pawl_enqueue_opts_init(&o);
  o.queue = queue;
  o.delay_ms = delay_ms;
  pawl_id_t id;
  if (pawl_enqueue(p, "t", "{}", &o, &id, NULL))
    unit_fail(__FILE__, __LINE__, "enqueue: %s", pawl_errmsg(p));
  return id;
}

/* Claims up to `max` due jobs and finishes each with `kind`. */
static int finish(pawl_t *p, size_t max, pawl_outcome_kind_t kind) {
  pawl_job_t **jobs = NULL;
  size_t n = 0;
  CHECK_OK(pawl_claim(p, NULL, max, &jobs, &n));
  for (size_t i = 0; i < n; i++) {
    pawl_outcome_t o = {.id = jobs[i]->id, .attempt = jobs[i]->attempt,
                        .kind = kind, .error = "boom",
                        .store_key = jobs[i]->store_key};
    int rc = 0;
    CHECK_OK(pawl_finish(p, &o, 1, &rc));
    CHECK_INT(rc, ==, 0);
  }
  pawl_jobs_free(jobs, n);
  return (int)n;
}

/* The rows of one read, added up per (queue, state). */
typedef struct got {
  int64_t count[2][PAWL_STATE_COUNT]; /* [0] mail, [1] other */
  int64_t since[2][PAWL_STATE_COUNT];
  int64_t oldest_due[2];
  int rows;
} got_t;

static int got_row(const pawl__gauge_row_t *r, void *data) {
  got_t *g = data;
  int q = strcmp(r->queue, "mail") == 0 ? 0 : 1;
  if (q == 1 && strcmp(r->queue, "other") != 0) return 1;
  g->count[q][r->state] += r->count;
  g->since[q][r->state] += r->since;
  if (r->oldest_due) g->oldest_due[q] = r->oldest_due;
  g->rows++;
  return 0;
}

static got_t read_gauges(pawl_t *p, int64_t since, int full) {
  got_t g;
  memset(&g, 0, sizeof g);
  int64_t now = 0;
  CHECK_OK(pawl__gauges(p, since, full, &now, got_row, &g));
  CHECK_INT(now, ==, atomic_load(&met_now));
  return g;
}

void contract_metrics_gauges(const char *url) {
  pawl_t *p = open_db(url);
  got_t g = read_gauges(p, pawl__minute_of(T0), 1);
  CHECK_INT(g.rows, ==, 0);
  /* mail: 3 succeed at T0, 2 fail at T0 + 2 min; one runs, one is
   * paused, one is due since T0 + 2 min, one due later. other: one
   * canceled at T0 + 2 min, one blocked. */
  for (int i = 0; i < 3; i++) enq(p, "mail", 0);
  CHECK_INT(finish(p, 100, PAWL_OUT_SUCCEEDED), ==, 3);
  set_now(T0 + 2 * MIN);
  for (int i = 0; i < 2; i++) enq(p, "mail", 0);
  CHECK_INT(finish(p, 100, PAWL_OUT_FAILED), ==, 2);
  enq(p, "mail", 0);
  pawl_job_t **jobs = NULL;
  size_t n = 0;
  CHECK_OK(pawl_claim(p, NULL, 1, &jobs, &n));
  CHECK_INT(n, ==, 1);
  pawl_jobs_free(jobs, n);
  pawl_id_t pz = enq(p, "mail", 0);
  pawl_job_t *j = NULL;
  CHECK_OK(pawl_pause(p, &pz, NULL, &j));
  pawl_job_free(j);
  enq(p, "mail", 0);
  enq(p, "mail", 60 * MIN);
  pawl_id_t c = enq(p, "other", 0);
  CHECK_OK(pawl_cancel(p, &c, NULL, &j));
  pawl_job_free(j);
  pawl_enqueue_opts_t o;
  pawl_enqueue_opts_init(&o);
  o.queue = "other";
  o.blocked = 1;
  CHECK_OK(pawl_enqueue(p, "t", "{}", &o, NULL, NULL));

  set_now(T0 + 5 * MIN);
  /* Full, finishes from T0 + 2 min on. */
  g = read_gauges(p, pawl__minute_of(T0 + 2 * MIN), 1);
  CHECK_INT(g.count[0][PAWL_PENDING], ==, 2);
  CHECK_INT(g.oldest_due[0], ==, T0 + 2 * MIN);
  CHECK_INT(g.count[0][PAWL_RUNNING], ==, 1);
  CHECK_INT(g.count[0][PAWL_SUCCEEDED], ==, 3);
  CHECK_INT(g.count[0][PAWL_FAILED], ==, 2);
  CHECK_INT(g.count[0][PAWL_PAUSED], ==, 1);
  CHECK_INT(g.count[1][PAWL_CANCELED], ==, 1);
  CHECK_INT(g.count[1][PAWL_BLOCKED], ==, 1);
  CHECK_INT(g.since[0][PAWL_SUCCEEDED], ==, 0); /* they finished at T0 */
  CHECK_INT(g.since[0][PAWL_FAILED], ==, 2);
  CHECK_INT(g.since[1][PAWL_CANCELED], ==, 1);
  /* From T0 on: all of them. */
  g = read_gauges(p, pawl__minute_of(T0), 1);
  CHECK_INT(g.since[0][PAWL_SUCCEEDED], ==, 3);
  /* Not full: the live rows and the finishes only, never a finished
   * job's count. */
  g = read_gauges(p, pawl__minute_of(T0), 0);
  CHECK_INT(g.count[0][PAWL_PENDING], ==, 2);
  CHECK_INT(g.count[0][PAWL_RUNNING], ==, 1);
  CHECK_INT(g.count[0][PAWL_SUCCEEDED], ==, 0);
  CHECK_INT(g.count[0][PAWL_PAUSED], ==, 0);
  CHECK_INT(g.count[1][PAWL_BLOCKED], ==, 0);
  CHECK_INT(g.since[0][PAWL_SUCCEEDED], ==, 3);
  CHECK_INT(g.since[0][PAWL_FAILED], ==, 2);
  /* A minute after the last finish: none since. */
  g = read_gauges(p, pawl__minute_of(T0 + 3 * MIN), 0);
  CHECK_INT(g.since[0][PAWL_FAILED], ==, 0);
  CHECK_INT(g.since[1][PAWL_CANCELED], ==, 0);
  pawl_close(p);
}

/* The value of the line `prefix` (up to the space) in `text`; -1: none. */
static long long text_value(const char *text, const char *prefix) {
  size_t n = strlen(prefix);
  for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : l)
    if (strncmp(l, prefix, n) == 0 && l[n] == ' ') return atoll(l + n + 1);
  return -1;
}

static long long jobs_of(metrics_t *m, const char *queue, const char *state) {
  pawl_buf_t b = {0};
  pawl__metrics_render(m, &b);
  CHECK(!b.oom);
  char key[128];
  snprintf(key, sizeof key, "pawl_jobs{queue=\"%s\",state=\"%s\"}", queue,
           state);
  long long v = text_value(pawl__buf_cstr(&b), key);
  pawl__buf_free(&b);
  return v;
}

void contract_metrics_refresh(const char *url) {
  pawl_t *p = open_db(url);
  pawl_host_opts_t ho;
  pawl_host_opts_init(&ho);
  host_t *h = pawl__host_new(p, &ho);
  CHECK(h != NULL);
  /* Recounts every 20 minutes (of the monotonic clock): the reads below
   * after the first are incremental until forced. */
  metrics_t *m = pawl__metrics_new(h, 100, 20 * MIN);
  CHECK(m != NULL);
  h->metrics = m;
  char err[512];
  CHECK_OK(pawl__metrics_open(m, err, sizeof err));
  for (int i = 0; i < 3; i++) enq(p, "mail", 0);
  CHECK_INT(finish(p, 2, PAWL_OUT_SUCCEEDED), ==, 2);
  CHECK_INT(finish(p, 1, PAWL_OUT_FAILED), ==, 1);
  enq(p, "mail", 0);
  CHECK_OK(pawl__metrics_refresh(m)); /* the first read is full */
  CHECK_INT(jobs_of(m, "mail", "succeeded"), ==, 2);
  CHECK_INT(jobs_of(m, "mail", "failed"), ==, 1);
  CHECK_INT(jobs_of(m, "mail", "pending"), ==, 1);
  /* Finishes at the same minute, then minutes later: added from the
   * buckets. */
  CHECK_INT(finish(p, 1, PAWL_OUT_SUCCEEDED), ==, 1);
  CHECK_OK(pawl__metrics_refresh(m));
  CHECK_INT(jobs_of(m, "mail", "succeeded"), ==, 3);
  CHECK_INT(jobs_of(m, "mail", "pending"), ==, 0);
  set_now(T0 + 7 * MIN);
  enq(p, "mail", 0);
  enq(p, "other", 0);
  CHECK_INT(finish(p, 1, PAWL_OUT_FAILED), ==, 1);
  CHECK_INT(finish(p, 1, PAWL_OUT_SUCCEEDED), ==, 1);
  CHECK_OK(pawl__metrics_refresh(m));
  CHECK_INT(jobs_of(m, "mail", "succeeded") + jobs_of(m, "other", "succeeded"),
            ==, 4);
  CHECK_INT(jobs_of(m, "mail", "failed") + jobs_of(m, "other", "failed"), ==,
            2);
  CHECK_INT(jobs_of(m, "other", "pending"), ==, 0);
  /* A manual retry moves the failed jobs to pending: pending shows them
   * at once (live), failed only at the next recount (the buckets count
   * finishes, not moves out of a finished state). */
  long long failed = jobs_of(m, "mail", "failed");
  CHECK_INT(failed, >=, 1);
  pawl_filter_t f;
  pawl_filter_init(&f);
  f.state = PAWL_FAILED;
  f.queue = "mail";
  pawl_bulk_result_t r;
  CHECK_OK(pawl_bulk(p, PAWL_ACTION_RETRY, &f, NULL, &r));
  CHECK_INT(r.changed, ==, failed);
  CHECK_OK(pawl__metrics_refresh(m));
  CHECK_INT(jobs_of(m, "mail", "pending"), ==, failed);
  CHECK_INT(jobs_of(m, "mail", "failed"), ==, failed); /* not yet */
  pawl__metrics_recount(m);
  CHECK_OK(pawl__metrics_refresh(m));
  CHECK_INT(jobs_of(m, "mail", "failed"), ==, 0);
  CHECK_INT(jobs_of(m, "mail", "pending"), ==, failed);
  CHECK_INT(jobs_of(m, "mail", "succeeded") + jobs_of(m, "other", "succeeded"),
            ==, 4);
  pawl__metrics_free(m);
  h->metrics = NULL;
  pawl__host_free(h);
  pawl_close(p);
}
