-- pawl schema, PostgreSQL, version 1.
-- Shipped migrations are never edited: the migrator records a checksum of
-- this file and refuses to start if it changes. Add V002__*.sql instead.
--
-- Ids are uuid (UUIDv7), JSON is jsonb, times are timestamptz. The C side
-- speaks milliseconds since the Unix epoch; pawl_ms() and pawl_ts() convert.
-- States: 0 pending, 1 running, 2 succeeded, 3 failed, 4 canceled,
-- 5 paused, 6 blocked.

-- Milliseconds since the epoch, and back. floor(): a database time with
-- microseconds belongs to the millisecond it is in.
-- STABLE, not IMMUTABLE: extract() on a timestamptz is STABLE, and the
-- planner only inlines a function whose body is no more volatile than it.
CREATE FUNCTION pawl_ms(t timestamptz) RETURNS bigint
  LANGUAGE sql STABLE PARALLEL SAFE
  RETURN floor(extract(epoch FROM t) * 1000)::bigint;
CREATE FUNCTION pawl_ts(ms bigint) RETURNS timestamptz
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN to_timestamp(ms / 1000.0);

-- "Now" for every scheduling decision: the database's clock (the start of
-- the transaction), unless a test injected a clock and bound its reading.
CREATE FUNCTION pawl_now(injected bigint) RETURNS timestamptz
  LANGUAGE sql STABLE PARALLEL SAFE
  RETURN coalesce(pawl_ts(injected), now());

-- Claim order key (store_rank() in stores/store.h): ordering by it
-- descending, then run_at, is ordering by priority plus one per boost_ms
-- waited. The stored priority itself is never rewritten.
CREATE FUNCTION pawl_rank(priority integer, run_at timestamptz, boost_ms bigint)
  RETURNS bigint LANGUAGE sql STABLE PARALLEL SAFE
  RETURN CASE WHEN boost_ms > 0 THEN priority::bigint * boost_ms - pawl_ms(run_at)
              ELSE priority END;

CREATE TABLE pawl_settings (
  name  text PRIMARY KEY,
  value text NOT NULL
);

-- Age boost: a waiting job gains +1 priority per interval, for ordering.
INSERT INTO pawl_settings (name, value) VALUES ('age_boost_ms', '900000');

-- One table for live and finished jobs; the partial indexes below hold live
-- rows only, so a claim costs the same with a million finished jobs kept.
-- Every claim and finish rewrites a row, so the table is tuned for churn:
--   fillfactor 80 leaves room in each page for the new row versions;
--   autovacuum starts after 2% of the rows (plus 1,000) changed instead of
--   20%, without cost-based pauses, so dead versions of claimed and
--   finished rows are reclaimed while they are few; inserts (enqueue) also
--   trigger it, which keeps the visibility map fresh for index-only scans.
CREATE TABLE pawl_jobs (
  id              uuid PRIMARY KEY,
  type            text NOT NULL,
  queue           text NOT NULL,
  state           smallint NOT NULL CHECK (state BETWEEN 0 AND 6),
  paused_from     smallint,
  priority        integer NOT NULL,
  rank            bigint NOT NULL,
  payload         jsonb NOT NULL,
  params          jsonb,
  tags            jsonb NOT NULL DEFAULT '[]',
  run_at          timestamptz NOT NULL,
  attempt         integer NOT NULL DEFAULT 0,
  max_attempts    integer NOT NULL,
  timeout_s       integer NOT NULL DEFAULT 0,
  idempotency_key text,
  business_key    text,
  correlation_id  text,
  enqueued_by     text,
  created_at      timestamptz NOT NULL,
  updated_at      timestamptz NOT NULL,
  -- The success path keeps its history here, on the row: when the current
  -- attempt started, on which node, and when the job finished. Separate
  -- rows are written only for failures, retries and operator actions.
  started_at      timestamptz,
  finished_at     timestamptz,
  lease_owner     text,
  lease_token     uuid,
  lease_expires   timestamptz,
  last_error      text,
  result          jsonb,
  recoveries      integer NOT NULL DEFAULT 0,
  progress_done   double precision,
  progress_total  double precision,
  version         bigint NOT NULL DEFAULT 1
) WITH (fillfactor = 80,
        autovacuum_vacuum_scale_factor = 0.02,
        autovacuum_vacuum_threshold = 1000,
        autovacuum_vacuum_insert_scale_factor = 0.02,
        autovacuum_analyze_scale_factor = 0.02,
        autovacuum_vacuum_cost_delay = 0);

-- The live queue, in claim order: pending rows only.
CREATE INDEX pawl_jobs_claim ON pawl_jobs (rank DESC, run_at, id)
  WHERE state = 0;
CREATE INDEX pawl_jobs_claim_queue ON pawl_jobs (queue, rank DESC, run_at, id)
  WHERE state = 0;
