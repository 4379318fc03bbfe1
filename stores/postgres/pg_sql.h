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

/* Columns read into a pawl_job_t, in pg_row_to_job()'s order; rank (to put
 * a claimed batch in claim order) comes last. `j` is pawl_jobs. */
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

/* Queues (issue 14): the jobs of a paused queue are neither claimed nor
 * waited for (next_due). ARRAY(subquery) does not depend on the row: it is
 * an InitPlan, run once per statement in the statement's snapshot (empty
 * unless a queue is paused), and the claim's index walk filters each row
 * against it. A pause that has committed is seen by every claim that
 * starts after it. */
#define PG_SQL_UNPAUSED                                                      \
  "queue <> ALL (ARRAY(SELECT name FROM pawl_queues WHERE paused)) AND "

/* The age boost a job of the row's queue ranks with (issue 14, queues):
 * the queue's own (pawl_queues.age_boost_ms), else `dflt` (the database's,
 * bound by the caller); pawl_queue_boost() is in schema V005. */
#define PG_SQL_QUEUE_BOOST(dflt) "pawl_queue_boost(j.queue, " dflt ")"

/* One job: $1 id, $2 type, $3 queue, $4 state, $5 priority, $6 payload,
 * $7 params, $8 tags, $9 run_at (NULL: now), $10 max_attempts,
 * $11 timeout_s, $12 idempotency key, $13 business key, $14 correlation id,
 * $15 enqueued_by, $16 now, $17 age boost, $18 ordering key (then the
 * next ordering_seq: V006__ordering.sql), $19 resource (limits, issue 14;
 * NULL for none), $20 depth (the generation of jobs enqueued by jobs).
 * A live business key held by
 * another job is the only conflict possible (ids are fresh UUIDv7s): then
 * nothing is inserted and no row returned. */
#define PG_SQL_INSERT                                                        \
  "INSERT INTO pawl_jobs AS j (id, type, queue, state, priority, rank, "     \
  "payload, params, tags, run_at, max_attempts, timeout_s, "                 \
  "idempotency_key, business_key, correlation_id, enqueued_by, created_at, " \
  "updated_at, ordering_key, ordering_seq, resource, depth) SELECT "       \
  "$1::uuid, "                                                               \
  "$2::text, $3::text, $4::smallint, "                                       \
  "$5::int, pawl_rank($5::int, t.run_at, pawl_queue_boost($3::text, "       \
  "$17::bigint)), $6::jsonb, "                                                \
  "$7::jsonb, $8::jsonb, t.run_at, $10::int, $11::int, $12::text, "          \
  "$13::text, $14::text, $15::text, t.now, t.now, $18::text, CASE WHEN "     \
  "$18::text IS NULL THEN NULL ELSE nextval('pawl_ordering_seq') END, "      \
  "$19::text, $20::int FROM (SELECT "                                                  \
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
/* A batch's children (issue 15): the same and their batch. */
#define PG_SQL_COPY_BATCH_JOBS                                               \
  PG_SQL_COPY_COLS ", batch_id) FROM STDIN (FORMAT binary)"

/* Per-key ordering (issue 14): a pending job with an ordering key is
 * claimable only when pawl_ordering_free() says so; see
 * schema/postgres/V006__ordering.sql for the rule and for why it holds with
 * several nodes claiming at once (an advisory lock per key, and a snapshot
 * taken after it). CASE, not OR: jobs without a key (nearly all) never
 * call the function, whatever order the planner puts the tests in. */
#define PG_SQL_ORDERING_FREE                                                 \
  "CASE WHEN ordering_key IS NULL THEN true ELSE pawl_ordering_free("        \
  "ordering_key, ordering_seq, pawl_now($1::bigint)) END"

/* Claim in one statement: $1 now, $2 owner, $3 lease token, $4 lease ms,
 * $5 limit, $6 the queue (or an array of queues). The inner SELECT walks
 * the partial index of pending rows in claim order and skips rows another
 * node is claiming right now (SKIP LOCKED), so nodes never wait for each
 * other and never take the same job. Progress belongs to an attempt, so a
 * new attempt starts without any. */
