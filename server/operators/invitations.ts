import { z } from 'zod';
import type { Db, Tx } from '../db/client';
import { sql } from 'kysely';
import { typed } from '../db/typed';
import { lockTenant } from './shared-sql';
import { DomainError } from '../../protocol/errors';
import { newId } from '../ids';
import { idOf } from '../../protocol/api/resource-names';
import { authorize, resource } from '../authz/authorize';
import { ROLES, type Role } from '../../protocol/api/permissions';
import type { Principal } from '../authz/principal';
import { publishEvent, writeAudit } from '../events/publish';
import { getRootTenant } from '../tenants/tenants';
import { hashTokenSecret, newTokenSecret } from '../tokens/secret';
import { operatorEmail } from './email';
import { operatorNames } from './operator-names';
import { mailInvitation, type InvitationMailOutcome } from './invitation-mail';
import type { CreatedInvitation, InvitationRecord } from '../../protocol/api/operator-schemas';

/** How long an invitation link works. */
const INVITATION_TTL_DAYS = 7;

export { acceptInvitation, acceptInvitationInput, describeInvitation, describeInvitationInput } from './accept-invitation';

export const createInvitationInput = z.strictObject({
  tenantId: idOf('tnt'),
  email: operatorEmail,
  role: z.enum(ROLES),
  /** Revoke a pending invitation of the same email in this tenant and invite again (a new link); without it, CONFLICT. */
  replacePending: z.boolean().optional(),
});
export const listInvitationsInput = z.strictObject({ tenantId: idOf('tnt'), includeClosed: z.boolean().optional() });
export const revokeInvitationInput = z.strictObject({ tenantId: idOf('tnt'), invitationId: idOf('inv') });

type Row = {
  id: string;
  tenantId: string;
  email: string;
  role: string;
  createdBy: string;
  createdAt: Date;
  expiresAt: Date;
  acceptedAt: Date | null;
  revokedAt: Date | null;
};
const stateOf = (r: Row, now = new Date()): InvitationRecord['state'] =>
  r.acceptedAt ? 'accepted' : r.revokedAt ? 'revoked' : r.expiresAt <= now ? 'expired' : 'pending';
const toRecord = (r: Row, names: ReadonlyMap<string, string> = new Map()): InvitationRecord => ({
  id: r.id,
  tenantId: r.tenantId,
  email: r.email,
  role: r.role as Role,
  state: stateOf(r),
  createdBy: r.createdBy,
  createdByName: names.get(r.createdBy) ?? null,
  createdAt: r.createdAt.toISOString(),
  expiresAt: r.expiresAt.toISOString(),
  acceptedAt: r.acceptedAt?.toISOString() ?? null,
});

/**
 * Invites a person by email with a role in a tenant (`compute:operators:manage`). The answer carries the
 * one-time token `bcinv_<id>.<secret>` (shown once; only its SHA-256 is stored), valid 7 days. A root tenant
 * admin may also invite the FIRST admin of a tenant nobody can act in yet (no members, no API keys, no
 * pending invitation), counted under the tenant's row lock as the first API key is, so at most one such way
 * in exists; that invitation is refused at acceptance once the tenant has an admin of its own. After that
 * the tenant's own admins decide. An email that is already a member is ALREADY_EXISTS; one with a pending
 * invitation is CONFLICT unless `replacePending` (the old link is revoked, a new one made). With
 * BETTER_COMPUTE_SMTP_URL set, the link is also mailed to the invited address once the invitation is
 * committed (`emailed`); a failed send is reported in `emailError` and leaves the invitation as created.
 * `input` is `createInvitationInput`'s output: its email already trimmed and lower-cased, the form stored and
 * looked up by SSO sign-in.
 */
