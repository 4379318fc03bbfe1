/* store_contract_steps.c: the restartable steps and job instances
 * contract suite (see store_contract_steps.h), through the public API on a
 * handle whose clock is injected: step executions are recorded under the
 * attempt's lease, checkpoints are stored with their step, a lost
 * attempt's running step is marked failed, and a job instance is refused
 * once completed, restarted once dead, given up when canceled. */
#include <stdatomic.h>
#include <stdlib.h>

#include "handle.h"
#include "pawl.h"
#include "store_contract_steps.h"
#include "unit.h"
#include "unit_pawl.h"

#define T0 INT64_C(1800000000000)

static _Atomic int64_t st_now = T0;

static pawl_t *open_db(const char *url) {
  atomic_store(&st_now, T0);
  return unit_open_clocked(url, "node-a", &st_now, 10000);
}

static int same(const pawl_id_t *a, const pawl_id_t *b) {
  return memcmp(a->bytes, b->bytes, 16) == 0;
}

static pawl_id_t enq(pawl_t *p) {
  pawl_id_t id;
  if (pawl_enqueue(p, "t", "{}", NULL, &id, NULL))
    unit_fail(__FILE__, __LINE__, "enqueue: %s", pawl_errmsg(p));
  return id;
}

static pawl_job_t *claim_one(pawl_t *p) {
  pawl_job_t **jobs = NULL;
  size_t n = 0;
  if (pawl_claim(p, NULL, 1, &jobs, &n))
    unit_fail(__FILE__, __LINE__, "claim: %s", pawl_errmsg(p));
  CHECK_INT(n, ==, 1);
  pawl_job_t *j = jobs[0];
  free(jobs);
  return j;
}

static void finish(pawl_t *p, pawl_job_t *j, pawl_outcome_kind_t kind) {
  pawl_outcome_t o = {.id = j->id, .attempt = j->attempt, .kind = kind,
                      .store_key = j->store_key};
  if (kind != PAWL_OUT_SUCCEEDED) o.error = "boom";
  int rcs[1] = {99};
  if (pawl_finish(p, &o, 1, rcs))
    unit_fail(__FILE__, __LINE__, "finish: %s", pawl_errmsg(p));
  CHECK_INT(rcs[0], ==, 0);
  pawl_job_free(j);
}

static pawl_steps_t *steps_of(pawl_t *p, const pawl_id_t *id) {
  pawl_steps_t *s = NULL;
  if (pawl_steps(p, id, &s))
    unit_fail(__FILE__, __LINE__, "steps: %s", pawl_errmsg(p));
  return s;
}

/* Begin, checkpoint, counters, exit codes, end; read back in order. */
void contract_steps_record(const char *url) {
  pawl_t *p = open_db(url);
  pawl_id_t id = enq(p);
  pawl_steps_t *s = steps_of(p, &id);
  CHECK_INT(s->n, ==, 0);
  CHECK(s->exit_code == NULL && s->instance == NULL);
  pawl_steps_free(s);

  pawl_job_t *j = claim_one(p);
  int64_t e1 = 0, e2 = 0;
  CHECK_OK(pawl_step_begin(p, &id, j->attempt, 1, "extract", NULL, &e1));
  atomic_fetch_add(&st_now, 5);
  int64_t c1[PAWL_STEP_NCOUNTS] = {10, 9, 1, 0, 1, 0};
  CHECK_OK(pawl_step_save(p, &id, j->attempt, e1, "{\"next\": 11}", c1));
  int64_t c2[PAWL_STEP_NCOUNTS] = {20, 18, 2, 0, 2, 0};
  /* NULL: the counters only, the checkpoint kept. */
  CHECK_OK(pawl_step_save(p, &id, j->attempt, e1, NULL, c2));
  atomic_fetch_add(&st_now, 5);
  CHECK_OK(pawl_step_end(p, &id, j->attempt, e1, PAWL_STEP_COMPLETED,
                         "COMPLETED_WITH_SKIPS", "2 filtered", c2));
  CHECK_OK(pawl_step_begin(p, &id, j->attempt, 2, "load", "{\"from\":3}", &e2));
  CHECK(e2 > e1);
  CHECK_OK(pawl_job_exit(p, &id, j->attempt, "PARTIAL", "one step left"));
  CHECK_OK(pawl_job_exit(p, &id, j->attempt, "DONE", NULL)); /* the last wins */

  s = steps_of(p, &id);
  CHECK_INT(s->n, ==, 2);
  const pawl_step_exec_t *a = &s->execs[0], *b = &s->execs[1];
  CHECK_INT(a->seq, ==, e1);
  CHECK_INT(a->attempt, ==, 1);
  CHECK_INT(a->index, ==, 1);
  CHECK_STR(a->name, "extract");
  CHECK_INT(a->status, ==, PAWL_STEP_COMPLETED);
  CHECK_INT(a->started_at, ==, T0);
  CHECK_INT(a->ended_at, ==, T0 + 10);
  CHECK_INT(a->checkpoint_at, ==, T0 + 5);
  CHECK(a->checkpoint && strstr(a->checkpoint, "11"));
  CHECK_STR(a->exit_code, "COMPLETED_WITH_SKIPS");
  CHECK_STR(a->exit_message, "2 filtered");
  for (int k = 0; k < PAWL_STEP_NCOUNTS; k++) CHECK_INT(a->counts[k], ==, c2[k]);
  CHECK_INT(b->index, ==, 2);
  CHECK_STR(b->name, "load");
  CHECK_INT(b->status, ==, PAWL_STEP_RUNNING);
  CHECK_INT(b->ended_at, ==, 0);
  CHECK(b->checkpoint && strstr(b->checkpoint, "from"));
  CHECK(b->exit_code == NULL);
  CHECK_STR(s->exit_code, "DONE");
  CHECK(s->exit_message == NULL);
  pawl_steps_free(s);
  finish(p, j, PAWL_OUT_SUCCEEDED);
  pawl_close(p);
}

