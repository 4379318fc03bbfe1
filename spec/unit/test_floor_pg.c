/* test_floor_pg.c: on PostgreSQL, claims start at their floor
 * (stores/postgres/claim.c, "floors"; V020__claim_floor.sql).
 *
 * - Under a pinned horizon (a transaction that holds an xid, open while
 *   the claims run), the rows taken stay in the claim's index, dead but
 *   not removable. A claim from its floor reads about what it takes; one
 *   from the top reads every row taken before it. Counted by the index's
 *   own statistics (idx_tup_read: the entries its scans returned, dead
 *   ones included), so the test does not depend on the machine's speed.
 * - Every way a row becomes claimable above a floor (a higher priority, a
 *   run time in the past, a job handed back, a job that was held by time,
 *   by its key, by its parents, a resumed job, a transaction that
 *   enqueued early and committed late): without its wakeup the claim from
 *   the floor does not see the row (so the floor is really there), and
 *   with the wakeup a real listener heard, the next claim takes it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "handle.h"
#include "pawl.h"
#include "pawl_internal.h"
#include "pgtest.h"
#include "unit.h"

/* The store's connection, for the statistics (stores/postgres/store.c).
 * Weak: a build without PostgreSQL runs none of these tests. */
PGconn *pawl__store_postgres_conn(store_t *st) __attribute__((weak));

enum { FL_BATCH = 10 };

static pawl_t *fl_open(const char *url, const char *node) {
  pawl_options_t o;
  pawl_options_init(&o);
  o.db = url;
  o.node_id = node;
  pawl_t *p = NULL;
  char err[512];
  if (pawl_open(&p, &o, err, sizeof err))
    unit_fail(__FILE__, __LINE__, "pawl_open: %s", err);
  return p;
}

/* n jobs, each with a run time of its own (one millisecond apart, the
 * oldest first, all in the past), so that each has a rank of its own. */
static void fl_fill(pawl_t *p, int n) {
  pawl_enqueue_opts_t *o = calloc((size_t)n, sizeof *o);
  pawl_enqueue_item_t *items = calloc((size_t)n, sizeof *items);
  CHECK(o && items);
  int64_t base = pawl_now(p) - 60000;
  for (int i = 0; i < n; i++) {
    pawl_enqueue_opts_init(&o[i]);
    o[i].run_at = base + i;
    items[i] = (pawl_enqueue_item_t){"t", "{}", &o[i]};
  }
  if (pawl_enqueue_many(p, items, (size_t)n, NULL, NULL))
    unit_fail(__FILE__, __LINE__, "enqueue: %s", pawl_errmsg(p));
  free(items);
  free(o);
}

/* Claims one batch, handing the store what the poller would hand it. */
static size_t fl_claim(pawl_t *p, int listening, const char *rewinds,
                       pawl_job_t ***jobs) {
  size_t n = 0;
  pawl__claim_floors(p, listening, rewinds);
  if (pawl_claim(p, NULL, FL_BATCH, jobs, &n))
    unit_fail(__FILE__, __LINE__, "claim: %s", pawl_errmsg(p));
  return n;
}

/* ---- a pinned horizon ----------------------------------------------------- */

/* Index entries the scans of `index` (a pawl_jobs index) returned so far,
 * dead ones included, as the statistics have them once `mine`'s backend
 * has flushed its own. */
static long long fl_index_read(PGconn *mine, PGconn *reader, const char *index) {
  pgtest_exec(mine, "SELECT pg_stat_force_next_flush()");
  pgtest_exec(reader, "SELECT pg_stat_clear_snapshot()");
  char sql[256];
  snprintf(sql, sizeof sql,
           "SELECT idx_tup_read FROM pg_stat_user_indexes WHERE indexrelname "
           "= '%s' AND schemaname = current_schema()",
           index);
  return pgtest_int(reader, sql);
}

static long long fl_entries_read(PGconn *claimer, PGconn *reader) {
  return fl_index_read(claimer, reader, "pawl_jobs_ready");
}

