/* batch.c: PostgreSQL store, batches (store.h, "batch"). */
#include "pg_int.h"

/* The SQL of this file's statements, by their ids (pg_int.h,
 * "Statements"). */
#define PG_HERE PG__BATCH
const char *const pawl__pg_sql_batch[PG__DEPS - PG__BATCH] = {
    /* batches (schema/postgres/V009__batch.sql) */
    /* $1 id, $2 total, $3 enqueued_by, $4 now, $5 ident (V015). */
    PG_AT(PG_BATCH_ADD) = "INSERT INTO pawl_batches (id, total, enqueued_by, "
                     "created_at, updated_at, ident) VALUES ($1::uuid, "
                     "$2::bigint, $3::text, pawl_now($4::bigint), "
                     "pawl_now($4::bigint), $5::text)",
    /* The batch of identity $1 (the partial unique index
     * pawl_batches_ident), and the children of batch $1 in enqueue order
     * (UUIDv7 ids, handed out in order). */
    PG_AT(PG_BATCH_FIND) = "SELECT id, total FROM pawl_batches WHERE ident = "
                      "$1::text",
    PG_AT(PG_BATCH_CHILDREN) = "SELECT id FROM pawl_jobs WHERE batch_id = "
                          "$1::uuid ORDER BY id",
    /* $1 id, $2 batch, $3 role, $4 type, $5 queue, $6 priority, $7 payload,
     * $8 tags, $9 max_attempts, $10 timeout_s, $11 correlation_id,
     * $12 enqueued_by. */
    PG_AT(PG_BATCH_CB_ADD) =
        "INSERT INTO pawl_batch_callbacks (id, batch_id, role, type, queue, "
        "priority, payload, tags, max_attempts, timeout_s, correlation_id, "
        "enqueued_by) VALUES ($1::uuid, $2::uuid, $3::smallint, $4::text, "
        "$5::text, $6::int, $7::jsonb, $8::jsonb, $9::int, $10::int, "
        "$11::text, $12::text)",
    /* Adds $2 succeeded, $3 failed, $4 canceled at $5 to the batch of job
     * $1 (none: no row); an operator's transition of a child. The trigger
     * fires the callbacks when this completes the count. */
    PG_AT(PG_BATCH_COUNT_JOB) =
        "UPDATE pawl_batches SET succeeded = succeeded + $2::bigint, failed "
        "= failed + $3::bigint, canceled = canceled + $4::bigint, updated_at "
        "= pawl_now($5::bigint) WHERE id = (SELECT batch_id FROM pawl_jobs "
        "WHERE id = $1::uuid)",
    PG_AT(PG_BATCH_GET) = "SELECT total, succeeded, failed, canceled, "
                     "pawl_ms(created_at), pawl_ms(finished_at) FROM "
                     "pawl_batches WHERE id = $1::uuid",
    PG_AT(PG_BATCH_CBS) = "SELECT role, id, pawl_ms(fired_at) FROM "
                     "pawl_batch_callbacks WHERE batch_id = $1::uuid",
    /* The children per state, with the run time of the successful attempts
     * (on the row) and the lifetimes of those that ended. */
    PG_AT(PG_BATCH_STATES) =
        "SELECT state, count(*), coalesce(sum(CASE WHEN state = 2 THEN "
        "pawl_ms(finished_at) - pawl_ms(started_at) ELSE 0 END), 0), "
        "coalesce(sum(CASE WHEN state IN (2, 3, 4) THEN pawl_ms(finished_at) "
        "- pawl_ms(created_at) ELSE 0 END), 0) FROM pawl_jobs WHERE "
        "batch_id = $1::uuid GROUP BY state",
    /* The run time of the other attempts, of children that ended (true)
     * and of the others. */
    PG_AT(PG_BATCH_ATTEMPTS) =
        "SELECT j.state IN (2, 3, 4), coalesce(sum(pawl_ms(a.ended_at) - "
        "pawl_ms(a.started_at)), 0) FROM pawl_jobs AS j JOIN pawl_attempts "
        "AS a ON a.job_id = j.id WHERE j.batch_id = $1::uuid AND "
        "a.started_at IS NOT NULL GROUP BY 1",
    PG_AT(PG_BATCH_OF) = "SELECT batch_id FROM pawl_jobs WHERE id = $1::uuid",
    PG_AT(PG_BATCH_OF_CB) = "SELECT batch_id, role FROM pawl_batch_callbacks "
                       "WHERE id = $1::uuid",
};
#undef PG_HERE

/* ---- batches (schema/postgres/V009__batch.sql) --------------------------- */

/* Adds d (succeeded, failed, canceled) to the counters of job id's batch,
 * if it has one; the trigger fires the callbacks when this completes the
 * count (exactly once: see the migration). */
