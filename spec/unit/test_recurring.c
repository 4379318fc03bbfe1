/* test_recurring.c: recurring definitions on both backends: the
 * store's part (through the public API and pawl_internal.h's tick, on a
 * handle whose clock is injected), the misfire policies across a simulated
 * downtime, two nodes ticking the same definitions, and the upsert of
 * script-born definitions. Each REC_TEST(name) runs as
 * store_sqlite_rec_NAME and store_pg_rec_NAME (test_list_recurring.h). */
#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <string.h>

#include "handle.h"
#include "pawl.h"
#include "pawl_internal.h"
#include "pgtest.h"
#include "unit.h"

/* 2027-01-15T08:00:00Z, on a minute. */
#define T0 INT64_C(1800000000000)
#define MIN INT64_C(60000)

#define REC_TESTS(X) \
  X(crud)            \
  X(bad_input)       \
  X(tick_on_time)    \
  X(run_once)        \
  X(catch_up)        \
  X(skip)            \
  X(pause_resume)    \
  X(trigger)         \
  X(crash_between)   \
  X(advance_cas)     \
  X(advance_batch)   \
  X(two_nodes)       \
  X(script_sync)     \
  X(script_broken)   \
  X(script_nodes)

static _Atomic int64_t rec_now = T0;

static int64_t rec_clock(void *data) {
  (void)data;
  return atomic_load(&rec_now);
}

static pawl_t *rec_open(const char *url, const char *node) {
  pawl_options_t o;
  pawl_options_init(&o);
  o.db = url;
  o.node_id = node;
  o.principal = "tester";
  o.clock = rec_clock;
  o.lease_ms = 10000;
  pawl_t *p = NULL;
  char err[512];
  if (pawl_open(&p, &o, err, sizeof err))
    unit_fail(__FILE__, __LINE__, "pawl_open(%s): %s", url, err);
  return p;
}

static size_t rec_tick(pawl_t *p) {
  size_t n = 0;
  int more = 0;
  int rc = pawl__recurring_tick(p, 100000, &n, &more, NULL);
  if (rc) unit_fail(__FILE__, __LINE__, "tick: %s", pawl_errmsg(p));
  return n;
}

typedef struct jobs_seen {
  size_t n;
  int64_t run_at[64];
} jobs_seen_t;

static int rec_collect(const pawl_job_t *j, void *data) {
  jobs_seen_t *s = data;
  if (s->n < 64) s->run_at[s->n] = j->run_at;
  s->n++;
  return 0;
}

/* The jobs of `type`, oldest first by run_at (ids grow with insertion;
 * pawl_list gives newest first). */
static jobs_seen_t rec_jobs(pawl_t *p, const char *type) {
  pawl_filter_t f;
  pawl_filter_init(&f);
  f.type = type;
  f.limit = 1000;
  jobs_seen_t s = {0};
  CHECK_OK(pawl_list(p, &f, rec_collect, &s));
  for (size_t i = 1; i < s.n && i < 64; i++)
    for (size_t k = i; k > 0 && s.run_at[k - 1] > s.run_at[k]; k--) {
      int64_t t = s.run_at[k];
      s.run_at[k] = s.run_at[k - 1];
      s.run_at[k - 1] = t;
    }
  return s;
}

static pawl_recurring_t *rec_get(pawl_t *p, const char *name) {
  pawl_recurring_t *d = NULL;
  int rc = pawl_recurring_get(p, name, &d);
  if (rc) unit_fail(__FILE__, __LINE__, "get %s: %s", name, pawl_errmsg(p));
  return d;
}

static void rec_add(pawl_t *p, const char *name, const char *expr, int misfire,
                    int limit) {
  pawl_recurring_opts_t o;
  pawl_recurring_opts_init(&o);
  o.expr = expr;
  o.misfire = misfire;
  o.catch_up_limit = limit;
  o.payload = "{\"from\":\"cron\"}";
  if (pawl_recurring_add(p, name, &o))
    unit_fail(__FILE__, __LINE__, "add %s: %s", name, pawl_errmsg(p));
}

/* ---- the tests ----------------------------------------------------------------- */

