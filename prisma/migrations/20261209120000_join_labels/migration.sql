-- Labels given at join (`key=value`, protocol/api/labels.ts): a join token, an approval rule, an expected
-- machine and an approval may carry them; the admission copies them onto the node in the join transaction
-- (token < rule < expected machine < approval, later keys override). Never on the certificate, never
-- authorization. Additive: the previous release's inserts leave them at their default.
ALTER TABLE join_tokens ADD COLUMN IF NOT EXISTS labels jsonb NOT NULL DEFAULT '{}'::jsonb;
ALTER TABLE approval_rules ADD COLUMN IF NOT EXISTS labels jsonb NOT NULL DEFAULT '{}'::jsonb;
ALTER TABLE expected_machines ADD COLUMN IF NOT EXISTS labels jsonb NOT NULL DEFAULT '{}'::jsonb;
-- What the approvals of a request gave (the second of two merges over the first); dropped with a first
-- approval when the machine presents a new CSR.
ALTER TABLE join_requests ADD COLUMN IF NOT EXISTS approval_labels jsonb NOT NULL DEFAULT '{}'::jsonb;
