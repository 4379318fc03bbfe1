/* store_contract.c: the store contract suite (see store_contract.h).
 *
 * Everything runs through the public API on a handle whose clock is
 * injected, so delays, leases and backoff are tested without sleeping. */
#include <math.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

#include "json.h"
#include "pawl.h"
#include "handle.h"
#include "store_contract.h"
#include "unit.h"

#define T0 INT64_C(1800000000000)

static _Atomic int64_t contract_now = T0;

static int64_t contract_clock(void *data) {
  (void)data;
  return atomic_load(&contract_now);
}

static void contract_set(int64_t ms) { atomic_store(&contract_now, ms); }
static void contract_advance(int64_t ms) { atomic_fetch_add(&contract_now, ms); }

void contract_open_race(const char *url, int n) {
  int go[2];
  CHECK_INT(pipe(go), ==, 0);
  pid_t kids[64];
  CHECK(n > 0 && n <= 64);
  for (int i = 0; i < n; i++) {
    kids[i] = fork();
    CHECK(kids[i] >= 0);
    if (kids[i] == 0) {
      char ch;
      close(go[1]);
      if (read(go[0], &ch, 1) != 0) _exit(3); /* wait for the start signal */
      pawl_options_t o;
      pawl_options_init(&o);
      o.db = url;
      pawl_t *p = NULL;
      char err[512];
      if (pawl_open(&p, &o, err, sizeof err)) {
        fprintf(stderr, "child %d: %s\n", i, err);
        _exit(1);
      }
      pawl_id_t id;
      int rc = pawl_enqueue(p, "hello", "{}", NULL, &id, NULL);
      if (rc) fprintf(stderr, "child %d: %s\n", i, pawl_errmsg(p));
      pawl_close(p);
      _exit(rc ? 2 : 0);
    }
  }
  close(go[0]);
  close(go[1]); /* EOF releases every child at once */
  for (int i = 0; i < n; i++) {
    int status;
    CHECK_INT(waitpid(kids[i], &status, 0), ==, kids[i]);
    CHECK(WIFEXITED(status));
    CHECK_INT(WEXITSTATUS(status), ==, 0);
  }
}

/* A handle on `url` with the test clock; age boost off unless asked. */
static pawl_t *contract_open_with(const char *url, const char *node,
                                  int64_t boost_ms) {
  pawl_options_t o;
  pawl_options_init(&o);
  o.db = url;
  o.node_id = node;
  o.principal = "tester";
  o.clock = contract_clock;
  o.lease_ms = 10000;
  o.age_boost_ms = boost_ms;
  pawl_t *p = NULL;
  char err[512];
  int rc = pawl_open(&p, &o, err, sizeof err);
  if (rc) unit_fail(__FILE__, __LINE__, "pawl_open(%s): %s", url, err);
  return p;
}

static pawl_t *contract_open(const char *url) {
  contract_set(T0);
  return contract_open_with(url, "node-a", 0);
}

/* ---- JSON as a value ------------------------------------------------------
 * Backends may store JSON as text (SQLite keeps it byte for byte) or as a
 * value (PostgreSQL's jsonb normalizes spaces and key order), so the suite
 * compares JSON by value: both sides are rewritten in one canonical form,
 * without spaces and with object members sorted by key. The inputs are
 * valid JSON (the store checked them). */

typedef struct jcanon {
  const char *p;
  char *out;
  size_t len, cap;
} jcanon_t;

static void jc_put(jcanon_t *c, const char *s, size_t n) {
  if (c->len + n + 1 > c->cap) {
    c->cap = (c->len + n + 1) * 2;
    c->out = realloc(c->out, c->cap);
    CHECK(c->out != NULL);
  }
  memcpy(c->out + c->len, s, n);
  c->len += n;
  c->out[c->len] = 0;
}

static void jc_ws(jcanon_t *c) {
  while (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r') c->p++;
}

static char *jc_value(jcanon_t *c);

/* A string token, copied as written (escapes included). */
static char *jc_string(jcanon_t *c) {
  const char *start = c->p++;
  while (*c->p != '"') c->p += *c->p == '\\' ? 2 : 1;
  c->p++;
  return strndup(start, (size_t)(c->p - start));
}

typedef struct jmember {
  char *key, *value;
} jmember_t;

static int jc_member_cmp(const void *a, const void *b) {
  return strcmp(((const jmember_t *)a)->key, ((const jmember_t *)b)->key);
}

static char *jc_value(jcanon_t *c) {
  jc_ws(c);
  jcanon_t sub = {0};
  if (*c->p == '"') return jc_string(c);
  if (*c->p == '[') {
    c->p++;
    jc_put(&sub, "[", 1);
    jc_ws(c);
    for (int first = 1; *c->p != ']'; first = 0) {
      if (!first) jc_put(&sub, ",", 1);
      char *v = jc_value(c);
      jc_put(&sub, v, strlen(v));
      free(v);
      jc_ws(c);
      if (*c->p == ',') c->p++;
      jc_ws(c);
    }
    c->p++;
    jc_put(&sub, "]", 1);
    return sub.out;
  }
  if (*c->p == '{') {
    c->p++;
    jmember_t *m = NULL;
    size_t n = 0;
    jc_ws(c);
    while (*c->p != '}') {
      m = realloc(m, (n + 1) * sizeof *m);
      CHECK(m != NULL);
      m[n].key = jc_string(c);
      jc_ws(c);
      c->p++; /* ':' */
      m[n++].value = jc_value(c);
      jc_ws(c);
      if (*c->p == ',') c->p++;
      jc_ws(c);
    }
    c->p++;
    if (n) qsort(m, n, sizeof *m, jc_member_cmp);
    jc_put(&sub, "{", 1);
    for (size_t i = 0; i < n; i++) {
      if (i) jc_put(&sub, ",", 1);
      jc_put(&sub, m[i].key, strlen(m[i].key));
      jc_put(&sub, ":", 1);
      jc_put(&sub, m[i].value, strlen(m[i].value));
      free(m[i].key);
      free(m[i].value);
    }
    free(m);
    jc_put(&sub, "}", 1);
    return sub.out;
  }
  /* A number or a literal: up to the next delimiter. */
  const char *start = c->p;
  while (*c->p && !strchr(",]} \t\r\n", *c->p)) c->p++;
  return strndup(start, (size_t)(c->p - start));
}

/* CHECK_JSON(a, b): a and b are the same JSON value. */
#define CHECK_JSON(a, b)                                                     \
  do {                                                                       \
    const char *ja_ = (a), *jb_ = (b);                                       \
    if (ja_ == NULL || jb_ == NULL)                                          \
      unit_fail(__FILE__, __LINE__, "%s == %s as JSON (one is NULL)", #a,    \
                #b);                                                         \
    jcanon_t ca_ = {ja_, NULL, 0, 0}, cb_ = {jb_, NULL, 0, 0};               \
    char *xa_ = jc_value(&ca_), *xb_ = jc_value(&cb_);                       \
    if (strcmp(xa_, xb_) != 0)                                               \
      unit_fail(__FILE__, __LINE__, "%s == %s as JSON (%s vs %s)", #a, #b,   \
                ja_, jb_);                                                   \
    free(xa_);                                                               \
    free(xb_);                                                               \
  } while (0)


static pawl_id_t enq(pawl_t *p, const char *type, const pawl_enqueue_opts_t *o) {
  pawl_id_t id;
  int rc = pawl_enqueue(p, type, "{}", o, &id, NULL);
  if (rc) unit_fail(__FILE__, __LINE__, "enqueue %s: %s", type, pawl_errmsg(p));
  return id;
}

static pawl_job_t *get(pawl_t *p, const pawl_id_t *id) {
  pawl_job_t *j = NULL;
  int rc = pawl_get(p, id, &j);
  if (rc) unit_fail(__FILE__, __LINE__, "get: %s", pawl_errmsg(p));
  return j;
}

static int state_of(pawl_t *p, const pawl_id_t *id) {
  pawl_job_t *j = get(p, id);
  int s = j->state;
  pawl_job_free(j);
  return s;
}

/* Claims at most `max` jobs; returns how many, jobs in *out (may be NULL). */
static size_t claim(pawl_t *p, size_t max, pawl_job_t ***out) {
  pawl_job_t **jobs = NULL;
  size_t n = 0;
  int rc = pawl_claim(p, NULL, max, &jobs, &n);
  if (rc) unit_fail(__FILE__, __LINE__, "claim: %s", pawl_errmsg(p));
  if (out)
    *out = jobs;
  else
    pawl_jobs_free(jobs, n);
  return n;
}

static pawl_job_t *claim_one(pawl_t *p) {
  pawl_job_t **jobs;
  size_t n = claim(p, 1, &jobs);
  CHECK_INT(n, ==, 1);
  pawl_job_t *j = jobs[0];
  free(jobs);
  return j;
}

static int finish(pawl_t *p, const pawl_job_t *j, pawl_outcome_kind_t kind,
                  const char *text, int64_t run_at) {
  pawl_outcome_t o = {.id = j->id, .attempt = j->attempt, .kind = kind,
                      .run_at = run_at, .store_key = j->store_key};
  if (kind == PAWL_OUT_SUCCEEDED)
    o.result = text;
  else
    o.error = text;
  int rcs[1] = {99};
  int rc = pawl_finish(p, &o, 1, rcs);
  if (rc) unit_fail(__FILE__, __LINE__, "finish: %s", pawl_errmsg(p));
  return rcs[0];
}

static int same_id(const pawl_id_t *a, const pawl_id_t *b) {
  return memcmp(a->bytes, b->bytes, 16) == 0;
}

/* ---- enqueue ------------------------------------------------------------ */

/* Every option but the keys set, for the enqueue tests (tags: 2 names). */
static void opts_full(pawl_enqueue_opts_t *o, const char *const *tags) {
  pawl_enqueue_opts_init(o);
  o->queue = "mail";
  o->priority = 7;
  o->delay_ms = 5000;
  o->max_attempts = 3;
  o->timeout_s = 30;
  o->params = "{\"region\":\"eu\"}";
  o->tags = tags;
  o->ntags = 2;
  o->correlation_id = "corr-9";
  o->enqueued_by = "api:shop";
}

#define FULL_PAYLOAD "{\"to\":\"a@b.c\",\"n\":[1,2]}"

/* A job enqueued at T0 with opts_full() and FULL_PAYLOAD, as read back. */
static void check_full(const pawl_job_t *j) {
  CHECK_STR(j->type, "send_mail");
  CHECK_STR(j->queue, "mail");
  CHECK_INT(j->state, ==, PAWL_PENDING);
  CHECK_INT(j->priority, ==, 7);
  CHECK_JSON(j->payload, FULL_PAYLOAD);
  CHECK_JSON(j->params, "{\"region\":\"eu\"}");
  CHECK_JSON(j->tags, "[\"billing\",\"eu\"]");
  CHECK_INT(j->run_at, ==, T0 + 5000);
  CHECK_INT(j->attempt, ==, 0);
  CHECK_INT(j->max_attempts, ==, 3);
  CHECK_INT(j->timeout_s, ==, 30);
  CHECK_STR(j->correlation_id, "corr-9");
  CHECK_STR(j->enqueued_by, "api:shop");
  CHECK_INT(j->created_at, ==, T0);
  CHECK_INT(j->updated_at, ==, T0);
  CHECK_INT(j->started_at, ==, 0);
  CHECK_INT(j->finished_at, ==, 0);
  CHECK(j->lease_owner == NULL);
  CHECK(j->last_error == NULL);
  CHECK(j->result == NULL);
  CHECK_INT(j->version, ==, 1);
}

void contract_enqueue_get(const char *url) {
  pawl_t *p = contract_open(url);
  const char *tags[] = {"billing", "eu"};
  pawl_enqueue_opts_t o;
  opts_full(&o, tags);
  o.idempotency_key = "idem-1";
  o.business_key = "order-42";
  pawl_id_t id;
  int status = -1;
  CHECK_OK(pawl_enqueue(p, "send_mail", FULL_PAYLOAD, &o, &id, &status));
  CHECK_INT(status, ==, PAWL_ENQ_NEW);
  CHECK_INT(id.bytes[6] >> 4, ==, 7);
  pawl_job_t *j = get(p, &id);
  CHECK(same_id(&j->id, &id));
  check_full(j);
  CHECK_STR(j->idempotency_key, "idem-1");
  CHECK_STR(j->business_key, "order-42");
  pawl_job_free(j);

  /* An explicit run_at wins over the delay. */
  pawl_enqueue_opts_init(&o);
  o.run_at = T0 + 123456;
  o.delay_ms = 5;
  id = enq(p, "later", &o);
  j = get(p, &id);
  CHECK_INT(j->run_at, ==, T0 + 123456);
  pawl_job_free(j);

  pawl_id_t missing;
  pawl_id_new(&missing);
  CHECK_INT(pawl_get(p, &missing, &j), ==, PAWL_ENOTFOUND);
  CHECK(strstr(pawl_errmsg(p), "no job") != NULL);
  pawl_close(p);
}

void contract_enqueue_defaults(const char *url) {
  pawl_t *p = contract_open(url);
  pawl_id_t id;
  CHECK_OK(pawl_enqueue(p, "plain", NULL, NULL, &id, NULL));
  pawl_job_t *j = get(p, &id);
  CHECK_STR(j->queue, "default");
  CHECK_JSON(j->payload, "{}");
  CHECK_JSON(j->tags, "[]");
  CHECK(j->params == NULL);
  CHECK_INT(j->priority, ==, 0);
  CHECK_INT(j->max_attempts, ==, 0); /* the script's, when it runs */
  CHECK_INT(j->timeout_s, ==, 0);
  CHECK_INT(j->run_at, ==, T0);
  CHECK_STR(j->enqueued_by, "tester");
  CHECK_INT(pawl_id_time_ms(&id) > 0, ==, 1);
  pawl_job_free(j);
  pawl_close(p);
}

static int count_cb(const pawl_job_t *j, void *data) {
  (void)j;
  (*(int *)data)++;
  return 0;
}

static int count_jobs(pawl_t *p) {
  int n = 0;
  pawl_filter_t f;
  pawl_filter_init(&f);
  f.limit = 1000000;
  CHECK_OK(pawl_list(p, &f, count_cb, &n));
  return n;
}

void contract_enqueue_bad_input(const char *url) {
  pawl_t *p = contract_open(url);
  enq(p, "keep", NULL);
  pawl_enqueue_opts_t o;
  pawl_enqueue_opts_init(&o);
  CHECK_INT(pawl_enqueue(p, "x", "{\"a\":", NULL, NULL, NULL), ==, PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "payload is not valid JSON") != NULL);
  CHECK_INT(pawl_enqueue(p, "x", "{'a':1}", NULL, NULL, NULL), ==, PAWL_EINVAL);
  CHECK_INT(pawl_enqueue(p, "", "{}", NULL, NULL, NULL), ==, PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "job type") != NULL);
  CHECK_INT(pawl_enqueue(p, "a\nb", "{}", NULL, NULL, NULL), ==, PAWL_EINVAL);
  o.max_attempts = -1;
  CHECK_INT(pawl_enqueue(p, "x", "{}", &o, NULL, NULL), ==, PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "max_attempts") != NULL);
  pawl_enqueue_opts_init(&o);
  o.params = "[1,]";
  CHECK_INT(pawl_enqueue(p, "x", "{}", &o, NULL, NULL), ==, PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "params") != NULL);
  pawl_enqueue_opts_init(&o);
  o.queue = "";
  CHECK_INT(pawl_enqueue(p, "x", "{}", &o, NULL, NULL), ==, PAWL_EINVAL);
  CHECK_INT(count_jobs(p), ==, 1);
  pawl_close(p);
}

