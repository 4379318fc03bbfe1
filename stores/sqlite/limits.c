/* limits.c: SQLite store, limits: reading and planning the concurrency and
 * rate limits inside the claim's transaction, next_due under limits, and the
 * operator's set, remove and list (store.h, "limits"). */
#include "sqlite_int.h"

/* The SQL of this file's statements, by their ids (sqlite_int.h,
 * "Statements"). */
#define SQ_HERE SQ__LIMITS
const char *const pawl__sq_sql_limits[SQ__TERMINAL - SQ__LIMITS] = {
    SQ_AT(SQ_LIMITS_READ) = SQLITE_SQL_LIMITS_READ,
    SQ_AT(SQ_LIMIT_RUNNING_RES) = SQLITE_SQL_LIMIT_RUNNING_RES,
    SQ_AT(SQ_LIMIT_RUNNING_QUEUE) = SQLITE_SQL_LIMIT_RUNNING_QUEUE,
    SQ_AT(SQ_LIMIT_WINDOW) = "UPDATE pawl_limits SET window_start = ?2, "
                             "window_count = ?3 WHERE name = ?1",
    /* The window's count survives a change that keeps its length. */
    SQ_AT(SQ_LIMIT_SET) =
        "INSERT INTO pawl_limits (name, max_running, rate, rate_window_ms, "
        "updated_at) VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (name) DO "
        "UPDATE SET max_running = excluded.max_running, rate = excluded.rate, "
        "window_start = CASE WHEN rate_window_ms IS excluded.rate_window_ms "
        "THEN window_start ELSE 0 END, window_count = CASE WHEN "
        "rate_window_ms IS excluded.rate_window_ms THEN window_count ELSE 0 "
        "END, rate_window_ms = excluded.rate_window_ms, "
        "updated_at = excluded.updated_at",
    SQ_AT(SQ_LIMIT_REMOVE) = "DELETE FROM pawl_limits WHERE name = ?1",
    SQ_AT(SQ_LIMIT_LIST) =
        "SELECT name, max_running, rate, rate_window_ms, window_start, "
        "window_count, updated_at, CASE WHEN substr(name, 1, 6) = 'queue:' "
        "THEN (SELECT count(*) FROM pawl_jobs WHERE state = 1 AND queue = "
        "substr(pawl_limits.name, 7)) ELSE (SELECT count(*) FROM pawl_jobs "
        "WHERE state = 1 AND resource = pawl_limits.name) END FROM "
        "pawl_limits ORDER BY name",
    SQ_AT(SQ_NEXT_DUE_LIM) = SQLITE_SQL_NEXT_DUE_LIM,
    SQ_AT(SQ_NEXT_DUE_LIM_RES) = SQLITE_SQL_NEXT_DUE_LIM_RES,
    SQ_AT(SQ_NEXT_DUE_LIM_QUEUE) = SQLITE_SQL_NEXT_DUE_LIM_QUEUE,
};
#undef SQ_HERE

/* ---- limits --------------------------------------------------------------
 *
 * The claim's steps are in stores/store.h ("limits"). SQLite needs no lock
 * of its own: the claim's BEGIN IMMEDIATE holds the one write lock from the
 * reading of the limits and their running jobs to the commit of the jobs
 * taken and the windows counted, so no other claim (of this process or
 * another) can start a job in between. A database without limits pays one
 * step of SQ_LIMITS_READ over an empty table per claim. */

/* Reads the limits, with the running jobs of those with a max_running,
 * and plans them at `now` for up to `limited_max` jobs under a limit.
 * l->n is 0 when the database has none. */
