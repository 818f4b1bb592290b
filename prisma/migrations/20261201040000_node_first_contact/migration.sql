-- First contact (joining.md "Adopting a brownfield server"): the identity generation whose first renewal
-- through the gateway published `node.connected`. 0 = none yet; a reclaim raises identity_generation, so the
-- new identity's first renewal publishes it again. A column, not a search of the events, keeps the check to
-- one row under the lock the renewal already holds.
ALTER TABLE "nodes" ADD COLUMN "connected_generation" INTEGER NOT NULL DEFAULT 0;
