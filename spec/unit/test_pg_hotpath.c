/* test_pg_hotpath.c: on PostgreSQL, the claim path keeps its cheap plan
 * whatever the planner believes, and its first step does no work when it
 * has nothing to do.
 *
 *  - A claim walks the claim's index in claim order and stops at its
 *    limit, also when the planner thinks an index walk is dear: with
 *    statistics that say few rows are pending (a burst of enqueues since
 *    the last analyze), it used to read every pending row another way and
 *    sort them, 10-100 ms a claim, and a node slowed to a quarter of its
 *    speed. The test makes an index walk look dear to the planner of the
 *    store's own sessions (cpu_index_tuple_cost, set on the test's
 *    database) and checks, by the server's counters of the claim's
 *    indexes, that the claims walked them.
 *  - The claim's first step (pawl_claim_prepare()) with nothing held by
 *    time and no key logged writes nothing: it takes no write lock on the
 *    job table or the key log (it used to run an UPDATE and a DELETE that
 *    found no row, planned afresh at each call). With work to do it still
 *    does it: a due row held by time loses its hold, a logged key is
 *    settled, and the caller's clock decides what is due.
 *  - A heartbeat never waits for a row another transaction holds, so it
 *    cannot deadlock with the node's own finishes.
 *  - The store's sessions never compile a statement to machine code (JIT),
 *    also after a reconnect: a misjudged estimate put statements that run
 *    in a millisecond over jit_above_cost, 300 ms of compiling each. */
#include "handle.h"
#include "pawl.h"
#include "pgtest.h"
#include "unit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Waits (up to 30 s: an upper bound for "the counter moved", not a
 * measure) until `sql` returns at least `want`; returns its last value.
 * A backend's counters reach the server's statistics once it has been
 * idle for a moment (at most a second on PostgreSQL 15). */
static long long wait_at_least(PGconn *c, const char *sql, long long want) {
  struct timespec t0, now, nap = {0, 20 * 1000 * 1000};
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    long long v = pgtest_int(c, sql);
    if (v >= want) return v;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec - t0.tv_sec > 30) return v;
    nanosleep(&nap, NULL);
  }
}

/* How often an index of pawl_jobs was scanned, by the server's counters. */
static long long idx_scans(PGconn *c, const char *index) {
  char sql[256];
  snprintf(sql, sizeof sql,
           "SELECT coalesce(idx_scan, 0) FROM pg_stat_user_indexes WHERE "
           "schemaname = current_schema() AND indexrelname = '%s'",
           index);
  return pgtest_int(c, sql);
}

#define UPDATED                                                              \
  "SELECT coalesce(n_tup_upd, 0) FROM pg_stat_user_tables WHERE schemaname " \
  "= current_schema() AND relname = 'pawl_jobs'"

enum { CP_JOBS = 3000, CP_TAKE = 10, CP_ROUNDS = 7 };

/* Claims CP_TAKE jobs of `queue` (NULL: any queue) and checks that they
 * are the next ones in claim order (ids[] is the enqueue order, which is
 * the claim order of jobs of one priority). */
static void claim_next(pawl_t *p, const char *queue, const pawl_id_t *ids,
                       size_t *taken) {
  pawl_claim_opts_t co;
  memset(&co, 0, sizeof co);
  const char *const q[1] = {queue};
  co.queues = queue ? q : NULL;
  co.nqueues = queue ? 1 : 0;
  pawl_job_t **jobs = NULL;
  size_t n = 0;
  if (pawl_claim(p, &co, CP_TAKE, &jobs, &n))
    unit_fail(__FILE__, __LINE__, "claim: %s", pawl_errmsg(p));
  CHECK_INT(n, ==, CP_TAKE);
  for (size_t i = 0; i < n; i++)
    if (memcmp(jobs[i]->id.bytes, ids[*taken + i].bytes, 16) != 0)
      unit_fail(__FILE__, __LINE__,
                "claim %s: job %zu is not the next in claim order",
                queue ? queue : "(any queue)", i);
  pawl_jobs_free(jobs, n);
  *taken += n;
}

