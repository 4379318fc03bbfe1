/* recurring.c: SQLite store, recurring definitions (table pawl_recurring,
 * schema V005; store.h, "recurring"). */
#include "sqlite_int.h"

/* In pawl__store_rec_fill()'s order (stores/store.h). */
#define SQLITE_REC_COLS                                                      \
  "name, expr, tz, misfire, catch_up_limit, type, payload, queue, "          \
  "priority, max_attempts, timeout_s, enabled, paused, source, script, "     \
  "next_fire_at, last_fire_at, last_job_id, created_at, updated_at, version, " \
  "load_error"

/* ?1..?16 as sq_rec_bind() binds them, ?17 now. */
#define SQLITE_REC_INSERT                                                    \
  "INSERT INTO pawl_recurring (name, expr, tz, misfire, catch_up_limit, "    \
  "type, payload, queue, priority, max_attempts, timeout_s, enabled, "       \
  "paused, source, script, next_fire_at, created_at, updated_at) VALUES "    \
  "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, " \
  "?17, ?17) ON CONFLICT (name) DO "

#define SQLITE_REC_ADD SQLITE_REC_INSERT "NOTHING"

/* A script's definition: written over a script-born one (enabled again,
 * its load error cleared; paused and the last fire are the operator's and
 * the schedule's, kept), never over an operator's. */
#define SQLITE_REC_PUT_SCRIPT                                                \
  SQLITE_REC_INSERT                                                          \
  "UPDATE SET expr = excluded.expr, tz = excluded.tz, misfire = "            \
  "excluded.misfire, catch_up_limit = excluded.catch_up_limit, type = "      \
  "excluded.type, payload = excluded.payload, queue = excluded.queue, "      \
  "priority = excluded.priority, max_attempts = excluded.max_attempts, "     \
  "timeout_s = excluded.timeout_s, enabled = 1, script = excluded.script, "  \
  "load_error = NULL, "                                                      \
  "next_fire_at = excluded.next_fire_at, updated_at = excluded.updated_at, " \
  "version = pawl_recurring.version + 1 WHERE pawl_recurring.source = "      \
  "'script'"

#define SQLITE_REC_GET                                                       \
  "SELECT " SQLITE_REC_COLS " FROM pawl_recurring WHERE name = ?1"
#define SQLITE_REC_LIST                                                      \
  "SELECT " SQLITE_REC_COLS " FROM pawl_recurring ORDER BY name"

/* Every field but created_at, as a compare-and-set on the version ?20. */
#define SQLITE_REC_UPDATE                                                    \
  "UPDATE pawl_recurring SET expr = ?2, tz = ?3, misfire = ?4, "             \
  "catch_up_limit = ?5, type = ?6, payload = ?7, queue = ?8, priority = ?9, "\
  "max_attempts = ?10, timeout_s = ?11, enabled = ?12, paused = ?13, "       \
  "source = ?14, script = ?15, next_fire_at = ?16, last_fire_at = ?17, "     \
  "last_job_id = ?18, updated_at = ?19, version = version + 1 WHERE "        \
  "name = ?1 AND version = ?20"

#define SQLITE_REC_REMOVE "DELETE FROM pawl_recurring WHERE name = ?1"

/* The due ones through the partial index pawl_recurring_due (its WHERE is
 * repeated so that the planner may use it): ?1 now, ?2 the batch. */
#define SQLITE_REC_DUE                                                       \
  "SELECT " SQLITE_REC_COLS " FROM pawl_recurring WHERE enabled = 1 AND "    \
  "paused = 0 AND next_fire_at IS NOT NULL AND next_fire_at <= ?1 "          \
  "ORDER BY next_fire_at LIMIT ?2"

/* A tick's compare-and-set on next_fire_at (?5 as read); a definition
 * paused or disabled meanwhile is not advanced. ?2 the new next (NULL:
 * none), ?3 the last fire (NULL: unchanged), ?4 now. */
#define SQLITE_REC_ADVANCE                                                   \
  "UPDATE pawl_recurring SET next_fire_at = ?2, last_fire_at = "             \
  "coalesce(?3, last_fire_at), updated_at = ?4, version = version + 1 "      \
  "WHERE name = ?1 AND next_fire_at = ?5 AND enabled = 1 AND paused = 0"

#define SQLITE_REC_LAST_JOB                                                  \
  "UPDATE pawl_recurring SET last_job_id = ?2 WHERE name = ?1"

/* ?1 a JSON array of the scripts there are, ?2 now. */
#define SQLITE_REC_DISABLE_GONE                                              \
  "UPDATE pawl_recurring SET enabled = 0, updated_at = ?2, version = "       \
  "version + 1 WHERE source = 'script' AND enabled = 1 AND script NOT IN "   \
  "(SELECT value FROM json_each(?1))"
/* ?1 a JSON array of the scripts that went, ?2 now. */
#define SQLITE_REC_DISABLE_LISTED                                            \
  "UPDATE pawl_recurring SET enabled = 0, updated_at = ?2, version = "       \
  "version + 1 WHERE source = 'script' AND enabled = 1 AND script IN "       \
  "(SELECT value FROM json_each(?1))"
