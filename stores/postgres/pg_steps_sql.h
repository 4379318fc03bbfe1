/* pg_steps_sql.h: the SQL of the PostgreSQL store's restartable steps and
 * job instances (tables pawl_steps, pawl_job_exits,
 * pawl_instances, schema V011). None of it is on the claim's or the
 * finish's path. */
#ifndef PAWL_PG_STEPS_SQL_H
#define PAWL_PG_STEPS_SQL_H

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

#endif