/* Entries read per claim over `claims` claims of FL_BATCH. */
static long long fl_per_claim(pawl_t *p, int listening, int claims,
                              PGconn *reader) {
  PGconn *mine = pawl__store_postgres_conn(p->store);
  long long before = fl_entries_read(mine, reader);
  for (int i = 0; i < claims; i++) {
    pawl_job_t **jobs = NULL;
    size_t n = fl_claim(p, listening, "", &jobs);
    CHECK_INT(n, ==, FL_BATCH);
    pawl_jobs_free(jobs, n);
  }
  return (fl_entries_read(mine, reader) - before) / claims;
}

void test_pg_floor_pinned(void) {
  const char *url = pgtest_db_url("floor_pinned");
  char copy[1024];
  snprintf(copy, sizeof copy, "%s", url);
  pawl_t *p = fl_open(copy, "fl");
  fl_fill(p, 2000);
  PGconn *pin = pgtest_connect(copy), *reader = pgtest_connect(copy);
  pgtest_exec(pin, "BEGIN");
  pgtest_exec(pin, "SELECT txid_current()");
  /* The first claim reads from the top; the next ones from where it
   * stopped. 100 claims take 1,000 rows, dead to nobody while the pin
   * holds. */
  for (int i = 0; i < 100; i++) {
    pawl_job_t **jobs = NULL;
    size_t n = fl_claim(p, 1, i == 0 ? "*\n" : "", &jobs);
    CHECK_INT(n, ==, FL_BATCH);
    pawl_jobs_free(jobs, n);
  }
  long long floored = fl_per_claim(p, 1, 20, reader);
  /* The same claims without floors (no listener): each reads the
   * 1,000-odd dead entries first. The control shows what the bound
   * below is worth. */
  long long top = fl_per_claim(p, 0, 20, reader);
  printf("index entries read per claim: %lld from the floor, %lld from "
         "the top\n", floored, top);
  if (floored > 3 * FL_BATCH || top < 1000)
    unit_fail(__FILE__, __LINE__,
              "index entries read per claim: %lld from the floor (at most "
              "%d), %lld from the top (at least 1000)",
              floored, 3 * FL_BATCH, top);
  pgtest_exec(pin, "ROLLBACK");
  PQfinish(pin);
  PQfinish(reader);
  pawl_close(p);
}

/* ---- rows that become claimable above a floor -------------------------------- */

typedef struct fl {
  char url[1024];
  pawl_t *p, *listener, *other;
  PGconn *sql;
  pawl_buf_t heard;
  pawl_job_t **first; /* the first claim's jobs (still running) */
  size_t nfirst;
} fl_t;

static void fl_begin(fl_t *f, const char *name) {
  memset(f, 0, sizeof *f);
  snprintf(f->url, sizeof f->url, "%s", pgtest_url(name));
  f->p = fl_open(f->url, "claimer");
  f->listener = fl_open(f->url, "listener");
  f->other = fl_open(f->url, "other");
  f->sql = pgtest_connect(f->url);
  CHECK_OK(pawl__listen(f->listener));
  pawl__buf_init(&f->heard);
}

static void fl_end(fl_t *f) {
  pawl_jobs_free(f->first, f->nfirst);
  pawl__buf_free(&f->heard);
  PQfinish(f->sql);
  pawl_close(f->other);
  pawl_close(f->listener);
  pawl_close(f->p);
}

/* Fills the queue behind what the case enqueued, claims five batches (the
 * first kept in f->first), and empties what the listener heard so far. */
static void fl_floor(fl_t *f) {
  fl_fill(f->other, 200);
  for (int i = 0; i < 5; i++) {
    pawl_job_t **jobs = NULL;
    size_t n = fl_claim(f->p, 1, i == 0 ? "*\n" : "", &jobs);
    CHECK_INT(n, ==, FL_BATCH);
    if (i == 0) {
      f->first = jobs;
      f->nfirst = n;
    } else {
      pawl_jobs_free(jobs, n);
    }
  }
  int woke = 0;
  CHECK_OK(pawl__wakeup_wait(f->listener, 0, &woke, &f->heard));
  pawl__buf_reset(&f->heard);
}

