-- A pool's stale-node policy (policy.staleNodes) cordons a node whose last session ended long ago, then retires
-- it. stale_cordoned_at is when the policy cordoned it: the retire step counts its days from there, and a node
-- whose session ended after it (it came back and left again) starts over.
ALTER TABLE nodes ADD COLUMN IF NOT EXISTS stale_cordoned_at timestamptz(6);
-- The policy's sweep reads a pool's nodes by when their last session ended.
CREATE INDEX IF NOT EXISTS nodes_pool_session_ended ON nodes (pool_id, session_ended_at) WHERE session_ended_at IS NOT NULL AND state <> 'retired';