/* Writes of an attempt this node does not hold change nothing. */
void contract_steps_lease_guard(const char *url) {
  pawl_t *p = open_db(url);
  pawl_id_t id = enq(p);
  int64_t e = 0;
  /* Pending: not running at all. */
  CHECK_INT(pawl_step_begin(p, &id, 1, 1, "a", NULL, &e), ==, PAWL_ELEASE);
  pawl_job_t *j = claim_one(p);
  CHECK_OK(pawl_step_begin(p, &id, j->attempt, 1, "a", NULL, &e));
  int32_t other = j->attempt + 1;
  int64_t c[PAWL_STEP_NCOUNTS] = {1, 1, 1, 1, 1, 1};
  CHECK_INT(pawl_step_save(p, &id, other, e, "{}", c), ==, PAWL_ELEASE);
  CHECK_INT(pawl_step_end(p, &id, other, e, PAWL_STEP_COMPLETED, NULL, NULL, c),
            ==, PAWL_ELEASE);
  CHECK_INT(pawl_job_exit(p, &id, other, "X", NULL), ==, PAWL_ELEASE);
  CHECK_INT(pawl_step_begin(p, &id, other, 2, "b", NULL, &e), ==, PAWL_ELEASE);
  /* Another job's row is not this job's. */
  pawl_id_t id2 = enq(p);
  CHECK_INT(pawl_step_save(p, &id2, j->attempt, e, "{}", c), ==, PAWL_ELEASE);
  int32_t att = j->attempt;
  finish(p, j, PAWL_OUT_SUCCEEDED);
  /* Finished: the attempt is not held any more. */
  CHECK_INT(pawl_step_end(p, &id, att, e, PAWL_STEP_COMPLETED, NULL, NULL, c),
            ==, PAWL_ELEASE);
  CHECK(strstr(pawl_errmsg(p), "not running under attempt") != NULL);
  pawl_steps_t *s = steps_of(p, &id);
  CHECK_INT(s->n, ==, 1);
  CHECK_INT(s->execs[0].status, ==, PAWL_STEP_RUNNING);
  CHECK(s->execs[0].checkpoint == NULL);
  CHECK_INT(s->execs[0].counts[0], ==, 0);
  CHECK(s->exit_code == NULL);
  pawl_steps_free(s);
  pawl_close(p);
}

/* An attempt whose node died left its step running: the next attempt's
 * first step marks it failed; the checkpoint it saved is still there. */