/* ?1 a script that failed to load, ?2 what the node said, ?3 now: noted on
 * its definitions, which are otherwise left as they are (the version too:
 * an operator's compare-and-set is not disturbed by a note). */
#define SQLITE_REC_LOAD_ERROR                                                \
  "UPDATE pawl_recurring SET load_error = ?2, updated_at = ?3 WHERE source " \
  "= 'script' AND script = ?1 AND load_error IS NOT ?2"

/* The SQL of this file's statements, by their ids (sqlite_int.h,
 * "Statements"). */
#define SQ_HERE SQ__RECURRING
const char *const pawl__sq_sql_recurring[SQ__FLOW - SQ__RECURRING] = {
    SQ_AT(SQ_REC_ADD) = SQLITE_REC_ADD,
    SQ_AT(SQ_REC_PUT_SCRIPT) = SQLITE_REC_PUT_SCRIPT,
    SQ_AT(SQ_REC_GET) = SQLITE_REC_GET,
    SQ_AT(SQ_REC_LIST) = SQLITE_REC_LIST,
    SQ_AT(SQ_REC_UPDATE) = SQLITE_REC_UPDATE,
    SQ_AT(SQ_REC_REMOVE) = SQLITE_REC_REMOVE,
    SQ_AT(SQ_REC_DUE) = SQLITE_REC_DUE,
    SQ_AT(SQ_REC_ADVANCE) = SQLITE_REC_ADVANCE,
    SQ_AT(SQ_REC_LAST_JOB) = SQLITE_REC_LAST_JOB,
    SQ_AT(SQ_REC_DISABLE_GONE) = SQLITE_REC_DISABLE_GONE,
    SQ_AT(SQ_REC_DISABLE_LISTED) = SQLITE_REC_DISABLE_LISTED,
    SQ_AT(SQ_REC_LOAD_ERROR) = SQLITE_REC_LOAD_ERROR,
};
#undef SQ_HERE

/* ---- recurring definitions (store.h, "recurring") ------------------------- */

static void sq_rec_bind(sqlite3_stmt *st, const pawl_recurring_t *d) {
  sqlite3_bind_text(st, 1, d->name, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 2, d->expr, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 3, d->tz ? d->tz : "UTC", -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 4, pawl_misfire_name(d->misfire), -1, SQLITE_STATIC);
  sqlite3_bind_int(st, 5, d->catch_up_limit);
  sqlite3_bind_text(st, 6, d->type, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 7, d->payload ? d->payload : "{}", -1, SQLITE_STATIC);
  sq_bind_text(st, 8, d->queue);
  sqlite3_bind_int(st, 9, d->priority);
  sqlite3_bind_int(st, 10, d->max_attempts);
  sqlite3_bind_int(st, 11, d->timeout_s);
  sqlite3_bind_int(st, 12, d->enabled ? 1 : 0);
  sqlite3_bind_int(st, 13, d->paused ? 1 : 0);
  sqlite3_bind_text(st, 14, d->from_script ? "script" : "operator", -1,
                    SQLITE_STATIC);
  sq_bind_text(st, 15, d->script);
  sq_bind_opt_int(st, 16, d->next_fire_at);
}

int pawl__sq_rec_put(store_t *base, const pawl_recurring_t *d, int how,
                     int *done) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st =
      sq_stmt(s, how == STORE_REC_SCRIPT ? SQ_REC_PUT_SCRIPT : SQ_REC_ADD);
  if (!st) return PAWL_ESTORE;
  sq_rec_bind(st, d);
  sqlite3_bind_int64(st, 17, pawl__store_now(base));
  int rc = sq_exec_write(s, st, "write recurring definition");
  if (rc) return rc;
  *done = sqlite3_changes(s->db) == 1;
  if (!*done && how == STORE_REC_ADD)
    return pawl__store_fail(base, PAWL_EKEY,
                            "recurring definition \"%s\" already exists",
                            d->name);
  return 0;
}

/* Reads the rows of a bound statement into an array. */
static int sq_rec_rows(sq_store_t *s, sqlite3_stmt *st, pawl_recurring_t **out,
                       size_t *n) {
  pawl_recurring_t *defs = NULL;
  size_t count = 0;
  int rc, err = 0;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    pawl_recurring_t *d = pawl__store_push((void **)&defs, &count, sizeof *d);
    store_row_t r = pawl__sq_row(st);
    if (!d || pawl__store_rec_fill(d, &r) != 0) {
      err = pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
      break;
    }
  }
  if (!err && rc != SQLITE_DONE)
    err = pawl__sq_fail(s, rc, "read recurring definitions");
  sqlite3_reset(st);
  if (err) {
    pawl_recurring_free(defs, count);
    return err;
  }
  *out = defs;
  *n = count;
  return 0;
}

int pawl__sq_rec_get(store_t *base, const char *name,
                     pawl_recurring_t **out) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_REC_GET);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
  pawl_recurring_t *d = NULL;
  size_t n = 0;
  int rc = sq_rec_rows(s, st, &d, &n);
  if (rc) return rc;
  if (n == 0)
    return pawl__store_fail(base, PAWL_ENOTFOUND,
                            "no recurring definition \"%s\"", name);
  *out = d;
  return 0;
}

