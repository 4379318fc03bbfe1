/* recurring.c: PostgreSQL store, recurring definitions (store.h,
 * "recurring"). */
#include "pg_int.h"

/* The SQL of the PostgreSQL store's recurring
 * definitions (table pawl_recurring, schema V004). Times cross
 * as epoch milliseconds (pawl_ms, pawl_ts), booleans as integers. */

/* In pawl__store_rec_fill()'s order (stores/store.h). */
#define PG_REC_COLS                                                          \
  "name, expr, tz, misfire, catch_up_limit, type, payload, queue, "          \
  "priority, max_attempts, timeout_s, enabled::int, paused::int, source, "   \
  "script, pawl_ms(next_fire_at), pawl_ms(last_fire_at), last_job_id, "      \
  "pawl_ms(created_at), pawl_ms(updated_at), version, load_error"

/* $1..$16 as pg_rec_params() sets them, $17 now (NULL: the database's). */
#define PG_REC_INSERT                                                        \
  "INSERT INTO pawl_recurring (name, expr, tz, misfire, catch_up_limit, "    \
  "type, payload, queue, priority, max_attempts, timeout_s, enabled, "       \
  "paused, source, script, next_fire_at, created_at, updated_at) VALUES "    \
  "($1::text, $2::text, $3::text, $4::text, $5::int, $6::text, "             \
  "$7::text, $8::text, $9::int, $10::int, $11::int, $12::int <> 0, "        \
  "$13::int <> 0, $14::text, $15::text, pawl_ts($16::bigint), "              \
  "pawl_now($17::bigint), pawl_now($17::bigint)) ON CONFLICT (name) DO "

#define PG_REC_ADD_SQL PG_REC_INSERT "NOTHING"

/* A script's definition: written over a script-born one (enabled again,
 * its load error cleared; paused and the last fire kept), never over an
 * operator's. */
#define PG_REC_PUT_SCRIPT_SQL                                                \
  PG_REC_INSERT                                                              \
  "UPDATE SET expr = excluded.expr, tz = excluded.tz, misfire = "            \
  "excluded.misfire, catch_up_limit = excluded.catch_up_limit, type = "      \
  "excluded.type, payload = excluded.payload, queue = excluded.queue, "      \
  "priority = excluded.priority, max_attempts = excluded.max_attempts, "     \
  "timeout_s = excluded.timeout_s, enabled = true, load_error = NULL, "     \
  "script = "                                                                \
  "excluded.script, next_fire_at = excluded.next_fire_at, updated_at = "     \
  "excluded.updated_at, version = pawl_recurring.version + 1 WHERE "         \
  "pawl_recurring.source = 'script'"

#define PG_REC_GET_SQL                                                       \
  "SELECT " PG_REC_COLS " FROM pawl_recurring WHERE name = $1::text"
#define PG_REC_LIST_SQL                                                      \
  "SELECT " PG_REC_COLS " FROM pawl_recurring ORDER BY name"

/* Every field but created_at, as a compare-and-set on the version $20. */
#define PG_REC_UPDATE_SQL                                                    \
  "UPDATE pawl_recurring SET expr = $2::text, tz = $3::text, misfire = "     \
  "$4::text, catch_up_limit = $5::int, type = $6::text, payload = "           \
  "$7::text, queue = $8::text, priority = $9::int, max_attempts = "         \
  "$10::int, timeout_s = $11::int, enabled = $12::int <> 0, paused = "       \
  "$13::int <> 0, source = $14::text, script = $15::text, next_fire_at = "   \
  "pawl_ts($16::bigint), last_fire_at = pawl_ts($17::bigint), last_job_id "  \
  "= $18::uuid, updated_at = pawl_now($19::bigint), version = version + 1 "  \
  "WHERE name = $1::text AND version = $20::bigint"

#define PG_REC_REMOVE_SQL "DELETE FROM pawl_recurring WHERE name = $1::text"

/* The due ones through the partial index pawl_recurring_due: $1 now (ms),
 * $2 the batch. */
#define PG_REC_DUE_SQL                                                       \
  "SELECT " PG_REC_COLS " FROM pawl_recurring WHERE enabled AND NOT "        \
  "paused AND next_fire_at IS NOT NULL AND next_fire_at <= "                 \
  "pawl_ts($1::bigint) ORDER BY next_fire_at LIMIT $2::int"

