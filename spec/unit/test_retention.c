/* test_retention.c: retention and archival on both backends,
 * through the public API (pawl_cleanup) and the host's sweep (step mode),
 * on handles whose clock is injected: a live job is never removed (also
 * one an operator retried between the walk's read and the removal), each
 * state keeps its age and the overrides theirs, archive moves the job and
 * its history, idempotency keys outlive their job, a dry run changes
 * nothing, bad input is refused with a message. Each RET_TEST(name) runs
 * as store_sqlite_ret_NAME and store_pg_ret_NAME (test_list_retention.h). */
#include <libpq-fe.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "handle.h"
#include "pawl.h"
#include "pawl_internal.h"
#include "pgtest.h"
#include "unit.h"
#include "unit_pawl.h"

#define T0 INT64_C(1800000000000)
#define MINUTE INT64_C(60000)
#define HOUR (60 * MINUTE)
#define DAY (24 * HOUR)

#define RET_TESTS(X) \
  X(live_kept)       \
  X(retried_between) \
  X(ages)            \
  X(overrides)       \
  X(archive)         \
  X(keys)            \
  X(dry_run)         \
  X(bad_input)       \
  X(batches)         \
  X(deps)            \
  X(sweep_step)

static _Atomic int64_t ret_now = T0;

static void advance(int64_t ms) { atomic_fetch_add(&ret_now, ms); }

static pawl_t *ret_open(const char *url) {
  atomic_store(&ret_now, T0);
  return unit_open_clocked(url, "node-a", &ret_now, 10000);
}

sqlite3 *pawl__store_sqlite_db(store_t *st);
/* Weak: a build without PostgreSQL (cmake -DPAWL_WITH_POSTGRES=OFF) has
 * no such function and runs none of the tests that reach it (they are
 * TEST_ENTRY_PG), so the runner still links there. */
PGconn *pawl__store_postgres_conn(store_t *st) __attribute__((weak));

/* One number from SQL on the handle's own connection. */
static long long sql_int(pawl_t *p, const char *sql) {
  sqlite3 *db = pawl__store_sqlite_db(p->store);
  long long v = -1;
  if (db) {
    sqlite3_stmt *st;
    CHECK_INT(sqlite3_prepare_v2(db, sql, -1, &st, NULL), ==, SQLITE_OK);
    if (sqlite3_step(st) == SQLITE_ROW) v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
  }
  PGresult *r = PQexec(pawl__store_postgres_conn(p->store), sql);
  if (PQresultStatus(r) != PGRES_TUPLES_OK)
    unit_fail(__FILE__, __LINE__, "%s: %s", sql, PQresultErrorMessage(r));
  v = atoll(PQgetvalue(r, 0, 0));
  PQclear(r);
  return v;
}

/* A pending job that is not due for ten years: never claimed here. */
static pawl_id_t enq_later(pawl_t *p) {
  pawl_enqueue_opts_t o;
  pawl_enqueue_opts_init(&o);
  o.run_at = T0 + 3650 * DAY;
  pawl_id_t id;
  if (pawl_enqueue(p, "t", "{}", &o, &id, NULL))
    unit_fail(__FILE__, __LINE__, "enqueue: %s", pawl_errmsg(p));
  return id;
}

static pawl_id_t enq(pawl_t *p, const char *type, const char *queue,
                     const char *key, const char *bkey) {
  pawl_enqueue_opts_t o;
  pawl_enqueue_opts_init(&o);
  o.queue = queue;
  o.idempotency_key = key;
  o.business_key = bkey;
  o.max_attempts = 1;
  pawl_id_t id;
  if (pawl_enqueue(p, type, "{}", &o, &id, NULL))
    unit_fail(__FILE__, __LINE__, "enqueue: %s", pawl_errmsg(p));
  return id;
}

/* Claims every due job and ends it with `kind` (a log line each). */
static size_t finish_all(pawl_t *p, pawl_outcome_kind_t kind) {
  pawl_job_t **jobs = NULL;
  size_t n = 0;
  CHECK_OK(pawl_claim(p, NULL, 100, &jobs, &n));
  for (size_t i = 0; i < n; i++) {
    pawl_log_entry_t log = {0, "info", "hello", NULL};
    pawl_outcome_t o = {.id = jobs[i]->id, .attempt = jobs[i]->attempt,
                        .kind = kind, .error = "boom", .logs = &log,
                        .nlogs = 1};
    CHECK_OK(pawl_finish(p, &o, 1, NULL));
  }
  pawl_jobs_free(jobs, n);
  return n;
}

