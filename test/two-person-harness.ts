import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import { generateNodeKeyAndCsr, type NodeKeyAndCsr } from '../agent/keys';
import { createCaller } from '../server/api/root';
import { principalOf, type Principal } from '../server/authz/principal';
import { newId } from '../server/ids';
import { createDiscoveryToken } from '../server/tokens/site-scoped';
import { testDb as db } from './db';
import { randomMac } from './discovery-harness';
import { createTestTenant, type TestTenant } from './fixtures';
import { agentJoin, machineClaims, type JoinHarness } from './join-harness';

/** A real operator row (so the queue can name them) with `role` in the tenant. */
export async function operatorNamed(t: TestTenant, name: string, role: 'approver' | 'operator' | 'admin' = 'approver'): Promise<Principal> {
  const id = newId('op');
  await db().operator.create({
    data: { id, email: `${name.toLowerCase()}-${randomBytes(3).toString('hex')}@example.com`, name, passwordHash: 'x' },
  });
  await db().membership.create({ data: { operatorId: id, tenantId: t.tenantId, role } });
  return principalOf('operator', id, [[t.tenantId, role]]);
}

/** A PXE machine the site's discovery token vouches for: its MAC, token, claims and key. */
export async function pxeMachine(t: TestTenant) {
  const mac = randomMac();
  const created = await createDiscoveryToken(db(), t.admin, { tenantId: t.tenantId, siteId: t.siteId, mac, ttlSeconds: 3600 });
  return { mac, token: created.token!, claims: machineClaims({ macs: [mac] }), keys: generateNodeKeyAndCsr() };
}
export type PxeMachine = Awaited<ReturnType<typeof pxeMachine>>;

/** The machine's discovery join (a pending request, or its admission once approved). */
export const pxeJoin = (h: JoinHarness, m: PxeMachine, keys: NodeKeyAndCsr = m.keys) =>
  agentJoin(h, m.token, m.claims, { role: 'discovery', attestor: 'discovery', expectedRole: 'ramdisk', keys });

/** Joins and expects a pending request: its id. */
export async function pendingRequest(h: JoinHarness, m: PxeMachine): Promise<string> {
  const result = await pxeJoin(h, m);
  expect(result.answer).toMatchObject({ status: 'pending' });
  return (result.answer as unknown as { requestId: string }).requestId;
}

/** A tenant whose site needs two approvals, set through tRPC's sites.update. */
export async function twoPersonTenant(): Promise<TestTenant> {
  const t = await createTestTenant(db());
  const before = await createCaller({ db: db(), principal: t.admin }).sites.get({ tenantId: t.tenantId, siteId: t.siteId });
  expect(before.requiredApprovals).toBe(1);
  const site = await createCaller({ db: db(), principal: t.admin }).sites.update({
    tenantId: t.tenantId,
    siteId: t.siteId,
    requiredApprovals: 2,
  });
  expect(site.requiredApprovals).toBe(2);
  expect(
    await db().auditEntry.findFirst({ where: { tenantId: t.tenantId, action: 'site.updated' }, orderBy: { id: 'desc' } }),
  ).toMatchObject({ data: expect.objectContaining({ requiredApprovals: 2 }) });
  return t;
}
