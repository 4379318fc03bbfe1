/* pg_alerts_sql.h: the SQL of the PostgreSQL store's dead-letter alerts
 * (tables pawl_alerts, pawl_alert_windows, schema V013). None of
 * it is on the claim's or the finish's path: the outbox row is written by
 * the trigger pawl_alerts_dead. */
#ifndef PAWL_PG_ALERTS_SQL_H
#define PAWL_PG_ALERTS_SQL_H

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

#endif