/* A job of `type` in `queue` that ended in `state` now. */
static pawl_id_t ended(pawl_t *p, const char *type, const char *queue,
                       int state) {
  pawl_id_t id = enq(p, type, queue, NULL, NULL);
  if (state == PAWL_CANCELED) {
    CHECK_OK(pawl_cancel(p, &id, "no", NULL));
    return id;
  }
  CHECK_INT(finish_all(p, state == PAWL_SUCCEEDED ? PAWL_OUT_SUCCEEDED
                                                  : PAWL_OUT_FAILED),
            ==, 1);
  return id;
}

static int exists(pawl_t *p, const pawl_id_t *id) {
  pawl_job_t *j = NULL;
  int rc = pawl_get(p, id, &j);
  pawl_job_free(j);
  if (rc != 0 && rc != PAWL_ENOTFOUND)
    unit_fail(__FILE__, __LINE__, "get: %s", pawl_errmsg(p));
  return rc == 0;
}

static int state_of(pawl_t *p, const pawl_id_t *id) {
  pawl_job_t *j = NULL;
  CHECK_OK(pawl_get(p, id, &j));
  int s = j->state;
  pawl_job_free(j);
  return s;
}

/* Runs a cleanup; returns how many went. */
static int64_t cleanup(pawl_t *p, const pawl_retention_t *pol, int state,
                       int64_t older, int dry) {
  pawl_cleanup_opts_t o;
  pawl_cleanup_opts_init(&o);
  o.policy = pol;
  o.state = state;
  o.older_than_ms = older;
  o.dry_run = dry;
  pawl_cleanup_result_t *r = NULL;
  if (pawl_cleanup(p, &o, &r))
    unit_fail(__FILE__, __LINE__, "cleanup: %s", pawl_errmsg(p));
  int64_t sum = 0;
  for (size_t i = 0; i < r->nrows; i++) sum += r->rows[i].count;
  CHECK_INT(sum, ==, r->removed);
  CHECK_INT(r->dry_run, ==, dry);
  int64_t n = r->removed;
  pawl_cleanup_free(r);
  return n;
}

static pawl_retention_t *policy(const char *spec) {
  pawl_retention_t *r = NULL;
  char err[512];
  if (pawl_retention_parse(spec, &r, err, sizeof err))
    unit_fail(__FILE__, __LINE__, "parse %s: %s", spec, err);
  return r;
}

/* Every live state, long past every age: nothing goes; the finished ones
 * beside them do. */
static void ret_live_kept(const char *url) {
  pawl_t *p = ret_open(url);
  pawl_id_t pending = enq(p, "t", "q", NULL, NULL);
  pawl_id_t running = enq(p, "t", "q", NULL, NULL);
  pawl_id_t paused = enq(p, "t", "q", NULL, NULL);
  CHECK_OK(pawl_pause(p, &paused, NULL, NULL));
  pawl_enqueue_opts_t o;
  pawl_enqueue_opts_init(&o);
  o.blocked = 1;
  pawl_id_t blocked;
  CHECK_OK(pawl_enqueue(p, "t", "{}", &o, &blocked, NULL));
  /* running: claim the two pending ones, give `pending` back. */
  pawl_job_t **jobs = NULL;
  size_t n = 0;
  CHECK_OK(pawl_claim(p, NULL, 10, &jobs, &n));
  CHECK_INT(n, ==, 2);
  for (size_t i = 0; i < n; i++)
    if (!memcmp(jobs[i]->id.bytes, pending.bytes, 16)) {
      pawl_outcome_t out = {.id = pending, .attempt = jobs[i]->attempt,
                            .kind = PAWL_OUT_SNOOZE,
                            .run_at = T0 + 4000 * DAY};
      CHECK_OK(pawl_finish(p, &out, 1, NULL));
    }
  pawl_jobs_free(jobs, n);
  /* A failed job paused by the operator (it remembers failed). */
  pawl_id_t paused_failed = ended(p, "t", "q", PAWL_FAILED);
  CHECK_OK(pawl_pause(p, &paused_failed, NULL, NULL));
  pawl_id_t done = ended(p, "t", "q", PAWL_SUCCEEDED);
  advance(3650 * DAY);
  CHECK_INT(cleanup(p, NULL, -1, 0, 0), ==, 1); /* `done`, at any age */
  CHECK(!exists(p, &done));
  CHECK_INT(state_of(p, &pending), ==, PAWL_PENDING);
  CHECK_INT(state_of(p, &running), ==, PAWL_RUNNING);
  CHECK_INT(state_of(p, &paused), ==, PAWL_PAUSED);
  CHECK_INT(state_of(p, &blocked), ==, PAWL_BLOCKED);
  CHECK_INT(state_of(p, &paused_failed), ==, PAWL_PAUSED);
  CHECK_INT(cleanup(p, NULL, -1, -1, 0), ==, 0);
  pawl_close(p);
}