/* A handle on `url`; fails the test if it cannot open. */
static pawl_t *open_url(const char *url) {
  pawl_options_t o;
  pawl_options_init(&o);
  o.db = url;
  pawl_t *p = NULL;
  char err[512];
  if (pawl_open(&p, &o, err, sizeof err))
    unit_fail(__FILE__, __LINE__, "pawl_open: %s", err);
  return p;
}

/* A database of the test's own (pgtest_db_url(name), its URL copied into
 * url[1024]) whose every session runs with `setting` ("name = value"),
 * and a handle opened on it. */
static pawl_t *open_with(const char *name, const char *setting, char *url) {
  snprintf(url, 1024, "%s", pgtest_db_url(name));
  PGconn *c = pgtest_connect(url);
  char sql[256];
  snprintf(sql, sizeof sql, "ALTER DATABASE %s SET %s", pgtest_schema(),
           setting);
  pgtest_exec(c, sql);
  PQfinish(c);
  return open_url(url);
}

void test_pg_claim_walks_index_misjudged(void) {
  char own_url[1024];
  /* Every session of the store on this database misjudges index walks. */
  pawl_t *p = open_with("claim_plan", "cpu_index_tuple_cost = 100000",
                        own_url);
  PGconn *c = pgtest_connect(own_url);
  /* The planner of this session too: the setting is the database's. */
  CHECK_INT(pgtest_int(c, "SELECT current_setting('cpu_index_tuple_cost')"
                          "::float8::bigint"),
            ==, 100000);

  pawl_enqueue_opts_t eo;
  pawl_enqueue_opts_init(&eo);
  eo.queue = "q";
  static pawl_id_t ids[CP_JOBS];
  pawl_enqueue_item_t items[1000];
  for (int i = 0; i < 1000; i++) items[i] = (pawl_enqueue_item_t){"t", NULL, &eo};
  for (int b = 0; b < CP_JOBS / 1000; b++)
    if (pawl_enqueue_many(p, items, 1000, &ids[b * 1000], NULL))
      unit_fail(__FILE__, __LINE__, "enqueue: %s", pawl_errmsg(p));

  long long updated = pgtest_int(c, UPDATED);
  long long by_queue = idx_scans(c, "pawl_jobs_ready_queue");
  long long by_any = idx_scans(c, "pawl_jobs_ready");
  /* One queue (the queue's claim index) and any queue (the claim index),
   * CP_ROUNDS times each: past the fifth the sessions may keep a generic
   * plan. */
  size_t taken = 0;
  for (int i = 0; i < 2 * CP_ROUNDS; i++)
    claim_next(p, i % 2 ? NULL : "q", ids, &taken);
  /* The claims' counters are in once their updates are (a backend sends
   * its counters after a while idle). */
  updated += (long long)taken;
  CHECK_INT(wait_at_least(c, UPDATED, updated), >=, updated);
  long long queue_walks = idx_scans(c, "pawl_jobs_ready_queue") - by_queue;
  long long any_walks = idx_scans(c, "pawl_jobs_ready") - by_any;
  if (queue_walks < CP_ROUNDS || any_walks < CP_ROUNDS)
    unit_fail(__FILE__, __LINE__,
              "of %d claims of one queue %lld walked pawl_jobs_ready_queue, "
              "of %d of any queue %lld walked pawl_jobs_ready: the others "
              "read the pending rows another way and sorted them",
              CP_ROUNDS, queue_walks, CP_ROUNDS, any_walks);
  PQfinish(c);
  pawl_close(p);
}

/* ---- the claim's first step with nothing to do ------------------------- */

/* Write locks the first step took, in a transaction rolled back: on the
 * job table and the key log. `now` is the clock passed to it. */
static long long prepare_write_locks(PGconn *c, const char *now) {
  char sql[256];
  pgtest_exec(c, "BEGIN");
  snprintf(sql, sizeof sql, "SELECT pawl_claim_prepare(%s, 1000)", now);
  pgtest_exec(c, sql);
  long long n = pgtest_int(
      c,
      "SELECT count(*) FROM pg_locks WHERE pid = pg_backend_pid() AND mode "
      "= 'RowExclusiveLock' AND relation IN ('pawl_jobs'::regclass, "
      "'pawl_key_dirty'::regclass)");
  pgtest_exec(c, "COMMIT");
  return n;
}

