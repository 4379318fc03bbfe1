/* test_ordering_pg.c: what only PostgreSQL has of per-key ordering: the
 * claim takes a transaction-level advisory lock on each key it considers
 * (pawl_ordering_free(), schema/postgres/V006__ordering.sql), so that a
 * claim whose snapshot predates another node's claim of the same key
 * cannot start a second job of it. Here a plain connection holds a key's
 * lock, as a claim on another node would, and the claim passes that key
 * by (and only that key) until it is released. */
#include "pawl.h"
#include "pgtest.h"
#include "unit.h"

static pawl_id_t enq(pawl_t *p, const char *key) {
  pawl_enqueue_opts_t o;
  pawl_enqueue_opts_init(&o);
  o.ordering_key = key;
  pawl_id_t id;
  if (pawl_enqueue(p, "t", "{}", &o, &id, NULL))
    unit_fail(__FILE__, __LINE__, "enqueue: %s", pawl_errmsg(p));
  return id;
}

static size_t claim(pawl_t *p, pawl_job_t ***out) {
  size_t n = 0;
  if (pawl_claim(p, NULL, 10, out, &n))
    unit_fail(__FILE__, __LINE__, "claim: %s", pawl_errmsg(p));
  return n;
}

void test_store_pg_ordering_key_lock(void) {
  const char *url = pgtest_url("ordering_lock");
  pawl_options_t o;
  pawl_options_init(&o);
  o.db = url;
  pawl_t *p = NULL;
  char err[512];
  if (pawl_open(&p, &o, err, sizeof err))
    unit_fail(__FILE__, __LINE__, "pawl_open: %s", err);
  pawl_id_t held = enq(p, "held"), other = enq(p, "other"), none = enq(p, NULL);

  PGconn *c = pgtest_connect(url);
  pgtest_exec(c, "BEGIN");
  pgtest_exec(c, "SELECT pg_advisory_xact_lock(1885435756, "
                 "hashtext(current_schema() || chr(31) || 'held'))");
  pawl_job_t **jobs = NULL;
  size_t n = claim(p, &jobs);
  CHECK_INT(n, ==, 2);
  for (size_t i = 0; i < n; i++) {
    CHECK(memcmp(jobs[i]->id.bytes, held.bytes, 16) != 0);
    CHECK(memcmp(jobs[i]->id.bytes, other.bytes, 16) == 0 ||
          memcmp(jobs[i]->id.bytes, none.bytes, 16) == 0);
  }
  pawl_jobs_free(jobs, n);
  pgtest_exec(c, "COMMIT");
  n = claim(p, &jobs);
  CHECK_INT(n, ==, 1);
  CHECK(memcmp(jobs[0]->id.bytes, held.bytes, 16) == 0);
  pawl_jobs_free(jobs, n);
  /* The claim's own lock went with its transaction: another connection
   * can take it now. */
  CHECK_INT(pgtest_int(c, "SELECT pg_try_advisory_xact_lock(1885435756, "
                          "hashtext(current_schema() || chr(31) || "
                          "'held'))::int"), ==, 1);
  PQfinish(c);
  pawl_close(p);
}

/* Advisory locks belong to the whole database: a claim in another pawl
 * schema of the same database holding its lock on key "k" must not make
 * this schema's claim pass its own "k" by. */
void test_store_pg_ordering_lock_per_schema(void) {
  char url_a[1024], url_b[1024];
  snprintf(url_a, sizeof url_a, "%s", pgtest_url("ordering_schema_a"));
  snprintf(url_b, sizeof url_b, "%s", pgtest_url("ordering_schema_b"));
  pawl_t *a = NULL, *b = NULL;
  pawl_options_t o;
  char err[512];
  pawl_options_init(&o);
  o.db = url_a;
  if (pawl_open(&a, &o, err, sizeof err))
    unit_fail(__FILE__, __LINE__, "pawl_open: %s", err);
  o.db = url_b; /* migrates schema b */
  if (pawl_open(&b, &o, err, sizeof err))
    unit_fail(__FILE__, __LINE__, "pawl_open: %s", err);
  pawl_id_t id = enq(a, "k");
  /* Schema b's claim of "k", mid-transaction: its lock is held. */
  PGconn *c = pgtest_connect(url_b);
  pgtest_exec(c, "BEGIN");
  CHECK_INT(pgtest_int(c, "SELECT pawl_ordering_free('k', 0, now())::int"),
            ==, 1);
  pawl_job_t **jobs = NULL;
  size_t n = claim(a, &jobs);
  CHECK_INT(n, ==, 1);
  CHECK(n == 1 && memcmp(jobs[0]->id.bytes, id.bytes, 16) == 0);
  pawl_jobs_free(jobs, n);
  pgtest_exec(c, "COMMIT");
  PQfinish(c);
  pawl_close(b);
  pawl_close(a);
}
