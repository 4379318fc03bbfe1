/* jobs.c: SQLite store, jobs: insert (with the idempotency and business-key
 * checks), get, list, progress and the keys' look-ups (store.h, "jobs" and
 * "keys"). */
#include "sqlite_int.h"

/* The SQL of this file's statements, by their ids (sqlite_int.h,
 * "Statements"). */
#define SQ_HERE SQ__JOBS
const char *const pawl__sq_sql_jobs[SQ__CLAIM - SQ__JOBS] = {
    SQ_AT(SQ_IDEM_FIND) = "SELECT job_id FROM pawl_idempotency WHERE key = ?1",
    SQ_AT(SQ_IDEM_ADD) =
        "INSERT INTO pawl_idempotency (key, job_id, created_at) "
        "VALUES (?1, ?2, ?3)",
    SQ_AT(SQ_BIZ_FIND) = "SELECT id FROM pawl_jobs WHERE business_key = ?1 AND "
                         "state IN (0, 1, 5, 6)",
    SQ_AT(SQ_INSERT) = SQLITE_SQL_INSERT,
    SQ_AT(SQ_LIST) =
        "SELECT " SQLITE_JOB_COLS " FROM pawl_jobs WHERE "
        "(?1 IS NULL OR state = ?1) AND (?2 IS NULL OR queue = ?2) "
        "AND (?3 IS NULL OR type = ?3) ORDER BY id DESC LIMIT ?4",
    /* The dead-letter set has its own index; list it through that. */
    SQ_AT(SQ_LIST_FAILED) =
        "SELECT " SQLITE_JOB_COLS " FROM pawl_jobs WHERE "
        "state = 3 AND (?2 IS NULL OR queue = ?2) AND "
        "(?3 IS NULL OR type = ?3) ORDER BY id DESC LIMIT ?4",
    /* Progress is not a transition: no version, no updated_at. */
    SQ_AT(SQ_PROGRESS) = "UPDATE pawl_jobs SET progress_done = ?1, "
                         "progress_total = ?2 WHERE id = ?3 AND state = 1 AND "
                         "lease_token = ?4 AND attempt = ?5",
    SQ_AT(SQ_EXISTS) = "SELECT 1 FROM pawl_jobs WHERE id = ?1",
};
#undef SQ_HERE

/* ---- jobs --------------------------------------------------------------- */

static int sq_find_id(sq_store_t *s, int stmt_id, const char *key,
                      pawl_id_t *out) {
  sqlite3_stmt *st = sq_stmt(s, stmt_id);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) sq_col_id(st, 0, out);
  sqlite3_reset(st);
  if (rc == SQLITE_ROW) return 0;
  if (rc == SQLITE_DONE) return PAWL_ENOTFOUND;
  return pawl__sq_fail(s, rc, "look up key");
}

/* `prev`: the id the job before it in this insert got (NULL: none), for
 * j->after_prev. */
int pawl__sq_insert_one(sq_store_t *s, const store_new_job_t *j, int64_t now,
                        const pawl_id_t *prev, pawl_id_t *id_out,
                        int *status) {
  int rc;
  if (j->idempotency_key) {
    rc = sq_find_id(s, SQ_IDEM_FIND, j->idempotency_key, id_out);
    if (rc == 0) {
      *status = PAWL_ENQ_DUPLICATE;
      return 0;
    }
    if (rc != PAWL_ENOTFOUND) return rc;
  }
  if (j->business_key) {
    rc = sq_find_id(s, SQ_BIZ_FIND, j->business_key, id_out);
    if (rc == 0) {
      if (j->return_existing) {
        *status = PAWL_ENQ_EXISTING;
        return 0;
      }
      char text[PAWL_ID_STRLEN];
      pawl_id_format(id_out, text);
      return pawl__store_fail(&s->base, PAWL_EKEY,
                        "business key \"%s\" is held by live job %s",
                        j->business_key, text);
    }
    if (rc != PAWL_ENOTFOUND) return rc;
  }
  sqlite3_stmt *st = sq_stmt(s, SQ_INSERT);
  if (!st) return PAWL_ESTORE;
  int64_t run_at = j->run_at ? j->run_at : now;
  sq_bind_id(st, 1, &j->id);
  sqlite3_bind_text(st, 2, j->type, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 3, j->queue ? j->queue : "default", -1, SQLITE_STATIC);
  int deps = j->nafter || (j->after_prev && prev);
  sqlite3_bind_int(st, 4, j->blocked || deps ? PAWL_BLOCKED : PAWL_PENDING);
  sqlite3_bind_int(st, 5, j->priority);
  int64_t boost;
  if ((rc = pawl__sq_queue_boost(s, j->queue ? j->queue : "default", &boost)))
    return rc;
  sqlite3_bind_int64(st, 6, store_rank(j->priority, run_at, boost));
  sqlite3_bind_text(st, 7, j->payload ? j->payload : "{}", -1, SQLITE_STATIC);
  sq_bind_text(st, 8, j->params);
  sqlite3_bind_text(st, 9, j->tags ? j->tags : "[]", -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 10, run_at);
  sqlite3_bind_int(st, 11, j->max_attempts);
  sqlite3_bind_int(st, 12, j->timeout_s);
  sq_bind_text(st, 13, j->idempotency_key);
  sq_bind_text(st, 14, j->business_key);
  sq_bind_text(st, 15, j->correlation_id);
  sq_bind_text(st, 16, j->enqueued_by);
  sqlite3_bind_int64(st, 17, now);
  sq_bind_text(st, 18, j->ordering_key);
  sq_bind_text(st, 19, j->resource);
  if (j->batch_id) sq_bind_id(st, 20, j->batch_id);
  sqlite3_bind_int(st, 21, j->depth);
  /* Pending and due later: early (V018), promoted by the claim when due. */
  sqlite3_bind_int(st, 22, !(j->blocked || deps) && run_at > now);
  if ((rc = sq_exec(s, st, "insert job"))) return rc;
  if (j->ordering_key) pawl__sq_key_note(s, j->ordering_key);
  if (j->signal_key && (rc = pawl__sq_sig_add(s, j, now)))
    return rc; /* signals */
  if (j->instance_key && (rc = pawl__sq_instance_take(s, j, now))) return rc;
  if (j->idempotency_key) {
    st = sq_stmt(s, SQ_IDEM_ADD);
    if (!st) return PAWL_ESTORE;
    sqlite3_bind_text(st, 1, j->idempotency_key, -1, SQLITE_STATIC);
    sq_bind_id(st, 2, &j->id);
    sqlite3_bind_int64(st, 3, now);
    if ((rc = sq_exec(s, st, "record idempotency key"))) return rc;
  }
  if (deps && (rc = pawl__sq_deps_link(s, j, prev, now))) return rc;
  *id_out = j->id;
  *status = PAWL_ENQ_NEW;
  return 0;
}