/* Blocks of the schema's own tables and indexes that the first step
 * reads (what the functions it calls read included), with nothing to do.
 * Counted by the server's per-transaction block counters of those
 * relations: the buffers of a whole statement would also count the
 * catalog pages a backend reads when its caches are reset, which happens
 * when other tests on the server create and drop databases (1,135 of
 * them once, for a probe of a few blocks). */
static long long prepare_buffers(PGconn *c) {
  static const char blocks[] =
      "SELECT coalesce(sum(pg_stat_get_xact_blocks_fetched(c.oid)), 0) FROM "
      "pg_class c WHERE c.relnamespace = current_schema()::regnamespace";
  pgtest_exec(c, "BEGIN");
  long long before = pgtest_int(c, blocks);
  pgtest_exec(c, "SELECT pawl_claim_prepare(now(), 1000)");
  long long n = pgtest_int(c, blocks) - before;
  pgtest_exec(c, "ROLLBACK");
  return n;
}

#define PLAIN_JOBS                                                           \
  "INSERT INTO pawl_jobs (id, type, queue, state, priority, rank, payload, " \
  "run_at, max_attempts, created_at, updated_at, ordering_key, "             \
  "ordering_seq) "

void test_pg_prepare_idle_writes_nothing(void) {
  const char *url = pgtest_url("prepare_idle");
  pawl_close(open_url(url));
  PGconn *c = pgtest_connect(url);

  /* The statistics stay as the empty table had them (a burst of enqueues
   * that no analyze has seen yet). */
  pgtest_exec(c, "ALTER TABLE pawl_jobs SET (autovacuum_enabled = false)");
  /* An empty table, then due jobs without holds: nothing to do. */
  CHECK_INT(prepare_write_locks(c, "now()"), ==, 0);
  pgtest_exec(c, PLAIN_JOBS
              "SELECT gen_random_uuid(), 't', 'q', 0, 0, pawl_rank(0, now(), "
              "0), '{}', now(), 25, now(), now(), NULL, NULL FROM "
              "generate_series(1, 500)");
  CHECK_INT(prepare_write_locks(c, "now()"), ==, 0);
  /* 20,000 more: asking whether a held row is due reads the held rows'
   * index, not the table (a scan would stop at its first match, which is
   * how the planner prices an EXISTS). */
  pgtest_exec(c, PLAIN_JOBS
              "SELECT gen_random_uuid(), 't', 'q', 0, 0, pawl_rank(0, now(), "
              "0), '{}', now(), 25, now(), now(), NULL, NULL FROM "
              "generate_series(1, 20000)");
  CHECK_INT(prepare_buffers(c), <=, 50);
  /* Held by time but not due yet (an hour ahead): still nothing. */
  pgtest_exec(c, PLAIN_JOBS
              "SELECT gen_random_uuid(), 't', 'q', 0, 0, pawl_rank(0, now() + "
              "interval '1 hour', 0), '{}', now() + interval '1 hour', 25, "
              "now(), now(), NULL, NULL FROM generate_series(1, 50)");
  CHECK_INT(pgtest_int(c, "SELECT count(*) FROM pawl_jobs WHERE time_held"),
            ==, 50);
  CHECK_INT(prepare_write_locks(c, "now()"), ==, 0);
  CHECK_INT(pgtest_int(c, "SELECT count(*) FROM pawl_jobs WHERE time_held"),
            ==, 50);

  /* Work to do is still done. The caller's clock, two hours on: the held
   * rows are due and lose their hold. */
  prepare_write_locks(c, "now() + interval '2 hours'");
  CHECK_INT(pgtest_int(c, "SELECT count(*) FROM pawl_jobs WHERE time_held"),
            ==, 0);
  /* A keyed job logs its key; the next first step settles the key and
   * empties the log, then has nothing to do again. */
  pgtest_exec(c, PLAIN_JOBS
              "SELECT gen_random_uuid(), 't', 'q', 0, 0, pawl_rank(0, now(), "
              "0), '{}', now(), 25, now(), now(), 'k', "
              "nextval('pawl_ordering_seq') FROM generate_series(1, 3)");
  CHECK_INT(pgtest_int(c, "SELECT count(*) FROM pawl_key_dirty"), >, 0);
  prepare_write_locks(c, "now()");
  CHECK_INT(pgtest_int(c, "SELECT count(*) FROM pawl_key_dirty"), ==, 0);
  /* The key's head may go; the two behind it wait for it. */
  CHECK_INT(pgtest_int(c, "SELECT count(*) FROM pawl_jobs WHERE "
                          "ordering_key = 'k' AND NOT ordering_held"),
            ==, 1);
  CHECK_INT(prepare_write_locks(c, "now()"), ==, 0);
  /* A paused queue is still reported (the claim then goes by lanes). */
  CHECK_INT(pgtest_int(c, "SELECT pawl_claim_prepare(now(), 1000)::int"), ==,
            0);
  pgtest_exec(c, "INSERT INTO pawl_queues (name, paused, updated_at) VALUES "
                 "('q', true, now())");
  CHECK_INT(pgtest_int(c, "SELECT pawl_claim_prepare(now(), 1000)::int"), ==,
            1);
  CHECK_INT(prepare_write_locks(c, "now()"), ==, 0);
  PQfinish(c);
}