void contract_enqueue_many_atomic(const char *url) {
  pawl_t *p = contract_open(url);
  pawl_enqueue_opts_t held;
  pawl_enqueue_opts_init(&held);
  held.business_key = "bk";
  enq(p, "holder", &held);
  pawl_enqueue_item_t items[3] = {
      {"a", "{}", NULL}, {"b", "{nope}", NULL}, {"c", "{}", NULL}};
  CHECK_INT(pawl_enqueue_many(p, items, 3, NULL, NULL), ==, PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "job 2") != NULL);
  CHECK_INT(count_jobs(p), ==, 1);
  /* A store-level refusal (live business key) also writes nothing. */
  items[1].payload = "{}";
  items[2].opts = &held;
  CHECK_INT(pawl_enqueue_many(p, items, 3, NULL, NULL), ==, PAWL_EKEY);
  CHECK_INT(count_jobs(p), ==, 1);
  pawl_id_t ids[3];
  int st[3];
  items[2].opts = NULL;
  CHECK_OK(pawl_enqueue_many(p, items, 3, ids, st));
  CHECK_INT(count_jobs(p), ==, 4);
  CHECK(memcmp(ids[0].bytes, ids[1].bytes, 16) < 0);
  CHECK(memcmp(ids[1].bytes, ids[2].bytes, 16) < 0);
  CHECK_INT(st[2], ==, PAWL_ENQ_NEW);
  pawl_close(p);
}

/* The bulk path (a backend may write keyless batches differently from
 * single jobs) stores every field as pawl_enqueue() does, and ranks its
 * jobs for the claim the same way. */
void contract_enqueue_many_fields(const char *url) {
  pawl_t *p = contract_open(url);
  const char *tags[] = {"billing", "eu"};
  pawl_enqueue_opts_t full, blocked, old, high;
  opts_full(&full, tags);
  pawl_enqueue_opts_init(&blocked);
  blocked.blocked = 1;
  blocked.run_at = T0 + 123456;
  pawl_enqueue_opts_init(&old);
  old.run_at = T0 - 1000;
  pawl_enqueue_opts_init(&high);
  high.priority = 5;
  pawl_enqueue_item_t items[5] = {
      {"send_mail", FULL_PAYLOAD, &full},
      {"wait", NULL, &blocked},
      {"plain", "{\"s\":\"caf\u00e9 \\\" \\n\"}", NULL},
      {"old", "{}", &old},
      {"high", "{}", &high}};
  pawl_id_t ids[5];
  int st[5];
  CHECK_OK(pawl_enqueue_many(p, items, 5, ids, st));
  for (int i = 0; i < 5; i++) CHECK_INT(st[i], ==, PAWL_ENQ_NEW);

  pawl_job_t *j = get(p, &ids[0]);
  check_full(j);
  CHECK(j->idempotency_key == NULL);
  CHECK(j->business_key == NULL);
  pawl_job_free(j);

  j = get(p, &ids[1]);
  CHECK_INT(j->state, ==, PAWL_BLOCKED);
  CHECK_INT(j->run_at, ==, T0 + 123456);
  CHECK_JSON(j->payload, "{}");
  CHECK(j->params == NULL);
  CHECK_JSON(j->tags, "[]");
  CHECK_INT(j->max_attempts, ==, 0); /* the script's, when it runs */
  CHECK_INT(j->timeout_s, ==, 0);
  pawl_job_free(j);

  j = get(p, &ids[2]);
  CHECK_STR(j->queue, "default");
  CHECK_INT(j->run_at, ==, T0);
  CHECK_JSON(j->payload, "{\"s\":\"caf\u00e9 \\\" \\n\"}");
  CHECK(j->correlation_id == NULL);
  pawl_job_free(j);

  /* Claim order: priority (with the age boost), then run_at, then id. */
  pawl_job_t **got = NULL;
  CHECK_INT(claim(p, 10, &got), ==, 3);
  CHECK(same_id(&got[0]->id, &ids[4]));
  CHECK(same_id(&got[1]->id, &ids[3]));
  CHECK(same_id(&got[2]->id, &ids[2]));
  pawl_jobs_free(got, 3);
  pawl_close(p);
}

/* ---- claim -------------------------------------------------------------- */

void contract_claim_order(const char *url) {
  pawl_t *p = contract_open(url);
  pawl_enqueue_opts_t o;
  pawl_id_t ids[6];
  /* Enqueued out of order; the expected claim order is by priority (high
   * first), then run_at, then id. */
  struct { int prio; int64_t run_at; } spec[6] = {
      {0, T0 - 10}, {5, T0 - 1}, {5, T0 - 5}, {-3, T0 - 100}, {5, T0 - 5},
      {1, T0}};
  for (int i = 0; i < 6; i++) {
    pawl_enqueue_opts_init(&o);
    o.priority = spec[i].prio;
    o.run_at = spec[i].run_at;
    ids[i] = enq(p, "job", &o);
  }
  int expect[6] = {2, 4, 1, 5, 0, 3};
  pawl_job_t **jobs;
  size_t n = claim(p, 10, &jobs);
  CHECK_INT(n, ==, 6);
  for (int i = 0; i < 6; i++) CHECK(same_id(&jobs[i]->id, &ids[expect[i]]));
  pawl_jobs_free(jobs, n);
  CHECK_INT(claim(p, 10, NULL), ==, 0);
  pawl_close(p);
}

void contract_claim_due_only(const char *url) {
  pawl_t *p = contract_open(url);
  pawl_enqueue_opts_t o;
  pawl_enqueue_opts_init(&o);
  o.delay_ms = 60000;
  o.priority = 100;
  pawl_id_t later = enq(p, "later", &o);
  pawl_id_t now = enq(p, "now", NULL);
  pawl_job_t *j = claim_one(p);
  CHECK(same_id(&j->id, &now));
  pawl_job_free(j);
  CHECK_INT(claim(p, 10, NULL), ==, 0);
  contract_advance(59999);
  CHECK_INT(claim(p, 10, NULL), ==, 0);
  contract_advance(1);
  j = claim_one(p);
  CHECK(same_id(&j->id, &later));
  pawl_job_free(j);
  pawl_close(p);
}

void contract_claim_queues(const char *url) {
  pawl_t *p = contract_open(url);
  pawl_enqueue_opts_t o;
  pawl_enqueue_opts_init(&o);
  const char *names[] = {"mail", "sms", "push"};
  pawl_id_t ids[3];
  for (int i = 0; i < 3; i++) {
    o.queue = names[i];
    ids[i] = enq(p, "job", &o);
  }
  const char *one[] = {"sms"};
  pawl_claim_opts_t co = {.queues = one, .nqueues = 1};
  pawl_job_t **jobs;
  size_t n;
  CHECK_OK(pawl_claim(p, &co, 10, &jobs, &n));
  CHECK_INT(n, ==, 1);
  CHECK(same_id(&jobs[0]->id, &ids[1]));
  pawl_jobs_free(jobs, n);
  const char *two[] = {"push", "mail", "none"};
  co.queues = two;
  co.nqueues = 3;
  CHECK_OK(pawl_claim(p, &co, 10, &jobs, &n));
  CHECK_INT(n, ==, 2);
  CHECK(same_id(&jobs[0]->id, &ids[0]));
  CHECK(same_id(&jobs[1]->id, &ids[2]));
  pawl_jobs_free(jobs, n);
  const char *bad[] = {""};
  co.queues = bad;
  co.nqueues = 1;
  CHECK_INT(pawl_claim(p, &co, 10, &jobs, &n), ==, PAWL_EINVAL);
  pawl_close(p);
}

void contract_claim_batch_lease(const char *url) {
  pawl_t *p = contract_open(url);
  for (int i = 0; i < 25; i++) enq(p, "job", NULL);
  pawl_job_t **jobs;
  size_t n = claim(p, 10, &jobs);
  CHECK_INT(n, ==, 10);
  for (size_t i = 0; i < n; i++) {
    CHECK_INT(jobs[i]->state, ==, PAWL_RUNNING);
    CHECK_INT(jobs[i]->attempt, ==, 1);
    CHECK_INT(jobs[i]->started_at, ==, T0);
    CHECK_INT(jobs[i]->lease_expires, ==, T0 + 10000);
    CHECK_STR(jobs[i]->lease_owner, "node-a");
    CHECK_INT(jobs[i]->version, ==, 2);
  }
  /* Each claimed job is what the store now holds for it. */
  for (size_t i = 0; i < n; i++) {
    pawl_job_t *held = get(p, &jobs[i]->id);
    CHECK_INT(held->state, ==, jobs[i]->state);
    CHECK_INT(held->attempt, ==, jobs[i]->attempt);
    CHECK_INT(held->started_at, ==, jobs[i]->started_at);
    CHECK_INT(held->updated_at, ==, jobs[i]->updated_at);
    CHECK_INT(held->lease_expires, ==, jobs[i]->lease_expires);
    CHECK_STR(held->lease_owner, jobs[i]->lease_owner);
    CHECK_INT(held->version, ==, jobs[i]->version);
    CHECK(held->progress_done == jobs[i]->progress_done);
    CHECK(held->progress_total == jobs[i]->progress_total);
    CHECK_STR(held->payload, jobs[i]->payload);
    pawl_job_free(held);
  }
  pawl_jobs_free(jobs, n);
  /* A second node takes the rest; nobody gets a job twice. */
  pawl_t *q = contract_open_with(url, "node-b", -1);
  CHECK_INT(claim(q, 100, NULL), ==, 15);
  CHECK_INT(claim(p, 100, NULL), ==, 0);
  CHECK_INT(claim(p, 0, NULL), ==, 0);
  pawl_close(q);
  pawl_close(p);
}

void contract_age_boost(const char *url) {
  contract_set(T0);
  pawl_t *p = contract_open_with(url, "node-a", 60000);
  pawl_enqueue_opts_t o;
  pawl_enqueue_opts_init(&o);
  pawl_id_t old = enq(p, "old", &o); /* priority 0, waits 2 minutes */
  contract_advance(120000);
  o.priority = 1;
  pawl_id_t fresh = enq(p, "fresh", &o);
  pawl_job_t *j = claim_one(p);
  CHECK(same_id(&j->id, &old));
  CHECK_INT(j->priority, ==, 0); /* the stored priority never changes */
  pawl_job_free(j);
  pawl_close(p);

  /* Turning the boost off re-ranks what is pending: priority alone. */
  contract_set(T0);
  p = contract_open_with(url, "node-a", 60000);
  CHECK_OK(pawl_cancel(p, &fresh, NULL, NULL));
  o.priority = 0;
  old = enq(p, "old", &o);
  contract_advance(120000);
  o.priority = 1;
  fresh = enq(p, "fresh", &o);
  pawl_close(p);
  p = contract_open_with(url, "node-a", 0);
  j = claim_one(p);
  CHECK(same_id(&j->id, &fresh));
  pawl_job_free(j);
  j = claim_one(p);
  CHECK(same_id(&j->id, &old));
  pawl_job_free(j);
  /* The boost is a database setting: a handle that keeps it (-1) sees 0. */
  pawl_t *q = contract_open_with(url, "node-b", -1);
  int64_t boost = -5;
  CHECK_OK(q->store->ops->settings.age_boost(q->store, &boost));
  CHECK_INT(boost, ==, 0);
  pawl_close(q);
  pawl_close(p);
}

