/* history.c: PostgreSQL store, history and log lines (store.h, "history",
 * "jobs"). */
#include "pg_int.h"

/* The SQL of this file's statements, by their ids (pg_int.h,
 * "Statements"). */
#define PG_HERE PG__HISTORY
const char *const pawl__pg_sql_history[PG__LOCKS - PG__HISTORY] = {
    PG_AT(PG_ATTEMPTS) =
        "SELECT attempt, node, pawl_ms(scheduled_at), "
        "pawl_ms(started_at), pawl_ms(ended_at), outcome, error, "
        "trace FROM pawl_attempts WHERE job_id = $1::uuid ORDER "
        "BY seq",
    PG_AT(PG_EVENTS) =
        "SELECT pawl_ms(at), from_state, to_state, actor, reason, "
        "attempt FROM pawl_events WHERE job_id = $1::uuid "
        "ORDER BY seq",
    PG_AT(PG_EXISTS) = "SELECT 1 FROM pawl_jobs WHERE id = $1::uuid",
    PG_AT(PG_LOGS) =
        "SELECT attempt, pawl_ms(at), level, message, fields FROM "
        "pawl_logs WHERE job_id = $1::uuid ORDER BY seq",
};
#undef PG_HERE

/* ---- history ------------------------------------------------------------- */

/* History: the rows written for failures and operator actions, put
 * together with what the success path keeps on the job row by
 * pawl__store_history_assemble(). One snapshot for the three reads. */
int pawl__pg_history(store_t *base, const pawl_id_t *id, pawl_history_t **out) {
  pg_store_t *s = (pg_store_t *)base;
  pawl_history_t *h = pawl__calloc(1, sizeof *h);
  pawl_job_t *j = NULL;
  PGresult *att = NULL, *ev = NULL;
  if (!h) return pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
  int rc = pawl__pg_ready(s);
  if (!rc)
    rc = pawl__pg_cmd(s, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
                      "begin read");
  if (rc) {
    pawl__free(h);
    return rc;
  }
  pg_params_t pp;
  pp_id(&pp, 0, id);
  rc = pawl__pg_read_job(s, id, 0, &j);
  if (!rc) rc = pawl__pg_run(s, PG_ATTEMPTS, 1, pp.v, &att, "read attempts");
  if (!rc) rc = pawl__pg_run(s, PG_EVENTS, 1, pp.v, &ev, "read events");
  pawl__pg_end(s, rc ? rc : 0);
  int oom = 0;
  pawl_event_t *rows = NULL;
  size_t nrows = 0;
  for (int r = 0; !rc && !oom && r < PQntuples(att); r++) {
    pawl_attempt_t *a =
        pawl__store_push((void **)&h->attempts, &h->nattempts, sizeof *a);
    if (!a) {
      oom = 1;
      break;
    }
    store_row_t sr = pawl__pg_row(att, r);
    oom |= pawl__store_attempt_fill(a, &sr) != 0;
  }
  for (int r = 0; !rc && !oom && r < PQntuples(ev); r++) {
    pawl_event_t *e = pawl__store_push((void **)&rows, &nrows, sizeof *e);
    if (!e) {
      oom = 1;
      break;
    }
    store_row_t sr = pawl__pg_row(ev, r);
    oom |= pawl__store_event_fill(e, &sr) != 0;
  }
  if (!rc && !oom)
    oom = pawl__store_history_assemble(h, j, rows, nrows) != 0;
  else
    pawl__store_events_free(rows, nrows);
  PQclear(att);
  PQclear(ev);
  pawl_job_free(j);
  if (!rc && oom) rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
  if (rc) {
    pawl_history_free(h);
    return rc;
  }
  *out = h;
  return 0;
}

/* ---- logs ---------------------------------------------------------------- */

int pawl__pg_logs(store_t *base, const pawl_id_t *id, pawl_log_record_t **out,
                  size_t *n) {
  pg_store_t *s = (pg_store_t *)base;
  pg_params_t pp;
  pp_id(&pp, 0, id);
  PGresult *res;
  int rc = pawl__pg_run(s, PG_LOGS, 1, pp.v, &res, "read logs");
  if (rc) return rc;
  size_t count = (size_t)PQntuples(res);
  if (count == 0) {
    PQclear(res);
    /* No lines: say whether that is because there is no such job. */
    if ((rc = pawl__pg_run(s, PG_EXISTS, 1, pp.v, &res, "read job"))) return rc;
    int exists = PQntuples(res) > 0;
    PQclear(res);
    if (!exists) return pawl__store_no_job(&s->base, id);
    *out = NULL;
    *n = 0;
    return 0;
  }
  pawl_log_record_t *recs = pawl__calloc(count, sizeof *recs);
  int oom = !recs;
  for (size_t i = 0; !oom && i < count; i++) {
    store_row_t sr = pawl__pg_row(res, (int)i);
    oom = pawl__store_log_fill(&recs[i], &sr) != 0;
  }
  PQclear(res);
  if (oom) {
    pawl_logs_free(recs, recs ? count : 0);
    return pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
  }
  *out = recs;
  *n = count;
  return 0;
}
