/* sqlite_flow_sql.h: the SQL of the SQLite store's signals and
 * replacements (tables pawl_signals and pawl_replacements,
 * schema V009). */
#ifndef PAWL_SQLITE_FLOW_SQL_H
#define PAWL_SQLITE_FLOW_SQL_H

/* A row whose job has ended gives its key up (see V009__signal.sql): run
 * before an enqueue takes the key. ?1 the key. */
#define SQLITE_SIG_RELEASE                                                   \
  "UPDATE pawl_signals SET live = NULL WHERE key = ?1 AND live = 1 AND "     \
  "(SELECT j.state FROM pawl_jobs AS j WHERE j.id = pawl_signals.job_id) "   \
  "IN (2, 3, 4)"

/* The row that holds key ?1, with its job's state, type and enqueuer
 * (job code may signal only its own: pawl__store_owner_check) and the
 * wait's deadline (a decision after it is refused). */
#define SQLITE_SIG_HOLDER                                                    \
  "SELECT s.job_id, s.state, j.state, j.type, j.enqueued_by, s.timeout_at " \
  "FROM "                                                                    \
  "pawl_signals AS s JOIN "                                                  \
  "pawl_jobs AS j ON j.id = s.job_id WHERE s.key = ?1 AND s.live = 1"

/* ?1 job, ?2 key, ?3 now, ?4 timeout_at (NULL: none). */
#define SQLITE_SIG_ADD                                                       \
  "INSERT INTO pawl_signals (job_id, key, live, state, created_at, "         \
  "timeout_at) VALUES (?1, ?2, 1, 0, ?3, ?4)"

/* ?1 job, ?2 decision, ?3 payload, ?4 now, ?5 by. */
#define SQLITE_SIG_DELIVER                                                   \
  "UPDATE pawl_signals SET state = 1, decision = ?2, payload = ?3, "         \
  "delivered_at = ?4, delivered_by = ?5 WHERE job_id = ?1 AND state = 0"

#define SQLITE_SIG_GET                                                       \
  "SELECT key, state, created_at, timeout_at, decision, payload, "           \
  "delivered_at, delivered_by FROM pawl_signals WHERE job_id = ?1"

/* Waits that ran out by ?1, at most ?2, oldest first (the partial index
 * pawl_signals_due). */
#define SQLITE_SIG_DUE                                                       \
  "SELECT job_id, key, timeout_at FROM pawl_signals WHERE "     \
  "state = 0 AND timeout_at IS NOT NULL AND timeout_at <= ?1 ORDER BY "      \
  "timeout_at LIMIT ?2"

/* The earliest deadline of a wait (NULL: none); one seek of the partial
 * index pawl_signals_due. */
#define SQLITE_SIG_NEXT                                                      \
  "SELECT min(timeout_at) FROM pawl_signals WHERE state = 0 AND timeout_at " \
  "IS NOT NULL"

/* The row keeps its key until its job has ended and the key is taken
 * again (SIG_RELEASE): a decision that comes late then finds the wait that
 * timed out and is refused naming it and its deadline. */
#define SQLITE_SIG_EXPIRE                                                    \
  "UPDATE pawl_signals SET state = 2 WHERE job_id = ?1 AND state = 0"

/* ?1 old, ?2 new, ?3 now, ?4 actor. */
#define SQLITE_REP_ADD                                                       \
  "INSERT INTO pawl_replacements (old_id, new_id, at, actor) VALUES (?1, "   \
  "?2, ?3, ?4)"
/* What the replacement (?2) takes over from the old job (?1) that the
 * public job struct does not carry: its resource (limits), so
 * that a replace cannot take a job out from under its limit; and its place
 * in a batch (?3, the batch the old job left: REP_LEAVE). */
#define SQLITE_REP_CARRY                                                     \
  "UPDATE pawl_jobs SET resource = coalesce(resource, (SELECT o.resource "   \
  "FROM pawl_jobs AS o WHERE o.id = ?1)), batch_id = ?3 WHERE id = ?2"
/* Job instances: the replacement ?2 becomes the job of
 * the old job's (?1) instance, if the old job still holds one: an enqueue
 * of the instance then finds the replacement (a failed old job would
 * otherwise be restarted beside it). */
#define SQLITE_REP_INSTANCE                                                  \
  "UPDATE pawl_instances SET job_id = ?2 WHERE job_id = ?1"
/* Batches: the batch of child ?1 (no row: none); the child
 * leaves it (its replacement takes its place). */
#define SQLITE_REP_BATCH                                                     \
  "SELECT batch_id FROM pawl_jobs WHERE id = ?1 AND batch_id IS NOT NULL"
#define SQLITE_REP_LEAVE "UPDATE pawl_jobs SET batch_id = NULL WHERE id = ?1"
#define SQLITE_REP_NEXT                                                      \
  "SELECT new_id FROM pawl_replacements WHERE old_id = ?1"
#define SQLITE_REP_PREV                                                      \
  "SELECT old_id FROM pawl_replacements WHERE new_id = ?1"

#endif
