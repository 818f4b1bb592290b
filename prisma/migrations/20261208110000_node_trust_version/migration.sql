-- The trust set version each node's agent holds: what its last Hello reported, or a newer version one of its
-- sessions was sent since (a `trust` event after the welcome, or to every open session when the set changes),
-- and when that was recorded. Null: the node has said no Hello since this column exists.
ALTER TABLE nodes ADD COLUMN IF NOT EXISTS trust_version integer;
ALTER TABLE nodes ADD COLUMN IF NOT EXISTS trust_version_at timestamptz(6);

-- The version each open session holds (reported by its Hello, or sent on it since): a gateway's lease call
-- carries the trust set to its sessions below the server's version, and marks them, so each session hears a
-- change once. Sessions opened before this column existed count as holding none (their agents ignore an
-- event they do not know). The index keeps that look to an empty range once every session caught up.
ALTER TABLE node_sessions ADD COLUMN IF NOT EXISTS trust_version integer NOT NULL DEFAULT 0;
CREATE INDEX IF NOT EXISTS node_sessions_gateway_id_trust_version_idx ON node_sessions (gateway_id, trust_version);
