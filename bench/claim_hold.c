/* claim_hold.c: does a claim cost the same whatever waits behind it?
 *
 *   pawl_claim_hold_bench --store sqlite:PATH | --store postgres:CONNINFO
 *                         [--waiting N] [--jobs M] [--batch B]
 *                         [--budget S] [--kinds a,b,...]
 *
 * For each kind of hold, a fresh database gets N jobs (default 1,000,000)
 * that no claim may take now, held by that one kind, ranked AHEAD of the
 * free jobs where the kind allows (a higher priority), so that a claim
 * which walks held rows walks all of them; then M free jobs (default
 * 10,000) are claimed B at a time (default 10, as a host with ten free
 * workers asks) and each batch completed, and the time of that loop is
 * printed with its ratio to "none" (no job waiting). Kinds:
 *
 *   none                     nothing waits;
 *   key-head-running         N jobs of one ordering key behind its running
 *                            head;
 *   key-head-blocked         ... behind a head blocked on a parent due
 *                            tomorrow;
 *   key-head-failed-waiting  ... behind a head waiting for its retry
 *                            tomorrow;
 *   resource-full            N jobs of a resource whose max_running (1) is
 *                            taken;
 *   rate-used                N jobs of a resource whose rate window (1 a
 *                            day) is used up;
 *   queue-paused             N jobs of a paused queue;
 *   deps                     N jobs blocked on a parent due tomorrow;
 *   future-high-priority     N jobs due in 6 hours at a priority that ranks
 *                            them above today's jobs (rank = priority *
 *                            age boost - run_at, store_rank());
 *   one-key-1M               N jobs of one key, all pending: the claim
 *                            takes its head, one at a time, among the free
 *                            jobs (every job claimed counts towards M);
 *   100k-keys-of-10          N/10 keys of 10 jobs, each key's head
 *                            running.
 *
 * The waiting jobs are enqueued through the store (pawl_enqueue_many, in
 * transactions of 10,000), so every column the store derives is right.
 * A kind that has not finished its M jobs after --budget seconds (default
 * 600) stops there; its line gives the jobs done and the time extrapolated
 * to M ("~"). A program, not a test: it prints numbers and judges nothing
 * (bench/RESULTS.md records figures). SQLite: PATH is deleted and made
 * anew for every kind. PostgreSQL: the jobs and the tables of limits,
 * queues and dependencies are emptied and vacuumed for every kind. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <libpq-fe.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "handle.h"
#include "pawl.h"
#include "pawl_internal.h"

sqlite3 *pawl__store_sqlite_db(store_t *st);
PGconn *pawl__store_postgres_conn(store_t *st);

#define FILL_TX 10000              /* jobs per enqueue transaction */
#define HELD_PRIORITY 5            /* ranks held jobs above the free ones */
#define FUTURE_PRIORITY 100        /* 100 * 15 min of boost > 6 hours */
#define DAY_MS (INT64_C(86400) * 1000)
#define LEASE_MS (INT64_C(6) * 3600 * 1000)

static const char *g_url;
static long g_waiting = 1000000, g_jobs = 10000, g_batch = 10;
static double g_budget = 600;

static double mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(pawl_t *p, const char *what) {
  fprintf(stderr, "pawl_claim_hold_bench: %s: %s\n", what,
          p ? pawl_errmsg(p) : "failed");
  exit(1);
}

static int is_sqlite(void) { return strncmp(g_url, "sqlite:", 7) == 0; }

/* Raw SQL on the store's own connection, for emptying a PostgreSQL
 * database between kinds. Errors are ignored: a table an older schema
 * lacks has nothing to empty. */
static void raw(pawl_t *p, const char *sql) {
  sqlite3 *db = pawl__store_sqlite_db(p->store);
  if (db) {
    sqlite3_exec(db, sql, 0, 0, 0);
    return;
  }
  PQclear(PQexec(pawl__store_postgres_conn(p->store), sql));
}

