import { describe, expect, it } from 'vitest';
import { testDb } from '../../test/db';
import { createTestTenant, failure } from '../../test/fixtures';
import { insertApiKey } from '../api-keys/api-keys';
import { createCaller } from '../api/root';
import { handleComputeRequest } from '../entry/compute';
import { AUDIT_EXPORTS_IN_FLIGHT } from '../entry/audit-export';
import { exportAuditCsv } from './export-audit';
import { parseCsv } from '../../test/csv';

const base = 'http://test.local/api/compute';
const get = (path: string, key?: string, method = 'GET') =>
  handleComputeRequest(new Request(base + path, { method, headers: key ? { authorization: `Bearer ${key}` } : {} }), {
    db: testDb(),
    sessionOperatorId: async () => null,
  });

/** Seeded entries are one second apart, the last at BASE: time ranges are then exact, whatever the clock. */
const BASE = Date.parse('2026-06-01T12:00:00Z');
const at = (secondsBeforeBase: number) => new Date(BASE - secondsBeforeBase * 1000).toISOString();

async function seed(count: number, tenantId: string, actor: string, action = 'test.thing') {
  await testDb().$executeRawUnsafe(
    `INSERT INTO audit_log (tenant_id, actor, action, resource, data, created_at)
     SELECT $1, $2, $3, 'compute-thing/t' || i, jsonb_build_object('i', i, 'reason', 'because ' || i), $5::timestamptz - ($4 - i) * interval '1 second'
       FROM generate_series(1, $4) i`,
    tenantId,
    actor,
    action,
    count,
    at(0),
  );
}

describe('audit export (GET /v1/tenants/{tenantId}/audit/export.csv)', () => {
  it('streams the filtered log as spreadsheet-safe CSV, authorized as audit.list', async () => {
    const db = testDb();
    const [t, other] = await Promise.all([createTestTenant(db), createTestTenant(db)]);
    const { key: viewerKey } = await insertApiKey(db, { tenantId: t.tenantId, role: 'viewer', name: 'ro' }, 'test');
    const { key: otherKey } = await insertApiKey(db, { tenantId: other.tenantId, role: 'admin', name: 'x' }, 'test');
    await db.auditEntry.create({
      data: {
        tenantId: t.tenantId,
        actor: t.admin.actor,
        action: 'join-request.rejected',
        resource: 'compute-join-request/jr_x',
        data: { reason: '=HYPERLINK("http://evil.example","click"), sorry', hostname: '+1' },
      },
    });
    const path = `/v1/tenants/${t.tenantId}/audit/export.csv`;

    expect((await get(path)).status).toBe(401);
    const outsider = await get(path, otherKey);
    expect(outsider.status).toBe(404);
    expect(await outsider.json()).toMatchObject({ code: 'NOT_FOUND' });
    expect((await get(`${path}?since=yesterday`, viewerKey)).status).toBe(400);
    expect((await get(`${path}?nonsense=1`, viewerKey)).status).toBe(400);

    const answer = await get(`${path}?actionEquals=join-request.rejected`, viewerKey);
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(answer.headers.get('content-disposition')).toMatch(/^attachment; filename="audit-tnt_[^"]+\.csv"$/);
    const text = await answer.text();
    const [header, ...rows] = parseCsv(text);
    expect(header).toEqual(['time', 'actor', 'actor_name', 'actor_email', 'action', 'resource', 'reason', 'details']);
    expect(rows).toHaveLength(1);
    const [time, actor, , , action, resource, reason, details] = rows[0]!;
    expect(new Date(time!).toISOString()).toBe(time);
    expect([actor, action, resource]).toEqual([t.admin.actor, 'join-request.rejected', 'compute-join-request/jr_x']);
    // A value a spreadsheet would run starts with an apostrophe; the JSON details start with `{`.
    expect(reason).toBe(`'=HYPERLINK("http://evil.example","click"), sorry`);
    expect(JSON.parse(details!)).toMatchObject({ hostname: '+1' });

    const head = await get(path, viewerKey, 'HEAD');
    expect(head.status).toBe(200);
    expect(head.headers.get('x-export-row-limit')).toBe('100000');
  });

  it('reads the rows a batch at a time, newest first, filtered as the list is, and stops at the cap', async () => {
    const db = testDb();
    const t = await createTestTenant(db);
    await seed(25, t.tenantId, 'local:seed');
    await seed(3, t.tenantId, 'local:other', 'other.thing');
    const queries: string[] = [];
    const counting = new Proxy(db, {
      get(target, prop, receiver) {
        if (prop !== 'auditEntry') return Reflect.get(target, prop, receiver);
        const model = target.auditEntry;
        return new Proxy(model, {
          get(m, p) {
            const value = Reflect.get(m, p);
            return p === 'findMany' ? (args: { take?: number }) => (queries.push(`take ${args.take}`), value.call(m, args)) : value;
          },
        });
      },
    });
    const rows = await exportAuditCsv(counting, t.viewer, { tenantId: t.tenantId, actorEquals: 'local:seed' }, { batch: 10 });
    expect(queries).toEqual([]); // nothing read until the consumer pulls
    const chunks: string[] = [];
    for await (const chunk of rows) chunks.push(chunk);
    expect(queries).toEqual(['take 10', 'take 10', 'take 10']);
    const records = parseCsv(chunks.join('')).slice(1);
    expect(records).toHaveLength(25);
    expect(records.map((r) => JSON.parse(r[7]!).i)).toEqual(Array.from({ length: 25 }, (_, i) => 25 - i));

    const capped = await exportAuditCsv(db, t.viewer, { tenantId: t.tenantId }, { batch: 10, maxRows: 12 });
    let text = '';
    for await (const chunk of capped) text += chunk;
    expect(parseCsv(text)).toHaveLength(13);

    // The same time range as the list.
    const since = at(4.5); // the last five
    const recent = await exportAuditCsv(db, t.viewer, { tenantId: t.tenantId, actorEquals: 'local:seed', since });
    let recentText = '';
    for await (const chunk of recent) recentText += chunk;
    const listed = await createCaller({ db, principal: t.viewer }).audit.list({ tenantId: t.tenantId, actorEquals: 'local:seed', since });
    expect(parseCsv(recentText).length - 1).toBe(listed.items.length);
    expect(listed.items.map((e) => e.data.i)).toEqual([25, 24, 23, 22, 21]);
  });

  it('runs a bounded number of exports at once in a process', async () => {
    const db = testDb();
    const t = await createTestTenant(db);
    const { key } = await insertApiKey(db, { tenantId: t.tenantId, role: 'viewer', name: 'ro' }, 'test');
    const path = `/v1/tenants/${t.tenantId}/audit/export.csv`;
    const open = await Promise.all(Array.from({ length: AUDIT_EXPORTS_IN_FLIGHT }, () => get(path, key)));
    expect(open.map((a) => a.status)).toEqual(Array(AUDIT_EXPORTS_IN_FLIGHT).fill(200));
    const refused = await get(path, key);
    expect(refused.status).toBe(429);
    // A client that goes away frees its place.
    await open[0]!.body!.cancel();
    const next = await get(path, key);
    expect(next.status).toBe(200);
    await Promise.all([...open.slice(1), next].map((a) => a.text()));
    expect((await get(path, key)).status).toBe(200);
  });
});