export async function createInvitation(
  db: Db,
  principal: Principal,
  input: z.infer<typeof createInvitationInput>,
): Promise<CreatedInvitation> {
  let firstAdminOf: { rootTenantId: string; refusal: DomainError; staged: DomainError } | null = null;
  try {
    await authorize(db, principal, 'compute:operators:manage', resource.tenant(input.tenantId));
  } catch (error) {
    const root = await getRootTenant(db);
    if (!root || root.id === input.tenantId || principal.memberships.get(root.id) !== 'admin' || input.role !== 'admin') throw error;
    const tenant = await db.tenant.findUnique({ where: { id: input.tenantId } });
    if (!tenant) throw error;
    // Root admins see every tenant, so saying why hides nothing from them.
    const refusal = new DomainError(
      'ACCESS_DENIED',
      `Tenant ${tenant.name} already has members or API keys: only its own admins invite operators`,
    );
    const staged = new DomainError(
      'ACCESS_DENIED',
      `Tenant ${tenant.name} already has a pending invitation for its first admin: revoke it before staging another`,
    );
    firstAdminOf = { rootTenantId: root.id, refusal, staged };
  }
  const id = newId('inv');
  const secret = newTokenSecret();
  const created = await db.$transaction(async (tx) => {
    // The tenant's row lock: first-admin invitations, first API keys and acceptances of one tenant take turns.
    await lockTenant(tx, input.tenantId);
    if (firstAdminOf) {
      const [members, keys, pending] = await Promise.all([
        tx.membership.count({ where: { tenantId: input.tenantId } }),
        tx.apiKey.count({ where: { tenantId: input.tenantId } }),
        tx.invitation.count({ where: { tenantId: input.tenantId, acceptedAt: null, revokedAt: null, expiresAt: { gt: new Date() } } }),
      ]);
      if (members + keys > 0) throw firstAdminOf.refusal;
      if (pending > 0) throw firstAdminOf.staged;
    }
    if (await tx.membership.findFirst({ where: { tenantId: input.tenantId, operator: { email: input.email } } })) {
      throw new DomainError('ALREADY_EXISTS', `${input.email} is already an operator of this tenant`, { field: 'email' });
    }
    await settlePendingInvitation(tx, principal, input);
    const { expires } = await typed(tx)
      .selectNoFrom(sql<Date>`compute_now() + make_interval(days => ${INVITATION_TTL_DAYS})`.as('expires'))
      .executeTakeFirstOrThrow();
    const row = await tx.invitation.create({
      data: {
        id,
        tenantId: input.tenantId,
        email: input.email,
        role: input.role,
        secretHash: hashTokenSecret(secret),
        createdBy: principal.actor,
        expiresAt: expires!,
        forFirstAdmin: firstAdminOf !== null,
      },
    });
    const data = { invitationId: id, email: input.email, role: input.role };
    await writeAudit(tx, {
      tenantId: firstAdminOf?.rootTenantId ?? input.tenantId,
      actor: principal.actor,
      action: 'operator.invited',
      resource: `compute-invitation/${id}`,
      data: { ...data, tenantId: input.tenantId },
    });
    await publishEvent(tx, { tenantId: input.tenantId, type: 'operator.invited', data: { ...data, by: principal.actor } });
    return { ...toRecord(row), token: `bcinv_${id}.${secret}` };
  });
  // Outside the transaction: no row lock is held across a network round trip, and a send that fails
  // cannot undo the invitation.
  const mail: InvitationMailOutcome = await mailInvitation(db, created);
  return { ...created, ...mail };
}

/** A pending invitation of the same email in the tenant: CONFLICT, or revoked first when the caller asked to replace it. */
async function settlePendingInvitation(tx: Tx, principal: Principal, input: z.infer<typeof createInvitationInput>) {
  const pending = await tx.invitation.findMany({
    where: { tenantId: input.tenantId, email: input.email, acceptedAt: null, revokedAt: null, expiresAt: { gt: new Date() } },
  });
  if (pending.length === 0) return;
  if (!input.replacePending) {
    throw new DomainError(
      'CONFLICT',
      `${input.email} already has a pending invitation to this tenant (until ${pending[0]!.expiresAt.toISOString()}): revoke it, or invite again to replace it with a new link`,
      { field: 'email' },
    );
  }
  for (const old of pending) {
    await tx.invitation.update({ where: { id: old.id }, data: { revokedAt: new Date() } });
    await writeAudit(tx, {
      tenantId: old.tenantId,
      actor: principal.actor,
      action: 'operator.invitation-revoked',
      resource: `compute-invitation/${old.id}`,
      data: { email: old.email, replaced: true },
    });
    await publishEvent(tx, {
      tenantId: old.tenantId,
      type: 'operator.invitation-revoked',
      data: { invitationId: old.id, email: old.email, by: principal.actor },
    });
  }
}

/** A tenant's invitations (`compute:operators:read`), pending ones unless `includeClosed`; never their secrets. */
export async function listInvitations(
  db: Db,
  principal: Principal,
  input: z.infer<typeof listInvitationsInput>,
): Promise<InvitationRecord[]> {
  await authorize(db, principal, 'compute:operators:read', resource.tenant(input.tenantId));
  const rows = await db.invitation.findMany({
    where: {
      tenantId: input.tenantId,
      ...(input.includeClosed ? {} : { acceptedAt: null, revokedAt: null, expiresAt: { gt: new Date() } }),
    },
    orderBy: { createdAt: 'desc' },
  });
  const names = await operatorNames(
    db,
    rows.map((r) => r.createdBy),
  );
  return rows.map((r) => toRecord(r, names));
}

/** Revokes a pending invitation at once; revoking twice is not an error, an accepted one stays accepted. */
export async function revokeInvitation(
  db: Db,
  principal: Principal,
  input: z.infer<typeof revokeInvitationInput>,
): Promise<InvitationRecord> {
  await authorize(db, principal, 'compute:operators:manage', resource.tenant(input.tenantId));
  return db.$transaction(async (tx) => {
    const locked = await typed(tx)
      .selectFrom('invitations')
      .select('id')
      .where('id', '=', input.invitationId)
      .where('tenant_id', '=', input.tenantId)
      .forUpdate()
      .executeTakeFirst();
    if (!locked) throw new DomainError('NOT_FOUND', `Invitation ${input.invitationId} not found`);
    const row = await tx.invitation.findUniqueOrThrow({ where: { id: input.invitationId } });
    if (row.acceptedAt || row.revokedAt) return toRecord(row);
    const revoked = await tx.invitation.update({ where: { id: row.id }, data: { revokedAt: new Date() } });
    await writeAudit(tx, {
      tenantId: row.tenantId,
      actor: principal.actor,
      action: 'operator.invitation-revoked',
      resource: `compute-invitation/${row.id}`,
      data: { email: row.email },
    });
    await publishEvent(tx, {
      tenantId: row.tenantId,
      type: 'operator.invitation-revoked',
      data: { invitationId: row.id, email: row.email, by: principal.actor },
    });
    return toRecord(revoked);
  });
}
