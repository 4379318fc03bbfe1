/* pg_sql.h: the SQL text of the PostgreSQL store's hot path.
 *
 * Kept in one place so that the benchmark's plain-SQL ceiling runs exactly
 * the statements the store runs (bench/pg_bench.c includes this file).
 *
 * Every statement takes "now" as a parameter that is NULL in production:
 * pawl_now(NULL) is the database clock (see schema/postgres/V001__init.sql),
 * and tests bind their injected clock instead. Times cross the wire as
 * milliseconds since the epoch (pawl_ms(), pawl_ts()). */
#ifndef PAWL_PG_SQL_H
#define PAWL_PG_SQL_H

/* Columns read into a pawl_job_t, in pawl__pg_row_to_job()'s order; rank
 * (to put a claimed batch in claim order) comes last. `j` is pawl_jobs. */
#define PG_JOB_COLS                                                          \
  "j.id, j.type, j.queue, j.state, j.paused_from, j.priority, j.payload, "   \
  "j.params, j.tags, pawl_ms(j.run_at), j.attempt, j.max_attempts, "         \
  "j.timeout_s, j.idempotency_key, j.business_key, j.correlation_id, "       \
  "j.enqueued_by, pawl_ms(j.created_at), pawl_ms(j.updated_at), "            \
  "pawl_ms(j.started_at), pawl_ms(j.finished_at), j.lease_owner, "           \
  "pawl_ms(j.lease_expires), j.last_error, j.result, j.recoveries, "         \
  "j.progress_done, j.progress_total, j.version, j.ordering_key, j.depth, " \
  "j.rank"
#define PG_JOB_RANK_COL 31

/* Queues: the jobs of a paused queue are neither claimed nor
 * waited for (next_due). ARRAY(subquery) does not depend on the row: it is
 * an InitPlan, run once per statement in the statement's snapshot (empty
 * unless a queue is paused), and the claim's index walk filters each row
 * against it. A pause that has committed is seen by every claim that
 * starts after it. */
#define PG_SQL_UNPAUSED                                                      \
  "queue <> ALL (ARRAY(SELECT name FROM pawl_queues WHERE paused)) AND "

/* The age boost a job of the row's queue ranks with:
 * the queue's own (pawl_queues.age_boost_ms), else `dflt` (the database's,
 * bound by the caller); pawl_queue_boost() is in schema V005. */
#define PG_SQL_QUEUE_BOOST(dflt) "pawl_queue_boost(j.queue, " dflt ")"

/* One job: $1 id, $2 type, $3 queue, $4 state, $5 priority, $6 payload,
 * $7 params, $8 tags, $9 run_at (NULL: now), $10 max_attempts,
 * $11 timeout_s, $12 idempotency key, $13 business key, $14 correlation id,
 * $15 enqueued_by, $16 now, $17 age boost, $18 ordering key (then the
 * next ordering_seq: V006__ordering.sql), $19 resource (limits;
 * NULL for none), $20 depth (the generation of jobs enqueued by jobs).
 * A live business key held by
 * another job is the only conflict possible (ids are fresh UUIDv7s): then
 * nothing is inserted and no row returned. */
#define PG_SQL_INSERT                                                        \
  "INSERT INTO pawl_jobs AS j (id, type, queue, state, priority, rank, "     \
  "payload, params, tags, run_at, max_attempts, timeout_s, "                 \
  "idempotency_key, business_key, correlation_id, enqueued_by, created_at, " \
  "updated_at, ordering_key, ordering_seq, resource, depth, ordering_held) " \
  "SELECT "                                                                  \
  "$1::uuid, "                                                               \
  "$2::text, $3::text, $4::smallint, "                                       \
  "$5::int, pawl_rank($5::int, t.run_at, pawl_queue_boost($3::text, "       \
  "$17::bigint)), $6::jsonb, "                                                \
  "$7::jsonb, $8::jsonb, t.run_at, $10::int, $11::int, $12::text, "          \
  "$13::text, $14::text, $15::text, t.now, t.now, $18::text, CASE WHEN "     \
  "$18::text IS NULL THEN NULL ELSE nextval('pawl_ordering_seq') END, "      \
  "$19::text, $20::int, $18::text IS NOT NULL FROM (SELECT "                \
  "pawl_now($16::bigint) AS now, coalesce(pawl_ts($9::bigint), "             \
  "pawl_now($16::bigint)) AS run_at) AS t ON CONFLICT DO NOTHING "           \
  "RETURNING j.id"