/* A tick's batch advances in a fixed number of statements, whatever its
 * size (pawl__pg_rec_advance()): the compare-and-sets, the keys, the jobs' COPY
 * and, only when a definition's last key was seen before, its last job.
 *
 * The compare-and-sets: $1..$5 arrays of the names (sorted), the
 * next_fire_at each was read with, the new next (NULL: none), the last
 * fire (NULL: unchanged) and the last job's id (NULL: unchanged; its key
 * is checked next, and LAST_JOB corrects it when the key was seen before);
 * $6 now. One paused, disabled or advanced meanwhile is not advanced (a
 * row another transaction changed is checked again once that commits:
 * READ COMMITTED). The rows are found through the primary key (= ANY), in
 * name order, as the sorted names come, so two nodes advancing
 * overlapping batches (a tick lock that moved) lock them in the same
 * order. Returns the 1-based position of each definition advanced, and
 * now in ms (for the COPY). */
#define PG_REC_ADVANCE_SQL                                                   \
  "UPDATE pawl_recurring AS r SET next_fire_at = pawl_ts(w.next), "          \
  "last_fire_at = coalesce(pawl_ts(w.last), r.last_fire_at), last_job_id = " \
  "coalesce(w.job, r.last_job_id), updated_at = pawl_now($6::bigint), "      \
  "version = r.version + 1 FROM unnest($1::text[], $2::bigint[], "           \
  "$3::bigint[], $4::bigint[], $5::uuid[]) WITH ORDINALITY AS w(name, "      \
  "expect, next, last, job, i) WHERE r.name = ANY ($1::text[]) AND r.name "  \
  "= w.name AND r.next_fire_at = pawl_ts(w.expect) AND r.enabled AND NOT "   \
  "r.paused RETURNING w.i, pawl_ms(pawl_now($6::bigint))"

/* The idempotency keys of the advanced definitions' jobs: $1 the keys, $2
 * the jobs' ids, $3 now. Returns the 1-based position of each key
 * recorded now (a key seen before makes no job). Inserted in key order:
 * two transactions with common keys wait for each other, never deadlock;
 * a key another transaction holds uncommitted is waited for, then found. */
#define PG_REC_KEYS_SQL                                                      \
  "WITH u AS (SELECT * FROM unnest($1::text[], $2::uuid[]) WITH ORDINALITY " \
  "AS u(key, id, i)), ins AS (INSERT INTO pawl_idempotency (key, job_id, "   \
  "created_at) SELECT key, id, pawl_now($3::bigint) FROM u ORDER BY key ON " \
  "CONFLICT (key) DO NOTHING RETURNING job_id) SELECT u.i FROM u JOIN ins "  \
  "ON ins.job_id = u.id"

/* The definitions $1 whose last job's key $2 was seen before: the job the
 * key names (a statement of its own, so that it sees keys committed while
 * the one above waited for them). The rows are locked by the
 * compare-and-set. */
#define PG_REC_LAST_JOB_SQL                                                  \
  "UPDATE pawl_recurring AS r SET last_job_id = (SELECT p.job_id FROM "      \
  "pawl_idempotency AS p WHERE p.key = u.key) FROM unnest($1::text[], "      \
  "$2::text[]) AS u(name, key) WHERE r.name = u.name"

/* $1 an array of the scripts there are, $2 now. */
#define PG_REC_DISABLE_GONE_SQL                                              \
  "UPDATE pawl_recurring SET enabled = false, updated_at = "                 \
  "pawl_now($2::bigint), version = version + 1 WHERE source = 'script' AND " \
  "enabled AND NOT (script = ANY ($1::text[]))"
/* $1 an array of the scripts that went, $2 now. */
#define PG_REC_DISABLE_LISTED_SQL                                            \
  "UPDATE pawl_recurring SET enabled = false, updated_at = "                 \
  "pawl_now($2::bigint), version = version + 1 WHERE source = 'script' AND " \
  "enabled AND script = ANY ($1::text[])"
/* See SQLITE_REC_LOAD_ERROR. */
#define PG_REC_LOAD_ERROR_SQL                                                \
  "UPDATE pawl_recurring SET load_error = $2::text, updated_at = "           \
  "pawl_now($3::bigint) WHERE source = 'script' AND script = $1::text AND "  \
  "load_error IS DISTINCT FROM $2::text"
