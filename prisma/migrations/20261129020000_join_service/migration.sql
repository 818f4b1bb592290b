-- Shared rate limits: one row per key, a fixed window, and the number of hits dropped since the last one
-- let through. Kept in the database so that every API instance shares one limit.
CREATE FUNCTION rate_limit_hit(p_key text, p_limit integer, p_window interval, OUT allowed boolean, OUT suppressed integer)
LANGUAGE plpgsql AS $$
DECLARE
  r rate_limits%ROWTYPE;
  t timestamptz := compute_now();
BEGIN
  INSERT INTO rate_limits (key, window_start, count, suppressed) VALUES (p_key, t, 0, 0) ON CONFLICT (key) DO NOTHING;
  SELECT * INTO r FROM rate_limits WHERE key = p_key FOR UPDATE;
  IF r.window_start <= t - p_window THEN
    r.window_start := t;
    r.count := 0;
  END IF;
  IF r.count < p_limit THEN
    allowed := true;
    suppressed := r.suppressed;
    UPDATE rate_limits SET window_start = r.window_start, count = r.count + 1, suppressed = 0 WHERE key = p_key;
  ELSE
    allowed := false;
    suppressed := r.suppressed + 1;
    UPDATE rate_limits SET window_start = r.window_start, count = r.count + 1, suppressed = r.suppressed + 1 WHERE key = p_key;
  END IF;
END $$;

-- Records refused joins as `security.join.refused` events, at most p_limit per reason key and window;
-- each event carries `suppressed`, the number dropped since the previous one. Runs in its own transaction,
-- so the events survive the rollback of the joins they describe.
CREATE FUNCTION record_join_refusals(p_tenants text[], p_keys text[], p_data jsonb[], p_limit integer, p_window interval)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
  i integer;
  hit record;
  written integer := 0;
BEGIN
  FOR i IN 1 .. coalesce(array_length(p_keys, 1), 0) LOOP
    SELECT * INTO hit FROM rate_limit_hit(p_keys[i], p_limit, p_window);
    IF hit.allowed THEN
      INSERT INTO events (tenant_id, type, data)
      VALUES (p_tenants[i], 'security.join.refused', p_data[i] || jsonb_build_object('suppressed', hit.suppressed));
      written := written + 1;
    END IF;
  END LOOP;
  RETURN written;
END $$;
