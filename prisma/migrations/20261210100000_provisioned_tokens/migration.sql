-- A `provisioned` token names the one node it admits (the node a deploy targeted): the join reclaims that
-- node. Only that role carries a node id, and it always does. NOT VALID: rows written before this
-- migration are not re-checked (no release minted `provisioned` tokens); every new or updated row is.
-- No foreign key: the join refuses a token whose node no longer exists, is retired or moved elsewhere.
ALTER TABLE join_tokens ADD COLUMN IF NOT EXISTS node_id text;
ALTER TABLE join_tokens ADD CONSTRAINT join_tokens_node_id_role_check
  CHECK ((role = 'provisioned') = (node_id IS NOT NULL)) NOT VALID;
