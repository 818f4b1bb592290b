import type { Db, Tx } from '../db/client';
import { typed } from '../db/typed';
import { computeNow } from './shared-sql';
import { newId } from '../ids';
import { ROLES, type Role } from '../../protocol/api/permissions';
import type { GroupMapping } from '../auth/oidc-config';
import { publishEvent, writeAudit } from '../events/publish';
import { logLimited } from '../log';
import { operatorEmail } from './email';
import { needsExplicitSsoLink, stageSsoLink } from './sso-link';

/** What the OpenID provider said about the person, from a verified ID token. */
interface SsoIdentity {
  issuer: string;
  subject: string;
  email: string;
  emailVerified: boolean;
  name: string | null;
  groups: readonly string[];
}

type SsoSignIn =
  | { ok: true; operatorId: string; email: string; name: string; sessionVersion: number }
  /** `unverified`: the provider did not vouch for the email; `no-access`: no group maps and no invitation or other membership. */
  | { ok: false; reason: 'unverified' | 'no-access' }
  /** An operator with a password (or a root admin) has the email: its password must complete `linkToken` first. */
  | { ok: false; reason: 'link-required'; linkToken: string };

/** Operators never sign in with this as a password: verifyPassword refuses anything not `scrypt$…`. */
const NO_PASSWORD = 'sso-only';

const rank = (role: Role) => ROLES.indexOf(role);

/** The memberships the groups give, by tenant name: where two groups name one tenant, the stronger role. */
export function mappedRoles(groups: readonly string[], roleMap: ReadonlyMap<string, readonly GroupMapping[]>): Map<string, Role> {
  const roles = new Map<string, Role>();
  for (const group of groups) {
    for (const { tenant, role } of roleMap.get(group) ?? []) {
      const current = roles.get(tenant);
      if (!current || rank(role) < rank(current)) roles.set(tenant, role);
    }
  }
  return roles;
}

/**
 * Signs a person in through OpenID Connect. The provider is the authority on SSO memberships: each sign-in
 * creates, re-roles and removes the operator's `sso` memberships to match the groups (a group removed at the
 * provider removes its membership now). `local` memberships (invitations, the first admin) stay as admins
 * set them. A pending invitation for the same verified email is accepted here too. An existing operator is
 * found by its linked subject; by the verified email only when it has no password of its own and is no root
 * admin; otherwise the sign-in stages a link the account's password completes (sso-link.ts). Nobody is created whose
 * groups map to nothing and who has no invitation: they get `no-access`. All in one transaction, the
 * operator's row locked, so two sign-ins of one person take turns; every change is audited and published.
 */
export async function signInWithSso(
  db: Db,
  identity: SsoIdentity,
  roleMap: ReadonlyMap<string, readonly GroupMapping[]>,
): Promise<SsoSignIn> {
  if (!identity.emailVerified) return { ok: false, reason: 'unverified' };
  const email = operatorEmail.safeParse(identity.email);
  if (!email.success) return { ok: false, reason: 'unverified' };
  const subject = `${identity.issuer} ${identity.subject}`;
  const wanted = mappedRoles(identity.groups, roleMap);
  const tenants = wanted.size
    ? await db.tenant.findMany({ where: { name: { in: [...wanted.keys()] } }, select: { id: true, name: true } })
    : [];
  for (const name of wanted.keys()) {
    if (!tenants.some((t) => t.name === name))
      logLimited(`oidc-unknown-tenant:${name}`, `BETTER_COMPUTE_OIDC_ROLE_MAP names tenant ${name}, which does not exist`);
  }
  const wantedById = new Map(tenants.map((t) => [t.id, wanted.get(t.name)!]));
  const actor = `sso:${identity.issuer}`;

  return db.$transaction(async (tx) => {
    // By subject first; else the same verified email (an invited or password operator now using SSO).
    const lockOperator = (by: 'oidc_subject' | 'email', value: string) =>
      typed(tx)
        .selectFrom('operators')
        .select(['id', 'email', 'name', 'oidc_subject'])
        .where(by, '=', value)
        .forUpdate()
        .executeTakeFirst();
    let operator = await lockOperator('oidc_subject', subject);
    if (!operator) {
      operator = await lockOperator('email', email.data);
      // Another subject already holds this email: the provider re-issued it to someone else. Not the same person.
      if (operator?.oidc_subject && operator.oidc_subject !== subject) return { ok: false, reason: 'no-access' } as const;
      // The email alone never takes over an account with a password, or a root admin: its password links it.
      if (operator && !operator.oidc_subject && (await needsExplicitSsoLink(tx, operator.id))) {
        return { ok: false, reason: 'link-required', linkToken: await stageSsoLink(tx, operator.id, subject) } as const;
      }
    }
    const invitations = await typed(tx)
      .selectFrom('invitations')
      .select(['id', 'tenant_id', 'role'])
      .where('email', '=', email.data)
      .where('accepted_at', 'is', null)
      .where('revoked_at', 'is', null)
      .where('expires_at', '>', computeNow)
      .orderBy('created_at')
      .forUpdate()
      .execute();
    const existing = operator ? await tx.membership.findMany({ where: { operatorId: operator.id } }) : [];
    if (!operator && wantedById.size === 0 && invitations.length === 0) return { ok: false, reason: 'no-access' } as const;

    if (!operator) {
      const created = await tx.operator.create({
        data: {
          id: newId('op'),
          email: email.data,
          name: identity.name?.trim() || email.data,
          passwordHash: NO_PASSWORD,
          oidcSubject: subject,
        },
      });
      operator = { id: created.id, email: created.email, name: created.name, oidc_subject: subject };
    } else if (!operator.oidc_subject) {
      await tx.operator.update({ where: { id: operator.id }, data: { oidcSubject: subject } });
    }
    const operatorId = operator.id;
    await syncSsoMemberships(tx, operatorId, existing, wantedById, actor);
    for (const invitation of invitations) await acceptBySso(tx, operatorId, email.data, invitation, existing);

    const remaining = await tx.membership.count({ where: { operatorId } });
    if (remaining === 0) {
      // The groups that gave access are gone: the removals above stand, the sign-in does not.
      return { ok: false, reason: 'no-access' } as const;
    }
    const row = await tx.operator.update({ where: { id: operatorId }, data: { lastSignInAt: new Date() } });
    return { ok: true, operatorId, email: row.email, name: row.name, sessionVersion: row.sessionVersion } as const;
  });
}

