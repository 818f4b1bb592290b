-- Sessions whose certificate stops being valid are announced on `compute_sessions` in the transaction that
-- made the change, so the gateway that holds them ends them at once instead of at its next lease call
-- (server/sessions/session-watch.ts relays the announcement to each gateway). The payload names only the
-- gateways to ask: which sessions end is decided again by the lease call, from the committed rows.
--
-- What ends a session: a certificate revoked (revokeIdentity, delete) or made to expire earlier; a node whose
-- identity generation moved on (a reclaim) or that was retired. Each trigger fires only on those changes (the
-- WHEN clauses), so renewals and joins pay nothing, and it finds the sessions through node_sessions' node index.
CREATE FUNCTION compute_notify_session_end(node text, serial text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('compute_sessions', json_build_object('gatewayIds', array_agg(DISTINCT s.gateway_id))::text)
     FROM node_sessions s
    WHERE s.node_id = node AND (serial IS NULL OR s.cert_serial = serial)
   HAVING count(*) > 0;
END;
$$;

CREATE FUNCTION compute_node_certs_session_end() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM compute_notify_session_end(NEW.node_id, NEW.serial);
  RETURN NULL;
END;
$$;

CREATE TRIGGER node_certs_session_end
  AFTER UPDATE OF revoked_at, not_after ON node_certs
  FOR EACH ROW
  WHEN ((OLD.revoked_at IS NULL AND NEW.revoked_at IS NOT NULL) OR NEW.not_after < OLD.not_after)
  EXECUTE FUNCTION compute_node_certs_session_end();

CREATE FUNCTION compute_nodes_session_end() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM compute_notify_session_end(NEW.id, NULL);
  RETURN NULL;
END;
$$;

CREATE TRIGGER nodes_session_end
  AFTER UPDATE OF identity_generation, state ON nodes
  FOR EACH ROW
  WHEN (NEW.identity_generation <> OLD.identity_generation OR (NEW.state = 'retired' AND OLD.state <> 'retired'))
  EXECUTE FUNCTION compute_nodes_session_end();
