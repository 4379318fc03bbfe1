/* jobs.c: PostgreSQL store, insert (one by one, or by COPY for a bulk enqueue),
 * get, list, progress; the keys' look-ups (store.h, "jobs", "keys"). */
#include "pg_int.h"

/* The SQL of this file's statements, by their ids (pg_int.h,
 * "Statements"). */
#define PG_HERE PG__JOBS
const char *const pawl__pg_sql_jobs[PG__CLAIM - PG__JOBS] = {
    PG_AT(PG_IDEM_FIND) =
        "SELECT job_id FROM pawl_idempotency WHERE key = $1::text",
    /* Unique forever: a second holder of the key finds the first one's row
     * (after waiting for its transaction, if it is not committed yet). */
    PG_AT(PG_IDEM_ADD) =
        "INSERT INTO pawl_idempotency (key, job_id, created_at) "
        "VALUES ($1::text, $2::uuid, pawl_now($3::bigint)) "
        "ON CONFLICT (key) DO NOTHING",
    /* Takes back a key claimed above when no job was made under it. */
    PG_AT(PG_IDEM_DROP) =
        "DELETE FROM pawl_idempotency WHERE key = $1::text AND "
        "job_id = $2::uuid",
    PG_AT(PG_BIZ_FIND) =
        "SELECT id FROM pawl_jobs WHERE business_key = $1::text "
        "AND state IN (0, 1, 5, 6)",
    PG_AT(PG_INSERT) = PG_SQL_INSERT,
    PG_AT(PG_LIST) = "SELECT " PG_JOB_COLS
                     " FROM pawl_jobs AS j WHERE "
                     "($1::smallint IS NULL OR j.state = $1::smallint) AND "
                     "($2::text IS NULL OR j.queue = $2::text) AND "
                     "($3::text IS NULL OR j.type = $3::text) "
                     "ORDER BY j.id DESC LIMIT $4::int",
    /* The dead-letter set has its own index; list it through that. */
    PG_AT(PG_LIST_FAILED) =
        "SELECT " PG_JOB_COLS
        " FROM pawl_jobs AS j WHERE "
        "j.state = 3 AND ($2::text IS NULL OR j.queue = "
        "$2::text) AND ($3::text IS NULL OR j.type = $3::text) "
        /* $1 is the state filter, 3 here: bound like
         * PG_LIST's so both take the same parameters. */
        "AND $1::smallint = 3 "
        "ORDER BY j.id DESC LIMIT $4::int",
    /* Progress is not a transition: no version, no updated_at. */
    PG_AT(PG_PROGRESS) =
        "UPDATE pawl_jobs AS j SET progress_done = $1::float8, "
        "progress_total = $2::float8 WHERE j.id = $3::uuid AND "
        PG_RUNNING_BY_ID
        " AND j.lease_token = $4::uuid AND "
        "j.attempt = $5::int",
    /* queues */
    PG_AT(PG_QUEUE_BOOSTS) =
        "SELECT name, age_boost_ms FROM pawl_queues WHERE "
        "age_boost_ms IS NOT NULL",
};
#undef PG_HERE

/* ---- jobs ---------------------------------------------------------------- */

static int pg_find_id(pg_store_t *s, int stmt, const char *key,
                      pawl_id_t *out) {
  const char *v[1] = {key};
  PGresult *res;
  int rc = pawl__pg_run(s, stmt, 1, v, &res, "look up key");
  if (rc) return rc;
  int found = PQntuples(res) > 0;
  if (found) pg_id(res, 0, 0, out);
  PQclear(res);
  return found ? 0 : PAWL_ENOTFOUND;
}

/* `prev`: the id the job before it in this insert got (NULL: none), for
 * j->after_prev. */
