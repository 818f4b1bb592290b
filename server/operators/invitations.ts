import { z } from 'zod';
import type { Db } from '../db/client';
import { DomainError } from '../../protocol/errors';
import { newId } from '../ids';
import { idOf } from '../../protocol/api/resource-names';
import { authorize, resource } from '../authz/authorize';
import { ROLES, type Role } from '../../protocol/api/permissions';
import type { Principal } from '../authz/principal';
import { publishEvent, writeAudit } from '../events/publish';
import { getRootTenant } from '../tenants/tenants';
import { hashTokenSecret, newTokenSecret, tokenSecretMatches } from '../tokens/secret';
import { operatorEmail } from './email';
import { operatorNames } from './operator-names';
import { MIN_PASSWORD_LENGTH } from './change-password';
import { hashPassword, verifyPassword } from './password';
import { mailInvitation, type InvitationMailOutcome } from './invitation-mail';
import type { CreatedInvitation, InvitationRecord } from '../../protocol/api/operator-schemas';

/** How long an invitation link works. */
const INVITATION_TTL_DAYS = 7;

export const createInvitationInput = z.strictObject({ tenantId: idOf('tnt'), email: operatorEmail, role: z.enum(ROLES) });
export const listInvitationsInput = z.strictObject({ tenantId: idOf('tnt'), includeClosed: z.boolean().optional() });
export const revokeInvitationInput = z.strictObject({ tenantId: idOf('tnt'), invitationId: idOf('inv') });
export const acceptInvitationInput = z.strictObject({
  token: z.string().min(1).max(200),
  /** A new operator's name and password; an existing operator gives their current password instead. */
  name: z.string().trim().min(1).max(100).optional(),
  password: z.string().min(1).max(1024),
});

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

const TOKEN_PATTERN = /^bcinv_(inv_[0-9a-z]{26})\.([A-Za-z0-9_-]{43})$/;

/**
 * Invites a person by email with a role in a tenant (`compute:operators:manage`). The answer carries the
 * one-time token `bcinv_<id>.<secret>` (shown once; only its SHA-256 is stored), valid 7 days. A root tenant
 * admin may also invite the FIRST admin of a tenant nobody can act in yet (no members, no API keys), as
 * with its first API key; after that the tenant's own admins decide. With BETTER_COMPUTE_SMTP_URL set, the
 * link is also mailed to the invited address once the invitation is committed (`emailed`); a failed send is
 * reported in `emailError` and leaves the invitation as created. `input` is `createInvitationInput`'s output:
 * its email already trimmed and lower-cased, the form stored and looked up by SSO sign-in.
 */