/* Many jobs at once: COPY in binary format (cp_job() writes the rows in
 * this column order). Only jobs that cannot conflict: no business key, and
 * an idempotency key only when the caller recorded it first (the recurring
 * tick). The statement trigger's NOTIFY fires for a COPY as for an INSERT. */
#define PG_SQL_COPY_COLS                                                     \
  "COPY pawl_jobs (id, type, queue, state, priority, rank, payload, "        \
  "params, tags, run_at, max_attempts, timeout_s, idempotency_key, "         \
  "correlation_id, enqueued_by, created_at, updated_at, resource, depth"
#define PG_SQL_COPY_JOBS PG_SQL_COPY_COLS ") FROM STDIN (FORMAT binary)"
/* A batch's children: the same and their batch. */
#define PG_SQL_COPY_BATCH_JOBS                                               \
  PG_SQL_COPY_COLS ", batch_id) FROM STDIN (FORMAT binary)"

/* Pending rows that no hold of their own keeps back (V017__claim_holds.sql):
 * not behind their ordering key, not held until a later run_at. The claim's
 * indexes (pawl_jobs_ready, pawl_jobs_ready_queue) hold exactly these rows,
 * so the rows waiting behind a key or for tomorrow are never walked. */
#define PG_SQL_READY "state = 0 AND NOT ordering_held AND NOT time_held AND "

/* The claim's first step (V017): rows held by time that are due now lose
 * their hold, and the ordering keys changed since the last claim get their
 * flags put right; $1 now, $2 how many of each at most. A statement of its
 * own, committed before the claim, so that the claim sees what it did. */
#define PG_SQL_CLAIM_PREPARE                                                 \
  "SELECT pawl_claim_prepare(pawl_now($1::bigint), $2::int)"

/* The claim's planner settings, for the claim's transaction only
 * (set_config(..., true) is SET LOCAL): the store sends this just before
 * PG_SQL_CLAIM or PG_SQL_CLAIM_QUEUE, in the same transaction. The only
 * good plan of those claims walks the claim's index in claim order and
 * stops at the limit. When the statistics say few pending rows (a table
 * full of finished jobs, analyzed before a burst of enqueues; a table
 * never analyzed) the planner estimates one row and prefers reading
 * every pending row by another way (a bitmap scan by run_at, a sequential
 * scan) and sorting them: a claim of ten jobs then read and sorted all
 * 110,000 pending rows, 10-100 ms each, and a node ran at a quarter of its
 * speed while waiting. Without a sort, the walk in index order is the
 * only way left that gives the claim order. */
#define PG_SQL_CLAIM_PLAN                                                    \
  "SELECT set_config('enable_sort', 'off', true), "                          \
  "set_config('enable_incremental_sort', 'off', true)"

/* The planner settings of the transactions that find their rows by id
 * (a finish, the record of a start), for the transaction only, sent as
 * its first statement. The only good plan of those statements looks each
 * row up by its key. But their prepared statements keep the generic plan
 * made at their sixth call, and on a young table (a new schema, not yet
 * analyzed) that plan was made when the table had a few rows: a
 * sequential scan, joined with the ids by a nested loop, kept until the
 * first analyze. With a success of a batch reading every row for each
 * id, a fresh node slowed from 23,000 jobs a second to under 4,000, and
 * the finishes grew to seconds each (bench/RESULTS.md). Without
 * sequential scans and hash or merge joins, the lookups by key are the
 * only way left, whatever the table's size when the plan was made. */