void contract_steps_lost_attempt(const char *url) {
  pawl_t *p = open_db(url);
  pawl_id_t id = enq(p);
  pawl_job_t *j = claim_one(p);
  int64_t e1 = 0, e2 = 0;
  CHECK_OK(pawl_step_begin(p, &id, j->attempt, 1, "a", NULL, &e1));
  CHECK_OK(pawl_step_save(p, &id, j->attempt, e1, "{\"at\":550}", NULL));
  pawl_job_free(j);
  atomic_fetch_add(&st_now, 20000); /* past the lease */
  size_t n = 0;
  CHECK_OK(pawl_recover(p, &n));
  CHECK_INT(n, ==, 1);
  j = claim_one(p);
  CHECK_INT(j->attempt, ==, 2);
  CHECK_OK(pawl_step_begin(p, &id, 2, 1, "a", "{\"at\":550}", &e2));
  pawl_steps_t *s = steps_of(p, &id);
  CHECK_INT(s->n, ==, 2);
  CHECK_INT(s->execs[0].status, ==, PAWL_STEP_FAILED);
  CHECK_INT(s->execs[0].ended_at, ==, T0 + 20000);
  CHECK(s->execs[0].exit_message &&
        strstr(s->execs[0].exit_message, "without ending"));
  CHECK(strstr(s->execs[0].checkpoint, "550") != NULL);
  CHECK_INT(s->execs[1].attempt, ==, 2);
  CHECK_INT(s->execs[1].status, ==, PAWL_STEP_RUNNING);
  CHECK(strstr(s->execs[1].checkpoint, "550") != NULL);
  pawl_steps_free(s);
  finish(p, j, PAWL_OUT_SUCCEEDED);
  pawl_close(p);
}

/* Refusals name the value and write nothing. */
void contract_steps_bad_input(const char *url) {
  pawl_t *p = open_db(url);
  pawl_id_t id = enq(p);
  pawl_job_t *j = claim_one(p);
  int32_t at = j->attempt;
  int64_t e = 0;
  CHECK_INT(pawl_step_begin(p, &id, at, 0, "a", NULL, &e), ==, PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "between 1 and 100 (got 0)") != NULL);
  CHECK_INT(pawl_step_begin(p, &id, at, 101, "a", NULL, &e), ==, PAWL_EINVAL);
  CHECK_INT(pawl_step_begin(p, &id, at, 1, "", NULL, &e), ==, PAWL_EINVAL);
  CHECK_INT(pawl_step_begin(p, &id, at, 1, "a\nb", NULL, &e), ==, PAWL_EINVAL);
  CHECK_INT(pawl_step_begin(p, &id, at, 1, "a", "{bad", &e), ==, PAWL_EINVAL);
  CHECK_OK(pawl_step_begin(p, &id, at, 1, "a", NULL, &e));
  /* A checkpoint over the limit: 1 MiB of JSON and a byte. */
  size_t big = PAWL_CHECKPOINT_MAX + 1;
  char *cp = malloc(big + 1);
  CHECK(cp != NULL);
  cp[0] = '"';
  memset(cp + 1, 'x', big - 2);
  cp[big - 1] = '"';
  cp[big] = 0;
  CHECK_INT(pawl_step_save(p, &id, at, e, cp, NULL), ==, PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "more than the limit of 1048576") != NULL);
  cp[big - 2] = '"'; /* exactly the limit: taken */
  cp[big - 1] = 0;
  CHECK_OK(pawl_step_save(p, &id, at, e, cp, NULL));
  free(cp);
  int64_t neg[PAWL_STEP_NCOUNTS] = {0, -1, 0, 0, 0, 0};
  CHECK_INT(pawl_step_save(p, &id, at, e, NULL, neg), ==, PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "counter written") != NULL);
  CHECK_INT(pawl_step_end(p, &id, at, e, PAWL_STEP_RUNNING, NULL, NULL, NULL),
            ==, PAWL_EINVAL);
  CHECK_INT(pawl_step_end(p, &id, at, e, PAWL_STEP_COMPLETED, "", NULL, NULL),
            ==, PAWL_EINVAL);
  char code[PAWL_EXIT_CODE_MAX + 2];
  memset(code, 'C', sizeof code - 1);
  code[sizeof code - 1] = 0;
  CHECK_INT(pawl_job_exit(p, &id, at, code, NULL), ==, PAWL_EINVAL);
  CHECK_INT(pawl_job_exit(p, &id, at, NULL, NULL), ==, PAWL_EINVAL);
  CHECK_INT(pawl_job_exit(p, &id, at, "OK", "\xff\xfe"), ==, PAWL_EINVAL);
  pawl_steps_t *s = steps_of(p, &id);
  CHECK_INT(s->n, ==, 1);
  CHECK_INT(strlen(s->execs[0].checkpoint), >=, PAWL_CHECKPOINT_MAX - 2);
  CHECK_INT(s->execs[0].status, ==, PAWL_STEP_RUNNING);
  CHECK(s->exit_code == NULL);
  pawl_steps_free(s);
  pawl_id_t none;
  memset(&none, 0x11, sizeof none);
  s = NULL;
  CHECK_INT(pawl_steps(p, &none, &s), ==, PAWL_ENOTFOUND);
  CHECK(s == NULL);
  finish(p, j, PAWL_OUT_SUCCEEDED);
  pawl_close(p);
}

