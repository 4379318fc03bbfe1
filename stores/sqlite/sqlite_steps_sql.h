/* sqlite_steps_sql.h: the SQL of the SQLite store's restartable steps and
 * job instances (tables pawl_steps, pawl_job_exits,
 * pawl_instances, schema V012). None of it is on the claim's or the
 * finish's path. */
#ifndef PAWL_SQLITE_STEPS_SQL_H
#define PAWL_SQLITE_STEPS_SQL_H

/* In pawl__store_step_fill()'s order (stores/store.h). */
#define SQLITE_STEP_COLS                                                     \
  "seq, attempt, idx, name, status, started_at, ended_at, exit_code, "       \
  "exit_message, read_count, write_count, filter_count, skip_count, "        \
  "commit_count, rollback_count, checkpoint, checkpoint_at"

/* The attempt ?3 of job ?1 is held by lease token ?2 (as SQ_PROGRESS). */
#define SQLITE_STEP_HELD                                                     \
  "EXISTS (SELECT 1 FROM pawl_jobs WHERE id = ?1 AND state = 1 AND "         \
  "lease_token = ?2 AND attempt = ?3)"

#define SQLITE_STEP_LIST                                                     \
  "SELECT " SQLITE_STEP_COLS " FROM pawl_steps WHERE job_id = ?1 ORDER BY seq"

#define SQLITE_STEP_EXIT_GET                                                 \
  "SELECT exit_code, exit_message FROM pawl_job_exits WHERE job_id = ?1"

#define SQLITE_STEP_INSTANCE_OF                                              \
  "SELECT key FROM pawl_instances WHERE job_id = ?1"

/* ?1..?3 the attempt, ?4 idx, ?5 name, ?6 now, ?7 checkpoint. */
#define SQLITE_STEP_BEGIN                                                    \
  "INSERT INTO pawl_steps (job_id, attempt, idx, name, status, started_at, " \
  "checkpoint) SELECT ?1, ?3, ?4, ?5, 0, ?6, ?7 WHERE " SQLITE_STEP_HELD

/* Rows an earlier attempt left running: it never came back to end them.
 * ?1 job, ?2 the row just begun, ?3 now. */
#define SQLITE_STEP_LOST                                                     \
  "UPDATE pawl_steps SET status = 2, ended_at = ?3, exit_message = "         \
  "coalesce(exit_message, 'the attempt ended without ending this step "     \
  "(its node stopped or died, or it timed out)') WHERE job_id = ?1 AND "     \
  "status = 0 AND seq <> ?2"

/* ?1..?3 the attempt, ?4 seq, ?5 checkpoint (NULL: kept), ?6 now, ?7..?12
 * the counts. */
#define SQLITE_STEP_SAVE                                                     \
  "UPDATE pawl_steps SET checkpoint = coalesce(?5, checkpoint), "            \
  "checkpoint_at = CASE WHEN ?5 IS NULL THEN checkpoint_at ELSE ?6 END, "    \
  "read_count = ?7, write_count = ?8, filter_count = ?9, skip_count = ?10, " \
  "commit_count = ?11, rollback_count = ?12 WHERE seq = ?4 AND job_id = ?1 " \
  "AND status = 0 AND " SQLITE_STEP_HELD

/* ?1..?3 the attempt, ?4 seq, ?5 status, ?6 now, ?7 exit code, ?8 exit
 * message, ?9..?14 the counts. */
#define SQLITE_STEP_END                                                      \
  "UPDATE pawl_steps SET status = ?5, ended_at = ?6, exit_code = ?7, "       \
  "exit_message = ?8, read_count = ?9, write_count = ?10, filter_count = "   \
  "?11, skip_count = ?12, commit_count = ?13, rollback_count = ?14 WHERE "   \
  "seq = ?4 AND job_id = ?1 AND status = 0 AND " SQLITE_STEP_HELD

/* ?1..?3 the attempt, ?4 code, ?5 message, ?6 now. */
#define SQLITE_STEP_EXIT                                                     \
  "INSERT INTO pawl_job_exits (job_id, exit_code, exit_message, at) "        \
  "SELECT ?1, ?4, ?5, ?6 WHERE " SQLITE_STEP_HELD " ON CONFLICT (job_id) DO " \
  "UPDATE SET exit_code = excluded.exit_code, exit_message = "               \
  "excluded.exit_message, at = excluded.at"

/* The job holding instance (?1 type, ?2 key), and its state. */
#define SQLITE_INSTANCE_FIND                                                 \
  "SELECT j.id, j.state FROM pawl_instances i JOIN pawl_jobs j ON j.id = "   \
  "i.job_id WHERE i.type = ?1 AND i.key = ?2"

/* Takes instance (?1 type, ?2 key) for the new job ?3 at ?4: a new row,
 * or the row of a job canceled (one deleted took its row with it: the
 * foreign key's cascade). changes() is 0 when another job holds it. The
 * test is positive (the holder is seen canceled), as on PostgreSQL, where
 * a holder committed meanwhile may be newer than the statement's
 * snapshot. */
#define SQLITE_INSTANCE_TAKE                                                 \
  "INSERT INTO pawl_instances (type, key, job_id, created_at) VALUES (?1, "  \
  "?2, ?3, ?4) ON CONFLICT (type, key) DO UPDATE SET job_id = "              \
  "excluded.job_id, created_at = excluded.created_at WHERE EXISTS "          \
  "(SELECT 1 FROM pawl_jobs j WHERE j.id = pawl_instances.job_id AND "       \
  "j.state = 4)"

#endif