int pawl__pg_batch_count_job(pg_store_t *s, const pawl_id_t *id,
                             const int64_t d[3]) {
  pg_params_t pp;
  pp_id(&pp, 0, id);
  pp_int(&pp, 1, d[0]);
  pp_int(&pp, 2, d[1]);
  pp_int(&pp, 3, d[2]);
  pp_now(s, &pp, 4);
  return pawl__pg_run(s, PG_BATCH_COUNT_JOB, 5, pp.v, NULL,
                      "count the batch's children");
}

/* The batch row, its callbacks, then its children in one COPY, in one
 * transaction. "Now" is the transaction's (or the injected clock's), as
 * in pg_insert_many(). */
/* The batch of b->ident, if one was made: *found = 1 and its id and its
 * children's into b->found_id, b->found_ids (in the caller's
 * transaction). One with another number of children than `n` is
 * PAWL_ECONFLICT. Two parents never share an identity (it holds the
 * parent's id) and one job runs on one node at a time, so no other
 * transaction races this one for it; if one did, the unique index
 * refuses the second insert. */
static int pg_batch_find(pg_store_t *s, const store_batch_new_t *b, size_t n,
                         int *found) {
  const char *v[1] = {b->ident};
  PGresult *res;
  int rc = pawl__pg_run(s, PG_BATCH_FIND, 1, v, &res, "find the batch");
  if (rc) return rc;
  if (PQntuples(res) == 0) {
    PQclear(res);
    return 0;
  }
  pawl_id_t id;
  pg_id(res, 0, 0, &id);
  long long total = strtoll(PQgetvalue(res, 0, 1), NULL, 10);
  PQclear(res);
  char text[PAWL_ID_STRLEN];
  pawl_id_format(&id, text);
  if (total != (long long)n)
    return pawl__store_fail(&s->base, PAWL_ECONFLICT,
                            "batch %s was made under the identity \"%.200s\" "
                            "with %lld jobs; this call has %zu",
                            text, b->ident, total, n);
  v[0] = text;
  if ((rc = pawl__pg_run(s, PG_BATCH_CHILDREN, 1, v, &res,
                         "read the batch's jobs")))
    return rc;
  size_t k = (size_t)PQntuples(res);
  for (size_t i = 0; i < k && i < n; i++)
    pg_id(res, (int)i, 0, &b->found_ids[i]);
  PQclear(res);
  if (k != n)
    return pawl__store_fail(&s->base, PAWL_ECONFLICT,
                            "batch %s made under the identity \"%.200s\" "
                            "has %zu of its %zu jobs left",
                            text, b->ident, k, n);
  *b->found_id = id;
  *b->found = *found = 1;
  return 0;
}

int pawl__pg_batch_create(store_t *base, const store_batch_new_t *b,
                          const store_new_job_t *jobs, size_t n) {
  pg_store_t *s = (pg_store_t *)base;
  int64_t now = 0;
  int rc = pawl__pg_ready(s);
  if (!rc && s->base.clock) {
    now = s->base.clock(s->base.clock_data);
    rc = pawl__pg_cmd(s, "BEGIN", "begin transaction");
  } else if (!rc) {
    rc = pawl__pg_query_int(s, "BEGIN; SELECT pawl_ms(now())", &now,
                            "begin transaction");
  }
  pg_params_t pp;
  if (!rc && b->ident) {
    int found = 0;
    rc = pg_batch_find(s, b, n, &found);
    if (rc || found) return pawl__pg_end(s, rc);
  }
  if (!rc) {
    pp_id(&pp, 0, &b->id);
    pp_int(&pp, 1, (int64_t)n);
    pp_str(&pp, 2, b->enqueued_by);
    pp_int(&pp, 3, now);
    pp_str(&pp, 4, b->ident);
    rc = pawl__pg_run(s, PG_BATCH_ADD, 5, pp.v, NULL, "record the batch");
  }
  for (int r = 0; r < 3 && !rc; r++) {
    const store_new_job_t *c = b->callbacks[r];
    if (!c) continue;
    pp_id(&pp, 0, &c->id);
    pp_id(&pp, 1, &b->id);
    pp_int(&pp, 2, r + 1);
    pp_str(&pp, 3, c->type);
    pp_str(&pp, 4, c->queue ? c->queue : "default");
    pp_int(&pp, 5, c->priority);
    pp_str(&pp, 6, c->payload ? c->payload : "{}");
    pp_str(&pp, 7, c->tags ? c->tags : "[]");
    pp_int(&pp, 8, c->max_attempts);
    pp_int(&pp, 9, c->timeout_s);
    pp_str(&pp, 10, c->correlation_id);
    pp_str(&pp, 11, c->enqueued_by);
    rc = pawl__pg_run(s, PG_BATCH_CB_ADD, 12, pp.v, NULL, "record a callback");
  }
  if (!rc) rc = pawl__pg_copy_rows(s, jobs, n, now, 1);
  /* Children that wait for a signal: their rows of
   * pawl_signals, as pawl__pg_insert_one() writes them; a key held twice fails
   * the batch (PAWL_EKEY). */
  for (size_t i = 0; i < n && !rc; i++)
    if (jobs[i].signal_key) rc = pawl__pg_sig_add(s, &jobs[i]);
  /* Children that wait for parents (dependencies): their edges,
   * as pawl__pg_insert_one() links them; one whose parents have all ended is
   * settled at once (and, canceled, counted in the batch by
   * pawl_deps_settle()). */
  for (size_t i = 0; i < n && !rc; i++)
    if (jobs[i].nafter) rc = pawl__pg_deps_link(s, &jobs[i], NULL);
  return pawl__pg_end(s, rc);
}

