/* sqlite_alerts_sql.h: the SQL of the SQLite store's dead-letter alerts
 * (tables pawl_alerts, pawl_alert_windows, schema V014). Only
 * SQLITE_ALERT_ADD is on a job's path: once, when it moves to failed. */
#ifndef PAWL_SQLITE_ALERTS_SQL_H
#define PAWL_SQLITE_ALERTS_SQL_H

/* In sq_alert_row()'s order. */
#define SQLITE_ALERT_COLS                                                    \
  "seq, kind, job_id, type, queue, attempt, error, created_at, verdict, "    \
  "count, suppressed, first_at, last_at"

/* The outbox row of job ?1, moved to failed at ?2 (now) in this
 * transaction. */
#define SQLITE_ALERT_ADD                                                     \
  "INSERT INTO pawl_alerts (job_id, type, queue, attempt, error, "           \
  "created_at) SELECT id, type, queue, attempt, last_error, ?2 FROM "        \
  "pawl_jobs WHERE id = ?1 AND state = 3"

/* Windows ended by ?1 (now): those with suppressed alerts become summary
 * rows (kind 1), then every ended window goes. */
#define SQLITE_ALERT_ROLL                                                    \
  "INSERT INTO pawl_alerts (kind, job_id, type, queue, attempt, error, "     \
  "created_at, count, suppressed, first_at, last_at) SELECT 1, job_id, "     \
  "type, queue, attempt, error, ?1, count, suppressed, first_at, last_at "   \
  "FROM pawl_alert_windows WHERE ends_at <= ?1 AND suppressed > 0"
#define SQLITE_ALERT_ROLL_DEL                                                \
  "DELETE FROM pawl_alert_windows WHERE ends_at <= ?1"

/* Leases to ?1 until ?2 at most ?4 rows free at ?3 (now). */
#define SQLITE_ALERT_TAKE                                                    \
  "UPDATE pawl_alerts SET taken_by = ?1, taken_until = ?2 WHERE seq IN "     \
  "(SELECT seq FROM pawl_alerts WHERE taken_until IS NULL OR taken_until "   \
  "<= ?3 ORDER BY seq LIMIT ?4) RETURNING " SQLITE_ALERT_COLS

#define SQLITE_ALERT_GET                                                     \
  "SELECT taken_by, verdict, count, first_at, last_at FROM pawl_alerts "     \
  "WHERE seq = ?1"

/* Opens window (?1 type, ?2 fp) at ?3 for ?4 ms, or counts into it; the
 * row keeps the last job's id (?5), queue, attempt and error. */
#define SQLITE_ALERT_WINDOW                                                  \
  "INSERT INTO pawl_alert_windows (type, fp, first_at, last_at, ends_at, "   \
  "count, suppressed, job_id, queue, attempt, error) VALUES (?1, ?2, ?3, "   \
  "?3, ?3 + ?4, 1, 0, ?5, ?6, ?7, ?8) ON CONFLICT (type, fp) DO UPDATE SET " \
  "last_at = max(last_at, excluded.last_at), count = count + 1, "            \
  "suppressed = suppressed + 1, job_id = excluded.job_id, queue = "          \
  "excluded.queue, attempt = excluded.attempt, error = excluded.error "      \
  "RETURNING count, first_at, last_at"

#define SQLITE_ALERT_VERDICT                                                 \
  "UPDATE pawl_alerts SET verdict = ?2, count = ?3, first_at = ?4, "         \
  "last_at = ?5 WHERE seq = ?1"

#define SQLITE_ALERT_DONE                                                    \
  "DELETE FROM pawl_alerts WHERE seq = ?1 AND taken_by = ?2"

#endif
