/* alerts.c: PostgreSQL store, dead-letter alerts (store.h, "alerts"). */
#include "pg_int.h"

/* The SQL of the PostgreSQL store's dead-letter alerts
 * (tables pawl_alerts, pawl_alert_windows, schema V013). None of
 * it is on the claim's or the finish's path: the outbox row is written by
 * the trigger pawl_alerts_dead. */

/* In pg_alert_row()'s order. */
#define PG_ALERT_COLS                                                        \
  "seq, kind, job_id, type, queue, attempt, error, pawl_ms(created_at), "    \
  "verdict, count, suppressed, pawl_ms(first_at), pawl_ms(last_at)"

/* Windows ended by $1 (injected now or NULL): one statement, so that of
 * two nodes rolling at once only one gets each window (the DELETE of the
 * second waits for the first's and then finds the row gone). */
#define PG_ALERT_ROLL                                                        \
  "WITH gone AS (DELETE FROM pawl_alert_windows WHERE ends_at <= "           \
  "pawl_now($1::bigint) RETURNING *) INSERT INTO pawl_alerts (kind, job_id, " \
  "type, queue, attempt, error, created_at, count, suppressed, first_at, "   \
  "last_at) SELECT 1, job_id, type, queue, attempt, error, "                 \
  "pawl_now($1::bigint), count, suppressed, first_at, last_at FROM gone "    \
  "WHERE suppressed > 0"

/* Leases to $1 for $3 ms at most $4 free rows ($2 now). */
#define PG_ALERT_TAKE                                                        \
  "UPDATE pawl_alerts SET taken_by = $1::text, taken_until = "               \
  "pawl_now($2::bigint) + $3::bigint * interval '1 millisecond' WHERE seq "  \
  "IN (SELECT seq FROM pawl_alerts WHERE taken_until IS NULL OR "            \
  "taken_until <= pawl_now($2::bigint) ORDER BY seq LIMIT $4::bigint FOR "   \
  "UPDATE SKIP LOCKED) RETURNING " PG_ALERT_COLS

#define PG_ALERT_GET                                                         \
  "SELECT taken_by, verdict, count, pawl_ms(first_at), pawl_ms(last_at), "   \
  "type, job_id, queue, attempt, error FROM pawl_alerts WHERE seq = "        \
  "$1::bigint FOR UPDATE"

/* Opens window ($1 type, $2 fp) at $3 for $4 ms, or counts into it. */
#define PG_ALERT_WINDOW                                                      \
  "INSERT INTO pawl_alert_windows AS w (type, fp, first_at, last_at, "       \
  "ends_at, count, suppressed, job_id, queue, attempt, error) VALUES "       \
  "($1::text, $2::bigint, pawl_now($3::bigint), pawl_now($3::bigint), "      \
  "pawl_now($3::bigint) + $4::bigint * interval '1 millisecond', 1, 0, "     \
  "$5::uuid, $6::text, $7::integer, $8::text) ON CONFLICT (type, fp) DO "    \
  "UPDATE SET last_at = greatest(w.last_at, excluded.last_at), count = "     \
  "w.count + 1, suppressed = w.suppressed + 1, job_id = excluded.job_id, "   \
  "queue = excluded.queue, attempt = excluded.attempt, error = "             \
  "excluded.error RETURNING count, pawl_ms(first_at), pawl_ms(last_at)"

#define PG_ALERT_VERDICT                                                     \
  "UPDATE pawl_alerts SET verdict = $2::smallint, count = $3::bigint, "      \
  "first_at = pawl_ts($4::bigint), last_at = pawl_ts($5::bigint) WHERE "     \
  "seq = $1::bigint"

#define PG_ALERT_DONE                                                        \
  "DELETE FROM pawl_alerts WHERE seq = $1::bigint AND taken_by = $2::text"
/* The SQL of this file's statements, by their ids (pg_int.h,
 * "Statements"). */
#define PG_HERE PG__ALERTS
const char *const pawl__pg_sql_alerts[PG__RETENTION - PG__ALERTS] = {
    PG_AT(PG_ALERT_ROLL_Q) = PG_ALERT_ROLL,
    PG_AT(PG_ALERT_TAKE_Q) = PG_ALERT_TAKE,
    PG_AT(PG_ALERT_GET_Q) = PG_ALERT_GET,
    PG_AT(PG_ALERT_WINDOW_Q) = PG_ALERT_WINDOW,
    PG_AT(PG_ALERT_VERDICT_Q) = PG_ALERT_VERDICT,
    PG_AT(PG_ALERT_DONE_Q) = PG_ALERT_DONE,
};
#undef PG_HERE

/* ---- dead-letter alerts -------------------------------------------------- */