/* Whether one claim of FL_BATCH, given `rewinds`, takes job `x`. */
static int fl_takes(fl_t *f, const char *rewinds, const pawl_id_t *x) {
  pawl_job_t **jobs = NULL;
  size_t n = fl_claim(f->p, 1, rewinds, &jobs);
  int took = 0;
  for (size_t i = 0; i < n; i++)
    took |= memcmp(jobs[i]->id.bytes, x->bytes, 16) == 0;
  pawl_jobs_free(jobs, n);
  return took;
}

/* The case's change has committed: a claim from the floor alone does not
 * see `x`; once the listener has heard the wakeup (a bounded wait), the
 * next claim, given what it heard, takes it. */
static void fl_expect(fl_t *f, const pawl_id_t *x, const char *what) {
  if (fl_takes(f, "", x))
    unit_fail(__FILE__, __LINE__, "%s: claimed without its wakeup: the row "
                                  "was not above the floor", what);
  int woke = 0;
  for (int i = 0; i < 100 && !woke; i++)
    CHECK_OK(pawl__wakeup_wait(f->listener, 100, &woke, &f->heard));
  if (!woke) unit_fail(__FILE__, __LINE__, "%s: no wakeup", what);
  if (!fl_takes(f, pawl__buf_cstr(&f->heard), x))
    unit_fail(__FILE__, __LINE__, "%s: not claimed after its wakeup (heard "
                                  "\"%s\")", what, pawl__buf_cstr(&f->heard));
}

/* Options for a job due an hour ago: it ranks above every job of the fill,
 * and so above the floor. */
static void fl_an_hour_ago(fl_t *f, pawl_enqueue_opts_t *o) {
  pawl_enqueue_opts_init(o);
  o->run_at = pawl_now(f->other) - 3600000;
}

/* Waits (bounded) until the listener has heard "*"; fails naming `what`. */
static void fl_hear_star(fl_t *f, const char *what) {
  int woke = 0;
  for (int i = 0; i < 100 && !strstr(pawl__buf_cstr(&f->heard), "*\n"); i++)
    CHECK_OK(pawl__wakeup_wait(f->listener, 100, &woke, &f->heard));
  if (!strstr(pawl__buf_cstr(&f->heard), "*\n"))
    unit_fail(__FILE__, __LINE__, "no \"*\" after %s (heard \"%s\")", what,
              pawl__buf_cstr(&f->heard));
}

static void fl_finish(pawl_t *p, const pawl_job_t *j, pawl_outcome_kind_t kind) {
  pawl_outcome_t o;
  memset(&o, 0, sizeof o);
  o.id = j->id;
  o.attempt = j->attempt;
  o.kind = kind;
  int rc = 0;
  CHECK_OK(pawl_finish(p, &o, 1, &rc));
  CHECK_INT(rc, ==, 0);
}

static const pawl_job_t *fl_find(fl_t *f, const pawl_id_t *id) {
  for (size_t i = 0; i < f->nfirst; i++)
    if (!memcmp(f->first[i]->id.bytes, id->bytes, 16)) return f->first[i];
  unit_fail(__FILE__, __LINE__, "job not in the first claim");
  return NULL;
}

void test_pg_floor_rewind_priority(void) {
  fl_t f;
  fl_begin(&f, "floor_priority");
  fl_floor(&f);
  pawl_enqueue_opts_t o;
  pawl_enqueue_opts_init(&o);
  o.priority = 9;
  pawl_id_t x;
  CHECK_OK(pawl_enqueue(f.other, "t", "{}", &o, &x, NULL));
  fl_expect(&f, &x, "a higher priority");
  fl_end(&f);
}

void test_pg_floor_rewind_past(void) {
  fl_t f;
  fl_begin(&f, "floor_past");
  fl_floor(&f);
  pawl_enqueue_opts_t o;
  fl_an_hour_ago(&f, &o);
  pawl_id_t x;
  CHECK_OK(pawl_enqueue(f.other, "t", "{}", &o, &x, NULL));
  fl_expect(&f, &x, "a run time an hour ago");
  fl_end(&f);
}