#define PG_SQL_BY_ID_PLAN                                                    \
  "SELECT set_config('enable_seqscan', 'off', true), "                       \
  "set_config('enable_hashjoin', 'off', true), "                             \
  "set_config('enable_mergejoin', 'off', true)"

/* Per-key ordering: a pending job with an ordering key is
 * claimable only when pawl_ordering_free() says so (the claim asks only for
 * the rows ordering_held leaves, the head of each key); see
 * schema/postgres/V006__ordering.sql for the rule and for why it holds with
 * several nodes claiming at once (an advisory lock per key, and a snapshot
 * taken after it). CASE, not OR: jobs without a key (nearly all) never
 * call the function, whatever order the planner puts the tests in. */
#define PG_SQL_ORDERING_FREE                                                 \
  "CASE WHEN ordering_key IS NULL THEN true ELSE pawl_ordering_free("        \
  "ordering_key, ordering_seq, pawl_now($1::bigint)) END"

/* Claim in one statement: $1 now, $2 owner, $3 lease token, $4 lease ms,
 * $5 limit, $6 the queue (or an array of queues), and last how many of
 * the rows start now (the ahead parameter, `ahead`). The inner SELECT
 * walks the partial index of pending rows in claim order and skips rows
 * another node is claiming right now (SKIP LOCKED), so nodes never wait
 * for each other and never take the same job. Progress belongs to an
 * attempt, so a new attempt starts without any. `started` is the
 * started_at the rows get. */
#define PG_SQL_CLAIM_SET(started)                                            \
  "UPDATE pawl_jobs AS j SET state = 1, attempt = j.attempt + 1, "           \
  "started_at = " started ", lease_owner = $2::text, "                       \
  "lease_token = $3::uuid, lease_expires = pawl_now($1::bigint) + "          \
  "$4::float8 * interval '1 millisecond', updated_at = pawl_now($1::bigint), "\
  "progress_done = NULL, progress_total = NULL, version = j.version + 1 "
/* The rows past the first `ahead` in claim order (c.rn, their place) are
 * claimed ahead of a free worker (store_claim_t.ahead_from): not started,
 * so not running, until their start is recorded. Set by the claim itself:
 * marking them by a second UPDATE wrote most rows of a busy node's claims
 * twice, a quarter of the server's time per job (bench/RESULTS.md). NULL
 * `ahead`: every row starts now. */
#define PG_SQL_CLAIM_STARTED(ahead)                                          \
  "CASE WHEN c.rn > " ahead "::int THEN NULL ELSE pawl_now($1::bigint) END"
/* The picked rows, numbered in claim order (rn). FOR UPDATE may not go
 * with a window function in one SELECT, hence the two levels. The
 * numbering sorts the picked rows again (at most the claim's limit, in
 * memory); the walk that picks them is the claim's as before. */
#define PG_SQL_CLAIM_PICK                                                    \
  "FROM (SELECT id, row_number() OVER (ORDER BY rank DESC, run_at, id) AS "  \
  "rn FROM (SELECT id, rank, run_at FROM pawl_jobs WHERE "
#define PG_SQL_CLAIM_HEAD(ahead)                                             \
  PG_SQL_CLAIM_SET(PG_SQL_CLAIM_STARTED(ahead))                              \
  PG_SQL_CLAIM_PICK PG_SQL_READY PG_SQL_UNPAUSED
#define PG_SQL_CLAIM_TAIL                                                    \
  "run_at <= pawl_now($1::bigint) AND " PG_SQL_ORDERING_FREE                 \
  " ORDER BY rank DESC, run_at, id "                                         \
  "LIMIT $5::int FOR UPDATE SKIP LOCKED) AS p) AS c WHERE j.id = c.id "      \
  "RETURNING " PG_JOB_COLS

