/* batch.c: SQLite store, batches (schema/sqlite/V010__batch.sql; store.h,
 * "batch"). */
#include "sqlite_int.h"

/* ?1 id, ?2 total, ?3 enqueued_by, ?4 now, ?5 ident (V016). */
#define SQLITE_BATCH_ADD                                                     \
  "INSERT INTO pawl_batches (id, total, enqueued_by, created_at, "           \
  "updated_at, ident) VALUES (?1, ?2, ?3, ?4, ?4, ?5)"

/* The batch of identity ?1 (the partial unique index pawl_batches_ident),
 * and the children of batch ?1 in enqueue order (ids are UUIDv7s handed
 * out in order; the index pawl_jobs_batch finds them). */
#define SQLITE_BATCH_FIND "SELECT id, total FROM pawl_batches WHERE ident = ?1"
#define SQLITE_BATCH_CHILDREN                                                \
  "SELECT id FROM pawl_jobs WHERE batch_id = ?1 ORDER BY id"

/* ?1 id, ?2 batch, ?3 role, ?4 type, ?5 queue, ?6 priority, ?7 payload,
 * ?8 tags, ?9 max_attempts, ?10 timeout_s, ?11 correlation_id,
 * ?12 enqueued_by. */
#define SQLITE_BATCH_CB_ADD                                                  \
  "INSERT INTO pawl_batch_callbacks (id, batch_id, role, type, queue, "      \
  "priority, payload, tags, max_attempts, timeout_s, correlation_id, "       \
  "enqueued_by) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)"

/* Adds ?2 succeeded, ?3 failed, ?4 canceled at ?5 to batch ?1, or (_JOB)
 * to the batch of job ?1 (none: no row, one probe of the primary key).
 * The trigger pawl_batches_fire fires the callbacks when this completes
 * the count. */
#define SQLITE_BATCH_COUNT_SET                                               \
  "UPDATE pawl_batches SET succeeded = succeeded + ?2, failed = failed + "   \
  "?3, canceled = canceled + ?4, updated_at = ?5 WHERE id = "
#define SQLITE_BATCH_COUNT SQLITE_BATCH_COUNT_SET "?1"
#define SQLITE_BATCH_COUNT_JOB                                               \
  SQLITE_BATCH_COUNT_SET "(SELECT batch_id FROM pawl_jobs WHERE id = ?1)"

#define SQLITE_BATCH_GET                                                     \
  "SELECT total, succeeded, failed, canceled, created_at, finished_at "      \
  "FROM pawl_batches WHERE id = ?1"
#define SQLITE_BATCH_CBS                                                     \
  "SELECT role, id, fired_at FROM pawl_batch_callbacks WHERE batch_id = ?1"

/* The children per state, with the run time of the successful attempts
 * (on the row) and the lifetimes of those that ended. */
#define SQLITE_BATCH_STATES                                                  \
  "SELECT state, count(*), sum(CASE WHEN state = 2 THEN finished_at - "      \
  "started_at ELSE 0 END), sum(CASE WHEN state IN (2, 3, 4) THEN "           \
  "finished_at - created_at ELSE 0 END) FROM pawl_jobs WHERE batch_id = ?1 " \
  "GROUP BY state"

/* The run time of the other attempts (pawl_attempts), of children that
 * ended (1) and of the others (0). */
#define SQLITE_BATCH_ATTEMPTS                                                \
  "SELECT j.state IN (2, 3, 4), sum(a.ended_at - a.started_at) FROM "        \
  "pawl_jobs AS j JOIN pawl_attempts AS a ON a.job_id = j.id WHERE "         \
  "j.batch_id = ?1 AND a.started_at IS NOT NULL GROUP BY 1"

#define SQLITE_BATCH_OF "SELECT batch_id FROM pawl_jobs WHERE id = ?1"
#define SQLITE_BATCH_OF_CB                                                   \
  "SELECT batch_id, role FROM pawl_batch_callbacks WHERE id = ?1"

/* The SQL of this file's statements, by their ids (sqlite_int.h,
 * "Statements"). */