void test_pg_floor_rewind_release(void) {
  fl_t f;
  fl_begin(&f, "floor_release");
  pawl_enqueue_opts_t o;
  fl_an_hour_ago(&f, &o);
  pawl_id_t x;
  CHECK_OK(pawl_enqueue(f.other, "t", "{}", &o, &x, NULL));
  fl_floor(&f);
  /* Handed back unstarted: it keeps its place, far above the floor. */
  fl_finish(f.p, fl_find(&f, &x), PAWL_OUT_RELEASE);
  fl_expect(&f, &x, "a job handed back");
  fl_end(&f);
}

void test_pg_floor_rewind_time_held(void) {
  fl_t f;
  fl_begin(&f, "floor_time_held");
  pawl_enqueue_opts_t o;
  pawl_enqueue_opts_init(&o);
  o.delay_ms = 3600000;
  pawl_id_t x;
  CHECK_OK(pawl_enqueue(f.other, "t", "{}", &o, &x, NULL));
  fl_floor(&f);
  /* It comes due, and is late: due an hour ago, still held by time (the
   * claim's first step lets it go, and that is the change that must say
   * so). */
  char sql[256], hex[PAWL_ID_STRLEN];
  pawl_id_format(&x, hex);
  snprintf(sql, sizeof sql,
           "UPDATE pawl_jobs SET run_at = now() - interval '1 hour', rank = "
           "pawl_rank(0, now() - interval '1 hour', 0) WHERE id = '%s' AND "
           "time_held",
           hex);
  pgtest_exec(f.sql, sql);
  fl_expect(&f, &x, "a job held by time that came due");
  fl_end(&f);
}

void test_pg_floor_rewind_key(void) {
  fl_t f;
  fl_begin(&f, "floor_key");
  pawl_enqueue_opts_t o;
  fl_an_hour_ago(&f, &o);
  o.ordering_key = "k";
  pawl_id_t head, x;
  CHECK_OK(pawl_enqueue(f.other, "t", "{}", &o, &head, NULL));
  o.run_at += 1;
  CHECK_OK(pawl_enqueue(f.other, "t", "{}", &o, &x, NULL));
  fl_floor(&f);
  /* The key's first job ends: its second may go, an hour above the floor. */
  fl_finish(f.p, fl_find(&f, &head), PAWL_OUT_SUCCEEDED);
  fl_expect(&f, &x, "a key's next job");
  fl_end(&f);
}

void test_pg_floor_rewind_parents(void) {
  fl_t f;
  fl_begin(&f, "floor_parents");
  pawl_enqueue_opts_t o;
  fl_an_hour_ago(&f, &o);
  pawl_id_t parent, x;
  CHECK_OK(pawl_enqueue(f.other, "t", "{}", &o, &parent, NULL));
  o.after = &parent;
  o.nafter = 1;
  CHECK_OK(pawl_enqueue(f.other, "t", "{}", &o, &x, NULL));
  fl_floor(&f);
  fl_finish(f.p, fl_find(&f, &parent), PAWL_OUT_SUCCEEDED);
  fl_expect(&f, &x, "a job whose parent ended");
  fl_end(&f);
}

void test_pg_floor_rewind_resume(void) {
  fl_t f;
  fl_begin(&f, "floor_resume");
  pawl_enqueue_opts_t o;
  fl_an_hour_ago(&f, &o);
  pawl_id_t x;
  CHECK_OK(pawl_enqueue(f.other, "t", "{}", &o, &x, NULL));
  CHECK_OK(pawl_pause(f.other, &x, "test", NULL));
  fl_floor(&f);
  CHECK_OK(pawl_resume(f.other, &x, "test", NULL));
  fl_expect(&f, &x, "a resumed job");
  fl_end(&f);
}

/* A transaction that began before the jobs the floor passed, and enqueued
 * and committed after: its row's run time (the transaction's start) ranks
 * it above them. As an application enqueuing in its own transaction does. */