int pawl__sq_insert(store_t *base, const store_new_job_t *jobs, size_t n,
                    pawl_id_t *ids, int *status) {
  sq_store_t *s = (sq_store_t *)base;
  int rc = pawl__sq_begin(s);
  if (rc) return rc;
  /* Read under the write lock, as every transaction here: the times of
   * transactions follow their order of commit. */
  int64_t now = pawl__store_now(base);
  for (size_t i = 0; i < n && !rc; i++)
    rc = pawl__sq_insert_one(s, &jobs[i], now, i ? &ids[i - 1] : NULL, &ids[i],
                             &status[i]);
  return pawl__sq_end(s, rc);
}

int pawl__sq_get(store_t *base, const pawl_id_t *id, pawl_job_t **out) {
  return pawl__sq_read_job((sq_store_t *)base, id, out);
}

/* Steps the bound statement `st` of a listing and shows each job to `cb`.
 * The matching rows are read, and the statement reset, before the first
 * callback: a callback may then call anything on this handle (pawl_list
 * again, which reuses this statement; a write, which would change the
 * index the walk is on), and the walk is the rows that matched when it
 * started, as on PostgreSQL, whose result is complete before the first
 * callback too. The rows take memory up to the filter's limit. */
int pawl__sq_list_rows(sq_store_t *s, sqlite3_stmt *st, pawl_job_cb cb,
                       void *data) {
  pawl_job_t **jobs = NULL;
  size_t n = 0;
  int rc, err = 0;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    pawl_job_t **slot = pawl__store_push((void **)&jobs, &n, sizeof *jobs);
    if (!slot || !(*slot = pawl__sq_row_to_job(st, NULL))) {
      err = pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
      break;
    }
  }
  if (!err && rc != SQLITE_DONE) err = pawl__sq_fail(s, rc, "list jobs");
  sqlite3_reset(st);
  for (size_t i = 0; !err && i < n; i++) {
    int stop = cb(jobs[i], data);
    pawl_job_free(jobs[i]);
    jobs[i] = NULL;
    if (stop) break;
  }
  pawl_jobs_free(jobs, n); /* what the callbacks were not shown */
  return err;
}

int pawl__sq_list(store_t *base, const pawl_filter_t *f, pawl_job_cb cb,
                  void *data) {
  sq_store_t *s = (sq_store_t *)base;
  if (f->tag || f->older_than_ms) return pawl__sq_adm_list(base, f, cb, data);
  sqlite3_stmt *st = sq_stmt(s, f->state == PAWL_FAILED ? SQ_LIST_FAILED
                                                        : SQ_LIST);
  if (!st) return PAWL_ESTORE;
  if (f->state >= 0) sqlite3_bind_int(st, 1, f->state);
  sq_bind_text(st, 2, f->queue);
  sq_bind_text(st, 3, f->type);
  sqlite3_bind_int(st, 4, f->limit > 0 ? f->limit : 100);
  return pawl__sq_list_rows(s, st, cb, data);
}

int pawl__sq_find_idempotent(store_t *base, const char *key, pawl_id_t *out) {
  return sq_find_id((sq_store_t *)base, SQ_IDEM_FIND, key, out);
}

int pawl__sq_find_business(store_t *base, const char *key, pawl_id_t *out) {
  return sq_find_id((sq_store_t *)base, SQ_BIZ_FIND, key, out);
}

int pawl__sq_progress(store_t *base, const pawl_id_t *id,
                      const pawl_id_t *token, int32_t attempt, double done,
                      double total) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_PROGRESS);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_double(st, 1, done);
  sqlite3_bind_double(st, 2, total);
  sq_bind_id(st, 3, id);
  sq_bind_id(st, 4, token);
  sqlite3_bind_int(st, 5, attempt);
  int rc = sq_exec_write(s, st, "record progress");
  if (rc) return rc;
  return sqlite3_changes(s->db) == 1 ? 0 : pawl__store_not_held(&s->base, id, attempt);
}
