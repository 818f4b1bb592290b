-- New events are announced on `compute_events` so the console's events, refused-joins and nodes pages update
-- live on every instance (LISTEN in server/events/listener.ts). One statement-level trigger: a join batch
-- inserts its events in one statement, so it pays one small query and one notification per tenant, not one per
-- event; PostgreSQL folds identical notifications of a transaction into one.
CREATE FUNCTION compute_notify_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('compute_events', json_build_object('tenantId', t.tenant_id)::text)
     FROM (SELECT DISTINCT tenant_id FROM new_events) t;
  RETURN NULL;
END;
$$;

CREATE TRIGGER events_notify
  AFTER INSERT ON events
  REFERENCING NEW TABLE AS new_events
  FOR EACH STATEMENT EXECUTE FUNCTION compute_notify_events();