-- Running jobs, for lease recovery (expired leases) and heartbeats (a
-- token's rows, filtered from these). Every key ends in the id, so that no
-- two entries are equal: B-tree deduplication would otherwise pack the
-- entries of a batch (one lease_expires, one lease_token) into posting
-- lists, which cannot be marked dead while any of their rows lives, and
-- every scan would visit each row version ever claimed. There is no index
-- on lease_token for the same reason: finishing a batch must find its rows
-- by id (the primary key), not by walking every row its node ever held.
CREATE INDEX pawl_jobs_running ON pawl_jobs (lease_expires, id)
  WHERE state = 1;
-- The dead-letter set.
CREATE INDEX pawl_jobs_failed ON pawl_jobs (id) WHERE state = 3;
-- A business key is unique among live jobs only.
CREATE UNIQUE INDEX pawl_jobs_business_key ON pawl_jobs (business_key)
  WHERE business_key IS NOT NULL AND state IN (0, 1, 5, 6);

-- Wakeup: every statement that inserts jobs sends one NOTIFY, delivered
-- when its transaction commits; each node LISTENs and claims at once
-- instead of waiting for its next poll. Once per statement, not per row:
-- a bulk insert wakes the nodes once. Channels belong to the whole
-- database, so the name carries the schema: pawl installs in two schemas
-- of one database do not wake each other.
CREATE FUNCTION pawl_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('pawl_jobs:' || TG_TABLE_SCHEMA, '');
  RETURN NULL;
END
$$;
CREATE TRIGGER pawl_jobs_notify AFTER INSERT ON pawl_jobs
  FOR EACH STATEMENT EXECUTE FUNCTION pawl_notify();

-- Idempotency keys are unique forever: kept here even after retention
-- deletes the job.
CREATE TABLE pawl_idempotency (
  key        text PRIMARY KEY,
  job_id     uuid NOT NULL,
  created_at timestamptz NOT NULL
);

-- Attempts that did not end in success (and attempts cut short); the
-- successful one is on the job row.
CREATE TABLE pawl_attempts (
  seq          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  job_id       uuid NOT NULL REFERENCES pawl_jobs (id) ON DELETE CASCADE,
  attempt      integer NOT NULL,
  node         text,
  scheduled_at timestamptz,
  started_at   timestamptz,
  ended_at     timestamptz NOT NULL,
  outcome      text NOT NULL,
  error        text
);
CREATE INDEX pawl_attempts_job ON pawl_attempts (job_id, seq);

-- Transitions other than enqueue, claim and success (those are on the row
-- and the attempts): when, by whom, why.
CREATE TABLE pawl_events (
  seq        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  job_id     uuid NOT NULL REFERENCES pawl_jobs (id) ON DELETE CASCADE,
  at         timestamptz NOT NULL,
  from_state smallint NOT NULL,
  to_state   smallint NOT NULL,
  actor      text,
  reason     text,
  attempt    integer NOT NULL
);
CREATE INDEX pawl_events_job ON pawl_events (job_id, seq);

-- Log lines job code writes (ctx:log), stored with the attempt's outcome.
CREATE TABLE pawl_logs (
  seq     bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  job_id  uuid NOT NULL REFERENCES pawl_jobs (id) ON DELETE CASCADE,
  attempt integer NOT NULL,
  at      timestamptz NOT NULL,
  level   text NOT NULL,
  message text NOT NULL,
  fields  jsonb
);
CREATE INDEX pawl_logs_job ON pawl_logs (job_id, seq);

CREATE TABLE pawl_locks (
  name        text PRIMARY KEY,
  owner       text NOT NULL,
  acquired_at timestamptz NOT NULL,
  expires_at  timestamptz NOT NULL
);

-- A node's identity is its id plus its incarnation: a node restarted under
-- the same id gets a new incarnation, and leases of the old one are not
-- renewed by the new one's heartbeats.
CREATE TABLE pawl_nodes (
  id          text PRIMARY KEY,
  incarnation uuid NOT NULL,
  version     text NOT NULL,
  queues      text NOT NULL,
  started_at  timestamptz NOT NULL,
  last_beat   timestamptz NOT NULL
);

-- Readable view: state names.
CREATE VIEW pawl_jobs_v AS
SELECT id, type, queue,
  CASE state WHEN 0 THEN 'pending' WHEN 1 THEN 'running'
             WHEN 2 THEN 'succeeded' WHEN 3 THEN 'failed'
             WHEN 4 THEN 'canceled' WHEN 5 THEN 'paused'
             WHEN 6 THEN 'blocked' END AS state,
  priority, payload, params, tags, run_at, attempt, max_attempts, timeout_s,
  idempotency_key, business_key, correlation_id, enqueued_by, created_at,
  updated_at, started_at, finished_at, lease_owner, lease_expires,
  last_error, result, recoveries, progress_done, progress_total, version
FROM pawl_jobs;