static pawl_t *open_fresh(void) {
  if (is_sqlite()) {
    const char *path = g_url + 7;
    char side[4096];
    unlink(path);
    snprintf(side, sizeof side, "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", path);
    unlink(side);
  }
  pawl_options_t o;
  pawl_options_init(&o);
  o.db = g_url;
  o.node_id = "bench";
  o.create = 1;
  pawl_t *p = NULL;
  char err[512];
  if (pawl_open(&p, &o, err, sizeof err)) {
    fprintf(stderr, "pawl_claim_hold_bench: open %s: %s\n", g_url, err);
    exit(1);
  }
  if (!is_sqlite()) {
    static const char *const wipe[] = {
        "DELETE FROM pawl_deps",       "DELETE FROM pawl_jobs",
        "DELETE FROM pawl_limits",     "DELETE FROM pawl_queues",
        "DELETE FROM pawl_attempts",   "DELETE FROM pawl_events",
        "DELETE FROM pawl_logs",       "DELETE FROM pawl_throughput",
        "DELETE FROM pawl_idempotency",
        /* V017: the keys the deletes above logged (no such table before). */
        "DELETE FROM pawl_key_dirty", "VACUUM ANALYZE"};
    for (size_t i = 0; i < sizeof wipe / sizeof *wipe; i++) raw(p, wipe[i]);
  }
  return p;
}

/* PostgreSQL inserts jobs with an ordering key one statement each (its
 * ordering_seq comes from a sequence), a round trip per job: a million
 * took ten minutes here. So keyed jobs are filled by one INSERT ... SELECT
 * per 100,000, writing what the store's insert writes (PG_SQL_INSERT: the
 * rank from pawl_rank() with the database's age boost, ordering_seq from
 * pawl_ordering_seq, in enqueue order) and, on a schema that has it
 * (V017), ordering_held = true as PG_SQL_INSERT does for a keyed job: the
 * schema's triggers then derive the rest as for the store's inserts. */
static void fill_pg_keyed(pawl_t *p, const char *type,
                          const pawl_enqueue_opts_t *opts, long n, long keys) {
  PGconn *c = pawl__store_postgres_conn(p->store);
  PGresult *r = PQexec(c, "SELECT count(*) FROM information_schema.columns "
                          "WHERE table_schema = current_schema() AND "
                          "table_name = 'pawl_jobs' AND column_name = "
                          "'ordering_held'");
  int held = PQresultStatus(r) == PGRES_TUPLES_OK && atoi(PQgetvalue(r, 0, 0));
  PQclear(r);
  char sql[2048];
  snprintf(sql, sizeof sql,
           "INSERT INTO pawl_jobs (id, type, queue, state, priority, rank, "
           "payload, run_at, max_attempts, created_at, updated_at, "
           "ordering_key, ordering_seq, resource%s) SELECT "
           "gen_random_uuid(), $1::text, $2::text, 0, $3::int, "
           "pawl_rank($3::int, now(), pawl_queue_boost($2::text, coalesce(("
           "SELECT value::bigint FROM pawl_settings WHERE name = "
           "'age_boost_ms'), 0))), '{}', now(), $4::int, now(), now(), "
           "CASE WHEN $5::bigint > 0 THEN 'k' || ((i + $6::bigint) %% "
           "$5::bigint) ELSE $7::text END, nextval('pawl_ordering_seq'), "
           "$8::text%s FROM generate_series(0, $9::bigint - 1) AS i",
           held ? ", ordering_held" : "", held ? ", true" : "");
  for (long done = 0; done < n;) {
    long k = n - done < 100000 ? n - done : 100000;
    char prio[24], max[24], nk[24], off[24], cnt[24];
    snprintf(prio, sizeof prio, "%d", opts->priority);
    snprintf(max, sizeof max, "%d", opts->max_attempts);
    snprintf(nk, sizeof nk, "%ld", keys);
    snprintf(off, sizeof off, "%ld", done);
    snprintf(cnt, sizeof cnt, "%ld", k);
    const char *v[9] = {type, opts->queue ? opts->queue : "default", prio, max,
                        nk, off, opts->ordering_key, opts->resource, cnt};
    r = PQexecParams(c, sql, 9, NULL, v, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_COMMAND_OK) {
      fprintf(stderr, "pawl_claim_hold_bench: fill: %s", PQerrorMessage(c));
      exit(1);
    }
    PQclear(r);
    done += k;
  }
}