int pawl__sq_limits_read(sq_store_t *s, int64_t now, size_t limited_max,
                         store_limits_t *l) {
  sqlite3_stmt *st = sq_stmt(s, SQ_LIMITS_READ);
  if (!st) return PAWL_ESTORE;
  int step, rc = 0;
  while ((step = sqlite3_step(st)) == SQLITE_ROW) {
    if (pawl__store_limits_add(l, (const char *)sqlite3_column_text(st, 0),
                               sqlite3_column_int64(st, 1),
                               sqlite3_column_int64(st, 2),
                               sqlite3_column_int64(st, 3),
                               sqlite3_column_int64(st, 4),
                               sqlite3_column_int64(st, 5))) {
      rc = pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
      break;
    }
  }
  if (!rc && step != SQLITE_DONE) rc = pawl__sq_fail(s, step, "read limits");
  sqlite3_reset(st);
  for (size_t i = 0; !rc && i < l->n; i++) {
    store_limit_t *lim = &l->v[i];
    if (!lim->max_running) continue;
    const char *q = pawl__store_limit_queue(lim);
    st = sq_stmt(s, q ? SQ_LIMIT_RUNNING_QUEUE : SQ_LIMIT_RUNNING_RES);
    if (!st) return PAWL_ESTORE;
    sqlite3_bind_text(st, 1, q ? q : lim->name, -1, SQLITE_STATIC);
    step = sqlite3_step(st);
    if (step == SQLITE_ROW) lim->running = sqlite3_column_int64(st, 0);
    sqlite3_reset(st);
    if (step != SQLITE_ROW) rc = pawl__sq_fail(s, step, "count running jobs");
  }
  if (!rc) pawl__store_limits_plan(l, now, limited_max);
  return rc;
}

/* A JSON array of the limits with nothing left: their queues (`queues`
 * set) or their resources. NULL when out of memory; pawl__free() it. */
char *pawl__sq_limits_blocked(const store_limits_t *l, int queues) {
  const char **names = pawl__calloc(l->n ? l->n : 1, sizeof *names);
  if (!names) return NULL;
  size_t n = 0;
  for (size_t i = 0; i < l->n; i++) {
    const char *q = pawl__store_limit_queue(&l->v[i]);
    if (pawl__store_limit_blocked(&l->v[i]) && !q == !queues)
      names[n++] = queues ? q : l->v[i].name;
  }
  char *json = pawl__sq_queues_json(names, n);
  pawl__free(names);
  return json;
}

/* Step 4 for the picked row `st` (SQ_CLAIM_LIM*). */
int pawl__sq_limits_admit(store_limits_t *l, sqlite3_stmt *st) {
  return pawl__store_limits_admit(
      l, (const char *)sqlite3_column_text(st, STORE_JOB_QUEUE),
      (const char *)sqlite3_column_text(st, SQLITE_JOB_RESOURCE_COL));
}

/* Step 5: the rate windows of the limits that counted starts. */
int pawl__sq_limits_save(sq_store_t *s, const store_limits_t *l) {
  for (size_t i = 0; i < l->n; i++) {
    int64_t start, count;
    if (!pawl__store_limit_window(&l->v[i], &start, &count)) continue;
    sqlite3_stmt *st = sq_stmt(s, SQ_LIMIT_WINDOW);
    if (!st) return PAWL_ESTORE;
    sqlite3_bind_text(st, 1, l->v[i].name, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, start);
    sqlite3_bind_int64(st, 3, count);
    int rc = sq_exec(s, st, "count starts under a rate limit");
    if (rc) return rc;
  }
  return 0;
}

/* min(run_at) of a SQ_NEXT_DUE_LIM* statement bound by the caller, into
 * *at when earlier (0: none yet); `floor` raises it (a window's end). */
static int sq_limits_due(sq_store_t *s, sqlite3_stmt *st, int64_t floor,
                         int64_t *at) {
  int step = sqlite3_step(st);
  int none = step != SQLITE_ROW || sqlite3_column_type(st, 0) == SQLITE_NULL;
  int64_t v = none ? 0 : sqlite3_column_int64(st, 0);
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  if (step != SQLITE_ROW) return pawl__sq_fail(s, step, "find next due job");
  if (none) return 0;
  if (v < floor) v = floor;
  if (!*at || v < *at) *at = v;
  return 0;
}

/* next_due() on a database with limits: the earliest pending job under no
 * limit with nothing left; and, for a limit whose rate window is used up
 * (and that has a start left by its max_running), the end of its window
 * if it has jobs pending. Jobs of a limit at its max_running wait for a
 * finish, which wakes the poller of the node that ran it (others look at
 * their next poll). `queues_json` is the claimer's queues, NULL for all. */
