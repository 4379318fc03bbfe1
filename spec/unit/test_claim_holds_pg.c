/* test_claim_holds_pg.c: on PostgreSQL, no statement on the claim path
 * walks the jobs that cannot run now (schema/postgres/V017__claim_holds.sql).
 *
 * The table is filled with HELD rows of every kind a claim must not look
 * at: jobs behind a key whose head runs, is blocked, is paused, or waits
 * for its retry; jobs due tomorrow at a higher priority than today's;
 * jobs waiting on dependencies; jobs of a paused queue; jobs of a resource
 * whose permits are all in use. A few free jobs are due. Each statement of
 * the claim path then runs under EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)
 * in a transaction rolled back, with the planner's custom and generic
 * plans, and fails the test when
 *  - a plan node of it removed more rows by a filter than a claim takes
 *    (a walk over held rows that a filter throws away, the old claims'
 *    shape: pawl_ordering_free() called on every row of a key), or
 *  - it touched more buffers than a walk of held rows would leave it (the
 *    count includes what functions called from the statement read, which
 *    no plan shows).
 * Both bounds are far below what one walk over the HELD rows costs, and
 * far above what a claim of FREE jobs does, so the test does not depend on
 * the machine or on the planner's exact choices. */
#include "pawl.h"
#include "pg_sql.h"
#include "pg_undo.h"
#include "pgtest.h"
#include "unit.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { HELD = 3000, FREE = 20 };

/* The claim's first step, run to settle every key the fill logged. */
#define SETTLE "SELECT pawl_claim_prepare(now(), 100000)"

/* Most rows a plan node may drop by its filter, and most buffers a
 * statement may touch. A walk over one kind of HELD rows drops HELD rows
 * and touches at least HELD / 60 heap pages plus its index pages. */
#define MAX_REMOVED 50
#define MAX_BUFFERS 400

/* The fill: every kind of hold, in the columns the store writes at
 * enqueue; the holds come from the schema's triggers and the claim's first
 * step (SETTLE), as for jobs the store enqueued. */
