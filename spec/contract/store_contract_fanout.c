/* store_contract_fanout.c: the store's part of what job code may write
 * (see store_contract_fanout.h), through the public API on a handle whose
 * clock is injected, written as an attacker would try it: a batch asked
 * for twice under one identity is made once (also with another size, which
 * is refused), the depth survives the row and the claim, and every size
 * cap holds one byte past it and takes what is exactly at it. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "pawl.h"
#include "store_contract_fanout.h"
#include "unit.h"
#include "unit_pawl.h"

#define T0 INT64_C(1800000000000)

static _Atomic int64_t f_now = T0;

static pawl_t *open_db(const char *url) {
  atomic_store(&f_now, T0);
  return unit_open_clocked(url, "node-a", &f_now, 10000);
}

static int same(const pawl_id_t *a, const pawl_id_t *b) {
  return memcmp(a->bytes, b->bytes, 16) == 0;
}

static int count_one(const pawl_job_t *job, void *data) {
  (void)job;
  (*(size_t *)data)++;
  return 0;
}

/* How many jobs the database holds. */
static size_t count_jobs(pawl_t *p) {
  size_t n = 0;
  pawl_filter_t f;
  pawl_filter_init(&f);
  f.limit = 100000;
  if (pawl_list(p, &f, count_one, &n))
    unit_fail(__FILE__, __LINE__, "list: %s", pawl_errmsg(p));
  return n;
}

/* A batch of n children "c" under `key`; *status and the ids out. */
static int batch(pawl_t *p, size_t n, const char *key, pawl_id_t *bid,
                 pawl_id_t *ids, int *status) {
  pawl_enqueue_item_t *items = calloc(n, sizeof *items);
  CHECK(items);
  for (size_t i = 0; i < n; i++) items[i] = (pawl_enqueue_item_t){"c", NULL, NULL};
  pawl_enqueue_item_t done = {"done", NULL, NULL};
  pawl_batch_opts_t bo;
  pawl_batch_opts_init(&bo);
  bo.on_complete = &done;
  bo.key = key;
  bo.status = status;
  int rc = pawl_batch_enqueue(p, items, n, &bo, bid, ids);
  free(items);
  return rc;
}

/* A batch asked for again under its identity: the first one's id and
 * children's ids, in order, and nothing written; another size under the
 * same identity refused (naming both); batches without one are each new;
 * a key that is no name refused. */