/* A heartbeat never waits for a row lock. The node's completer locks the
 * rows of the outcomes it stores in its own order while the poller's
 * heartbeat extends every lease of the node: when each waited for a row
 * the other held, the server broke the tie by failing one of them
 * ("deadlock detected" in the log of a loaded node). Here another
 * session holds one running job's row; the heartbeat extends the others
 * at once and passes over that one, which the next beat extends. The
 * store's sessions give up waiting for a lock after 10 s (an upper
 * bound, set on the test's database): a heartbeat that waited would fail
 * the test with "lock not available", not hang it. */
void test_pg_heartbeat_skips_locked(void) {
  char own_url[1024];
  pawl_t *p = open_with("beat_locked", "lock_timeout = '10s'", own_url);
  PGconn *c = pgtest_connect(own_url);
  char sql[256];
  for (int i = 0; i < 3; i++)
    CHECK_OK(pawl_enqueue(p, "t", "{}", NULL, NULL, NULL));
  pawl_job_t **jobs = NULL;
  size_t n = 0;
  CHECK_OK(pawl_claim(p, NULL, 3, &jobs, &n));
  CHECK_INT(n, ==, 3);
  char id[PAWL_ID_STRLEN];
  pawl_id_format(&jobs[0]->id, id);
  pgtest_exec(c, "BEGIN");
  snprintf(sql, sizeof sql,
           "SELECT 1 FROM pawl_jobs WHERE id = '%s' FOR UPDATE", id);
  pgtest_exec(c, sql);
  size_t beat = 0;
  if (pawl_heartbeat(p, &beat))
    unit_fail(__FILE__, __LINE__, "heartbeat: %s", pawl_errmsg(p));
  CHECK_INT(beat, ==, 2);
  pgtest_exec(c, "ROLLBACK");
  CHECK_OK(pawl_heartbeat(p, &beat));
  CHECK_INT(beat, ==, 3);
  pawl_jobs_free(jobs, n);
  pawl_close(p);
  PQfinish(c);
}

/* ---- no JIT in the store's sessions ------------------------------------ */

/* Weak: a build without PostgreSQL has no such function and runs none of
 * these tests (TEST_ENTRY_PG), so the runner still links there. */
PGconn *pawl__store_postgres_conn(store_t *st) __attribute__((weak));

static char *session_jit(pawl_t *p) {
  PGresult *r = PQexec(pawl__store_postgres_conn(p->store), "SHOW jit");
  if (PQresultStatus(r) != PGRES_TUPLES_OK)
    unit_fail(__FILE__, __LINE__, "SHOW jit: %s", PQresultErrorMessage(r));
  char *v = strdup(PQgetvalue(r, 0, 0));
  PQclear(r);
  return v;
}