/* Limits (stores/store.h, "limits"): the one-statement claim
 * takes nothing on a database with limits (an InitPlan, evaluated once per
 * claim); pawl__pg_claim() then claims with the limits' statements below. */
#define PG_SQL_CLAIM_NO_LIMITS "NOT EXISTS (SELECT 1 FROM pawl_limits) AND "

#define PG_SQL_CLAIM                                                         \
  PG_SQL_CLAIM_HEAD("$6") PG_SQL_CLAIM_NO_LIMITS PG_SQL_CLAIM_TAIL

/* The claims from a floor (stores/postgres/claim.c, "floors"; V020): as
 * PG_SQL_CLAIM and PG_SQL_CLAIM_QUEUE, reading only the rows ranked at or
 * below the floor ($6 for every queue; $7 for one queue, $6). rank leads
 * the claim's indexes (pawl_jobs_ready, and pawl_jobs_ready_queue after
 * the queue), so the walk starts at the floor and never passes the
 * entries of the rows taken before it, which a pinned horizon keeps. */
#define PG_SQL_CLAIM_FLOOR                                                   \
  PG_SQL_CLAIM_HEAD("$7") PG_SQL_CLAIM_NO_LIMITS "rank <= $6::bigint AND "   \
  PG_SQL_CLAIM_TAIL
#define PG_SQL_CLAIM_FLOOR_QUEUE                                             \
  PG_SQL_CLAIM_HEAD("$8") PG_SQL_CLAIM_NO_LIMITS "queue = $6::text AND "     \
  "rank <= $7::bigint AND " PG_SQL_CLAIM_TAIL
#define PG_SQL_CLAIM_QUEUE                                                   \
  PG_SQL_CLAIM_HEAD("$7") PG_SQL_CLAIM_NO_LIMITS "queue = $6::text AND "     \
  PG_SQL_CLAIM_TAIL
#define PG_SQL_CLAIM_QUEUES                                                  \
  PG_SQL_CLAIM_HEAD("$7") PG_SQL_CLAIM_NO_LIMITS "queue = ANY($6::text[]) "  \
  "AND " PG_SQL_CLAIM_TAIL

/* Lanes (V017): the rows of a paused queue, and of a resource or a queue
 * limit with nothing left, wait without a change to any row, so no flag
 * keeps them out of the claim's index. When some lane is closed the claim
 * does not walk that index in claim order (it would pass every row of the
 * closed lanes): it lists the lanes, a lane being a queue and a resource
 * ('' for none), by skipping through pawl_jobs_ready_lane (one probe per
 * lane), takes the first `lim` rows of each open lane in claim order
 * (rows whose key has a job running are left: the claim below would not
 * take them, and they must not crowd out the rows it would; a scalar
 * subquery, one probe of the key's running rows per keyed row, where an
 * EXISTS may be planned as a hash of every running row), and keeps
 * the first `lim` of those. The closed lanes' rows are never read: the
 * cost is the number of lanes, not of jobs. `closed` is a condition on
 * lane.q and lane.r; `lim` the claim's limit. */
#define PG_SQL_LANE_KEY "queue, coalesce(resource, '')"
/* The lane probes order by the whole of pawl_jobs_ready_lane's key, which
 * only that index gives: pawl_jobs_due_lane also starts with the lane but
 * holds the rows held by time, which a probe through it would walk. */
