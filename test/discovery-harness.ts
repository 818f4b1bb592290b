import { randomBytes } from 'node:crypto';
import { testDb } from './db';
import type { TestTenant } from './fixtures';
import { newId } from '../server/ids';
import { issueJoinToken } from '../server/tokens/issue';

/** A random permanent, globally administered MAC. */
export const randomMac = () => `3c:ec:ef:${randomBytes(3).toString('hex').match(/../g)!.join(':')}`;

/** A `discovery` token bound to `mac`, minted the way the boot module mints them (issueJoinToken). */
export async function mintDiscoveryToken(t: TestTenant, mac: string, options: { maxUses?: number; ttlSeconds?: number } = {}) {
  const issued = await testDb().$transaction((tx) =>
    issueJoinToken(tx, {
      tenantId: t.tenantId,
      poolId: null,
      siteId: t.siteId,
      role: 'discovery',
      ttlSeconds: options.ttlSeconds ?? 600,
      maxUses: options.maxUses ?? 1,
      boundMac: mac,
      discovery: { ip: '10.0.0.7', workflowId: 'wf-1', vouchedBy: 'module:boot', bootLeaseEpoch: 7 },
      createdBy: 'module:boot',
    }),
  );
  return { token: issued.token!, id: issued.record.id };
}

/** Makes `mac` a MAC of a node of the tenant's site (as a machine that joined before), so the site knows it. */
export async function insertKnownNode(t: TestTenant, claims: { macs?: string[]; productUuid?: string }, hardwareKey: Buffer | null = null) {
  const id = newId('node');
  await testDb().node.create({
    data: {
      id,
      tenantId: t.tenantId,
      siteId: t.siteId,
      poolId: t.poolId,
      role: 'node',
      state: 'adopted',
      trust: 'tenant-owned',
      claims,
      attestor: 'join-token',
      hardwareKey: hardwareKey ? new Uint8Array(hardwareKey) : null,
      hardwareKeyTrusted: hardwareKey !== null,
    },
  });
  return id;
}
