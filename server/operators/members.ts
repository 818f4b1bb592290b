import { z } from 'zod';
import type { Db, Tx } from '../db/client';
import { typed } from '../db/typed';
import { DomainError } from '../../protocol/errors';
import { idOf } from '../../protocol/api/resource-names';
import { authorize, resource } from '../authz/authorize';
import { ROLES, type Role } from '../../protocol/api/permissions';
import type { Principal } from '../authz/principal';
import { publishEvent, writeAudit } from '../events/publish';
import type { OperatorRecord } from '../../protocol/api/operator-schemas';

export const listOperatorsInput = z.strictObject({ tenantId: idOf('tnt') });
export const setOperatorRoleInput = z.strictObject({ tenantId: idOf('tnt'), operatorId: idOf('op'), role: z.enum(ROLES) });
export const removeOperatorInput = z.strictObject({ tenantId: idOf('tnt'), operatorId: idOf('op') });

type MembershipRow = {
  role: string;
  source: string;
  createdAt: Date;
  operator: { id: string; email: string; name: string; lastSignInAt: Date | null; passwordHash: string; oidcSubject: string | null };
};
const signInOf = (o: MembershipRow['operator']): OperatorRecord['signIn'] => {
  const hasPassword = o.passwordHash.startsWith('scrypt$');
  return o.oidcSubject ? (hasPassword ? 'password-and-sso' : 'sso') : 'password';
};
const toRecord = (m: MembershipRow): OperatorRecord => ({
  id: m.operator.id,
  email: m.operator.email,
  name: m.operator.name,
  role: m.role as Role,
  signIn: signInOf(m.operator),
  source: m.source === 'sso' ? 'sso' : 'local',
  lastSignInAt: m.operator.lastSignInAt?.toISOString() ?? null,
  memberSince: m.createdAt.toISOString(),
});

/** The operators of a tenant (`compute:operators:read`, admins), by email. */
export async function listOperators(db: Db, principal: Principal, input: z.infer<typeof listOperatorsInput>): Promise<OperatorRecord[]> {
  await authorize(db, principal, 'compute:operators:read', resource.tenant(input.tenantId));
  const rows = await db.membership.findMany({
    where: { tenantId: input.tenantId },
    include: { operator: true },
    orderBy: { operator: { email: 'asc' } },
  });
  return rows.map(toRecord);
}

/**
 * Locks the tenant's memberships and answers the one of `operatorId` and how many admins the tenant has:
 * two admins demoting or removing each other take turns, so the last admin always stays.
 */
async function lockMembership(tx: Tx, tenantId: string, operatorId: string) {
  const rows = await typed(tx)
    .selectFrom('memberships')
    .select(['operator_id', 'role'])
    .where('tenant_id', '=', tenantId)
    .orderBy('operator_id')
    .forUpdate()
    .execute();
  const membership = rows.find((r) => r.operator_id === operatorId);
  if (!membership) throw new DomainError('NOT_FOUND', `Operator ${operatorId} not found`);
  return { role: membership.role as Role, admins: rows.filter((r) => r.role === 'admin').length };
}

const lastAdmin = () => new DomainError('INVALID_STATE', 'This is the last admin of the tenant: make another operator admin first');

/**
 * Changes an operator's role in a tenant (`compute:operators:manage`). The last admin cannot be demoted.
 * The role is read fresh on every request and by every open stream, so it applies at once everywhere.
 */
export async function setOperatorRole(db: Db, principal: Principal, input: z.infer<typeof setOperatorRoleInput>): Promise<OperatorRecord> {
  await authorize(db, principal, 'compute:operators:manage', resource.tenant(input.tenantId));
  return db.$transaction(async (tx) => {
    const current = await lockMembership(tx, input.tenantId, input.operatorId);
    if (current.role === 'admin' && input.role !== 'admin' && current.admins <= 1) throw lastAdmin();
    if (current.role !== input.role) {
      await tx.membership.update({
        where: { operatorId_tenantId: { operatorId: input.operatorId, tenantId: input.tenantId } },
        data: { role: input.role },
      });
      await recordMembershipChange(tx, principal, input.tenantId, 'operator.role-changed', {
        operatorId: input.operatorId,
        from: current.role,
        to: input.role,
      });
    }
    const row = await tx.membership.findUniqueOrThrow({
      where: { operatorId_tenantId: { operatorId: input.operatorId, tenantId: input.tenantId } },
      include: { operator: true },
    });
    return toRecord(row);
  });
}

/** A membership change of `data.operatorId` in `tenantId`: its audit row, and its event naming who made it. */
async function recordMembershipChange(
  tx: Tx,
  principal: Principal,
  tenantId: string,
  action: 'operator.role-changed' | 'operator.removed',
  data: { operatorId: string; [field: string]: unknown },
): Promise<void> {
  await writeAudit(tx, { tenantId, actor: principal.actor, action, resource: `compute-operator/${data.operatorId}`, data });
  await publishEvent(tx, { tenantId, type: action, data: { ...data, by: principal.actor } });
}

/**
 * Removes an operator from a tenant (`compute:operators:manage`) and ends every session of theirs at once,
 * on every instance (the session version moves on). The last admin cannot be removed.
 */
export async function removeOperator(db: Db, principal: Principal, input: z.infer<typeof removeOperatorInput>): Promise<{ removed: true }> {
  await authorize(db, principal, 'compute:operators:manage', resource.tenant(input.tenantId));
  await db.$transaction(async (tx) => {
    const current = await lockMembership(tx, input.tenantId, input.operatorId);
    if (current.role === 'admin' && current.admins <= 1) throw lastAdmin();
    await tx.membership.delete({ where: { operatorId_tenantId: { operatorId: input.operatorId, tenantId: input.tenantId } } });
    await tx.operator.update({ where: { id: input.operatorId }, data: { sessionVersion: { increment: 1 } } });
    await recordMembershipChange(tx, principal, input.tenantId, 'operator.removed', { operatorId: input.operatorId, role: current.role });
  });
  return { removed: true };
}