int pawl__pg_insert_one(pg_store_t *s, const store_new_job_t *j,
                        const pawl_id_t *prev, pawl_id_t *id_out, int *status) {
  int rc;
  pg_params_t pp;
  int deps = j->nafter || (j->after_prev && prev);
  if (j->idempotency_key) {
    /* Claim the key first: a concurrent enqueue with the same key waits
     * here for ours to commit or roll back, then finds it. */
    pp_str(&pp, 0, j->idempotency_key);
    pp_id(&pp, 1, &j->id);
    pp_now(s, &pp, 2);
    PGresult *res;
    if ((rc = pawl__pg_run(s, PG_IDEM_ADD, 3, pp.v, &res,
                           "record idempotency key")))
      return rc;
    long added = pg_changed(res);
    PQclear(res);
    if (!added) {
      rc = pg_find_id(s, PG_IDEM_FIND, j->idempotency_key, id_out);
      if (rc == 0) *status = PAWL_ENQ_DUPLICATE;
      return rc;
    }
  }
  pp_id(&pp, 0, &j->id);
  pp_str(&pp, 1, j->type);
  pp_str(&pp, 2, j->queue ? j->queue : "default");
  pp_int(&pp, 3, j->blocked || deps ? PAWL_BLOCKED : PAWL_PENDING);
  pp_int(&pp, 4, j->priority);
  pp_str(&pp, 5, j->payload ? j->payload : "{}");
  pp_str(&pp, 6, j->params);
  pp_str(&pp, 7, j->tags ? j->tags : "[]");
  pp_opt_int(&pp, 8, j->run_at != 0, j->run_at);
  pp_int(&pp, 9, j->max_attempts);
  pp_int(&pp, 10, j->timeout_s);
  pp_str(&pp, 11, j->idempotency_key);
  pp_str(&pp, 12, j->business_key);
  pp_str(&pp, 13, j->correlation_id);
  pp_str(&pp, 14, j->enqueued_by);
  pp_now(s, &pp, 15);
  pp_int(&pp, 16, s->boost_ms);
  pp_str(&pp, 17, j->ordering_key);
  pp_str(&pp, 18, j->resource);
  pp_int(&pp, 19, j->depth);
  PGresult *res;
  if ((rc = pawl__pg_run(s, PG_INSERT, 20, pp.v, &res, "insert job")))
    return rc;
  int inserted = PQntuples(res) == 1;
  PQclear(res);
  if (inserted && j->signal_key && (rc = pawl__pg_sig_add(s, j))) /* signals */
    return rc;
  if (inserted && j->instance_key && (rc = pawl__pg_instance_take(s, j)))
    return rc;
  if (inserted) {
    if (deps && (rc = pawl__pg_deps_link(s, j, prev))) return rc;
    *id_out = j->id;
    *status = PAWL_ENQ_NEW;
    return 0;
  }
  /* Nothing inserted: the business key is held by a live job. */
  rc = j->business_key ? pg_find_id(s, PG_BIZ_FIND, j->business_key, id_out)
                       : PAWL_ENOTFOUND;
  if (rc == PAWL_ENOTFOUND)
    return pawl__store_fail(&s->base, PAWL_ECONFLICT,
                      "job not inserted: a live job took its business key "
                      "and finished meanwhile; try again");
  if (rc) return rc;
  if (j->return_existing) {
    /* No job was made under the idempotency key claimed above: give it
     * back, or it would stay recorded for an id that names no job, and
     * every later enqueue with it would be a "duplicate" of nothing. (A
     * refusal needs nothing: the caller rolls the transaction back.) */
    if (j->idempotency_key) {
      pp_str(&pp, 0, j->idempotency_key);
      pp_id(&pp, 1, &j->id);
      if ((rc = pawl__pg_run(s, PG_IDEM_DROP, 2, pp.v, NULL,
                             "give back idempotency key")))
        return rc;
    }
    *status = PAWL_ENQ_EXISTING;
    return 0;
  }
  char text[PAWL_ID_STRLEN];
  pawl_id_format(id_out, text);
  return pawl__store_fail(&s->base, PAWL_EKEY,
                    "business key \"%s\" is held by live job %s",
                    j->business_key, text);
}

/* ---- bulk enqueue: COPY in binary format -------------------------------- */

/* Keyless jobs (and the recurring tick's, whose keys it records first) go
 * in with COPY ... (FORMAT binary): ids, numbers and times
 * reach the server as their binary values, so it parses nothing but the
 * JSON, which is most of what a multi-row INSERT of arrays costs it. The
 * layout (PostgreSQL manual, COPY, "Binary Format"): a signature, flags and
 * header extension; per row a 16-bit field count, then per field a 32-bit
 * length (-1 for NULL) and the value in network byte order. */