/* The race: the walk read a failed job, an operator retried it, then the
 * removal ran: the removing statement sees it live (and at another
 * version) and keeps it. So does a job retried and failed again. */
static void ret_retried_between(const char *url) {
  pawl_t *p = ret_open(url);
  pawl_id_t a = ended(p, "t", "q", PAWL_FAILED);
  pawl_id_t b = ended(p, "t", "q", PAWL_FAILED);
  pawl_id_t c = ended(p, "t", "q", PAWL_FAILED);
  advance(8 * DAY);
  store_retain_row_t rows[10];
  size_t n = 0;
  CHECK_OK(p->store->ops->retention.scan(p->store, NULL, 10, rows, &n));
  CHECK_INT(n, ==, 3);
  CHECK_OK(pawl_retry(p, &a, "operator", NULL)); /* a: pending */
  CHECK_OK(pawl_retry(p, &b, "operator", NULL)); /* b: failed again */
  CHECK_INT(finish_all(p, PAWL_OUT_FAILED), ==, 2); /* a and b */
  CHECK_OK(pawl_retry(p, &a, "operator", NULL)); /* a: pending now */
  int gone[10];
  CHECK_OK(p->store->ops->retention.remove(p->store, rows, n, 0, gone));
  CHECK_INT(gone[0], ==, 0);
  CHECK_INT(gone[1], ==, 0);
  CHECK_INT(gone[2], ==, 1);
  CHECK_INT(state_of(p, &a), ==, PAWL_PENDING);
  CHECK_INT(state_of(p, &b), ==, PAWL_FAILED);
  CHECK(!exists(p, &c));
  /* b failed again just now: kept for its 7 days from this end. */
  CHECK_INT(cleanup(p, NULL, -1, -1, 0), ==, 0);
  advance(7 * DAY);
  CHECK_INT(cleanup(p, NULL, -1, -1, 0), ==, 1);
  CHECK(!exists(p, &b));
  CHECK(exists(p, &a));
  pawl_close(p);
}

/* The default ages: succeeded and canceled 1 day, failed 7 days, each
 * counted from the job's end; --state narrows, older_than overrides. */
static void ret_ages(const char *url) {
  pawl_t *p = ret_open(url);
  pawl_id_t s = ended(p, "t", "q", PAWL_SUCCEEDED);
  pawl_id_t f = ended(p, "t", "q", PAWL_FAILED);
  pawl_id_t c = ended(p, "t", "q", PAWL_CANCELED);
  advance(HOUR);
  pawl_id_t s2 = ended(p, "t", "q", PAWL_SUCCEEDED);
  advance(DAY - HOUR - 1);
  CHECK_INT(cleanup(p, NULL, -1, -1, 0), ==, 0);
  advance(1); /* exactly a day after s, c */
  CHECK_INT(cleanup(p, NULL, PAWL_CANCELED, -1, 0), ==, 1);
  CHECK(!exists(p, &c));
  CHECK(exists(p, &s));
  CHECK_INT(cleanup(p, NULL, -1, -1, 0), ==, 1);
  CHECK(!exists(p, &s));
  CHECK(exists(p, &s2) && exists(p, &f));
  /* older_than: one age (here narrowed to one state). */
  CHECK_INT(cleanup(p, NULL, PAWL_SUCCEEDED, DAY - HOUR + 1, 0), ==, 0);
  CHECK_INT(cleanup(p, NULL, PAWL_SUCCEEDED, DAY - HOUR, 0), ==, 1);
  CHECK(!exists(p, &s2));
  advance(6 * DAY - 1);
  CHECK_INT(cleanup(p, NULL, -1, -1, 0), ==, 0);
  advance(1);
  CHECK_INT(cleanup(p, NULL, PAWL_SUCCEEDED, -1, 0), ==, 0);
  CHECK_INT(cleanup(p, NULL, -1, -1, 0), ==, 1);
  CHECK(!exists(p, &f));
  pawl_close(p);
}