/* Enqueues n jobs of `type` with `opts`, FILL_TX per transaction; with
 * `keys` > 0 each job gets key "k<i % keys>" (the opts' own key
 * otherwise). */
static void fill(pawl_t *p, const char *type, const pawl_enqueue_opts_t *opts,
                 long n, long keys) {
  if (!is_sqlite() && (keys || opts->ordering_key) && !opts->after &&
      opts->delay_ms == 0) {
    fill_pg_keyed(p, type, opts, n, keys);
    return;
  }
  pawl_enqueue_item_t *items = calloc(FILL_TX, sizeof *items);
  pawl_enqueue_opts_t *o = keys ? calloc(FILL_TX, sizeof *o) : NULL;
  char (*names)[32] = keys ? calloc(FILL_TX, sizeof *names) : NULL;
  if (!items || (keys && (!o || !names))) die(NULL, "out of memory");
  for (long done = 0; done < n;) {
    size_t k = (size_t)(n - done < FILL_TX ? n - done : FILL_TX);
    for (size_t i = 0; i < k; i++) {
      items[i] = (pawl_enqueue_item_t){type, "{}", opts};
      if (keys) {
        o[i] = *opts;
        snprintf(names[i], sizeof names[i], "k%ld", (done + (long)i) % keys);
        o[i].ordering_key = names[i];
        items[i].opts = &o[i];
      }
    }
    if (pawl_enqueue_many(p, items, k, NULL, NULL)) die(p, "fill");
    done += (long)k;
  }
  free(items);
  free(o);
  free(names);
}

/* Claims up to `max` jobs and keeps them running (their lease outlasts
 * the run). */
static size_t hold(pawl_t *p, size_t max, pawl_job_t ***jobs) {
  pawl_claim_opts_t c = {.lease_ms = LEASE_MS};
  size_t got = 0;
  *jobs = NULL;
  if (pawl_claim(p, &c, max, jobs, &got)) die(p, "claim a head");
  return got;
}

static pawl_enqueue_opts_t held_opts(void) {
  pawl_enqueue_opts_t o;
  pawl_enqueue_opts_init(&o);
  o.priority = HELD_PRIORITY;
  o.max_attempts = 3;
  return o;
}

/* A job due tomorrow, for the kinds that block on a parent. */
static pawl_id_t future_parent(pawl_t *p) {
  pawl_enqueue_opts_t o;
  pawl_enqueue_opts_init(&o);
  o.delay_ms = DAY_MS;
  pawl_id_t id;
  if (pawl_enqueue(p, "parent", "{}", &o, &id, NULL)) die(p, "parent");
  return id;
}

