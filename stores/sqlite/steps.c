/* steps.c: SQLite store, restartable steps and job instances (tables
 * pawl_steps, pawl_job_exits, pawl_instances, schema V012; store.h,
 * "steps"). None of it is on the claim's or the finish's path. */
#include "sqlite_int.h"

/* In pawl__store_step_fill()'s order (stores/store.h). */
#define SQLITE_STEP_COLS                                                     \
  "seq, attempt, idx, name, status, started_at, ended_at, exit_code, "       \
  "exit_message, read_count, write_count, filter_count, skip_count, "        \
  "commit_count, rollback_count, checkpoint, checkpoint_at"

/* The attempt ?3 of job ?1 is held by lease token ?2 (as SQ_PROGRESS). */
#define SQLITE_STEP_HELD                                                     \
  "EXISTS (SELECT 1 FROM pawl_jobs WHERE id = ?1 AND state = 1 AND "         \
  "lease_token = ?2 AND attempt = ?3)"

#define SQLITE_STEP_LIST                                                     \
  "SELECT " SQLITE_STEP_COLS " FROM pawl_steps WHERE job_id = ?1 ORDER BY seq"

#define SQLITE_STEP_EXIT_GET                                                 \
  "SELECT exit_code, exit_message FROM pawl_job_exits WHERE job_id = ?1"

#define SQLITE_STEP_INSTANCE_OF                                              \
  "SELECT key FROM pawl_instances WHERE job_id = ?1"

/* ?1..?3 the attempt, ?4 idx, ?5 name, ?6 now, ?7 checkpoint. */
#define SQLITE_STEP_BEGIN                                                    \
  "INSERT INTO pawl_steps (job_id, attempt, idx, name, status, started_at, " \
  "checkpoint) SELECT ?1, ?3, ?4, ?5, 0, ?6, ?7 WHERE " SQLITE_STEP_HELD

/* Rows an earlier attempt left running: it never came back to end them.
 * ?1 job, ?2 the row just begun, ?3 now. */
#define SQLITE_STEP_LOST                                                     \
  "UPDATE pawl_steps SET status = 2, ended_at = ?3, exit_message = "         \
  "coalesce(exit_message, 'the attempt ended without ending this step "     \
  "(its node stopped or died, or it timed out)') WHERE job_id = ?1 AND "     \
  "status = 0 AND seq <> ?2"

/* ?1..?3 the attempt, ?4 seq, ?5 checkpoint (NULL: kept), ?6 now, ?7..?12
 * the counts. */
#define SQLITE_STEP_SAVE                                                     \
  "UPDATE pawl_steps SET checkpoint = coalesce(?5, checkpoint), "            \
  "checkpoint_at = CASE WHEN ?5 IS NULL THEN checkpoint_at ELSE ?6 END, "    \
  "read_count = ?7, write_count = ?8, filter_count = ?9, skip_count = ?10, " \
  "commit_count = ?11, rollback_count = ?12 WHERE seq = ?4 AND job_id = ?1 " \
  "AND status = 0 AND " SQLITE_STEP_HELD

/* ?1..?3 the attempt, ?4 seq, ?5 status, ?6 now, ?7 exit code, ?8 exit
 * message, ?9..?14 the counts. */
#define SQLITE_STEP_END                                                      \
  "UPDATE pawl_steps SET status = ?5, ended_at = ?6, exit_code = ?7, "       \
  "exit_message = ?8, read_count = ?9, write_count = ?10, filter_count = "   \
  "?11, skip_count = ?12, commit_count = ?13, rollback_count = ?14 WHERE "   \
  "seq = ?4 AND job_id = ?1 AND status = 0 AND " SQLITE_STEP_HELD

/* ?1..?3 the attempt, ?4 code, ?5 message, ?6 now. */
#define SQLITE_STEP_EXIT                                                     \
  "INSERT INTO pawl_job_exits (job_id, exit_code, exit_message, at) "        \
  "SELECT ?1, ?4, ?5, ?6 WHERE " SQLITE_STEP_HELD " ON CONFLICT (job_id) DO " \
  "UPDATE SET exit_code = excluded.exit_code, exit_message = "               \
  "excluded.exit_message, at = excluded.at"