/* ---- outcomes ----------------------------------------------------------- */

void contract_finish_success(const char *url) {
  pawl_t *p = contract_open(url);
  pawl_id_t id = enq(p, "job", NULL);
  contract_advance(1000);
  pawl_job_t *j = claim_one(p);
  contract_advance(250);
  CHECK_INT(finish(p, j, PAWL_OUT_SUCCEEDED, "{\"sent\":true}", 0), ==, 0);
  pawl_job_free(j);
  j = get(p, &id);
  CHECK_INT(j->state, ==, PAWL_SUCCEEDED);
  CHECK_JSON(j->result, "{\"sent\":true}");
  CHECK_INT(j->finished_at, ==, T0 + 1250);
  CHECK_INT(j->started_at, ==, T0 + 1000);
  CHECK_INT(j->attempt, ==, 1);
  pawl_job_free(j);
  /* Its history comes from the row: one attempt, its queue wait. */
  pawl_history_t *h;
  CHECK_OK(pawl_history(p, &id, &h));
  CHECK_INT(h->nattempts, ==, 1);
  CHECK_STR(h->attempts[0].outcome, "succeeded");
  CHECK_STR(h->attempts[0].node, "node-a");
  CHECK_INT(h->attempts[0].started_at - h->attempts[0].scheduled_at, ==, 1000);
  CHECK_INT(h->attempts[0].ended_at - h->attempts[0].started_at, ==, 250);
  CHECK_INT(h->nevents, ==, 3);
  CHECK_INT(h->events[0].from_state, ==, -1);
  CHECK_STR(h->events[0].actor, "tester");
  CHECK_INT(h->events[1].to_state, ==, PAWL_RUNNING);
  CHECK_INT(h->events[2].to_state, ==, PAWL_SUCCEEDED);
  pawl_history_free(h);
  /* A batch of successes, found by their row keys or (without one) by id,
   * each result stored as given. */
  for (int i = 0; i < 3; i++) enq(p, "batch", NULL);
  pawl_job_t **jobs;
  CHECK_INT(claim(p, 3, &jobs), ==, 3);
  const char *results[3] = {"{\"n\":1,\"s\":\"a,b\"}", NULL, "[1,[2,{}]]"};
  pawl_outcome_t outs[3];
  for (int i = 0; i < 3; i++) {
    /* SQLite hands out row keys; PostgreSQL finds rows by id (0). */
    CHECK(strncmp(url, "sqlite:", 7) != 0 || jobs[i]->store_key > 0);
    outs[i] = (pawl_outcome_t){.id = jobs[i]->id, .attempt = 1,
                               .kind = PAWL_OUT_SUCCEEDED, .result = results[i],
                               .store_key = i == 1 ? 0 : jobs[i]->store_key};
  }
  int rcs[3] = {9, 9, 9};
  CHECK_OK(pawl_finish(p, outs, 3, rcs));
  for (int i = 0; i < 3; i++) {
    CHECK_INT(rcs[i], ==, 0);
    pawl_job_t *done = get(p, &jobs[i]->id);
    CHECK_INT(done->state, ==, PAWL_SUCCEEDED);
    if (results[i])
      CHECK_JSON(done->result, results[i]);
    else
      CHECK(done->result == NULL);
    pawl_job_free(done);
  }
  /* Written again (a repeat of the same outcomes): refused as stale. */
  CHECK_OK(pawl_finish(p, outs, 3, rcs));
  for (int i = 0; i < 3; i++) CHECK_INT(rcs[i], ==, PAWL_ELEASE);
  pawl_jobs_free(jobs, 3);
  /* A result that is not JSON is refused before anything is written. */
  enq(p, "job2", NULL);
  j = claim_one(p);
  pawl_outcome_t o = {.id = j->id, .attempt = 1, .kind = PAWL_OUT_SUCCEEDED,
                      .result = "{oops"};
  CHECK_INT(pawl_finish(p, &o, 1, NULL), ==, PAWL_EINVAL);
  CHECK_INT(state_of(p, &j->id), ==, PAWL_RUNNING);
  pawl_job_free(j);
  pawl_close(p);
}

void contract_finish_stale(const char *url) {
  pawl_t *p = contract_open(url);
  pawl_t *q = contract_open_with(url, "node-b", -1);
  pawl_id_t id = enq(p, "job", NULL);
  pawl_job_t *j = claim_one(p);
  /* Another node (another incarnation) cannot finish our attempt. */
  CHECK_INT(finish(q, j, PAWL_OUT_SUCCEEDED, NULL, 0), ==, PAWL_ELEASE);
  /* Nor can we finish an attempt we do not hold. */
  j->attempt = 2;
  CHECK_INT(finish(p, j, PAWL_OUT_FAILED, "x", 0), ==, PAWL_ELEASE);
  j->attempt = 1;
  pawl_job_t *cur = get(p, &id);
  CHECK_INT(cur->state, ==, PAWL_RUNNING);
  CHECK_INT(cur->version, ==, 2);
  pawl_job_free(cur);
  /* A canceled job's late outcome is refused; the cancel stands. */
  CHECK_OK(pawl_cancel(p, &id, "operator", NULL));
  CHECK_INT(finish(p, j, PAWL_OUT_SUCCEEDED, NULL, 0), ==, PAWL_ELEASE);
  CHECK_INT(state_of(p, &id), ==, PAWL_CANCELED);
  /* In a batch, the stale one is skipped and the rest written. */
  pawl_id_t a = enq(p, "a", NULL), b = enq(p, "b", NULL);
  pawl_job_t **jobs;
  CHECK_INT(claim(p, 2, &jobs), ==, 2);
  pawl_outcome_t outs[3] = {
      {.id = jobs[0]->id, .attempt = 1, .kind = PAWL_OUT_SUCCEEDED,
       .store_key = jobs[0]->store_key},
      {.id = j->id, .attempt = 1, .kind = PAWL_OUT_SUCCEEDED,
       .store_key = j->store_key},
      {.id = jobs[1]->id, .attempt = 1, .kind = PAWL_OUT_FAILED, .error = "e"}};
  int rcs[3];
  CHECK_OK(pawl_finish(p, outs, 3, rcs));
  CHECK_INT(rcs[0], ==, 0);
  CHECK_INT(rcs[1], ==, PAWL_ELEASE);
  CHECK_INT(rcs[2], ==, 0);
  CHECK_INT(state_of(p, &a), ==, PAWL_SUCCEEDED);
  CHECK_INT(state_of(p, &b), ==, PAWL_FAILED);
  pawl_jobs_free(jobs, 2);
  /* A store_key is a hint, the id the truth: an outcome whose key names
   * another held row completes its own job, and only that one. */
  pawl_id_t x = enq(p, "x", NULL), y = enq(p, "y", NULL);
  CHECK_INT(claim(p, 2, &jobs), ==, 2);
  CHECK(same_id(&jobs[0]->id, &x));
  pawl_outcome_t mixed = {.id = x, .attempt = 1, .kind = PAWL_OUT_SUCCEEDED,
                          .result = "{\"job\":\"x\"}",
                          .store_key = jobs[1]->store_key};
  CHECK_OK(pawl_finish(p, &mixed, 1, rcs));
  CHECK_INT(rcs[0], ==, 0);
  pawl_job_t *done = get(p, &x);
  CHECK_INT(done->state, ==, PAWL_SUCCEEDED);
  CHECK_JSON(done->result, "{\"job\":\"x\"}");
  pawl_job_free(done);
  CHECK_INT(state_of(p, &y), ==, PAWL_RUNNING);
  pawl_jobs_free(jobs, 2);
  pawl_job_free(j);
  pawl_close(q);
  pawl_close(p);
}

void contract_retry_then_success(const char *url) {
  pawl_t *p = contract_open(url);
  pawl_id_t id = enq(p, "flaky", NULL);
  pawl_job_t *j = claim_one(p);
  contract_advance(100);
  CHECK_INT(finish(p, j, PAWL_OUT_RETRY, "boom", T0 + 100 + 2000), ==, 0);
  pawl_job_free(j);
  j = get(p, &id);
  CHECK_INT(j->state, ==, PAWL_PENDING);
  CHECK_INT(j->attempt, ==, 1);
  CHECK_INT(j->run_at, ==, T0 + 2100);
  CHECK_STR(j->last_error, "boom");
  pawl_job_free(j);
  contract_advance(1999);
  CHECK_INT(claim(p, 1, NULL), ==, 0);
  contract_advance(1);
  j = claim_one(p);
  CHECK_INT(j->attempt, ==, 2);
  contract_advance(50);
  CHECK_INT(finish(p, j, PAWL_OUT_SUCCEEDED, "1", 0), ==, 0);
  pawl_job_free(j);
  pawl_history_t *h;
  CHECK_OK(pawl_history(p, &id, &h));
  CHECK_INT(h->nattempts, ==, 2);
  CHECK_INT(h->attempts[0].attempt, ==, 1);
  CHECK_STR(h->attempts[0].outcome, "retry");
  CHECK_STR(h->attempts[0].error, "boom");
  CHECK_INT(h->attempts[0].started_at, ==, T0);
  CHECK_INT(h->attempts[0].ended_at, ==, T0 + 100);
  CHECK_INT(h->attempts[1].attempt, ==, 2);
  CHECK_STR(h->attempts[1].outcome, "succeeded");
  CHECK_INT(h->attempts[1].scheduled_at, ==, T0 + 2100);
  /* enqueued, claimed, retry, claimed, succeeded */
  CHECK_INT(h->nevents, ==, 5);
  int to[5] = {PAWL_PENDING, PAWL_RUNNING, PAWL_PENDING, PAWL_RUNNING,
               PAWL_SUCCEEDED};
  for (int i = 0; i < 5; i++) CHECK_INT(h->events[i].to_state, ==, to[i]);
  CHECK_STR(h->events[2].actor, "node-a");
  CHECK(strstr(h->events[2].reason, "retry") != NULL);
  pawl_history_free(h);
  pawl_close(p);
}

void contract_dead_letter(const char *url) {
  pawl_t *p = contract_open(url);
  pawl_enqueue_opts_t o;
  pawl_enqueue_opts_init(&o);
  o.max_attempts = 1;
  pawl_id_t id = enq(p, "doomed", &o);
  pawl_job_t *j = claim_one(p);
  CHECK_INT(finish(p, j, PAWL_OUT_FAILED, "fatal: no", 0), ==, 0);
  pawl_job_free(j);
  j = get(p, &id);
  CHECK_INT(j->state, ==, PAWL_FAILED);
  CHECK_STR(j->last_error, "fatal: no");
  CHECK_INT(j->finished_at, ==, T0);
  pawl_job_free(j);
  pawl_filter_t f;
  pawl_filter_init(&f);
  f.state = PAWL_FAILED;
  int n = 0;
  CHECK_OK(pawl_list(p, &f, count_cb, &n));
  CHECK_INT(n, ==, 1);
  /* Terminal: nothing claims it again, however long we wait. */
  contract_advance(86400000);
  CHECK_INT(claim(p, 10, NULL), ==, 0);
  /* The operator's manual retry: attempts reset, error cleared, due now. */
  pawl_job_t *r = NULL;
  CHECK_OK(pawl_retry(p, &id, "fixed upstream", &r));
  CHECK_INT(r->state, ==, PAWL_PENDING);
  CHECK_INT(r->attempt, ==, 0);
  CHECK(r->last_error == NULL);
  CHECK_INT(r->run_at, ==, T0 + 86400000);
  pawl_job_free(r);
  j = claim_one(p);
  CHECK_INT(j->attempt, ==, 1);
  pawl_job_free(j);
  pawl_close(p);
}

void contract_snooze_release(const char *url) {
  pawl_t *p = contract_open(url);
  pawl_id_t id = enq(p, "sleepy", NULL);
  pawl_job_t *j = claim_one(p);
  CHECK_INT(finish(p, j, PAWL_OUT_SNOOZE, NULL, T0 + 5000), ==, 0);
  pawl_job_free(j);
  pawl_job_t *cur = get(p, &id);
  CHECK_INT(cur->state, ==, PAWL_PENDING);
  CHECK_INT(cur->attempt, ==, 0);
  CHECK_INT(cur->run_at, ==, T0 + 5000);
  pawl_job_free(cur);
  contract_advance(5000);
  j = claim_one(p);
  CHECK_INT(j->attempt, ==, 1);
  CHECK_INT(finish(p, j, PAWL_OUT_RELEASE, NULL, 0), ==, 0);
  pawl_job_free(j);
  cur = get(p, &id);
  CHECK_INT(cur->state, ==, PAWL_PENDING);
  CHECK_INT(cur->attempt, ==, 0);
  CHECK_INT(cur->run_at, ==, T0 + 5000);
  pawl_job_free(cur);
  pawl_history_t *h;
  CHECK_OK(pawl_history(p, &id, &h));
  CHECK_INT(h->nattempts, ==, 2);
  CHECK_STR(h->attempts[0].outcome, "snoozed");
  CHECK_STR(h->attempts[1].outcome, "released");
  pawl_history_free(h);
  pawl_close(p);
}