/* The SQL of this file's statements, by their ids (pg_int.h,
 * "Statements"). */
#define PG_HERE PG__RECURRING
const char *const pawl__pg_sql_recurring[PG__FLOW - PG__RECURRING] = {
    PG_AT(PG_REC_ADD) = PG_REC_ADD_SQL,
    PG_AT(PG_REC_PUT_SCRIPT) = PG_REC_PUT_SCRIPT_SQL,
    PG_AT(PG_REC_GET) = PG_REC_GET_SQL,
    PG_AT(PG_REC_LIST) = PG_REC_LIST_SQL,
    PG_AT(PG_REC_UPDATE) = PG_REC_UPDATE_SQL,
    PG_AT(PG_REC_REMOVE) = PG_REC_REMOVE_SQL,
    PG_AT(PG_REC_DUE) = PG_REC_DUE_SQL,
    PG_AT(PG_REC_ADVANCE) = PG_REC_ADVANCE_SQL,
    PG_AT(PG_REC_KEYS) = PG_REC_KEYS_SQL,
    PG_AT(PG_REC_LAST_JOB) = PG_REC_LAST_JOB_SQL,
    PG_AT(PG_REC_DISABLE_GONE) = PG_REC_DISABLE_GONE_SQL,
    PG_AT(PG_REC_DISABLE_LISTED) = PG_REC_DISABLE_LISTED_SQL,
    PG_AT(PG_REC_LOAD_ERROR) = PG_REC_LOAD_ERROR_SQL,
};
#undef PG_HERE

/* ---- recurring definitions (store.h, "recurring") ------------------------ */

static void pg_rec_params(pg_params_t *pp, const pawl_recurring_t *d) {
  pp_str(pp, 0, d->name);
  pp_str(pp, 1, d->expr);
  pp_str(pp, 2, d->tz ? d->tz : "UTC");
  pp_str(pp, 3, pawl_misfire_name(d->misfire));
  pp_int(pp, 4, d->catch_up_limit);
  pp_str(pp, 5, d->type);
  pp_str(pp, 6, d->payload ? d->payload : "{}");
  pp_str(pp, 7, d->queue);
  pp_int(pp, 8, d->priority);
  pp_int(pp, 9, d->max_attempts);
  pp_int(pp, 10, d->timeout_s);
  pp_int(pp, 11, d->enabled ? 1 : 0);
  pp_int(pp, 12, d->paused ? 1 : 0);
  pp_str(pp, 13, d->from_script ? "script" : "operator");
  pp_str(pp, 14, d->script);
  pp_opt_int(pp, 15, d->next_fire_at != 0, d->next_fire_at);
}

int pawl__pg_rec_put(store_t *base, const pawl_recurring_t *d, int how,
                     int *done) {
  pg_store_t *s = (pg_store_t *)base;
  pg_params_t pp;
  pg_rec_params(&pp, d);
  pp_now(s, &pp, 16);
  PGresult *res;
  int rc =
      pawl__pg_run(s, how == STORE_REC_SCRIPT ? PG_REC_PUT_SCRIPT : PG_REC_ADD,
                   17, pp.v, &res, "write recurring definition");
  if (rc) return rc;
  *done = pg_changed(res) == 1;
  PQclear(res);
  if (!*done && how == STORE_REC_ADD)
    return pawl__store_fail(base, PAWL_EKEY,
                            "recurring definition \"%s\" already exists",
                            d->name);
  return 0;
}

static int pg_rec_rows(pg_store_t *s, PGresult *res, pawl_recurring_t **out,
                       size_t *n) {
  int rows = PQntuples(res);
  pawl_recurring_t *defs = rows ? pawl__calloc((size_t)rows, sizeof *defs)
                                : NULL;
  if (rows && !defs) {
    PQclear(res);
    return pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
  }
  for (int i = 0; i < rows; i++) {
    store_row_t r = pawl__pg_row(res, i);
    if (pawl__store_rec_fill(&defs[i], &r) != 0) {
      PQclear(res);
      pawl_recurring_free(defs, (size_t)rows);
      return pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
    }
  }
  PQclear(res);
  *out = defs;
  *n = (size_t)rows;
  return 0;
}

