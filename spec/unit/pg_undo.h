/* pg_undo.h: SQL that takes the newest PostgreSQL migrations back out,
 * for the tests that build a database as an older version left it and let
 * the store migrate it again. Newest first. */
#ifndef PAWL_PG_UNDO_H
#define PAWL_PG_UNDO_H

/* V020__claim_floor.sql: the wakeups as V001 made them (an empty payload,
 * no trigger on updates). */
#define PG_UNDO_V020                                                         \
  "DROP TRIGGER pawl_queues_resume_wake ON pawl_queues; DROP TRIGGER "       \
  "pawl_queues_delete_wake ON pawl_queues; DROP FUNCTION pawl_queue_wake(); " \
  "DROP TRIGGER pawl_jobs_floor_wake ON pawl_jobs; DROP FUNCTION "           \
  "pawl_floor_wake(); DROP TRIGGER pawl_jobs_notify ON pawl_jobs; CREATE OR " \
  "REPLACE FUNCTION pawl_notify() RETURNS trigger LANGUAGE plpgsql AS $$ "   \
  "BEGIN PERFORM pg_notify('pawl_jobs:' || TG_TABLE_SCHEMA, ''); RETURN "    \
  "NULL; END $$; CREATE TRIGGER pawl_jobs_notify AFTER INSERT ON pawl_jobs " \
  "FOR EACH STATEMENT EXECUTE FUNCTION pawl_notify(); DELETE FROM "          \
  "pawl_schema WHERE name = 'V020__claim_floor.sql'; "

/* V019__claim_prepare_idle.sql: the claim's first step as V017 made it
 * (V017's undo drops the function whichever body it has). */
#define PG_UNDO_V019                                                         \
  "DELETE FROM pawl_schema WHERE name = 'V019__claim_prepare_idle.sql'; "

/* V018__node_state_attempt_trace.sql: the attempts' traces and the nodes'
 * stop times. */
#define PG_UNDO_V018                                                         \
  "ALTER TABLE pawl_attempts_archive DROP COLUMN trace; ALTER TABLE "       \
  "pawl_attempts DROP COLUMN trace; ALTER TABLE pawl_nodes DROP COLUMN "     \
  "stopped_at; DELETE FROM pawl_schema WHERE name = "                        \
  "'V018__node_state_attempt_trace.sql'; "

/* V017__claim_holds.sql: the hold flags, their triggers and functions, the
 * key log, and the claim index as V001 made it. */
#define PG_UNDO_V017                                                         \
  "DROP TRIGGER pawl_jobs_key_insert ON pawl_jobs; DROP TRIGGER "            \
  "pawl_jobs_key_update ON pawl_jobs; DROP TRIGGER pawl_jobs_key_delete ON " \
  "pawl_jobs; DROP TRIGGER pawl_jobs_time_hold ON pawl_jobs; DROP FUNCTION " \
  "pawl_claim_prepare(timestamptz, integer); DROP FUNCTION "                 \
  "pawl_key_settle(text); DROP FUNCTION pawl_key_changed(); DROP FUNCTION "  \
  "pawl_time_hold(); DROP TABLE pawl_key_dirty; ALTER TABLE pawl_jobs DROP " \
  "COLUMN ordering_held, DROP COLUMN time_held; ALTER TABLE "                \
  "pawl_jobs_archive DROP COLUMN ordering_held, DROP COLUMN time_held; "     \
  "CREATE INDEX pawl_jobs_claim ON pawl_jobs (rank DESC, run_at, id) WHERE " \
  "state = 0; DELETE FROM pawl_schema WHERE name = 'V017__claim_holds.sql'; "

#endif