/* Microseconds between the Unix epoch and PostgreSQL's (2000-01-01). */
#define PG_EPOCH_US INT64_C(946684800000000)

static void cp_u32(pawl_buf_t *b, uint32_t x) {
  unsigned char v[4] = {x >> 24, x >> 16, x >> 8, x};
  pawl__buf_append(b, v, 4);
}

static void cp_u64(pawl_buf_t *b, uint64_t x) {
  cp_u32(b, (uint32_t)(x >> 32));
  cp_u32(b, (uint32_t)x);
}

static void cp_null(pawl_buf_t *b) { cp_u32(b, UINT32_MAX); }

static void cp_i16(pawl_buf_t *b, int16_t x) {
  unsigned char v[2] = {(uint16_t)x >> 8, (uint16_t)x};
  cp_u32(b, 2);
  pawl__buf_append(b, v, 2);
}

static void cp_i32(pawl_buf_t *b, int32_t x) {
  cp_u32(b, 4);
  cp_u32(b, (uint32_t)x);
}

static void cp_i64(pawl_buf_t *b, int64_t x) {
  cp_u32(b, 8);
  cp_u64(b, (uint64_t)x);
}

/* timestamptz: microseconds since 2000-01-01 UTC. */
static void cp_time(pawl_buf_t *b, int64_t ms) {
  cp_i64(b, ms * 1000 - PG_EPOCH_US);
}

static void cp_text(pawl_buf_t *b, const char *s) {
  if (!s) {
    cp_null(b);
    return;
  }
  size_t n = strlen(s);
  cp_u32(b, (uint32_t)n);
  pawl__buf_append(b, s, n);
}

/* jsonb: a version byte (1), then the JSON text. */
static void cp_jsonb(pawl_buf_t *b, const char *s) {
  if (!s) {
    cp_null(b);
    return;
  }
  size_t n = strlen(s);
  cp_u32(b, (uint32_t)n + 1);
  pawl__buf_putc(b, 1);
  pawl__buf_append(b, s, n);
}

static void cp_uuid(pawl_buf_t *b, const pawl_id_t *id) {
  cp_u32(b, 16);
  pawl__buf_append(b, id->bytes, 16);
}

/* One row in PG_SQL_COPY_JOBS's column order. */
/* The boost jobs of `queue` rank with, from the rows of PG_QUEUE_BOOSTS
 * (`boosts`: the queues that have one of their own; NULL: none), else
 * `dflt`. */
static int64_t pg_boost_of(const PGresult *boosts, const char *queue,
                           int64_t dflt) {
  for (int i = 0; boosts && i < PQntuples(boosts); i++)
    if (strcmp(PQgetvalue(boosts, i, 0), queue) == 0)
      return strtoll(PQgetvalue(boosts, i, 1), NULL, 10);
  return dflt;
}

static void cp_job(pawl_buf_t *b, const store_new_job_t *j, int64_t now,
                   int64_t boost_ms, int with_batch) {
  int64_t run_at = j->run_at ? j->run_at : now;
  unsigned char nfields[2] = {0, with_batch ? 20 : 19};
  pawl__buf_append(b, nfields, 2);
  cp_uuid(b, &j->id);
  cp_text(b, j->type);
  cp_text(b, j->queue ? j->queue : "default");
  /* A batch's child may wait for parents: linked after the
   * COPY (pawl__pg_batch_create()). */
  cp_i16(b, j->blocked || j->nafter ? PAWL_BLOCKED : PAWL_PENDING);
  cp_i32(b, j->priority);
  cp_i64(b, store_rank(j->priority, run_at, boost_ms));
  cp_jsonb(b, j->payload ? j->payload : "{}");
  cp_jsonb(b, j->params);
  cp_jsonb(b, j->tags ? j->tags : "[]");
  cp_time(b, run_at);
  cp_i32(b, j->max_attempts);
  cp_i32(b, j->timeout_s);
  cp_text(b, j->idempotency_key);
  cp_text(b, j->correlation_id);
  cp_text(b, j->enqueued_by);
  cp_time(b, now);
  cp_time(b, now);
  cp_text(b, j->resource);
  cp_i32(b, j->depth);
  if (with_batch) {
    if (j->batch_id)
      cp_uuid(b, j->batch_id);
    else
      cp_null(b);
  }
}