/* A job handed back unstarted (claimed ahead of busy workers, or a node
 * stopping) never ran: it keeps its place in line, ahead of the jobs
 * enqueued after it, instead of going to the back of its queue. */
void contract_release_keeps_place(const char *url) {
  pawl_t *p = contract_open(url);
  pawl_id_t first = enq(p, "first", NULL);
  contract_advance(10);
  pawl_id_t later = enq(p, "later", NULL);
  pawl_job_t *j = claim_one(p);
  CHECK(same_id(&j->id, &first));
  contract_advance(1000);
  pawl_id_t newer = enq(p, "newer", NULL);
  contract_advance(10);
  CHECK_INT(finish(p, j, PAWL_OUT_RELEASE, NULL, 0), ==, 0);
  pawl_job_free(j);
  pawl_job_t *cur = get(p, &first);
  CHECK_INT(cur->state, ==, PAWL_PENDING);
  CHECK_INT(cur->run_at, ==, T0);
  pawl_job_free(cur);
  pawl_job_t **jobs;
  CHECK_INT(claim(p, 3, &jobs), ==, 3);
  CHECK(same_id(&jobs[0]->id, &first));
  CHECK(same_id(&jobs[1]->id, &later));
  CHECK(same_id(&jobs[2]->id, &newer));
  pawl_jobs_free(jobs, 3);
  pawl_close(p);
}

/* ---- transitions -------------------------------------------------------- */

/* A job in `state`, made through the API the way it happens for real. */
static pawl_id_t job_in(pawl_t *p, int state) {
  pawl_enqueue_opts_t o;
  pawl_enqueue_opts_init(&o);
  o.blocked = state == PAWL_BLOCKED;
  o.max_attempts = 1;
  o.priority = 1000; /* claimed before anything else pending */
  pawl_id_t id = enq(p, "t", &o);
  if (state == PAWL_RUNNING || state == PAWL_SUCCEEDED || state == PAWL_FAILED) {
    pawl_job_t *j = claim_one(p);
    CHECK(same_id(&j->id, &id));
    if (state == PAWL_SUCCEEDED) finish(p, j, PAWL_OUT_SUCCEEDED, NULL, 0);
    if (state == PAWL_FAILED) finish(p, j, PAWL_OUT_FAILED, "e", 0);
    pawl_job_free(j);
  }
  if (state == PAWL_CANCELED) CHECK_OK(pawl_cancel(p, &id, NULL, NULL));
  if (state == PAWL_PAUSED) CHECK_OK(pawl_pause(p, &id, NULL, NULL));
  CHECK_INT(state_of(p, &id), ==, state);
  return id;
}

typedef int (*op_fn)(pawl_t *, const pawl_id_t *, const char *, pawl_job_t **);

void contract_transitions(const char *url) {
  pawl_t *p = contract_open(url);
  op_fn ops[4] = {pawl_cancel, pawl_pause, pawl_resume, pawl_retry};
  const char *op_names[4] = {"cancel", "pause", "resume", "retry"};
  /* expected[state][op]: the state after, -1 for PAWL_ESTATE, -2 for a
   * no-op (already there). States: pending, running, succeeded, failed,
   * canceled, paused (from pending), blocked. */
  int expected[7][4] = {
      /* pending   */ {PAWL_CANCELED, PAWL_PAUSED, -2, -2},
      /* running   */ {PAWL_CANCELED, -1, -1, -1},
      /* succeeded */ {-1, -1, -1, -1},
      /* failed    */ {-1, PAWL_PAUSED, -2, PAWL_PENDING},
      /* canceled  */ {-2, -1, -1, -1},
      /* paused    */ {PAWL_CANCELED, -2, PAWL_PENDING, -1},
      /* blocked   */ {PAWL_CANCELED, -1, -1, -1},
  };
  for (int s = 0; s < 7; s++) {
    for (int o = 0; o < 4; o++) {
      pawl_id_t id = job_in(p, s);
      pawl_job_t *before = get(p, &id), *after = NULL;
      int rc = ops[o](p, &id, "because", &after);
      int want = expected[s][o];
      if (want == -1) {
        if (rc != PAWL_ESTATE)
          unit_fail(__FILE__, __LINE__, "%s from %s: rc %d, want ESTATE",
                    op_names[o], pawl_state_name(s), rc);
        CHECK(strstr(pawl_errmsg(p), op_names[o]) != NULL);
        CHECK(strstr(pawl_errmsg(p), pawl_state_name(s)) != NULL);
        after = get(p, &id);
        CHECK_INT(after->version, ==, before->version);
        CHECK_INT(after->state, ==, s);
      } else if (want == -2) {
        if (rc != 0)
          unit_fail(__FILE__, __LINE__, "%s from %s: rc %d, want no-op",
                    op_names[o], pawl_state_name(s), rc);
        CHECK_INT(after->version, ==, before->version);
        CHECK_INT(after->state, ==, s);
      } else {
        if (rc != 0 || after->state != (pawl_state_t)want)
          unit_fail(__FILE__, __LINE__, "%s from %s: rc %d state %s, want %s",
                    op_names[o], pawl_state_name(s), rc,
                    after ? pawl_state_name(after->state) : "-",
                    pawl_state_name(want));
        CHECK_INT(after->version, ==, before->version + 1);
      }
      pawl_job_free(before);
      pawl_job_free(after);
      /* Leave nothing claimable behind for the next round. */
      pawl_cancel(p, &id, NULL, NULL);
    }
  }
  /* paused remembers where it came from: failed -> paused -> failed. */
  pawl_id_t id = job_in(p, PAWL_FAILED);
  pawl_job_t *j = NULL;
  CHECK_OK(pawl_pause(p, &id, NULL, &j));
  CHECK_INT(j->paused_from, ==, PAWL_FAILED);
  pawl_job_free(j);
  CHECK_OK(pawl_resume(p, &id, NULL, &j));
  CHECK_INT(j->state, ==, PAWL_FAILED);
  pawl_job_free(j);
  /* Flow transitions through the store: blocked -> pending | failed. */
  id = job_in(p, PAWL_BLOCKED);
  CHECK_INT(claim(p, 10, NULL), ==, 0);
  CHECK_OK(p->store->ops->control.transition(p->store, &id, STORE_OP_UNBLOCK,
                                             "flow", NULL, "parents done", NULL));
  CHECK_INT(state_of(p, &id), ==, PAWL_PENDING);
  CHECK_OK(p->store->ops->control.transition(p->store, &id, STORE_OP_UNBLOCK,
                                             "flow", NULL, "again", NULL));
  CHECK_INT(p->store->ops->control.transition(p->store, &id, STORE_OP_EXPIRE,
                                              "flow", NULL, "late", NULL),
            ==, PAWL_ESTATE);
  pawl_cancel(p, &id, NULL, NULL);
  id = job_in(p, PAWL_BLOCKED);
  CHECK_OK(p->store->ops->control.transition(p->store, &id, STORE_OP_EXPIRE,
                                             "flow", NULL, "signal timed out", NULL));
  CHECK_INT(state_of(p, &id), ==, PAWL_FAILED);
  /* Unknown job. */
  pawl_id_new(&id);
  CHECK_INT(pawl_cancel(p, &id, NULL, NULL), ==, PAWL_ENOTFOUND);
  pawl_close(p);
}

void contract_transition_noop(const char *url) {
  pawl_t *p = contract_open(url);
  pawl_id_t id = enq(p, "job", NULL);
  pawl_job_t *a = NULL, *b = NULL;
  CHECK_OK(pawl_cancel(p, &id, "first", &a));
  CHECK_OK(pawl_cancel(p, &id, "second", &b));
  CHECK_INT(a->version, ==, b->version);
  CHECK_INT(a->updated_at, ==, b->updated_at);
  pawl_job_free(a);
  pawl_job_free(b);
  pawl_history_t *h;
  CHECK_OK(pawl_history(p, &id, &h));
  CHECK_INT(h->nevents, ==, 2); /* enqueued, canceled: the repeat wrote none */
  CHECK_STR(h->events[1].reason, "first");
  pawl_history_free(h);
  pawl_close(p);
}

/* ---- JSON policy ------------------------------------------------------------
 * One policy on both backends (host/core/json.h): what one refuses, the other
 * refuses with the same message, before anything is written; what is
 * stored comes back as a value the worker reads (pawl__json_check JSON_READ),
 * with empty arrays and objects kept apart. */

void contract_json_policy(const char *url) {
  pawl_t *p = contract_open(url);
  static const struct {
    const char *json, *why;
  } bad[] = {
      {"{\"s\":\"\\ud800\"}", "lone UTF-16 surrogate"},
      {"[\"\\udc00x\"]", "lone UTF-16 surrogate"},
      {"{\"s\":\"a\\u0000b\"}", "\\u0000"},
      {"{\"n\":1e400}", "out of the range of a double"},
      {"[-1e309]", "out of the range of a double"},
      {"{\"id\":9007199254740993}", "send it as a string"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    pawl_enqueue_opts_t o;
    pawl_enqueue_opts_init(&o);
    CHECK_INT(pawl_enqueue(p, "j", bad[i].json, NULL, NULL, NULL), ==,
              PAWL_EINVAL);
    if (!strstr(pawl_errmsg(p), bad[i].why) ||
        !strstr(pawl_errmsg(p), "payload"))
      unit_fail(__FILE__, __LINE__, "%s: %s", bad[i].json, pawl_errmsg(p));
    o.params = bad[i].json;
    CHECK_INT(pawl_enqueue(p, "j", "{}", &o, NULL, NULL), ==, PAWL_EINVAL);
    CHECK(strstr(pawl_errmsg(p), "params") != NULL);
  }
  CHECK_INT(count_jobs(p), ==, 0);
  /* A result outside the policy is refused before anything is written. */
  pawl_id_t rid = enq(p, "r", NULL);
  pawl_job_t *j = claim_one(p);
  pawl_outcome_t out = {.id = j->id, .attempt = j->attempt,
                        .kind = PAWL_OUT_SUCCEEDED,
                        .result = "{\"s\":\"\\ud800\"}",
                        .store_key = j->store_key};
  CHECK_INT(pawl_finish(p, &out, 1, NULL), ==, PAWL_EINVAL);
  CHECK_INT(state_of(p, &rid), ==, PAWL_RUNNING);
  out.result = "{\"a\":[],\"b\":{},\"c\":[[],[{}]],\"d\":[1,null,3]}";
  CHECK_OK(pawl_finish(p, &out, 1, NULL));
  pawl_job_free(j);
  pawl_job_t *done = get(p, &rid);
  CHECK_JSON(done->result, out.result);
  pawl_job_free(done);
  /* Accepted at the edges, and read back as the worker will read it. */
  static const char *const good[] = {
      "[]", "{}", "{\"a\":[],\"b\":{},\"c\":[[],[{}]],\"d\":[1,null,3]}",
      "{\"max\":9007199254740991,\"min\":-9007199254740991,"
      "\"two53\":9007199254740992,\"e20\":100000000000000000000}",
      "{\"s\":\"\\ud83d\\ude00 caf\u00e9 \\u0001\"}",
      "{\"big\":1e300,\"tiny\":1e-400,\"x\":1.7976931348623157e308}",
  };
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    pawl_id_t id;
    if (pawl_enqueue(p, "j", good[i], NULL, &id, NULL))
      unit_fail(__FILE__, __LINE__, "%s: %s", good[i], pawl_errmsg(p));
    pawl_job_t *g = get(p, &id);
    char err[256];
    if (pawl__json_check(g->payload, strlen(g->payload), JSON_READ, err, sizeof err))
      unit_fail(__FILE__, __LINE__, "%s came back as %s: %s", good[i],
                g->payload, err);
    if (i < 4) CHECK_JSON(g->payload, good[i]); /* jsonb rewrites the rest */
    pawl_job_free(g);
  }
  pawl_close(p);
}

/* ---- keys --------------------------------------------------------------- */

void contract_idempotency_key(const char *url) {
  pawl_t *p = contract_open(url);
  pawl_enqueue_opts_t o;
  pawl_enqueue_opts_init(&o);
  o.idempotency_key = "charge-1";
  pawl_id_t first, again;
  int status;
  CHECK_OK(pawl_enqueue(p, "charge", "{\"n\":1}", &o, &first, &status));
  CHECK_INT(status, ==, PAWL_ENQ_NEW);
  CHECK_OK(pawl_enqueue(p, "charge", "{\"n\":2}", &o, &again, &status));
  CHECK_INT(status, ==, PAWL_ENQ_DUPLICATE);
  CHECK(same_id(&first, &again));
  CHECK_INT(count_jobs(p), ==, 1);
  pawl_job_t *j = claim_one(p);
  finish(p, j, PAWL_OUT_SUCCEEDED, NULL, 0);
  pawl_job_free(j);
  /* Still unique once the job is finished. */
  CHECK_OK(pawl_enqueue(p, "charge", "{}", &o, &again, &status));
  CHECK_INT(status, ==, PAWL_ENQ_DUPLICATE);
  CHECK(same_id(&first, &again));
  CHECK_INT(count_jobs(p), ==, 1);
  pawl_id_t found;
  CHECK_OK(p->store->ops->keys.find_idempotent(p->store, "charge-1", &found));
  CHECK(same_id(&first, &found));
  pawl_close(p);
}