#define PG_SQL_LANE_ORDER PG_SQL_LANE_KEY ", rank DESC, run_at, id"
#define PG_SQL_LANE_IDS(lim, closed)                                         \
  "ARRAY(WITH RECURSIVE lane(q, r) AS ((SELECT " PG_SQL_LANE_KEY " FROM "    \
  "pawl_jobs WHERE " PG_SQL_READY "true ORDER BY " PG_SQL_LANE_ORDER        \
  " LIMIT 1) UNION ALL SELECT n.q, n.r FROM lane, LATERAL (SELECT "          \
  PG_SQL_LANE_KEY " FROM pawl_jobs WHERE " PG_SQL_READY "("                  \
  PG_SQL_LANE_KEY ") > (lane.q, lane.r) ORDER BY " PG_SQL_LANE_ORDER        \
  " LIMIT 1) AS n(q, r)) SELECT c.id FROM lane, LATERAL (SELECT x.id, "      \
  "x.rank, x.run_at FROM pawl_jobs AS x WHERE x.state = 0 AND NOT "          \
  "x.ordering_held AND NOT x.time_held AND x.queue = lane.q AND "            \
  "coalesce(x.resource, '') = lane.r AND x.run_at <= pawl_now($1::bigint) " \
  "AND (x.ordering_key IS NULL OR (SELECT count(*) FROM (SELECT 1 FROM "    \
  "pawl_jobs AS o WHERE o.ordering_key = x.ordering_key AND o.state = 1 "   \
  "LIMIT 1) AS o) = 0) ORDER BY "                                            \
  "x.rank DESC, x.run_at, x.id LIMIT " lim ") AS c WHERE lane.q <> ALL ("    \
  "ARRAY(SELECT name FROM pawl_queues WHERE paused)) AND " closed            \
  " ORDER BY c.rank DESC, c.run_at, c.id LIMIT " lim ")"

/* The one-statement claim by lanes, while a queue is paused: parameters
 * as PG_SQL_CLAIM's. The picked rows are locked and tested (due, free by
 * their key) as the plain claim does; a row another node took meanwhile
 * is skipped, and the claim comes back short. */
#define PG_SQL_CLAIM_LANES_OF(closed, ahead)                                 \
  PG_SQL_CLAIM_SET(PG_SQL_CLAIM_STARTED(ahead)) PG_SQL_CLAIM_PICK            \
  PG_SQL_CLAIM_NO_LIMITS "id = ANY(" PG_SQL_LANE_IDS("$5::int", closed)     \
  ") AND " PG_SQL_READY PG_SQL_CLAIM_TAIL
#define PG_SQL_CLAIM_LANES PG_SQL_CLAIM_LANES_OF("true", "$6")
#define PG_SQL_CLAIM_LANES_QUEUE                                             \
  PG_SQL_CLAIM_LANES_OF("lane.q = $6::text", "$7")
#define PG_SQL_CLAIM_LANES_QUEUES                                            \
  PG_SQL_CLAIM_LANES_OF("lane.q = ANY($6::text[])", "$7")

/* The claim on a database with limits picks the due jobs outside the
 * limits with nothing left ($2 resources, $3 queues), locking them, in
 * claim order: $1 now, $4 limit, $5 the queue (or an array of queues);
 * then takes the ones admitted ($6 their ids, $5 how many) with the
 * claim's own update. The pick leaves paused queues alone and keeps
 * per-key ordering as the one-statement claim does (queues,
 * ordering; the key's advisory lock is held to the commit); the take does
 * not test them again: the picked rows are locked and the transaction
 * holds the keys' locks, and a row the take missed would be an error. */
#define PG_SQL_CLAIM_LIM_PICK_HEAD                                           \
  "SELECT id, queue, resource FROM pawl_jobs WHERE " PG_SQL_READY             \
  PG_SQL_UNPAUSED "(resource IS NULL OR resource <> ALL($2::text[])) AND "   \
  "queue <> ALL($3::text[]) AND "
#define PG_SQL_CLAIM_LIM_PICK_TAIL                                           \
  "run_at <= pawl_now($1::bigint) AND " PG_SQL_ORDERING_FREE                 \
  " ORDER BY rank DESC, run_at, id LIMIT $4::int FOR UPDATE SKIP LOCKED"
#define PG_SQL_CLAIM_LIM_PICK                                                \
  PG_SQL_CLAIM_LIM_PICK_HEAD PG_SQL_CLAIM_LIM_PICK_TAIL