export async function createInvitation(
  db: Db,
  principal: Principal,
  input: z.infer<typeof createInvitationInput>,
): Promise<CreatedInvitation> {
  let auditTenantId = input.tenantId;
  try {
    await authorize(db, principal, 'compute:operators:manage', resource.tenant(input.tenantId));
  } catch (error) {
    const root = await getRootTenant(db);
    if (!root || root.id === input.tenantId || principal.memberships.get(root.id) !== 'admin' || input.role !== 'admin') throw error;
    const [tenant, members, keys] = await Promise.all([
      db.tenant.findUnique({ where: { id: input.tenantId } }),
      db.membership.count({ where: { tenantId: input.tenantId } }),
      db.apiKey.count({ where: { tenantId: input.tenantId } }),
    ]);
    if (!tenant) throw error;
    // Root admins see every tenant, so saying why hides nothing from them.
    if (members + keys > 0) {
      throw new DomainError('ACCESS_DENIED', `Tenant ${tenant.name} already has members or API keys: only its own admins invite operators`);
    }
    auditTenantId = root.id;
  }
  const id = newId('inv');
  const secret = newTokenSecret();
  const created = await db.$transaction(async (tx) => {
    if (await tx.membership.findFirst({ where: { tenantId: input.tenantId, operator: { email: input.email } } })) {
      throw new DomainError('ALREADY_EXISTS', `${input.email} is already an operator of this tenant`, { field: 'email' });
    }
    // A SELECT without FROM answers exactly one row.
    const { expires } = (
      await tx.$queryRaw<{ expires: Date }[]>`SELECT compute_now() + make_interval(days => ${INVITATION_TTL_DAYS}) AS expires`
    )[0]!;
    const row = await tx.invitation.create({
      data: {
        id,
        tenantId: input.tenantId,
        email: input.email,
        role: input.role,
        secretHash: hashTokenSecret(secret),
        createdBy: principal.actor,
        expiresAt: expires!,
      },
    });
    const data = { invitationId: id, email: input.email, role: input.role };
    await writeAudit(tx, {
      tenantId: auditTenantId,
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
    const [locked] = await tx.$queryRaw<
      { id: string }[]
    >`SELECT id FROM invitations WHERE id = ${input.invitationId} AND tenant_id = ${input.tenantId} FOR UPDATE`;
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

const unusable = () =>
  new DomainError('NOT_FOUND', 'This invitation link is not valid: it was used, revoked or has expired, or it was mistyped');

/**
 * Accepts an invitation (no session needed: the token is the proof). A new person sets a name and a
 * password; someone who already is an operator proves it with their current password and gains the
 * membership. The invitation is spent in the same transaction (row lock), so a link works exactly once.
 */
export async function acceptInvitation(
  db: Db,
  input: z.infer<typeof acceptInvitationInput>,
): Promise<{ operatorId: string; email: string; tenantId: string; role: Role }> {
  const match = TOKEN_PATTERN.exec(input.token.trim());
  if (!match) throw unusable();
  const passwordHash = await hashPassword(input.password);
  return db.$transaction(async (tx) => {
    const [row] = await tx.$queryRaw<
      { id: string; tenant_id: string; email: string; role: string; secret_hash: Uint8Array; usable: boolean }[]
    >`
      SELECT id, tenant_id, email, role, secret_hash,
             (accepted_at IS NULL AND revoked_at IS NULL AND expires_at > compute_now()) AS usable
        FROM invitations WHERE id = ${match[1]} FOR UPDATE`;
    if (!row || !tokenSecretMatches(row.secret_hash, match[2]!) || !row.usable) throw unusable();
    let operator = await tx.operator.findUnique({ where: { email: row.email } });
    if (operator) {
      if (!(await verifyPassword(input.password, operator.passwordHash))) {
        throw new DomainError('INVALID_ARGUMENT', `password: ${row.email} already has an account; give its current password`, {
          field: 'password',
        });
      }
    } else {
      if (!input.name) throw new DomainError('INVALID_ARGUMENT', 'name: give your name', { field: 'name' });
      if (input.password.length < MIN_PASSWORD_LENGTH) {
        throw new DomainError('INVALID_ARGUMENT', `password: use at least ${MIN_PASSWORD_LENGTH} characters`, { field: 'password' });
      }
      operator = await tx.operator.create({ data: { id: newId('op'), email: row.email, name: input.name, passwordHash } });
    }
    await tx.membership.upsert({
      where: { operatorId_tenantId: { operatorId: operator.id, tenantId: row.tenant_id } },
      create: { operatorId: operator.id, tenantId: row.tenant_id, role: row.role },
      update: { role: row.role },
    });
    await tx.invitation.update({ where: { id: row.id }, data: { acceptedAt: new Date(), acceptedBy: operator.id } });
    const actor = `operator:${operator.id}`;
    const data = { invitationId: row.id, operatorId: operator.id, email: row.email, role: row.role };
    await writeAudit(tx, { tenantId: row.tenant_id, actor, action: 'operator.joined', resource: `compute-operator/${operator.id}`, data });
    await publishEvent(tx, { tenantId: row.tenant_id, type: 'operator.joined', data });
    return { operatorId: operator.id, email: row.email, tenantId: row.tenant_id, role: row.role as Role };
  });
}