int pawl__sq_rec_list(store_t *base, pawl_recurring_t **out, size_t *n) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_REC_LIST);
  if (!st) return PAWL_ESTORE;
  return sq_rec_rows(s, st, out, n);
}

int pawl__sq_rec_update(store_t *base, const pawl_recurring_t *d,
                        int *changed) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_REC_UPDATE);
  if (!st) return PAWL_ESTORE;
  sq_rec_bind(st, d);
  sq_bind_opt_int(st, 17, d->last_fire_at);
  if (d->has_last_job)
    sq_bind_id(st, 18, &d->last_job_id);
  else
    sqlite3_bind_null(st, 18);
  sqlite3_bind_int64(st, 19, pawl__store_now(base));
  sqlite3_bind_int64(st, 20, d->version);
  int rc = sq_exec_write(s, st, "change recurring definition");
  if (!rc) *changed = sqlite3_changes(s->db) == 1;
  return rc;
}

int pawl__sq_rec_remove(store_t *base, const char *name) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_REC_REMOVE);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
  int rc = sq_exec_write(s, st, "remove recurring definition");
  if (!rc && sqlite3_changes(s->db) == 0)
    rc = pawl__store_fail(base, PAWL_ENOTFOUND,
                          "no recurring definition \"%s\"", name);
  return rc;
}

int pawl__sq_rec_due(store_t *base, int64_t now, size_t max,
                     pawl_recurring_t **out, size_t *n) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_REC_DUE);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_int64(st, 1, now);
  sqlite3_bind_int64(st, 2, (int64_t)max);
  return sq_rec_rows(s, st, out, n);
}

/* One definition's advance, inside the caller's transaction. */
static int sq_rec_advance_one(sq_store_t *s, store_rec_advance_t *a,
                              int64_t now) {
  sqlite3_stmt *st = sq_stmt(s, SQ_REC_ADVANCE);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_text(st, 1, a->name, -1, SQLITE_STATIC);
  sq_bind_opt_int(st, 2, a->next);
  sq_bind_opt_int(st, 3, a->last_fire);
  sqlite3_bind_int64(st, 4, now);
  sqlite3_bind_int64(st, 5, a->expect_next);
  int rc = sq_exec(s, st, "advance recurring definition");
  if (rc) return rc;
  a->advanced = sqlite3_changes(s->db) == 1;
  a->made = 0;
  if (!a->advanced || a->njobs == 0) return 0;
  pawl_id_t id;
  for (size_t i = 0; i < a->njobs; i++) {
    int status;
    if ((rc = pawl__sq_insert_one(s, &a->jobs[i], now, NULL, &id, &status)))
      return rc;
    if (status == PAWL_ENQ_NEW) a->made++;
  }
  st = sq_stmt(s, SQ_REC_LAST_JOB);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_text(st, 1, a->name, -1, SQLITE_STATIC);
  sq_bind_id(st, 2, &id);
  return sq_exec(s, st, "record the last job of a recurring definition");
}

int pawl__sq_rec_advance(store_t *base, store_rec_advance_t *a, size_t n) {
  sq_store_t *s = (sq_store_t *)base;
  if (n == 0) return 0;
  int rc = pawl__sq_begin(s);
  int64_t now = rc ? 0 : pawl__store_now(base); /* under the write lock */
  for (size_t i = 0; i < n && !rc; i++) rc = sq_rec_advance_one(s, &a[i], now);
  rc = pawl__sq_end(s, rc);
  if (rc)
    for (size_t i = 0; i < n; i++) a[i].advanced = 0, a[i].made = 0;
  return rc;
}

int pawl__sq_rec_disable_gone(store_t *base, const char *const *scripts,
                              size_t n, int listed, size_t *count) {
  sq_store_t *s = (sq_store_t *)base;
  pawl_buf_t b;
  pawl__buf_init(&b);
  pawl__buf_putc(&b, '[');
  for (size_t i = 0; i < n; i++) {
    if (i) pawl__buf_putc(&b, ',');
    pawl__buf_json_string(&b, scripts[i], strlen(scripts[i]));
  }
  pawl__buf_putc(&b, ']');
  if (b.oom) {
    pawl__buf_free(&b);
    return pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
  }
  sqlite3_stmt *st =
      sq_stmt(s, listed ? SQ_REC_DISABLE_LISTED : SQ_REC_DISABLE_GONE);
  int rc = PAWL_ESTORE;
  if (st) {
    sqlite3_bind_text(st, 1, pawl__buf_cstr(&b), -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, pawl__store_now(base));
    rc = sq_exec_write(s, st, "disable recurring definitions");
    if (!rc && count) *count = (size_t)sqlite3_changes(s->db);
  }
  pawl__buf_free(&b);
  return rc;
}

int pawl__sq_rec_load_error(store_t *base, const char *script,
                            const char *error) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_REC_LOAD_ERROR);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_text(st, 1, script, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 2, error, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 3, pawl__store_now(base));
  return sq_exec_write(s, st, "note a script's load error");
}
