-- The command kinds a certificate of a restricted role accepts, whoever wrote its row. `allowed_kinds` is null
-- (no restriction) on every certificate issued before the column existed, and on those a release without it
-- issues during a rolling upgrade; renewals copy the value forward. A tenant-controlled node's certificate
-- (`node-tenant`) accepts no platform command and a ramdisk's only `bcd.doctor` (server/commands/allowed-kinds.ts),
-- so those rows get their role's list now, and every row inserted without one gets it from this trigger.
-- Written to run again unchanged (the test that checks the backfill does).
UPDATE node_certs SET allowed_kinds = '{}' WHERE role = 'node-tenant' AND allowed_kinds IS NULL;
UPDATE node_certs SET allowed_kinds = '{bcd.doctor}' WHERE role = 'ramdisk' AND allowed_kinds IS NULL;

CREATE OR REPLACE FUNCTION node_certs_role_allowed_kinds() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.allowed_kinds := CASE NEW.role WHEN 'node-tenant' THEN '{}'::text[] WHEN 'ramdisk' THEN '{bcd.doctor}'::text[] END;
  RETURN NEW;
END
$$;

CREATE OR REPLACE TRIGGER node_certs_role_allowed_kinds BEFORE INSERT ON node_certs
  FOR EACH ROW WHEN (NEW.allowed_kinds IS NULL AND NEW.role IN ('node-tenant', 'ramdisk'))
  EXECUTE FUNCTION node_certs_role_allowed_kinds();
