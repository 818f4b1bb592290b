-- When a join last spent a use of the token, for the console's token list ("last used 5 min ago"); null
-- until the first join. Written in the same statement that spends the use.
ALTER TABLE "join_tokens" ADD COLUMN "last_used_at" TIMESTAMPTZ(6);