static void fill(PGconn *c) {
#define JOB_COLS                                                             \
  "INSERT INTO pawl_jobs (id, type, queue, state, paused_from, priority, "   \
  "rank, payload, run_at, max_attempts, created_at, updated_at, "            \
  "ordering_key, ordering_seq, resource, lease_owner, lease_expires) "
  /* A key's head in `state` (from `paused_from`), then HELD jobs behind. */
  static const struct {
    const char *key;
    int state, paused_from;
    const char *run_at;
  } heads[] = {
      {"k-running", 1, -1, "now()"},
      {"k-blocked", 6, -1, "now()"},
      {"k-paused", 5, 0, "now()"},
      {"k-retrying", 0, -1, "now() + interval '1 hour'"},
  };
  char sql[2048];
  for (size_t i = 0; i < sizeof heads / sizeof heads[0]; i++) {
    snprintf(sql, sizeof sql,
             JOB_COLS "SELECT gen_random_uuid(), 't', 'q', %d, %s, 0, "
             "pawl_rank(0, %s, 0), '{}', %s, 25, now(), now(), '%s', "
             "nextval('pawl_ordering_seq'), NULL, %s, %s",
             heads[i].state,
             heads[i].paused_from < 0 ? "NULL" : "0::smallint",
             heads[i].run_at, heads[i].run_at, heads[i].key,
             heads[i].state == 1 ? "'node-x'" : "NULL",
             heads[i].state == 1 ? "now() + interval '1 hour'" : "NULL");
    pgtest_exec(c, sql);
    snprintf(sql, sizeof sql,
             JOB_COLS "SELECT gen_random_uuid(), 't', 'q', 0, NULL, 0, "
             "pawl_rank(0, now() - interval '1 minute', 0), '{}', now() - "
             "interval '1 minute', 25, now(), now(), '%s', "
             "nextval('pawl_ordering_seq'), NULL, NULL, NULL FROM "
             "generate_series(1, %d)",
             heads[i].key, HELD);
    pgtest_exec(c, sql);
  }
  /* Due tomorrow, ranked above today's jobs. */
  snprintf(sql, sizeof sql,
           JOB_COLS "SELECT gen_random_uuid(), 't', 'q', 0, NULL, 9, "
           "pawl_rank(9, now() + interval '1 day', 0), '{}', now() + "
           "interval '1 day', 25, now(), now(), NULL, NULL, NULL, NULL, NULL "
           "FROM generate_series(1, %d)",
           HELD);
  pgtest_exec(c, sql);
  /* Waiting on dependencies (blocked). */
  snprintf(sql, sizeof sql,
           JOB_COLS "SELECT gen_random_uuid(), 't', 'q', 6, NULL, 5, "
           "pawl_rank(5, now(), 0), '{}', now(), 25, now(), now(), NULL, "
           "NULL, NULL, NULL, NULL FROM generate_series(1, %d)",
           HELD);
  pgtest_exec(c, sql);
  /* A paused queue's due jobs, ranked above the free ones. */
  pgtest_exec(c, "INSERT INTO pawl_queues (name, paused, updated_at) VALUES "
                 "('paused', true, now())");
  snprintf(sql, sizeof sql,
           JOB_COLS "SELECT gen_random_uuid(), 't', 'paused', 0, NULL, 5, "
           "pawl_rank(5, now(), 0), '{}', now(), 25, now(), now(), NULL, "
           "NULL, NULL, NULL, NULL FROM generate_series(1, %d)",
           HELD);
  pgtest_exec(c, sql);
  /* A resource with its one permit in use, and its due jobs. */
  pgtest_exec(c, "INSERT INTO pawl_limits (name, max_running, updated_at) "
                 "VALUES ('smtp', 1, now())");
  snprintf(sql, sizeof sql,
           JOB_COLS "SELECT gen_random_uuid(), 't', 'q', CASE WHEN i = 0 "
           "THEN 1 ELSE 0 END, NULL, 5, pawl_rank(5, now(), 0), '{}', now(), "
           "25, now(), now(), NULL, NULL, 'smtp', NULL, now() + "
           "interval '1 hour' FROM generate_series(0, %d) AS i",
           HELD);
  pgtest_exec(c, sql);
  /* The free jobs, due, in two queues. */
  snprintf(sql, sizeof sql,
           JOB_COLS "SELECT gen_random_uuid(), 't', CASE WHEN i %% 2 = 0 "
           "THEN 'q' ELSE 'q2' END, 0, NULL, 0, pawl_rank(0, now() - "
           "interval '1 minute', 0), '{}', now() - interval '1 minute', 25, "
           "now(), now(), NULL, NULL, NULL, NULL, NULL FROM "
           "generate_series(1, %d) AS i",
           FREE);
  pgtest_exec(c, sql);
#undef JOB_COLS
  /* What the claim's first step does before every claim: settles the
   * keys the inserts logged. */
  pgtest_exec(c, SETTLE);
  pgtest_exec(c, "VACUUM ANALYZE pawl_jobs");
}

/* Fails unless the EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) of `run` (an
 * EXECUTE of a prepared statement) stays within the bounds above. */
static void check(PGconn *c, const char *mode, const char *what,
                  const char *run) {
  char sql[1024];
  pgtest_exec(c, "BEGIN");
  snprintf(sql, sizeof sql, "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) %s", run);
  PGresult *r = PQexec(c, sql);
  if (PQresultStatus(r) != PGRES_TUPLES_OK)
    unit_fail(__FILE__, __LINE__, "%s: %s", sql, PQerrorMessage(c));
  char *plan = strdup(PQgetvalue(r, 0, 0));
  PQclear(r);
  pgtest_exec(c, "ROLLBACK");
  const char *v[1] = {plan};
  /* Every plan node: the most rows one removed by a filter (a join
   * filter, an index recheck), and the statement's buffers. */
  r = PQexecParams(
      c,
      "SELECT coalesce(max(greatest((n->>'Rows Removed by Filter')::bigint, "
      "(n->>'Rows Removed by Join Filter')::bigint, (n->>'Rows Removed by "
      "Index Recheck')::bigint)), 0), (SELECT (p->>'Shared Hit Blocks')::"
      "bigint + (p->>'Shared Read Blocks')::bigint FROM (SELECT $1::jsonb"
      "->0->'Plan' AS p) AS t) FROM jsonb_path_query($1::jsonb, 'strict "
      "$.**') AS n WHERE jsonb_typeof(n) = 'object' AND n ? 'Node Type'",
      1, NULL, v, NULL, NULL, 0);
  if (PQresultStatus(r) != PGRES_TUPLES_OK)
    unit_fail(__FILE__, __LINE__, "reading the plan: %s", PQerrorMessage(c));
  long long removed = atoll(PQgetvalue(r, 0, 0));
  long long buffers = atoll(PQgetvalue(r, 0, 1));
  PQclear(r);
  if (removed > MAX_REMOVED || buffers > MAX_BUFFERS)
    unit_fail(__FILE__, __LINE__,
              "%s, %s: %lld rows removed by a filter (at most %d), %lld "
              "buffers (at most %d): it walks held jobs. Plan:\n%s",
              mode, what, removed, MAX_REMOVED, buffers, MAX_BUFFERS, plan);
  free(plan);
}