void test_pg_floor_rewind_late_commit(void) {
  fl_t f;
  fl_begin(&f, "floor_late_commit");
  PGconn *late = pgtest_connect(f.url);
  pgtest_exec(late, "BEGIN");
  pgtest_exec(late, "SELECT now()");
  /* Every job of the fill has a run time after the transaction began, and
   * is due (a run time to come would hold it by time): the database clock
   * has to pass them first. */
  int64_t began = pgtest_int(late, "SELECT pawl_ms(now())");
  while (pgtest_int(f.sql, "SELECT pawl_ms(clock_timestamp())") <= began + 210) {
    struct timespec ts = {0, 5000000L};
    nanosleep(&ts, NULL);
  }
  pawl_enqueue_item_t items[200];
  pawl_enqueue_opts_t o[200];
  for (int i = 0; i < 200; i++) {
    pawl_enqueue_opts_init(&o[i]);
    o[i].run_at = began + 2 + i;
    items[i] = (pawl_enqueue_item_t){"t", "{}", &o[i]};
  }
  CHECK_OK(pawl_enqueue_many(f.other, items, 200, NULL, NULL));
  for (int i = 0; i < 5; i++) {
    pawl_job_t **jobs = NULL;
    size_t n = fl_claim(f.p, 1, i == 0 ? "*\n" : "", &jobs);
    CHECK_INT(n, ==, FL_BATCH);
    pawl_jobs_free(jobs, n);
  }
  int woke = 0;
  CHECK_OK(pawl__wakeup_wait(f.listener, 0, &woke, &f.heard));
  pawl__buf_reset(&f.heard);
  pgtest_exec(late,
              "INSERT INTO pawl_jobs (id, type, queue, state, priority, rank, "
              "payload, run_at, max_attempts, timeout_s, created_at, "
              "updated_at) VALUES ('01890000-0000-7000-8000-00000000000a', "
              "'t', 'default', 0, 0, pawl_rank(0, now(), 0), '{}', now(), 1, "
              "0, now(), now())");
  pgtest_exec(late, "COMMIT");
  pawl_id_t x;
  CHECK_OK(pawl_id_parse(&x, "01890000-0000-7000-8000-00000000000a"));
  fl_expect(&f, &x, "a transaction that committed late");
  PQfinish(late);
  fl_end(&f);
}

/* What the listener may hand over besides ranks: "*" (wakeups missed)
 * sends the floors to the top; anything else (another program's NOTIFY on
 * the channel, an older schema's empty payload, a number out of range)
 * changes nothing. */
void test_pg_floor_rewind_odd(void) {
  fl_t f;
  fl_begin(&f, "floor_odd");
  pawl_enqueue_opts_t o;
  fl_an_hour_ago(&f, &o);
  pawl_id_t x;
  CHECK_OK(pawl_enqueue(f.other, "t", "{}", &o, &x, NULL));
  fl_floor(&f);
  fl_finish(f.p, fl_find(&f, &x), PAWL_OUT_RELEASE);
  const char *odd[] = {"\n", "x\n", "12x\n", "99999999999999999999999\n",
                       "-\n", "--1\n", "*x\n", "**\n"};
  for (size_t k = 0; k < sizeof odd / sizeof odd[0]; k++)
    if (fl_takes(&f, odd[k], &x))
      unit_fail(__FILE__, __LINE__, "claimed after \"%s\"", odd[k]);
  if (!fl_takes(&f, "junk\n*\n", &x))
    unit_fail(__FILE__, __LINE__, "not claimed after \"*\"");
  fl_end(&f);
}

/* next_due from the floor (PG_SQL_NEXT_DUE_FLOOR): with every claimable
 * row taken, the earliest job held by time; with a job enqueued since
 * (below the floor), that one; and from the top again after "*". */