/* Makes the N waiting jobs of `kind`; 0 for an unknown kind. */
static int setup(pawl_t *p, const char *kind, long n) {
  pawl_enqueue_opts_t o = held_opts();
  if (!strcmp(kind, "none")) return 1;
  if (!strcmp(kind, "key-head-running") || !strcmp(kind, "key-head-blocked") ||
      !strcmp(kind, "key-head-failed-waiting")) {
    o.ordering_key = "the-key";
    pawl_id_t parent;
    if (!strcmp(kind, "key-head-blocked")) {
      parent = future_parent(p);
      pawl_enqueue_opts_t h = o;
      h.after = &parent;
      h.nafter = 1;
      if (pawl_enqueue(p, "held", "{}", &h, NULL, NULL)) die(p, "head");
    } else {
      if (pawl_enqueue(p, "held", "{}", &o, NULL, NULL)) die(p, "head");
      pawl_job_t **jobs;
      if (hold(p, 1, &jobs) != 1) die(NULL, "the head was not claimed");
      if (!strcmp(kind, "key-head-failed-waiting")) {
        pawl_outcome_t out = {.id = jobs[0]->id,
                              .attempt = jobs[0]->attempt,
                              .kind = PAWL_OUT_RETRY,
                              .error = "bench",
                              .run_at = pawl_now(p) + DAY_MS,
                              .store_key = jobs[0]->store_key};
        if (pawl_finish(p, &out, 1, NULL)) die(p, "fail the head");
      }
      pawl_jobs_free(jobs, 1);
    }
    fill(p, "held", &o, n - 1, 0);
    return 1;
  }
  if (!strcmp(kind, "resource-full") || !strcmp(kind, "rate-used")) {
    int rate = !strcmp(kind, "rate-used");
    o.resource = "res";
    if (pawl_limit_set(p, "res", rate ? 0 : 1, rate ? 1 : 0, rate ? DAY_MS : 0))
      die(p, "limit");
    if (pawl_enqueue(p, "held", "{}", &o, NULL, NULL)) die(p, "holder");
    pawl_job_t **jobs;
    if (hold(p, 1, &jobs) != 1) die(NULL, "the limit's first job was not claimed");
    if (rate) {
      pawl_outcome_t out = {.id = jobs[0]->id, .attempt = jobs[0]->attempt,
                            .kind = PAWL_OUT_SUCCEEDED,
                            .store_key = jobs[0]->store_key};
      if (pawl_finish(p, &out, 1, NULL)) die(p, "finish");
    }
    pawl_jobs_free(jobs, 1);
    fill(p, "held", &o, n - 1, 0);
    return 1;
  }
  if (!strcmp(kind, "queue-paused")) {
    o.queue = "held";
    if (pawl_queue_pause(p, "held", "bench", NULL)) die(p, "pause");
    fill(p, "held", &o, n, 0);
    return 1;
  }
  if (!strcmp(kind, "deps")) {
    pawl_id_t parent = future_parent(p);
    o.after = &parent;
    o.nafter = 1;
    fill(p, "held", &o, n - 1, 0);
    return 1;
  }
  if (!strcmp(kind, "future-high-priority")) {
    o.priority = FUTURE_PRIORITY;
    o.delay_ms = 6 * 3600 * 1000;
    fill(p, "held", &o, n, 0);
    return 1;
  }
  if (!strcmp(kind, "one-key-1M")) {
    o.ordering_key = "the-key";
    fill(p, "keyed", &o, n, 0);
    return 1;
  }
  if (!strcmp(kind, "100k-keys-of-10")) {
    long keys = n / 10 > 0 ? n / 10 : 1;
    fill(p, "held", &o, keys, keys);
    for (long held = 0; held < keys;) {
      pawl_job_t **jobs;
      size_t got = hold(p, 1000, &jobs);
      if (!got) die(NULL, "the heads were not all claimed");
      pawl_jobs_free(jobs, got);
      held += (long)got;
    }
    fill(p, "held", &o, n - keys, keys);
    return 1;
  }
  return 0;
}

/* Claims and completes g_jobs jobs, g_batch at a time; *done gets how
 * many within the budget. Returns the seconds taken. */
static double run_free(pawl_t *p, long *done) {
  pawl_claim_opts_t c = {.lease_ms = LEASE_MS};
  pawl_outcome_t *outs = calloc((size_t)g_batch, sizeof *outs);
  if (!outs) die(NULL, "out of memory");
  long n = 0;
  double t0 = mono_s(), t = t0;
  while (n < g_jobs && t - t0 < g_budget) {
    pawl_job_t **jobs = NULL;
    size_t got = 0;
    size_t want = (size_t)(g_jobs - n < g_batch ? g_jobs - n : g_batch);
    if (pawl_claim(p, &c, want, &jobs, &got)) die(p, "claim");
    if (!got) die(NULL, "nothing to claim: a free job was held");
    for (size_t i = 0; i < got; i++) {
      if (strcmp(jobs[i]->type, "free") && strcmp(jobs[i]->type, "keyed"))
        die(NULL, "a held job was claimed");
      outs[i] = (pawl_outcome_t){.id = jobs[i]->id,
                                 .attempt = jobs[i]->attempt,
                                 .kind = PAWL_OUT_SUCCEEDED,
                                 .store_key = jobs[i]->store_key};
    }
    if (pawl_finish(p, outs, got, NULL)) die(p, "finish");
    pawl_jobs_free(jobs, got);
    n += (long)got;
    t = mono_s();
  }
  free(outs);
  *done = n;
  return t - t0;
}

