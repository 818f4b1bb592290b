import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import { principalOf } from '../server/authz/principal';
import { createPool } from '../server/pools/pools';
import { createSite } from '../server/sites/sites';
import { testDb } from './db';
import type { TestTenant } from './fixtures';
import { agentJoin, machineClaims, mintToken, type JoinHarness } from './join-harness';

// Machines and platform pools the join tests start from.

/** Joins `claims` as a new node through a fresh token of `t`'s pool; returns the node id and its certificate serial. */
export async function joinedMachine(h: JoinHarness, t: TestTenant, claims = machineClaims()) {
  const first = await agentJoin(h, (await mintToken(t)).token!, claims);
  expect(first.status).toBe(200);
  const nodeId = first.answer!.nodeId;
  const serial = (await testDb().nodeCert.findFirstOrThrow({ where: { nodeId } })).serial;
  return { claims, nodeId, serial };
}

/**
 * A new platform site of the root tenant with two pools, each as a tenant to mint tokens of: `plain`, and
 * `operated` (policy `kubernetes.platformOperated`).
 */
export async function platformPools(h: JoinHarness) {
  const db = testDb();
  const root = principalOf('operator', 'op_root_test', [[h.rootTenantId, 'admin']]);
  const site = await createSite(db, root, { tenantId: h.rootTenantId, name: `plat-${randomBytes(4).toString('hex')}`, kind: 'platform' });
  const plain = await createPool(db, root, { tenantId: h.rootTenantId, siteId: site.id, name: 'k8s', agent: 'bcd' });
  const operated = await createPool(db, root, {
    tenantId: h.rootTenantId,
    siteId: site.id,
    name: 'k8s-op',
    agent: 'bcd',
    policy: { kubernetes: { platformOperated: true } },
  });
  const asTenant = (pool: typeof plain) => ({ tenantId: h.rootTenantId, admin: root, site, pool }) as unknown as TestTenant;
  return { plain: asTenant(plain), operated: asTenant(operated) };
}
