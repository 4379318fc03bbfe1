/* control.c: PostgreSQL store, operator transitions (store.h, "control"). */
#include "pg_int.h"

/* The SQL of this file's statements, by their ids (pg_int.h,
 * "Statements"). */
#define PG_HERE PG__CONTROL
const char *const pawl__pg_sql_control[PG__HISTORY - PG__CONTROL] = {
    PG_AT(PG_ATTEMPT_ADD) =
        "INSERT INTO pawl_attempts (job_id, attempt, node, scheduled_at, "
        "started_at, ended_at, outcome, error) SELECT id, attempt, "
        "lease_owner, run_at, started_at, pawl_now($2::bigint), $3::text, "
        "$4::text FROM pawl_jobs AS j WHERE j.id = $1::uuid AND "
        PG_RUNNING_BY_ID,
    PG_AT(PG_EVENT_ADD) =
        "INSERT INTO pawl_events (job_id, at, from_state, "
        "to_state, actor, reason, attempt) VALUES ($1::uuid, "
        "pawl_now($2::bigint), $3::smallint, $4::smallint, "
        "$5::text, $6::text, $7::int)",
    PG_AT(PG_FORGET_START) = "DELETE FROM pawl_started WHERE job_id = $1::uuid",
    /* Every operator transition: C decides the new values from the row it
     * read, the version check makes it a compare-and-set. */
    PG_AT(PG_TRANSITION) =
        "UPDATE pawl_jobs SET state = $4::smallint, paused_from = "
        "$5::smallint, run_at = pawl_ts($6::bigint), rank = pawl_rank("
        "priority, pawl_ts($6::bigint), pawl_queue_boost(queue, $7::bigint)), "
        "attempt = $8::int, "
        "last_error = $9::text, result = $10::jsonb, finished_at = "
        "pawl_ts($11::bigint), recoveries = $12::int, lease_expires = "
        "pawl_ts($13::bigint), updated_at = pawl_now($1::bigint), version = "
        "version + 1 WHERE id = $2::uuid AND version = $3::bigint",
    /* A job made pending again by an operator wakes the nodes too. */
    PG_AT(PG_NOTIFY) = "SELECT pg_notify(" PG_CHANNEL ", '')",
    /* Throughput buckets (store.h, "Throughput"): $1 now, $2 the state,
     * $3 the queue; and the trim of buckets older than $2 minutes. */
    PG_AT(PG_TP_ADD) =
        "INSERT INTO pawl_throughput (minute, state, queue, count) "
        "VALUES (" PG_SQL_TP_MINUTE
        ", $2::smallint, $3::text, 1)" PG_SQL_TP_UPSERT,
};
#undef PG_HERE

/* ---- operator transitions ------------------------------------------------ */

/* The steps of pawl__store_transition() (see store.h), in PostgreSQL. */
static int pg_tx_begin(store_t *base) {
  return pawl__pg_begin((pg_store_t *)base);
}

static int pg_tx_end(store_t *base, int rc) {
  return pawl__pg_end((pg_store_t *)base, rc);
}

/* Locked for update: the row stays as read until commit. */
static int pg_tx_read(store_t *base, const pawl_id_t *id, int for_update,
                      pawl_job_t **out) {
  return pawl__pg_read_job((pg_store_t *)base, id, for_update, out);
}

/* "Now" as the database sees it in this transaction. */
int pawl__pg_tx_now(store_t *base, int64_t *now) {
  pg_store_t *s = (pg_store_t *)base;
  if (s->base.clock) {
    *now = s->base.clock(s->base.clock_data);
    return 0;
  }
  return pawl__pg_query_int(s, "SELECT pawl_ms(now())", now, "read clock");
}

static int pg_tx_end_attempt(store_t *base, const pawl_id_t *id, int64_t now,
                             const char *reason) {
  (void)now; /* the statement reads the transaction's clock (pp_now) */
  pg_store_t *s = (pg_store_t *)base;
  pg_params_t pp;
  pp_id(&pp, 0, id);
  pp_now(s, &pp, 1);
  pp_str(&pp, 2, "canceled");
  pp_str(&pp, 3, reason);
  return pawl__pg_run(s, PG_ATTEMPT_ADD, 4, pp.v, NULL, "record attempt");
}

