-- Single sign-on: an operator's subject at the OpenID provider (issuer and `sub`), and where each membership
-- comes from. `sso` memberships follow the provider's groups at every sign-in; `local` ones (first admin,
-- invitations, tenant creation) are only changed by admins.
ALTER TABLE operators ADD COLUMN oidc_subject TEXT;
CREATE UNIQUE INDEX operators_oidc_subject_key ON operators (oidc_subject);
ALTER TABLE memberships ADD COLUMN source TEXT NOT NULL DEFAULT 'local';
ALTER TABLE memberships ADD CONSTRAINT memberships_source_check CHECK (source IN ('local', 'sso'));
