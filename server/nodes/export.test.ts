import { describe, expect, it } from 'vitest';
import { testDb } from '../../test/db';
import { createTestTenant } from '../../test/fixtures';
import { parseCsv } from '../../test/csv';
import { insertApiKey } from '../api-keys/api-keys';
import { handleComputeRequest } from '../entry/compute';
import { CSV_EXPORTS_PER_CALLER } from '../http/csv-export';
import { newId } from '../ids';
import { exportNodesCsv } from './export';

const base = 'http://test.local/api/compute';
const get = (path: string, key?: string, method = 'GET') =>
  handleComputeRequest(new Request(base + path, { method, headers: key ? { authorization: `Bearer ${key}` } : {} }), {
    db: testDb(),
    sessionOperatorId: async () => null,
  });

/** `count` nodes of the tenant's pool in one statement, ids in generation order, every tenth labelled `rack=c7`. */
async function seedNodes(t: { tenantId: string; siteId: string; poolId: string }, count: number) {
  await testDb().$executeRawUnsafe(
    `INSERT INTO nodes (id, tenant_id, site_id, pool_id, role, state, trust, attestor, claims, labels)
     SELECT 'node_seed' || lpad(i::text, 7, '0') || $4, $1, $2, $3, 'node', 'adopted', 'tenant-controlled', 'join-token',
            jsonb_build_object('hostname', 'host-' || i, 'macs', jsonb_build_array('02:00:00:' || lpad(to_hex(i), 6, '0'))),
            CASE WHEN i % 10 = 0 THEN '{"rack":"c7"}'::jsonb ELSE '{}'::jsonb END
       FROM generate_series(1, $5) i`,
    t.tenantId,
    t.siteId,
    t.poolId,
    t.tenantId.slice(-6),
    count,
  );
}

const addNode = (t: { tenantId: string; siteId: string; poolId: string }, claims: object, labels: object) =>
  testDb().node.create({
    data: {
      id: newId('node'),
      tenantId: t.tenantId,
      siteId: t.siteId,
      poolId: t.poolId,
      role: 'node',
      state: 'adopted',
      trust: 'tenant-controlled',
      attestor: 'join-token',
      claims,
      labels,
    },
  });