int pawl__pg_batch_get(store_t *base, const pawl_id_t *id, int64_t now,
                       pawl_batch_t *out) {
  pg_store_t *s = (pg_store_t *)base;
  pawl_batch_t b;
  memset(&b, 0, sizeof b);
  b.id = *id;
  /* One snapshot: the counters and the children agree. */
  int rc = pawl__pg_ready(s);
  if (!rc)
    rc = pawl__pg_cmd(s, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
                      "begin read");
  if (rc) return rc;
  pg_params_t pp;
  pp_id(&pp, 0, id);
  PGresult *res;
  if (!(rc = pawl__pg_run(s, PG_BATCH_GET, 1, pp.v, &res, "read batch"))) {
    if (PQntuples(res) == 1) {
      b.total = pg_int(res, 0, 0);
      b.succeeded = pg_int(res, 0, 1);
      b.failed = pg_int(res, 0, 2);
      b.canceled = pg_int(res, 0, 3);
      b.created_at = pg_int(res, 0, 4);
      b.finished_at = pg_int(res, 0, 5);
    } else {
      char text[PAWL_ID_STRLEN];
      pawl_id_format(id, text);
      rc = pawl__store_fail(base, PAWL_ENOTFOUND, "no batch %s", text);
    }
    PQclear(res);
  }
  if (!rc &&
      !(rc = pawl__pg_run(s, PG_BATCH_CBS, 1, pp.v, &res, "read callbacks"))) {
    for (int i = 0; i < PQntuples(res); i++) {
      int64_t role = pg_int(res, i, 0);
      if (role < 1 || role > 3) continue;
      pawl_batch_callback_t *c = &b.callbacks[role - 1];
      c->set = 1;
      pg_id(res, i, 1, &c->id);
      c->fired_at = pg_int(res, i, 2);
    }
    PQclear(res);
  }
  int64_t life_ended = 0, exec_ended = 0;
  if (!rc && !(rc = pawl__pg_run(s, PG_BATCH_STATES, 1, pp.v, &res,
                                 "read children"))) {
    for (int i = 0; i < PQntuples(res); i++) {
      int64_t state = pg_int(res, i, 0);
      if (state >= 0 && state < PAWL_STATE_COUNT)
        b.states[state] = pg_int(res, i, 1);
      b.exec_ms += pg_int(res, i, 2);
      exec_ended += pg_int(res, i, 2); /* successes: ended */
      life_ended += pg_int(res, i, 3);
    }
    PQclear(res);
  }
  if (!rc && !(rc = pawl__pg_run(s, PG_BATCH_ATTEMPTS, 1, pp.v, &res,
                                 "read attempts"))) {
    for (int i = 0; i < PQntuples(res); i++) {
      const char *ended = pg_val(res, i, 0);
      int64_t ran = pg_int(res, i, 1);
      b.exec_ms += ran;
      if (ended && ended[0] == 't') exec_ended += ran;
    }
    PQclear(res);
  }
  rc = pawl__pg_end(s, rc);
  if (rc) return rc;
  b.wall_ms = (b.finished_at ? b.finished_at : now) - b.created_at;
  if (b.wall_ms < 0) b.wall_ms = 0;
  b.overhead_ms = life_ended - exec_ended;
  *out = b;
  return 0;
}

int pawl__pg_batch_of(store_t *base, const pawl_id_t *id, pawl_id_t *batch,
                      int *role) {
  pg_store_t *s = (pg_store_t *)base;
  pg_params_t pp;
  pp_id(&pp, 0, id);
  PGresult *res;
  *role = -1;
  int rc = pawl__pg_run(s, PG_BATCH_OF, 1, pp.v, &res, "read the job's batch");
  if (rc) return rc;
  if (PQntuples(res) == 1 && !PQgetisnull(res, 0, 0)) {
    pg_id(res, 0, 0, batch);
    *role = PAWL_BATCH_CHILD;
  }
  PQclear(res);
  if (*role >= 0) return 0;
  rc = pawl__pg_run(s, PG_BATCH_OF_CB, 1, pp.v, &res, "read the job's batch");
  if (rc) return rc;
  if (PQntuples(res) == 1) {
    pg_id(res, 0, 0, batch);
    *role = (int)pg_int(res, 0, 1);
  }
  PQclear(res);
  return 0;
}