void contract_business_key(const char *url) {
  pawl_t *p = contract_open(url);
  pawl_enqueue_opts_t o;
  pawl_enqueue_opts_init(&o);
  o.business_key = "user-7-sync";
  pawl_id_t holder = enq(p, "sync", &o), other;
  int status;
  CHECK_INT(pawl_enqueue(p, "sync", "{}", &o, &other, NULL), ==, PAWL_EKEY);
  CHECK(strstr(pawl_errmsg(p), "user-7-sync") != NULL);
  char text[PAWL_ID_STRLEN];
  pawl_id_format(&holder, text);
  CHECK(strstr(pawl_errmsg(p), text) != NULL);
  o.return_existing = 1;
  CHECK_OK(pawl_enqueue(p, "sync", "{}", &o, &other, &status));
  CHECK_INT(status, ==, PAWL_ENQ_EXISTING);
  CHECK(same_id(&holder, &other));
  CHECK_INT(count_jobs(p), ==, 1);
  /* Running and paused holders are live too. */
  pawl_job_t *j = claim_one(p);
  o.return_existing = 0;
  CHECK_INT(pawl_enqueue(p, "sync", "{}", &o, NULL, NULL), ==, PAWL_EKEY);
  /* Once the holder is terminal, the key is free. */
  CHECK_INT(finish(p, j, PAWL_OUT_FAILED, "x", 0), ==, 0);
  pawl_job_free(j);
  pawl_id_t next;
  CHECK_OK(pawl_enqueue(p, "sync", "{}", &o, &next, &status));
  CHECK_INT(status, ==, PAWL_ENQ_NEW);
  CHECK_OK(pawl_pause(p, &next, NULL, NULL));
  CHECK_INT(pawl_enqueue(p, "sync", "{}", &o, NULL, NULL), ==, PAWL_EKEY);
  /* Retrying the failed first holder would make two live holders. */
  CHECK_INT(pawl_retry(p, &holder, NULL, NULL), ==, PAWL_EKEY);
  CHECK_INT(state_of(p, &holder), ==, PAWL_FAILED);
  pawl_id_t found;
  CHECK_OK(p->store->ops->keys.find_business(p->store, "user-7-sync", &found));
  CHECK(same_id(&found, &next));
  CHECK_INT(p->store->ops->keys.find_business(p->store, "nope", &found), ==,
            PAWL_ENOTFOUND);
  pawl_close(p);
}

/* An idempotency key together with a live business key and
 * return_existing: the holder is returned and the key is NOT recorded (no
 * job was made under it), so a later enqueue with that key is not a
 * "duplicate" of a job that does not exist. */
void contract_idempotency_business_existing(const char *url) {
  pawl_t *p = contract_open(url);
  pawl_enqueue_opts_t o;
  pawl_enqueue_opts_init(&o);
  o.business_key = "order-9";
  pawl_id_t holder = enq(p, "ship", &o), got, found;
  int status;
  o.idempotency_key = "ship-order-9-a";
  o.return_existing = 1;
  CHECK_OK(pawl_enqueue(p, "ship", "{}", &o, &got, &status));
  CHECK_INT(status, ==, PAWL_ENQ_EXISTING);
  CHECK(same_id(&holder, &got));
  CHECK_INT(p->store->ops->keys.find_idempotent(p->store, "ship-order-9-a",
                                                &found),
            ==, PAWL_ENOTFOUND);
  /* Asked again: still the holder, never a duplicate of a phantom. */
  CHECK_OK(pawl_enqueue(p, "ship", "{}", &o, &got, &status));
  CHECK_INT(status, ==, PAWL_ENQ_EXISTING);
  CHECK(same_id(&holder, &got));
  /* In a batch too. */
  pawl_enqueue_item_t items[2] = {{"ship", "{}", &o}, {"other", "{}", NULL}};
  pawl_id_t ids[2];
  int sts[2];
  CHECK_OK(pawl_enqueue_many(p, items, 2, ids, sts));
  CHECK_INT(sts[0], ==, PAWL_ENQ_EXISTING);
  CHECK(same_id(&holder, &ids[0]));
  CHECK_INT(p->store->ops->keys.find_idempotent(p->store, "ship-order-9-a",
                                                &found),
            ==, PAWL_ENOTFOUND);
  /* Refused (no return_existing): nothing recorded either. */
  o.return_existing = 0;
  o.idempotency_key = "ship-order-9-b";
  CHECK_INT(pawl_enqueue(p, "ship", "{}", &o, &got, &status), ==, PAWL_EKEY);
  CHECK_INT(p->store->ops->keys.find_idempotent(p->store, "ship-order-9-b",
                                                &found),
            ==, PAWL_ENOTFOUND);
  /* Once the holder is done, the key makes a job and is recorded for it. */
  pawl_job_t *j = claim_one(p);
  CHECK(same_id(&j->id, &holder));
  CHECK_INT(finish(p, j, PAWL_OUT_SUCCEEDED, NULL, 0), ==, 0);
  pawl_job_free(j);
  o.idempotency_key = "ship-order-9-a";
  o.return_existing = 1;
  pawl_id_t fresh;
  CHECK_OK(pawl_enqueue(p, "ship", "{}", &o, &fresh, &status));
  CHECK_INT(status, ==, PAWL_ENQ_NEW);
  CHECK(!same_id(&fresh, &holder));
  CHECK_OK(pawl_enqueue(p, "ship", "{}", &o, &got, &status));
  CHECK_INT(status, ==, PAWL_ENQ_DUPLICATE);
  CHECK(same_id(&fresh, &got));
  pawl_job_t *again = get(p, &got);
  pawl_job_free(again);
  pawl_close(p);
}

/* ---- leases ------------------------------------------------------------- */

void contract_heartbeat_extends(const char *url) {
  pawl_t *p = contract_open(url);
  pawl_t *q = contract_open_with(url, "node-b", -1);
  enq(p, "a", NULL);
  enq(p, "b", NULL);
  pawl_job_t *ja = claim_one(p), *jb = claim_one(q);
  contract_advance(8000);
  size_t n = 0;
  CHECK_OK(pawl_heartbeat(p, &n));
  CHECK_INT(n, ==, 1); /* only our own job */
  pawl_job_t *cur = get(p, &ja->id);
  CHECK_INT(cur->lease_expires, ==, T0 + 8000 + 10000);
  CHECK_INT(cur->version, ==, ja->version); /* not a transition */
  pawl_job_free(cur);
  contract_advance(4000); /* past b's lease, within a's extended one */
  CHECK_OK(pawl_recover(p, &n));
  CHECK_INT(n, ==, 1);
  CHECK_INT(state_of(p, &ja->id), ==, PAWL_RUNNING);
  CHECK_INT(state_of(p, &jb->id), ==, PAWL_PENDING);
  pawl_job_free(ja);
  pawl_job_free(jb);
  pawl_close(q);
  pawl_close(p);
}

/* A lease that ran out is recovery's, not the heartbeat's. */
void contract_heartbeat_expired(const char *url) {
  pawl_t *p = contract_open(url);
  enq(p, "a", NULL);
  pawl_job_t *ja = claim_one(p);
  contract_advance(10001); /* the lease is 10 s */
  size_t n = 9;
  CHECK_OK(pawl_heartbeat(p, &n));
  CHECK_INT(n, ==, 0);
  CHECK_OK(pawl_recover(p, &n));
  CHECK_INT(n, ==, 1);
  CHECK_INT(state_of(p, &ja->id), ==, PAWL_PENDING);
  pawl_job_free(ja);
  pawl_close(p);
}

void contract_recover_expired(const char *url) {
  pawl_t *p = contract_open(url);
  pawl_enqueue_opts_t o;
  pawl_enqueue_opts_init(&o);
  o.max_attempts = 2;
  pawl_id_t id = enq(p, "job", &o);
  pawl_job_t *j = claim_one(p);
  contract_advance(10000);
  size_t n = 9;
  CHECK_OK(pawl_recover(p, &n));
  CHECK_INT(n, ==, 0); /* expires at exactly T0 + 10000: not yet past */
  contract_advance(1);
  CHECK_OK(pawl_recover(p, &n));
  CHECK_INT(n, ==, 1);
  pawl_job_t *cur = get(p, &id);
  CHECK_INT(cur->state, ==, PAWL_PENDING);
  CHECK_INT(cur->attempt, ==, 1); /* the lost attempt counts */
  CHECK_INT(cur->recoveries, ==, 1);
  CHECK(strstr(cur->last_error, "node-a") != NULL);
  pawl_job_free(cur);
  /* The late outcome of the lost attempt is refused. */
  CHECK_INT(finish(p, j, PAWL_OUT_SUCCEEDED, NULL, 0), ==, PAWL_ELEASE);
  pawl_job_free(j);
  pawl_history_t *h;
  CHECK_OK(pawl_history(p, &id, &h));
  CHECK_INT(h->nattempts, ==, 1);
  CHECK_STR(h->attempts[0].outcome, "lost");
  int found = 0;
  for (size_t i = 0; i < h->nevents; i++)
    if (h->events[i].from_state == PAWL_RUNNING &&
        h->events[i].to_state == PAWL_PENDING &&
        strstr(h->events[i].reason, "node-a"))
      found = 1;
  CHECK(found);
  pawl_history_free(h);
  /* Losing the last attempt ends in the dead-letter set. */
  j = claim_one(p);
  CHECK_INT(j->attempt, ==, 2);
  pawl_job_free(j);
  contract_advance(10001);
  CHECK_OK(pawl_recover(p, &n));
  CHECK_INT(state_of(p, &id), ==, PAWL_FAILED);
  pawl_close(p);
}

void contract_recover_poison(const char *url) {
  pawl_t *p = contract_open(url);
  pawl_id_t id = enq(p, "crasher", NULL);
  /* Lost five times: the first loss is not known to have run (no start is
   * recorded for a first run), the next four were (the claims recorded
   * their starts); the fourth of those is one more than the limit of 3. */
  for (int i = 0; i < 4; i++) {
    pawl_job_free(claim_one(p));
    contract_advance(10001);
    CHECK_OK(pawl_recover(p, NULL));
    CHECK_INT(state_of(p, &id), ==, PAWL_PENDING);
  }
  pawl_job_free(claim_one(p));
  contract_advance(10001);
  CHECK_OK(pawl_recover(p, NULL));
  pawl_job_t *j = get(p, &id);
  CHECK_INT(j->state, ==, PAWL_FAILED);
  CHECK(strstr(j->last_error, "lost while running 4 times: poison job") != NULL);
  CHECK_INT(j->attempt, ==, 5);
  pawl_job_free(j);
  pawl_close(p);
}

/* ---- history and listing ------------------------------------------------ */

void contract_history_operator(const char *url) {
  pawl_t *p = contract_open(url);
  pawl_id_t id = enq(p, "job", NULL);
  contract_advance(10);
  CHECK_OK(pawl_pause(p, &id, "maintenance", NULL));
  contract_advance(10);
  CHECK_OK(pawl_resume(p, &id, "done", NULL));
  pawl_job_t *j = claim_one(p);
  contract_advance(10);
  CHECK_OK(pawl_cancel(p, &id, "customer left", NULL));
  pawl_job_free(j);
  pawl_history_t *h;
  CHECK_OK(pawl_history(p, &id, &h));
  /* enqueued, paused, resumed, claimed, canceled */
  CHECK_INT(h->nevents, ==, 5);
  CHECK_INT(h->events[1].to_state, ==, PAWL_PAUSED);
  CHECK_STR(h->events[1].actor, "tester");
  CHECK_STR(h->events[1].reason, "maintenance");
  CHECK_INT(h->events[1].at, ==, T0 + 10);
  CHECK_INT(h->events[2].from_state, ==, PAWL_PAUSED);
  CHECK_INT(h->events[2].to_state, ==, PAWL_PENDING);
  CHECK_INT(h->events[3].to_state, ==, PAWL_RUNNING);
  CHECK_INT(h->events[4].from_state, ==, PAWL_RUNNING);
  CHECK_INT(h->events[4].to_state, ==, PAWL_CANCELED);
  CHECK_STR(h->events[4].reason, "customer left");
  CHECK_INT(h->nattempts, ==, 1);
  CHECK_STR(h->attempts[0].outcome, "canceled");
  CHECK_INT(h->attempts[0].ended_at, ==, T0 + 30);
  pawl_history_free(h);
  pawl_close(p);
}

struct collect {
  int n;
  char types[16][16];
};