void test_pg_session_no_jit(void) {
  const char *url = pgtest_url("no_jit");
  PGconn *c = pgtest_connect(url);
  /* The server's default, which the store's sessions must not keep. */
  PGresult *d = PQexec(c, "SHOW jit");
  CHECK_STR(PQgetvalue(d, 0, 0), "on");
  PQclear(d);
  pawl_t *p = open_url(url);
  char *v = session_jit(p);
  CHECK_STR(v, "off");
  free(v);
  /* The connection cut under the store: the call that finds it gone
   * fails, the next one reconnects, and the new session is set up too. */
  char sql[128];
  snprintf(sql, sizeof sql, "SELECT pg_terminate_backend(%d)::int",
           PQbackendPID(pawl__store_postgres_conn(p->store)));
  CHECK_INT(pgtest_int(c, sql), ==, 1);
  int rc = pawl_enqueue(p, "t", "{}", NULL, NULL, NULL);
  if (rc) rc = pawl_enqueue(p, "t", "{}", NULL, NULL, NULL);
  CHECK_OK(rc);
  v = session_jit(p);
  CHECK_STR(v, "off");
  free(v);
  pawl_close(p);
  PQfinish(c);
}

/* ---- a young table ------------------------------------------------------- */

/* A counter of the statistics (`sql`, read by `reader`) once the store's
 * backend has flushed its own: exact at once, no wait. */
static long long stat_flushed(pawl_t *p, PGconn *reader, const char *sql) {
  pgtest_exec(pawl__store_postgres_conn(p->store),
              "SELECT pg_stat_force_next_flush()");
  pgtest_exec(reader, "SELECT pg_stat_clear_snapshot()");
  return pgtest_int(reader, sql);
}

/* Rows of pawl_jobs read by sequential scans so far. */
static long long seq_rows_read(pawl_t *p, PGconn *reader) {
  return stat_flushed(p, reader,
                      "SELECT coalesce(seq_tup_read, 0) FROM "
                      "pg_stat_user_tables WHERE schemaname = "
                      "current_schema() AND relname = 'pawl_jobs'");
}

enum { YT_ROUNDS = 8, YT_BATCH = 2, YT_GROWN = 20000 };

/* One round: YT_BATCH jobs enqueued, claimed ahead of their start (so
 * that each start is recorded by pawl_begin()), begun, and finished. The
 * rows pawl_jobs lost to sequential scans in the starts and the finish
 * are returned. */
static long long young_round(pawl_t *p, PGconn *reader) {
  pawl_enqueue_item_t items[YT_BATCH];
  for (int i = 0; i < YT_BATCH; i++) items[i] = (pawl_enqueue_item_t){"t", "{}", NULL};
  if (pawl_enqueue_many(p, items, YT_BATCH, NULL, NULL))
    unit_fail(__FILE__, __LINE__, "enqueue: %s", pawl_errmsg(p));
  pawl_claim_opts_t co;
  memset(&co, 0, sizeof co);
  co.defer_start = 1;
  co.prefetch = YT_BATCH;
  pawl_job_t **jobs = NULL;
  size_t n = 0;
  if (pawl_claim(p, &co, YT_BATCH, &jobs, &n))
    unit_fail(__FILE__, __LINE__, "claim: %s", pawl_errmsg(p));
  CHECK_INT(n, ==, YT_BATCH);
  long long before = seq_rows_read(p, reader);
  pawl_outcome_t outs[YT_BATCH];
  memset(outs, 0, sizeof outs);
  for (size_t i = 0; i < n; i++) {
    CHECK_INT(jobs[i]->started_at, ==, 0);
    CHECK_OK(pawl_begin(p, jobs[i]));
    outs[i] = (pawl_outcome_t){.id = jobs[i]->id, .attempt = jobs[i]->attempt,
                               .kind = PAWL_OUT_SUCCEEDED};
  }
  int rcs[YT_BATCH];
  CHECK_OK(pawl_finish(p, outs, n, rcs));
  for (size_t i = 0; i < n; i++) CHECK_OK(rcs[i]);
  pawl_jobs_free(jobs, n);
  return seq_rows_read(p, reader) - before;
}

