/* sqlite_undo.h: SQL that takes the newest SQLite migrations back out, for
 * the tests that build a database as an older version left it and let
 * the store migrate it again. Newest first. */
#ifndef PAWL_SQLITE_UNDO_H
#define PAWL_SQLITE_UNDO_H

/* V020__holds_by_store.sql: the pending indexes as V018 left them. Its
 * triggers are not put back: this is used before SQLITE_UNDO_V018 and
 * SQLITE_UNDO_V019 only, and V018's undo drops them. */
#define SQLITE_UNDO_V020                                                     \
  "DROP INDEX pawl_jobs_lane; CREATE INDEX pawl_jobs_claim_queue ON "        \
  "pawl_jobs (queue, rank DESC, run_at, id) WHERE state = 0; CREATE INDEX "  \
  "pawl_jobs_ready_queue ON pawl_jobs (queue, rank DESC, run_at, id) WHERE " \
  "state = 0 AND held = 0 AND early = 0; CREATE INDEX pawl_jobs_lane ON "    \
  "pawl_jobs (queue, resource, rank DESC, run_at, id) WHERE state = 0 AND "  \
  "held = 0 AND early = 0; DELETE FROM pawl_schema WHERE name = "            \
  "'V020__holds_by_store.sql'; "

/* V019__node_state_attempt_trace.sql: the attempts' traces and the
 * nodes' stop times. */
#define SQLITE_UNDO_V019                                                     \
  "ALTER TABLE pawl_attempts_archive DROP COLUMN trace; ALTER TABLE "       \
  "pawl_attempts DROP COLUMN trace; ALTER TABLE pawl_nodes DROP COLUMN "     \
  "stopped_at; DELETE FROM pawl_schema WHERE name = "                        \
  "'V019__node_state_attempt_trace.sql'; "

/* V018__claim_holds.sql: the hold columns, their triggers (if V020's undo
 * left them out) and indexes;
 * the claim and ordering indexes as V001 and V007 made them. */
#define SQLITE_UNDO_V018                                                     \
  "DROP TRIGGER IF EXISTS pawl_jobs_insert_hold; DROP TRIGGER IF EXISTS "    \
  "pawl_jobs_update_early; DROP TRIGGER IF EXISTS pawl_jobs_update_hold; "  \
  "DROP TRIGGER IF EXISTS pawl_jobs_delete_hold; "                           \
  "DROP TRIGGER pawl_key_refresh_do; DROP VIEW pawl_key_refresh; "           \
  "DROP INDEX pawl_jobs_key; DROP INDEX pawl_jobs_ready_queue; "             \
  "DROP INDEX pawl_jobs_early; DROP INDEX pawl_jobs_lane; "                  \
  "DROP INDEX pawl_jobs_claim; "                                             \
  "CREATE INDEX pawl_jobs_claim ON pawl_jobs (rank DESC, run_at, id) "       \
  "WHERE state = 0; CREATE INDEX pawl_jobs_ordering ON pawl_jobs "           \
  "(ordering_key, state, seq) WHERE ordering_key IS NOT NULL AND state IN "  \
  "(0, 1, 5, 6); ALTER TABLE pawl_jobs DROP COLUMN held; ALTER TABLE "       \
  "pawl_jobs DROP COLUMN early; ALTER TABLE pawl_jobs_archive DROP COLUMN "  \
  "held; ALTER TABLE pawl_jobs_archive DROP COLUMN early; DELETE FROM "      \
  "pawl_schema WHERE name = 'V018__claim_holds.sql'; "

#endif