#define TOKEN "'018f0000-0000-7000-8000-000000000001'"

void test_pg_claim_holds_plans(void) {
  const char *url = pgtest_db_url("claim_holds");
  pawl_options_t o;
  pawl_options_init(&o);
  o.db = url;
  pawl_t *p = NULL;
  char err[512];
  if (pawl_open(&p, &o, err, sizeof err))
    unit_fail(__FILE__, __LINE__, "pawl_open: %s", err);
  pawl_close(p);
  PGconn *c = pgtest_connect(url);
  fill(c);
  /* Sanity: the free jobs are claimable, the held ones are there. */
  CHECK_INT(pgtest_int(c, "SELECT count(*) FROM pawl_jobs WHERE state = 0"),
            >, 7 * HELD);

  /* Each statement the store runs in the state it runs it in: phase 0
   * with the queue paused and the resource full (limits: the claim picks
   * by lanes), 1 with the limit gone (the one-statement claim, by lanes
   * while the queue is paused), 2 with the queue resumed too (the plain
   * claim; the pick under limits that finds nothing full). */
  static const struct {
    int phase;
    const char *name, *sql, *run;
  } stmts[] = {
      {0, "prepare", PG_SQL_CLAIM_PREPARE, "EXECUTE s(NULL, 1000)"},
      {0, "pick by lanes", PG_SQL_CLAIM_LIM_LANES,
       "EXECUTE s(NULL, '{smtp}', '{}', 10)"},
      {0, "pick by lanes, one queue", PG_SQL_CLAIM_LIM_LANES_QUEUE,
       "EXECUTE s(NULL, '{smtp}', '{}', 10, 'q')"},
      {0, "pick by lanes, queues", PG_SQL_CLAIM_LIM_LANES_QUEUES,
       "EXECUTE s(NULL, '{smtp}', '{}', 10, '{q,q2,paused}')"},
      {0, "pick by lanes, a queue limit full", PG_SQL_CLAIM_LIM_LANES,
       "EXECUTE s(NULL, '{smtp}', '{q}', 10)"},
      {0, "next due", PG_SQL_NEXT_DUE, "EXECUTE s"},
      {0, "next due, one queue", PG_SQL_NEXT_DUE_QUEUE, "EXECUTE s('q')"},
      {0, "next due, queues", PG_SQL_NEXT_DUE_QUEUES,
       "EXECUTE s('{q,q2,paused}')"},
      {0, "next due under limits", PG_SQL_NEXT_DUE_LIM,
       "EXECUTE s(NULL, '{smtp}', '{}')"},
      {0, "next due of a resource", PG_SQL_NEXT_DUE_LIM_RES,
       "EXECUTE s('other', NULL)"},
      {0, "next due of a queue limit", PG_SQL_NEXT_DUE_LIM_QUEUE,
       "EXECUTE s('q')"},
      {1, "claim by lanes", PG_SQL_CLAIM_LANES,
       "EXECUTE s(NULL, 'n', " TOKEN ", 1000, 10, 2)"},
      {1, "claim by lanes, one queue", PG_SQL_CLAIM_LANES_QUEUE,
       "EXECUTE s(NULL, 'n', " TOKEN ", 1000, 10, 'q', 2)"},
      {1, "claim by lanes, queues", PG_SQL_CLAIM_LANES_QUEUES,
       "EXECUTE s(NULL, 'n', " TOKEN ", 1000, 10, '{q,q2,paused}', 2)"},
      {1, "next due", PG_SQL_NEXT_DUE, "EXECUTE s"},
      {2, "claim", PG_SQL_CLAIM, "EXECUTE s(NULL, 'n', " TOKEN ", 1000, 10, 2)"},
      {2, "claim one queue", PG_SQL_CLAIM_QUEUE,
       "EXECUTE s(NULL, 'n', " TOKEN ", 1000, 10, 'q', 2)"},
      {2, "claim queues (by lanes)", PG_SQL_CLAIM_LANES_QUEUES,
       "EXECUTE s(NULL, 'n', " TOKEN ", 1000, 10, '{q,q2}', 2)"},
      {2, "pick", PG_SQL_CLAIM_LIM_PICK, "EXECUTE s(NULL, '{}', '{}', 10)"},
      {2, "pick, one queue", PG_SQL_CLAIM_LIM_PICK_QUEUE,
       "EXECUTE s(NULL, '{}', '{}', 10, 'q')"},
      {2, "pick, queues (by lanes)", PG_SQL_CLAIM_LIM_LANES_QUEUES,
       "EXECUTE s(NULL, '{}', '{}', 10, '{q,q2}')"},
      {2, "next due", PG_SQL_NEXT_DUE, "EXECUTE s"},
  };
  static const char *const phases[3] = {
      NULL, "DELETE FROM pawl_limits",
      "UPDATE pawl_queues SET paused = false"};
  static const char *const modes[2] = {"force_custom_plan",
                                       "force_generic_plan"};
  char sql[16384], what[200];
  for (int ph = 0; ph < 3; ph++) {
    if (phases[ph]) pgtest_exec(c, phases[ph]);
    for (int m = 0; m < 2; m++) {
      snprintf(sql, sizeof sql, "SET plan_cache_mode = %s", modes[m]);
      pgtest_exec(c, sql);
      for (size_t i = 0; i < sizeof stmts / sizeof stmts[0]; i++) {
        if (stmts[i].phase != ph) continue;
        snprintf(sql, sizeof sql, "PREPARE s AS %s", stmts[i].sql);
        pgtest_exec(c, sql);
        snprintf(what, sizeof what, "phase %d, %s", ph, stmts[i].name);
        check(c, modes[m], what, stmts[i].run);
        pgtest_exec(c, "DEALLOCATE s");
      }
    }
  }
  PQfinish(c);
}