static const char *const all_kinds[] = {
    "none",          "key-head-running", "key-head-blocked",
    "key-head-failed-waiting", "resource-full", "rate-used",
    "queue-paused",  "deps",             "future-high-priority",
    "one-key-1M",    "100k-keys-of-10",  NULL};

static int wanted(const char *kinds, const char *kind) {
  if (!kinds) return 1;
  size_t len = strlen(kind);
  for (const char *s = kinds; (s = strstr(s, kind)) != NULL; s += len)
    if ((s == kinds || s[-1] == ',') && (s[len] == ',' || !s[len])) return 1;
  return 0;
}

static long arg_long(const char *name, const char *v, long lo, long hi) {
  char *end;
  long x = v ? strtol(v, &end, 10) : 0;
  if (!v || *end || x < lo || x > hi) {
    fprintf(stderr, "pawl_claim_hold_bench: %s: %s is not in %ld..%ld\n",
            name, v ? v : "(missing)", lo, hi);
    exit(2);
  }
  return x;
}

int main(int argc, char **argv) {
  const char *kinds = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--store") && v) g_url = v;
    else if (!strcmp(a, "--waiting")) g_waiting = arg_long(a, v, 1, 100000000);
    else if (!strcmp(a, "--jobs")) g_jobs = arg_long(a, v, 1, 100000000);
    else if (!strcmp(a, "--batch")) g_batch = arg_long(a, v, 1, 1000);
    else if (!strcmp(a, "--budget")) g_budget = (double)arg_long(a, v, 1, 86400);
    else if (!strcmp(a, "--kinds") && v) kinds = v;
    else {
      fprintf(stderr,
              "usage: %s --store sqlite:PATH|postgres:CONNINFO [--waiting N] "
              "[--jobs M] [--batch B] [--budget S] [--kinds a,b]\n",
              argv[0]);
      return 2;
    }
    i++;
  }
  if (!g_url) {
    fprintf(stderr, "pawl_claim_hold_bench: --store is required\n");
    return 2;
  }
  for (const char *s = kinds; s && *s;) {
    size_t len = strcspn(s, ",");
    int known = 0;
    for (int k = 0; all_kinds[k]; k++)
      known |= strlen(all_kinds[k]) == len && !strncmp(all_kinds[k], s, len);
    if (!known) {
      fprintf(stderr, "pawl_claim_hold_bench: unknown kind '%.*s'\n", (int)len, s);
      return 2;
    }
    s += len + (s[len] == ',');
  }
  printf("%-24s %10s %10s %8s %s\n", "kind", "waiting", "seconds", "ratio",
         "(store, batch, jobs)");
  double none_s = 0;
  for (int k = 0; all_kinds[k]; k++) {
    const char *kind = all_kinds[k];
    /* "none" is always measured: every ratio is to it. */
    if (k && !wanted(kinds, kind)) continue;
    pawl_t *p = open_fresh();
    long n = k ? g_waiting : 0;
    double f0 = mono_s();
    if (!setup(p, kind, n)) die(NULL, kind);
    pawl_enqueue_opts_t free_opts;
    pawl_enqueue_opts_init(&free_opts);
    free_opts.max_attempts = 3;
    fill(p, "free", &free_opts, g_jobs, 0);
    double fill_s = mono_s() - f0;
    long done;
    double s = run_free(p, &done);
    pawl_close(p);
    double est = done < g_jobs ? s * (double)g_jobs / (double)(done ? done : 1) : s;
    if (!k) none_s = est;
    printf("%-24s %10ld %s%9.2f %7.2fx (%s, %ld, %ld of %ld; fill %.0f s)\n",
           kind, n, done < g_jobs ? "~" : " ", est,
           none_s > 0 ? est / none_s : 0.0, is_sqlite() ? "sqlite" : "postgres",
           g_batch, done, g_jobs, fill_s);
    fflush(stdout);
  }
  return 0;
}