void test_pg_floor_next_due(void) {
  fl_t f;
  fl_begin(&f, "floor_next_due");
  pawl_enqueue_opts_t o;
  pawl_enqueue_opts_init(&o);
  o.delay_ms = 3600000;
  pawl_id_t later;
  CHECK_OK(pawl_enqueue(f.other, "t", "{}", &o, &later, NULL));
  pawl_job_t *held = NULL;
  CHECK_OK(pawl_get(f.other, &later, &held));
  fl_fill(f.other, 20);
  for (int i = 0; i < 2; i++) {
    pawl_job_t **jobs = NULL;
    size_t n = fl_claim(f.p, 1, i == 0 ? "*\n" : "", &jobs);
    CHECK_INT(n, ==, FL_BATCH);
    pawl_jobs_free(jobs, n);
  }
  int64_t due = 0;
  pawl__claim_floors(f.p, 1, "");
  CHECK_OK(pawl_next_due(f.p, NULL, &due));
  CHECK_INT(due, ==, held->run_at);
  /* A job enqueued now ranks below the floor: due now. */
  pawl_id_t now_job;
  CHECK_OK(pawl_enqueue(f.other, "t", "{}", NULL, &now_job, NULL));
  CHECK_OK(pawl_next_due(f.p, NULL, &due));
  CHECK(due > 0 && due <= pawl_now(f.p));
  pawl_job_free(held);
  fl_end(&f);
}

/* A node that dies in the middle of a claim had rows locked: the others'
 * claims passed over them, and their floors went past. Nothing writes
 * those rows again; the lease recovery that follows the death says "*",
 * and the next claim reads from the top. */
void test_pg_floor_dead_claim(void) {
  fl_t f;
  fl_begin(&f, "floor_dead_claim");
  pawl_enqueue_opts_t o;
  fl_an_hour_ago(&f, &o);
  pawl_id_t x;
  CHECK_OK(pawl_enqueue(f.other, "t", "{}", &o, &x, NULL));
  char sql[256], hex[PAWL_ID_STRLEN];
  pawl_id_format(&x, hex);
  /* The dying claim holds x: the claims around it pass it by. */
  PGconn *dying = pgtest_connect(f.url);
  pgtest_exec(dying, "BEGIN");
  snprintf(sql, sizeof sql, "SELECT id FROM pawl_jobs WHERE id = '%s' FOR UPDATE",
           hex);
  pgtest_exec(dying, sql);
  fl_floor(&f);
  pgtest_exec(dying, "ROLLBACK");
  PQfinish(dying);
  if (fl_takes(&f, "", &x))
    unit_fail(__FILE__, __LINE__, "x claimed from the floor: it was not above it");
  /* The dead node's running job: its lease ran out. */
  const pawl_job_t *mine = f.first[0];
  pawl_id_format(&mine->id, hex);
  snprintf(sql, sizeof sql, "UPDATE pawl_jobs SET lease_expires = now() - "
                            "interval '1 minute' WHERE id = '%s'", hex);
  pgtest_exec(f.sql, sql);
  size_t n = 0;
  CHECK_OK(pawl_recover(f.other, &n));
  CHECK_INT(n, ==, 1);
  fl_hear_star(&f, "the recovery");
  if (!fl_takes(&f, pawl__buf_cstr(&f.heard), &x))
    unit_fail(__FILE__, __LINE__, "x not claimed after the recovery's wakeup");
  fl_end(&f);
}

/* A queue resumed: its rows, which the claims passed by while it was
 * paused, are claimable without a change of their own. The resume says
 * "*", and a claim given it takes them. */
void test_pg_floor_queue_resume(void) {
  fl_t f;
  fl_begin(&f, "floor_queue_resume");
  pawl_enqueue_opts_t o;
  fl_an_hour_ago(&f, &o);
  o.queue = "later";
  pawl_id_t x;
  CHECK_OK(pawl_enqueue(f.other, "t", "{}", &o, &x, NULL));
  CHECK_OK(pawl_queue_pause(f.other, "later", "test", NULL));
  fl_floor(&f);
  int changed = 0;
  CHECK_OK(pawl_queue_resume(f.other, "later", &changed));
  CHECK_INT(changed, ==, 1);
  fl_hear_star(&f, "the resume");
  if (!fl_takes(&f, pawl__buf_cstr(&f.heard), &x))
    unit_fail(__FILE__, __LINE__, "x not claimed after the resume's wakeup");
  fl_end(&f);
}

/* ---- the chores under a pinned horizon ---------------------------------- */

static int64_t fl_clock_ms;
static int64_t fl_clock(void *data) {
  (void)data;
  return fl_clock_ms;
}

