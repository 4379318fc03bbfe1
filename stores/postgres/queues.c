/* queues.c: PostgreSQL store, pause, resume, a queue's age boost (store.h,
 * "queues"). */
#include "pg_int.h"

/* The SQL of this file's statements, by their ids (pg_int.h,
 * "Statements"). */
#define PG_HERE PG__QUEUES
const char *const pawl__pg_sql_queues[PG__TYPES - PG__QUEUES] = {
    /* $1 name, $2 now, $3 by, $4 reason. Changes a row only when the queue
     * was not paused, so that the count says whether it was. */
    PG_AT(PG_QUEUE_PAUSE) =
        "INSERT INTO pawl_queues AS q (name, paused, paused_at, paused_by, "
        "reason, updated_at) VALUES ($1::text, true, pawl_now($2::bigint), "
        "$3::text, $4::text, pawl_now($2::bigint)) ON CONFLICT (name) DO "
        "UPDATE SET paused = true, paused_at = excluded.paused_at, "
        "paused_by = excluded.paused_by, reason = excluded.reason, "
        "updated_at = excluded.updated_at WHERE NOT q.paused",
    /* A resume wakes the nodes: the queue's jobs may be due. */
    PG_AT(PG_QUEUE_RESUME) =
        "WITH r AS (UPDATE pawl_queues SET paused = false, paused_at = NULL, "
        "paused_by = NULL, reason = NULL, updated_at = pawl_now($2::bigint) "
        "WHERE name = $1::text AND paused RETURNING name) "
        "SELECT name, pg_notify(" PG_CHANNEL ", '') FROM r",
    /* $1 name, $2 now, $3 boost (NULL: the database's). */
    PG_AT(PG_QUEUE_SET_BOOST) =
        "INSERT INTO pawl_queues (name, age_boost_ms, updated_at) VALUES "
        "($1::text, $3::bigint, pawl_now($2::bigint)) ON CONFLICT (name) DO "
        "UPDATE SET age_boost_ms = excluded.age_boost_ms, updated_at = "
        "excluded.updated_at",
    PG_AT(PG_QUEUE_LIST) =
        "SELECT name, paused, pawl_ms(paused_at), paused_by, "
        "reason, age_boost_ms FROM pawl_queues ORDER BY name",
};
#undef PG_HERE

int pawl__pg_queue_pause(store_t *base, const char *name, int paused,
                         const char *by, const char *reason, int *changed) {
  pg_store_t *s = (pg_store_t *)base;
  pg_params_t pp;
  pp_str(&pp, 0, name);
  pp_now(s, &pp, 1);
  pp_str(&pp, 2, by);
  pp_str(&pp, 3, reason);
  PGresult *res;
  int rc =
      paused ? pawl__pg_run(s, PG_QUEUE_PAUSE, 4, pp.v, &res, "pause queue")
             : pawl__pg_run(s, PG_QUEUE_RESUME, 2, pp.v, &res, "resume queue");
  if (rc) return rc;
  if (changed) *changed = paused ? pg_changed(res) > 0 : PQntuples(res) > 0;
  PQclear(res);
  return 0;
}

/* The queue's boost and its pending jobs' ranks change together. */
int pawl__pg_queue_set_boost(store_t *base, const char *name,
                             int64_t boost_ms) {
  pg_store_t *s = (pg_store_t *)base;
  int rc = pawl__pg_begin(s);
  if (rc) return rc;
  pg_params_t pp;
  pp_str(&pp, 0, name);
  pp_now(s, &pp, 1);
  pp_opt_int(&pp, 2, boost_ms >= 0, boost_ms);
  rc = pawl__pg_run(s, PG_QUEUE_SET_BOOST, 3, pp.v, NULL,
                    "set the queue's age boost");
  if (!rc) rc = pawl__pg_setting_get(s, "age_boost_ms", &s->boost_ms);
  if (!rc) {
    pg_params_t rr;
    pp_int(&rr, 0, s->boost_ms);
    pp_str(&rr, 1, name);
    rc = pawl__pg_run(s, PG_RERANK, 2, rr.v, NULL,
                      "re-rank the queue's pending jobs");
  }
  return pawl__pg_end(s, rc);
}

int pawl__pg_queue_list(store_t *base, store_queue_cb cb, void *data) {
  pg_store_t *s = (pg_store_t *)base;
  PGresult *res;
  int rc = pawl__pg_run(s, PG_QUEUE_LIST, 0, NULL, &res, "list queues");
  if (rc) return rc;
  for (int i = 0; i < PQntuples(res) && !rc; i++) {
    const char *paused = pg_val(res, i, 1);
    store_queue_row_t r = {
        .name = pg_val(res, i, 0),
        .paused = paused && paused[0] == 't',
        .paused_at = pg_int(res, i, 2),
        .paused_by = pg_val(res, i, 3),
        .reason = pg_val(res, i, 4),
        .age_boost_ms = pg_val(res, i, 5) ? pg_int(res, i, 5) : -1,
    };
    int stop = cb(&r, data);
    if (stop < 0) rc = stop;
    if (stop) break;
  }
  PQclear(res);
  return rc;
}
