-- Every console session carries the operator's session version in its JWT and is checked against this
-- column on every request: sign-out, a password reset or a removal bumps it and so ends every session of
-- the operator at once, on every instance (the column is the one shared state).
ALTER TABLE "operators" ADD COLUMN "session_version" INTEGER NOT NULL DEFAULT 1;