#define PG_SQL_CLAIM_LIM_PICK_QUEUE                                          \
  PG_SQL_CLAIM_LIM_PICK_HEAD "queue = $5::text AND " PG_SQL_CLAIM_LIM_PICK_TAIL
#define PG_SQL_CLAIM_LIM_PICK_QUEUES                                         \
  PG_SQL_CLAIM_LIM_PICK_HEAD "queue = ANY($5::text[]) AND "                  \
  PG_SQL_CLAIM_LIM_PICK_TAIL
/* The same pick by lanes (PG_SQL_LANE_IDS), when a queue is paused or a
 * limit has nothing left. */
#define PG_SQL_CLAIM_LIM_LANES_OF(closed)                                    \
  "SELECT id, queue, resource FROM pawl_jobs WHERE id = ANY("                \
  PG_SQL_LANE_IDS("$4::int", "lane.r <> ALL($2::text[]) AND lane.q <> "      \
                  "ALL($3::text[]) AND " closed) ") AND " PG_SQL_READY       \
  PG_SQL_CLAIM_LIM_PICK_TAIL
#define PG_SQL_CLAIM_LIM_LANES PG_SQL_CLAIM_LIM_LANES_OF("true")
#define PG_SQL_CLAIM_LIM_LANES_QUEUE                                         \
  PG_SQL_CLAIM_LIM_LANES_OF("lane.q = $5::text")
#define PG_SQL_CLAIM_LIM_LANES_QUEUES                                        \
  PG_SQL_CLAIM_LIM_LANES_OF("lane.q = ANY($5::text[])")
#define PG_SQL_CLAIM_LIM_TAKE                                                \
  PG_SQL_CLAIM_SET("pawl_now($1::bigint)")                                   \
  "FROM (SELECT id FROM pawl_jobs WHERE state = 0 AND "                      \
  "id = ANY($6::uuid[]) LIMIT $5::int) AS c WHERE j.id = c.id "              \
  "RETURNING " PG_JOB_COLS

/* Statements that find a running job by id test its state as
 * PG_RUNNING_BY_ID: "state + 0" is not the partial indexes' "state = 1",
 * so the planner cannot take a running-rows index (small by its statistics,
 * scanned whole for each id) over the primary key. */
#define PG_RUNNING_BY_ID "(j.state + 0) = 1"

/* Throughput (stores/store.h, "Throughput"): the minute bucket of "now"
 * ($1 the injected clock or NULL), and the UPSERT into a bucket of this
 * connection's own (writer: its default, pg_backend_pid()). */
#define PG_SQL_TP_MINUTE "(pawl_ms(pawl_now($1::bigint)) / 60000)"
#define PG_SQL_TP_UPSERT                                                     \
  " ON CONFLICT (minute, state, queue, writer) DO UPDATE SET count = "       \
  "pawl_throughput.count + excluded.count"

/* Batches (schema/postgres/V009__batch.sql): the children among
 * the rows `done` wrote, added to their batches' counters (one UPDATE per
 * batch; its trigger fires the callbacks when the count completes). The
 * batch rows are locked first, in id order (bl), so that two finishes
 * ending children of the same batches never wait for each other in a
 * circle. For jobs without a batch (nearly all) bl and bt find nothing. */
#define PG_SQL_BATCH_SUCCEEDED                                               \
  "bl AS MATERIALIZED (SELECT id FROM pawl_batches WHERE id IN (SELECT "     \
  "batch_id FROM done) ORDER BY id FOR UPDATE), "                            \
  "bt AS (UPDATE pawl_batches AS bb SET succeeded = bb.succeeded + d.n, "    \
  "updated_at = pawl_now($1::bigint) FROM (SELECT batch_id, count(*) AS n "  \
  "FROM done WHERE batch_id IS NOT NULL GROUP BY batch_id) AS d WHERE "      \
  "bb.id = d.batch_id AND bb.id IN (SELECT id FROM bl)) "

