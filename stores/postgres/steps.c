/* steps.c: PostgreSQL store, restartable steps, job instances (store.h,
 * "steps"). */
#include "pg_int.h"

/* The SQL of the PostgreSQL store's restartable steps and
 * job instances (tables pawl_steps, pawl_job_exits,
 * pawl_instances, schema V011). None of it is on the claim's or the
 * finish's path. */

/* In pawl__store_step_fill()'s order (stores/store.h). */
#define PG_STEP_COLS                                                         \
  "seq, attempt, idx, name, status, pawl_ms(started_at), pawl_ms(ended_at), " \
  "exit_code, exit_message, read_count, write_count, filter_count, "         \
  "skip_count, commit_count, rollback_count, checkpoint::text, "             \
  "pawl_ms(checkpoint_at)"

/* The attempt $3 of job $1 is held by lease token $2 (as PG_PROGRESS). */
#define PG_STEP_HELD                                                         \
  "EXISTS (SELECT 1 FROM pawl_jobs j WHERE j.id = $1::uuid AND "             \
  "(j.state + 0) = 1 AND j.lease_token = $2::uuid AND j.attempt = $3::int)"

#define PG_STEP_LIST                                                         \
  "SELECT " PG_STEP_COLS " FROM pawl_steps WHERE job_id = $1::uuid ORDER BY seq"

/* Whether the job exists, its exit code and message, its instance key. */
#define PG_STEP_JOB                                                          \
  "SELECT EXISTS (SELECT 1 FROM pawl_jobs WHERE id = $1::uuid), "            \
  "e.exit_code, e.exit_message, (SELECT key FROM pawl_instances WHERE "      \
  "job_id = $1::uuid LIMIT 1) FROM (SELECT 1) AS one LEFT JOIN "             \
  "pawl_job_exits e ON e.job_id = $1::uuid"

/* $1..$3 the attempt, $4 idx, $5 name, $6 now, $7 checkpoint. One
 * statement: the new row, and rows an earlier attempt left running (it
 * never came back to end them) marked failed; the UPDATE runs on the
 * statement's snapshot, which does not hold the new row. */
#define PG_STEP_BEGIN                                                        \
  "WITH ins AS (INSERT INTO pawl_steps (job_id, attempt, idx, name, status, " \
  "started_at, checkpoint) SELECT $1::uuid, $3::int, $4::int, $5::text, 0, " \
  "pawl_now($6::bigint), $7::jsonb WHERE " PG_STEP_HELD " RETURNING seq), "  \
  "lost AS (UPDATE pawl_steps SET status = 2, ended_at = "                   \
  "pawl_now($6::bigint), exit_message = coalesce(exit_message, 'the "        \
  "attempt ended without ending this step (its node stopped or died, or "    \
  "it timed out)') WHERE job_id = $1::uuid AND status = 0 AND EXISTS "       \
  "(SELECT 1 FROM ins)) SELECT seq FROM ins"

/* $1..$3 the attempt, $4 seq, $5 checkpoint (NULL: kept), $6 now, $7..$12
 * the counts. */
#define PG_STEP_SAVE                                                         \
  "UPDATE pawl_steps SET checkpoint = coalesce($5::jsonb, checkpoint), "     \
  "checkpoint_at = CASE WHEN $5::jsonb IS NULL THEN checkpoint_at ELSE "     \
  "pawl_now($6::bigint) END, read_count = $7::bigint, write_count = "        \
  "$8::bigint, filter_count = $9::bigint, skip_count = $10::bigint, "        \
  "commit_count = $11::bigint, rollback_count = $12::bigint WHERE seq = "    \
  "$4::bigint AND job_id = $1::uuid AND status = 0 AND " PG_STEP_HELD

/* $1..$3 the attempt, $4 seq, $5 status, $6 now, $7 exit code, $8 exit
 * message, $9..$14 the counts. */
#define PG_STEP_END                                                          \
  "UPDATE pawl_steps SET status = $5::smallint, ended_at = "                 \
  "pawl_now($6::bigint), exit_code = $7::text, exit_message = $8::text, "    \
  "read_count = $9::bigint, write_count = $10::bigint, filter_count = "      \
  "$11::bigint, skip_count = $12::bigint, commit_count = $13::bigint, "      \
  "rollback_count = $14::bigint WHERE seq = $4::bigint AND job_id = "        \
  "$1::uuid AND status = 0 AND " PG_STEP_HELD

/* $1..$3 the attempt, $4 code, $5 message, $6 now. */
#define PG_STEP_EXIT                                                         \
  "INSERT INTO pawl_job_exits (job_id, exit_code, exit_message, at) SELECT " \
  "$1::uuid, $4::text, $5::text, pawl_now($6::bigint) WHERE " PG_STEP_HELD   \
  " ON CONFLICT (job_id) DO UPDATE SET exit_code = excluded.exit_code, "     \
  "exit_message = excluded.exit_message, at = excluded.at"