int pawl__sq_next_due_limited(sq_store_t *s, store_limits_t *l,
                              const char *const *queues, size_t nqueues,
                              const char *queues_json, int later_only,
                              int64_t *run_at) {
  char *res = pawl__sq_limits_blocked(l, 0),
       *qs = pawl__sq_limits_blocked(l, 1);
  int rc = 0;
  int64_t at = 0;
  sqlite3_stmt *st = NULL;
  if (!res || !qs) rc = pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
  else if (!(st = sq_stmt(s, SQ_NEXT_DUE_LIM))) rc = PAWL_ESTORE;
  if (!rc) {
    sq_bind_text(st, 1, queues_json);
    sqlite3_bind_text(st, 2, res, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, qs, -1, SQLITE_STATIC);
    if (later_only) sqlite3_bind_int(st, 9, 1);
    rc = sq_limits_due(s, st, 0, &at);
  }
  for (size_t i = 0; !rc && i < l->n; i++) {
    const store_limit_t *lim = &l->v[i];
    if (!lim->rate_blocked) continue;
    const char *q = pawl__store_limit_queue(lim);
    int mine = !q || nqueues == 0;
    for (size_t k = 0; !mine && k < nqueues; k++) mine = !strcmp(q, queues[k]);
    if (!mine) continue;
    if (!(st = sq_stmt(s, q ? SQ_NEXT_DUE_LIM_QUEUE : SQ_NEXT_DUE_LIM_RES))) {
      rc = PAWL_ESTORE;
      break;
    }
    sqlite3_bind_text(st, 1, q ? q : lim->name, -1, SQLITE_STATIC);
    if (!q) sq_bind_text(st, 2, queues_json);
    rc = sq_limits_due(s, st, pawl__store_limit_window_end(lim), &at);
  }
  pawl__free(res);
  pawl__free(qs);
  if (!rc) *run_at = at;
  return rc;
}

int pawl__sq_limit_set(store_t *base, const char *name, int64_t max_running,
                       int64_t rate, int64_t window_ms) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_LIMIT_SET);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
  sq_bind_opt_int(st, 2, max_running);
  sq_bind_opt_int(st, 3, rate);
  sq_bind_opt_int(st, 4, window_ms);
  sqlite3_bind_int64(st, 5, pawl__store_now(base));
  return sq_exec_write(s, st, "set limit");
}

int pawl__sq_limit_remove(store_t *base, const char *name) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_LIMIT_REMOVE);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
  int rc = sq_exec_write(s, st, "remove limit");
  if (!rc && sqlite3_changes(s->db) == 0)
    rc = pawl__store_fail(base, PAWL_ENOTFOUND, "no limit named \"%s\"",
                          name);
  return rc;
}

int pawl__sq_limit_list(store_t *base, pawl_limit_t **out, size_t *n) {
  sq_store_t *s = (sq_store_t *)base;
  *out = NULL;
  *n = 0;
  sqlite3_stmt *st = sq_stmt(s, SQ_LIMIT_LIST);
  if (!st) return PAWL_ESTORE;
  pawl_limit_t *v = NULL;
  size_t count = 0;
  int step, rc = 0;
  while ((step = sqlite3_step(st)) == SQLITE_ROW) {
    pawl_limit_t *lim = pawl__store_push((void **)&v, &count, sizeof *lim);
    if (!lim || pawl__store_dup(&lim->name,
                                (const char *)sqlite3_column_text(st, 0))) {
      rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
      break;
    }
    lim->max_running = sqlite3_column_int64(st, 1);
    lim->rate = sqlite3_column_int64(st, 2);
    lim->rate_window_ms = sqlite3_column_int64(st, 3);
    lim->window_start = sqlite3_column_int64(st, 4);
    lim->window_count = sqlite3_column_int64(st, 5);
    lim->updated_at = sqlite3_column_int64(st, 6);
    lim->running = sqlite3_column_int64(st, 7);
  }
  if (!rc && step != SQLITE_DONE) rc = pawl__sq_fail(s, step, "list limits");
  sqlite3_reset(st);
  if (rc) {
    pawl_limits_free(v, count);
    return rc;
  }
  *out = v;
  *n = count;
  return 0;
}
