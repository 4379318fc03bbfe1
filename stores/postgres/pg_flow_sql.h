/* pg_flow_sql.h: the SQL of the PostgreSQL store's signals and
 * replacements (tables pawl_signals and pawl_replacements,
 * schema V008). */
#ifndef PAWL_PG_FLOW_SQL_H
#define PAWL_PG_FLOW_SQL_H

/* A row whose job has ended gives its key up (see V008__signal.sql): run
 * before an enqueue takes the key. $1 the key. */
#define PG_SQL_SIG_RELEASE                                                   \
  "UPDATE pawl_signals AS s SET live = NULL FROM pawl_jobs AS j WHERE "      \
  "s.key = $1 AND s.live AND j.id = s.job_id AND j.state IN (2, 3, 4)"

/* The row that holds key $1, with its job's state, type and enqueuer
 * (job code may signal only its own: pawl__store_owner_check), locked: of two
 * deliveries at once, the second waits here for the first to commit and
 * then reads the row as the first left it (READ COMMITTED re-reads a
 * locked row that changed), delivered. Last, the wait's deadline (a
 * decision after it is refused). */
#define PG_SQL_SIG_HOLDER                                                    \
  "SELECT s.job_id, s.state, j.state, j.type, j.enqueued_by, "               \
  "pawl_ms(s.timeout_at) FROM "                                              \
  "pawl_signals AS s JOIN "                                                  \
  "pawl_jobs AS j ON j.id = s.job_id WHERE s.key = $1 AND s.live FOR "       \
  "UPDATE OF s"

/* $1 job, $2 key, $3 now, $4 timeout_at (NULL: none). Nothing inserted:
 * a live job holds the key (also one that committed while this waited
 * on its index entry). */
#define PG_SQL_SIG_ADD                                                       \
  "INSERT INTO pawl_signals (job_id, key, live, state, created_at, "         \
  "timeout_at) VALUES ($1::uuid, $2, true, 0, pawl_now($3::bigint), "        \
  "pawl_ts($4::bigint)) ON CONFLICT (key) WHERE live DO NOTHING"

/* $1 job, $2 decision, $3 payload, $4 now, $5 by. */
#define PG_SQL_SIG_DELIVER                                                   \
  "UPDATE pawl_signals SET state = 1, decision = $2, payload = $3::jsonb, "  \
  "delivered_at = pawl_now($4::bigint), delivered_by = $5 WHERE job_id = "   \
  "$1::uuid AND state = 0"

#define PG_SQL_SIG_GET                                                       \
  "SELECT key, state, pawl_ms(created_at), pawl_ms(timeout_at), decision, "  \
  "payload::text, pawl_ms(delivered_at), delivered_by FROM pawl_signals "    \
  "WHERE job_id = $1::uuid"

/* Waits that ran out by $1, at most $2, oldest first, locked (a delivery
 * at the same instant waits, then finds the wait expired; SKIP LOCKED:
 * rows a delivery holds are left to it). */
#define PG_SQL_SIG_DUE                                                       \
  "SELECT job_id, key, pawl_ms(timeout_at) FROM "      \
  "pawl_signals WHERE state = 0 AND timeout_at IS NOT NULL AND timeout_at "  \
  "<= pawl_now($1::bigint) ORDER BY timeout_at LIMIT $2 FOR UPDATE SKIP "    \
  "LOCKED"

/* The earliest deadline of a wait (NULL: none); one seek of the partial
 * index pawl_signals_due. */
#define PG_SQL_SIG_NEXT                                                      \
  "SELECT pawl_ms(min(timeout_at)) FROM pawl_signals WHERE state = 0 AND "   \
  "timeout_at IS NOT NULL"

/* See SQLITE_SIG_EXPIRE: the row keeps its key. */
#define PG_SQL_SIG_EXPIRE                                                    \
  "UPDATE pawl_signals SET state = 2 WHERE job_id = $1::uuid AND state = 0"

/* $1 old, $2 new, $3 now, $4 actor. */
#define PG_SQL_REP_ADD                                                       \
  "INSERT INTO pawl_replacements (old_id, new_id, at, actor) VALUES "        \
  "($1::uuid, $2::uuid, pawl_now($3::bigint), $4)"
/* What the replacement ($2) takes over from the old job ($1) that the
 * public job struct does not carry: its resource (limits), so
 * that a replace cannot take a job out from under its limit; and its place
 * in a batch ($3, the batch the old job left: REP_LEAVE). */
#define PG_SQL_REP_CARRY                                                     \
  "UPDATE pawl_jobs AS n SET resource = coalesce(n.resource, o.resource), "  \
  "batch_id = $3::uuid FROM pawl_jobs AS o WHERE o.id = $1::uuid AND "       \
  "n.id = $2::uuid"
/* Job instances: see SQLITE_REP_INSTANCE. */
#define PG_SQL_REP_INSTANCE                                                  \
  "UPDATE pawl_instances SET job_id = $2::uuid WHERE job_id = $1::uuid"
/* Batches: the batch of child $1 (no row: none); the child
 * leaves it (its replacement takes its place). */
#define PG_SQL_REP_BATCH                                                     \
  "SELECT batch_id FROM pawl_jobs WHERE id = $1::uuid AND batch_id IS NOT "  \
  "NULL"
#define PG_SQL_REP_LEAVE                                                     \
  "UPDATE pawl_jobs SET batch_id = NULL WHERE id = $1::uuid"
#define PG_SQL_REP_NEXT                                                      \
  "SELECT new_id FROM pawl_replacements WHERE old_id = $1::uuid"
#define PG_SQL_REP_PREV                                                      \
  "SELECT old_id FROM pawl_replacements WHERE new_id = $1::uuid"

#endif