/* Per queue and per type: the most specific rule wins. */
static void ret_overrides(const char *url) {
  pawl_t *p = ret_open(url);
  pawl_retention_t *pol = policy(
      "succeeded=1h, queue:mail.succeeded=forever, type:report.succeeded=10m,"
      "queue:mail/type:report.succeeded=2h, failed=forever");
  pawl_id_t plain = ended(p, "x", "default", PAWL_SUCCEEDED);
  pawl_id_t mail = ended(p, "x", "mail", PAWL_SUCCEEDED);
  pawl_id_t report = ended(p, "report", "default", PAWL_SUCCEEDED);
  pawl_id_t mail_report = ended(p, "report", "mail", PAWL_SUCCEEDED);
  pawl_id_t failed = ended(p, "x", "default", PAWL_FAILED);
  advance(10 * MINUTE);
  CHECK_INT(cleanup(p, pol, -1, -1, 0), ==, 1);
  CHECK(!exists(p, &report));
  advance(50 * MINUTE);
  CHECK_INT(cleanup(p, pol, -1, -1, 0), ==, 1);
  CHECK(!exists(p, &plain));
  advance(HOUR);
  CHECK_INT(cleanup(p, pol, -1, -1, 0), ==, 1);
  CHECK(!exists(p, &mail_report));
  advance(3000 * DAY);
  CHECK_INT(cleanup(p, pol, -1, -1, 0), ==, 0);
  CHECK(exists(p, &mail) && exists(p, &failed));
  pawl_retention_free(pol);
  pawl_close(p);
}

/* archive: the row, its attempts, events and logs move to the archive
 * tables; the live tables keep nothing of it. */
static void ret_archive(const char *url) {
  pawl_t *p = ret_open(url);
  pawl_id_t f = ended(p, "t", "q", PAWL_FAILED);  /* attempt, event, log */
  pawl_id_t s = ended(p, "t", "q", PAWL_SUCCEEDED); /* log */
  pawl_id_t c = ended(p, "t", "q", PAWL_CANCELED);  /* event */
  long long att = sql_int(p, "SELECT count(*) FROM pawl_attempts");
  long long ev = sql_int(p, "SELECT count(*) FROM pawl_events");
  long long lg = sql_int(p, "SELECT count(*) FROM pawl_logs");
  CHECK(att >= 1 && ev >= 2 && lg == 2);
  advance(30 * DAY);
  pawl_retention_t *pol = policy("archive");
  CHECK_INT(cleanup(p, pol, -1, -1, 0), ==, 3);
  CHECK(!exists(p, &f) && !exists(p, &s) && !exists(p, &c));
  CHECK_INT(sql_int(p, "SELECT count(*) FROM pawl_jobs"), ==, 0);
  CHECK_INT(sql_int(p, "SELECT count(*) FROM pawl_attempts"), ==, 0);
  CHECK_INT(sql_int(p, "SELECT count(*) FROM pawl_events"), ==, 0);
  CHECK_INT(sql_int(p, "SELECT count(*) FROM pawl_logs"), ==, 0);
  CHECK_INT(sql_int(p, "SELECT count(*) FROM pawl_jobs_archive"), ==, 3);
  CHECK_INT(sql_int(p, "SELECT count(*) FROM pawl_jobs_archive WHERE "
                       "archived_at IS NOT NULL AND state IN (2, 3, 4)"),
            ==, 3);
  CHECK_INT(sql_int(p, "SELECT count(*) FROM pawl_attempts_archive"), ==,
            att);
  CHECK_INT(sql_int(p, "SELECT count(*) FROM pawl_events_archive"), ==, ev);
  CHECK_INT(sql_int(p, "SELECT count(*) FROM pawl_logs_archive"), ==, lg);
  pawl_retention_free(pol);
  /* Without archive: deleted, the archive unchanged. */
  ended(p, "t", "q", PAWL_SUCCEEDED);
  advance(2 * DAY);
  CHECK_INT(cleanup(p, NULL, -1, -1, 0), ==, 1);
  CHECK_INT(sql_int(p, "SELECT count(*) FROM pawl_jobs_archive"), ==, 3);
  CHECK_INT(sql_int(p, "SELECT count(*) FROM pawl_logs"), ==, 0);
  pawl_close(p);
}