/* The job holding instance (?1 type, ?2 key), and its state. */
#define SQLITE_INSTANCE_FIND                                                 \
  "SELECT j.id, j.state FROM pawl_instances i JOIN pawl_jobs j ON j.id = "   \
  "i.job_id WHERE i.type = ?1 AND i.key = ?2"

/* Takes instance (?1 type, ?2 key) for the new job ?3 at ?4: a new row,
 * or the row of a job canceled (one deleted took its row with it: the
 * foreign key's cascade). changes() is 0 when another job holds it. The
 * test is positive (the holder is seen canceled), as on PostgreSQL, where
 * a holder committed meanwhile may be newer than the statement's
 * snapshot. */
#define SQLITE_INSTANCE_TAKE                                                 \
  "INSERT INTO pawl_instances (type, key, job_id, created_at) VALUES (?1, "  \
  "?2, ?3, ?4) ON CONFLICT (type, key) DO UPDATE SET job_id = "              \
  "excluded.job_id, created_at = excluded.created_at WHERE EXISTS "          \
  "(SELECT 1 FROM pawl_jobs j WHERE j.id = pawl_instances.job_id AND "       \
  "j.state = 4)"

/* The SQL of this file's statements, by their ids (sqlite_int.h,
 * "Statements"). */
#define SQ_HERE SQ__STEPS
const char *const pawl__sq_sql_steps[SQ__ALERTS - SQ__STEPS] = {
    /* A read transaction (deferred: no write lock, no gate). */
    SQ_AT(SQ_STEP_READ_BEGIN) = "BEGIN",
    SQ_AT(SQ_STEP_LIST) = SQLITE_STEP_LIST,
    SQ_AT(SQ_STEP_EXIT_GET) = SQLITE_STEP_EXIT_GET,
    SQ_AT(SQ_STEP_INSTANCE_OF) = SQLITE_STEP_INSTANCE_OF,
    SQ_AT(SQ_STEP_BEGIN) = SQLITE_STEP_BEGIN,
    SQ_AT(SQ_STEP_LOST) = SQLITE_STEP_LOST,
    SQ_AT(SQ_STEP_SAVE) = SQLITE_STEP_SAVE,
    SQ_AT(SQ_STEP_END) = SQLITE_STEP_END,
    SQ_AT(SQ_STEP_EXIT) = SQLITE_STEP_EXIT,
    SQ_AT(SQ_INSTANCE_FIND) = SQLITE_INSTANCE_FIND,
    SQ_AT(SQ_INSTANCE_TAKE) = SQLITE_INSTANCE_TAKE,
};
#undef SQ_HERE

/* ---- steps (restartable steps, job instances) --------------------------- */

/* Binds the attempt (?1 job, ?2 token, ?3 attempt) of SQLITE_STEP_HELD. */
static void sq_step_bind_held(sqlite3_stmt *st, const pawl_id_t *id,
                              const pawl_id_t *token, int32_t attempt) {
  sq_bind_id(st, 1, id);
  sq_bind_id(st, 2, token);
  sqlite3_bind_int(st, 3, attempt);
}

/* One text column of the first row of a statement reading by job id ?1,
 * copied into *out (NULL for no row or NULL). */
static int sq_step_text(sq_store_t *s, int stmt, const pawl_id_t *id, int ncol,
                        char **out) {
  sqlite3_stmt *st = sq_stmt(s, stmt);
  if (!st) return PAWL_ESTORE;
  sq_bind_id(st, 1, id);
  int rc = sqlite3_step(st), err = 0;
  for (int c = 0; c < ncol; c++) out[c] = NULL;
  if (rc == SQLITE_ROW) {
    for (int c = 0; c < ncol && !err; c++)
      if (pawl__store_dup(&out[c], (const char *)sqlite3_column_text(st, c)))
        err = pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
  } else if (rc != SQLITE_DONE) {
    err = pawl__sq_fail(s, rc, "read steps");
  }
  sqlite3_reset(st);
  return err;
}

