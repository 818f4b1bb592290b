-- The console's overview (docs/observability.md): per tenant and hour, how many joins were admitted (by
-- attestor), deferred into a join request (by attestor) and refused (by reason), and how many certificates were
-- renewed and renewals refused (by reason). The page reads at most 7 x 24 rows per series, whatever the number
-- of events: a fleet of 100,000 nodes writes millions of events a week, and grouping them per page view would
-- not stay under its 300 ms budget.
CREATE TABLE "overview_hourly" (
  "tenant_id" TEXT NOT NULL,
  "hour" TIMESTAMPTZ(6) NOT NULL,
  "series" TEXT NOT NULL CHECK ("series" IN ('admitted', 'pending', 'refused', 'renewed', 'renew-refused')),
  "key" TEXT NOT NULL,
  -- The writing connection's backend pid modulo 16: concurrent admission transactions (other instances, or
  -- BETTER_COMPUTE_JOIN_IN_FLIGHT above 1) upsert different rows, so none waits for another's commit on a
  -- shared counter row. The page sums the shards.
  "shard" SMALLINT NOT NULL,
  "count" BIGINT NOT NULL,
  PRIMARY KEY ("tenant_id", "hour", "series", "key", "shard")
);

-- One statement-level trigger per table, like events_notify: a join batch inserts its events in one statement
-- and pays one grouped upsert. A refusal counts with the events its rate limit suppressed before it.
CREATE FUNCTION overview_rollup_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO overview_hourly (tenant_id, hour, series, key, shard, count)
  SELECT tenant_id, date_trunc('hour', created_at),
         CASE type WHEN 'node.joined' THEN 'admitted' WHEN 'node.join-request.created' THEN 'pending'
                   WHEN 'security.join.refused' THEN 'refused' ELSE 'renew-refused' END,
         coalesce(CASE WHEN type IN ('node.joined', 'node.join-request.created') THEN data->>'attestor' ELSE data->>'reason' END, ''),
         pg_backend_pid() % 16,
         sum(1 + CASE WHEN type IN ('security.join.refused', 'security.renew.refused') THEN coalesce((data->>'suppressed')::bigint, 0) ELSE 0 END)
    FROM new_events
   WHERE type IN ('node.joined', 'node.join-request.created', 'security.join.refused', 'security.renew.refused')
   GROUP BY 1, 2, 3, 4, 5
   ORDER BY 1, 2, 3, 4
  ON CONFLICT (tenant_id, hour, series, key, shard) DO UPDATE SET count = overview_hourly.count + excluded.count;
  RETURN NULL;
END;
$$;

CREATE TRIGGER events_overview_rollup
  AFTER INSERT ON events
  REFERENCING NEW TABLE AS new_events
  FOR EACH STATEMENT EXECUTE FUNCTION overview_rollup_events();

-- A renewal is a certificate for an identity generation that already had one (a join or reclaim starts a
-- generation with its first certificate).
CREATE FUNCTION overview_rollup_certs() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO overview_hourly (tenant_id, hour, series, key, shard, count)
  SELECT n.tenant_id, date_trunc('hour', c.created_at), 'renewed', '', pg_backend_pid() % 16, count(*)
    FROM new_certs c
    JOIN nodes n ON n.id = c.node_id
   WHERE EXISTS (SELECT 1 FROM node_certs o WHERE o.node_id = c.node_id AND o.identity_generation = c.identity_generation AND o.serial <> c.serial)
   GROUP BY 1, 2, 5
   ORDER BY 1, 2
  ON CONFLICT (tenant_id, hour, series, key, shard) DO UPDATE SET count = overview_hourly.count + excluded.count;
  RETURN NULL;
END;
$$;

CREATE TRIGGER node_certs_overview_rollup
  AFTER INSERT ON node_certs
  REFERENCING NEW TABLE AS new_certs
  FOR EACH STATEMENT EXECUTE FUNCTION overview_rollup_certs();

-- When each node's current certificate ends: the latest not_after of an unrevoked certificate of its current
-- identity generation (null when it has none). Kept by triggers as certificates are issued or revoked and as
-- the generation moves (a reclaim), so "certificates expiring per pool" reads one row per node instead of
-- looking up each node's certificates: 100,000 lookups took about 400 ms, the scan takes a few.
ALTER TABLE "nodes" ADD COLUMN "cert_not_after" TIMESTAMPTZ(6);
CREATE INDEX "node_certs_node_generation_not_after" ON "node_certs" ("node_id", "identity_generation", "not_after" DESC) WHERE "revoked_at" IS NULL;

CREATE FUNCTION compute_current_cert_not_after(p_node text, p_generation integer) RETURNS timestamptz LANGUAGE sql STABLE AS $$
  SELECT max(not_after) FROM node_certs WHERE node_id = p_node AND identity_generation = p_generation AND revoked_at IS NULL
$$;

CREATE FUNCTION nodes_refresh_cert_not_after() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE nodes n SET cert_not_after = compute_current_cert_not_after(n.id, n.identity_generation)
   WHERE n.id IN (SELECT DISTINCT node_id FROM changed_certs)
     AND n.cert_not_after IS DISTINCT FROM compute_current_cert_not_after(n.id, n.identity_generation);
  RETURN NULL;
END;
$$;

CREATE TRIGGER node_certs_inserted_cert_not_after
  AFTER INSERT ON node_certs
  REFERENCING NEW TABLE AS changed_certs
  FOR EACH STATEMENT EXECUTE FUNCTION nodes_refresh_cert_not_after();

CREATE TRIGGER node_certs_updated_cert_not_after
  AFTER UPDATE ON node_certs
  REFERENCING NEW TABLE AS changed_certs
  FOR EACH STATEMENT EXECUTE FUNCTION nodes_refresh_cert_not_after();

CREATE FUNCTION nodes_generation_cert_not_after() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.cert_not_after := compute_current_cert_not_after(NEW.id, NEW.identity_generation);
  RETURN NEW;
END;
$$;

CREATE TRIGGER nodes_generation_cert_not_after
  BEFORE UPDATE OF identity_generation ON nodes
  FOR EACH ROW WHEN (OLD.identity_generation IS DISTINCT FROM NEW.identity_generation)
  EXECUTE FUNCTION nodes_generation_cert_not_after();

UPDATE nodes SET cert_not_after = compute_current_cert_not_after(id, identity_generation);

-- The rest of the page reads live rows: pending requests per site, decisions of the last 7 days, current
-- certificates per pool.
CREATE INDEX "join_requests_tenant_decided" ON "join_requests" ("tenant_id", "decided_at") WHERE "decided_at" IS NOT NULL;
CREATE INDEX "nodes_tenant_pool" ON "nodes" ("tenant_id", "pool_id", "cert_not_after") WHERE "state" <> 'retired';
