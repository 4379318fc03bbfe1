/* sqlite_recurring_sql.h: the SQL of the SQLite store's recurring
 * definitions (table pawl_recurring, schema V005). */
#ifndef PAWL_SQLITE_RECURRING_SQL_H
#define PAWL_SQLITE_RECURRING_SQL_H

/* In pawl__store_rec_fill()'s order (stores/store.h). */
#define SQLITE_REC_COLS                                                      \
  "name, expr, tz, misfire, catch_up_limit, type, payload, queue, "          \
  "priority, max_attempts, timeout_s, enabled, paused, source, script, "     \
  "next_fire_at, last_fire_at, last_job_id, created_at, updated_at, version, " \
  "load_error"

/* ?1..?16 as sq_rec_bind() binds them, ?17 now. */
#define SQLITE_REC_INSERT                                                    \
  "INSERT INTO pawl_recurring (name, expr, tz, misfire, catch_up_limit, "    \
  "type, payload, queue, priority, max_attempts, timeout_s, enabled, "       \
  "paused, source, script, next_fire_at, created_at, updated_at) VALUES "    \
  "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, " \
  "?17, ?17) ON CONFLICT (name) DO "

#define SQLITE_REC_ADD SQLITE_REC_INSERT "NOTHING"

/* A script's definition: written over a script-born one (enabled again,
 * its load error cleared; paused and the last fire are the operator's and
 * the schedule's, kept), never over an operator's. */
#define SQLITE_REC_PUT_SCRIPT                                                \
  SQLITE_REC_INSERT                                                          \
  "UPDATE SET expr = excluded.expr, tz = excluded.tz, misfire = "            \
  "excluded.misfire, catch_up_limit = excluded.catch_up_limit, type = "      \
  "excluded.type, payload = excluded.payload, queue = excluded.queue, "      \
  "priority = excluded.priority, max_attempts = excluded.max_attempts, "     \
  "timeout_s = excluded.timeout_s, enabled = 1, script = excluded.script, "  \
  "load_error = NULL, "                                                      \
  "next_fire_at = excluded.next_fire_at, updated_at = excluded.updated_at, " \
  "version = pawl_recurring.version + 1 WHERE pawl_recurring.source = "      \
  "'script'"

#define SQLITE_REC_GET                                                       \
  "SELECT " SQLITE_REC_COLS " FROM pawl_recurring WHERE name = ?1"
#define SQLITE_REC_LIST                                                      \
  "SELECT " SQLITE_REC_COLS " FROM pawl_recurring ORDER BY name"

/* Every field but created_at, as a compare-and-set on the version ?20. */
#define SQLITE_REC_UPDATE                                                    \
  "UPDATE pawl_recurring SET expr = ?2, tz = ?3, misfire = ?4, "             \
  "catch_up_limit = ?5, type = ?6, payload = ?7, queue = ?8, priority = ?9, "\
  "max_attempts = ?10, timeout_s = ?11, enabled = ?12, paused = ?13, "       \
  "source = ?14, script = ?15, next_fire_at = ?16, last_fire_at = ?17, "     \
  "last_job_id = ?18, updated_at = ?19, version = version + 1 WHERE "        \
  "name = ?1 AND version = ?20"

#define SQLITE_REC_REMOVE "DELETE FROM pawl_recurring WHERE name = ?1"

/* The due ones through the partial index pawl_recurring_due (its WHERE is
 * repeated so that the planner may use it): ?1 now, ?2 the batch. */
#define SQLITE_REC_DUE                                                       \
  "SELECT " SQLITE_REC_COLS " FROM pawl_recurring WHERE enabled = 1 AND "    \
  "paused = 0 AND next_fire_at IS NOT NULL AND next_fire_at <= ?1 "          \
  "ORDER BY next_fire_at LIMIT ?2"

/* A tick's compare-and-set on next_fire_at (?5 as read); a definition
 * paused or disabled meanwhile is not advanced. ?2 the new next (NULL:
 * none), ?3 the last fire (NULL: unchanged), ?4 now. */
#define SQLITE_REC_ADVANCE                                                   \
  "UPDATE pawl_recurring SET next_fire_at = ?2, last_fire_at = "             \
  "coalesce(?3, last_fire_at), updated_at = ?4, version = version + 1 "      \
  "WHERE name = ?1 AND next_fire_at = ?5 AND enabled = 1 AND paused = 0"

#define SQLITE_REC_LAST_JOB                                                  \
  "UPDATE pawl_recurring SET last_job_id = ?2 WHERE name = ?1"

/* ?1 a JSON array of the scripts there are, ?2 now. */
#define SQLITE_REC_DISABLE_GONE                                              \
  "UPDATE pawl_recurring SET enabled = 0, updated_at = ?2, version = "       \
  "version + 1 WHERE source = 'script' AND enabled = 1 AND script NOT IN "   \
  "(SELECT value FROM json_each(?1))"
/* ?1 a JSON array of the scripts that went, ?2 now. */
#define SQLITE_REC_DISABLE_LISTED                                            \
  "UPDATE pawl_recurring SET enabled = 0, updated_at = ?2, version = "       \
  "version + 1 WHERE source = 'script' AND enabled = 1 AND script IN "       \
  "(SELECT value FROM json_each(?1))"
/* ?1 a script that failed to load, ?2 what the node said, ?3 now: noted on
 * its definitions, which are otherwise left as they are (the version too:
 * an operator's compare-and-set is not disturbed by a note). */
#define SQLITE_REC_LOAD_ERROR                                                \
  "UPDATE pawl_recurring SET load_error = ?2, updated_at = ?3 WHERE source " \
  "= 'script' AND script = ?1 AND load_error IS NOT ?2"

#endif