#define SQ_HERE SQ__BATCH
const char *const pawl__sq_sql_batch[SQ__DEPS - SQ__BATCH] = {
    SQ_AT(SQ_BATCH_ADD) = SQLITE_BATCH_ADD,
    SQ_AT(SQ_BATCH_CB_ADD) = SQLITE_BATCH_CB_ADD,
    SQ_AT(SQ_BATCH_COUNT) = SQLITE_BATCH_COUNT,
    SQ_AT(SQ_BATCH_COUNT_JOB) = SQLITE_BATCH_COUNT_JOB,
    SQ_AT(SQ_BATCH_GET) = SQLITE_BATCH_GET,
    SQ_AT(SQ_BATCH_CBS) = SQLITE_BATCH_CBS,
    SQ_AT(SQ_BATCH_STATES) = SQLITE_BATCH_STATES,
    SQ_AT(SQ_BATCH_ATTEMPTS) = SQLITE_BATCH_ATTEMPTS,
    SQ_AT(SQ_BATCH_OF) = SQLITE_BATCH_OF,
    SQ_AT(SQ_BATCH_OF_CB) = SQLITE_BATCH_OF_CB,
    SQ_AT(SQ_BATCH_FIND) = SQLITE_BATCH_FIND,
    SQ_AT(SQ_BATCH_CHILDREN) = SQLITE_BATCH_CHILDREN,
};
#undef SQ_HERE

/* ---- batches (schema/sqlite/V010__batch.sql) ------------------------------ */

/* One success of a child of batch `v` (a 16-byte blob) in this finish; -1
 * when out of memory. Batches are few per finish: the last one first. */
int pawl__sq_batch_note(sq_store_t *s, sqlite3_value *v) {
  if (sqlite3_value_bytes(v) != 16) return 0; /* not a pawl id: ignore */
  const void *blob = sqlite3_value_blob(v);
  if (!blob) return -1;
  for (size_t i = s->nbn; i-- > 0;)
    if (memcmp(s->bn[i].id.bytes, blob, 16) == 0) {
      s->bn[i].n++;
      return 0;
    }
  if (s->nbn == s->bncap) {
    size_t cap = s->bncap ? s->bncap * 2 : 4;
    struct sq_bn *g = pawl__realloc(s->bn, cap * sizeof *g);
    if (!g) return -1;
    s->bn = g;
    s->bncap = cap;
  }
  memcpy(s->bn[s->nbn].id.bytes, blob, 16);
  s->bn[s->nbn++].n = 1;
  return 0;
}

/* Adds to the counters of batch `id` (or, with by_job, of job id's batch,
 * if any); the trigger pawl_batches_fire fires the callbacks when this
 * completes the count. SQLite's one writer makes each such update see
 * every earlier one: only one can find finished_at still NULL. */
static int sq_batch_count(sq_store_t *s, int stmt, const pawl_id_t *id,
                          int64_t ds, int64_t df, int64_t dc, int64_t now) {
  sqlite3_stmt *st = sq_stmt(s, stmt);
  if (!st) return PAWL_ESTORE;
  sq_bind_id(st, 1, id);
  sqlite3_bind_int64(st, 2, ds);
  sqlite3_bind_int64(st, 3, df);
  sqlite3_bind_int64(st, 4, dc);
  sqlite3_bind_int64(st, 5, now);
  return sq_exec(s, st, "count the batch's children");
}

int pawl__sq_batch_count_job(sq_store_t *s, const pawl_id_t *id, int64_t ds,
                             int64_t df, int64_t dc, int64_t now) {
  return sq_batch_count(s, SQ_BATCH_COUNT_JOB, id, ds, df, dc, now);
}

/* The finish's successes noted by pawl__sq_batch_note(): one UPDATE per
 * batch. */
int pawl__sq_batch_flush(sq_store_t *s, int64_t now) {
  int rc = 0;
  for (size_t i = 0; i < s->nbn && !rc; i++)
    rc = sq_batch_count(s, SQ_BATCH_COUNT, &s->bn[i].id, s->bn[i].n, 0, 0,
                        now);
  s->nbn = 0;
  return rc;
}

/* The batch of b->ident, if one was made: *found = 1 and its id and its
 * children's into b->found_id, b->found_ids (in the caller's
 * transaction). One with another number of children than `n` (another
 * call, or children retention removed) is PAWL_ECONFLICT. */
