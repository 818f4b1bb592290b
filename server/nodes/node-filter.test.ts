import { describe, expect, it } from 'vitest';
import { testDb } from '../../test/db';
import { createTestTenant, type TestTenant } from '../../test/fixtures';
import { newId } from '../ids';
import { listNodes } from './nodes';
import { matchingNodeIds } from './node-filter';
import type { NodeFilter } from '../../protocol/api/node-filter';

const db = testDb;

interface NodeSeed {
  claims?: Record<string, string | string[]>;
  labels?: Record<string, string>;
  state?: string;
  hardwareKey?: boolean;
  trusted?: boolean;
  trustVersion?: number;
  certNotAfter?: Date;
  attestor?: string;
  role?: string;
}

async function addNode(t: TestTenant, seed: NodeSeed = {}, poolId = t.poolId) {
  const node = await db().node.create({
    data: {
      id: newId('node'),
      tenantId: t.tenantId,
      siteId: t.siteId,
      poolId,
      role: seed.role ?? 'node',
      state: seed.state ?? 'adopted',
      trust: 'tenant-controlled',
      attestor: seed.attestor ?? 'join-token',
      claims: seed.claims ?? {},
      labels: seed.labels ?? {},
      hardwareKey: seed.hardwareKey ? Buffer.from('key') : null,
      hardwareKeyTrusted: seed.trusted ?? false,
      trustVersion: seed.trustVersion ?? null,
      certNotAfter: seed.certNotAfter ?? null,
    },
  });
  return node.id;
}

const list = (t: TestTenant, filter: NodeFilter, page: { cursor?: string; limit?: number } = {}) =>
  listNodes(db(), t.viewer, { tenantId: t.tenantId, ...filter, limit: page.limit ?? 100, cursor: page.cursor, direction: 'forward' });
const idsOf = async (t: TestTenant, filter: NodeFilter) => (await list(t, filter)).items.map((n) => n.id).sort();

describe('nodes.list: server-side search', () => {
  it('finds a node by hostname, serial, product UUID, MAC with any separators, id and label value', async () => {
    const t = await createTestTenant(db(), { label: 'search' });
    const target = await addNode(t, {
      claims: {
        hostname: 'gpu-07.Rack-C.example',
        productSerial: 'SN-ABC123',
        productUuid: '4c4c4544-0031-3510-8052-b4c04f4e5632',
        macs: ['3C:EC:EF:12:34:56'],
      },
      labels: { rack: 'c7-north' },
    });
    await addNode(t, { claims: { hostname: 'cpu-01', macs: ['aa:bb:cc:dd:ee:ff'] }, labels: { rack: 'a1' } });
    for (const search of [
      'GPU-07',
      'rack-c',
      'sn-abc',
      '4c4c4544-0031',
      '4c4c4544003135',
      '3c:ec:ef:12',
      '3c-ec-ef-12-34-56',
      '3cecef123456',
      '3cec.ef12.3456',
      target.slice(-10),
      'c7-north',
    ]) {
      expect(await idsOf(t, { search }), search).toEqual([target]);
    }
    // LIKE's wildcards are literal text, not patterns.
    expect(await idsOf(t, { search: '%' })).toEqual([]);
    expect(await idsOf(t, { search: 'gpu_07' })).toEqual([]);
  });

  it('finds a node by the address its join request came from', async () => {
    const t = await createTestTenant(db(), { label: 'search-ip' });
    const target = await addNode(t);
    await addNode(t);
    await db().joinRequest.create({
      data: {
        id: newId('jr'),
        tenantId: t.tenantId,
        siteId: t.siteId,
        attestor: 'discovery',
        state: 'approved',
        machineKey: `mk-${target}`,
        csrSha256: 'x'.repeat(64),
        expiresAt: new Date(Date.now() + 60_000),
        ip: '10.42.7.19',
        clientAddress: '192.0.2.77',
        nodeId: target,
      },
    });
    expect(await idsOf(t, { search: '10.42.7.19' })).toEqual([target]);
    expect(await idsOf(t, { search: '10.42.7' })).toEqual([target]);
    expect(await idsOf(t, { search: '192.0.2.77' })).toEqual([target]);
    expect(await idsOf(t, { search: '10.42.8' })).toEqual([]);
  });
});

