/* pg_bench.c: the PostgreSQL store against a plain-SQL ceiling.
 *
 *   pawl_pg_bench URL [--jobs N] [--runs R]
 *
 * A program, not a test: it prints numbers and judges nothing. URL is a
 * pawl database URL of a PostgreSQL server (postgres://... or
 * postgres:CONNINFO); every run works in a schema of its own
 * (pawl_pgbench_PID_rN), dropped afterwards. Scenarios, N jobs each:
 *
 *   bulk enqueue   pawl_enqueue_many, 1,000 per call (one binary COPY),
 *                  against a hand-written text COPY of the same rows;
 *   single         pawl_enqueue, one per transaction, against a plain
 *                  one-row INSERT per transaction into the same table;
 *   claim+finish   pawl_claim of 100, then pawl_finish of 100 successes,
 *                  against the ceiling: PG_SQL_CLAIM then
 *                  PG_SQL_SUCCEED_MANY from a C loop (the store's exact
 *                  SQL: pg_sql.h, never retyped here), and against the
 *                  same two statements sent in one pipeline, completing
 *                  one batch in the round trip that claims the next.
 *
 * The tables show the median and range of jobs per second over --runs. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "pawl.h"
#include "handle.h"
#include "pg_sql.h"

PGconn *pawl__store_postgres_conn(store_t *st);

#define BATCH 100
#define SINGLE_MAX 5000

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, const char *msg) {
  fprintf(stderr, "pawl_pg_bench: %s: %s\n", what, msg);
  exit(1);
}

static void exec_ok(PGconn *c, const char *sql) {
  PGresult *r = PQexec(c, sql);
  if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK)
    die(sql, PQerrorMessage(c));
  PQclear(r);
}

/* A pawl URL for `schema` on the server of `url`. */
static void schema_url(const char *url, const char *schema, char *out,
                       size_t len) {
  const char *conninfo = strncmp(url, "postgres:", 9) == 0 &&
                                 strncmp(url, "postgres://", 11) != 0
                             ? url + 9
                             : url;
  PQconninfoOption *o = PQconninfoParse(conninfo, NULL);
  if (!o) die("bad URL", url);
  size_t n = (size_t)snprintf(out, len, "postgres:");
  for (PQconninfoOption *k = o; k->keyword; k++)
    if (k->val && strcmp(k->keyword, "options") != 0)
      n += (size_t)snprintf(out + n, len - n, "%s='%s' ", k->keyword, k->val);
  snprintf(out + n, len - n, "options=-csearch_path=%s", schema);
  PQconninfoFree(o);
}

static pawl_t *open_handle(const char *url) {
  pawl_options_t o;
  pawl_options_init(&o);
  o.db = url;
  o.node_id = "bench";
  pawl_t *p = NULL;
  char err[512];
  if (pawl_open(&p, &o, err, sizeof err)) die("open", err);
  return p;
}

/* Ceiling of bulk enqueue: what one would write by hand, a COPY in text
 * format of 1,000 rows per transaction (the server fills in the times from
 * the input 'now'), against the store's binary COPY. */
static double ceiling_bulk(PGconn *c, long n) {
  const char *sql =
      "COPY pawl_jobs (id, type, queue, state, priority, rank, payload, "
      "params, tags, run_at, max_attempts, timeout_s, correlation_id, "
      "enqueued_by, created_at, updated_at) FROM STDIN";
  char *rows = malloc(1000 * 128);
  if (!rows) die("ceiling", "out of memory");
  double t = 0;
  for (long done = 0; done < n; done += 1000) {
    char *p = rows;
    for (int i = 0; i < 1000; i++) {
      pawl_id_t id;
      pawl_id_new(&id);
      pawl_id_format(&id, p);
      p += 36;
      p += sprintf(p, "\tnoop\tdefault\t0\t0\t0\t{}\t\\N\t[]\tnow\t25\t0\t"
                      "\\N\tbench\tnow\tnow\n");
    }
    double t0 = now_s();
    PGresult *r = PQexec(c, sql);
    if (PQresultStatus(r) != PGRES_COPY_IN) die("copy", PQerrorMessage(c));
    PQclear(r);
    if (PQputCopyData(c, rows, (int)(p - rows)) != 1 || PQputCopyEnd(c, NULL) != 1)
      die("copy", PQerrorMessage(c));
    while ((r = PQgetResult(c)) != NULL) {
      if (PQresultStatus(r) != PGRES_COMMAND_OK) die("copy", PQerrorMessage(c));
      PQclear(r);
    }
    t += now_s() - t0;
  }
  free(rows);
  return (double)n / t;
}