static int sq_batch_find(sq_store_t *s, const store_batch_new_t *b, size_t n,
                         int *found) {
  sqlite3_stmt *st = sq_stmt(s, SQ_BATCH_FIND);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_text(st, 1, b->ident, -1, SQLITE_STATIC);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_DONE) {
    sqlite3_reset(st);
    return 0;
  }
  if (rc != SQLITE_ROW) {
    sqlite3_reset(st);
    return pawl__sq_fail(s, rc, "find the batch");
  }
  pawl_id_t id;
  sq_col_id(st, 0, &id);
  int64_t total = sqlite3_column_int64(st, 1);
  sqlite3_reset(st);
  char text[PAWL_ID_STRLEN];
  pawl_id_format(&id, text);
  if (total != (int64_t)n)
    return pawl__store_fail(&s->base, PAWL_ECONFLICT,
                            "batch %s was made under the identity \"%.200s\" "
                            "with %lld jobs; this call has %zu",
                            text, b->ident, (long long)total, n);
  if (!(st = sq_stmt(s, SQ_BATCH_CHILDREN))) return PAWL_ESTORE;
  sq_bind_id(st, 1, &id);
  size_t k = 0;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW)
    if (k < n) sq_col_id(st, 0, &b->found_ids[k++]);
  sqlite3_reset(st);
  if (rc != SQLITE_DONE) return pawl__sq_fail(s, rc, "read the batch's jobs");
  if (k != n)
    return pawl__store_fail(&s->base, PAWL_ECONFLICT,
                            "batch %s made under the identity \"%.200s\" "
                            "has %zu of its %zu jobs left",
                            text, b->ident, k, n);
  *b->found_id = id;
  *b->found = *found = 1;
  return 0;
}

int pawl__sq_batch_create(store_t *base, const store_batch_new_t *b,
                          const store_new_job_t *jobs, size_t n) {
  sq_store_t *s = (sq_store_t *)base;
  int rc = pawl__sq_begin(s);
  if (rc) return rc;
  int64_t now = pawl__store_now(base); /* under the write lock */
  if (b->ident) {
    int found = 0;
    rc = sq_batch_find(s, b, n, &found);
    if (rc || found) return pawl__sq_end(s, rc);
  }
  sqlite3_stmt *st = sq_stmt(s, SQ_BATCH_ADD);
  if (!st) return pawl__sq_end(s, PAWL_ESTORE);
  sq_bind_id(st, 1, &b->id);
  sqlite3_bind_int64(st, 2, (int64_t)n);
  sq_bind_text(st, 3, b->enqueued_by);
  sqlite3_bind_int64(st, 4, now);
  sq_bind_text(st, 5, b->ident);
  rc = sq_exec(s, st, "record the batch");
  for (int r = 0; r < 3 && !rc; r++) {
    const store_new_job_t *c = b->callbacks[r];
    if (!c) continue;
    if (!(st = sq_stmt(s, SQ_BATCH_CB_ADD))) {
      rc = PAWL_ESTORE;
      break;
    }
    sq_bind_id(st, 1, &c->id);
    sq_bind_id(st, 2, &b->id);
    sqlite3_bind_int(st, 3, r + 1);
    sqlite3_bind_text(st, 4, c->type, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 5, c->queue ? c->queue : "default", -1,
                      SQLITE_STATIC);
    sqlite3_bind_int(st, 6, c->priority);
    sqlite3_bind_text(st, 7, c->payload ? c->payload : "{}", -1,
                      SQLITE_STATIC);
    sqlite3_bind_text(st, 8, c->tags ? c->tags : "[]", -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 9, c->max_attempts);
    sqlite3_bind_int(st, 10, c->timeout_s);
    sq_bind_text(st, 11, c->correlation_id);
    sq_bind_text(st, 12, c->enqueued_by);
    rc = sq_exec(s, st, "record a callback");
  }
  for (size_t i = 0; i < n && !rc; i++) {
    pawl_id_t id;
    int status;
    rc = pawl__sq_insert_one(s, &jobs[i], now, NULL, &id, &status);
  }
  return pawl__sq_end(s, rc);
}