int pawl__sq_steps_get(store_t *base, const pawl_id_t *id, pawl_steps_t **out) {
  sq_store_t *s = (sq_store_t *)base;
  *out = NULL;
  /* One read transaction: the rows, the exit and the instance agree. */
  sqlite3_stmt *st = sq_stmt(s, SQ_STEP_READ_BEGIN);
  int rc = st ? sq_exec(s, st, "read steps") : PAWL_ESTORE;
  if (rc) return rc;
  st = sq_stmt(s, SQ_EXISTS);
  if (!st) rc = PAWL_ESTORE;
  if (!rc) {
    sq_bind_id(st, 1, id);
    int r = sqlite3_step(st);
    sqlite3_reset(st);
    if (r == SQLITE_DONE)
      rc = pawl__store_no_job(base, id);
    else if (r != SQLITE_ROW)
      rc = pawl__sq_fail(s, r, "read steps");
  }
  pawl_steps_t *out_s = rc ? NULL : pawl__calloc(1, sizeof *out_s);
  if (!rc && !out_s) rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
  if (!rc && !(st = sq_stmt(s, SQ_STEP_LIST))) rc = PAWL_ESTORE;
  if (!rc) {
    sq_bind_id(st, 1, id);
    int r;
    while (!rc && (r = sqlite3_step(st)) == SQLITE_ROW) {
      pawl_step_exec_t *e = pawl__store_step_push(out_s);
      store_row_t row = pawl__sq_row(st);
      if (!e || pawl__store_step_fill(e, &row) != 0)
        rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
    }
    if (!rc && r != SQLITE_DONE) rc = pawl__sq_fail(s, r, "read steps");
    sqlite3_reset(st);
  }
  char *exit[2] = {NULL, NULL};
  if (!rc) rc = sq_step_text(s, SQ_STEP_EXIT_GET, id, 2, exit);
  if (out_s) {
    out_s->exit_code = exit[0];
    out_s->exit_message = exit[1];
  }
  if (!rc) rc = sq_step_text(s, SQ_STEP_INSTANCE_OF, id, 1, &out_s->instance);
  /* A read: its end cannot lose anything; keep the first error. */
  sqlite3_stmt *end = sq_stmt(s, SQ_COMMIT);
  if (end) {
    sqlite3_step(end);
    sqlite3_reset(end);
  }
  if (!sqlite3_get_autocommit(s->db)) sqlite3_exec(s->db, "ROLLBACK", 0, 0, 0);
  if (rc) {
    pawl_steps_free(out_s);
    return rc;
  }
  *out = out_s;
  return 0;
}

int pawl__sq_step_begin(store_t *base, const pawl_id_t *id,
                        const pawl_id_t *token, int32_t attempt,
                        int32_t index, const char *name,
                        const char *checkpoint, int64_t *exec) {
  sq_store_t *s = (sq_store_t *)base;
  int rc = pawl__sq_begin(s);
  if (rc) return rc;
  int64_t now = pawl__store_now(base); /* under the write lock */
  sqlite3_stmt *st = sq_stmt(s, SQ_STEP_BEGIN);
  if (!st) rc = PAWL_ESTORE;
  if (!rc) {
    sq_step_bind_held(st, id, token, attempt);
    sqlite3_bind_int(st, 4, index);
    sqlite3_bind_text(st, 5, name, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 6, now);
    sq_bind_text(st, 7, checkpoint);
    rc = sq_exec(s, st, "begin step");
  }
  if (!rc && sqlite3_changes(s->db) != 1)
    rc = pawl__store_not_held(base, id, attempt);
  int64_t seq = rc ? 0 : sqlite3_last_insert_rowid(s->db);
  if (!rc && !(st = sq_stmt(s, SQ_STEP_LOST))) rc = PAWL_ESTORE;
  if (!rc) {
    sq_bind_id(st, 1, id);
    sqlite3_bind_int64(st, 2, seq);
    sqlite3_bind_int64(st, 3, now);
    rc = sq_exec(s, st, "end lost steps");
  }
  rc = pawl__sq_end(s, rc);
  if (!rc) *exec = seq;
  return rc;
}