int pawl__pg_rec_get(store_t *base, const char *name, pawl_recurring_t **out) {
  pg_store_t *s = (pg_store_t *)base;
  const char *v[1] = {name};
  PGresult *res;
  int rc = pawl__pg_run(s, PG_REC_GET, 1, v, &res, "read recurring definition");
  if (rc) return rc;
  pawl_recurring_t *d = NULL;
  size_t n = 0;
  if ((rc = pg_rec_rows(s, res, &d, &n))) return rc;
  if (n == 0)
    return pawl__store_fail(base, PAWL_ENOTFOUND,
                            "no recurring definition \"%s\"", name);
  *out = d;
  return 0;
}

int pawl__pg_rec_list(store_t *base, pawl_recurring_t **out, size_t *n) {
  pg_store_t *s = (pg_store_t *)base;
  PGresult *res;
  int rc =
      pawl__pg_run(s, PG_REC_LIST, 0, NULL, &res, "list recurring definitions");
  return rc ? rc : pg_rec_rows(s, res, out, n);
}

int pawl__pg_rec_update(store_t *base, const pawl_recurring_t *d,
                        int *changed) {
  pg_store_t *s = (pg_store_t *)base;
  pg_params_t pp;
  pg_rec_params(&pp, d);
  pp_opt_int(&pp, 16, d->last_fire_at != 0, d->last_fire_at);
  pp_id(&pp, 17, d->has_last_job ? &d->last_job_id : NULL);
  pp_now(s, &pp, 18);
  pp_int(&pp, 19, d->version);
  PGresult *res;
  int rc = pawl__pg_run(s, PG_REC_UPDATE, 20, pp.v, &res,
                        "change recurring definition");
  if (rc) return rc;
  *changed = pg_changed(res) == 1;
  PQclear(res);
  return 0;
}

int pawl__pg_rec_remove(store_t *base, const char *name) {
  pg_store_t *s = (pg_store_t *)base;
  const char *v[1] = {name};
  PGresult *res;
  int rc =
      pawl__pg_run(s, PG_REC_REMOVE, 1, v, &res, "remove recurring definition");
  if (rc) return rc;
  long n = pg_changed(res);
  PQclear(res);
  if (n == 0)
    return pawl__store_fail(base, PAWL_ENOTFOUND,
                            "no recurring definition \"%s\"", name);
  return 0;
}

int pawl__pg_rec_due(store_t *base, int64_t now, size_t max,
                     pawl_recurring_t **out, size_t *n) {
  pg_store_t *s = (pg_store_t *)base;
  pg_params_t pp;
  pp_int(&pp, 0, now);
  pp_int(&pp, 1, (int64_t)max);
  PGresult *res;
  int rc = pawl__pg_run(s, PG_REC_DUE, 2, pp.v, &res,
                        "read due recurring definitions");
  return rc ? rc : pg_rec_rows(s, res, out, n);
}

/* Closes array literals; -1 when one ran out of memory. */
static int pg_arr_close(pawl_buf_t **bufs, size_t n) {
  int oom = 0;
  for (size_t i = 0; i < n; i++) {
    arr_end(bufs[i]);
    oom |= bufs[i]->oom;
  }
  return oom ? -1 : 0;
}

static void pg_arr_free(pawl_buf_t **bufs, size_t n) {
  for (size_t i = 0; i < n; i++) pawl__buf_free(bufs[i]);
}

/* A definition of a batch in name order (pg_rec_cas()). */
typedef struct pg_rec_by_name {
  const char *name;
  size_t i;
} pg_rec_by_name_t;

static int pg_rec_name_cmp(const void *x, const void *y) {
  const pg_rec_by_name_t *a = x, *b = y;
  int c = strcmp(a->name, b->name);
  return c ? c : (a->i > b->i) - (a->i < b->i);
}

/* The batch's compare-and-sets in one statement, in name order (see
 * PG_REC_ADVANCE_SQL): sets a[i].advanced, and *now to the transaction's
 * now (or the injected clock's) in ms. Each definition's last job is
 * written as its own, corrected by pg_rec_fix_last() if its key was seen
 * before. */