#define PG_SQL_CLAIM_SET                                                     \
  "UPDATE pawl_jobs AS j SET state = 1, attempt = j.attempt + 1, "           \
  "started_at = pawl_now($1::bigint), lease_owner = $2::text, "              \
  "lease_token = $3::uuid, lease_expires = pawl_now($1::bigint) + "          \
  "$4::float8 * interval '1 millisecond', updated_at = pawl_now($1::bigint), "\
  "progress_done = NULL, progress_total = NULL, version = j.version + 1 "
#define PG_SQL_CLAIM_HEAD                                                    \
  PG_SQL_CLAIM_SET                                                           \
  "FROM (SELECT id FROM pawl_jobs WHERE state = 0 AND " PG_SQL_UNPAUSED
#define PG_SQL_CLAIM_TAIL                                                    \
  "run_at <= pawl_now($1::bigint) AND " PG_SQL_ORDERING_FREE                 \
  " ORDER BY rank DESC, run_at, id "                                         \
  "LIMIT $5::int FOR UPDATE SKIP LOCKED) AS c WHERE j.id = c.id "            \
  "RETURNING " PG_JOB_COLS

/* Limits (issue 14; stores/store.h, "limits"): the one-statement claim
 * takes nothing on a database with limits (an InitPlan, evaluated once per
 * claim); pg_claim() then claims with the limits' statements below. */
#define PG_SQL_CLAIM_NO_LIMITS "NOT EXISTS (SELECT 1 FROM pawl_limits) AND "

#define PG_SQL_CLAIM PG_SQL_CLAIM_HEAD PG_SQL_CLAIM_NO_LIMITS PG_SQL_CLAIM_TAIL
#define PG_SQL_CLAIM_QUEUE                                                   \
  PG_SQL_CLAIM_HEAD PG_SQL_CLAIM_NO_LIMITS "queue = $6::text AND "           \
  PG_SQL_CLAIM_TAIL
#define PG_SQL_CLAIM_QUEUES                                                  \
  PG_SQL_CLAIM_HEAD PG_SQL_CLAIM_NO_LIMITS "queue = ANY($6::text[]) AND "    \
  PG_SQL_CLAIM_TAIL

/* The claim on a database with limits picks the due jobs outside the
 * limits with nothing left ($2 resources, $3 queues), locking them, in
 * claim order: $1 now, $4 limit, $5 the queue (or an array of queues);
 * then takes the ones admitted ($6 their ids, $5 how many) with the
 * claim's own update. The pick leaves paused queues alone and keeps
 * per-key ordering as the one-statement claim does (issue 14: queues,
 * ordering; the key's advisory lock is held to the commit); the take does
 * not test them again: the picked rows are locked and the transaction
 * holds the keys' locks, and a row the take missed would be an error. */
#define PG_SQL_CLAIM_LIM_PICK_HEAD                                           \
  "SELECT id, queue, resource FROM pawl_jobs WHERE state = 0 AND "           \
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
#define PG_SQL_CLAIM_LIM_TAKE                                                \
  PG_SQL_CLAIM_SET "FROM (SELECT id FROM pawl_jobs WHERE state = 0 AND "     \
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

/* Batches (issue 15; schema/postgres/V009__batch.sql): the children among
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

/* The earliest run_at among pending jobs, for a poller with nothing due:
 * all queues, one ($1), or an array of them ($1). Read from the pending
 * rows' partial indexes, never the finished history. */
#define PG_SQL_NEXT_DUE                                                      \
  "SELECT pawl_ms(min(run_at)) FROM pawl_jobs WHERE " PG_SQL_UNPAUSED        \
  "state = 0"
#define PG_SQL_NEXT_DUE_QUEUE PG_SQL_NEXT_DUE " AND queue = $1::text"
#define PG_SQL_NEXT_DUE_QUEUES PG_SQL_NEXT_DUE " AND queue = ANY($1::text[])"

#endif