/* A new schema is young: not analyzed until autovacuum gets to it (here
 * never: it is off for the table). The store's statements that find rows
 * by id make their generic plans at their sixth call, while the table has
 * a few rows; then the table grows. The starts and the finish must still
 * look their rows up by key: a plan made on the small table read the
 * whole table for every id (stores/postgres/pg_sql.h, PG_SQL_BY_ID_PLAN). */
void test_pg_young_table_lookups(void) {
  char url[1024];
  snprintf(url, sizeof url, "%s", pgtest_db_url("young_table"));
  pawl_t *p = open_url(url);
  PGconn *c = pgtest_connect(url);
  pgtest_exec(c, "ALTER TABLE pawl_jobs SET (autovacuum_enabled = false)");
  for (int i = 0; i < YT_ROUNDS; i++) young_round(p, c);
  pgtest_exec(c,
              "INSERT INTO pawl_jobs (id, type, queue, state, priority, rank, "
              "payload, run_at, max_attempts, created_at, updated_at, "
              "finished_at) SELECT gen_random_uuid(), 't', 'default', 2, 0, 0, "
              "'{}', now(), 1, now(), now(), now() FROM generate_series(1, "
              "20000)"); /* YT_GROWN */
  CHECK_INT(pgtest_int(c, "SELECT reltuples::bigint FROM pg_class WHERE "
                          "oid = 'pawl_jobs'::regclass"),
            <, 0); /* never analyzed */
  long long read = young_round(p, c);
  if (read >= YT_GROWN)
    unit_fail(__FILE__, __LINE__,
              "starting and finishing %d jobs read %lld rows of pawl_jobs by "
              "sequential scans: a plan made when the table was small",
              YT_BATCH, read);
  PQfinish(c);
  pawl_close(p);
}

/* ---- jobs claimed ahead ---------------------------------------------------- */

/* Rows of pawl_jobs updated so far. */
static long long rows_updated(pawl_t *p, PGconn *reader) {
  return stat_flushed(p, reader, UPDATED);
}

/* A claim of 10 with 7 of them ahead of a free worker writes each row
 * once: the claim itself leaves the 7 not started (PG_SQL_CLAIM_STARTED),
 * where a second statement used to write them again. The first 3 in
 * claim order start now, the database and the jobs handed out agree. */
void test_pg_claim_ahead_one_write(void) {
  const char *url = pgtest_url("claim_ahead");
  pawl_t *p = open_url(url);
  PGconn *c = pgtest_connect(url);
  pawl_enqueue_item_t items[10];
  for (int i = 0; i < 10; i++) items[i] = (pawl_enqueue_item_t){"t", "{}", NULL};
  if (pawl_enqueue_many(p, items, 10, NULL, NULL))
    unit_fail(__FILE__, __LINE__, "enqueue: %s", pawl_errmsg(p));
  long long before = rows_updated(p, c);
  pawl_claim_opts_t co;
  memset(&co, 0, sizeof co);
  co.defer_start = 1;
  co.prefetch = 7;
  pawl_job_t **jobs = NULL;
  size_t n = 0;
  if (pawl_claim(p, &co, 10, &jobs, &n))
    unit_fail(__FILE__, __LINE__, "claim: %s", pawl_errmsg(p));
  CHECK_INT(n, ==, 10);
  CHECK_INT(rows_updated(p, c) - before, ==, 10);
  for (size_t i = 0; i < n; i++) {
    if (i < 3) CHECK(jobs[i]->started_at != 0);
    else CHECK_INT(jobs[i]->started_at, ==, 0);
    char id[PAWL_ID_STRLEN], sql[200];
    pawl_id_format(&jobs[i]->id, id);
    snprintf(sql, sizeof sql,
             "SELECT (started_at IS NULL)::int FROM pawl_jobs WHERE id = '%s'",
             id);
    CHECK_INT(pgtest_int(c, sql), ==, i < 3 ? 0 : 1);
  }
  pawl_jobs_free(jobs, n);
  PQfinish(c);
  pawl_close(p);
}
