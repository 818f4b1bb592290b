-- An optional name and description an operator gives a token, and who revoked it (as audit rows name callers).
ALTER TABLE "join_tokens" ADD COLUMN "name" TEXT;
ALTER TABLE "join_tokens" ADD COLUMN "description" TEXT;
ALTER TABLE "join_tokens" ADD COLUMN "revoked_by" TEXT;