static int collect_cb(const pawl_job_t *j, void *data) {
  struct collect *c = data;
  if (c->n < 16) snprintf(c->types[c->n], 16, "%s", j->type);
  c->n++;
  return 0;
}

void contract_list_filters(const char *url) {
  pawl_t *p = contract_open(url);
  pawl_enqueue_opts_t o;
  pawl_enqueue_opts_init(&o);
  o.queue = "q1";
  enq(p, "t1", &o);
  enq(p, "t2", &o);
  o.queue = "q2";
  enq(p, "t1", &o);
  pawl_id_t last = enq(p, "t3", &o);
  CHECK_OK(pawl_cancel(p, &last, NULL, NULL));
  pawl_filter_t f;
  pawl_filter_init(&f);
  struct collect c = {0};
  CHECK_OK(pawl_list(p, &f, collect_cb, &c));
  CHECK_INT(c.n, ==, 4);
  CHECK_STR(c.types[0], "t3"); /* newest first */
  memset(&c, 0, sizeof c);
  f.queue = "q1";
  CHECK_OK(pawl_list(p, &f, collect_cb, &c));
  CHECK_INT(c.n, ==, 2);
  memset(&c, 0, sizeof c);
  f.queue = NULL;
  f.type = "t1";
  CHECK_OK(pawl_list(p, &f, collect_cb, &c));
  CHECK_INT(c.n, ==, 2);
  memset(&c, 0, sizeof c);
  f.type = NULL;
  f.state = PAWL_CANCELED;
  CHECK_OK(pawl_list(p, &f, collect_cb, &c));
  CHECK_INT(c.n, ==, 1);
  CHECK_STR(c.types[0], "t3");
  memset(&c, 0, sizeof c);
  f.state = -1;
  f.limit = 3;
  CHECK_OK(pawl_list(p, &f, collect_cb, &c));
  CHECK_INT(c.n, ==, 3);
  f.state = 42;
  CHECK_INT(pawl_list(p, &f, collect_cb, &c), ==, PAWL_EINVAL);
  pawl_close(p);
}

/* ---- locks and nodes ---------------------------------------------------- */

/* What a pawl_list callback may do (include/pawl.h): call anything on the
 * handle, pawl_list included, and change the jobs it is shown. The walk is
 * the rows that matched when it started, each once, in order. */
struct relist {
  pawl_t *p;
  int outer, inner_total;
  pawl_id_t seen[8];
};

static int relist_inner_cb(const pawl_job_t *j, void *data) {
  (void)j;
  ((struct relist *)data)->inner_total++;
  return 0;
}

static int relist_cb(const pawl_job_t *j, void *data) {
  struct relist *r = data;
  if (r->outer >= 8) return 1; /* a walk that restarts: stop, and fail */
  r->seen[r->outer++] = j->id;
  pawl_filter_t f;
  pawl_filter_init(&f);
  f.state = PAWL_PENDING;
  CHECK_OK(pawl_list(r->p, &f, relist_inner_cb, r));
  CHECK_OK(pawl_cancel(r->p, &j->id, "relist", NULL));
  CHECK_OK(pawl_enqueue(r->p, "spawned", "{}", NULL, NULL, NULL));
  pawl_job_t *again = NULL;
  CHECK_OK(pawl_get(r->p, &j->id, &again));
  CHECK_INT(again->state, ==, PAWL_CANCELED);
  pawl_job_free(again);
  return 0;
}

void contract_list_reentrant(const char *url) {
  pawl_t *p = contract_open(url);
  pawl_id_t ids[4];
  for (int i = 0; i < 4; i++) ids[i] = enq(p, "walked", NULL);
  struct relist r = {.p = p};
  pawl_filter_t f;
  pawl_filter_init(&f);
  f.state = PAWL_PENDING;
  f.type = "walked";
  CHECK_OK(pawl_list(p, &f, relist_cb, &r));
  CHECK_INT(r.outer, ==, 4);
  for (int i = 0; i < 4; i++) CHECK(same_id(&r.seen[i], &ids[3 - i]));
  /* Each inner walk saw 4 pending jobs: one original fewer (canceled)
   * and one spawned job more than the walk before. */
  CHECK_INT(r.inner_total, ==, 4 + 4 + 4 + 4);
  CHECK_INT(count_jobs(p), ==, 8);
  pawl_close(p);
}

static int same_opt_str(const char *a, const char *b) {
  return a == b || (a && b && strcmp(a, b) == 0);
}

/* Reading a history when memory runs out at each allocation in turn:
 * PAWL_ENOMEM (or, past the last allocation, the whole history), never a
 * crash, a half-made history or a leak (the sanitizer build checks). */
void contract_history_out_of_memory(const char *url) {
  pawl_t *p = contract_open(url);
  pawl_id_t id = enq(p, "h", NULL);
  pawl_job_t *j = claim_one(p);
  CHECK_INT(finish(p, j, PAWL_OUT_RETRY, "boom", T0), ==, 0);
  pawl_job_free(j);
  CHECK_OK(pawl_pause(p, &id, "look", NULL));
  CHECK_OK(pawl_resume(p, &id, NULL, NULL));
  j = claim_one(p);
  CHECK_INT(finish(p, j, PAWL_OUT_SUCCEEDED, NULL, 0), ==, 0);
  pawl_job_free(j);
  pawl_history_t *whole = NULL;
  CHECK_OK(pawl_history(p, &id, &whole));
  int failed = 0;
  for (int n = 1;; n++) {
    CHECK(n < 1000);
    pawl_history_t *h = NULL;
    pawl__store_fail_alloc_at(n);
    int rc = pawl_history(p, &id, &h);
    pawl__store_fail_alloc_at(0);
    if (rc == 0) {
      CHECK_INT(h->nattempts, ==, whole->nattempts);
      CHECK_INT(h->nevents, ==, whole->nevents);
      for (size_t i = 0; i < h->nevents; i++) {
        CHECK(same_opt_str(h->events[i].reason, whole->events[i].reason));
        CHECK(same_opt_str(h->events[i].actor, whole->events[i].actor));
      }
      for (size_t i = 0; i < h->nattempts; i++) {
        CHECK(same_opt_str(h->attempts[i].outcome, whole->attempts[i].outcome));
        CHECK(same_opt_str(h->attempts[i].node, whole->attempts[i].node));
        CHECK(same_opt_str(h->attempts[i].error, whole->attempts[i].error));
      }
      pawl_history_free(h);
      break;
    }
    CHECK_INT(rc, ==, PAWL_ENOMEM);
    CHECK(h == NULL);
    failed++;
  }
  /* Every string of the history is an allocation that was tried. */
  CHECK_INT(failed, >=, (int)(whole->nevents * 2 + whole->nattempts * 2));
  pawl_history_free(whole);
  pawl_close(p);
}

void contract_locks(const char *url) {
  pawl_t *p = contract_open(url);
  store_t *st = p->store;
  int got = -1, ok = -1;
  CHECK_OK(st->ops->locks.acquire(st, "sweep", "a", 1000, &got));
  CHECK_INT(got, ==, 1);
  CHECK_OK(st->ops->locks.acquire(st, "sweep", "b", 1000, &got));
  CHECK_INT(got, ==, 0);
  CHECK_OK(st->ops->locks.acquire(st, "sweep", "a", 1000, &got));
  CHECK_INT(got, ==, 1); /* already ours */
  CHECK_OK(st->ops->locks.extend(st, "sweep", "b", 1000, &ok));
  CHECK_INT(ok, ==, 0); /* only the owner extends */
  contract_advance(900);
  CHECK_OK(st->ops->locks.extend(st, "sweep", "a", 1000, &ok));
  CHECK_INT(ok, ==, 1);
  contract_advance(900); /* the extension holds */
  CHECK_OK(st->ops->locks.acquire(st, "sweep", "b", 1000, &got));
  CHECK_INT(got, ==, 0);
  CHECK_OK(st->ops->locks.release(st, "sweep", "b")); /* not the owner */
  CHECK_OK(st->ops->locks.acquire(st, "sweep", "b", 1000, &got));
  CHECK_INT(got, ==, 0);
  contract_advance(101); /* expired: a dead owner never blocks forever */
  CHECK_OK(st->ops->locks.extend(st, "sweep", "a", 1000, &ok));
  CHECK_INT(ok, ==, 0);
  CHECK_OK(st->ops->locks.acquire(st, "sweep", "b", 1000, &got));
  CHECK_INT(got, ==, 1);
  CHECK_OK(st->ops->locks.release(st, "sweep", "b"));
  CHECK_OK(st->ops->locks.acquire(st, "sweep", "a", 1000, &got));
  CHECK_INT(got, ==, 1);
  pawl_close(p);
}

struct node_seen {
  int n;
  char ids[4][32];
  int64_t beats[4];
};

static int node_cb(const store_node_t *nd, void *data) {
  struct node_seen *s = data;
  if (s->n < 4) {
    snprintf(s->ids[s->n], 32, "%s", nd->id);
    s->beats[s->n] = nd->last_beat;
  }
  s->n++;
  return 0;
}

void contract_nodes(const char *url) {
  pawl_t *p = contract_open(url);
  store_t *st = p->store;
  pawl_id_t inc;
  pawl_id_new(&inc);
  store_node_t a = {.id = "a", .incarnation = &inc, .queues = "",
                    .started_at = T0};
  store_node_t b = {.id = "b", .incarnation = &inc, .queues = "mail",
                    .started_at = T0};
  CHECK_OK(st->ops->nodes.beat(st, &a));
  CHECK_OK(st->ops->nodes.beat(st, &b));
  contract_advance(5000);
  CHECK_OK(st->ops->nodes.beat(st, &a));
  struct node_seen seen = {0};
  CHECK_OK(st->ops->nodes.list(st, node_cb, &seen));
  CHECK_INT(seen.n, ==, 2);
  CHECK_STR(seen.ids[0], "a");
  CHECK_INT(seen.beats[0], ==, T0 + 5000);
  CHECK_INT(seen.beats[1], ==, T0);
  size_t n = 0;
  CHECK_OK(st->ops->nodes.reap(st, 3000, &n));
  CHECK_INT(n, ==, 1);
  memset(&seen, 0, sizeof seen);
  CHECK_OK(st->ops->nodes.list(st, node_cb, &seen));
  CHECK_INT(seen.n, ==, 1);
  CHECK_STR(seen.ids[0], "a");
  pawl_close(p);
}

/* ---- progress, single leases, next due ---------------------------------- */

void contract_progress(const char *url) {
  pawl_t *p = contract_open(url);
  pawl_t *q = contract_open_with(url, "node-b", -1);
  pawl_id_t id = enq(p, "long", NULL);
  /* Pending: nobody holds it. */
  CHECK_INT(pawl_progress(p, &id, 0, 1, 2), ==, PAWL_ELEASE);
  pawl_job_t *j = claim_one(p);
  CHECK(j->progress_done == 0 && j->progress_total == 0);
  CHECK_OK(pawl_progress(p, &id, 1, 3, 10));
  pawl_job_t *cur = get(p, &id);
  CHECK(cur->progress_done == 3 && cur->progress_total == 10);
  CHECK_INT(cur->version, ==, j->version); /* not a transition */
  CHECK_INT(cur->updated_at, ==, j->updated_at);
  pawl_job_free(cur);
  CHECK_OK(pawl_progress(p, &id, 1, 4.5, 0)); /* total unknown */
  cur = get(p, &id);
  CHECK(cur->progress_done == 4.5 && cur->progress_total == 0);
  pawl_job_free(cur);
  /* Another node, another attempt: refused, nothing changes. */
  CHECK_INT(pawl_progress(q, &id, 1, 9, 10), ==, PAWL_ELEASE);
  CHECK(strstr(pawl_errmsg(q), "attempt 1") != NULL);
  CHECK_INT(pawl_progress(p, &id, 2, 9, 10), ==, PAWL_ELEASE);
  cur = get(p, &id);
  CHECK(cur->progress_done == 4.5);
  pawl_job_free(cur);
  /* Bad numbers are refused before the store. */
  CHECK_INT(pawl_progress(p, &id, 1, -1, 10), ==, PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "progress") != NULL);
  CHECK_INT(pawl_progress(p, &id, 1, 1, -0.5), ==, PAWL_EINVAL);
  CHECK_INT(pawl_progress(p, &id, 1, NAN, 10), ==, PAWL_EINVAL);
  CHECK_INT(pawl_progress(p, &id, 1, 1, INFINITY), ==, PAWL_EINVAL);
  /* The last report stays with the attempt that made it... */
  contract_advance(10);
  CHECK_INT(finish(p, j, PAWL_OUT_RETRY, "again", T0 + 10), ==, 0);
  CHECK_INT(pawl_progress(p, &id, 1, 5, 10), ==, PAWL_ELEASE);
  cur = get(p, &id);
  CHECK(cur->progress_done == 4.5);
  pawl_job_free(cur);
  pawl_job_free(j);
  /* ...and the next attempt starts without any. */
  j = claim_one(p);
  CHECK_INT(j->attempt, ==, 2);
  CHECK(j->progress_done == 0 && j->progress_total == 0);
  CHECK_OK(pawl_progress(p, &id, 2, 10, 10));
  CHECK_INT(finish(p, j, PAWL_OUT_SUCCEEDED, NULL, 0), ==, 0);
  cur = get(p, &id);
  CHECK(cur->progress_done == 10 && cur->progress_total == 10);
  pawl_job_free(cur);
  pawl_job_free(j);
  /* Unknown job: nobody holds it either. */
  pawl_id_t missing;
  pawl_id_new(&missing);
  CHECK_INT(pawl_progress(p, &missing, 1, 1, 1), ==, PAWL_ELEASE);
  pawl_close(q);
  pawl_close(p);
}