/* Success of a whole batch in one statement, its history on the row:
 * $1 now, $2 ids, $3 attempts, $4 results (NULL for none), $5 lease token,
 * $6 and $7 the bodies' starts and ends (NULL: not measured), which are
 * the attempts' run times (started_at to finished_at).
 * The rows written are counted into their throughput buckets (one row per
 * queue of the batch), and children into their batches, by the same
 * statement. The result names the rows
 * written; an outcome whose row is missing is stale (canceled, or
 * recovered by another node). */
/* The run time of the attempt ending, as its worker measured it (`start`
 * and `end`, ms since the epoch; NULL: not measured), kept within the
 * claim (the row's started_at) and the finish (`now`). */
#define PG_SQL_RUN_START(start, now)                                         \
  "CASE WHEN " start " IS NULL THEN j.started_at ELSE greatest(j.started_at, "\
  "least(pawl_ts(" start "), " now ")) END"
#define PG_SQL_RUN_END(start, end, now)                                      \
  "CASE WHEN " end " IS NULL THEN " now " ELSE greatest(least(pawl_ts("      \
  end "), " now "), " PG_SQL_RUN_START(start, now) ") END"
#define PG_SQL_SUCCEED_MANY                                                  \
  "WITH done AS (UPDATE pawl_jobs AS j SET state = 2, result = b.result, "   \
  "last_error = NULL, "                                                      \
  "started_at = " PG_SQL_RUN_START("b.rs", "pawl_now($1::bigint)") ", "      \
  "finished_at = " PG_SQL_RUN_END("b.rs", "b.re", "pawl_now($1::bigint)")   \
  ", updated_at = pawl_now($1::bigint), "                                    \
  "lease_expires = NULL, version = j.version + 1 FROM unnest($2::uuid[], "   \
  "$3::int[], $4::jsonb[], $6::bigint[], $7::bigint[]) AS b(id, attempt, "   \
  "result, rs, re) WHERE j.id = b.id AND "                                   \
  PG_RUNNING_BY_ID " AND j.lease_token = $5::uuid AND "                      \
  "j.attempt = b.attempt "                                                   \
  "RETURNING j.id, j.queue, j.batch_id), "                                   \
  "tp AS (INSERT INTO pawl_throughput (minute, state, queue, count) "        \
  "SELECT " PG_SQL_TP_MINUTE ", 2, queue, count(*) FROM done GROUP BY "      \
  "queue" PG_SQL_TP_UPSERT "), "                                             \
  PG_SQL_BATCH_SUCCEEDED                                                     \
  "SELECT id FROM done"

/* The earliest run_at among pending jobs a claim could take, for a poller
 * with nothing due: all queues, one ($1), or an array of them ($1). A job
 * waiting behind its ordering key is not due (V017: ordering_held), so a
 * node whose only pending jobs wait behind a blocked or paused job of
 * their key is idle. Keys changed since the last claim (pawl_key_dirty)
 * may have freed a job: then "now" (1), and the claim settles them. Read
 * by lanes (see PG_SQL_LANE_IDS) from pawl_jobs_due_lane: the first row of
 * each open lane, so that neither a paused queue's jobs nor those of a
 * limit with nothing left are walked; `open` is a condition on lane.q and
 * lane.r. Never the finished history. */
#define PG_SQL_DUE_ROWS                                                      \
  "pawl_jobs WHERE state = 0 AND NOT ordering_held AND run_at > "          \
  "'-infinity' "
