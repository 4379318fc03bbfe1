-- pawl schema, SQLite, version 1.
-- Shipped migrations are never edited: the migrator records a checksum of
-- this file and refuses to start if it changes. Add V002__*.sql instead.
--
-- Times are integer milliseconds since the Unix epoch (UTC). Ids are UUIDv7
-- as 16-byte blobs; pawl_jobs_v shows them as text for the sqlite3 shell.
-- States: 0 pending, 1 running, 2 succeeded, 3 failed, 4 canceled,
-- 5 paused, 6 blocked.

CREATE TABLE pawl_settings (
  name  TEXT PRIMARY KEY,
  value TEXT NOT NULL
) WITHOUT ROWID;

-- Age boost: a waiting job gains +1 priority per interval, for ordering.
INSERT INTO pawl_settings (name, value) VALUES ('age_boost_ms', '900000');

CREATE TABLE pawl_jobs (
  seq             INTEGER PRIMARY KEY,
  id              BLOB NOT NULL UNIQUE CHECK (length(id) = 16),
  type            TEXT NOT NULL,
  queue           TEXT NOT NULL,
  state           INTEGER NOT NULL CHECK (state BETWEEN 0 AND 6),
  paused_from     INTEGER,
  priority        INTEGER NOT NULL,
  -- Claim order key, derived from priority and run_at (store_rank()); the
  -- stored priority itself is never rewritten.
  rank            INTEGER NOT NULL,
  payload         TEXT NOT NULL,
  params          TEXT,
  tags            TEXT NOT NULL DEFAULT '[]',
  run_at          INTEGER NOT NULL,
  attempt         INTEGER NOT NULL DEFAULT 0,
  max_attempts    INTEGER NOT NULL,
  timeout_s       INTEGER NOT NULL DEFAULT 0,
  idempotency_key TEXT,
  business_key    TEXT,
  correlation_id  TEXT,
  enqueued_by     TEXT,
  created_at      INTEGER NOT NULL,
  updated_at      INTEGER NOT NULL,
  -- The success path keeps its history here, on the row: when the current
  -- attempt started, on which node, and when the job finished. Separate
  -- rows are written only for failures, retries and operator actions.
  started_at      INTEGER,
  finished_at     INTEGER,
  lease_owner     TEXT,
  lease_token     BLOB,
  lease_expires   INTEGER,
  last_error      TEXT,
  result          TEXT,
  recoveries      INTEGER NOT NULL DEFAULT 0,
  version         INTEGER NOT NULL DEFAULT 1
);

-- The live queue: partial indexes hold pending rows only, so claiming costs
-- the same with a million finished jobs kept as with none.
CREATE INDEX pawl_jobs_claim ON pawl_jobs (rank DESC, run_at, id)
  WHERE state = 0;
CREATE INDEX pawl_jobs_claim_queue ON pawl_jobs (queue, rank DESC, run_at, id)
  WHERE state = 0;
-- Running jobs, for heartbeats and lease recovery.
CREATE INDEX pawl_jobs_running ON pawl_jobs (lease_expires)
  WHERE state = 1;
-- The dead-letter set.
CREATE INDEX pawl_jobs_failed ON pawl_jobs (id) WHERE state = 3;
-- A business key is unique among live jobs only.
CREATE UNIQUE INDEX pawl_jobs_business_key ON pawl_jobs (business_key)
  WHERE business_key IS NOT NULL AND state IN (0, 1, 5, 6);

-- Idempotency keys are unique forever: kept here even after retention
-- deletes the job.
CREATE TABLE pawl_idempotency (
  key        TEXT PRIMARY KEY,
  job_id     BLOB NOT NULL,
  created_at INTEGER NOT NULL
) WITHOUT ROWID;

-- Attempts that did not end in success (and attempts cut short); the
-- successful one is on the job row.
CREATE TABLE pawl_attempts (
  seq          INTEGER PRIMARY KEY,
  job_id       BLOB NOT NULL REFERENCES pawl_jobs (id) ON DELETE CASCADE,
  attempt      INTEGER NOT NULL,
  node         TEXT,
  scheduled_at INTEGER,
  started_at   INTEGER,
  ended_at     INTEGER NOT NULL,
  outcome      TEXT NOT NULL,
  error        TEXT
);
CREATE INDEX pawl_attempts_job ON pawl_attempts (job_id);

-- Transitions other than enqueue, claim and success (those are on the row
-- and the attempts): when, by whom, why.
CREATE TABLE pawl_events (
  seq        INTEGER PRIMARY KEY,
  job_id     BLOB NOT NULL REFERENCES pawl_jobs (id) ON DELETE CASCADE,
  at         INTEGER NOT NULL,
  from_state INTEGER NOT NULL,
  to_state   INTEGER NOT NULL,
  actor      TEXT,
  reason     TEXT,
  attempt    INTEGER NOT NULL
);
CREATE INDEX pawl_events_job ON pawl_events (job_id);

CREATE TABLE pawl_locks (
  name        TEXT PRIMARY KEY,
  owner       TEXT NOT NULL,
  acquired_at INTEGER NOT NULL,
  expires_at  INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE pawl_nodes (
  id          TEXT PRIMARY KEY,
  incarnation BLOB NOT NULL,
  version     TEXT NOT NULL,
  queues      TEXT NOT NULL,
  started_at  INTEGER NOT NULL,
  last_beat   INTEGER NOT NULL
) WITHOUT ROWID;

-- Readable view for the sqlite3 shell: text ids, state names, ISO times.
CREATE VIEW pawl_jobs_v AS
SELECT
  lower(substr(hex(id), 1, 8) || '-' || substr(hex(id), 9, 4) || '-' ||
        substr(hex(id), 13, 4) || '-' || substr(hex(id), 17, 4) || '-' ||
        substr(hex(id), 21, 12)) AS id,
  type,
  queue,
  CASE state WHEN 0 THEN 'pending' WHEN 1 THEN 'running'
             WHEN 2 THEN 'succeeded' WHEN 3 THEN 'failed'
             WHEN 4 THEN 'canceled' WHEN 5 THEN 'paused'
             WHEN 6 THEN 'blocked' END AS state,
  priority,
  payload,
  params,
  tags,
  strftime('%Y-%m-%dT%H:%M:%fZ', run_at / 1000.0, 'unixepoch') AS run_at,
  attempt,
  max_attempts,
  timeout_s,
  idempotency_key,
  business_key,
  correlation_id,
  enqueued_by,
  strftime('%Y-%m-%dT%H:%M:%fZ', created_at / 1000.0, 'unixepoch')
    AS created_at,
  strftime('%Y-%m-%dT%H:%M:%fZ', updated_at / 1000.0, 'unixepoch')
    AS updated_at,
  strftime('%Y-%m-%dT%H:%M:%fZ', started_at / 1000.0, 'unixepoch')
    AS started_at,
  strftime('%Y-%m-%dT%H:%M:%fZ', finished_at / 1000.0, 'unixepoch')
    AS finished_at,
  lease_owner,
  strftime('%Y-%m-%dT%H:%M:%fZ', lease_expires / 1000.0, 'unixepoch')
    AS lease_expires,
  last_error,
  result,
  recoveries,
  version
FROM pawl_jobs;