describe('nodes.list: filters, exact total and cursor paging', () => {
  it('ANDs every filter and counts what the filter selects across pages', async () => {
    const t = await createTestTenant(db(), { label: 'filters' });
    const other = await t.newPool();
    const soon = new Date(Date.now() + 3600_000);
    const later = new Date(Date.now() + 90 * 86400_000);
    const a = await addNode(t, {
      labels: { rack: 'c7', env: 'prod' },
      hardwareKey: true,
      trusted: true,
      trustVersion: 3,
      certNotAfter: soon,
    });
    const b = await addNode(t, { labels: { rack: 'c7' }, hardwareKey: true, trustVersion: 2, certNotAfter: later, state: 'adopting' });
    const c = await addNode(t, { labels: { rack: 'd1' }, role: 'ramdisk', attestor: 'discovery' }, other);
    expect(await idsOf(t, { labels: ['rack=c7'] })).toEqual([a, b].sort());
    expect(await idsOf(t, { labels: ['rack=c7', 'env=prod'] })).toEqual([a]);
    expect(await idsOf(t, { labels: ['rack=c7', 'rack=d1'] })).toEqual([]);
    expect(await idsOf(t, { poolId: other })).toEqual([c]);
    expect(await idsOf(t, { siteId: t.siteId })).toEqual([a, b, c].sort());
    expect(await idsOf(t, { state: 'adopting' })).toEqual([b]);
    expect(await idsOf(t, { role: 'ramdisk' })).toEqual([c]);
    expect(await idsOf(t, { attestor: 'discovery' })).toEqual([c]);
    expect(await idsOf(t, { nodeKey: 'trusted' })).toEqual([a]);
    expect(await idsOf(t, { nodeKey: 'unattested' })).toEqual([b]);
    expect(await idsOf(t, { nodeKey: 'none' })).toEqual([c]);
    expect(await idsOf(t, { trustVersion: 2 })).toEqual([b]);
    expect(await idsOf(t, { expiringWithinSeconds: 7 * 86400 })).toEqual([a]);
    expect(await idsOf(t, { connected: true })).toEqual([]);
    expect(await idsOf(t, { connected: false })).toEqual([a, b, c].sort());

    const first = await list(t, { labels: ['rack=c7'] }, { limit: 1 });
    expect(first.total).toBe(2);
    expect(first.items).toHaveLength(1);
    const second = await list(t, { labels: ['rack=c7'] }, { limit: 1, cursor: first.nextCursor! });
    expect(second.total).toBe(2);
    expect(second.nextCursor).toBeNull();
    expect([first.items[0]!.id, second.items[0]!.id]).toEqual([a, b].sort());
  });

  it('reads a live session by the gateway lease, and the ids export and bulk actions walk page by page', async () => {
    const t = await createTestTenant(db(), { label: 'connected' });
    const live = await addNode(t);
    const ids = [live, await addNode(t), await addNode(t), await addNode(t)].sort();
    const gatewayId = newId('gw');
    await db().gatewayLease.create({
      data: { gatewayId, startedAt: new Date(), heartbeatAt: new Date(), expiresAt: new Date(Date.now() + 60_000) },
    });
    await db().nodeSession.create({
      data: { id: newId('ses'), nodeId: live, certSerial: 'ab', gatewayId, agentVersion: 'test', openedAt: new Date() },
    });
    expect(await idsOf(t, { connected: true })).toEqual([live]);
    expect((await list(t, { connected: false })).total).toBe(3);

    const walked: string[] = [];
    let after: string | undefined;
    for (;;) {
      const page = await matchingNodeIds(db(), t.tenantId, {}, { after, limit: 3 });
      walked.push(...page);
      if (page.length < 3) break;
      after = page[page.length - 1];
    }
    expect(walked).toEqual(ids);
  });
});