static const char *const DATE[] = {"date"};

static int enq_instance(pawl_t *p, const char *payload, pawl_id_t *id,
                        int *status) {
  pawl_enqueue_opts_t o;
  pawl_enqueue_opts_init(&o);
  o.identity = DATE;
  o.nidentity = 1;
  return pawl_enqueue(p, "report", payload, &o, id, status);
}

static int count_cb(const pawl_job_t *j, void *data) {
  (void)j;
  (*(int64_t *)data)++;
  return 0;
}

static int64_t count_jobs(pawl_t *p) {
  int64_t n = 0;
  pawl_filter_t f;
  pawl_filter_init(&f);
  f.type = "report";
  f.limit = 1000;
  if (pawl_list(p, &f, count_cb, &n))
    unit_fail(__FILE__, __LINE__, "list: %s", pawl_errmsg(p));
  return n;
}

/* A completed instance is refused, a dead one restarted, a live one
 * returned, a canceled one given up; identity comes from the payload. */
void contract_steps_instances(const char *url) {
  pawl_t *p = open_db(url);
  pawl_id_t a, b;
  int st = -1;
  CHECK_OK(enq_instance(p, "{\"date\":\"2026-01-01\",\"n\":1}", &a, &st));
  CHECK_INT(st, ==, PAWL_ENQ_NEW);
  /* Live: the same job, whatever else the payload says; whitespace
   * outside strings does not make another instance. */
  CHECK_OK(enq_instance(p, "{ \"n\": 2, \"date\" : \"2026-01-01\" }", &b, &st));
  CHECK_INT(st, ==, PAWL_ENQ_EXISTING);
  CHECK(same(&a, &b));
  CHECK_INT(count_jobs(p), ==, 1);
  pawl_steps_t *s = steps_of(p, &a);
  CHECK_STR(s->instance, "{\"date\":\"2026-01-01\"}");
  pawl_steps_free(s);

  /* Succeeded: refused, nothing enqueued. */
  finish(p, claim_one(p), PAWL_OUT_SUCCEEDED);
  CHECK_INT(enq_instance(p, "{\"date\":\"2026-01-01\"}", &b, &st), ==, PAWL_EDONE);
  CHECK(strstr(pawl_errmsg(p), "already completed") != NULL);
  CHECK(strstr(pawl_errmsg(p), "2026-01-01") != NULL);
  CHECK_STR(pawl_err_name(PAWL_EDONE), "PAWL_EDONE");
  CHECK_INT(count_jobs(p), ==, 1);

  /* Another date is another instance; dead, it is restarted. */
  pawl_id_t c, d;
  CHECK_OK(enq_instance(p, "{\"date\":\"2026-01-02\"}", &c, &st));
  CHECK_INT(st, ==, PAWL_ENQ_NEW);
  finish(p, claim_one(p), PAWL_OUT_FAILED);
  CHECK_OK(enq_instance(p, "{\"date\":\"2026-01-02\"}", &d, &st));
  CHECK_INT(st, ==, PAWL_ENQ_RESTARTED);
  CHECK(same(&c, &d));
  pawl_job_t *j = NULL;
  CHECK_OK(pawl_get(p, &c, &j));
  CHECK_INT(j->state, ==, PAWL_PENDING);
  pawl_job_free(j);
  CHECK_INT(count_jobs(p), ==, 2);

  /* Canceled: given up; the next enqueue makes a new job. */
  CHECK_OK(pawl_cancel(p, &c, "not today", NULL));
  CHECK_OK(enq_instance(p, "{\"date\":\"2026-01-02\"}", &d, &st));
  CHECK_INT(st, ==, PAWL_ENQ_NEW);
  CHECK(!same(&c, &d));
  CHECK_INT(count_jobs(p), ==, 3);

  /* Bad input: nothing enqueued. */
  CHECK_INT(enq_instance(p, "{\"day\":\"x\"}", &b, &st), ==, PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "identity field date is not in the payload"));
  CHECK_INT(enq_instance(p, "[1]", &b, &st), ==, PAWL_EINVAL);
  {
    char big[1100];
    memset(big, 0, sizeof big);
    snprintf(big, sizeof big, "{\"date\":\"%01000d\"}", 7);
    CHECK_INT(enq_instance(p, big, &b, &st), ==, PAWL_EINVAL);
    CHECK(strstr(pawl_errmsg(p), "more than the limit of 1000"));
  }
  CHECK_INT(enq_instance(p, "{\"date\":", &b, &st), ==, PAWL_EINVAL);
  pawl_enqueue_opts_t o;
  pawl_enqueue_opts_init(&o);
  o.identity = DATE;
  o.nidentity = 1;
  pawl_enqueue_item_t two[2] = {{"report", "{\"date\":\"z\"}", &o},
                                {"report", "{\"date\":\"y\"}", &o}};
  CHECK_INT(pawl_enqueue_many(p, two, 2, NULL, NULL), ==, PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "one job per call"));
  CHECK_INT(count_jobs(p), ==, 3);

  /* The field is the member job code reads as payload.date: its key
   * decoded, and of duplicate keys the last one (as jsonb keeps it). */
  static const struct {
    const char *payload, *instance;
  } same_field[] = {
      {"{\"d\\u0061te\":\"2026-02-01\"}", "{\"date\":\"2026-02-01\"}"},
      {"{\"\\u0064\\u0061\\u0074\\u0065\":[1, {\"a\" : 2}]}",
       "{\"date\":[1,{\"a\":2}]}"},
      {"{\"date\":\"2026-02-02\",\"n\":1,\"date\":\"2026-02-03\"}",
       "{\"date\":\"2026-02-03\"}"},
      {"{\"date\":\"x\",\"d\\u0061te\":\"2026-02-04\"}",
       "{\"date\":\"2026-02-04\"}"},
      /* Nested "date" members are not the field. */
      {"{\"n\":{\"date\":1},\"date\":\"2026-02-05\",\"m\":[{\"date\":2}]}",
       "{\"date\":\"2026-02-05\"}"},
  };
  for (size_t i = 0; i < sizeof same_field / sizeof same_field[0]; i++) {
    pawl_id_t e;
    if (enq_instance(p, same_field[i].payload, &e, &st))
      unit_fail(__FILE__, __LINE__, "%s: %s", same_field[i].payload,
                pawl_errmsg(p));
    CHECK_INT(st, ==, PAWL_ENQ_NEW);
    s = steps_of(p, &e);
    CHECK_STR(s->instance, same_field[i].instance);
    pawl_steps_free(s);
  }
  /* Escaped and plain spellings are one instance. */
  CHECK_OK(enq_instance(p, "{\"date\":\"2026-02-01\"}", &b, &st));
  CHECK_INT(st, ==, PAWL_ENQ_EXISTING);
  CHECK_INT(count_jobs(p), ==, 8);
  pawl_close(p);
}