#define PG_INSTANCE_FIND                                                     \
  "SELECT j.id, j.state FROM pawl_instances i JOIN pawl_jobs j ON j.id = "   \
  "i.job_id WHERE i.type = $1::text AND i.key = $2::text"

/* Takes instance ($1 type, $2 key) for the new job $3 at $4 (see
 * SQLITE_INSTANCE_TAKE). Two enqueues of one instance on different
 * connections: the second's INSERT waits on the first's row (the primary
 * key) until the first commits, then takes the DO UPDATE path, whose
 * WHERE is tested on the committed row; its subquery reads the
 * statement's snapshot, which may not see the first's job row (committed
 * after the snapshot): then EXISTS is false and nothing is taken. Never
 * a takeover from a live job, at worst a refusal the caller looks up
 * again. */
#define PG_INSTANCE_TAKE                                                     \
  "INSERT INTO pawl_instances (type, key, job_id, created_at) VALUES "        \
  "($1::text, $2::text, $3::uuid, pawl_now($4::bigint)) ON CONFLICT (type, " \
  "key) DO UPDATE SET job_id = excluded.job_id, created_at = "               \
  "excluded.created_at WHERE EXISTS (SELECT 1 FROM pawl_jobs j WHERE j.id "  \
  "= pawl_instances.job_id AND j.state = 4)"
/* The SQL of this file's statements, by their ids (pg_int.h,
 * "Statements"). */
#define PG_HERE PG__STEPS
const char *const pawl__pg_sql_steps[PG__ALERTS - PG__STEPS] = {
    PG_AT(PG_STEP_LIST_Q) = PG_STEP_LIST,
    PG_AT(PG_STEP_JOB_Q) = PG_STEP_JOB,
    PG_AT(PG_STEP_BEGIN_Q) = PG_STEP_BEGIN,
    PG_AT(PG_STEP_SAVE_Q) = PG_STEP_SAVE,
    PG_AT(PG_STEP_END_Q) = PG_STEP_END,
    PG_AT(PG_STEP_EXIT_Q) = PG_STEP_EXIT,
    PG_AT(PG_INSTANCE_FIND_Q) = PG_INSTANCE_FIND,
    PG_AT(PG_INSTANCE_TAKE_Q) = PG_INSTANCE_TAKE,
};
#undef PG_HERE

/* ---- steps (restartable steps, job instances) ---------------------------- */

int pawl__pg_steps_get(store_t *base, const pawl_id_t *id, pawl_steps_t **out) {
  pg_store_t *s = (pg_store_t *)base;
  *out = NULL;
  pg_params_t pp;
  pp_id(&pp, 0, id);
  PGresult *res;
  /* One snapshot (REPEATABLE READ): the rows, the exit and the instance
   * agree. */
  int rc = pawl__pg_ready(s);
  if (!rc)
    rc = pawl__pg_cmd(s, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
                      "begin transaction");
  if (rc) return rc;
  rc = pawl__pg_run(s, PG_STEP_JOB_Q, 1, pp.v, &res, "read steps");
  pawl_steps_t *st = NULL;
  if (!rc) {
    int exists = PQntuples(res) == 1 && strcmp(pg_val(res, 0, 0), "t") == 0;
    if (!exists) {
      rc = pawl__store_no_job(base, id);
    } else if (!(st = pawl__calloc(1, sizeof *st)) ||
               pawl__store_dup(&st->exit_code, pg_val(res, 0, 1)) ||
               pawl__store_dup(&st->exit_message, pg_val(res, 0, 2)) ||
               pawl__store_dup(&st->instance, pg_val(res, 0, 3))) {
      rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
    }
    PQclear(res);
  }
  if (!rc) rc = pawl__pg_run(s, PG_STEP_LIST_Q, 1, pp.v, &res, "read steps");
  if (!rc) {
    for (int i = 0; !rc && i < PQntuples(res); i++) {
      pawl_step_exec_t *e = pawl__store_step_push(st);
      store_row_t sr = pawl__pg_row(res, i);
      if (!e || pawl__store_step_fill(e, &sr) != 0)
        rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
    }
    PQclear(res);
  }
  /* A read: ending it cannot lose anything; keep the first error. */
  int end = pawl__pg_end(s, 0);
  if (!rc) rc = end;
  if (rc) {
    pawl_steps_free(st);
    return rc;
  }
  *out = st;
  return 0;
}

/* Binds the attempt ($1 job, $2 token, $3 attempt) of PG_STEP_HELD. */
static void pg_step_held(pg_params_t *pp, const pawl_id_t *id,
                         const pawl_id_t *token, int32_t attempt) {
  pp_id(pp, 0, id);
  pp_id(pp, 1, token);
  pp_int(pp, 2, attempt);
}

static void pg_step_counts(pg_params_t *pp, int first, const int64_t *counts) {
  for (int k = 0; k < PAWL_STEP_NCOUNTS; k++)
    pp_int(pp, first + k, counts ? counts[k] : 0);
}

