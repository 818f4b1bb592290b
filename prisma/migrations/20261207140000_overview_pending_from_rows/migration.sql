-- The overview's "pending" series counts join requests from their rows, not from `node.join-request.created`
-- events: those are rate-limited (a site booting 220 machines records 60 a minute), and a tpm enrollment
-- publishes none, so the chart showed a fraction of what waited. Every new join_requests row of any attestor
-- counts once, in the hour it was created; a refreshed request (same id, ON CONFLICT DO UPDATE) does not.

CREATE OR REPLACE FUNCTION overview_rollup_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO overview_hourly (tenant_id, hour, series, key, shard, count)
  SELECT tenant_id, date_trunc('hour', created_at),
         CASE type WHEN 'node.joined' THEN 'admitted' WHEN 'security.join.refused' THEN 'refused' ELSE 'renew-refused' END,
         coalesce(CASE WHEN type = 'node.joined' THEN data->>'attestor' ELSE data->>'reason' END, ''),
         pg_backend_pid() % 16,
         sum(1 + CASE WHEN type IN ('security.join.refused', 'security.renew.refused') THEN coalesce((data->>'suppressed')::bigint, 0) ELSE 0 END)
    FROM new_events
   WHERE type IN ('node.joined', 'security.join.refused', 'security.renew.refused')
   GROUP BY 1, 2, 3, 4, 5
   ORDER BY 1, 2, 3, 4
  ON CONFLICT (tenant_id, hour, series, key, shard) DO UPDATE SET count = overview_hourly.count + excluded.count;
  RETURN NULL;
END;
$$;

-- Statement-level, like the events trigger: an admission batch inserts its requests in one statement and pays
-- one grouped upsert. The transition table of an INSERT ... ON CONFLICT DO UPDATE holds only the rows inserted.
CREATE FUNCTION overview_rollup_requests() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO overview_hourly (tenant_id, hour, series, key, shard, count)
  SELECT tenant_id, date_trunc('hour', created_at), 'pending', attestor, pg_backend_pid() % 16, count(*)
    FROM new_requests
   GROUP BY 1, 2, 4, 5
   ORDER BY 1, 2, 4
  ON CONFLICT (tenant_id, hour, series, key, shard) DO UPDATE SET count = overview_hourly.count + excluded.count;
  RETURN NULL;
END;
$$;

CREATE TRIGGER join_requests_overview_rollup
  AFTER INSERT ON join_requests
  REFERENCING NEW TABLE AS new_requests
  FOR EACH STATEMENT EXECUTE FUNCTION overview_rollup_requests();

-- The history the page can show (7 days) recounted from the rows, in one transaction with the trigger above.
DELETE FROM overview_hourly WHERE series = 'pending';
INSERT INTO overview_hourly (tenant_id, hour, series, key, shard, count)
SELECT tenant_id, date_trunc('hour', created_at), 'pending', attestor, 0, count(*)
  FROM join_requests
 WHERE created_at >= date_trunc('hour', compute_now()) - interval '8 days'
 GROUP BY 1, 2, 4;