/* The rows go out in pieces of this size while the next ones are being
 * written, so that the server parses one piece while we build the next. */
#define PG_COPY_PIECE (256 * 1024)

/* Streams jobs[0..n) into a COPY under way, then ends it; the COPY's result
 * says whether the server took them. */
int pawl__pg_copy_rows(pg_store_t *s, const store_new_job_t *jobs, size_t n,
                       int64_t now, int with_batch) {
  /* The queues' own age boosts, read in this transaction. */
  PGresult *boosts = NULL;
  int brc = pawl__pg_run(s, PG_QUEUE_BOOSTS, 0, NULL, &boosts,
                         "read the queues' age boosts");
  if (brc) return brc;
  if (PQntuples(boosts) == 0) {
    PQclear(boosts);
    boosts = NULL;
  }
  PGresult *res = PQexec(s->conn, with_batch ? PG_SQL_COPY_BATCH_JOBS
                                             : PG_SQL_COPY_JOBS);
  if (PQresultStatus(res) != PGRES_COPY_IN) {
    int rc = pawl__pg_fail(s, res, "insert jobs");
    PQclear(res);
    PQclear(boosts);
    return rc;
  }
  PQclear(res);
  pawl_buf_t b;
  pawl__buf_init(&b);
  static const char head[] = "PGCOPY\n\377\r\n";
  pawl__buf_append(&b, head,
                   sizeof head);     /* with its NUL, as the format says */
  cp_u32(&b, 0);                     /* flags */
  cp_u32(&b, 0);                     /* header extension length */
  int ok = 1;
  for (size_t i = 0; ok && i < n; i++) {
    cp_job(&b, &jobs[i], now,
           pg_boost_of(boosts, jobs[i].queue ? jobs[i].queue : "default",
                       s->boost_ms),
           with_batch);
    if (i + 1 == n) {
      unsigned char trailer[2] = {0xff, 0xff};
      pawl__buf_append(&b, trailer, 2);
    }
    if (b.oom) break;
    if (b.len >= PG_COPY_PIECE || i + 1 == n) {
      ok = PQputCopyData(s->conn, b.data, (int)b.len) == 1;
      pawl__buf_reset(&b);
    }
  }
  int oom = b.oom;
  pawl__buf_free(&b);
  PQclear(boosts);
  /* A COPY ended with an error message is rolled back by the server. */
  const char *abort = oom ? "out of memory" : !ok ? "sending failed" : NULL;
  ok = PQputCopyEnd(s->conn, abort) == 1 && ok;
  int rc = 0;
  /* Read every result, also after a failed send, so the connection is
   * ready for the next command. */
  while ((res = PQgetResult(s->conn)) != NULL) {
    if (!rc && !oom && PQresultStatus(res) != PGRES_COMMAND_OK)
      rc = pawl__pg_fail(s, res, "insert jobs");
    PQclear(res);
  }
  if (oom) return pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
  if (!ok && !rc) rc = pawl__pg_fail(s, NULL, "insert jobs");
  return rc;
}

/* Jobs without keys, in one COPY: the bulk path. "Now" is the transaction's
 * (as a multi-row INSERT would see it), read in the round trip that begins
 * it, or the injected clock's reading. */
static int pg_insert_many(pg_store_t *s, const store_new_job_t *jobs, size_t n,
                          pawl_id_t *ids, int *status) {
  int64_t now = 0;
  int rc = pawl__pg_ready(s);
  if (!rc && s->base.clock) {
    now = s->base.clock(s->base.clock_data);
    rc = pawl__pg_cmd(s, "BEGIN", "begin transaction");
  } else if (!rc) {
    rc = pawl__pg_query_int(s, "BEGIN; SELECT pawl_ms(now())", &now,
                            "begin transaction");
  }
  if (!rc) rc = pawl__pg_copy_rows(s, jobs, n, now, 0);
  rc = pawl__pg_end(s, rc);
  if (rc) return rc;
  for (size_t i = 0; i < n; i++) {
    ids[i] = jobs[i].id;
    status[i] = PAWL_ENQ_NEW;
  }
  return 0;
}

