-- Whether a tpm enrollment's EK certificate chains to a configured vendor root (true), or the EK has no
-- certificate or one that does not chain (false); null for every other attestor's requests. The queue shows
-- it beside the request, and a bulk approval counts the requests that are not vendor-rooted.
ALTER TABLE join_requests ADD COLUMN ek_certified boolean;

-- Existing enrollments, from what their `tpm` facts recorded.
UPDATE join_requests
   SET ek_certified = (tpm->>'ekIssuer' IS DISTINCT FROM 'no EK certificate' AND tpm->>'ekChainProblem' IS NULL)
 WHERE attestor = 'tpm' AND tpm IS NOT NULL;