static int pg_tx_event(store_t *base, const pawl_id_t *id, int64_t now,
                       int from, int to, const char *actor,
                       const char *reason, int32_t attempt) {
  (void)now;
  pg_store_t *s = (pg_store_t *)base;
  pg_params_t pp;
  pp_id(&pp, 0, id);
  pp_now(s, &pp, 1);
  pp_int(&pp, 2, from);
  pp_int(&pp, 3, to);
  pp_str(&pp, 4, actor);
  pp_str(&pp, 5, reason);
  pp_int(&pp, 6, attempt);
  return pawl__pg_run(s, PG_EVENT_ADD, 7, pp.v, NULL, "record event");
}

static int pg_tx_update(store_t *base, const pawl_job_t *j,
                        const store_plan_t *plan, int64_t now, int *changed) {
  (void)now;
  pg_store_t *s = (pg_store_t *)base;
  pg_params_t pp;
  pp_now(s, &pp, 0);
  pp_id(&pp, 1, &j->id);
  pp_int(&pp, 2, j->version);
  pp_int(&pp, 3, plan->to);
  pp_opt_int(&pp, 4, plan->paused_from >= 0, plan->paused_from);
  pp_int(&pp, 5, plan->run_at);
  pp_int(&pp, 6, s->boost_ms);
  pp_int(&pp, 7, plan->attempt);
  pp_str(&pp, 8, plan->last_error);
  pp_str(&pp, 9, plan->result);
  pp_opt_int(&pp, 10, plan->finished_at != 0, plan->finished_at);
  pp_int(&pp, 11, plan->recoveries);
  pp_opt_int(&pp, 12, plan->to == PAWL_RUNNING, j->lease_expires);
  PGresult *res;
  int rc = pawl__pg_run(s, PG_TRANSITION, 13, pp.v, &res, "update job");
  if (rc) return rc;
  *changed = pg_changed(res) == 1;
  PQclear(res);
  /* A child that ends or is taken back moves its batch's counters. */
  int64_t d[3];
  if (*changed && store_batch_delta(j->state, j->paused_from, plan->to,
                                    plan->paused_from, d))
    return pawl__pg_batch_count_job(s, &j->id, d);
  return 0;
}

/* The job finished now (cancel, expire): into its throughput bucket, and
 * its children released. */
static int pg_tx_finished(store_t *base, const pawl_job_t *j, int to,
                          int64_t now) {
  (void)now; /* the statement reads the transaction's clock (pp_now) */
  pg_store_t *s = (pg_store_t *)base;
  pg_params_t pp;
  pp_now(s, &pp, 0);
  pp_int(&pp, 1, to);
  pp_str(&pp, 2, j->queue);
  int rc = pawl__pg_run(s, PG_TP_ADD, 3, pp.v, NULL, "count finished job");
  return rc ? rc : pawl__pg_deps_release_one(s, &j->id);
}

static int pg_tx_forget_starts(store_t *base, const pawl_id_t *id) {
  pg_store_t *s = (pg_store_t *)base;
  pg_params_t fp;
  pp_id(&fp, 0, id);
  return pawl__pg_run(s, PG_FORGET_START, 1, fp.v, NULL,
                      "forget recorded starts");
}

/* Back to pending: other nodes hear of it at commit (NOTIFY). */
static int pg_tx_pending(store_t *base) {
  return pawl__pg_run((pg_store_t *)base, PG_NOTIFY, 0, NULL, NULL,
                      "wake nodes");
}

const store_transition_steps_t pawl__pg_transition_steps = {
    .begin = pg_tx_begin,
    .end = pg_tx_end,
    .read = pg_tx_read,
    .now = pawl__pg_tx_now,
    .end_attempt = pg_tx_end_attempt,
    .add_event = pg_tx_event,
    .update = pg_tx_update,
    .forget_starts = pg_tx_forget_starts,
    .finished = pg_tx_finished,
    .pending = pg_tx_pending,
    .reopen = pawl__pg_deps_reopen,
};

int pawl__pg_transition(store_t *base, const pawl_id_t *id, store_op_t op,
                        const char *actor, const char *owner,
                        const char *reason, pawl_job_t **out) {
  return pawl__store_transition(base, &pawl__pg_transition_steps, id, op, actor,
                                owner, reason, out);
}