/* A plain one-row INSERT per transaction into the jobs table. */
static double plain_single(PGconn *c, long n) {
  const char *sql =
      "INSERT INTO pawl_jobs (id, type, queue, state, priority, rank, "
      "payload, tags, run_at, max_attempts, created_at, updated_at) VALUES "
      "($1::uuid, 'noop', 'plain', 0, 0, 0, '{}', '[]', now(), 25, now(), "
      "now())";
  double t0 = now_s();
  for (long i = 0; i < n; i++) {
    pawl_id_t id;
    char text[PAWL_ID_STRLEN];
    pawl_id_new(&id);
    pawl_id_format(&id, text);
    const char *v[1] = {text};
    PGresult *r = PQexecParams(c, sql, 1, NULL, v, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_COMMAND_OK) die("plain insert", PQerrorMessage(c));
    PQclear(r);
  }
  return (double)n / (now_s() - t0);
}

/* Ids and attempts of a claim's result as the arrays SUCCEED_MANY takes. */
static void success_arrays(PGresult *r, char **ids, char **atts, char **res) {
  int n = PQntuples(r);
  *ids = malloc((size_t)n * 38 + 2);
  *atts = malloc((size_t)n * 12 + 2);
  *res = malloc((size_t)n * 5 + 2);
  char *a = *ids, *b = *atts, *c = *res;
  *a++ = '{', *b++ = '{', *c++ = '{';
  for (int i = 0; i < n; i++) {
    if (i) *a++ = ',', *b++ = ',', *c++ = ',';
    memcpy(a, PQgetvalue(r, i, 0), 36);
    a += 36;
    b += sprintf(b, "%s", PQgetvalue(r, i, 10));
    memcpy(c, "NULL", 4);
    c += 4;
  }
  *a++ = '}', *b++ = '}', *c++ = '}';
  *a = *b = *c = 0;
}

/* Ceiling of claim+finish: claim 100, then complete them, one round trip
 * each (`pipelined` 0), or completing each batch in the pipeline that
 * claims the next (`pipelined` 1). Returns jobs/s. */
static double ceiling_claim(PGconn *c, long n, int pipelined) {
  char token[PAWL_ID_STRLEN];
  pawl_id_t tok;
  pawl_id_new(&tok);
  pawl_id_format(&tok, token);
  /* $6 NULL: every job claimed starts now (none is claimed ahead). */
  const char *cv[6] = {NULL, "bench", token, "30000", "100", NULL};
  PGresult *pr = PQprepare(c, "claim", PG_SQL_CLAIM, 0, NULL);
  PQclear(pr);
  pr = PQprepare(c, "succeed", PG_SQL_SUCCEED_MANY, 0, NULL);
  PQclear(pr);
  long done = 0;
  double t0 = now_s();
  PGresult *claimed = PQexecPrepared(c, "claim", 6, cv, NULL, NULL, 0);
  while (PQresultStatus(claimed) == PGRES_TUPLES_OK && PQntuples(claimed) > 0 &&
         done < n) {
    char *ids, *atts, *res;
    success_arrays(claimed, &ids, &atts, &res);
    done += PQntuples(claimed);
    PQclear(claimed);
    /* $6 and $7, the bodies' starts and ends: not measured here. */
    const char *sv[7] = {NULL, ids, atts, res, token, NULL, NULL};
    if (!pipelined) {
      PGresult *r = PQexecPrepared(c, "succeed", 7, sv, NULL, NULL, 0);
      if (PQresultStatus(r) != PGRES_TUPLES_OK) die("succeed", PQerrorMessage(c));
      PQclear(r);
      claimed = PQexecPrepared(c, "claim", 6, cv, NULL, NULL, 0);
    } else {
      /* One round trip: finish this batch, claim the next; two syncs, so
       * each is its own transaction, as in the host. */
      PQenterPipelineMode(c);
      PQsendQueryPrepared(c, "succeed", 7, sv, NULL, NULL, 0);
      PQpipelineSync(c);
      PQsendQueryPrepared(c, "claim", 6, cv, NULL, NULL, 0);
      PQpipelineSync(c);
      PGresult *r = PQgetResult(c);
      if (PQresultStatus(r) != PGRES_TUPLES_OK) die("succeed", PQerrorMessage(c));
      PQclear(r);
      PQclear(PQgetResult(c)); /* NULL */
      PQclear(PQgetResult(c)); /* sync */
      claimed = PQgetResult(c);
      PQclear(PQgetResult(c)); /* NULL */
      PQclear(PQgetResult(c)); /* sync */
      PQexitPipelineMode(c);
    }
    free(ids);
    free(atts);
    free(res);
  }
  PQclear(claimed);
  return (double)done / (now_s() - t0);
}

/* The store's claim+finish: pawl_claim 100, pawl_finish 100. */
static double store_claim(pawl_t *p, long n) {
  long done = 0;
  pawl_outcome_t outs[BATCH];
  double t0 = now_s();
  while (done < n) {
    pawl_job_t **jobs;
    size_t got;
    if (pawl_claim(p, NULL, BATCH, &jobs, &got)) die("claim", pawl_errmsg(p));
    if (got == 0) break;
    for (size_t i = 0; i < got; i++)
      outs[i] = (pawl_outcome_t){.id = jobs[i]->id, .attempt = jobs[i]->attempt,
                                 .kind = PAWL_OUT_SUCCEEDED,
                                 .store_key = jobs[i]->store_key};
    if (pawl_finish(p, outs, got, NULL)) die("finish", pawl_errmsg(p));
    pawl_jobs_free(jobs, got);
    done += (long)got;
  }
  return (double)done / (now_s() - t0);
}