void contract_extend_one(const char *url) {
  pawl_t *p = contract_open(url);
  pawl_t *q = contract_open_with(url, "node-b", -1);
  enq(p, "a", NULL);
  enq(p, "b", NULL);
  enq(p, "c", NULL);
  pawl_job_t *a = claim_one(p), *b = claim_one(p), *c = claim_one(q);
  contract_advance(8000);
  int held = -1;
  CHECK_OK(pawl_extend(p, &a->id, 1, &held));
  CHECK_INT(held, ==, 1);
  pawl_job_t *cur = get(p, &a->id);
  CHECK_INT(cur->lease_expires, ==, T0 + 8000 + 10000);
  CHECK_INT(cur->version, ==, a->version); /* not a transition */
  pawl_job_free(cur);
  /* Only that job. */
  cur = get(p, &b->id);
  CHECK_INT(cur->lease_expires, ==, T0 + 10000);
  pawl_job_free(cur);
  /* Not ours: another node's job, another attempt, an unknown job. */
  held = -1;
  CHECK_OK(pawl_extend(p, &c->id, 1, &held));
  CHECK_INT(held, ==, 0);
  cur = get(p, &c->id);
  CHECK_INT(cur->lease_expires, ==, T0 + 10000);
  pawl_job_free(cur);
  held = -1;
  CHECK_OK(pawl_extend(p, &b->id, 2, &held));
  CHECK_INT(held, ==, 0);
  pawl_id_t missing;
  pawl_id_new(&missing);
  held = -1;
  CHECK_OK(pawl_extend(p, &missing, 1, &held));
  CHECK_INT(held, ==, 0);
  CHECK_OK(pawl_extend(p, &b->id, 1, NULL));
  /* Past b's first lease, within the extensions: only c is recovered. */
  contract_advance(4000);
  size_t n = 0;
  CHECK_OK(pawl_recover(p, &n));
  CHECK_INT(n, ==, 1);
  CHECK_INT(state_of(p, &a->id), ==, PAWL_RUNNING);
  CHECK_INT(state_of(p, &b->id), ==, PAWL_RUNNING);
  CHECK_INT(state_of(p, &c->id), ==, PAWL_PENDING);
  /* A finished attempt is not held any more. */
  CHECK_INT(finish(p, a, PAWL_OUT_SUCCEEDED, NULL, 0), ==, 0);
  held = -1;
  CHECK_OK(pawl_extend(p, &a->id, 1, &held));
  CHECK_INT(held, ==, 0);
  pawl_job_free(a);
  pawl_job_free(b);
  pawl_job_free(c);
  pawl_close(q);
  pawl_close(p);
}

static int64_t next_due(pawl_t *p, const char *const *queues, size_t n) {
  pawl_claim_opts_t co = {.queues = queues, .nqueues = n};
  int64_t at = -1;
  int rc = pawl_next_due(p, n ? &co : NULL, &at);
  if (rc) unit_fail(__FILE__, __LINE__, "next_due: %s", pawl_errmsg(p));
  return at;
}

void contract_next_due(const char *url) {
  pawl_t *p = contract_open(url);
  CHECK_INT(next_due(p, NULL, 0), ==, 0);
  pawl_enqueue_opts_t o;
  /* Running, terminal, blocked and paused jobs are not waiting to run. */
  pawl_enqueue_opts_init(&o);
  o.queue = "push";
  o.run_at = T0 - 500;
  enq(p, "running", &o);
  pawl_job_free(claim_one(p));
  pawl_enqueue_opts_init(&o);
  o.queue = "sms";
  o.run_at = T0 - 400;
  pawl_id_t done = enq(p, "done", &o);
  pawl_job_t *j = claim_one(p);
  CHECK(same_id(&j->id, &done));
  finish(p, j, PAWL_OUT_SUCCEEDED, NULL, 0);
  pawl_job_free(j);
  o.run_at = T0 + 100;
  pawl_id_t canceled = enq(p, "canceled", &o);
  CHECK_OK(pawl_cancel(p, &canceled, NULL, NULL));
  o.blocked = 1;
  o.run_at = T0 + 200;
  enq(p, "blocked", &o);
  o.blocked = 0;
  o.run_at = T0 + 300;
  pawl_id_t paused = enq(p, "paused", &o);
  CHECK_OK(pawl_pause(p, &paused, NULL, NULL));
  CHECK_INT(next_due(p, NULL, 0), ==, 0);
  /* Pending: the earliest, whether due already or not. */
  o.run_at = T0 + 2000;
  enq(p, "b", &o);
  pawl_enqueue_opts_init(&o);
  o.queue = "mail";
  o.run_at = T0 + 5000;
  enq(p, "a", &o);
  o.run_at = T0 + 7000;
  enq(p, "a2", &o);
  CHECK_INT(next_due(p, NULL, 0), ==, T0 + 2000);
  const char *mail[] = {"mail"}, *push[] = {"push"}, *none[] = {"none"};
  const char *mail_push[] = {"mail", "push"}, *sms_mail[] = {"sms", "mail"};
  CHECK_INT(next_due(p, mail, 1), ==, T0 + 5000);
  CHECK_INT(next_due(p, push, 1), ==, 0);
  CHECK_INT(next_due(p, none, 1), ==, 0);
  CHECK_INT(next_due(p, mail_push, 2), ==, T0 + 5000);
  CHECK_INT(next_due(p, sms_mail, 2), ==, T0 + 2000);
  /* A job already due counts too (a poller then claims at once). */
  pawl_enqueue_opts_init(&o);
  o.queue = "mail";
  o.run_at = T0 - 1000;
  pawl_id_t late = enq(p, "late", &o);
  CHECK_INT(next_due(p, NULL, 0), ==, T0 - 1000);
  CHECK_INT(next_due(p, mail, 1), ==, T0 - 1000);
  CHECK_INT(next_due(p, sms_mail + 0, 1), ==, T0 + 2000);
  /* Claimed, it no longer counts; back to pending (a retry), it does. */
  j = claim_one(p);
  CHECK(same_id(&j->id, &late));
  CHECK_INT(next_due(p, mail, 1), ==, T0 + 5000);
  CHECK_INT(finish(p, j, PAWL_OUT_RETRY, "e", T0 + 4000), ==, 0);
  pawl_job_free(j);
  CHECK_INT(next_due(p, mail, 1), ==, T0 + 4000);
  /* Bad queue names are refused like in a claim. */
  const char *bad[] = {""};
  pawl_claim_opts_t co = {.queues = bad, .nqueues = 1};
  int64_t at = 42;
  CHECK_INT(pawl_next_due(p, &co, &at), ==, PAWL_EINVAL);
  CHECK_INT(at, ==, 42);
  /* opts without queues means every queue. */
  pawl_claim_opts_t all = {0};
  CHECK_OK(pawl_next_due(p, &all, &at));
  CHECK_INT(at, ==, T0 + 2000);
  pawl_close(p);
}

/* ---- logs --------------------------------------------------------------- */

/* An outcome of `j` carrying `n` log lines. */
static pawl_outcome_t outcome(const pawl_job_t *j, pawl_outcome_kind_t kind,
                              const pawl_log_entry_t *logs, size_t n) {
  pawl_outcome_t o = {.id = j->id, .attempt = j->attempt, .kind = kind,
                      .logs = logs, .nlogs = n};
  if (kind == PAWL_OUT_FAILED || kind == PAWL_OUT_RETRY) o.error = "e";
  if (kind == PAWL_OUT_RETRY || kind == PAWL_OUT_SNOOZE) o.run_at = T0;
  return o;
}

static int finish_logged(pawl_t *p, const pawl_job_t *j,
                         pawl_outcome_kind_t kind,
                         const pawl_log_entry_t *logs, size_t n) {
  pawl_outcome_t o = outcome(j, kind, logs, n);
  int rcs[1] = {99};
  int rc = pawl_finish(p, &o, 1, rcs);
  if (rc) unit_fail(__FILE__, __LINE__, "finish: %s", pawl_errmsg(p));
  return rcs[0];
}

static size_t logs_of(pawl_t *p, const pawl_id_t *id, pawl_log_record_t **out) {
  size_t n = 99;
  *out = (pawl_log_record_t *)1;
  int rc = pawl_logs(p, id, out, &n);
  if (rc) unit_fail(__FILE__, __LINE__, "logs: %s", pawl_errmsg(p));
  if (n == 0) CHECK(*out == NULL);
  return n;
}

static void check_log(const pawl_log_record_t *r, int attempt, int64_t at,
                      const char *level, const char *message,
                      const char *fields) {
  CHECK_INT(r->attempt, ==, attempt);
  CHECK_INT(r->at, ==, at);
  CHECK_STR(r->level, level);
  CHECK_STR(r->message, message);
  if (fields)
    CHECK_JSON(r->fields, fields);
  else
    CHECK(r->fields == NULL);
}

void contract_logs(const char *url) {
  pawl_t *p = contract_open(url);
  pawl_t *q = contract_open_with(url, "node-b", -1);
  pawl_log_record_t *recs;
  /* Success, with fields, an explicit time and a default one (0: the
   * finish's time). */
  pawl_id_t a = enq(p, "a", NULL);
  CHECK_INT(logs_of(p, &a, &recs), ==, 0);
  pawl_job_t *j = claim_one(p);
  contract_advance(50);
  pawl_log_entry_t la[3] = {
      {T0 + 10, "info", "starting", "{\"n\":1,\"to\":\"x\"}"},
      {T0 + 20, "debug", "step", NULL},
      {0, "warn", "slow \"quoted\"\nline", "{}"}};
  CHECK_INT(finish_logged(p, j, PAWL_OUT_SUCCEEDED, la, 3), ==, 0);
  pawl_job_free(j);
  CHECK_INT(logs_of(p, &a, &recs), ==, 3);
  check_log(&recs[0], 1, T0 + 10, "info", "starting", "{\"n\":1,\"to\":\"x\"}");
  check_log(&recs[1], 1, T0 + 20, "debug", "step", NULL);
  check_log(&recs[2], 1, T0 + 50, "warn", "slow \"quoted\"\nline", "{}");
  pawl_logs_free(recs, 3);

  /* Every kind of outcome, attempt after attempt, in the order written. */
  pawl_id_t b = enq(p, "b", NULL);
  pawl_log_entry_t one = {T0 + 1, "error", "retry me", NULL};
  j = claim_one(p);
  CHECK_INT(finish_logged(p, j, PAWL_OUT_RETRY, &one, 1), ==, 0);
  pawl_job_free(j);
  j = claim_one(p);
  CHECK_INT(j->attempt, ==, 2);
  one.message = "snoozing";
  CHECK_INT(finish_logged(p, j, PAWL_OUT_SNOOZE, &one, 1), ==, 0);
  pawl_job_free(j);
  j = claim_one(p);
  CHECK_INT(j->attempt, ==, 2); /* a snooze gives the attempt back */
  one.message = "releasing";
  CHECK_INT(finish_logged(p, j, PAWL_OUT_RELEASE, &one, 1), ==, 0);
  pawl_job_free(j);
  j = claim_one(p);
  one.message = "giving up";
  CHECK_INT(finish_logged(p, j, PAWL_OUT_FAILED, &one, 1), ==, 0);
  pawl_job_free(j);
  CHECK_INT(state_of(p, &b), ==, PAWL_FAILED);
  CHECK_INT(logs_of(p, &b, &recs), ==, 4);
  check_log(&recs[0], 1, T0 + 1, "error", "retry me", NULL);
  check_log(&recs[1], 2, T0 + 1, "error", "snoozing", NULL);
  check_log(&recs[2], 2, T0 + 1, "error", "releasing", NULL);
  check_log(&recs[3], 2, T0 + 1, "error", "giving up", NULL);
  pawl_logs_free(recs, 4);
  /* Logs of one job never show up on another. */
  CHECK_INT(logs_of(p, &a, &recs), ==, 3);
  pawl_logs_free(recs, 3);

  /* Stale outcomes: the outcome is refused, its lines are kept. */
  pawl_id_t c = enq(p, "c", NULL);
  j = claim_one(p);
  CHECK_OK(pawl_cancel(p, &c, "operator", NULL));
  pawl_log_entry_t late = {T0 + 5, "info", "finished late", NULL};
  CHECK_INT(finish_logged(p, j, PAWL_OUT_SUCCEEDED, &late, 1), ==,
            PAWL_ELEASE);
  CHECK_INT(state_of(p, &c), ==, PAWL_CANCELED);
  pawl_job_free(j);
  pawl_id_t d = enq(p, "d", NULL);
  j = claim_one(p);
  late.message = "from another node";
  CHECK_INT(finish_logged(q, j, PAWL_OUT_FAILED, &late, 1), ==, PAWL_ELEASE);
  CHECK_INT(state_of(p, &d), ==, PAWL_RUNNING);
  CHECK_INT(logs_of(p, &c, &recs), ==, 1);
  check_log(&recs[0], 1, T0 + 5, "info", "finished late", NULL);
  pawl_logs_free(recs, 1);
  CHECK_INT(logs_of(p, &d, &recs), ==, 1);
  check_log(&recs[0], 1, T0 + 5, "info", "from another node", NULL);
  pawl_logs_free(recs, 1);
  /* In a batch, with an outcome for a job that does not exist: its lines
   * go nowhere, the others are written. */
  pawl_job_t ghost = {.attempt = 1};
  pawl_id_new(&ghost.id);
  pawl_log_entry_t lg = {T0 + 6, "info", "ghost", NULL};
  pawl_log_entry_t ld = {T0 + 7, "info", "done at last", "{\"k\":[1,2]}"};
  pawl_outcome_t outs[2] = {outcome(&ghost, PAWL_OUT_SUCCEEDED, &lg, 1),
                            outcome(j, PAWL_OUT_SUCCEEDED, &ld, 1)};
  int rcs[2];
  CHECK_OK(pawl_finish(p, outs, 2, rcs));
  CHECK_INT(rcs[0], ==, PAWL_ELEASE);
  CHECK_INT(rcs[1], ==, 0);
  pawl_job_free(j);
  CHECK_INT(logs_of(p, &d, &recs), ==, 2);
  check_log(&recs[1], 1, T0 + 7, "info", "done at last", "{\"k\":[1,2]}");
  pawl_logs_free(recs, 2);
  CHECK_INT(pawl_logs(p, &ghost.id, &recs, &(size_t){0}), ==, PAWL_ENOTFOUND);
  CHECK(strstr(pawl_errmsg(p), "no job") != NULL);
  pawl_close(q);
  pawl_close(p);
}

