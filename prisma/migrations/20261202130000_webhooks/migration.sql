-- Signed webhooks (server/webhooks/). A subscription names the event types it wants; its signing secret is
-- kept sealed under BETTER_COMPUTE_SECRET (server/webhooks/secret.ts), never in the clear.
CREATE TABLE webhook_subscriptions (
  id                   TEXT PRIMARY KEY,
  tenant_id            TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
  url                  TEXT NOT NULL,
  description          TEXT NOT NULL DEFAULT '',
  event_types          TEXT[] NOT NULL,
  enabled              BOOLEAN NOT NULL DEFAULT true,
  sealed_secret        BYTEA NOT NULL,
  created_by           TEXT NOT NULL,
  created_at           TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
  updated_at           TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
  -- Failed attempts since the last success, and when that run of failures began (null after a success).
  consecutive_failures INTEGER NOT NULL DEFAULT 0,
  failing_since        TIMESTAMPTZ(6),
  disabled_reason      TEXT
);
CREATE INDEX webhook_subscriptions_tenant ON webhook_subscriptions (tenant_id) WHERE enabled;

-- The outbox: one row per event and subscription that wants it, written by the trigger below in the
-- transaction that wrote the event. `id` is the Standard Webhooks `webhook-id`, the same on every retry.
CREATE TABLE webhook_deliveries (
  id               TEXT PRIMARY KEY,
  subscription_id  TEXT NOT NULL REFERENCES webhook_subscriptions(id) ON DELETE CASCADE,
  tenant_id        TEXT NOT NULL,
  event_id         BIGINT,
  event_type       TEXT NOT NULL,
  -- The exact JSON body sent on every attempt: {"type","timestamp","data"}.
  body             TEXT NOT NULL,
  state            TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
  attempts         INTEGER NOT NULL DEFAULT 0,
  next_attempt_at  TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
  -- Retries stop once the retry window has passed since this instant (a redelivery starts it again).
  retry_from       TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
  created_at       TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
  last_attempt_at  TIMESTAMPTZ(6),
  last_status      INTEGER,
  last_latency_ms  INTEGER,
  last_error       TEXT,
  delivered_at     TIMESTAMPTZ(6)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_subscription ON webhook_deliveries (subscription_id, created_at DESC);

-- Outbox rows for the events a statement inserted, one per enabled subscription of the event's tenant that
-- names its type, and one NOTIFY for the delivery workers. It shares the statement's transition table with
-- events_notify; with no enabled subscription it costs one index probe per statement and nothing more.
CREATE FUNCTION compute_webhook_outbox() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  n integer;
BEGIN
  IF NOT EXISTS (SELECT 1 FROM webhook_subscriptions WHERE enabled) THEN
    RETURN NULL;
  END IF;
  INSERT INTO webhook_deliveries (id, subscription_id, tenant_id, event_id, event_type, body, next_attempt_at, retry_from, created_at)
  SELECT 'msg_' || replace(gen_random_uuid()::text, '-', ''), s.id, e.tenant_id, e.id, e.type,
         json_build_object('type', e.type,
                           'timestamp', to_char(e.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                           'data', e.data)::text,
         now(), now(), now()
    FROM new_events e
    JOIN webhook_subscriptions s ON s.tenant_id = e.tenant_id AND s.enabled AND e.type = ANY (s.event_types);
  GET DIAGNOSTICS n = ROW_COUNT;
  IF n > 0 THEN
    PERFORM pg_notify('compute_webhook_deliveries', '');
  END IF;
  RETURN NULL;
END;
$$;

CREATE TRIGGER events_webhook_outbox
  AFTER INSERT ON events
  REFERENCING NEW TABLE AS new_events
  FOR EACH STATEMENT EXECUTE FUNCTION compute_webhook_outbox();

-- A join request that reaches its expiry undecided (or approved and never used) is published once as
-- `node.join-request.expired` by the webhook sweep; this marks the ones already published.
ALTER TABLE join_requests ADD COLUMN expiry_published_at TIMESTAMPTZ(6);
UPDATE join_requests SET expiry_published_at = now() WHERE state IN ('pending', 'approved') AND expires_at <= now();
CREATE INDEX join_requests_expiry_unpublished ON join_requests (expires_at)
  WHERE state IN ('pending', 'approved') AND expiry_published_at IS NULL;
