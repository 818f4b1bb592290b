-- An invitation a root admin staged for the first admin of a tenant nobody could act in yet. Refused at
-- acceptance once the tenant has an admin of its own, so a staged link is no way back in after bootstrap.
ALTER TABLE "invitations" ADD COLUMN "for_first_admin" BOOLEAN NOT NULL DEFAULT false;

-- Pending invitations staged that way before this column: audited in the root tenant for another tenant.
UPDATE "invitations" i SET "for_first_admin" = true
 WHERE i.accepted_at IS NULL AND i.revoked_at IS NULL
   AND EXISTS (SELECT 1 FROM audit_log a JOIN tenants r ON r.id = a.tenant_id AND r.is_root
                WHERE a.action = 'operator.invited' AND a.resource = 'compute-invitation/' || i.id
                  AND i.tenant_id <> r.id);