void contract_fanout_batch_ident(const char *url) {
  pawl_t *p = open_db(url);
  enum { N = 50 };
  pawl_id_t b1, b2, ids1[N], ids2[N];
  int st = -1;
  CHECK_OK(batch(p, N, "job:x/run/1", &b1, ids1, &st));
  CHECK_INT(st, ==, PAWL_ENQ_NEW);
  size_t jobs = count_jobs(p);
  CHECK_INT(jobs, ==, N);
  CHECK_OK(batch(p, N, "job:x/run/1", &b2, ids2, &st));
  CHECK_INT(st, ==, PAWL_ENQ_DUPLICATE);
  CHECK(same(&b1, &b2));
  for (int i = 0; i < N; i++) CHECK(same(&ids1[i], &ids2[i]));
  CHECK_INT(count_jobs(p), ==, jobs);
  pawl_batch_t b;
  CHECK_OK(pawl_batch_get(p, &b1, &b));
  CHECK_INT(b.total, ==, N);
  /* A child that ended since is found the same: the identity is the
   * batch's, whatever its children did. */
  pawl_job_t **claimed = NULL;
  size_t nc = 0;
  pawl_claim_opts_t co = {0};
  CHECK_OK(pawl_claim(p, &co, 1, &claimed, &nc));
  CHECK_INT(nc, ==, 1);
  pawl_outcome_t o = {.id = claimed[0]->id, .attempt = claimed[0]->attempt,
                      .kind = PAWL_OUT_SUCCEEDED,
                      .store_key = claimed[0]->store_key};
  CHECK_OK(pawl_finish(p, &o, 1, NULL));
  pawl_jobs_free(claimed, nc);
  CHECK_OK(batch(p, N, "job:x/run/1", &b2, ids2, &st));
  CHECK_INT(st, ==, PAWL_ENQ_DUPLICATE);
  for (int i = 0; i < N; i++) CHECK(same(&ids1[i], &ids2[i]));

  /* Another size under the same identity: refused, nothing written. */
  CHECK_INT(batch(p, N + 1, "job:x/run/1", &b2, NULL, &st), ==,
            PAWL_ECONFLICT);
  char text[PAWL_ID_STRLEN], want[200];
  pawl_id_format(&b1, text);
  snprintf(want, sizeof want, "batch %s was made under the identity "
           "\"job:x/run/1\" with %d jobs; this call has %d", text, N, N + 1);
  CHECK_STR(pawl_errmsg(p), want);
  CHECK_INT(count_jobs(p), ==, jobs);

  /* Without a key: two batches. Another key: another batch. */
  CHECK_OK(batch(p, 2, NULL, &b1, NULL, &st));
  CHECK_OK(batch(p, 2, NULL, &b2, NULL, &st));
  CHECK(!same(&b1, &b2));
  CHECK_OK(batch(p, 2, "job:x/run/2", &b1, NULL, &st));
  CHECK_INT(st, ==, PAWL_ENQ_NEW);
  CHECK_INT(count_jobs(p), ==, jobs + 6);

  /* Keys that are no names. */
  char long_key[402];
  memset(long_key, 'k', 401);
  long_key[401] = 0;
  const char *bad[] = {"", long_key, "a\nb"};
  for (int i = 0; i < 3; i++) {
    CHECK_INT(batch(p, 1, bad[i], &b1, NULL, &st), ==, PAWL_EINVAL);
    CHECK(strstr(pawl_errmsg(p), "a batch's key must be 1..400 bytes "
                                 "without control characters") != NULL);
  }
  CHECK_INT(count_jobs(p), ==, jobs + 6);
  pawl_close(p);
}

/* The depth an enqueue gives is stored, read back and claimed with the
 * job (job code's enqueues set it; the claim hands it to the worker);
 * 0 when not given; out of range refused. */
void contract_fanout_depth(const char *url) {
  pawl_t *p = open_db(url);
  pawl_enqueue_opts_t o;
  pawl_enqueue_opts_init(&o);
  o.depth = 7;
  pawl_id_t deep, flat;
  CHECK_OK(pawl_enqueue(p, "t", NULL, &o, &deep, NULL));
  CHECK_OK(pawl_enqueue(p, "t", NULL, NULL, &flat, NULL));
  pawl_job_t *j = NULL;
  CHECK_OK(pawl_get(p, &deep, &j));
  CHECK_INT(j->depth, ==, 7);
  pawl_job_free(j);
  CHECK_OK(pawl_get(p, &flat, &j));
  CHECK_INT(j->depth, ==, 0);
  pawl_job_free(j);
  /* Through the batch path (PostgreSQL: COPY) and a chain. */
  o.depth = PAWL_DEPTH_MAX;
  pawl_enqueue_item_t items[2] = {{"t", NULL, &o}, {"t", NULL, &o}};
  pawl_id_t ids[2], bid;
  CHECK_OK(pawl_batch_enqueue(p, items, 2, NULL, &bid, ids));
  CHECK_OK(pawl_get(p, &ids[1], &j));
  CHECK_INT(j->depth, ==, PAWL_DEPTH_MAX);
  pawl_job_free(j);
  o.depth = 3;
  CHECK_OK(pawl_chain(p, items, 2, ids, NULL));
  CHECK_OK(pawl_get(p, &ids[1], &j));
  CHECK_INT(j->depth, ==, 3);
  pawl_job_free(j);
  pawl_job_t **claimed = NULL;
  size_t n = 0;
  pawl_claim_opts_t co = {0};
  CHECK_OK(pawl_claim(p, &co, 10, &claimed, &n));
  int saw = 0;
  for (size_t i = 0; i < n; i++)
    if (same(&claimed[i]->id, &deep)) {
      CHECK_INT(claimed[i]->depth, ==, 7);
      saw = 1;
    }
  CHECK(saw);
  pawl_jobs_free(claimed, n);
  int32_t bad[] = {-1, PAWL_DEPTH_MAX + 1};
  for (int i = 0; i < 2; i++) {
    o.depth = bad[i];
    CHECK_INT(pawl_enqueue(p, "t", NULL, &o, NULL, NULL), ==, PAWL_EINVAL);
    char want[120];
    snprintf(want, sizeof want, "depth must be between 0 and %d (got %d)",
             PAWL_DEPTH_MAX, bad[i]);
    CHECK_STR(pawl_errmsg(p), want);
  }
  pawl_close(p);
}

