-- Whether a request's hardware key is trusted (two independent identifiers), written by the join that records
-- the request, so the queue can filter on it in SQL. NULL for requests recorded before this column: the
-- console derives their trust from the claims as before, and the filter counts them as untrusted until a
-- newer attempt refreshes them (a pending request lives 24 hours by default).
ALTER TABLE "join_requests" ADD COLUMN "hardware_key_trusted" BOOLEAN;