static void sq_step_bind_counts(sqlite3_stmt *st, int first,
                                const int64_t *counts) {
  for (int k = 0; k < PAWL_STEP_NCOUNTS; k++)
    sqlite3_bind_int64(st, first + k, counts ? counts[k] : 0);
}

/* Runs a bound guarded write: PAWL_ELEASE when it changed no row. */
static int sq_step_write(sq_store_t *s, sqlite3_stmt *st, const pawl_id_t *id,
                         int32_t attempt, const char *what) {
  int rc = sq_exec_write(s, st, what);
  if (rc) return rc;
  return sqlite3_changes(s->db) == 1 ? 0
                                     : pawl__store_not_held(&s->base, id, attempt);
}

int pawl__sq_step_save(store_t *base, const pawl_id_t *id,
                       const pawl_id_t *token, int32_t attempt, int64_t exec,
                       const char *checkpoint, const int64_t *counts) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_STEP_SAVE);
  if (!st) return PAWL_ESTORE;
  sq_step_bind_held(st, id, token, attempt);
  sqlite3_bind_int64(st, 4, exec);
  sq_bind_text(st, 5, checkpoint);
  sqlite3_bind_int64(st, 6, pawl__store_now(base));
  sq_step_bind_counts(st, 7, counts);
  return sq_step_write(s, st, id, attempt, "save checkpoint");
}

int pawl__sq_step_end(store_t *base, const pawl_id_t *id,
                      const pawl_id_t *token, int32_t attempt, int64_t exec,
                      int status, const char *exit_code,
                      const char *exit_message, const int64_t *counts) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_STEP_END);
  if (!st) return PAWL_ESTORE;
  sq_step_bind_held(st, id, token, attempt);
  sqlite3_bind_int64(st, 4, exec);
  sqlite3_bind_int(st, 5, status);
  sqlite3_bind_int64(st, 6, pawl__store_now(base));
  sq_bind_text(st, 7, exit_code);
  sq_bind_text(st, 8, exit_message);
  sq_step_bind_counts(st, 9, counts);
  return sq_step_write(s, st, id, attempt, "end step");
}

int pawl__sq_step_exit(store_t *base, const pawl_id_t *id,
                       const pawl_id_t *token, int32_t attempt,
                       const char *exit_code, const char *exit_message) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_STEP_EXIT);
  if (!st) return PAWL_ESTORE;
  sq_step_bind_held(st, id, token, attempt);
  sqlite3_bind_text(st, 4, exit_code, -1, SQLITE_STATIC);
  sq_bind_text(st, 5, exit_message);
  sqlite3_bind_int64(st, 6, pawl__store_now(base));
  return sq_step_write(s, st, id, attempt, "set exit code");
}

int pawl__sq_instance_find(store_t *base, const char *type, const char *key,
                           pawl_id_t *id, int *state) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_INSTANCE_FIND);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_text(st, 1, type, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) {
    sq_col_id(st, 0, id);
    *state = sqlite3_column_int(st, 1);
  }
  sqlite3_reset(st);
  if (rc == SQLITE_ROW) return 0;
  if (rc == SQLITE_DONE) return PAWL_ENOTFOUND;
  return pawl__sq_fail(s, rc, "look up job instance");
}

/* In the insert's transaction, after the job's row (pawl__sq_insert_one). */
int pawl__sq_instance_take(sq_store_t *s, const store_new_job_t *j,
                           int64_t now) {
  sqlite3_stmt *st = sq_stmt(s, SQ_INSTANCE_TAKE);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_text(st, 1, j->type, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 2, j->instance_key, -1, SQLITE_STATIC);
  sq_bind_id(st, 3, &j->id);
  sqlite3_bind_int64(st, 4, now);
  int rc = sq_exec(s, st, "record job instance");
  if (rc) return rc;
  if (sqlite3_changes(s->db) == 1) return 0;
  return pawl__store_fail(&s->base, PAWL_ECONFLICT,
                          "job instance %s of %s is held by another job",
                          j->instance_key, j->type);
}