int pawl__pg_alert_take(store_t *base, const char *owner, int64_t lease_ms,
                        size_t max, store_alert_t **out, size_t *n) {
  pg_store_t *s = (pg_store_t *)base;
  *out = NULL;
  *n = 0;
  int rc = pawl__pg_begin(s);
  if (rc) return rc;
  pg_params_t pp;
  pp_now(s, &pp, 0);
  rc = pawl__pg_run(s, PG_ALERT_ROLL_Q, 1, pp.v, NULL, "end alert windows");
  PGresult *res = NULL;
  if (!rc) {
    pp_str(&pp, 0, owner);
    pp_now(s, &pp, 1);
    pp_int(&pp, 2, lease_ms);
    pp_int(&pp, 3, (int64_t)max);
    rc = pawl__pg_run(s, PG_ALERT_TAKE_Q, 4, pp.v, &res, "take alerts");
  }
  store_alert_t *v = NULL;
  size_t count = 0;
  for (int i = 0; !rc && i < PQntuples(res); i++) {
    store_alert_t *a = pawl__store_push((void **)&v, &count, sizeof *a);
    if (!a) {
      rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
      break;
    }
    a->seq = pg_int(res, i, 0);
    a->kind = (int)pg_int(res, i, 1);
    pg_id(res, i, 2, &a->job_id);
    int oom = pawl__store_dup(&a->type, pg_val(res, i, 3));
    oom |= pawl__store_dup(&a->queue, pg_val(res, i, 4));
    a->attempt = (int32_t)pg_int(res, i, 5);
    oom |= pawl__store_dup(&a->error, pg_val(res, i, 6));
    a->created_at = pg_int(res, i, 7);
    a->verdict = (int)pg_int(res, i, 8);
    a->count = pg_int(res, i, 9);
    a->suppressed = pg_int(res, i, 10);
    a->first_at = pg_int(res, i, 11);
    a->last_at = pg_int(res, i, 12);
    if (oom) rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
  }
  PQclear(res);
  rc = pawl__pg_end(s, rc);
  if (rc) {
    pawl__store_alerts_free(v, count);
    return rc;
  }
  *out = v;
  *n = count;
  return 0;
}

int pawl__pg_alert_note(store_t *base, const char *owner, int64_t fp,
                        int64_t window_ms, store_alert_t *a) {
  pg_store_t *s = (pg_store_t *)base;
  int rc = pawl__pg_begin(s);
  if (rc) return rc;
  pg_params_t pp;
  pp_int(&pp, 0, a->seq);
  PGresult *res = NULL;
  rc = pawl__pg_run(s, PG_ALERT_GET_Q, 1, pp.v, &res, "read alert");
  int decided = 0;
  if (!rc) {
    const char *by = PQntuples(res) ? pg_val(res, 0, 0) : NULL;
    if (!by || strcmp(by, owner) != 0) {
      rc = pawl__store_fail(base, PAWL_ELEASE,
                            "alert %" PRId64 " is no longer held by %s",
                            a->seq, owner);
    } else if (!PQgetisnull(res, 0, 1)) {
      decided = 1;
      a->verdict = (int)pg_int(res, 0, 1);
      a->count = pg_int(res, 0, 2);
      a->first_at = pg_int(res, 0, 3);
      a->last_at = pg_int(res, 0, 4);
    }
  }
  PQclear(res);
  res = NULL;
  if (!rc && !decided) {
    pp_now(s, &pp, 0);
    rc = pawl__pg_run(s, PG_ALERT_ROLL_Q, 1, pp.v, NULL, "end alert windows");
  }
  if (!rc && !decided) {
    pp_str(&pp, 0, a->type);
    pp_int(&pp, 1, fp);
    pp_now(s, &pp, 2);
    pp_int(&pp, 3, window_ms);
    pp_id(&pp, 4, &a->job_id);
    pp_str(&pp, 5, a->queue);
    pp_int(&pp, 6, a->attempt);
    pp_str(&pp, 7, a->error);
    rc = pawl__pg_run(s, PG_ALERT_WINDOW_Q, 8, pp.v, &res, "count alert");
    if (!rc && PQntuples(res) == 1) {
      a->count = pg_int(res, 0, 0);
      a->first_at = pg_int(res, 0, 1);
      a->last_at = pg_int(res, 0, 2);
      a->verdict = a->count == 1 ? 1 : 2;
    } else if (!rc) {
      rc = pawl__store_fail(base, PAWL_ESTORE, "count alert: no row");
    }
    PQclear(res);
  }
  if (!rc && !decided) {
    pp_int(&pp, 0, a->seq);
    pp_int(&pp, 1, a->verdict);
    pp_int(&pp, 2, a->count);
    pp_int(&pp, 3, a->first_at);
    pp_int(&pp, 4, a->last_at);
    rc = pawl__pg_run(s, PG_ALERT_VERDICT_Q, 5, pp.v, NULL,
                      "record alert decision");
  }
  return pawl__pg_end(s, rc);
}

int pawl__pg_alert_done(store_t *base, const char *owner, int64_t seq) {
  pg_store_t *s = (pg_store_t *)base;
  pg_params_t pp;
  pp_int(&pp, 0, seq);
  pp_str(&pp, 1, owner);
  return pawl__pg_run(s, PG_ALERT_DONE_Q, 2, pp.v, NULL, "remove alert");
}