describe('audit filters and facets', () => {
  it('narrow the list to one action, one actor and a time range, and count what each facet offers', async () => {
    const db = testDb();
    const t = await createTestTenant(db);
    await seed(4, t.tenantId, 'local:seed-admin', 'join-token.revoked');
    await seed(2, t.tenantId, 'local:boot', 'join-token.revoked-all');
    const viewer = createCaller({ db, principal: t.viewer });
    const exact = await viewer.audit.list({ tenantId: t.tenantId, actionEquals: 'join-token.revoked' });
    expect(exact.items).toHaveLength(4);
    const byActor = await viewer.audit.list({ tenantId: t.tenantId, actorEquals: 'local:boot' });
    expect(byActor.items.map((e) => e.action)).toEqual(['join-token.revoked-all', 'join-token.revoked-all']);
    const until = await viewer.audit.list({
      tenantId: t.tenantId,
      actionEquals: 'join-token.revoked',
      until: at(1.5),
    });
    expect(until.items.map((e) => e.data.i)).toEqual([2, 1]);

    const facets = await viewer.audit.facets({ tenantId: t.tenantId });
    expect(facets.actions).toEqual(
      expect.arrayContaining([
        { value: 'join-token.revoked', count: 4 },
        { value: 'join-token.revoked-all', count: 2 },
      ]),
    );
    expect(facets.actors).toEqual(
      expect.arrayContaining([
        { value: 'local:seed-admin', name: null, count: 4 },
        { value: 'local:boot', name: null, count: 2 },
      ]),
    );
    const future = await viewer.audit.facets({ tenantId: t.tenantId, since: at(-0.5), until: at(-1) });
    expect(future).toEqual({ actions: [], actors: [] });
    const lastSecond = await viewer.audit.facets({ tenantId: t.tenantId, since: at(0.5), until: at(-1) });
    expect(lastSecond.actions).toEqual([
      { value: 'join-token.revoked', count: 1 },
      { value: 'join-token.revoked-all', count: 1 },
    ]);
    const stranger = createCaller({ db, principal: (await createTestTenant(db)).viewer });
    expect((await failure(stranger.audit.facets({ tenantId: t.tenantId }))).code).toBe('NOT_FOUND');
  });
});