static double store_bulk(pawl_t *p, long n) {
  pawl_enqueue_item_t items[1000];
  pawl_id_t ids[1000];
  int status[1000];
  for (int i = 0; i < 1000; i++) items[i] = (pawl_enqueue_item_t){"noop", "{}", NULL};
  double t0 = now_s();
  for (long done = 0; done < n; done += 1000)
    if (pawl_enqueue_many(p, items, 1000, ids, status)) die("enqueue", pawl_errmsg(p));
  return (double)n / (now_s() - t0);
}

static double store_single(pawl_t *p, long n) {
  pawl_enqueue_opts_t o;
  pawl_enqueue_opts_init(&o);
  o.queue = "single";
  double t0 = now_s();
  for (long i = 0; i < n; i++) {
    pawl_id_t id;
    if (pawl_enqueue(p, "noop", "{}", &o, &id, NULL)) die("enqueue", pawl_errmsg(p));
  }
  return (double)n / (now_s() - t0);
}

enum { S_BULK, C_BULK, S_SINGLE, C_SINGLE, S_CLAIM, C_CLAIM, C_PIPE, NFIG };
static const char *const fig_names[NFIG] = {
    "bulk enqueue, store (1000/call)",  "bulk enqueue, plain text COPY",
    "single enqueue, store",            "single, plain 1-row INSERT/txn",
    "claim 100 + finish, store",        "claim 100 + finish, ceiling",
    "claim + finish, ceiling pipelined"};

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: pawl_pg_bench URL [--jobs N] [--runs R]\n");
    return 2;
  }
  const char *url = argv[1];
  long n = 100000, runs = 5;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--jobs") == 0) n = atol(argv[i + 1]);
    else if (strcmp(argv[i], "--runs") == 0) runs = atol(argv[i + 1]);
  }
  n = n / 1000 * 1000;
  if (n < 1000 || runs < 1) die("arguments", "--jobs >= 1000, --runs >= 1");
  long single = n < SINGLE_MAX ? n : SINGLE_MAX;
  double *f = calloc((size_t)(runs * NFIG), sizeof *f);
  printf("pawl_pg_bench: %ld jobs, %ld single enqueues, %ld runs\n", n, single,
         runs);
  for (long r = 0; r < runs; r++) {
    char schema[64], surl[2048];
    snprintf(schema, sizeof schema, "pawl_pgbench_%d_r%ld", (int)getpid(), r + 1);
    /* Store side in one schema, ceiling side in another: same starting
     * point for both. */
    for (int side = 0; side < 2; side++) {
      char sname[80];
      snprintf(sname, sizeof sname, "%s_%s", schema, side ? "sql" : "store");
      pawl_t *admin = open_handle(url);
      PGconn *c = pawl__store_postgres_conn(admin->store);
      char sql[200];
      snprintf(sql, sizeof sql, "CREATE SCHEMA %s", sname);
      exec_ok(c, sql);
      pawl_close(admin);
      schema_url(url, sname, surl, sizeof surl);
      pawl_t *p = open_handle(surl);
      PGconn *pc = pawl__store_postgres_conn(p->store);
      double *fr = &f[r * NFIG];
      if (side == 0) {
        fr[S_BULK] = store_bulk(p, n);
        fr[S_SINGLE] = store_single(p, single);
        exec_ok(pc, "VACUUM ANALYZE pawl_jobs");
        fr[S_CLAIM] = store_claim(p, n + single);
      } else {
        fr[C_BULK] = ceiling_bulk(pc, n);
        fr[C_SINGLE] = plain_single(pc, single);
        exec_ok(pc, "VACUUM ANALYZE pawl_jobs");
        fr[C_CLAIM] = ceiling_claim(pc, n / 2, 0);
        fr[C_PIPE] = ceiling_claim(pc, n, 1);
      }
      snprintf(sql, sizeof sql, "DROP SCHEMA %s CASCADE", sname);
      exec_ok(pc, sql);
      pawl_close(p);
    }
    printf("run %ld/%ld:", r + 1, runs);
    for (int k = 0; k < NFIG; k++) printf(" %.0f", f[r * NFIG + k]);
    printf("\n");
    fflush(stdout);
  }
  printf("\n| %-36s | %9s | %9s | %9s |\n", "jobs/s", "median", "min", "max");
  printf("|--------------------------------------|-----------|-----------|-----------|\n");
  double *v = calloc((size_t)runs, sizeof *v);
  for (int k = 0; k < NFIG; k++) {
    for (long r = 0; r < runs; r++) v[r] = f[r * NFIG + k];
    qsort(v, (size_t)runs, sizeof *v, cmp_d);
    printf("| %-36s | %9.0f | %9.0f | %9.0f |\n", fig_names[k], v[runs / 2],
           v[0], v[runs - 1]);
  }
  free(v);
  free(f);
  return 0;
}