/* ---- as an attacker: nodes racing on keys, a claimer killed ----------- */

enum { RK_KEYS = 4, RK_PER_KEY = 60, RK_FREE = 40, RK_THREADS = 4 };
enum { RK_JOBS = RK_KEYS * RK_PER_KEY + RK_FREE };

static pawl_id_t rk_ids[RK_JOBS];
static _Atomic int rk_busy[RK_KEYS];     /* a node holds a job of the key */
static _Atomic int rk_next[RK_KEYS];     /* the index the key runs next */
static _Atomic int rk_failures;

/* Job i: key i % RK_KEYS, its (i / RK_KEYS)-th; the last RK_FREE have no
 * key. -1 for a job without a key. */
static int rk_key(int i) { return i < RK_KEYS * RK_PER_KEY ? i % RK_KEYS : -1; }

static int rk_find(const pawl_id_t *id) {
  for (int i = 0; i < RK_JOBS; i++)
    if (!memcmp(rk_ids[i].bytes, id->bytes, 16)) return i;
  return -1;
}

/* A node: claims batches of 3 and ends each job; every 7th job of a key
 * fails its first attempt and is retried at once, so a key's line also
 * goes running -> pending -> running. Checks, with flags in memory set
 * after the claim committed and cleared before the outcome is written:
 * no two nodes hold a job of one key at once, and a key's jobs start in
 * enqueue order, a retried job again before the next. */
