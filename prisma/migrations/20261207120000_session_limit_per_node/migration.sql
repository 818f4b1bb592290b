-- A node holds at most a few live sessions (BETTER_COMPUTE_SESSION_MAX_PER_NODE): a Hello beyond the limit marks
-- the node's oldest sessions replaced, in the transaction that opens the new one under the node's row lock, so
-- the limit holds across API instances and gateways. The gateway that holds a replaced session hears of it at its
-- next lease call, which it makes at once: the mark is announced on `compute_sessions` like any other session end
-- (server/sessions/session-watch.ts). Additive: a release that does not know the column never sets it.
ALTER TABLE "node_sessions" ADD COLUMN "replaced_at" TIMESTAMPTZ(6);

CREATE FUNCTION compute_node_sessions_replaced() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('compute_sessions', json_build_object('gatewayIds', json_build_array(NEW.gateway_id))::text);
  RETURN NULL;
END;
$$;

CREATE TRIGGER node_sessions_replaced
  AFTER UPDATE OF replaced_at ON node_sessions
  FOR EACH ROW
  WHEN (OLD.replaced_at IS NULL AND NEW.replaced_at IS NOT NULL)
  EXECUTE FUNCTION compute_node_sessions_replaced();