void contract_logs_bad_input(const char *url) {
  pawl_t *p = contract_open(url);
  pawl_id_t ok_id = enq(p, "ok", NULL), bad_id = enq(p, "bad", NULL);
  pawl_job_t *ok = claim_one(p), *bad = claim_one(p);
  pawl_log_entry_t good = {T0, "info", "fine", NULL};
  struct {
    pawl_log_entry_t line;
    const char *msg;
  } cases[] = {
      {{T0, "fatal", "m", NULL}, "level"},
      {{T0, "INFO", "m", NULL}, "level"},
      {{T0, NULL, "m", NULL}, "level"},
      {{T0, "info", NULL, NULL}, "message"},
      {{T0, "info", "m", "[1,2]"}, "object"},
      {{T0, "info", "m", "\"x\""}, "object"},
      {{T0, "info", "m", "{\"a\":"}, "JSON"},
      {{-1, "info", "m", NULL}, "time"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    pawl_log_entry_t lines[2] = {good, cases[i].line};
    pawl_outcome_t outs[2] = {outcome(ok, PAWL_OUT_SUCCEEDED, &good, 1),
                              outcome(bad, PAWL_OUT_SUCCEEDED, lines, 2)};
    int rcs[2] = {99, 99};
    int rc = pawl_finish(p, outs, 2, rcs);
    if (rc != PAWL_EINVAL)
      unit_fail(__FILE__, __LINE__, "case %zu: rc %d, want EINVAL", i, rc);
    if (!strstr(pawl_errmsg(p), cases[i].msg) ||
        !strstr(pawl_errmsg(p), "outcome 2") ||
        !strstr(pawl_errmsg(p), "log line 2"))
      unit_fail(__FILE__, __LINE__, "case %zu: message \"%s\"", i,
                pawl_errmsg(p));
    CHECK_INT(rcs[0], ==, 99);
  }
  /* A count without lines. */
  pawl_outcome_t o = outcome(bad, PAWL_OUT_SUCCEEDED, NULL, 2);
  CHECK_INT(pawl_finish(p, &o, 1, NULL), ==, PAWL_EINVAL);
  /* Nothing was written: both still running, no lines anywhere. */
  pawl_log_record_t *recs;
  CHECK_INT(state_of(p, &ok_id), ==, PAWL_RUNNING);
  CHECK_INT(state_of(p, &bad_id), ==, PAWL_RUNNING);
  CHECK_INT(logs_of(p, &ok_id, &recs), ==, 0);
  CHECK_INT(logs_of(p, &bad_id, &recs), ==, 0);
  /* Every level is accepted. */
  pawl_log_entry_t levels[4] = {{T0, "debug", "", NULL},
                                {T0, "info", "", NULL},
                                {T0, "warn", "", NULL},
                                {T0, "error", "", " { \"a\" : 1 } "}};
  CHECK_INT(finish_logged(p, bad, PAWL_OUT_SUCCEEDED, levels, 4), ==, 0);
  CHECK_INT(logs_of(p, &bad_id, &recs), ==, 4);
  CHECK_JSON(recs[3].fields, " { \"a\" : 1 } "); /* kept as a value */
  pawl_logs_free(recs, 4);
  pawl_logs_free(NULL, 0);
  pawl_job_free(ok);
  pawl_job_free(bad);
  pawl_close(p);
}

/* max_attempts 0 (not set at enqueue) is the script's, which the store
 * cannot know: a lost attempt is counted, but never ends the job as its
 * last one; the worker decides from the script when it runs. */
void contract_recover_unset_max_attempts(const char *url) {
  pawl_t *p = contract_open(url);
  pawl_enqueue_opts_t o;
  pawl_enqueue_opts_init(&o);
  o.max_attempts = 1;
  pawl_id_t one = enq(p, "job", &o);
  pawl_id_t unset = enq(p, "job", NULL);
  pawl_job_t **jobs = NULL;
  size_t n = 0;
  CHECK_OK(pawl_claim(p, NULL, 2, &jobs, &n));
  CHECK_INT(n, ==, 2);
  pawl_jobs_free(jobs, n);
  contract_advance(10001);
  CHECK_OK(pawl_recover(p, &n));
  CHECK_INT(n, ==, 2);
  CHECK_INT(state_of(p, &one), ==, PAWL_FAILED);
  pawl_job_t *j = get(p, &unset);
  CHECK_INT(j->state, ==, PAWL_PENDING);
  CHECK_INT(j->attempt, ==, 1);
  CHECK_INT(j->max_attempts, ==, 0);
  pawl_job_free(j);
  pawl_close(p);
}

/* ---- which lost attempts count (poison jobs) ----------------------------- */

static pawl_job_t *claim_deferred(pawl_t *p) {
  pawl_claim_opts_t co;
  memset(&co, 0, sizeof co);
  co.defer_start = 1;
  pawl_job_t **jobs = NULL;
  size_t n = 0;
  CHECK_OK(pawl_claim(p, &co, 1, &jobs, &n));
  CHECK_INT(n, ==, 1);
  pawl_job_t *j = jobs[0];
  free(jobs);
  return j;
}

/* A job claimed ahead (defer_start) whose node dies before it runs, again
 * and again (it sat behind the job that killed the node): its attempts are
 * used up, but it is never taken for the poison. A loss of an attempt
 * recorded as started (pawl_begin) does count. */
void contract_recover_not_started(const char *url) {
  pawl_t *p = contract_open(url);
  pawl_id_t id = enq(p, "innocent", NULL);
  size_t n = 0;
  for (int i = 0; i < 6; i++) {
    pawl_job_t *c = claim_deferred(p);
    CHECK_INT(c->attempt, ==, i + 1);
    CHECK_INT(c->recoveries, ==, i);
    pawl_job_free(c);
    contract_advance(10001);
    CHECK_OK(pawl_recover(p, &n));
    CHECK_INT(n, ==, 1);
    pawl_job_t *j = get(p, &id);
    CHECK_INT(j->state, ==, PAWL_PENDING);
    CHECK_INT(j->attempt, ==, i + 1);
    CHECK_INT(j->recoveries, ==, i + 1);
    CHECK(strstr(j->last_error, i == 0 ? "not known to have started"
                                       : "before the job started") != NULL);
    CHECK(strstr(j->last_error, "node-a") != NULL);
    pawl_job_free(j);
  }
  /* Begun, then lost, four times: the fourth is over the limit. */
  for (int i = 0; i < 4; i++) {
    pawl_job_t *c = claim_deferred(p);
    CHECK_OK(pawl_begin(p, c));
    pawl_job_free(c);
    contract_advance(10001);
    CHECK_OK(pawl_recover(p, &n));
    CHECK_INT(state_of(p, &id), ==, i < 3 ? PAWL_PENDING : PAWL_FAILED);
  }
  pawl_job_t *j = get(p, &id);
  CHECK(strstr(j->last_error, "lost while running 4 times: poison job") != NULL);
  pawl_job_free(j);
  pawl_history_t *h;
  CHECK_OK(pawl_history(p, &id, &h));
  CHECK_INT(h->nattempts, ==, 10);
  for (size_t i = 0; i < h->nattempts; i++) {
    CHECK_STR(h->attempts[i].outcome, "lost");
    CHECK_INT(h->attempts[i].attempt, ==, (int)i + 1);
  }
  pawl_history_free(h);
  pawl_close(p);
}

/* A poison job under a claimer that prefetches: its first loss is not
 * known to have started (nothing recorded: no write for a first run), each
 * later run is recorded and counted; the fifth loss fails it. A manual
 * retry starts the count again. */
void contract_recover_poison_deferred(const char *url) {
  pawl_t *p = contract_open(url);
  pawl_id_t id = enq(p, "crasher", NULL);
  for (int i = 0; i < 4; i++) {
    pawl_job_t *c = claim_deferred(p);
    CHECK_OK(pawl_begin(p, c)); /* i = 0: nothing to record */
    pawl_job_free(c);
    contract_advance(10001);
    CHECK_OK(pawl_recover(p, NULL));
    CHECK_INT(state_of(p, &id), ==, PAWL_PENDING);
  }
  pawl_job_t *c = claim_deferred(p);
  CHECK_OK(pawl_begin(p, c));
  pawl_job_free(c);
  contract_advance(10001);
  CHECK_OK(pawl_recover(p, NULL));
  pawl_job_t *j = get(p, &id);
  CHECK_INT(j->state, ==, PAWL_FAILED);
  CHECK(strstr(j->last_error, "lost while running 4 times: poison job") != NULL);
  pawl_job_free(j);
  /* A manual retry: a clean slate. Four more losses (by a claimer that
   * runs what it claims: counted from the second on) stay under the
   * limit. */
  CHECK_OK(pawl_retry(p, &id, "fixed", NULL));
  for (int i = 0; i < 4; i++) {
    pawl_job_free(claim_one(p));
    contract_advance(10001);
    CHECK_OK(pawl_recover(p, NULL));
    j = get(p, &id);
    CHECK_INT(j->state, ==, PAWL_PENDING);
    CHECK_INT(j->attempt, ==, i + 1);
    CHECK_INT(j->recoveries, ==, i + 1);
    pawl_job_free(j);
  }
  pawl_close(p);
}

/* pawl_begin writes only for a job recovered before, and only while its
 * attempt is held; a snooze (or any change) makes an old mark stale. */
void contract_begin(const char *url) {
  pawl_t *p = contract_open(url);
  /* Started by its claim and never recovered: nothing to do, not even a
   * lookup. Claimed ahead (no start yet) or recovered before: its start
   * is written, for an attempt held. */
  pawl_job_t fake;
  memset(&fake, 0, sizeof fake);
  pawl_id_new(&fake.id);
  fake.attempt = 1;
  fake.started_at = T0;
  CHECK_OK(pawl_begin(p, &fake));
  fake.started_at = 0;
  CHECK_INT(pawl_begin(p, &fake), ==, PAWL_ELEASE);
  fake.started_at = T0;
  fake.recoveries = 1;
  CHECK_INT(pawl_begin(p, &fake), ==, PAWL_ELEASE);
  CHECK(strstr(pawl_errmsg(p), "not running under attempt 1") != NULL);
  pawl_id_t id = enq(p, "job", NULL);
  pawl_job_free(claim_deferred(p));
  contract_advance(10001);
  CHECK_OK(pawl_recover(p, NULL));
  /* Begun, then snoozed (the attempt given back): the next claim of the
   * same attempt number is not taken for started. */
  pawl_job_t *c = claim_deferred(p);
  CHECK_INT(c->attempt, ==, 2);
  CHECK_OK(pawl_begin(p, c));
  CHECK_INT(finish(p, c, PAWL_OUT_SNOOZE, NULL, T0), ==, 0);
  pawl_job_free(c);
  c = claim_deferred(p);
  CHECK_INT(c->attempt, ==, 2);
  contract_advance(10001);
  CHECK_OK(pawl_recover(p, NULL));
  /* Not begun: not counted as a crash. */
  pawl_job_t *j = get(p, &id);
  CHECK_INT(j->attempt, ==, 2);
  CHECK(strstr(j->last_error, "before the job started") != NULL);
  pawl_job_free(j);
  /* The lost attempt's holder can no longer begin it. */
  CHECK_INT(pawl_begin(p, c), ==, PAWL_ELEASE);
  pawl_job_free(c);
  pawl_close(p);
}