/* Idempotency keys outlive the job: a duplicate enqueue after the removal
 * still gets the first id, flagged. Business keys go with the job. */
static void ret_keys(const char *url) {
  pawl_t *p = ret_open(url);
  pawl_id_t first = enq(p, "t", "q", "once-42", "order-42");
  CHECK_INT(finish_all(p, PAWL_OUT_SUCCEEDED), ==, 1);
  advance(400 * DAY);
  CHECK_INT(cleanup(p, NULL, -1, -1, 0), ==, 1);
  CHECK(!exists(p, &first));
  CHECK_INT(sql_int(p, "SELECT count(*) FROM pawl_idempotency"), ==, 1);
  pawl_enqueue_opts_t o;
  pawl_enqueue_opts_init(&o);
  o.idempotency_key = "once-42";
  pawl_id_t again;
  int status = -1;
  CHECK_OK(pawl_enqueue(p, "t", "{}", &o, &again, &status));
  CHECK_INT(status, ==, PAWL_ENQ_DUPLICATE);
  CHECK(!memcmp(again.bytes, first.bytes, 16));
  CHECK(!exists(p, &again)); /* still gone: nothing was made */
  pawl_enqueue_opts_init(&o);
  o.business_key = "order-42";
  CHECK_OK(pawl_enqueue(p, "t", "{}", &o, &again, &status));
  CHECK_INT(status, ==, PAWL_ENQ_NEW);
  CHECK(exists(p, &again));
  pawl_close(p);
}

static void ret_dry_run(const char *url) {
  pawl_t *p = ret_open(url);
  pawl_id_t s = ended(p, "t", "q", PAWL_SUCCEEDED);
  pawl_id_t f = ended(p, "t", "q", PAWL_FAILED);
  advance(2 * DAY);
  long long ev = sql_int(p, "SELECT count(*) FROM pawl_events");
  pawl_cleanup_opts_t o;
  pawl_cleanup_opts_init(&o);
  o.dry_run = 1;
  pawl_cleanup_result_t *r = NULL;
  CHECK_OK(pawl_cleanup(p, &o, &r));
  CHECK_INT(r->removed, ==, 1);
  CHECK_INT(r->nrows, ==, 1);
  CHECK_INT(r->rows[0].state, ==, PAWL_SUCCEEDED);
  CHECK_STR(r->rows[0].queue, "q");
  CHECK_STR(r->rows[0].type, "t");
  pawl_cleanup_free(r);
  CHECK(exists(p, &s) && exists(p, &f));
  CHECK_INT(sql_int(p, "SELECT count(*) FROM pawl_events"), ==, ev);
  CHECK_INT(cleanup(p, NULL, -1, 0, 1), ==, 2); /* would, at age 0 */
  CHECK(exists(p, &s) && exists(p, &f));
  pawl_close(p);
}

static void bad_spec(const char *spec, const char *needle) {
  pawl_retention_t *r = NULL;
  char err[512] = "";
  CHECK_INT(pawl_retention_parse(spec, &r, err, sizeof err), ==, PAWL_EINVAL);
  CHECK(r == NULL);
  if (!strstr(err, needle))
    unit_fail(__FILE__, __LINE__, "%s: \"%s\" lacks \"%s\"", spec, err,
              needle);
}