static void rec_crud(const char *url) {
  atomic_store(&rec_now, T0 + 10 * 1000);
  pawl_t *p = rec_open(url, "n1");
  pawl_recurring_opts_t o;
  pawl_recurring_opts_init(&o);
  o.expr = "30 2 * * *";
  o.tz = "Europe/Berlin";
  o.misfire = PAWL_MISFIRE_CATCH_UP;
  o.catch_up_limit = 3;
  o.type = "report";
  o.payload = "{\"a\":1}";
  o.queue = "mail";
  o.priority = 5;
  CHECK_OK(pawl_recurring_add(p, "nightly", &o));
  CHECK_INT(pawl_recurring_add(p, "nightly", &o), ==, PAWL_EKEY);
  CHECK(strstr(pawl_errmsg(p), "already exists") != NULL);
  pawl_recurring_t *d = rec_get(p, "nightly");
  CHECK_STR(d->expr, "30 2 * * *");
  CHECK_STR(d->tz, "Europe/Berlin");
  CHECK_INT(d->misfire, ==, PAWL_MISFIRE_CATCH_UP);
  CHECK_INT(d->catch_up_limit, ==, 3);
  CHECK_STR(d->type, "report");
  CHECK_STR(d->queue, "mail");
  CHECK_INT(d->priority, ==, 5);
  CHECK_INT(d->from_script, ==, 0);
  CHECK_INT(d->enabled, ==, 1);
  CHECK_INT(d->paused, ==, 0);
  CHECK(d->script == NULL);
  /* 2027-01-16T02:30:00+01:00 = 01:30Z */
  CHECK_INT(d->next_fire_at, ==, INT64_C(1800063000000));
  CHECK_INT(d->last_fire_at, ==, 0);
  CHECK_INT(d->has_last_job, ==, 0);
  pawl_recurring_free(d, 1);

  /* set: only the fields named; a new expression schedules anew */
  pawl_recurring_opts_t s;
  pawl_recurring_opts_init(&s);
  s.expr = "0 * * * *";
  s.priority = -3;
  CHECK_OK(pawl_recurring_set(p, "nightly", &s, PAWL_REC_EXPR |
                                                    PAWL_REC_PRIORITY));
  d = rec_get(p, "nightly");
  CHECK_STR(d->expr, "0 * * * *");
  CHECK_STR(d->tz, "Europe/Berlin");
  CHECK_STR(d->queue, "mail");
  CHECK_INT(d->priority, ==, -3);
  CHECK_INT(d->next_fire_at, ==, T0 + 60 * MIN);
  pawl_recurring_free(d, 1);

  rec_add(p, "alpha", "*/5 * * * *", PAWL_MISFIRE_RUN_ONCE, 0);
  pawl_recurring_t *all = NULL;
  size_t n = 0;
  CHECK_OK(pawl_recurring_list(p, &all, &n));
  CHECK_INT(n, ==, 2);
  CHECK_STR(all[0].name, "alpha");
  CHECK_STR(all[0].type, "alpha"); /* the type defaults to the name */
  CHECK_INT(all[0].catch_up_limit, ==, PAWL_CATCH_UP_LIMIT_DEFAULT);
  CHECK_STR(all[1].name, "nightly");
  pawl_recurring_free(all, n);

  CHECK_OK(pawl_recurring_remove(p, "alpha"));
  CHECK_INT(pawl_recurring_remove(p, "alpha"), ==, PAWL_ENOTFOUND);
  CHECK(strstr(pawl_errmsg(p), "alpha") != NULL);
  CHECK_INT(pawl_recurring_get(p, "alpha", &d), ==, PAWL_ENOTFOUND);
  CHECK_INT(pawl_recurring_set(p, "alpha", &s, PAWL_REC_EXPR), ==,
            PAWL_ENOTFOUND);
  CHECK_INT(pawl_recurring_pause(p, "alpha"), ==, PAWL_ENOTFOUND);
  CHECK_INT(pawl_recurring_trigger(p, "alpha", NULL), ==, PAWL_ENOTFOUND);
  pawl_close(p);
}

