import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateNodeKeyAndCsr } from '../../agent/keys';
import { testDatabaseUrl, testDb } from '../../test/db';
import { captureStderr, createTestTenant, expectNoSecretLeaks } from '../../test/fixtures';
import { agentJoin, createJoinHarness, machineClaims, type JoinHarness } from '../../test/join-harness';
import { randomMac } from '../../test/discovery-harness';
import { createDiscoveryToken } from '../tokens/site-scoped';
import { approveJoinRequest } from './decisions';
import { listJoinRequests } from './list';
import { JoinRequestListener, watchJoinRequests, type JoinRequestChange } from './listener';

let h: JoinHarness;
// Two listeners on their own connections: as two server instances would hold them.
const listeners: JoinRequestListener[] = [];
beforeAll(async () => {
  h = await createJoinHarness();
});
afterAll(async () => {
  await Promise.all(listeners.map((l) => l.close()));
});

describe('joinRequests.onChange', () => {
  it('reaches a subscriber of a second instance when a request is recorded and decided, and only for its own site', async () => {
    const t = await createTestTenant(testDb());
    const other = await createTestTenant(testDb());
    const listener = new JoinRequestListener(testDatabaseUrl());
    listeners.push(listener);
    const abort = new AbortController();
    const seen: JoinRequestChange[] = [];
    const watch = (async () => {
      for await (const change of watchJoinRequests(listener, { tenantId: t.tenantId, siteId: t.siteId }, abort.signal)) {
        seen.push(change);
        if (seen.length === 2) abort.abort();
      }
    })();
    // Let the subscription's LISTEN be in place before anything changes.
    await new Promise((resolve) => setTimeout(resolve, 200));
    const otherMac = randomMac();
    const otherToken = (
      await createDiscoveryToken(testDb(), other.admin, { tenantId: other.tenantId, siteId: other.siteId, mac: otherMac, ttlSeconds: 3600 })
    ).token!;
    await agentJoin(h, otherToken, machineClaims({ macs: [otherMac] }), { role: 'discovery', attestor: 'discovery' });

    const mac = randomMac();
    const token = (await createDiscoveryToken(testDb(), t.admin, { tenantId: t.tenantId, siteId: t.siteId, mac, ttlSeconds: 3600 })).token!;
    const pending = await agentJoin(h, token, machineClaims({ macs: [mac] }), {
      role: 'discovery',
      attestor: 'discovery',
      keys: generateNodeKeyAndCsr(),
    });
    const requestId = (pending.answer as unknown as { requestId: string }).requestId;
    await approveJoinRequest(testDb(), t.operator, { ttlSeconds: 3600, tenantId: t.tenantId, poolId: t.poolId, requestId });
    await Promise.race([watch, new Promise((_, reject) => setTimeout(() => reject(new Error('no notification within 10 s')), 10_000))]);
    expect(seen).toEqual([
      { tenantId: t.tenantId, siteId: t.siteId, requestIds: [requestId] },
      { tenantId: t.tenantId, siteId: t.siteId, requestIds: [requestId] },
    ]);
  });
});

describe('secrets', () => {
  it('never puts a discovery token or its hash in logs, events, audit rows or list answers', async () => {
    const stderr = captureStderr();
    try {
      const t = await createTestTenant(testDb());
      const tokens: string[] = [];
      for (let i = 0; i < 3; i++) {
        const mac = randomMac();
        const token = (
          await createDiscoveryToken(testDb(), t.admin, { tenantId: t.tenantId, siteId: t.siteId, mac, ip: '10.0.0.1', ttlSeconds: 3600 })
        ).token!;
        tokens.push(token);
        const keys = generateNodeKeyAndCsr();
        const claims = machineClaims({ macs: [mac] });
        const first = await agentJoin(h, token, claims, { role: 'discovery', attestor: 'discovery', keys });
        if (i === 0) {
          const requestId = (first.answer as unknown as { requestId: string }).requestId;
          await approveJoinRequest(testDb(), t.operator, { ttlSeconds: 3600, tenantId: t.tenantId, poolId: t.poolId, requestId });
          expect(
            (await agentJoin(h, token, claims, { role: 'discovery', attestor: 'discovery', expectedRole: 'ramdisk', keys })).status,
          ).toBe(200);
        }
        // A refusal too (another machine's MAC), whose event must carry hashes only.
        await agentJoin(h, token, machineClaims(), { role: 'discovery', attestor: 'discovery' });
      }
      const list = await listJoinRequests(testDb(), t.viewer, { tenantId: t.tenantId, poolId: t.poolId, state: 'all' });
      expect(list.items.map((r) => r.state).sort(), JSON.stringify(list.items.map((r) => [r.mac, r.state, r.csrSha256]))).toEqual([
        'consumed',
        'pending',
        'pending',
      ]);
      await expectNoSecretLeaks(testDb(), tokens, [JSON.stringify(list), ...stderr.lines]);
    } finally {
      stderr.stop();
    }
  });
});
