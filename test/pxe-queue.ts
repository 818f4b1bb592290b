import { beforeAll, expect } from 'vitest';
import { generateNodeKeyAndCsr, type NodeKeyAndCsr } from '../agent/keys';
import { testDb } from './db';
import type { TestTenant } from './fixtures';
import { agentJoin, createJoinHarness, machineClaims, type JoinHarness } from './join-harness';
import { randomMac } from './discovery-harness';
import type { HardwareClaims } from '../protocol/hardware-claims';
import { createDiscoveryToken } from '../server/tokens/site-scoped';

// The set-up the queue's PXE tests share: a machine with a discovery token, its join, and its pending request.

const db = testDb;

/** A PXE-booted machine: its MAC, claims and one CSR it keeps across retries, and a discovery token for it. */
export async function pxeMachine(t: TestTenant, claims: Partial<HardwareClaims> = {}) {
  const mac = randomMac();
  const created = await createDiscoveryToken(db(), t.admin, {
    tenantId: t.tenantId,
    siteId: t.siteId,
    mac,
    ip: '10.1.2.3',
    workflowId: 'wf-9',
    bootLeaseEpoch: 42,
    ttlSeconds: 3600,
  });
  return {
    mac,
    token: created.token!,
    tokenId: created.id,
    claims: machineClaims({ macs: [mac], ...claims }),
    keys: generateNodeKeyAndCsr(),
  };
}
type Machine = Awaited<ReturnType<typeof pxeMachine>>;
export const ref = (t: TestTenant, requestId: string) => ({ tenantId: t.tenantId, poolId: t.poolId, requestId });
export const refusals = (t: TestTenant) =>
  db().event.findMany({ where: { tenantId: t.tenantId, type: 'security.join.refused' }, orderBy: { id: 'asc' } });

/** A join harness for the file (built before its tests), and a machine's discovery join through it. */
export function pxeQueue() {
  let h: JoinHarness;
  beforeAll(async () => {
    h = await createJoinHarness();
  });
  const join = (m: Machine, keys: NodeKeyAndCsr = m.keys) =>
    agentJoin(h, m.token, m.claims, { role: 'discovery', attestor: 'discovery', expectedRole: 'ramdisk', keys });
  /** Joins once and returns the id of the pending request it left. */
  async function pendingOf(m: Machine) {
    const result = await join(m);
    expect(result.status).toBe(200);
    expect(result.answer).toMatchObject({ status: 'pending', retryAfterSeconds: 30, csrSha256: m.keys.csrSha256 });
    return (result.answer as unknown as { requestId: string }).requestId;
  }
  return { harness: () => h, join, pendingOf };
}