static void rec_bad_input(const char *url) {
  atomic_store(&rec_now, T0);
  pawl_t *p = rec_open(url, "n1");
  rec_add(p, "keep", "0 0 * * *", 0, 0);
  pawl_recurring_t *before = rec_get(p, "keep");
  struct {
    const char *expr, *tz, *payload;
    int misfire, limit, prio;
    const char *says;
  } bad[] = {
      {"0 24 * * *", NULL, NULL, 0, 0, 0, "hour: 24 is out of range 0-23"},
      {"0 0 30 2 *", NULL, NULL, 0, 0, 0, "never fires"},
      {"0 0 * *", NULL, NULL, 0, 0, 0, "expected 5 or 6 fields"},
      {"0 0 * * *", "Mars/Olympus_Mons", NULL, 0, 0, 0, "Mars/Olympus_Mons"},
      {"0 0 * * *", NULL, "{nope", 0, 0, 0, "payload is not valid JSON"},
      {"0 0 * * *", NULL, NULL, 3, 0, 0, "misfire"},
      {"0 0 * * *", NULL, NULL, 1, 1001, 0, "catch_up_limit"},
      {"0 0 * * *", NULL, NULL, 1, -1, 0, "catch_up_limit"},
      {"0 0 * * *", NULL, NULL, 0, 0, 2000000, "priority"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    pawl_recurring_opts_t o;
    pawl_recurring_opts_init(&o);
    o.expr = bad[i].expr;
    o.tz = bad[i].tz;
    o.payload = bad[i].payload;
    o.misfire = bad[i].misfire;
    o.catch_up_limit = bad[i].limit;
    o.priority = bad[i].prio;
    CHECK_INT(pawl_recurring_add(p, "new", &o), ==, PAWL_EINVAL);
    if (!strstr(pawl_errmsg(p), bad[i].says))
      unit_fail(__FILE__, __LINE__, "case %zu: %s", i, pawl_errmsg(p));
    CHECK_INT(pawl_recurring_set(p, "keep", &o, PAWL_REC_ALL), ==,
              PAWL_EINVAL);
    if (!strstr(pawl_errmsg(p), bad[i].says))
      unit_fail(__FILE__, __LINE__, "set case %zu: %s", i, pawl_errmsg(p));
  }
  pawl_recurring_opts_t o;
  pawl_recurring_opts_init(&o);
  CHECK_INT(pawl_recurring_add(p, "new", &o), ==, PAWL_EINVAL);
  o.expr = "* * * * *";
  CHECK_INT(pawl_recurring_add(p, "", &o), ==, PAWL_EINVAL);
  CHECK_INT(pawl_recurring_add(p, "a\nb", &o), ==, PAWL_EINVAL);
  CHECK_INT(pawl_recurring_set(p, "keep", &o, 0x4000u), ==, PAWL_EINVAL);
  /* nothing changed */
  pawl_recurring_t *all = NULL;
  size_t n = 0;
  CHECK_OK(pawl_recurring_list(p, &all, &n));
  CHECK_INT(n, ==, 1);
  CHECK_STR(all[0].expr, before->expr);
  CHECK_INT(all[0].version, ==, before->version);
  CHECK_INT(all[0].next_fire_at, ==, before->next_fire_at);
  pawl_recurring_free(all, n);
  pawl_recurring_free(before, 1);
  pawl_close(p);
}

static void rec_tick_on_time(const char *url) {
  atomic_store(&rec_now, T0 + 1000);
  pawl_t *p = rec_open(url, "n1");
  rec_add(p, "every", "* * * * *", PAWL_MISFIRE_SKIP, 0);
  CHECK_INT(rec_tick(p), ==, 0); /* nothing due yet */
  atomic_store(&rec_now, T0 + MIN + 300);
  CHECK_INT(rec_tick(p), ==, 1);
  CHECK_INT(rec_tick(p), ==, 0); /* the same second again: nothing */
  jobs_seen_t s = rec_jobs(p, "every");
  CHECK_INT(s.n, ==, 1);
  CHECK_INT(s.run_at[0], ==, T0 + MIN);
  pawl_id_t id;
  char key[64];
  snprintf(key, sizeof key, "cron:every:%lld", (long long)((T0 + MIN) / 1000));
  CHECK_OK(p->store->ops->keys.find_idempotent(p->store, key, &id));
  pawl_job_t *j = NULL;
  CHECK_OK(pawl_get(p, &id, &j));
  CHECK(strstr(j->payload, "\"from\"") && strstr(j->payload, "\"cron\"")); /* jsonb spaces it */
  CHECK_STR(j->enqueued_by, "cron:every");
  CHECK_STR(j->queue, "default");
  pawl_job_free(j);
  pawl_recurring_t *d = rec_get(p, "every");
  CHECK_INT(d->last_fire_at, ==, T0 + MIN);
  CHECK_INT(d->next_fire_at, ==, T0 + 2 * MIN);
  CHECK_INT(d->has_last_job, ==, 1);
  CHECK(memcmp(&d->last_job_id, &id, sizeof id) == 0);
  pawl_recurring_free(d, 1);
  /* Late by less than the misfire threshold: still on time, even for
   * skip (a busy node, the lock moving between nodes). */
  atomic_store(&rec_now, T0 + 2 * MIN + 50 * 1000);
  CHECK_INT(rec_tick(p), ==, 1);
  CHECK_INT(rec_jobs(p, "every").n, ==, 2);
  pawl_close(p);
}

/* Down from T0 + 30 s to T0 + 10 min + 30 s: every minute was missed but
 * the ones within the threshold (T0 + 10 min). */
static void rec_downtime(const char *url, int misfire, int limit,
                         size_t want, const int64_t *runs) {
  atomic_store(&rec_now, T0 + 30 * 1000);
  pawl_t *p = rec_open(url, "n1");
  rec_add(p, "m", "* * * * *", misfire, limit);
  atomic_store(&rec_now, T0 + 10 * MIN + 30 * 1000);
  CHECK_INT(rec_tick(p), ==, want);
  jobs_seen_t s = rec_jobs(p, "m");
  CHECK_INT(s.n, ==, want);
  for (size_t i = 0; i < want; i++) CHECK_INT(s.run_at[i], ==, runs[i]);
  pawl_recurring_t *d = rec_get(p, "m");
  CHECK_INT(d->next_fire_at, ==, T0 + 11 * MIN);
  CHECK_INT(d->last_fire_at, ==, T0 + 10 * MIN);
  pawl_recurring_free(d, 1);
  CHECK_INT(rec_tick(p), ==, 0);
  pawl_close(p);
}

static void rec_run_once(const char *url) {
  /* one job for the nine missed (keyed by the latest, T0 + 9 min), and
   * the one on time */
  int64_t runs[] = {T0 + 9 * MIN, T0 + 10 * MIN};
  rec_downtime(url, PAWL_MISFIRE_RUN_ONCE, 0, 2, runs);
}

static void rec_catch_up(const char *url) {
  /* the oldest four of the nine missed, then the one on time */
  int64_t runs[] = {T0 + MIN, T0 + 2 * MIN, T0 + 3 * MIN, T0 + 4 * MIN,
                    T0 + 10 * MIN};
  rec_downtime(url, PAWL_MISFIRE_CATCH_UP, 4, 5, runs);
}

static void rec_skip(const char *url) {
  int64_t runs[] = {T0 + 10 * MIN};
  rec_downtime(url, PAWL_MISFIRE_SKIP, 0, 1, runs);
}

static void rec_pause_resume(const char *url) {
  atomic_store(&rec_now, T0 + 1000);
  pawl_t *p = rec_open(url, "n1");
  rec_add(p, "m", "* * * * *", PAWL_MISFIRE_CATCH_UP, 10);
  CHECK_OK(pawl_recurring_pause(p, "m"));
  CHECK_OK(pawl_recurring_pause(p, "m")); /* no-op */
  atomic_store(&rec_now, T0 + 5 * MIN + 1000);
  CHECK_INT(rec_tick(p), ==, 0);
  pawl_recurring_t *d = rec_get(p, "m");
  CHECK_INT(d->paused, ==, 1);
  pawl_recurring_free(d, 1);
  /* Resuming schedules from now: what would have fired meanwhile, not. */
  CHECK_OK(pawl_recurring_resume(p, "m"));
  CHECK_OK(pawl_recurring_resume(p, "m"));
  d = rec_get(p, "m");
  CHECK_INT(d->paused, ==, 0);
  CHECK_INT(d->next_fire_at, ==, T0 + 6 * MIN);
  pawl_recurring_free(d, 1);
  CHECK_INT(rec_tick(p), ==, 0);
  atomic_store(&rec_now, T0 + 6 * MIN);
  CHECK_INT(rec_tick(p), ==, 1);
  pawl_close(p);
}

static void rec_trigger(const char *url) {
  atomic_store(&rec_now, T0 + 1000);
  pawl_t *p = rec_open(url, "n1");
  rec_add(p, "m", "0 0 1 1 *", 0, 0);
  CHECK_OK(pawl_recurring_pause(p, "m"));
  pawl_id_t a, b;
  CHECK_OK(pawl_recurring_trigger(p, "m", &a));
  CHECK_OK(pawl_recurring_trigger(p, "m", &b));
  CHECK(memcmp(&a, &b, sizeof a) != 0);
  pawl_job_t *j = NULL;
  CHECK_OK(pawl_get(p, &a, &j));
  char key[128], id[PAWL_ID_STRLEN];
  pawl_id_format(&a, id);
  snprintf(key, sizeof key, "cron:m:manual:%s", id);
  CHECK_STR(j->idempotency_key, key);
  CHECK_INT(j->run_at, ==, T0 + 1000);
  pawl_job_free(j);
  pawl_recurring_t *d = rec_get(p, "m");
  CHECK_INT(d->last_fire_at, ==, 0); /* the schedule is untouched */
  CHECK_INT(d->paused, ==, 1);
  pawl_recurring_free(d, 1);
  pawl_close(p);
}

/* A node enqueued an occurrence and died before advancing the schedule
 * (the job exists under the key, next_fire_at did not move): the next tick
 * advances without a second job. */
static void rec_crash_between(const char *url) {
  atomic_store(&rec_now, T0 + 1000);
  pawl_t *p = rec_open(url, "n1");
  rec_add(p, "m", "* * * * *", 0, 0);
  atomic_store(&rec_now, T0 + MIN + 1000);
  char key[64];
  snprintf(key, sizeof key, "cron:m:%lld", (long long)((T0 + MIN) / 1000));
  pawl_enqueue_opts_t eo;
  pawl_enqueue_opts_init(&eo);
  eo.idempotency_key = key;
  pawl_id_t first;
  CHECK_OK(pawl_enqueue(p, "m", "{}", &eo, &first, NULL));
  CHECK_INT(rec_tick(p), ==, 0);
  CHECK_INT(rec_jobs(p, "m").n, ==, 1);
  pawl_recurring_t *d = rec_get(p, "m");
  CHECK_INT(d->next_fire_at, ==, T0 + 2 * MIN);
  CHECK(memcmp(&d->last_job_id, &first, sizeof first) == 0);
  pawl_recurring_free(d, 1);
  pawl_close(p);
}

/* The advance is a compare-and-set: a second advance from the same read
 * (another node that read the same batch) moves nothing and makes no job. */
static void rec_advance_cas(const char *url) {
  atomic_store(&rec_now, T0 + 1000);
  pawl_t *p = rec_open(url, "n1");
  rec_add(p, "m", "* * * * *", 0, 0);
  atomic_store(&rec_now, T0 + MIN);
  pawl_recurring_t *due = NULL;
  size_t n = 0;
  CHECK_OK(p->store->ops->recurring.due(p->store, T0 + MIN, 10, &due, &n));
  CHECK_INT(n, ==, 1);
  for (int round = 0; round < 2; round++) {
    store_new_job_t j;
    memset(&j, 0, sizeof j);
    pawl_id_new(&j.id);
    j.type = "m";
    j.queue = "default";
    j.payload = "{}";
    j.tags = "[]";
    j.idempotency_key = round ? "cron:m:other" : "cron:m:1800000060";
    store_rec_advance_t a;
    memset(&a, 0, sizeof a);
    a.name = "m";
    a.expect_next = due[0].next_fire_at;
    a.next = T0 + 2 * MIN;
    a.last_fire = T0 + MIN;
    a.jobs = &j;
    a.njobs = 1;
    CHECK_OK(p->store->ops->recurring.advance(p->store, &a, 1));
    CHECK_INT(a.advanced, ==, round == 0);
    CHECK_INT(a.made, ==, round == 0);
  }
  pawl_recurring_free(due, n);
  CHECK_INT(rec_jobs(p, "m").n, ==, 1);
  /* Paused between the read and the advance: not advanced. */
  CHECK_OK(pawl_recurring_pause(p, "m"));
  CHECK_OK(p->store->ops->recurring.due(p->store, T0 + 10 * MIN, 10, &due, &n));
  CHECK_INT(n, ==, 0);
  pawl_close(p);
}

/* One advance() of a batch with every outcome at once (PostgreSQL does a
 * batch in a fixed number of statements; each definition's result must
 * still be its own), given out of name order: moved with one job; read
 * stale; paused meanwhile; a catch-up whose middle key was seen before; one
 * whose last key was seen before (its last job is then that key's job);
 * one that fires nothing (skip). The same batch again moves nothing. */
static void rec_advance_batch(const char *url) {
  atomic_store(&rec_now, T0 + 1000);
  pawl_t *p = rec_open(url, "n1");
  enum { NDEF = 6 };
  static const char *const names[NDEF] = {"f-none",   "e-lastdup",
                                          "d-middup", "c-paused",
                                          "b-stale",  "a-one"};
  static const size_t njobs[NDEF] = {0, 2, 3, 1, 1, 1};
  for (int i = 0; i < NDEF; i++) rec_add(p, names[i], "* * * * *", 0, 0);
  atomic_store(&rec_now, T0 + MIN + 500);
  store_new_job_t jobs[NDEF][3];
  char keys[NDEF][3][64];
  store_rec_advance_t a[NDEF];
  for (int i = 0; i < NDEF; i++) {
    for (size_t j = 0; j < njobs[i]; j++) {
      store_new_job_t *jb = &jobs[i][j];
      memset(jb, 0, sizeof *jb);
      pawl_id_new(&jb->id);
      jb->type = names[i];
      jb->queue = "default";
      jb->payload = "{\"n\":1}";
      jb->tags = "[]";
      jb->run_at = T0 + MIN - (int64_t)(njobs[i] - 1 - j) * 1000;
      jb->enqueued_by = "cron:batch";
      snprintf(keys[i][j], sizeof keys[i][j], "cron:%s:%zu", names[i], j);
      jb->idempotency_key = keys[i][j];
    }
    memset(&a[i], 0, sizeof a[i]);
    a[i].name = names[i];
    a[i].expect_next = i == 4 ? T0 : T0 + MIN; /* b-stale: read stale */
    a[i].next = T0 + 2 * MIN;
    a[i].last_fire = njobs[i] ? T0 + MIN : 0;
    a[i].jobs = njobs[i] ? jobs[i] : NULL;
    a[i].njobs = njobs[i];
  }
  /* Keys seen before, as a node that died after enqueueing left them. */
  pawl_enqueue_opts_t eo;
  pawl_enqueue_opts_init(&eo);
  pawl_id_t mid_prev, last_prev;
  eo.idempotency_key = keys[2][1];
  CHECK_OK(pawl_enqueue(p, "d-middup", "{}", &eo, &mid_prev, NULL));
  eo.idempotency_key = keys[1][1];
  CHECK_OK(pawl_enqueue(p, "e-lastdup", "{}", &eo, &last_prev, NULL));
  CHECK_OK(pawl_recurring_pause(p, "c-paused"));

  CHECK_OK(p->store->ops->recurring.advance(p->store, a, NDEF));
  static const int advanced[NDEF] = {1, 1, 1, 0, 0, 1};
  static const size_t made[NDEF] = {0, 1, 2, 0, 0, 1};
  static const size_t total[NDEF] = {0, 2, 3, 0, 0, 1};
  for (int i = 0; i < NDEF; i++) {
    CHECK_INT(a[i].advanced, ==, advanced[i]);
    CHECK_INT(a[i].made, ==, made[i]);
    CHECK_INT(rec_jobs(p, names[i]).n, ==, total[i]);
    pawl_recurring_t *d = rec_get(p, names[i]);
    CHECK_INT(d->next_fire_at, ==, advanced[i] ? T0 + 2 * MIN : T0 + MIN);
    CHECK_INT(d->last_fire_at, ==, advanced[i] && njobs[i] ? T0 + MIN : 0);
    CHECK_INT(d->has_last_job, ==, advanced[i] && njobs[i]);
    if (d->has_last_job) {
      const pawl_id_t *want = i == 1 ? &last_prev : &jobs[i][njobs[i] - 1].id;
      CHECK(memcmp(&d->last_job_id, want, sizeof *want) == 0);
    }
    pawl_recurring_free(d, 1);
  }
  /* A job made by the batch carries its fields and its key. */
  pawl_job_t *j = NULL;
  CHECK_OK(pawl_get(p, &jobs[2][0].id, &j));
  CHECK_STR(j->type, "d-middup");
  CHECK_STR(j->idempotency_key, "cron:d-middup:0");
  CHECK_STR(j->enqueued_by, "cron:batch");
  CHECK_INT(j->run_at, ==, T0 + MIN - 2000);
  CHECK_INT(j->created_at, ==, T0 + MIN + 500);
  CHECK_INT(j->state, ==, PAWL_PENDING);
  pawl_job_free(j);
  /* The key seen before made no job under the batch's id. */
  CHECK_INT(pawl_get(p, &jobs[2][1].id, &j), ==, PAWL_ENOTFOUND);

  /* The same batch again (another node's read): nothing moves. */
  CHECK_OK(p->store->ops->recurring.advance(p->store, a, NDEF));
  for (int i = 0; i < NDEF; i++) {
    CHECK_INT(a[i].advanced, ==, 0);
    CHECK_INT(a[i].made, ==, 0);
  }
  CHECK_INT(rec_jobs(p, "d-middup").n, ==, 3);
  pawl_close(p);
}

/* Two nodes tick the same definitions at the same time, over a clock that
 * moves a minute per round: every occurrence makes exactly one job. */
typedef struct rec_node {
  const char *url, *name;
  pthread_barrier_t *go;
  int rounds;
  size_t made;
} rec_node_t;

static void *rec_node_main(void *arg) {
  rec_node_t *nd = arg;
  pawl_t *p = rec_open(nd->url, nd->name);
  for (int r = 0; r < nd->rounds; r++) {
    pthread_barrier_wait(nd->go); /* the clock was moved */
    for (int k = 0; k < 3; k++) {
      size_t n = 0;
      int more = 0;
      int rc = pawl__recurring_tick(p, 100000, &n, &more, NULL);
      /* SQLite: the other node's write transaction may outlast the busy
       * timeout on a loaded machine; a tick that fails is tried again. */
      if (rc && rc != PAWL_EBUSY)
        unit_fail(__FILE__, __LINE__, "tick: %s", pawl_errmsg(p));
      nd->made += n;
    }
    pthread_barrier_wait(nd->go); /* done with this minute */
  }
  pawl_close(p);
  return NULL;
}

static void rec_two_nodes(const char *url) {
  atomic_store(&rec_now, T0 + 1000);
  pawl_t *p = rec_open(url, "setup");
  enum { DEFS = 20, ROUNDS = 5 };
  for (int i = 0; i < DEFS; i++) {
    char name[16];
    snprintf(name, sizeof name, "d%02d", i);
    rec_add(p, name, "* * * * *", PAWL_MISFIRE_CATCH_UP, 10);
  }
  pthread_barrier_t go;
  pthread_barrier_init(&go, NULL, 3);
  rec_node_t nodes[2] = {{url, "node-a", &go, ROUNDS, 0},
                         {url, "node-b", &go, ROUNDS, 0}};
  pthread_t t[2];
  for (int i = 0; i < 2; i++)
    CHECK_INT(pthread_create(&t[i], NULL, rec_node_main, &nodes[i]), ==, 0);
  for (int r = 0; r < ROUNDS; r++) {
    atomic_store(&rec_now, T0 + (r + 1) * MIN + 500);
    pthread_barrier_wait(&go);
    pthread_barrier_wait(&go);
  }
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  pthread_barrier_destroy(&go);
  CHECK_INT(nodes[0].made + nodes[1].made, ==, DEFS * ROUNDS);
  for (int i = 0; i < DEFS; i++) {
    char name[16];
    snprintf(name, sizeof name, "d%02d", i);
    jobs_seen_t s = rec_jobs(p, name);
    CHECK_INT(s.n, ==, ROUNDS);
    for (int r = 0; r < ROUNDS; r++)
      CHECK_INT(s.run_at[r], ==, T0 + (r + 1) * MIN);
  }
  pawl_close(p);
}

/* One sync: `first` as at a node's first, `lost` the scripts gone since
 * its last (NULL: none). */
static void rec_sync(pawl_t *p, const pawl_recurring_t *defs, size_t n,
                     const pawl_script_error_t *broken, size_t nbroken,
                     const char *lost, int first, char *err, size_t errlen,
                     size_t *nerr) {
  const char *l[1] = {lost};
  if (pawl__recurring_sync(p, defs, n, broken, nbroken, l, lost ? 1 : 0,
                           first, err, errlen, nerr))
    unit_fail(__FILE__, __LINE__, "sync: %s", pawl_errmsg(p));
}

static void rec_script_sync(const char *url) {
  atomic_store(&rec_now, T0 + 1000);
  pawl_t *p = rec_open(url, "n1");
  rec_add(p, "ops", "0 9 * * *", 0, 0); /* an operator's */
  pawl_recurring_t defs[3];
  memset(defs, 0, sizeof defs);
  defs[0] = (pawl_recurring_t){.name = "report", .expr = "*/5 * * * *",
                               .tz = "UTC", .catch_up_limit = 10,
                               .type = "report", .payload = "{}",
                               .script = "report"};
  defs[1] = (pawl_recurring_t){.name = "hourly", .expr = "0 * * * *",
                               .tz = "America/New_York",
                               .misfire = PAWL_MISFIRE_SKIP,
                               .catch_up_limit = 10, .type = "clean",
                               .payload = "{\"deep\":true}", .queue = "bg",
                               .script = "clean"};
  /* a script that chose an operator's name: not written */
  defs[2] = (pawl_recurring_t){.name = "ops", .expr = "* * * * *",
                               .tz = "UTC", .catch_up_limit = 10,
                               .type = "other", .payload = "{}",
                               .script = "other"};
  char err[512];
  size_t nerr = 0;
  rec_sync(p, defs, 3, NULL, 0, NULL, 1, err, sizeof err, &nerr);
  CHECK_INT(nerr, ==, 1);
  CHECK(strstr(err, "operator") != NULL);
  pawl_recurring_t *d = rec_get(p, "report");
  CHECK_INT(d->from_script, ==, 1);
  CHECK_STR(d->script, "report");
  CHECK_INT(d->next_fire_at, ==, T0 + 5 * MIN);
  int64_t version = d->version;
  pawl_recurring_free(d, 1);
  d = rec_get(p, "ops");
  CHECK_INT(d->from_script, ==, 0);
  CHECK_STR(d->expr, "0 9 * * *");
  pawl_recurring_free(d, 1);
  d = rec_get(p, "hourly");
  CHECK_STR(d->queue, "bg");
  CHECK_STR(d->tz, "America/New_York");
  pawl_recurring_free(d, 1);

  /* A reload with the same scripts writes nothing (the schedule kept). */
  atomic_store(&rec_now, T0 + 2 * MIN);
  rec_sync(p, defs, 2, NULL, 0, "other", 0, err, sizeof err, &nerr);
  d = rec_get(p, "report");
  CHECK_INT(d->version, ==, version);
  pawl_recurring_free(d, 1);
  /* A changed payload keeps the schedule; a changed expression does not. */
  defs[0].payload = "{\"v\":2}";
  rec_sync(p, defs, 2, NULL, 0, NULL, 0, err, sizeof err, &nerr);
  d = rec_get(p, "report");
  CHECK_INT(d->next_fire_at, ==, T0 + 5 * MIN);
  pawl_recurring_free(d, 1);
  defs[0].expr = "*/7 * * * *";
  rec_sync(p, defs, 2, NULL, 0, NULL, 0, err, sizeof err, &nerr);
  d = rec_get(p, "report");
  CHECK_INT(d->next_fire_at, ==, T0 + 7 * MIN);
  pawl_recurring_free(d, 1);

  /* The script `clean` is gone: its definition is disabled, not deleted,
   * and does not fire; the operator's is untouched. */
  rec_sync(p, defs, 1, NULL, 0, "clean", 0, err, sizeof err, &nerr);
  d = rec_get(p, "hourly");
  CHECK_INT(d->enabled, ==, 0);
  pawl_recurring_free(d, 1);
  d = rec_get(p, "ops");
  CHECK_INT(d->enabled, ==, 1);
  pawl_recurring_free(d, 1);
  atomic_store(&rec_now, T0 + 3 * 3600 * 1000);
  rec_tick(p);
  CHECK_INT(rec_jobs(p, "clean").n, ==, 0);
  CHECK(rec_jobs(p, "report").n > 0);
  /* It comes back with its script, enabled. */
  rec_sync(p, defs, 2, NULL, 0, NULL, 0, err, sizeof err, &nerr);
  d = rec_get(p, "hourly");
  CHECK_INT(d->enabled, ==, 1);
  pawl_recurring_free(d, 1);
  pawl_close(p);
}


/* A script that fails to load is not gone: at a node's first sync (a
 * fresh start, where it never loaded) and at a later one, its definition
 * keeps its state, enabled or disabled, and carries the load error, which
 * the next sync where it loads clears. */
static void rec_script_broken(const char *url) {
  atomic_store(&rec_now, T0 + 1000);
  pawl_t *p = rec_open(url, "n1");
  pawl_recurring_t defs[2];
  memset(defs, 0, sizeof defs);
  defs[0] = (pawl_recurring_t){.name = "report", .expr = "*/5 * * * *",
                               .tz = "UTC", .catch_up_limit = 10,
                               .type = "report", .payload = "{}",
                               .script = "report"};
  defs[1] = (pawl_recurring_t){.name = "daily", .expr = "0 3 * * *",
                               .tz = "UTC", .catch_up_limit = 10,
                               .type = "clean", .payload = "{}",
                               .script = "clean"};
  char err[512];
  size_t nerr = 0;
  rec_sync(p, defs, 2, NULL, 0, NULL, 1, err, sizeof err, &nerr);
  pawl_recurring_t *d = rec_get(p, "daily");
  int64_t next = d->next_fire_at, version = d->version;
  CHECK(d->load_error == NULL);
  pawl_recurring_free(d, 1);
  pawl_close(p);
  /* A fresh start where clean.lua has a syntax error: kept, enabled. */
  pawl_script_error_t broken[1] = {
      {.type = "clean", .error = "clean.lua:3: '=' expected near 'end'"}};
  for (int first = 1; first >= 0; first--) {
    p = rec_open(url, "n1");
    rec_sync(p, defs, 1, broken, 1, NULL, first, err, sizeof err, &nerr);
    d = rec_get(p, "daily");
    CHECK_INT(d->enabled, ==, 1);
    CHECK_INT(d->next_fire_at, ==, next);
    CHECK_INT(d->version, ==, version);
    CHECK_STR(d->load_error, "node n1: clean.lua:3: '=' expected near 'end'");
    pawl_recurring_free(d, 1);
    pawl_close(p);
  }
  /* It fires all the same (its jobs' type is served by the version the
   * nodes had, or waits for one that loads). */
  p = rec_open(url, "n1");
  atomic_store(&rec_now, next + 1000);
  rec_tick(p);
  CHECK(rec_jobs(p, "clean").n > 0);
  /* Paused by an operator, broken: stays paused. */
  CHECK_OK(pawl_recurring_pause(p, "daily"));
  rec_sync(p, defs, 1, broken, 1, NULL, 1, err, sizeof err, &nerr);
  d = rec_get(p, "daily");
  CHECK_INT(d->paused, ==, 1);
  pawl_recurring_free(d, 1);
  /* It loads again: written, the error cleared. */
  rec_sync(p, defs, 2, NULL, 0, NULL, 0, err, sizeof err, &nerr);
  d = rec_get(p, "daily");
  CHECK(d->load_error == NULL);
  CHECK_INT(d->enabled, ==, 1);
  pawl_recurring_free(d, 1);
  /* A script that went is still disabled when it goes. */
  rec_sync(p, defs, 1, NULL, 0, "clean", 0, err, sizeof err, &nerr);
  d = rec_get(p, "daily");
  CHECK_INT(d->enabled, ==, 0);
  pawl_recurring_free(d, 1);
  pawl_close(p);
}

/* Two nodes with different scripts: the one without a script neither
 * disables it at its first sync (the other is alive) nor later, so no
 * sync flips the definition; alone, a node's first sync disables what it
 * has not (a script removed while every node was down). */
static void rec_script_nodes(const char *url) {
  atomic_store(&rec_now, T0 + 1000);
  pawl_t *a = rec_open(url, "node-a");
  pawl_t *b = rec_open(url, "node-b");
  pawl_recurring_t defs[1];
  memset(defs, 0, sizeof defs);
  defs[0] = (pawl_recurring_t){.name = "report", .expr = "*/5 * * * *",
                               .tz = "UTC", .catch_up_limit = 10,
                               .type = "report", .payload = "{}",
                               .script = "report"};
  char err[512];
  size_t nerr = 0;
  CHECK_OK(pawl__node_beat(a, "test", "", T0));
  CHECK_OK(pawl__node_beat(b, "test", "", T0));
  rec_sync(a, defs, 1, NULL, 0, NULL, 1, err, sizeof err, &nerr);
  pawl_recurring_t *d = rec_get(a, "report");
  int64_t version = d->version;
  pawl_recurring_free(d, 1);
  for (int round = 0; round < 3; round++) {
    rec_sync(b, NULL, 0, NULL, 0, NULL, round == 0, err, sizeof err, &nerr);
    rec_sync(a, defs, 1, NULL, 0, NULL, 0, err, sizeof err, &nerr);
    d = rec_get(a, "report");
    CHECK_INT(d->enabled, ==, 1);
    CHECK_INT(d->version, ==, version);
    pawl_recurring_free(d, 1);
  }
  /* a is silent for longer than a lease: b, starting alone, disables. */
  atomic_store(&rec_now, T0 + 1000 + 10001);
  CHECK_OK(pawl__node_beat(b, "test", "", T0));
  rec_sync(b, NULL, 0, NULL, 0, NULL, 1, err, sizeof err, &nerr);
  d = rec_get(b, "report");
  CHECK_INT(d->enabled, ==, 0);
  pawl_recurring_free(d, 1);
  pawl_close(a);
  pawl_close(b);
}

/* ---- registration ------------------------------------------------------------- */

static const char *rec_sqlite_url(const char *name) {
  static char url[4200];
  snprintf(url, sizeof url, "sqlite:%s/%s.db", unit_tmpdir(), name);
  return url;
}

#define REC_SQLITE(name) \
  void test_store_sqlite_rec_##name(void) { rec_##name(rec_sqlite_url(#name)); }
#define REC_PG(name) \
  void test_store_pg_rec_##name(void) { rec_##name(pgtest_url("rec_" #name)); }
REC_TESTS(REC_SQLITE)
REC_TESTS(REC_PG)

/* SQLite: the due definitions are read through the partial index. */
sqlite3 *pawl__store_sqlite_db(store_t *st);
void test_store_sqlite_rec_due_index(void) {
  pawl_t *p = rec_open(rec_sqlite_url("due_index"), "n1");
  sqlite3 *db = pawl__store_sqlite_db(p->store);
  sqlite3_stmt *st;
  CHECK_INT(sqlite3_prepare_v2(
                db,
                "EXPLAIN QUERY PLAN SELECT name FROM pawl_recurring WHERE "
                "enabled = 1 AND paused = 0 AND next_fire_at IS NOT NULL AND "
                "next_fire_at <= ?1 ORDER BY next_fire_at LIMIT ?2",
                -1, &st, NULL),
            ==, SQLITE_OK);
  int used = 0;
  while (sqlite3_step(st) == SQLITE_ROW)
    if (strstr((const char *)sqlite3_column_text(st, 3), "pawl_recurring_due"))
      used = 1;
  sqlite3_finalize(st);
  CHECK(used);
  pawl_close(p);
}

/* PostgreSQL: a tick's batch is a fixed number of statements whatever its
 * size, counted by statement triggers: one UPDATE of
 * the definitions (a second only for those whose key was seen before), one
 * INSERT of the keys, one COPY of the jobs; not one of each per
 * definition. */
void test_store_pg_rec_statements(void) {
  const char *url = pgtest_url("rec_statements");
  atomic_store(&rec_now, T0 + 1000);
  pawl_t *p = rec_open(url, "n1");
  enum { DEFS = 300 };
  for (int i = 0; i < DEFS; i++) {
    char name[16];
    snprintf(name, sizeof name, "d%03d", i);
    rec_add(p, name, "* * * * *", 0, 0);
  }
  atomic_store(&rec_now, T0 + MIN + 500);
  /* d007's occurrence was enqueued by a node that died before advancing. */
  char key[64];
  snprintf(key, sizeof key, "cron:d007:%lld", (long long)((T0 + MIN) / 1000));
  pawl_enqueue_opts_t eo;
  pawl_enqueue_opts_init(&eo);
  eo.idempotency_key = key;
  pawl_id_t prev;
  CHECK_OK(pawl_enqueue(p, "d007", "{}", &eo, &prev, NULL));
  PGconn *c = pgtest_connect(url);
  pgtest_exec(c,
              "CREATE TABLE rec_stmts (tbl text, op text);"
              "CREATE FUNCTION rec_count() RETURNS trigger LANGUAGE plpgsql "
              "AS $$BEGIN INSERT INTO rec_stmts VALUES (TG_TABLE_NAME, "
              "TG_OP); RETURN NULL; END$$;"
              "CREATE TRIGGER rec_count AFTER INSERT OR UPDATE ON "
              "pawl_recurring FOR EACH STATEMENT EXECUTE FUNCTION rec_count();"
              "CREATE TRIGGER rec_count AFTER INSERT OR UPDATE ON "
              "pawl_idempotency FOR EACH STATEMENT EXECUTE FUNCTION "
              "rec_count();"
              "CREATE TRIGGER rec_count AFTER INSERT ON pawl_jobs FOR EACH "
              "STATEMENT EXECUTE FUNCTION rec_count()");
  CHECK_INT(rec_tick(p), ==, DEFS - 1);
  CHECK_INT(pgtest_int(c, "SELECT count(*) FROM rec_stmts WHERE tbl = "
                          "'pawl_recurring' AND op = 'UPDATE'"),
            ==, 2);
  CHECK_INT(pgtest_int(c, "SELECT count(*) FROM rec_stmts WHERE tbl = "
                          "'pawl_idempotency'"),
            ==, 1);
  CHECK_INT(pgtest_int(c, "SELECT count(*) FROM rec_stmts WHERE tbl = "
                          "'pawl_jobs'"),
            ==, 1);
  CHECK_INT(pgtest_int(c, "SELECT count(*) FROM pawl_jobs"), ==, DEFS);
  pawl_recurring_t *d = rec_get(p, "d007");
  CHECK(d->has_last_job && memcmp(&d->last_job_id, &prev, sizeof prev) == 0);
  pawl_recurring_free(d, 1);
  PQfinish(c);
  pawl_close(p);
}