static void *rk_node(void *arg) {
  pawl_t *p = arg;
  for (;;) {
    pawl_job_t **jobs = NULL;
    size_t n = 0;
    if (pawl_claim(p, NULL, 3, &jobs, &n))
      unit_fail(__FILE__, __LINE__, "claim: %s", pawl_errmsg(p));
    if (n == 0) {
      int64_t due = 0;
      if (pawl_next_due(p, NULL, &due))
        unit_fail(__FILE__, __LINE__, "next due: %s", pawl_errmsg(p));
      if (due == 0) break;
      continue;
    }
    pawl_outcome_t outs[3];
    memset(outs, 0, sizeof outs);
    for (size_t j = 0; j < n; j++) {
      int i = rk_find(&jobs[j]->id), k = i < 0 ? -1 : rk_key(i);
      if (i < 0) unit_fail(__FILE__, __LINE__, "claimed an unknown job");
      outs[j].id = jobs[j]->id;
      outs[j].attempt = jobs[j]->attempt;
      outs[j].store_key = jobs[j]->store_key;
      outs[j].kind = PAWL_OUT_SUCCEEDED;
      if (k < 0) continue;
      if (atomic_exchange(&rk_busy[k], 1)) atomic_fetch_add(&rk_failures, 1);
      if (atomic_load(&rk_next[k]) != i / RK_KEYS)
        atomic_fetch_add(&rk_failures, 1);
      if ((i / RK_KEYS) % 7 == 0 && jobs[j]->attempt == 1) {
        outs[j].kind = PAWL_OUT_RETRY;
        outs[j].error = "once";
        outs[j].run_at = 0;
      } else {
        atomic_fetch_add(&rk_next[k], 1);
      }
      atomic_store(&rk_busy[k], 0);
    }
    if (pawl_finish(p, outs, n, NULL))
      unit_fail(__FILE__, __LINE__, "finish: %s", pawl_errmsg(p));
    pawl_jobs_free(jobs, n);
  }
  return NULL;
}

void test_pg_claim_holds_race_threads(void) {
  const char *url = pgtest_url("claim_holds_race");
  pawl_t *nodes[RK_THREADS];
  for (int t = 0; t < RK_THREADS; t++) {
    pawl_options_t o;
    pawl_options_init(&o);
    o.db = url;
    char node[16], err[512];
    snprintf(node, sizeof node, "node-%d", t);
    o.node_id = node;
    if (pawl_open(&nodes[t], &o, err, sizeof err))
      unit_fail(__FILE__, __LINE__, "pawl_open: %s", err);
  }
  static const char *const keys[RK_KEYS] = {"a", "b", "c", "d"};
  for (int i = 0; i < RK_JOBS; i++) {
    pawl_enqueue_opts_t o;
    pawl_enqueue_opts_init(&o);
    o.max_attempts = 3;
    if (rk_key(i) >= 0) o.ordering_key = keys[rk_key(i)];
    if (pawl_enqueue(nodes[i % RK_THREADS], "t", "{}", &o, &rk_ids[i], NULL))
      unit_fail(__FILE__, __LINE__, "enqueue: %s",
                pawl_errmsg(nodes[i % RK_THREADS]));
  }
  pthread_t th[RK_THREADS];
  for (int t = 0; t < RK_THREADS; t++)
    CHECK_INT(pthread_create(&th[t], NULL, rk_node, nodes[t]), ==, 0);
  for (int t = 0; t < RK_THREADS; t++) pthread_join(th[t], NULL);
  CHECK_INT(atomic_load(&rk_failures), ==, 0);
  for (int k = 0; k < RK_KEYS; k++)
    CHECK_INT(atomic_load(&rk_next[k]), ==, RK_PER_KEY);
  PGconn *c = pgtest_connect(url);
  CHECK_INT(pgtest_int(c, "SELECT count(*) FROM pawl_jobs WHERE state = 2"),
            ==, RK_JOBS);
  CHECK_INT(pgtest_int(c, "SELECT count(*) FROM pawl_key_dirty"), ==, 0);
  PQfinish(c);
  for (int t = 0; t < RK_THREADS; t++) pawl_close(nodes[t]);
}

/* A claimer that dies in the middle of its claim's first step, or of the
 * claim itself (its connection cut, its transaction rolled back), holds
 * nothing afterwards: while it lives, another node takes nothing of the
 * key (and sees the key's change still to settle: next_due says "now");
 * once it is gone, the other node takes the key's next job. */
