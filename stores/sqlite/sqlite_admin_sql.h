/* sqlite_admin_sql.h: the SQL of the SQLite store's administration
 * statements (bulk actions, statistics, locks), in one place so that the
 * plan tests (spec/unit/test_store_sqlite.c) check exactly these. */
#ifndef PAWL_SQLITE_ADMIN_SQL_H
#define PAWL_SQLITE_ADMIN_SQL_H

/* What a bulk action, a count and a filtered listing match: ?1 a bit per
 * state (1 << state), ?2 queue, ?3 type, ?4 tag, ?5 the cutoff of
 * older_than (each NULL: any). */
#define SQLITE_ADM_MATCH                                                     \
  "((?1 >> state) & 1) = 1 AND (?2 IS NULL OR queue = ?2) AND "              \
  "(?3 IS NULL OR type = ?3) AND (?4 IS NULL OR EXISTS (SELECT 1 FROM "      \
  "json_each(pawl_jobs.tags) WHERE value = ?4)) AND (?5 IS NULL OR "         \
  "coalesce(finished_at, created_at) < ?5)"

/* Counting at most ?6. The dead-letter set has its own index: a count or
 * a walk of failed jobs only reads it (state = 3 written out, as SQLite
 * uses a partial index only for a query repeating its term). */
#define SQLITE_ADM_COUNT                                                     \
  "SELECT count(*) FROM (SELECT 1 FROM pawl_jobs WHERE " SQLITE_ADM_MATCH   \
  " LIMIT ?6)"
#define SQLITE_ADM_COUNT_FAILED                                              \
  "SELECT count(*) FROM (SELECT 1 FROM pawl_jobs WHERE state = 3 AND "       \
  SQLITE_ADM_MATCH " LIMIT ?6)"

/* The next batch of a bulk action: ?6 where the walk is, ?7 how many.
 * In rowid order (a walk of the table once, however many batches), or for
 * failed jobs in id order through their index. */
#define SQLITE_ADM_PICK                                                      \
  "SELECT seq, id, version FROM pawl_jobs WHERE seq > ?6 AND "               \
  SQLITE_ADM_MATCH " ORDER BY seq LIMIT ?7"
#define SQLITE_ADM_PICK_FAILED                                               \
  "SELECT seq, id, version FROM pawl_jobs WHERE state = 3 AND id > ?6 AND "  \
  SQLITE_ADM_MATCH " ORDER BY id LIMIT ?7"

/* pawl_list() with a tag or older_than: ?1 state (NULL: any), ?2 queue,
 * ?3 type, ?4 tag, ?5 cutoff, ?6 limit; newest first like SQ_LIST. */
#define SQLITE_ADM_LIST                                                      \
  "SELECT " SQLITE_JOB_COLS " FROM pawl_jobs WHERE (?1 IS NULL OR "          \
  "state = ?1) AND (?2 IS NULL OR queue = ?2) AND (?3 IS NULL OR type = ?3) "\
  "AND (?4 IS NULL OR EXISTS (SELECT 1 FROM json_each(pawl_jobs.tags) "      \
  "WHERE value = ?4)) AND (?5 IS NULL OR coalesce(finished_at, created_at) " \
  "< ?5) ORDER BY id DESC LIMIT ?6"

/* Statistics. Pending: per queue, with the earliest due run_at (?1 now),
 * from the pending rows' queue index alone. Running: per queue, through
 * the running rows' index. The rest: one pass over the table, tallied in C
 * (pawl__sq_adm_tally()): without an index of finished rows (a finish would pay
 * for its entry) this is the cheapest exact count; a GROUP BY here would
 * sort every row and cost three times as much (bench/RESULTS.md). */
#define SQLITE_ADM_STATS_PENDING                                             \
  "SELECT queue, count(*), min(CASE WHEN run_at <= ?1 THEN run_at END) "     \
  "FROM pawl_jobs WHERE state = 0 GROUP BY queue"
#define SQLITE_ADM_STATS_RUNNING                                             \
  "SELECT queue, count(*) FROM pawl_jobs WHERE state = 1 GROUP BY queue"
#define SQLITE_ADM_STATS_DONE                                                \
  "SELECT state, queue FROM pawl_jobs WHERE state >= 2"
/* Throughput from the minute buckets (V004): ?1 the first minute of the 15
 * minute window, ?2 of the 5, ?3 of the 1. */
#define SQLITE_ADM_STATS_TP                                                  \
  "SELECT state, queue, sum(count), sum(CASE WHEN minute >= ?2 THEN count "  \
  "ELSE 0 END), sum(CASE WHEN minute >= ?3 THEN count ELSE 0 END) FROM "     \
  "pawl_throughput WHERE minute >= ?1 GROUP BY state, queue"
/* The metrics' gauges: the finishes since minute ?1. */
#define SQLITE_MET_TP                                                        \
  "SELECT state, queue, sum(count) FROM pawl_throughput WHERE minute >= ?1 " \
  "GROUP BY state, queue"

/* Running jobs per node, through the running rows' index. */
/* The jobs each node runs: the ones whose body started (a job claimed
 * ahead of a free worker has no started_at yet: it is not running). */
#define SQLITE_ADM_RUNNING                                                   \
  "SELECT lease_owner, count(started_at) FROM pawl_jobs WHERE state = 1 "    \
  "GROUP BY lease_owner"
#define SQLITE_ADM_LOCKS                                                     \
  "SELECT name, owner, acquired_at, expires_at FROM pawl_locks ORDER BY name"

#endif
