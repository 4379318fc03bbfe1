/* store_contract_top.c: the `pawl top` contract suite (see
 * store_contract_top.h), through the public API on a handle whose clock is
 * injected, so that the throughput's minutes and the running jobs' ages
 * are exact. */
#include <stdatomic.h>
#include <string.h>

#include "json.h"
#include "pawl.h"
#include "store_contract_top.h"
#include "unit.h"
#include "unit_pawl.h"

/* A whole minute of the epoch (1800000000000 / 60000 = 30000000), plus a
 * second: the buckets' minutes are known. */
#define T0 (INT64_C(1800000000000) + 1000)

static _Atomic int64_t top_now = T0;

static pawl_t *open_db(const char *url) {
  atomic_store(&top_now, T0);
  return unit_open_clocked(url, "node-a", &top_now, 600000);
}

static pawl_id_t enq(pawl_t *p, const char *queue) {
  pawl_enqueue_opts_t o;
  pawl_enqueue_opts_init(&o);
  o.queue = queue;
  o.max_attempts = 1;
  pawl_id_t id;
  if (pawl_enqueue(p, "work", "{\"password\":\"hunter2\"}", &o, &id, NULL))
    unit_fail(__FILE__, __LINE__, "enqueue: %s", pawl_errmsg(p));
  return id;
}

/* Claims one job of `queue`; the caller frees it. */
static pawl_job_t *claim1(pawl_t *p, const char *queue) {
  pawl_claim_opts_t co;
  memset(&co, 0, sizeof co);
  co.queues = &queue;
  co.nqueues = 1;
  pawl_job_t **jobs = NULL;
  size_t n = 0;
  if (pawl_claim(p, &co, 1, &jobs, &n) || n != 1)
    unit_fail(__FILE__, __LINE__, "claim in %s: %s (%zu jobs)", queue,
              pawl_errmsg(p), n);
  pawl_job_t *j = jobs[0];
  jobs[0] = NULL;
  pawl_jobs_free(jobs, n);
  return j;
}

static void finish(pawl_t *p, pawl_job_t *j, pawl_outcome_kind_t kind,
                   const char *error) {
  pawl_outcome_t out;
  memset(&out, 0, sizeof out);
  out.id = j->id;
  out.attempt = j->attempt;
  out.kind = kind;
  out.error = error;
  out.store_key = j->store_key;
  int rc = 0;
  if (pawl_finish(p, &out, 1, &rc) || rc)
    unit_fail(__FILE__, __LINE__, "finish: %s (%d)", pawl_errmsg(p), rc);
  pawl_job_free(j);
}

void contract_top_throughput(const char *url) {
  pawl_t *p = open_db(url);
  for (int i = 0; i < 3; i++) enq(p, "q1");
  enq(p, "q2");
  finish(p, claim1(p, "q1"), PAWL_OUT_SUCCEEDED, NULL);
  finish(p, claim1(p, "q1"), PAWL_OUT_SUCCEEDED, NULL);
  finish(p, claim1(p, "q1"), PAWL_OUT_FAILED, "boom");
  atomic_store(&top_now, T0 + 60000); /* the next minute */
  finish(p, claim1(p, "q2"), PAWL_OUT_SUCCEEDED, NULL);

  pawl_tp_bucket_t *b = NULL;
  size_t n = 0;
  CHECK_OK(pawl_throughput(p, 2, &b, &n));
  CHECK_INT(n, ==, 3);
  int64_t m0 = T0 - 1000, m1 = m0 + 60000;
  /* Oldest first, then by state and queue. */
  CHECK_INT(b[0].minute_at, ==, m0);
  CHECK_INT(b[0].state, ==, PAWL_SUCCEEDED);
  CHECK_STR(b[0].queue, "q1");
  CHECK_INT(b[0].count, ==, 2);
  CHECK_INT(b[1].minute_at, ==, m0);
  CHECK_INT(b[1].state, ==, PAWL_FAILED);
  CHECK_STR(b[1].queue, "q1");
  CHECK_INT(b[1].count, ==, 1);
  CHECK_INT(b[2].minute_at, ==, m1);
  CHECK_INT(b[2].state, ==, PAWL_SUCCEEDED);
  CHECK_STR(b[2].queue, "q2");
  CHECK_INT(b[2].count, ==, 1);
  pawl_throughput_free(b, n);

  /* One minute: the current one only. */
  CHECK_OK(pawl_throughput(p, 1, &b, &n));
  CHECK_INT(n, ==, 1);
  CHECK_STR(b[0].queue, "q2");
  pawl_throughput_free(b, n);

  b = NULL;
  n = 7;
  CHECK_INT(pawl_throughput(p, 0, &b, &n), ==, PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "1..30") != NULL);
  CHECK_INT(pawl_throughput(p, 31, &b, &n), ==, PAWL_EINVAL);
  CHECK(b == NULL && n == 7); /* untouched on failure */
  pawl_close(p);
}

typedef struct ids {
  pawl_id_t id[8];
  int64_t running_ms[8];
  int n;
} ids_t;