#define PG_SQL_NEXT_DUE_OF(open)                                             \
  "SELECT CASE WHEN EXISTS (SELECT 1 FROM pawl_key_dirty) THEN 1 ELSE "     \
  "(WITH RECURSIVE lane(q, r) AS ((SELECT " PG_SQL_LANE_KEY " FROM "         \
  PG_SQL_DUE_ROWS "ORDER BY " PG_SQL_LANE_KEY " LIMIT 1) UNION ALL SELECT "  \
  "n.q, n.r FROM lane, LATERAL (SELECT " PG_SQL_LANE_KEY " FROM "            \
  PG_SQL_DUE_ROWS "AND (" PG_SQL_LANE_KEY ") > (lane.q, lane.r) ORDER BY "   \
  PG_SQL_LANE_KEY " LIMIT 1) AS n(q, r)) SELECT pawl_ms(min(m.run_at)) "     \
  "FROM lane, LATERAL (SELECT run_at FROM " PG_SQL_DUE_ROWS "AND queue = "   \
  "lane.q AND coalesce(resource, '') = lane.r ORDER BY run_at LIMIT 1) AS " \
  "m WHERE lane.q <> ALL (ARRAY(SELECT name FROM pawl_queues WHERE "         \
  "paused)) AND " open ") END"
#define PG_SQL_NEXT_DUE PG_SQL_NEXT_DUE_OF("true")

/* next_due for claims from a floor ($1; all queues, or one, $2), while no
 * queue is paused: the earliest of the first row held by time (through
 * pawl_jobs_time_held, in run_at order) and the first claimable row at or
 * below the floor, in claim order. Both probes start where no row taken
 * since a pinned horizon began lies: the rows a claim took are above the
 * floor, and a promoted row leaves the time-held index. A claimable row
 * due now that the claim left (its key is busy) makes "now": the poller
 * then waits for news or its poll interval, as PG_SQL_NEXT_DUE's caller
 * does. Keys changed since the last claim: "now" (1). */
#define PG_SQL_NEXT_DUE_FLOOR_OF(q)                                          \
  "SELECT CASE WHEN EXISTS (SELECT 1 FROM pawl_key_dirty) THEN 1 ELSE "     \
  "(SELECT pawl_ms(min(m.run_at)) FROM ((SELECT run_at FROM pawl_jobs "      \
  "WHERE time_held AND state = 0 AND NOT ordering_held " q " ORDER BY "      \
  "run_at LIMIT 1) UNION ALL (SELECT run_at FROM pawl_jobs WHERE "           \
  PG_SQL_READY "rank <= $1::bigint " q " ORDER BY rank DESC, run_at, id "    \
  "LIMIT 1)) AS m) END"
#define PG_SQL_NEXT_DUE_FLOOR PG_SQL_NEXT_DUE_FLOOR_OF("")
#define PG_SQL_NEXT_DUE_FLOOR_QUEUE PG_SQL_NEXT_DUE_FLOOR_OF("AND queue = $2::text")
#define PG_SQL_NEXT_DUE_QUEUE PG_SQL_NEXT_DUE_OF("lane.q = $1::text")
#define PG_SQL_NEXT_DUE_QUEUES PG_SQL_NEXT_DUE_OF("lane.q = ANY($1::text[])")

/* next_due with limits (see pawl__sq_next_due_limited(),
 * stores/sqlite/limits.c): the jobs outside the limits with nothing left
 * ($1 queues or NULL, $2 resources, $3 queues of queue limits); one
 * resource's ($1, $2 queues or NULL); one queue's ($1). */
#define PG_SQL_NEXT_DUE_LIM                                                  \
  PG_SQL_NEXT_DUE_OF("($1::text[] IS NULL OR lane.q = ANY($1::text[])) AND " \
                     "lane.r <> ALL($2::text[]) AND lane.q <> ALL($3::text[])")
#define PG_SQL_NEXT_DUE_LIM_RES                                              \
  PG_SQL_NEXT_DUE_OF("lane.r = $1::text AND ($2::text[] IS NULL OR lane.q = " \
                     "ANY($2::text[]))")
#define PG_SQL_NEXT_DUE_LIM_QUEUE PG_SQL_NEXT_DUE_OF("lane.q = $1::text")

#endif