static int pg_rec_cas(pg_store_t *s, store_rec_advance_t *a, size_t n,
                      int64_t *now) {
  pg_rec_by_name_t *by = pawl__calloc(n, sizeof *by);
  if (!by) return pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
  for (size_t i = 0; i < n; i++) by[i] = (pg_rec_by_name_t){a[i].name, i};
  qsort(by, n, sizeof *by, pg_rec_name_cmp);
  pawl_buf_t names, expect, next, last, job;
  pawl_buf_t *bufs[] = {&names, &expect, &next, &last, &job};
  const size_t nb = sizeof bufs / sizeof *bufs;
  for (size_t i = 0; i < nb; i++) arr_begin(bufs[i]);
  for (size_t k = 0; k < n; k++) {
    const store_rec_advance_t *d = &a[by[k].i];
    arr_str(&names, d->name);
    arr_int(&expect, d->expect_next);
    arr_opt_int(&next, d->next);
    arr_opt_int(&last, d->last_fire);
    if (d->njobs)
      arr_id(&job, &d->jobs[d->njobs - 1].id);
    else
      arr_str(&job, NULL);
  }
  int rc = 0;
  PGresult *res = NULL;
  if (pg_arr_close(bufs, nb)) {
    rc = pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
  } else {
    pg_params_t pp;
    for (size_t i = 0; i < nb; i++) pp_str(&pp, (int)i, bufs[i]->data);
    pp_now(s, &pp, 5);
    rc = pawl__pg_run(s, PG_REC_ADVANCE, 6, pp.v, &res,
                      "advance recurring definitions");
  }
  pg_arr_free(bufs, nb);
  for (int r = 0; !rc && r < PQntuples(res); r++) {
    int64_t k = pg_int(res, r, 0);
    if (k >= 1 && (uint64_t)k <= n) a[by[k - 1].i].advanced = 1;
    *now = pg_int(res, r, 1);
  }
  PQclear(res);
  pawl__free(by);
  return rc;
}

/* Records the idempotency keys of the advanced definitions' jobs in one
 * statement: fresh[k] = 1 for the k-th of those jobs (in a's order) whose
 * key was not seen before, and a[i].made counted. */
static int pg_rec_keys(pg_store_t *s, store_rec_advance_t *a, size_t n,
                       unsigned char *fresh, size_t total) {
  size_t *def = pawl__calloc(total, sizeof *def);
  if (!def) return pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
  pawl_buf_t keys, ids;
  pawl_buf_t *bufs[] = {&keys, &ids};
  arr_begin(&keys);
  arr_begin(&ids);
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; a[i].advanced && j < a[i].njobs; j++) {
      arr_str(&keys, a[i].jobs[j].idempotency_key);
      arr_id(&ids, &a[i].jobs[j].id);
      def[k++] = i;
    }
  int rc = 0;
  PGresult *res = NULL;
  if (pg_arr_close(bufs, 2)) {
    rc = pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
  } else {
    pg_params_t pp;
    pp_str(&pp, 0, keys.data);
    pp_str(&pp, 1, ids.data);
    pp_now(s, &pp, 2);
    rc = pawl__pg_run(s, PG_REC_KEYS, 3, pp.v, &res, "record idempotency keys");
  }
  pg_arr_free(bufs, 2);
  for (int r = 0; !rc && r < PQntuples(res); r++) {
    int64_t x = pg_int(res, r, 0);
    if (x < 1 || (uint64_t)x > total || fresh[x - 1]) continue;
    fresh[x - 1] = 1;
    a[def[x - 1]].made++;
  }
  PQclear(res);
  pawl__free(def);
  return rc;
}

/* The definitions whose last job's key was seen before (a crash between
 * an enqueue and the advance, another node): last_job_id = the job the
 * key names, in one statement; none when every last key was new. */