static long long fl_running_read(PGconn *mine, PGconn *reader) {
  return fl_index_read(mine, reader, "pawl_jobs_running");
}

/* 1,000 jobs run an hour ago, while a transaction pins the horizon: their
 * entries stay in the running rows' index. A heartbeat reads only the
 * leases that have not run out, and a sweep after a sweep only those that
 * ran out since (with its margin), so neither walks them; the first sweep
 * (and one every few minutes) walks them all. */
void test_pg_chores_pinned(void) {
  const char *url = pgtest_db_url("chores_pinned");
  char copy[1024];
  snprintf(copy, sizeof copy, "%s", url);
  fl_clock_ms = 1800000000000;
  pawl_options_t o;
  pawl_options_init(&o);
  o.db = copy;
  o.node_id = "chores";
  o.clock = fl_clock;
  pawl_t *p = NULL;
  char err[512];
  if (pawl_open(&p, &o, err, sizeof err))
    unit_fail(__FILE__, __LINE__, "pawl_open: %s", err);
  PGconn *pin = pgtest_connect(copy), *reader = pgtest_connect(copy);
  pgtest_exec(pin, "BEGIN");
  pgtest_exec(pin, "SELECT txid_current()");
  for (int round = 0; round < 10; round++) {
    pawl_enqueue_item_t items[100];
    for (int i = 0; i < 100; i++) items[i] = (pawl_enqueue_item_t){"t", "{}", NULL};
    CHECK_OK(pawl_enqueue_many(p, items, 100, NULL, NULL));
    pawl_job_t **jobs = NULL;
    size_t n = 0;
    CHECK_OK(pawl_claim(p, NULL, 100, &jobs, &n));
    CHECK_INT(n, ==, 100);
    pawl_outcome_t outs[100];
    memset(outs, 0, sizeof outs);
    for (size_t i = 0; i < n; i++) {
      outs[i].id = jobs[i]->id;
      outs[i].attempt = jobs[i]->attempt;
      outs[i].kind = PAWL_OUT_SUCCEEDED;
    }
    CHECK_OK(pawl_finish(p, outs, n, NULL));
    pawl_jobs_free(jobs, n);
  }
  fl_clock_ms += 3600000;
  /* The first sweep reads them all: the control. */
  PGconn *mine = pawl__store_postgres_conn(p->store);
  long long before = fl_running_read(mine, reader);
  size_t got = 0;
  CHECK_OK(pawl_recover(p, &got));
  CHECK_INT(got, ==, 0);
  long long first = fl_running_read(mine, reader) - before;
  if (first < 1000)
    unit_fail(__FILE__, __LINE__, "the first sweep read %lld entries (1,000 "
                                  "dead ones at least)", first);
  fl_clock_ms += 15000;
  pawl_id_t id;
  CHECK_OK(pawl_enqueue(p, "t", "{}", NULL, &id, NULL));
  pawl_job_t **jobs = NULL;
  size_t n = 0;
  CHECK_OK(pawl_claim(p, NULL, 1, &jobs, &n));
  CHECK_INT(n, ==, 1);
  before = fl_running_read(mine, reader);
  CHECK_OK(pawl_heartbeat(p, &got));
  CHECK_INT(got, ==, 1);
  long long beat = fl_running_read(mine, reader) - before;
  before = fl_running_read(mine, reader);
  CHECK_OK(pawl_recover(p, &got));
  CHECK_INT(got, ==, 0);
  long long sweep = fl_running_read(mine, reader) - before;
  printf("running index entries read: %lld by a heartbeat, %lld by a sweep\n",
         beat, sweep);
  if (beat > 20 || sweep > 20)
    unit_fail(__FILE__, __LINE__,
              "running index entries read: %lld by a heartbeat, %lld by a "
              "sweep (at most 20 each: 1,000 dead entries lie before them)",
              beat, sweep);
  pawl_jobs_free(jobs, n);
  pgtest_exec(pin, "ROLLBACK");
  PQfinish(pin);
  PQfinish(reader);
  pawl_close(p);
}