static int collect(const pawl_job_t *j, void *data) {
  ids_t *c = data;
  if (j->state != PAWL_RUNNING) return 1;
  c->running_ms[c->n] = atomic_load(&top_now) - j->started_at;
  c->id[c->n++] = j->id;
  return c->n == 8;
}

void contract_top_running(const char *url) {
  pawl_t *p = open_db(url);
  for (int i = 0; i < 3; i++) enq(p, "q");
  pawl_job_t *a = claim1(p, "q");
  atomic_store(&top_now, T0 + 5000);
  pawl_job_t *b = claim1(p, "q");
  atomic_store(&top_now, T0 + 9000);
  pawl_job_t *c = claim1(p, "q");
  atomic_store(&top_now, T0 + 10000);

  ids_t got = {0};
  CHECK_OK(pawl_running_jobs(p, 10, collect, &got));
  CHECK_INT(got.n, ==, 3);
  /* Longest running first. */
  CHECK(memcmp(&got.id[0], &a->id, sizeof a->id) == 0);
  CHECK(memcmp(&got.id[1], &b->id, sizeof b->id) == 0);
  CHECK(memcmp(&got.id[2], &c->id, sizeof c->id) == 0);
  CHECK_INT(got.running_ms[0], ==, 10000);
  CHECK_INT(got.running_ms[2], ==, 1000);

  memset(&got, 0, sizeof got);
  CHECK_OK(pawl_running_jobs(p, 2, collect, &got));
  CHECK_INT(got.n, ==, 2);

  /* A finished job is not running any more. */
  pawl_id_t aid = a->id;
  finish(p, a, PAWL_OUT_SUCCEEDED, NULL);
  memset(&got, 0, sizeof got);
  CHECK_OK(pawl_running_jobs(p, 10, collect, &got));
  CHECK_INT(got.n, ==, 2);
  CHECK(memcmp(&got.id[0], &aid, sizeof aid) != 0);

  CHECK_INT(pawl_running_jobs(p, 0, collect, &got), ==, PAWL_EINVAL);
  CHECK_INT(pawl_running_jobs(p, 100001, collect, &got), ==, PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "1..100000") != NULL);
  pawl_job_free(b);
  pawl_job_free(c);
  pawl_close(p);
}

void contract_top_snapshot(const char *url) {
  pawl_t *p = open_db(url);
  for (int i = 0; i < 2; i++) enq(p, "mail");
  enq(p, "slow");
  pawl_id_t dead = enq(p, "dead");
  finish(p, claim1(p, "dead"), PAWL_OUT_FAILED,
         "line one \"quoted\"\nline two \x1b[31m");
  pawl_job_t *run = claim1(p, "slow");
  atomic_store(&top_now, T0 + 4000);
  CHECK_OK(pawl_queue_pause(p, "mail", "maintenance", NULL));

  char *json = NULL;
  CHECK_OK(pawl_top_snapshot(p, NULL, &json));
  char err[256];
  CHECK_INT(pawl__json_validate(json, strlen(json), err, sizeof err), ==, 0);
  CHECK(strstr(json, "\"at\":1800000005000") != NULL);
  CHECK(strstr(json, "{\"name\":\"mail\",\"paused\":true,\"paused_by\":"
                     "\"tester\",\"reason\":\"maintenance\",\"pending\":2,"
                     "\"running\":0") != NULL);
  CHECK(strstr(json, "{\"name\":\"slow\",\"paused\":false") != NULL);
  char id[PAWL_ID_STRLEN], line[200];
  pawl_id_format(&run->id, id);
  snprintf(line, sizeof line,
           "\"running\":[{\"id\":\"%s\",\"type\":\"work\",\"queue\":\"slow\","
           "\"attempt\":1,\"node\":\"node-a\",\"started_at\":%lld,"
           "\"running_ms\":4000",
           id, (long long)T0);
  CHECK(strstr(json, line) != NULL);
  pawl_id_format(&dead, id);
  snprintf(line, sizeof line, "\"dead\":[{\"id\":\"%s\"", id);
  CHECK(strstr(json, line) != NULL);
  CHECK(strstr(json, "\"error\":\"line one \\\"quoted\\\"\\nline two "
                     "\\u001b[31m\"") != NULL);
  CHECK(strstr(json, "{\"minute_at\":1800000000000,\"state\":\"failed\","
                     "\"queue\":\"dead\",\"count\":1}") != NULL);
  /* Payloads never. */
  CHECK(strstr(json, "hunter2") == NULL);
  pawl_top_snapshot_free(json);

  pawl_top_opts_t o;
  pawl_top_opts_init(&o);
  o.running = 0;
  o.dead = 0;
  CHECK_OK(pawl_top_snapshot(p, &o, &json));
  CHECK(strstr(json, "\"running\":[],\"dead\":[]}") != NULL);
  pawl_top_snapshot_free(json);
  json = NULL;
  o.dead = 1001;
  CHECK_INT(pawl_top_snapshot(p, &o, &json), ==, PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "0..1000") != NULL);
  o.dead = 0;
  o.minutes = 31;
  CHECK_INT(pawl_top_snapshot(p, &o, &json), ==, PAWL_EINVAL);
  CHECK(json == NULL);
  pawl_job_free(run);
  pawl_close(p);
}
