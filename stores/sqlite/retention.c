/* retention.c: SQLite store, retention: the walk over finished jobs and
 * their archiving or removal (store.h, "retention"). */
#include "sqlite_int.h"

/* The SQL of this file's statements, by their ids (sqlite_int.h,
 * "Statements"). */
#define SQ_HERE SQ__RETENTION
const char *const pawl__sq_sql_retention[SQ__ADMIN - SQ__RETENTION] = {
    /* retention: the walk in insert order, any state (the
     * caller decides); the moves check the state, the version the walk read
     * and deps_open in the statement itself. ?1 id, ?2 version, ?3 now. */
    SQ_AT(SQ_RET_SCAN) =
        "SELECT seq, id, version, state, created_at, "
        "finished_at, queue, type FROM pawl_jobs WHERE seq > ?1 "
        "ORDER BY seq LIMIT ?2",
    SQ_AT(SQ_RET_ARCHIVE_JOB) =
        "INSERT INTO pawl_jobs_archive SELECT ?3, * FROM "
        "pawl_jobs WHERE id = ?1 AND version = ?2 AND "
        "state IN (2, 3, 4) AND deps_open = 0",
    SQ_AT(SQ_RET_ARCHIVE_ATTEMPTS) =
        "INSERT INTO pawl_attempts_archive SELECT * "
        "FROM pawl_attempts WHERE job_id = ?1",
    SQ_AT(SQ_RET_ARCHIVE_EVENTS) = "INSERT INTO pawl_events_archive SELECT * "
                                   "FROM pawl_events WHERE job_id = ?1",
    SQ_AT(SQ_RET_ARCHIVE_LOGS) = "INSERT INTO pawl_logs_archive SELECT * FROM "
                                 "pawl_logs WHERE job_id = ?1",
    SQ_AT(SQ_RET_DELETE) =
        "DELETE FROM pawl_jobs WHERE id = ?1 AND version = ?2 "
        "AND state IN (2, 3, 4) AND deps_open = 0",
    SQ_AT(SQ_RET_DEPS_PARENT) = "DELETE FROM pawl_deps WHERE parent = ?1",
    SQ_AT(SQ_RET_DEPS_CHILD) = "DELETE FROM pawl_deps WHERE child = ?1",
};
#undef SQ_HERE

/* ---- retention ------------------------------------------------------------
 * The walk reads pages of rows by seq (the rowid: insert order, no index
 * to keep); the removal is one write transaction per page, a statement per
 * job so that each checks its own row. ON DELETE CASCADE (foreign keys are
 * on) takes the job's attempts, events, logs, steps, exit, instance,
 * signal, replacement links and recorded start; its dependency edges have
 * no foreign key and are deleted here. */

static void sq_ret_name(sqlite3_stmt *st, int col, char *out, size_t len) {
  const char *t = (const char *)sqlite3_column_text(st, col);
  snprintf(out, len, "%s", t ? t : "");
}

int pawl__sq_ret_scan(store_t *base, const store_pick_t *after, size_t max,
                      store_retain_row_t *out, size_t *n) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_RET_SCAN);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_int64(st, 1, after ? after->key : 0);
  sqlite3_bind_int64(st, 2, (int64_t)max);
  size_t k = 0;
  int rc;
  while (k < max && (rc = sqlite3_step(st)) == SQLITE_ROW) {
    store_retain_row_t *r = &out[k++];
    r->pick.key = sqlite3_column_int64(st, 0);
    sq_col_id(st, 1, &r->pick.id);
    r->pick.version = sqlite3_column_int64(st, 2);
    r->state = sqlite3_column_int(st, 3);
    r->created_at = sqlite3_column_int64(st, 4);
    r->finished_at = sqlite3_column_int64(st, 5);
    sq_ret_name(st, 6, r->queue, sizeof r->queue);
    sq_ret_name(st, 7, r->type, sizeof r->type);
  }
  if (k == max) rc = SQLITE_DONE;
  sqlite3_reset(st);
  if (rc != SQLITE_DONE) return pawl__sq_fail(s, rc, "scan jobs for retention");
  *n = k;
  return 0;
}

/* Runs statement `id` with the job's id (?1), and version and now when
 * `full`; *changes: rows it changed. */
static int sq_ret_run(sq_store_t *s, int id, const store_retain_row_t *r,
                      int full, int64_t now, const char *what,
                      int *changes) {
  sqlite3_stmt *st = sq_stmt(s, id);
  if (!st) return PAWL_ESTORE;
  sq_bind_id(st, 1, &r->pick.id);
  if (full) {
    sqlite3_bind_int64(st, 2, r->pick.version);
    if (id == SQ_RET_ARCHIVE_JOB) sqlite3_bind_int64(st, 3, now);
  }
  int rc = sq_exec(s, st, what);
  if (!rc && changes) *changes = sqlite3_changes(s->db);
  return rc;
}

int pawl__sq_ret_remove(store_t *base, const store_retain_row_t *rows,
                        size_t n, int archive, int *removed) {
  sq_store_t *s = (sq_store_t *)base;
  for (size_t i = 0; i < n; i++) removed[i] = 0;
  int rc = pawl__sq_begin(s);
  if (rc) return rc;
  int64_t now = pawl__store_now(base); /* under the write lock */
  for (size_t i = 0; i < n && !rc; i++) {
    const store_retain_row_t *r = &rows[i];
    int ch = 0;
    if (archive) {
      rc = sq_ret_run(s, SQ_RET_ARCHIVE_JOB, r, 1, now, "archive job", &ch);
      if (rc || !ch) continue; /* not (any more) one to remove */
      if (!(rc = sq_ret_run(s, SQ_RET_ARCHIVE_ATTEMPTS, r, 0, now,
                            "archive attempts", NULL)) &&
          !(rc = sq_ret_run(s, SQ_RET_ARCHIVE_EVENTS, r, 0, now,
                            "archive events", NULL)))
        rc = sq_ret_run(s, SQ_RET_ARCHIVE_LOGS, r, 0, now, "archive logs",
                        NULL);
      if (rc) continue;
    }
    rc = sq_ret_run(s, SQ_RET_DELETE, r, 1, now, "delete job", &ch);
    if (rc) continue;
    if (archive && ch != 1) {
      /* Archived above under the same check in this transaction: the row
       * cannot have changed in between. */
      rc = pawl__store_fail(base, PAWL_ESTORE,
                            "retention: an archived job was not deleted");
      continue;
    }
    if (!ch) continue;
    removed[i] = 1;
    if (!(rc = sq_ret_run(s, SQ_RET_DEPS_PARENT, r, 0, now,
                          "delete dependency edges", NULL)))
      rc = sq_ret_run(s, SQ_RET_DEPS_CHILD, r, 0, now,
                      "delete dependency edges", NULL);
  }
  rc = pawl__sq_end(s, rc);
  if (rc)
    for (size_t i = 0; i < n; i++) removed[i] = 0;
  return rc;
}