/* The store's backstop: an insert whose instance another job holds fails
 * whole (PAWL_ECONFLICT) and inserts nothing. */
void contract_steps_instance_taken(const char *url) {
  pawl_t *p = open_db(url);
  store_new_job_t nj;
  memset(&nj, 0, sizeof nj);
  pawl_id_new(&nj.id);
  nj.type = "report";
  nj.queue = "default";
  nj.payload = "{}";
  nj.tags = "[]";
  nj.instance_key = "{\"date\":\"x\"}";
  pawl_id_t ids[1];
  int sts[1];
  CHECK_OK(p->store->ops->jobs.insert(p->store, &nj, 1, ids, sts));
  pawl_id_t first = nj.id;
  pawl_id_new(&nj.id);
  CHECK_INT(p->store->ops->jobs.insert(p->store, &nj, 1, ids, sts), ==,
            PAWL_ECONFLICT);
  pawl_job_t *j = NULL;
  CHECK_INT(pawl_get(p, &nj.id, &j), ==, PAWL_ENOTFOUND);
  pawl_id_t held;
  int state = -1;
  CHECK_OK(p->store->ops->steps.instance(p->store, "report", nj.instance_key,
                                         &held, &state));
  CHECK(same(&held, &first));
  CHECK_INT(state, ==, PAWL_PENDING);
  pawl_close(p);
}