static size_t kill_claim(pawl_t *p, pawl_job_t ***jobs) {
  size_t n = 0;
  if (pawl_claim(p, NULL, 10, jobs, &n))
    unit_fail(__FILE__, __LINE__, "claim: %s", pawl_errmsg(p));
  return n;
}

static void kill_backend(PGconn *admin, PGconn *victim) {
  char sql[128];
  snprintf(sql, sizeof sql, "SELECT pg_terminate_backend(%d)::int",
           PQbackendPID(victim));
  CHECK_INT(pgtest_int(admin, sql), ==, 1);
  /* The backend rolls back and lets go of its locks after the call
   * returns: wait until it is gone (a hang guard bounds the wait). */
  snprintf(sql, sizeof sql,
           "SELECT count(*) FROM pg_stat_activity WHERE pid = %d",
           PQbackendPID(victim));
  while (pgtest_int(admin, sql) != 0) pgtest_exec(admin, "SELECT pg_sleep(0.01)");
  PQfinish(victim);
}

void test_pg_claim_holds_killed_mid_claim(void) {
  const char *url = pgtest_url("claim_holds_kill");
  pawl_options_t o;
  pawl_options_init(&o);
  o.db = url;
  pawl_t *p = NULL;
  char err[512];
  if (pawl_open(&p, &o, err, sizeof err))
    unit_fail(__FILE__, __LINE__, "pawl_open: %s", err);
  pawl_enqueue_opts_t eo;
  pawl_enqueue_opts_init(&eo);
  eo.ordering_key = "k";
  pawl_id_t ids[3];
  for (int i = 0; i < 3; i++)
    if (pawl_enqueue(p, "t", "{}", &eo, &ids[i], NULL))
      unit_fail(__FILE__, __LINE__, "enqueue: %s", pawl_errmsg(p));
  PGconn *admin = pgtest_connect(url);

  for (int round = 0; round < 2; round++) {
    /* The head runs and ends: its key is logged. */
    pawl_job_t **jobs = NULL;
    CHECK_INT(kill_claim(p, &jobs), ==, 1);
    CHECK(!memcmp(jobs[0]->id.bytes, ids[round].bytes, 16));
    pawl_outcome_t out = {.id = jobs[0]->id, .attempt = jobs[0]->attempt,
                          .kind = PAWL_OUT_SUCCEEDED,
                          .store_key = jobs[0]->store_key};
    CHECK_OK(pawl_finish(p, &out, 1, NULL));
    pawl_jobs_free(jobs, 1);
    /* Another claimer starts and dies mid-way: round 0 in the first step
     * (the key settled, not committed), round 1 in the claim statement
     * (the next job taken, not committed). */
    PGconn *victim = pgtest_connect(url);
    pgtest_exec(victim, "BEGIN");
    pgtest_exec(victim, "SELECT pawl_claim_prepare(now(), 1000)");
    if (round == 1) {
      pgtest_exec(victim, "COMMIT");
      pgtest_exec(victim, "BEGIN");
      CHECK_INT(pgtest_int(victim,
                           "WITH c AS (UPDATE pawl_jobs SET state = 1 WHERE "
                           "id = (SELECT id FROM pawl_jobs WHERE state = 0 "
                           "AND NOT ordering_held AND ordering_key = 'k' FOR "
                           "UPDATE SKIP LOCKED) RETURNING 1) SELECT count(*) "
                           "FROM c"),
                ==, 1);
    }
    CHECK_INT(kill_claim(p, &jobs), ==, 0);
    if (round == 0) {
      int64_t due = -1;
      CHECK_OK(pawl_next_due(p, NULL, &due));
      CHECK(due > 0);
    }
    kill_backend(admin, victim);
    CHECK_INT(kill_claim(p, &jobs), ==, 1);
    CHECK(!memcmp(jobs[0]->id.bytes, ids[round + 1].bytes, 16));
    out = (pawl_outcome_t){.id = jobs[0]->id, .attempt = jobs[0]->attempt,
                           .kind = PAWL_OUT_RETRY, .error = "again",
                           .store_key = jobs[0]->store_key};
    /* Back in line at its place: the next claim takes it again. */
    CHECK_OK(pawl_finish(p, &out, 1, NULL));
    pawl_jobs_free(jobs, 1);
    CHECK_INT(kill_claim(p, &jobs), ==, 1);
    CHECK(!memcmp(jobs[0]->id.bytes, ids[round + 1].bytes, 16));
    /* Put it back as it was for the next round: pending, its key's head. */
    out = (pawl_outcome_t){.id = jobs[0]->id, .attempt = jobs[0]->attempt,
                           .kind = PAWL_OUT_RETRY, .error = "again",
                           .store_key = jobs[0]->store_key};
    CHECK_OK(pawl_finish(p, &out, 1, NULL));
    pawl_jobs_free(jobs, 1);
  }
  PQfinish(admin);
  pawl_close(p);
}