static void ret_bad_input(const char *url) {
  bad_spec("running=1d", "unknown state \"running\"");
  bad_spec("bogus=1d", "unknown state \"bogus\"");
  bad_spec("failed=7x", "not a duration");
  bad_spec("failed=-1d", "failed=-1d");
  bad_spec("batch=0", "from 1 to 100000");
  bad_spec("batch=100001", "from 1 to 100000");
  bad_spec("share=0", "from 1 to 50");
  bad_spec("share=51", "from 1 to 50");
  bad_spec("pause=2m", "retention pause");
  bad_spec("every=10ms", "retention interval");
  bad_spec("queue:.failed=1d", "queue:NAME");
  bad_spec("host:x.failed=1d", "queue:NAME");
  bad_spec("queue:q.pending=1d", "unknown state \"pending\"");
  bad_spec("archive=1", "unknown state \"archive\"");
  bad_spec("succeeded", "expected STATE=DURATION");
  pawl_retention_t *ok = policy(" succeeded=2h , archive,,failed=forever ");
  CHECK_INT(ok->keep_ms[PAWL_SUCCEEDED], ==, 2 * HOUR);
  CHECK_INT(ok->keep_ms[PAWL_FAILED], ==, PAWL_RETAIN_FOREVER);
  CHECK_INT(ok->keep_ms[PAWL_CANCELED], ==, DAY);
  CHECK_INT(ok->archive, ==, 1);
  CHECK_INT(ok->share_pct, ==, 5);
  /* The pause after a batch: the share's complement, at least pause. */
  CHECK_INT(pawl__retention_pause(ok, 100), ==, 1900);
  CHECK_INT(pawl__retention_pause(ok, 1), ==, 50);
  pawl_retention_free(ok);
  ok = policy("share=20,pause=0s");
  CHECK_INT(ok->share_pct, ==, 20);
  CHECK_INT(pawl__retention_pause(ok, 100), ==, 400);
  pawl_retention_free(ok);

  pawl_t *p = ret_open(url);
  pawl_cleanup_opts_t o;
  pawl_cleanup_result_t *r = NULL;
  pawl_cleanup_opts_init(&o);
  o.state = PAWL_RUNNING;
  CHECK_INT(pawl_cleanup(p, &o, &r), ==, PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "state running is not a finished state"));
  pawl_cleanup_opts_init(&o);
  o.state = 99;
  CHECK_INT(pawl_cleanup(p, &o, &r), ==, PAWL_EINVAL);
  pawl_cleanup_opts_init(&o);
  o.older_than_ms = -5;
  CHECK_INT(pawl_cleanup(p, &o, &r), ==, PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "older_than"));
  pawl_cleanup_opts_init(&o);
  o.older_than_ms = INT64_MAX;
  CHECK_INT(pawl_cleanup(p, &o, &r), ==, PAWL_EINVAL);
  pawl_retention_t pol;
  pawl_retention_init(&pol);
  pol.batch = 0;
  pawl_cleanup_opts_init(&o);
  o.policy = &pol;
  CHECK_INT(pawl_cleanup(p, &o, &r), ==, PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "retention batch"));
  pawl_retention_init(&pol);
  pol.keep_ms[PAWL_FAILED] = -7;
  CHECK_INT(pawl_cleanup(p, &o, &r), ==, PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "retention of failed jobs"));
  pawl_retention_init(&pol);
  pawl_retain_rule_t rule = {NULL, NULL, PAWL_FAILED, 0};
  pol.rules = &rule;
  pol.nrules = 1;
  CHECK_INT(pawl_cleanup(p, &o, &r), ==, PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "neither a queue nor a type"));
  CHECK(r == NULL);
  pawl_close(p);
}

/* Many batches, live jobs among the finished ones, and a bound. */
static void ret_batches(const char *url) {
  pawl_t *p = ret_open(url);
  pawl_id_t live[5];
  for (int i = 0; i < 25; i++) {
    ended(p, "t", i % 2 ? "a" : "b", PAWL_SUCCEEDED);
    if (i % 5 == 0) live[i / 5] = enq_later(p);
  }
  pawl_retention_t *pol = policy("batch=4,pause=0");
  advance(2 * DAY);
  pawl_cleanup_opts_t o;
  pawl_cleanup_opts_init(&o);
  o.policy = pol;
  o.max = 7;
  pawl_cleanup_result_t *r = NULL;
  CHECK_OK(pawl_cleanup(p, &o, &r));
  CHECK_INT(r->removed, ==, 7);
  pawl_cleanup_free(r);
  o.max = 0;
  CHECK_OK(pawl_cleanup(p, &o, &r));
  CHECK_INT(r->removed, ==, 18);
  CHECK_INT(r->nrows, ==, 2); /* by queue: a, b */
  CHECK_STR(r->rows[0].queue, "a");
  CHECK_STR(r->rows[1].queue, "b");
  CHECK_INT(r->rows[0].count + r->rows[1].count, ==, 18);
  pawl_cleanup_free(r);
  for (int i = 0; i < 5; i++) CHECK(exists(p, &live[i]));
  CHECK_INT(sql_int(p, "SELECT count(*) FROM pawl_jobs"), ==, 5);
  pawl_retention_free(pol);
  pawl_close(p);
}

