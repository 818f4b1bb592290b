-- A `provisioned` token names the one node it admits (the node a deploy targeted): the join reclaims that
-- node. Only that role carries a node id, and it always does: issueJoinToken (server/tokens/issue.ts), the one
-- function that writes tokens, refuses anything else. Not a CHECK constraint: one naming the existing `role`
-- column would tighten what the previous release may write during a rolling upgrade.
-- No foreign key: the join refuses a token whose node no longer exists, is retired or moved elsewhere.
ALTER TABLE join_tokens ADD COLUMN IF NOT EXISTS node_id text;