/* ---- the migration ------------------------------------------------------ */

/* A database from before V017 with jobs in every position: the migration
 * computes the holds of the rows already there, and the claim then takes
 * exactly what it took before. */
void test_pg_claim_holds_migration(void) {
  const char *url = pgtest_url("claim_holds_mig");
  char copy[1024];
  snprintf(copy, sizeof copy, "%s", url);
  pawl_options_t o;
  pawl_options_init(&o);
  o.db = copy;
  pawl_t *p = NULL;
  char err[512];
  if (pawl_open(&p, &o, err, sizeof err))
    unit_fail(__FILE__, __LINE__, "pawl_open: %s", err);
  pawl_close(p);
  PGconn *c = pgtest_connect(copy);
  pgtest_exec(c, PG_UNDO_V020 PG_UNDO_V019 PG_UNDO_V018 PG_UNDO_V017);
  /* Key r: its head running, two behind. Key b: its head blocked, one
   * behind. Key f: one due job, free. A job due in an hour, one due now. */
  pgtest_exec(
      c,
      "INSERT INTO pawl_jobs (id, type, queue, state, priority, rank, "
      "payload, run_at, max_attempts, created_at, updated_at, ordering_key, "
      "ordering_seq, lease_owner, lease_expires) SELECT gen_random_uuid(), "
      "'t', 'default', s, 0, pawl_rank(0, r, 0), '{}', r, 3, now(), now(), "
      "k, CASE WHEN k IS NULL THEN NULL ELSE nextval('pawl_ordering_seq') "
      "END, CASE WHEN s = 1 THEN 'n' END, CASE WHEN s = 1 THEN now() + "
      "interval '1 hour' END FROM (VALUES (1, 'r', now()), (0, 'r', now()), "
      "(0, 'r', now()), (6, 'b', now()), (0, 'b', now()), (0, 'f', now()), "
      "(0, NULL, now() + interval '1 hour'), (0, NULL, now())) AS v(s, k, r) "
      "ORDER BY k, s DESC");
  if (pawl_open(&p, &o, err, sizeof err))
    unit_fail(__FILE__, __LINE__, "pawl_open (migrating): %s", err);
  CHECK_INT(pgtest_int(c, "SELECT count(*) FROM pawl_jobs WHERE state = 0 "
                          "AND ordering_held"),
            ==, 3);
  CHECK_INT(pgtest_int(c, "SELECT count(*) FROM pawl_jobs WHERE state = 0 "
                          "AND ordering_held AND ordering_key = 'f'"),
            ==, 0);
  CHECK_INT(pgtest_int(c, "SELECT count(*) FROM pawl_jobs WHERE time_held"),
            ==, 1);
  pawl_job_t **jobs = NULL;
  size_t n = 0;
  CHECK_OK(pawl_claim(p, NULL, 10, &jobs, &n));
  CHECK_INT(n, ==, 2); /* key f's job and the keyless one due now */
  for (size_t i = 0; i < n; i++)
    CHECK(!jobs[i]->ordering_key || !strcmp(jobs[i]->ordering_key, "f"));
  pawl_jobs_free(jobs, n);
  int64_t due = 0;
  CHECK_OK(pawl_next_due(p, NULL, &due));
  CHECK(due > pawl_now(p) + 30 * 60 * 1000); /* the job in an hour */
  PQfinish(c);
  pawl_close(p);
}
