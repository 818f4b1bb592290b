-- Two operators for one decision (optional per site): how many different principals must approve a join
-- request before it admits (1 or 2), and the first of two approvals, kept on the pending request.
ALTER TABLE sites ADD COLUMN required_approvals smallint NOT NULL DEFAULT 1
  CONSTRAINT sites_required_approvals_check CHECK (required_approvals IN (1, 2));

ALTER TABLE join_requests
  ADD COLUMN first_approved_by text,
  ADD COLUMN first_approved_at timestamptz(6),
  ADD COLUMN first_approval_pool_id text;
