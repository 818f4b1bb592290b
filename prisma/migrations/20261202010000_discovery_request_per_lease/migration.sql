-- Discovery join requests are keyed by the token's lease (site + bound MAC), never by the claims' hardware key
-- (protocol.md "Discovery joins": one discovery token holds at most one live request). Rows written under the
-- old key are re-keyed; where one lease holds several pending requests, the newest stays pending and the
-- others read as expired from now on, as a newer attempt would have left them.
UPDATE "join_requests" j SET "state" = 'expired'
 WHERE j."attestor" = 'discovery' AND j."state" = 'pending' AND j."mac" IS NOT NULL
   AND j."id" <> (SELECT k."id" FROM "join_requests" k
                   WHERE k."attestor" = 'discovery' AND k."state" = 'pending' AND k."site_id" = j."site_id" AND k."mac" = j."mac"
                   ORDER BY k."created_at" DESC, k."id" DESC LIMIT 1);
UPDATE "join_requests" SET "machine_key" = 'mac:' || "site_id" || ':' || "mac"
 WHERE "attestor" = 'discovery' AND "mac" IS NOT NULL AND "machine_key" <> 'mac:' || "site_id" || ':' || "mac";

-- The per-site cap on pending requests (sites.discovery.maxPendingRequests) counts a site's live pending
-- requests in every discovery batch: an index range instead of a walk over the site's whole history.
CREATE INDEX "join_requests_site_pending" ON "join_requests" ("site_id", "expires_at") WHERE "state" = 'pending';