int pawl__sq_batch_get(store_t *base, const pawl_id_t *id, int64_t now,
                       pawl_batch_t *out) {
  sq_store_t *s = (sq_store_t *)base;
  pawl_batch_t b;
  memset(&b, 0, sizeof b);
  b.id = *id;
  /* One read transaction: the counters and the children agree. */
  int rc = sqlite3_exec(s->db, "BEGIN", 0, 0, 0);
  if (rc != SQLITE_OK) return pawl__sq_fail(s, rc, "begin read");
  sqlite3_stmt *st = sq_stmt(s, SQ_BATCH_GET);
  rc = st ? 0 : PAWL_ESTORE;
  if (!rc) {
    sq_bind_id(st, 1, id);
    int step = sqlite3_step(st);
    if (step == SQLITE_ROW) {
      b.total = sqlite3_column_int64(st, 0);
      b.succeeded = sqlite3_column_int64(st, 1);
      b.failed = sqlite3_column_int64(st, 2);
      b.canceled = sqlite3_column_int64(st, 3);
      b.created_at = sqlite3_column_int64(st, 4);
      b.finished_at = sqlite3_column_int64(st, 5);
    } else if (step == SQLITE_DONE) {
      char text[PAWL_ID_STRLEN];
      pawl_id_format(id, text);
      rc = pawl__store_fail(base, PAWL_ENOTFOUND, "no batch %s", text);
    } else {
      rc = pawl__sq_fail(s, step, "read batch");
    }
    sqlite3_reset(st);
  }
  if (!rc && !(st = sq_stmt(s, SQ_BATCH_CBS))) rc = PAWL_ESTORE;
  if (!rc) {
    sq_bind_id(st, 1, id);
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
      int role = sqlite3_column_int(st, 0);
      if (role < 1 || role > 3) continue;
      pawl_batch_callback_t *c = &b.callbacks[role - 1];
      c->set = 1;
      sq_col_id(st, 1, &c->id);
      c->fired_at = sqlite3_column_int64(st, 2);
    }
    if (step != SQLITE_DONE) rc = pawl__sq_fail(s, step, "read callbacks");
    sqlite3_reset(st);
  }
  int64_t life_ended = 0, exec_ended = 0;
  if (!rc && !(st = sq_stmt(s, SQ_BATCH_STATES))) rc = PAWL_ESTORE;
  if (!rc) {
    sq_bind_id(st, 1, id);
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
      int state = sqlite3_column_int(st, 0);
      if (state >= 0 && state < PAWL_STATE_COUNT)
        b.states[state] = sqlite3_column_int64(st, 1);
      int64_t ran = sqlite3_column_int64(st, 2);
      b.exec_ms += ran;
      exec_ended += ran; /* successes: ended */
      life_ended += sqlite3_column_int64(st, 3);
    }
    if (step != SQLITE_DONE) rc = pawl__sq_fail(s, step, "read children");
    sqlite3_reset(st);
  }
  if (!rc && !(st = sq_stmt(s, SQ_BATCH_ATTEMPTS))) rc = PAWL_ESTORE;
  if (!rc) {
    sq_bind_id(st, 1, id);
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
      int64_t ran = sqlite3_column_int64(st, 1);
      b.exec_ms += ran;
      if (sqlite3_column_int(st, 0)) exec_ended += ran;
    }
    if (step != SQLITE_DONE) rc = pawl__sq_fail(s, step, "read attempts");
    sqlite3_reset(st);
  }
  sqlite3_exec(s->db, "COMMIT", 0, 0, 0);
  if (rc) return rc;
  b.wall_ms = (b.finished_at ? b.finished_at : now) - b.created_at;
  if (b.wall_ms < 0) b.wall_ms = 0;
  b.overhead_ms = life_ended - exec_ended;
  *out = b;
  return 0;
}

int pawl__sq_batch_of(store_t *base, const pawl_id_t *id, pawl_id_t *batch,
                      int *role) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_BATCH_OF);
  if (!st) return PAWL_ESTORE;
  sq_bind_id(st, 1, id);
  int step = sqlite3_step(st);
  *role = -1;
  if (step == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
    sq_col_id(st, 0, batch);
    *role = PAWL_BATCH_CHILD;
  }
  sqlite3_reset(st);
  if (step != SQLITE_ROW && step != SQLITE_DONE)
    return pawl__sq_fail(s, step, "read the job's batch");
  if (*role >= 0) return 0;
  if (!(st = sq_stmt(s, SQ_BATCH_OF_CB))) return PAWL_ESTORE;
  sq_bind_id(st, 1, id);
  step = sqlite3_step(st);
  if (step == SQLITE_ROW) {
    sq_col_id(st, 0, batch);
    *role = sqlite3_column_int(st, 1);
  }
  sqlite3_reset(st);
  if (step != SQLITE_ROW && step != SQLITE_DONE)
    return pawl__sq_fail(s, step, "read the job's batch");
  return 0;
}
