/* nodes.c: SQLite store, nodes: heartbeats, the list, the reaping of silent
 * nodes, and a node's stop (store.h, "nodes"). */
#include "sqlite_int.h"

/* The SQL of this file's statements, by their ids (sqlite_int.h,
 * "Statements"). */
#define SQ_HERE SQ__NODES
const char *const pawl__sq_sql_nodes[SQ__QUEUES - SQ__NODES] = {
    SQ_AT(SQ_NODE_BEAT) =
        "INSERT INTO pawl_nodes (id, incarnation, version, queues, "
        "started_at, last_beat) VALUES (?1, ?2, ?3, ?4, ?5, ?6) "
        "ON CONFLICT (id) DO UPDATE SET incarnation = excluded.incarnation, "
        "version = excluded.version, queues = excluded.queues, "
        "started_at = excluded.started_at, last_beat = excluded.last_beat, "
        "stopped_at = NULL",
    SQ_AT(SQ_NODE_LIST) =
        "SELECT id, incarnation, version, queues, started_at, "
        "last_beat, stopped_at FROM pawl_nodes ORDER BY id",
    SQ_AT(SQ_NODE_REAP) = "DELETE FROM pawl_nodes WHERE last_beat < ?1",
    /* The stop is the node's last beat too: listed as stopped from now,
     * removed five leases later like any silent node. */
    SQ_AT(SQ_NODE_STOP) =
        "UPDATE pawl_nodes SET stopped_at = ?3, last_beat = ?3 "
        "WHERE id = ?1 AND incarnation = ?2",
};
#undef SQ_HERE

/* ---- nodes -------------------------------------------------------------- */

int pawl__sq_node_beat(store_t *base, const store_node_t *nd) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_NODE_BEAT);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_text(st, 1, nd->id, -1, SQLITE_STATIC);
  sq_bind_id(st, 2, nd->incarnation);
  sqlite3_bind_text(st, 3, nd->version ? nd->version : PAWL_VERSION, -1,
                    SQLITE_STATIC);
  sqlite3_bind_text(st, 4, nd->queues ? nd->queues : "", -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 5, nd->started_at);
  sqlite3_bind_int64(st, 6, pawl__store_now(base));
  return sq_exec_write(s, st, "record node heartbeat");
}

int pawl__sq_node_list(store_t *base, store_node_cb cb, void *data) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_NODE_LIST);
  if (!st) return PAWL_ESTORE;
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    pawl_id_t inc;
    sq_col_id(st, 1, &inc);
    store_node_t nd = {
        .id = (const char *)sqlite3_column_text(st, 0),
        .incarnation = &inc,
        .version = (const char *)sqlite3_column_text(st, 2),
        .queues = (const char *)sqlite3_column_text(st, 3),
        .started_at = sqlite3_column_int64(st, 4),
        .last_beat = sqlite3_column_int64(st, 5),
        .stopped_at = sqlite3_column_int64(st, 6), /* NULL: 0 */
    };
    if (cb(&nd, data)) break;
  }
  int err = rc == SQLITE_ROW || rc == SQLITE_DONE
                ? 0
                : pawl__sq_fail(s, rc, "list nodes");
  sqlite3_reset(st);
  return err;
}

int pawl__sq_node_reap(store_t *base, int64_t silent_ms, size_t *n) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_NODE_REAP);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_int64(st, 1, pawl__store_now(base) - silent_ms);
  int rc = sq_exec_write(s, st, "remove silent nodes");
  if (!rc && n) *n = (size_t)sqlite3_changes(s->db);
  return rc;
}

int pawl__sq_node_stop(store_t *base, const char *id,
                       const pawl_id_t *incarnation) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_NODE_STOP);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
  sq_bind_id(st, 2, incarnation);
  sqlite3_bind_int64(st, 3, pawl__store_now(base));
  return sq_exec_write(s, st, "record node stop");
}
