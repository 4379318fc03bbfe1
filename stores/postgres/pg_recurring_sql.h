/* pg_recurring_sql.h: the SQL of the PostgreSQL store's recurring
 * definitions (issue 14; table pawl_recurring, schema V004). Times cross
 * as epoch milliseconds (pawl_ms, pawl_ts), booleans as integers. */
#ifndef PAWL_PG_RECURRING_SQL_H
#define PAWL_PG_RECURRING_SQL_H

/* In pawl__store_rec_fill()'s order (stores/store.h). */
#define PG_REC_COLS                                                          \
  "name, expr, tz, misfire, catch_up_limit, type, payload, queue, "          \
  "priority, max_attempts, timeout_s, enabled::int, paused::int, source, "   \
  "script, pawl_ms(next_fire_at), pawl_ms(last_fire_at), last_job_id, "      \
  "pawl_ms(created_at), pawl_ms(updated_at), version"

/* $1..$16 as pg_rec_params() sets them, $17 now (NULL: the database's). */
#define PG_REC_INSERT                                                        \
  "INSERT INTO pawl_recurring (name, expr, tz, misfire, catch_up_limit, "    \
  "type, payload, queue, priority, max_attempts, timeout_s, enabled, "       \
  "paused, source, script, next_fire_at, created_at, updated_at) VALUES "    \
  "($1::text, $2::text, $3::text, $4::text, $5::int, $6::text, "             \
  "$7::text, $8::text, $9::int, $10::int, $11::int, $12::int <> 0, "        \
  "$13::int <> 0, $14::text, $15::text, pawl_ts($16::bigint), "              \
  "pawl_now($17::bigint), pawl_now($17::bigint)) ON CONFLICT (name) DO "

#define PG_REC_ADD_SQL PG_REC_INSERT "NOTHING"

/* A script's definition: written over a script-born one (enabled again;
 * paused and the last fire kept), never over an operator's. */
#define PG_REC_PUT_SCRIPT_SQL                                                \
  PG_REC_INSERT                                                              \
  "UPDATE SET expr = excluded.expr, tz = excluded.tz, misfire = "            \
  "excluded.misfire, catch_up_limit = excluded.catch_up_limit, type = "      \
  "excluded.type, payload = excluded.payload, queue = excluded.queue, "      \
  "priority = excluded.priority, max_attempts = excluded.max_attempts, "     \
  "timeout_s = excluded.timeout_s, enabled = true, script = "                \
  "excluded.script, next_fire_at = excluded.next_fire_at, updated_at = "     \
  "excluded.updated_at, version = pawl_recurring.version + 1 WHERE "         \
  "pawl_recurring.source = 'script'"

#define PG_REC_GET_SQL                                                       \
  "SELECT " PG_REC_COLS " FROM pawl_recurring WHERE name = $1::text"
#define PG_REC_LIST_SQL                                                      \
  "SELECT " PG_REC_COLS " FROM pawl_recurring ORDER BY name"

/* Every field but created_at, as a compare-and-set on the version $20. */
#define PG_REC_UPDATE_SQL                                                    \
  "UPDATE pawl_recurring SET expr = $2::text, tz = $3::text, misfire = "     \
  "$4::text, catch_up_limit = $5::int, type = $6::text, payload = "           \
  "$7::text, queue = $8::text, priority = $9::int, max_attempts = "         \
  "$10::int, timeout_s = $11::int, enabled = $12::int <> 0, paused = "       \
  "$13::int <> 0, source = $14::text, script = $15::text, next_fire_at = "   \
  "pawl_ts($16::bigint), last_fire_at = pawl_ts($17::bigint), last_job_id "  \
  "= $18::uuid, updated_at = pawl_now($19::bigint), version = version + 1 "  \
  "WHERE name = $1::text AND version = $20::bigint"

#define PG_REC_REMOVE_SQL "DELETE FROM pawl_recurring WHERE name = $1::text"

/* The due ones through the partial index pawl_recurring_due: $1 now (ms),
 * $2 the batch. */
#define PG_REC_DUE_SQL                                                       \
  "SELECT " PG_REC_COLS " FROM pawl_recurring WHERE enabled AND NOT "        \
  "paused AND next_fire_at IS NOT NULL AND next_fire_at <= "                 \
  "pawl_ts($1::bigint) ORDER BY next_fire_at LIMIT $2::int"

/* A tick's compare-and-set on next_fire_at ($5, as read); one paused or
 * disabled meanwhile is not advanced. $2 the new next (NULL: none), $3
 * the last fire (NULL: unchanged), $4 now. */
#define PG_REC_ADVANCE_SQL                                                   \
  "UPDATE pawl_recurring SET next_fire_at = pawl_ts($2::bigint), "           \
  "last_fire_at = coalesce(pawl_ts($3::bigint), last_fire_at), updated_at "  \
  "= pawl_now($4::bigint), version = version + 1 WHERE name = $1::text AND " \
  "next_fire_at = pawl_ts($5::bigint) AND enabled AND NOT paused"

#define PG_REC_LAST_JOB_SQL                                                  \
  "UPDATE pawl_recurring SET last_job_id = $2::uuid WHERE name = $1::text"

/* $1 an array of the scripts there are, $2 now. */
#define PG_REC_DISABLE_GONE_SQL                                              \
  "UPDATE pawl_recurring SET enabled = false, updated_at = "                 \
  "pawl_now($2::bigint), version = version + 1 WHERE source = 'script' AND " \
  "enabled AND NOT (script = ANY ($1::text[]))"

#endif
