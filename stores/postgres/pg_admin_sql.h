/* pg_admin_sql.h: the SQL of the PostgreSQL store's administration
 * statements (bulk actions, statistics, locks), in one place so that the
 * plan tests (spec/unit/test_store_postgres.c) check exactly these. */
#ifndef PAWL_PG_ADMIN_SQL_H
#define PAWL_PG_ADMIN_SQL_H

/* What a bulk action, a count and a filtered listing match: $1 a bit per
 * state (1 << state), $2 queue, $3 type, $4 tag, $5 the cutoff of
 * older_than in ms (each NULL: any). */
#define PG_ADM_MATCH                                                         \
  "(($1::int >> j.state) & 1) = 1 AND ($2::text IS NULL OR j.queue = "       \
  "$2::text) AND ($3::text IS NULL OR j.type = $3::text) AND ($4::text IS "  \
  "NULL OR j.tags ? $4::text) AND ($5::bigint IS NULL OR "                   \
  "coalesce(j.finished_at, j.created_at) < pawl_ts($5::bigint))"

/* Counting at most $6; failed jobs alone through their own index. */
#define PG_ADM_COUNT                                                         \
  "SELECT count(*) FROM (SELECT 1 FROM pawl_jobs AS j WHERE " PG_ADM_MATCH  \
  " LIMIT $6::bigint) AS t"
#define PG_ADM_COUNT_FAILED                                                  \
  "SELECT count(*) FROM (SELECT 1 FROM pawl_jobs AS j WHERE j.state = 3 "    \
  "AND " PG_ADM_MATCH " LIMIT $6::bigint) AS t"

/* The next batch of a bulk action, in id order after $6 ($7 of them). */
#define PG_ADM_PICK                                                          \
  "SELECT j.id, j.version FROM pawl_jobs AS j WHERE j.id > $6::uuid AND "    \
  PG_ADM_MATCH " ORDER BY j.id LIMIT $7::int"
#define PG_ADM_PICK_FAILED                                                   \
  "SELECT j.id, j.version FROM pawl_jobs AS j WHERE j.state = 3 AND "        \
  "j.id > $6::uuid AND " PG_ADM_MATCH " ORDER BY j.id LIMIT $7::int"

/* pawl_list() with a tag or older_than: $1 state (NULL: any), $2 queue,
 * $3 type, $4 tag, $5 cutoff (ms), $6 limit; newest first. */
#define PG_ADM_LIST                                                          \
  "SELECT " PG_JOB_COLS " FROM pawl_jobs AS j WHERE ($1::smallint IS NULL "  \
  "OR j.state = $1::smallint) AND ($2::text IS NULL OR j.queue = $2::text) " \
  "AND ($3::text IS NULL OR j.type = $3::text) AND ($4::text IS NULL OR "    \
  "j.tags ? $4::text) AND ($5::bigint IS NULL OR coalesce(j.finished_at, "   \
  "j.created_at) < pawl_ts($5::bigint)) ORDER BY j.id DESC LIMIT $6::int"

/* Statistics: pending per queue with the earliest due run_at ($1 now, ms),
 * running per queue, the rest per state and queue in one pass over the
 * table (exact; no index of finished rows, so that a finish costs no index
 * entry), and the throughput from the minute buckets (V003) from minute
 * $1 (15 minutes ago), $2 (5) and $3 (1), every writer's rows added up. */
#define PG_ADM_STATS_PENDING                                                 \
  "SELECT queue, count(*), pawl_ms(min(run_at) FILTER (WHERE run_at <= "     \
  "pawl_ts($1::bigint))) FROM pawl_jobs WHERE state = 0 GROUP BY queue"
#define PG_ADM_STATS_RUNNING                                                 \
  "SELECT queue, count(*) FROM pawl_jobs WHERE state = 1 GROUP BY queue"
#define PG_ADM_STATS_DONE                                                    \
  "SELECT state, queue, count(*) FROM pawl_jobs WHERE state >= 2 "           \
  "GROUP BY state, queue"
#define PG_ADM_STATS_TP                                                      \
  "SELECT state, queue, sum(count), coalesce(sum(count) FILTER (WHERE "      \
  "minute >= $2::bigint), 0), coalesce(sum(count) FILTER (WHERE minute >= "  \
  "$3::bigint), 0) FROM pawl_throughput WHERE minute >= $1::bigint GROUP "   \
  "BY state, queue"
/* The metrics' gauges: the finishes since minute $1. */
#define PG_MET_TP                                                            \
  "SELECT state, queue, sum(count) FROM pawl_throughput WHERE minute >= "    \
  "$1::bigint GROUP BY state, queue"

/* The jobs each node runs: the ones whose body started (a job claimed
 * ahead of a free worker has no started_at yet: it is not running). */
#define PG_ADM_RUNNING                                                       \
  "SELECT lease_owner, count(started_at) FROM pawl_jobs WHERE state = 1 "    \
  "GROUP BY lease_owner"
#define PG_ADM_LOCKS                                                         \
  "SELECT name, owner, pawl_ms(acquired_at), pawl_ms(expires_at) FROM "      \
  "pawl_locks ORDER BY name"

#endif