/* Runs a guarded write: PAWL_ELEASE when it changed no row. */
static int pg_step_write(pg_store_t *s, int stmt, int n, pg_params_t *pp,
                         const pawl_id_t *id, int32_t attempt,
                         const char *what) {
  PGresult *res;
  int rc = pawl__pg_run(s, stmt, n, pp->v, &res, what);
  if (rc) return rc;
  long changed = pg_changed(res);
  PQclear(res);
  return changed == 1 ? 0 : pawl__store_not_held(&s->base, id, attempt);
}

int pawl__pg_step_begin(store_t *base, const pawl_id_t *id,
                        const pawl_id_t *token, int32_t attempt, int32_t index,
                        const char *name, const char *checkpoint,
                        int64_t *exec) {
  pg_store_t *s = (pg_store_t *)base;
  pg_params_t pp;
  pg_step_held(&pp, id, token, attempt);
  pp_int(&pp, 3, index);
  pp_str(&pp, 4, name);
  pp_now(s, &pp, 5);
  pp_str(&pp, 6, checkpoint);
  PGresult *res;
  int rc = pawl__pg_run(s, PG_STEP_BEGIN_Q, 7, pp.v, &res, "begin step");
  if (rc) return rc;
  int got = PQntuples(res) == 1;
  if (got) *exec = pg_int(res, 0, 0);
  PQclear(res);
  return got ? 0 : pawl__store_not_held(base, id, attempt);
}

int pawl__pg_step_save(store_t *base, const pawl_id_t *id,
                       const pawl_id_t *token, int32_t attempt, int64_t exec,
                       const char *checkpoint, const int64_t *counts) {
  pg_store_t *s = (pg_store_t *)base;
  pg_params_t pp;
  pg_step_held(&pp, id, token, attempt);
  pp_int(&pp, 3, exec);
  pp_str(&pp, 4, checkpoint);
  pp_now(s, &pp, 5);
  pg_step_counts(&pp, 6, counts);
  return pg_step_write(s, PG_STEP_SAVE_Q, 12, &pp, id, attempt,
                       "save checkpoint");
}

int pawl__pg_step_end(store_t *base, const pawl_id_t *id,
                      const pawl_id_t *token, int32_t attempt, int64_t exec,
                      int status, const char *exit_code,
                      const char *exit_message, const int64_t *counts) {
  pg_store_t *s = (pg_store_t *)base;
  pg_params_t pp;
  pg_step_held(&pp, id, token, attempt);
  pp_int(&pp, 3, exec);
  pp_int(&pp, 4, status);
  pp_now(s, &pp, 5);
  pp_str(&pp, 6, exit_code);
  pp_str(&pp, 7, exit_message);
  pg_step_counts(&pp, 8, counts);
  return pg_step_write(s, PG_STEP_END_Q, 14, &pp, id, attempt, "end step");
}

int pawl__pg_step_exit(store_t *base, const pawl_id_t *id,
                       const pawl_id_t *token, int32_t attempt,
                       const char *exit_code, const char *exit_message) {
  pg_store_t *s = (pg_store_t *)base;
  pg_params_t pp;
  pg_step_held(&pp, id, token, attempt);
  pp_str(&pp, 3, exit_code);
  pp_str(&pp, 4, exit_message);
  pp_now(s, &pp, 5);
  return pg_step_write(s, PG_STEP_EXIT_Q, 6, &pp, id, attempt,
                       "set exit code");
}

int pawl__pg_instance_find(store_t *base, const char *type, const char *key,
                           pawl_id_t *id, int *state) {
  pg_store_t *s = (pg_store_t *)base;
  const char *v[2] = {type, key};
  PGresult *res;
  int rc =
      pawl__pg_run(s, PG_INSTANCE_FIND_Q, 2, v, &res, "look up job instance");
  if (rc) return rc;
  int found = PQntuples(res) > 0;
  if (found) {
    pg_id(res, 0, 0, id);
    *state = (int)pg_int(res, 0, 1);
  }
  PQclear(res);
  return found ? 0 : PAWL_ENOTFOUND;
}

/* In the insert's transaction, after the job's row (pawl__pg_insert_one). */
int pawl__pg_instance_take(pg_store_t *s, const store_new_job_t *j) {
  pg_params_t pp;
  pp_str(&pp, 0, j->type);
  pp_str(&pp, 1, j->instance_key);
  pp_id(&pp, 2, &j->id);
  pp_now(s, &pp, 3);
  PGresult *res;
  int rc =
      pawl__pg_run(s, PG_INSTANCE_TAKE_Q, 4, pp.v, &res, "record job instance");
  if (rc) return rc;
  long changed = pg_changed(res);
  PQclear(res);
  if (changed == 1) return 0;
  return pawl__store_fail(&s->base, PAWL_ECONFLICT,
                          "job instance %s of %s is held by another job",
                          j->instance_key, j->type);
}
