import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { testDb } from '../../test/db';
import { createTestTenant, failure } from '../../test/fixtures';
import { createCaller } from '../api/root';
import { writeAudit } from './publish';

describe('audit.list', () => {
  it('lists who did what, newest first, searchable by actor and action, with the reason given', async () => {
    const db = testDb();
    const t = await createTestTenant(db);
    const admin = createCaller({ db, principal: t.admin });
    const token = await admin.joinTokens.create({ tenantId: t.tenantId, poolId: t.poolId, ttlSeconds: 600, idempotencyKey: randomUUID() });
    await createCaller({ db, principal: t.operator }).joinTokens.revoke({ tenantId: t.tenantId, poolId: t.poolId, tokenId: token.id });
    await writeAudit(db, {
      tenantId: t.tenantId,
      actor: t.operator.actor,
      action: 'join-request.rejected',
      resource: 'compute-join-request/jr_1',
      data: { reason: 'unknown machine' },
    });

    const viewer = createCaller({ db, principal: t.viewer });
    const all = await viewer.audit.list({ tenantId: t.tenantId });
    const ours = all.items.filter((e) => e.action !== 'pool.created' && e.action !== 'site.created');
    expect(ours.map((e) => [e.action, e.actor])).toEqual([
      ['join-request.rejected', t.operator.actor],
      ['join-token.revoked', t.operator.actor],
      ['join-token.created', t.admin.actor],
    ]);
    expect(ours[0]).toMatchObject({ resource: 'compute-join-request/jr_1', reason: 'unknown machine' });
    expect(ours[1]!.reason).toBeNull();

    const byAction = await viewer.audit.list({ tenantId: t.tenantId, action: 'REVOKED' });
    expect(byAction.items.map((e) => e.action)).toEqual(['join-token.revoked']);
    const byActor = await viewer.audit.list({ tenantId: t.tenantId, actor: t.admin.id });
    expect(new Set(byActor.items.map((e) => e.actor))).toEqual(new Set([t.admin.actor]));
    expect(
      (await failure(createCaller({ db, principal: (await createTestTenant(db)).admin }).audit.list({ tenantId: t.tenantId }))).code,
    ).toBe('NOT_FOUND');
  });
});
