/* pg_recurring_sql.h: the SQL of the PostgreSQL store's recurring
 * definitions (table pawl_recurring, schema V004). Times cross
 * as epoch milliseconds (pawl_ms, pawl_ts), booleans as integers. */
#ifndef PAWL_PG_RECURRING_SQL_H
#define PAWL_PG_RECURRING_SQL_H

/* In pawl__store_rec_fill()'s order (stores/store.h). */
#define PG_REC_COLS                                                          \
  "name, expr, tz, misfire, catch_up_limit, type, payload, queue, "          \
  "priority, max_attempts, timeout_s, enabled::int, paused::int, source, "   \
  "script, pawl_ms(next_fire_at), pawl_ms(last_fire_at), last_job_id, "      \
  "pawl_ms(created_at), pawl_ms(updated_at), version, load_error"

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

/* A script's definition: written over a script-born one (enabled again,
 * its load error cleared; paused and the last fire kept), never over an
 * operator's. */
#define PG_REC_PUT_SCRIPT_SQL                                                \
  PG_REC_INSERT                                                              \
  "UPDATE SET expr = excluded.expr, tz = excluded.tz, misfire = "            \
  "excluded.misfire, catch_up_limit = excluded.catch_up_limit, type = "      \
  "excluded.type, payload = excluded.payload, queue = excluded.queue, "      \
  "priority = excluded.priority, max_attempts = excluded.max_attempts, "     \
  "timeout_s = excluded.timeout_s, enabled = true, load_error = NULL, "     \
  "script = "                                                                \
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

/* A tick's batch advances in a fixed number of statements, whatever its
 * size (pg_rec_advance()): the compare-and-sets, the keys, the jobs' COPY
 * and, only when a definition's last key was seen before, its last job.
 *
 * The compare-and-sets: $1..$5 arrays of the names (sorted), the
 * next_fire_at each was read with, the new next (NULL: none), the last
 * fire (NULL: unchanged) and the last job's id (NULL: unchanged; its key
 * is checked next, and LAST_JOB corrects it when the key was seen before);
 * $6 now. One paused, disabled or advanced meanwhile is not advanced (a
 * row another transaction changed is checked again once that commits:
 * READ COMMITTED). The rows are found through the primary key (= ANY), in
 * name order, as the sorted names come, so two nodes advancing
 * overlapping batches (a tick lock that moved) lock them in the same
 * order. Returns the 1-based position of each definition advanced, and
 * now in ms (for the COPY). */
#define PG_REC_ADVANCE_SQL                                                   \
  "UPDATE pawl_recurring AS r SET next_fire_at = pawl_ts(w.next), "          \
  "last_fire_at = coalesce(pawl_ts(w.last), r.last_fire_at), last_job_id = " \
  "coalesce(w.job, r.last_job_id), updated_at = pawl_now($6::bigint), "      \
  "version = r.version + 1 FROM unnest($1::text[], $2::bigint[], "           \
  "$3::bigint[], $4::bigint[], $5::uuid[]) WITH ORDINALITY AS w(name, "      \
  "expect, next, last, job, i) WHERE r.name = ANY ($1::text[]) AND r.name "  \
  "= w.name AND r.next_fire_at = pawl_ts(w.expect) AND r.enabled AND NOT "   \
  "r.paused RETURNING w.i, pawl_ms(pawl_now($6::bigint))"

/* The idempotency keys of the advanced definitions' jobs: $1 the keys, $2
 * the jobs' ids, $3 now. Returns the 1-based position of each key
 * recorded now (a key seen before makes no job). Inserted in key order:
 * two transactions with common keys wait for each other, never deadlock;
 * a key another transaction holds uncommitted is waited for, then found. */
#define PG_REC_KEYS_SQL                                                      \
  "WITH u AS (SELECT * FROM unnest($1::text[], $2::uuid[]) WITH ORDINALITY " \
  "AS u(key, id, i)), ins AS (INSERT INTO pawl_idempotency (key, job_id, "   \
  "created_at) SELECT key, id, pawl_now($3::bigint) FROM u ORDER BY key ON " \
  "CONFLICT (key) DO NOTHING RETURNING job_id) SELECT u.i FROM u JOIN ins "  \
  "ON ins.job_id = u.id"

/* The definitions $1 whose last job's key $2 was seen before: the job the
 * key names (a statement of its own, so that it sees keys committed while
 * the one above waited for them). The rows are locked by the
 * compare-and-set. */
#define PG_REC_LAST_JOB_SQL                                                  \
  "UPDATE pawl_recurring AS r SET last_job_id = (SELECT p.job_id FROM "      \
  "pawl_idempotency AS p WHERE p.key = u.key) FROM unnest($1::text[], "      \
  "$2::text[]) AS u(name, key) WHERE r.name = u.name"

/* $1 an array of the scripts there are, $2 now. */
#define PG_REC_DISABLE_GONE_SQL                                              \
  "UPDATE pawl_recurring SET enabled = false, updated_at = "                 \
  "pawl_now($2::bigint), version = version + 1 WHERE source = 'script' AND " \
  "enabled AND NOT (script = ANY ($1::text[]))"
/* $1 an array of the scripts that went, $2 now. */
#define PG_REC_DISABLE_LISTED_SQL                                            \
  "UPDATE pawl_recurring SET enabled = false, updated_at = "                 \
  "pawl_now($2::bigint), version = version + 1 WHERE source = 'script' AND " \
  "enabled AND script = ANY ($1::text[])"
/* See SQLITE_REC_LOAD_ERROR. */
#define PG_REC_LOAD_ERROR_SQL                                                \
  "UPDATE pawl_recurring SET load_error = $2::text, updated_at = "           \
  "pawl_now($3::bigint) WHERE source = 'script' AND script = $1::text AND "  \
  "load_error IS DISTINCT FROM $2::text"

#endif