int pawl__pg_insert(store_t *base, const store_new_job_t *jobs, size_t n,
                    pawl_id_t *ids, int *status) {
  pg_store_t *s = (pg_store_t *)base;
  if (n == 0) return 0;
  int keyed = 0;
  for (size_t i = 0; i < n && !keyed; i++)
    keyed = jobs[i].idempotency_key || jobs[i].business_key ||
            jobs[i].ordering_key || /* ordering_seq: not in the COPY */
            jobs[i].signal_key ||   /* its row of pawl_signals */
            jobs[i].nafter || jobs[i].after_prev || /* dependencies */
            jobs[i].instance_key;   /* pawl_instances */
  if (!keyed && n > 1) return pg_insert_many(s, jobs, n, ids, status);
  /* One statement needs no transaction of its own. */
  if (n == 1 && !jobs[0].idempotency_key && !jobs[0].signal_key &&
      !jobs[0].nafter && !jobs[0].instance_key)
    return pawl__pg_insert_one(s, &jobs[0], NULL, &ids[0], &status[0]);
  int rc = pawl__pg_begin(s);
  for (size_t i = 0; i < n && !rc; i++)
    rc = pawl__pg_insert_one(s, &jobs[i], i ? &ids[i - 1] : NULL, &ids[i],
                             &status[i]);
  return pawl__pg_end(s, rc);
}

int pawl__pg_get(store_t *base, const pawl_id_t *id, pawl_job_t **out) {
  return pawl__pg_read_job((pg_store_t *)base, id, 0, out);
}

/* Shows each job of a listing's result to `cb` (the result is complete
 * before the first callback, so a callback may call anything on this
 * handle); frees the result. */
int pawl__pg_list_rows(pg_store_t *s, PGresult *res, pawl_job_cb cb,
                       void *data) {
  int rc = 0;
  for (int i = 0; i < PQntuples(res); i++) {
    pawl_job_t *j = pawl__pg_row_to_job(res, i);
    if (!j) {
      rc = pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
      break;
    }
    int stop = cb(j, data);
    pawl_job_free(j);
    if (stop) break;
  }
  PQclear(res);
  return rc;
}

int pawl__pg_list(store_t *base, const pawl_filter_t *f, pawl_job_cb cb,
                  void *data) {
  pg_store_t *s = (pg_store_t *)base;
  if (f->tag || f->older_than_ms) return pawl__pg_adm_list(base, f, cb, data);
  pg_params_t pp;
  pp_opt_int(&pp, 0, f->state >= 0, f->state);
  pp_str(&pp, 1, f->queue);
  pp_str(&pp, 2, f->type);
  pp_int(&pp, 3, f->limit > 0 ? f->limit : 100);
  PGresult *res;
  int rc = pawl__pg_run(s, f->state == PAWL_FAILED ? PG_LIST_FAILED : PG_LIST,
                        4, pp.v, &res, "list jobs");
  return rc ? rc : pawl__pg_list_rows(s, res, cb, data);
}

int pawl__pg_find_idempotent(store_t *base, const char *key, pawl_id_t *out) {
  return pg_find_id((pg_store_t *)base, PG_IDEM_FIND, key, out);
}

int pawl__pg_find_business(store_t *base, const char *key, pawl_id_t *out) {
  return pg_find_id((pg_store_t *)base, PG_BIZ_FIND, key, out);
}

int pawl__pg_progress(store_t *base, const pawl_id_t *id,
                      const pawl_id_t *token, int32_t attempt, double done,
                      double total) {
  pg_store_t *s = (pg_store_t *)base;
  pg_params_t pp;
  pp_dbl(&pp, 0, done);
  pp_dbl(&pp, 1, total);
  pp_id(&pp, 2, id);
  pp_id(&pp, 3, token);
  pp_int(&pp, 4, attempt);
  PGresult *res;
  int rc = pawl__pg_run(s, PG_PROGRESS, 5, pp.v, &res, "record progress");
  if (rc) return rc;
  long n = pg_changed(res);
  PQclear(res);
  return n == 1 ? 0 : pawl__store_not_held(&s->base, id, attempt);
}