static int dep_count(const pawl_dep_t *d, void *data) {
  (void)d;
  ++*(int *)data;
  return 0;
}

/* A finished parent goes with its edges; its child (live, its count of
 * the parent's end done) stays and waits for nothing. */
static void ret_deps(const char *url) {
  pawl_t *p = ret_open(url);
  pawl_id_t parent = enq(p, "t", "q", NULL, NULL);
  pawl_enqueue_opts_t o;
  pawl_enqueue_opts_init(&o);
  o.after = &parent;
  o.nafter = 1;
  o.run_at = T0 + 3000 * DAY; /* stays pending once released */
  pawl_id_t child;
  CHECK_OK(pawl_enqueue(p, "t", "{}", &o, &child, NULL));
  CHECK_INT(state_of(p, &child), ==, PAWL_BLOCKED);
  CHECK_INT(finish_all(p, PAWL_OUT_SUCCEEDED), ==, 1);
  CHECK_INT(state_of(p, &child), ==, PAWL_PENDING);
  int edges = 0;
  CHECK_OK(pawl_deps_list(p, &child, dep_count, &edges));
  CHECK_INT(edges, ==, 1);
  advance(2 * DAY);
  CHECK_INT(cleanup(p, NULL, -1, -1, 0), ==, 1);
  CHECK(!exists(p, &parent));
  CHECK_INT(state_of(p, &child), ==, PAWL_PENDING);
  CHECK_INT(sql_int(p, "SELECT count(*) FROM pawl_deps"), ==, 0);
  pawl_close(p);
}

/* The host's sweep (step mode: the poller's chores on this thread): it
 * removes what the policy lets go, batch by batch, under the lock
 * "pawl.retention", and releases the lock when done. */
static void ret_sweep_step(const char *url) {
  pawl_t *p = ret_open(url);
  for (int i = 0; i < 9; i++) ended(p, "t", "q", PAWL_SUCCEEDED);
  pawl_id_t live = enq_later(p);
  pawl_id_t fresh = ended(p, "t", "q", PAWL_SUCCEEDED);
  (void)fresh;
  advance(2 * DAY);
  pawl_id_t young = ended(p, "t", "q", PAWL_SUCCEEDED);
  pawl_retention_t *pol = policy("batch=2,pause=0,every=1h");
  pawl_host_opts_t h;
  pawl_host_opts_init(&h);
  h.scripts_dir = "";
  h.retention = pol;
  h.log_level = PAWL_LOG_ERROR;
  CHECK_OK(pawl_step_start(p, &h));
  pawl_retention_free(pol); /* copied */
  /* Each step runs the chores that are due: a batch per chore, the next
   * one after the sweep's pause (19 times what the batch took, at the
   * default share of 5%). Waits
   * for the outcome, with a hang guard only (a minute). */
  long long left = -1;
  for (int i = 0; i < 60000; i++) {
    CHECK(pawl_step(p, 0) >= 0);
    left = sql_int(p, "SELECT count(*) FROM pawl_jobs");
    if (left <= 2 &&
        sql_int(p, "SELECT count(*) FROM pawl_locks WHERE name = "
                   "'pawl.retention'") == 0)
      break;
    struct timespec ms = {0, 1000000L};
    nanosleep(&ms, NULL);
  }
  CHECK_INT(left, ==, 2); /* the live one and the young one */
  CHECK(exists(p, &live) && exists(p, &young));
  CHECK_INT(sql_int(p, "SELECT count(*) FROM pawl_locks WHERE name = "
                       "'pawl.retention'"),
            ==, 0);
  pawl_close(p);
}

static const char *ret_sqlite_url(const char *name) {
  static char url[4200];
  snprintf(url, sizeof url, "sqlite:%s/%s.db", unit_tmpdir(), name);
  return url;
}

#define RET_SQLITE(name) \
  void test_store_sqlite_ret_##name(void) { ret_##name(ret_sqlite_url(#name)); }
#define RET_PG(name) \
  void test_store_pg_ret_##name(void) { ret_##name(pgtest_url("ret_" #name)); }
RET_TESTS(RET_SQLITE)
RET_TESTS(RET_PG)