/* A JSON string of exactly `len` bytes ("xxx...x"), owned. */
static char *json_of(size_t len) {
  char *s = malloc(len + 1);
  CHECK(s && len >= 2);
  memset(s, 'x', len);
  s[0] = s[len - 1] = '"';
  s[len] = 0;
  return s;
}

/* Every cap one byte past it (refused, with the message naming the size
 * and the cap) and exactly at it (taken), for every enqueuer's inputs
 * (payload, params, a replacement's payload, a signal's payload) and
 * every outcome's outputs (result, log message, log fields). */
void contract_fanout_write_caps(const char *url) {
  pawl_t *p = open_db(url);
  char *at = json_of(PAWL_PAYLOAD_MAX), *over = json_of(PAWL_PAYLOAD_MAX + 1);
  char want[200];
  snprintf(want, sizeof want, "payload is %d bytes; at most %d (16 MiB): put "
           "the data elsewhere and a reference to it in the job",
           PAWL_PAYLOAD_MAX + 1, PAWL_PAYLOAD_MAX);
  CHECK_INT(pawl_enqueue(p, "t", over, NULL, NULL, NULL), ==, PAWL_EINVAL);
  CHECK_STR(pawl_errmsg(p), want);
  pawl_enqueue_opts_t o;
  pawl_enqueue_opts_init(&o);
  o.params = over;
  CHECK_INT(pawl_enqueue(p, "t", NULL, &o, NULL, NULL), ==, PAWL_EINVAL);
  CHECK(strncmp(pawl_errmsg(p), "params is ", 10) == 0);
  pawl_enqueue_item_t items[2] = {{"t", NULL, NULL}, {"t", over, NULL}};
  CHECK_INT(pawl_batch_enqueue(p, items, 2, NULL, NULL, NULL), ==,
            PAWL_EINVAL);
  CHECK(strncmp(pawl_errmsg(p), "job 2: payload is ", 18) == 0);
  CHECK_INT(count_jobs(p), ==, 0);
  o.signal = "sig";
  o.params = at;
  pawl_id_t id;
  CHECK_OK(pawl_enqueue(p, "t", at, &o, &id, NULL));
  pawl_id_t sid;
  CHECK_INT(pawl_signal(p, "sig", "approve", over, &sid, NULL), ==,
            PAWL_EINVAL);
  snprintf(want, sizeof want, "signal payload is %d bytes; at most %d",
           PAWL_PAYLOAD_MAX + 1, PAWL_PAYLOAD_MAX);
  CHECK(strncmp(pawl_errmsg(p), want, strlen(want)) == 0);
  CHECK_OK(pawl_signal(p, "sig", "approve", at, &sid, NULL));
  pawl_replace_opts_t ro;
  pawl_replace_opts_init(&ro);
  ro.payload = over;
  pawl_id_t nid;
  CHECK_INT(pawl_replace(p, &id, &ro, &nid), ==, PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "payload is ") != NULL);

  /* An outcome: result, log message and log fields. */
  pawl_job_t **claimed = NULL;
  size_t n = 0;
  pawl_claim_opts_t co = {0};
  CHECK_OK(pawl_claim(p, &co, 1, &claimed, &n));
  CHECK_INT(n, ==, 1);
  char *msg_over = malloc(PAWL_LOG_MESSAGE_MAX + 2);
  CHECK(msg_over);
  memset(msg_over, 'm', PAWL_LOG_MESSAGE_MAX + 1);
  msg_over[PAWL_LOG_MESSAGE_MAX + 1] = 0;
  char *fields_over = malloc(PAWL_LOG_FIELDS_MAX + 2);
  CHECK(fields_over);
  memset(fields_over, 'f', PAWL_LOG_FIELDS_MAX + 1);
  memcpy(fields_over, "{\"a\":\"", 6);
  memcpy(fields_over + PAWL_LOG_FIELDS_MAX - 1, "\"}", 3);
  pawl_log_entry_t log = {.at = T0, .level = "info", .message = msg_over};
  pawl_outcome_t out = {.id = claimed[0]->id, .attempt = claimed[0]->attempt,
                        .kind = PAWL_OUT_SUCCEEDED, .result = over,
                        .store_key = claimed[0]->store_key};
  CHECK_INT(pawl_finish(p, &out, 1, NULL), ==, PAWL_EINVAL);
  CHECK(strncmp(pawl_errmsg(p), "result is ", 10) == 0);
  /* An error text: a log message's cap. */
  char *err_over = malloc(PAWL_LOG_MESSAGE_MAX + 2);
  CHECK(err_over);
  memset(err_over, 'e', PAWL_LOG_MESSAGE_MAX + 1);
  err_over[PAWL_LOG_MESSAGE_MAX + 1] = 0;
  pawl_outcome_t bad = out;
  bad.kind = PAWL_OUT_FAILED;
  bad.result = NULL;
  bad.error = err_over;
  CHECK_INT(pawl_finish(p, &bad, 1, NULL), ==, PAWL_EINVAL);
  snprintf(want, sizeof want, "error is %d bytes; at most %d",
           PAWL_LOG_MESSAGE_MAX + 1, PAWL_LOG_MESSAGE_MAX);
  CHECK_STR(pawl_errmsg(p), want);
  free(err_over);
  out.result = at;
  out.logs = &log;
  out.nlogs = 1;
  CHECK_INT(pawl_finish(p, &out, 1, NULL), ==, PAWL_EINVAL);
  snprintf(want, sizeof want, "log line 1: log message is %d bytes; at most "
           "%d", PAWL_LOG_MESSAGE_MAX + 1, PAWL_LOG_MESSAGE_MAX);
  CHECK_STR(pawl_errmsg(p), want);
  log.message = "ok";
  log.fields = fields_over;
  CHECK_INT(pawl_finish(p, &out, 1, NULL), ==, PAWL_EINVAL);
  snprintf(want, sizeof want, "log line 1: log fields are %d bytes of JSON; "
           "at most %d", PAWL_LOG_FIELDS_MAX + 1, PAWL_LOG_FIELDS_MAX);
  CHECK_STR(pawl_errmsg(p), want);
  /* At the caps: taken. */
  msg_over[PAWL_LOG_MESSAGE_MAX] = 0;
  log.message = msg_over;
  memcpy(fields_over + PAWL_LOG_FIELDS_MAX - 2, "\"}", 3);
  CHECK_OK(pawl_finish(p, &out, 1, NULL));
  pawl_job_t *j = NULL;
  CHECK_OK(pawl_get(p, &claimed[0]->id, &j));
  CHECK_INT(j->state, ==, PAWL_SUCCEEDED);
  CHECK_INT(strlen(j->result), ==, PAWL_PAYLOAD_MAX);
  pawl_job_free(j);
  pawl_jobs_free(claimed, n);
  free(msg_over);
  free(fields_over);
  free(at);
  free(over);
  pawl_close(p);
}
