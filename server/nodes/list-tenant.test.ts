import { describe, expect, it } from 'vitest';
import { testDb } from '../../test/db';
import { createTestTenant, failure } from '../../test/fixtures';
import { principalOf } from '../authz/principal';
import { newId } from '../ids';
import { listNodes } from './nodes';

const db = testDb;
const insertNode = (tenantId: string, siteId: string, poolId: string) =>
  db().node.create({
    data: {
      id: newId('node'),
      tenantId,
      siteId,
      poolId,
      role: 'node',
      state: 'adopted',
      trust: 'tenant-controlled',
      attestor: 'join-token',
    },
  });

describe('nodes.list filters on the tenant authorization decided on', () => {
  it("never lists another tenant's nodes through a pool the caller can read, whatever tenant it names", async () => {
    const a = await createTestTenant(db(), { label: 'list-a' });
    const b = await createTestTenant(db(), { label: 'list-b' });
    const own = await insertNode(a.tenantId, a.siteId, a.poolId);
    // A row of tenant B in A's pool: a list decided on A's pool must not show it, even when B is named.
    const stray = await insertNode(b.tenantId, a.siteId, a.poolId);
    const answer = await failure(listNodes(db(), a.viewer, { tenantId: b.tenantId, poolId: a.poolId, limit: 100, direction: 'forward' }));
    expect(answer).toMatchObject({ code: 'NOT_FOUND' });
    const listed = await listNodes(db(), a.viewer, { tenantId: a.tenantId, poolId: a.poolId, limit: 100, direction: 'forward' });
    expect(listed.items.map((n) => n.id)).toEqual([own.id]);
    expect(listed.items.map((n) => n.id)).not.toContain(stray.id);
  });

  it("refuses a member of both tenants who names one tenant and the other tenant's pool", async () => {
    const a = await createTestTenant(db(), { label: 'list-c' });
    const b = await createTestTenant(db(), { label: 'list-d' });
    await insertNode(a.tenantId, a.siteId, a.poolId);
    const both = principalOf('operator', newId('op'), [
      [a.tenantId, 'viewer'],
      [b.tenantId, 'viewer'],
    ]);
    expect(
      await failure(listNodes(db(), both, { tenantId: b.tenantId, poolId: a.poolId, limit: 100, direction: 'forward' })),
    ).toMatchObject({ code: 'NOT_FOUND' });
    expect((await listNodes(db(), both, { tenantId: a.tenantId, poolId: a.poolId, limit: 100, direction: 'forward' })).items).toHaveLength(
      1,
    );
  });
});