type MembershipRow = { tenantId: string; role: string; source: string };

/** Makes the operator's `sso` memberships those of `wanted` (tenant id → role); `local` ones are left alone. */
async function syncSsoMemberships(tx: Tx, operatorId: string, existing: MembershipRow[], wanted: Map<string, Role>, actor: string) {
  const resourceOf = `compute-operator/${operatorId}`;
  for (const m of existing) {
    if (m.source !== 'sso') continue;
    const role = wanted.get(m.tenantId);
    if (!role) {
      await tx.membership.delete({ where: { operatorId_tenantId: { operatorId, tenantId: m.tenantId } } });
      const data = { operatorId, role: m.role, via: 'sso' };
      await writeAudit(tx, { tenantId: m.tenantId, actor, action: 'operator.removed', resource: resourceOf, data });
      await publishEvent(tx, { tenantId: m.tenantId, type: 'operator.removed', data: { ...data, by: actor } });
    } else if (role !== m.role) {
      await tx.membership.update({ where: { operatorId_tenantId: { operatorId, tenantId: m.tenantId } }, data: { role } });
      const data = { operatorId, from: m.role, to: role, via: 'sso' };
      await writeAudit(tx, { tenantId: m.tenantId, actor, action: 'operator.role-changed', resource: resourceOf, data });
      await publishEvent(tx, { tenantId: m.tenantId, type: 'operator.role-changed', data: { ...data, by: actor } });
    }
  }
  for (const [tenantId, role] of wanted) {
    if (existing.some((m) => m.tenantId === tenantId)) continue;
    await tx.membership.create({ data: { operatorId, tenantId, role, source: 'sso' } });
    const data = { operatorId, role, via: 'sso' };
    await writeAudit(tx, { tenantId, actor, action: 'operator.joined', resource: resourceOf, data });
    await publishEvent(tx, { tenantId, type: 'operator.joined', data });
  }
}

/** An invitation for the SSO-verified email, spent as if accepted with a password: a `local` membership. */
async function acceptBySso(
  tx: Tx,
  operatorId: string,
  email: string,
  invitation: { id: string; tenant_id: string; role: string },
  existing: MembershipRow[],
) {
  const current = existing.find((m) => m.tenantId === invitation.tenant_id);
  await tx.membership.upsert({
    where: { operatorId_tenantId: { operatorId, tenantId: invitation.tenant_id } },
    create: { operatorId, tenantId: invitation.tenant_id, role: invitation.role, source: 'local' },
    // The invitation makes the membership the admin's to manage, no longer the provider's.
    update: { role: invitation.role, source: 'local' },
  });
  if (current) current.source = 'local';
  await tx.invitation.update({ where: { id: invitation.id }, data: { acceptedAt: new Date(), acceptedBy: operatorId } });
  const data = { invitationId: invitation.id, operatorId, email, role: invitation.role, via: 'sso' };
  await writeAudit(tx, {
    tenantId: invitation.tenant_id,
    actor: `operator:${operatorId}`,
    action: 'operator.joined',
    resource: `compute-operator/${operatorId}`,
    data,
  });
  await publishEvent(tx, { tenantId: invitation.tenant_id, type: 'operator.joined', data });
}
