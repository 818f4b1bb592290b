-- A rule can be switched off without losing its place or its admission count.
ALTER TABLE "approval_rules" ADD COLUMN "enabled" BOOLEAN NOT NULL DEFAULT true;
-- The address the join came from (the socket's peer, the proxy's client, or what the gateway vouched for).
ALTER TABLE "join_requests" ADD COLUMN "client_address" TEXT;