describe('node export (GET /v1/tenants/{tenantId}/nodes/export.csv)', () => {
  it('streams the filtered list as spreadsheet-safe CSV, authorized as nodes.list', async () => {
    const db = testDb();
    const [t, other] = await Promise.all([createTestTenant(db, { label: 'export' }), createTestTenant(db, { label: 'export-x' })]);
    const { key } = await insertApiKey(db, { tenantId: t.tenantId, role: 'viewer', name: 'ro' }, 'test');
    const { key: otherKey } = await insertApiKey(db, { tenantId: other.tenantId, role: 'admin', name: 'x' }, 'test');
    const evil = await addNode(
      t,
      { hostname: '=HYPERLINK("http://evil.example","x")', productSerial: '+41', macs: ['3c:ec:ef:00:00:01'] },
      {
        rack: 'c7',
        note: '@SUM(A1)',
      },
    );
    await addNode(t, { hostname: '-2', productSerial: '\tx', productUuid: '\rcmd' }, { rack: 'c7' });
    await addNode(t, { hostname: 'plain' }, { rack: 'a1' });
    const path = `/v1/tenants/${t.tenantId}/nodes/export.csv`;

    expect((await get(path)).status).toBe(401);
    expect((await get(path, otherKey)).status).toBe(404);
    expect((await get(`${path}?connected=maybe`, key)).status).toBe(400);
    expect((await get(`${path}?labels=rack`, key)).status).toBe(400);
    expect((await get(`${path}?nonsense=1`, key)).status).toBe(400);

    const answer = await get(`${path}?labels=rack%3Dc7&labels=note%3D%40SUM(A1)&connected=false`, key);
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(answer.headers.get('content-disposition')).toMatch(/^attachment; filename="nodes-tnt_[^"]+\.csv"$/);
    const [header, ...rows] = parseCsv(await answer.text());
    expect(header!.slice(0, 3)).toEqual(['id', 'hostname', 'state']);
    expect(rows.map((r) => r[0])).toEqual([evil.id]);
    const cell = (row: string[], name: string) => row[header!.indexOf(name)];
    expect(cell(rows[0]!, 'hostname')).toBe(`'=HYPERLINK("http://evil.example","x")`);
    expect(cell(rows[0]!, 'product_serial')).toBe(`'+41`);
    expect(cell(rows[0]!, 'labels')).toBe('note=@SUM(A1),rack=c7');

    const both = parseCsv(await (await get(`${path}?labels=rack%3Dc7`, key)).text()).slice(1);
    const second = both.find((r) => r[0] !== evil.id)!;
    expect([cell(second, 'hostname'), cell(second, 'product_serial'), cell(second, 'product_uuid')]).toEqual(["'-2", "'\tx", "'\rcmd"]);
    // The same search as the list: a MAC typed with dashes.
    const searched = parseCsv(await (await get(`${path}?search=3C-EC-EF-00-00-01`, key)).text()).slice(1);
    expect(searched.map((r) => r[0])).toEqual([evil.id]);

    const head = await get(path, key, 'HEAD');
    expect(head.status).toBe(200);
    expect(head.headers.get('x-export-row-limit')).toBe('200000');
  });

  it('reads a large fleet a bounded batch at a time, in id order, nothing before the consumer pulls', async () => {
    const db = testDb();
    const t = await createTestTenant(db, { label: 'export-large' });
    await seedNodes(t, 20_000);
    const batches: number[] = [];
    const counting = new Proxy(db, {
      get(target, prop, receiver) {
        const value = Reflect.get(target, prop, receiver);
        if (prop !== '$queryRaw') return value;
        return async (...args: unknown[]) => {
          const rows = (await (value as (...a: unknown[]) => Promise<unknown[]>).apply(target, args)) as unknown[];
          batches.push(rows.length);
          return rows;
        };
      },
    });
    const rows = await exportNodesCsv(counting, t.viewer, { tenantId: t.tenantId }, { batch: 1_000 });
    expect(batches).toEqual([]);
    let header = '';
    let count = 0;
    let previous = '';
    let inOrder = true;
    let largestChunkRows = 0;
    for await (const chunk of rows) {
      const records = parseCsv(chunk);
      if (!header) {
        header = records[0]![0]!;
        continue;
      }
      largestChunkRows = Math.max(largestChunkRows, records.length);
      for (const record of records) {
        if (record[0]! <= previous) inOrder = false;
        previous = record[0]!;
        count++;
      }
    }
    expect(header).toBe('id');
    expect(count).toBe(20_000);
    expect(inOrder).toBe(true);
    expect(largestChunkRows).toBe(1_000);
    expect(batches.length).toBe(21);
    expect(Math.max(...batches)).toBe(1_000);

    const labelled = await exportNodesCsv(db, t.viewer, { tenantId: t.tenantId, labels: ['rack=c7'] }, { batch: 300, maxRows: 1_500 });
    let text = '';
    for await (const chunk of labelled) text += chunk;
    expect(parseCsv(text).length - 1).toBe(1_500);
  });

  it('counts exports against the caller in the shared limit, and says when to come back', async () => {
    const db = testDb();
    const t = await createTestTenant(db, { label: 'export-limit' });
    const { key } = await insertApiKey(db, { tenantId: t.tenantId, role: 'viewer', name: 'ro' }, 'test');
    const nodes = `/v1/tenants/${t.tenantId}/nodes/export.csv`;
    const audit = `/v1/tenants/${t.tenantId}/audit/export.csv`;
    for (let i = 0; i < CSV_EXPORTS_PER_CALLER; i++) {
      const answer = await get(i % 2 ? nodes : audit, key);
      expect(answer.status).toBe(200);
      await answer.body!.cancel();
    }
    const refused = await get(nodes, key);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await get(audit, key)).status).toBe(429);
    // HEAD reads no rows and is not counted.
    expect((await get(nodes, key, 'HEAD')).status).toBe(200);
  });
});
