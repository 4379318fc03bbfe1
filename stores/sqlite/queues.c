/* queues.c: SQLite store, queues: pause and resume, a queue's own age boost,
 * the list (store.h, "queues"), and the boost a job of a queue ranks with. */
#include "sqlite_int.h"

/* The SQL of this file's statements, by their ids (sqlite_int.h,
 * "Statements"). */
#define SQ_HERE SQ__QUEUES
const char *const pawl__sq_sql_queues[SQ__TYPES - SQ__QUEUES] = {
    SQ_AT(SQ_QUEUE_BOOST) =
        "SELECT age_boost_ms FROM pawl_queues WHERE name = ?1",
    /* ?1 name, ?2 now, ?3 by, ?4 reason. Changes a row only when the queue
     * was not paused, so that changes() says whether it was. */
    SQ_AT(SQ_QUEUE_PAUSE) =
        "INSERT INTO pawl_queues (name, paused, paused_at, paused_by, reason, "
        "updated_at) VALUES (?1, 1, ?2, ?3, ?4, ?2) ON CONFLICT (name) DO "
        "UPDATE SET paused = 1, paused_at = ?2, paused_by = ?3, reason = ?4, "
        "updated_at = ?2 WHERE paused = 0",
    SQ_AT(SQ_QUEUE_RESUME) =
        "UPDATE pawl_queues SET paused = 0, paused_at = NULL, paused_by = "
        "NULL, reason = NULL, updated_at = ?2 WHERE name = ?1 AND paused = 1",
    /* ?1 name, ?2 now, ?3 boost (NULL: the database's). */
    SQ_AT(SQ_QUEUE_SET_BOOST) =
        "INSERT INTO pawl_queues (name, age_boost_ms, updated_at) VALUES "
        "(?1, ?3, ?2) ON CONFLICT (name) DO UPDATE SET age_boost_ms = ?3, "
        "updated_at = ?2",
    SQ_AT(SQ_QUEUE_LIST) = "SELECT name, paused, paused_at, paused_by, reason, "
                           "age_boost_ms FROM pawl_queues ORDER BY name",
};
#undef SQ_HERE

/* The age boost jobs of `queue` rank with: the queue's
 * own, else the database's. Read in the caller's transaction, so a boost
 * another process set is seen; the last queue asked about is remembered
 * for the rest of the transaction (a batch of one queue costs one read). */
int pawl__sq_queue_boost(sq_store_t *s, const char *queue, int64_t *boost) {
  if (s->qb_tx == s->tx_seq && s->qb_queue && strcmp(s->qb_queue, queue) == 0) {
    *boost = s->qb_boost >= 0 ? s->qb_boost : s->boost_ms;
    return 0;
  }
  sqlite3_stmt *st = sq_stmt(s, SQ_QUEUE_BOOST);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_text(st, 1, queue, -1, SQLITE_STATIC);
  int rc = sqlite3_step(st);
  int64_t own = -1;
  if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
    own = sqlite3_column_int64(st, 0);
  sqlite3_reset(st);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE)
    return pawl__sq_fail(s, rc, "read the queue's age boost");
  char *copy = pawl__strdup(queue);
  if (copy) {
    pawl__free(s->qb_queue);
    s->qb_queue = copy;
    s->qb_boost = own;
    s->qb_tx = s->tx_seq;
  }
  *boost = own >= 0 ? own : s->boost_ms;
  return 0;
}

/* ---- queues (pause, resume, per-queue age boost) ------------------------ */

int pawl__sq_queue_pause(store_t *base, const char *name, int paused,
                         const char *by, const char *reason, int *changed) {
  sq_store_t *s = (sq_store_t *)base;
  int rc = pawl__sq_begin(s);
  if (rc) return rc;
  sqlite3_stmt *st = sq_stmt(s, paused ? SQ_QUEUE_PAUSE : SQ_QUEUE_RESUME);
  if (!st) return pawl__sq_end(s, PAWL_ESTORE);
  sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 2, pawl__store_now(base));
  if (paused) {
    sq_bind_text(st, 3, by);
    sq_bind_text(st, 4, reason);
  }
  rc = sq_exec(s, st, paused ? "pause queue" : "resume queue");
  if (!rc && changed) *changed = sqlite3_changes(s->db) > 0;
  return pawl__sq_end(s, rc);
}

/* The queue's boost and its pending jobs' ranks change together. */
int pawl__sq_queue_set_boost(store_t *base, const char *name,
                             int64_t boost_ms) {
  sq_store_t *s = (sq_store_t *)base;
  int rc = pawl__sq_begin(s);
  if (rc) return rc;
  sqlite3_stmt *st = sq_stmt(s, SQ_QUEUE_SET_BOOST);
  if (!st) return pawl__sq_end(s, PAWL_ESTORE);
  sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 2, pawl__store_now(base));
  if (boost_ms >= 0)
    sqlite3_bind_int64(st, 3, boost_ms);
  else
    sqlite3_bind_null(st, 3);
  rc = sq_exec(s, st, "set the queue's age boost");
  if (!rc) rc = pawl__sq_setting_get(s, "age_boost_ms", &s->boost_ms);
  if (!rc) {
    st = sq_stmt(s, SQ_RERANK);
    if (!st) return pawl__sq_end(s, PAWL_ESTORE);
    sqlite3_bind_int64(st, 1, s->boost_ms);
    sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
    rc = sq_exec(s, st, "re-rank the queue's pending jobs");
  }
  return pawl__sq_end(s, rc);
}

int pawl__sq_queue_list(store_t *base, store_queue_cb cb, void *data) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_QUEUE_LIST);
  if (!st) return PAWL_ESTORE;
  int rc = SQLITE_DONE, stop = 0;
  while (!stop && (rc = sqlite3_step(st)) == SQLITE_ROW) {
    store_queue_row_t r = {
        .name = (const char *)sqlite3_column_text(st, 0),
        .paused = sqlite3_column_int(st, 1) != 0,
        .paused_at = sqlite3_column_int64(st, 2),
        .paused_by = (const char *)sqlite3_column_text(st, 3),
        .reason = (const char *)sqlite3_column_text(st, 4),
        .age_boost_ms = sqlite3_column_type(st, 5) == SQLITE_NULL
                            ? -1
                            : sqlite3_column_int64(st, 5),
    };
    if (!r.name) continue;
    stop = cb(&r, data);
  }
  int err = stop < 0 ? stop
            : stop || rc == SQLITE_DONE ? 0
                                        : pawl__sq_fail(s, rc, "list queues");
  sqlite3_reset(st);
  return err;
}
