/* nodes.c: PostgreSQL store, nodes (store.h, "nodes"). */
#include "pg_int.h"

/* The SQL of this file's statements, by their ids (pg_int.h,
 * "Statements"). */
#define PG_HERE PG__NODES
const char *const pawl__pg_sql_nodes[PG__QUEUES - PG__NODES] = {
    PG_AT(PG_NODE_BEAT) =
        "INSERT INTO pawl_nodes (id, incarnation, version, queues, "
        "started_at, last_beat) VALUES ($1::text, $2::uuid, $3::text, "
        "$4::text, pawl_ts($5::bigint), pawl_now($6::bigint)) "
        "ON CONFLICT (id) DO UPDATE SET incarnation = excluded.incarnation, "
        "version = excluded.version, queues = excluded.queues, "
        "started_at = excluded.started_at, last_beat = excluded.last_beat, "
        "stopped_at = NULL",
    PG_AT(PG_NODE_LIST) =
        "SELECT id, incarnation, version, queues, "
        "pawl_ms(started_at), pawl_ms(last_beat), "
        "pawl_ms(stopped_at) FROM pawl_nodes ORDER BY id",
    /* The stop is the node's last beat too: listed as stopped from now,
     * removed five leases later like any silent node. */
    PG_AT(PG_NODE_STOP) =
        "UPDATE pawl_nodes SET stopped_at = pawl_now($3::bigint), "
        "last_beat = pawl_now($3::bigint) WHERE id = $1::text "
        "AND incarnation = $2::uuid",
    PG_AT(PG_NODE_REAP) =
        "DELETE FROM pawl_nodes WHERE last_beat < "
        "pawl_now($1::bigint) - $2::float8 * interval "
        "'1 millisecond'",
};
#undef PG_HERE

/* ---- nodes --------------------------------------------------------------- */

int pawl__pg_node_beat(store_t *base, const store_node_t *nd) {
  pg_store_t *s = (pg_store_t *)base;
  pg_params_t pp;
  pp_str(&pp, 0, nd->id);
  pp_id(&pp, 1, nd->incarnation);
  pp_str(&pp, 2, nd->version ? nd->version : PAWL_VERSION);
  pp_str(&pp, 3, nd->queues ? nd->queues : "");
  pp_int(&pp, 4, nd->started_at);
  pp_now(s, &pp, 5);
  return pawl__pg_run(s, PG_NODE_BEAT, 6, pp.v, NULL, "record node heartbeat");
}

int pawl__pg_node_list(store_t *base, store_node_cb cb, void *data) {
  pg_store_t *s = (pg_store_t *)base;
  PGresult *res;
  int rc = pawl__pg_run(s, PG_NODE_LIST, 0, NULL, &res, "list nodes");
  if (rc) return rc;
  for (int i = 0; i < PQntuples(res); i++) {
    pawl_id_t inc;
    pg_id(res, i, 1, &inc);
    store_node_t nd = {
        .id = pg_val(res, i, 0),
        .incarnation = &inc,
        .version = pg_val(res, i, 2),
        .queues = pg_val(res, i, 3),
        .started_at = pg_int(res, i, 4),
        .last_beat = pg_int(res, i, 5),
        .stopped_at = PQgetisnull(res, i, 6) ? 0 : pg_int(res, i, 6),
    };
    if (cb(&nd, data)) break;
  }
  PQclear(res);
  return 0;
}

int pawl__pg_node_reap(store_t *base, int64_t silent_ms, size_t *n) {
  pg_store_t *s = (pg_store_t *)base;
  pg_params_t pp;
  pp_now(s, &pp, 0);
  pp_int(&pp, 1, silent_ms);
  PGresult *res;
  int rc = pawl__pg_run(s, PG_NODE_REAP, 2, pp.v, &res, "remove silent nodes");
  if (rc) return rc;
  if (n) *n = (size_t)pg_changed(res);
  PQclear(res);
  return 0;
}

int pawl__pg_node_stop(store_t *base, const char *id,
                       const pawl_id_t *incarnation) {
  pg_store_t *s = (pg_store_t *)base;
  pg_params_t pp;
  pp_str(&pp, 0, id);
  pp_id(&pp, 1, incarnation);
  pp_now(s, &pp, 2);
  return pawl__pg_run(s, PG_NODE_STOP, 3, pp.v, NULL, "record node stop");
}