static int pg_rec_fix_last(pg_store_t *s, store_rec_advance_t *a, size_t n,
                           const unsigned char *fresh) {
  pawl_buf_t names, keys;
  pawl_buf_t *bufs[] = {&names, &keys};
  arr_begin(&names);
  arr_begin(&keys);
  size_t k = 0, count = 0;
  for (size_t i = 0; i < n; i++) {
    if (!a[i].advanced || a[i].njobs == 0) continue;
    k += a[i].njobs;
    if (fresh[k - 1]) continue;
    arr_str(&names, a[i].name);
    arr_str(&keys, a[i].jobs[a[i].njobs - 1].idempotency_key);
    count++;
  }
  int rc = 0;
  if (pg_arr_close(bufs, 2)) {
    rc = pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
  } else if (count) {
    const char *v[2] = {names.data, keys.data};
    rc = pawl__pg_run(s, PG_REC_LAST_JOB, 2, v, NULL,
                      "record the last jobs of recurring definitions");
  }
  pg_arr_free(bufs, 2);
  return rc;
}

/* The jobs whose keys were new, in one COPY (the bulk enqueue's path: they
 * have no business key, and their fresh ids conflict with nothing). */
static int pg_rec_copy(pg_store_t *s, store_rec_advance_t *a, size_t n,
                       const unsigned char *fresh, size_t total, int64_t now) {
  size_t nfresh = 0;
  for (size_t k = 0; k < total; k++) nfresh += fresh[k];
  if (nfresh == 0) return 0;
  store_new_job_t *jobs = pawl__calloc(nfresh, sizeof *jobs);
  if (!jobs) return pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
  size_t k = 0, m = 0;
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; a[i].advanced && j < a[i].njobs; j++)
      if (fresh[k++]) jobs[m++] = a[i].jobs[j];
  int rc = pawl__pg_copy_rows(s, jobs, m, now, 0);
  pawl__free(jobs);
  return rc;
}

/* A batch in a fixed number of statements whatever n (the SQL above):
 * the compare-and-sets, the keys of the advanced ones' jobs, the jobs
 * whose key is new in one COPY, and only when some definition's last key
 * was seen before, its last job. */
int pawl__pg_rec_advance(store_t *base, store_rec_advance_t *a, size_t n) {
  pg_store_t *s = (pg_store_t *)base;
  if (n == 0) return 0;
  for (size_t i = 0; i < n; i++) a[i].advanced = 0, a[i].made = 0;
  int64_t now = 0;
  unsigned char *fresh = NULL;
  size_t total = 0;
  int rc = pawl__pg_begin(s);
  if (!rc) rc = pg_rec_cas(s, a, n, &now);
  for (size_t i = 0; !rc && i < n; i++)
    if (a[i].advanced) total += a[i].njobs;
  if (!rc && total) {
    fresh = pawl__calloc(total, 1);
    if (!fresh) rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
    if (!rc) rc = pg_rec_keys(s, a, n, fresh, total);
    if (!rc) rc = pg_rec_fix_last(s, a, n, fresh);
    if (!rc) rc = pg_rec_copy(s, a, n, fresh, total, now);
  }
  pawl__free(fresh);
  rc = pawl__pg_end(s, rc);
  if (rc)
    for (size_t i = 0; i < n; i++) a[i].advanced = 0, a[i].made = 0;
  return rc;
}

int pawl__pg_rec_disable_gone(store_t *base, const char *const *scripts,
                              size_t n, int listed, size_t *count) {
  pg_store_t *s = (pg_store_t *)base;
  pawl_buf_t b;
  arr_begin(&b);
  for (size_t i = 0; i < n; i++) arr_str(&b, scripts[i]);
  arr_end(&b);
  if (b.oom) {
    pawl__buf_free(&b);
    return pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
  }
  pg_params_t pp;
  pp_str(&pp, 0, pawl__buf_cstr(&b));
  pp_now(s, &pp, 1);
  PGresult *res;
  int rc = pawl__pg_run(s, listed ? PG_REC_DISABLE_LISTED : PG_REC_DISABLE_GONE,
                        2, pp.v, &res, "disable recurring definitions");
  pawl__buf_free(&b);
  if (rc) return rc;
  if (count) *count = (size_t)pg_changed(res);
  PQclear(res);
  return 0;
}

int pawl__pg_rec_load_error(store_t *base, const char *script,
                            const char *error) {
  pg_store_t *s = (pg_store_t *)base;
  pg_params_t pp;
  pp_str(&pp, 0, script);
  pp_str(&pp, 1, error);
  pp_now(s, &pp, 2);
  return pawl__pg_run(s, PG_REC_LOAD_ERROR, 3, pp.v, NULL,
                      "note a script's load error");
}
