import { describe, expect, it } from 'vitest';
import { testDb } from '../../test/db';
import { createTestTenant, type TestTenant } from '../../test/fixtures';
import { newId } from '../ids';
import { createApiKey, listApiKeys } from '../api-keys/api-keys';
import { listAudit } from '../events/list-audit';
import { createInvitation, listInvitations } from './invitations';
import { listEvents } from '../events/list-events';
import { rejectJoinRequest } from '../requests/decisions';
import { listJoinRequests } from '../requests/list';

const db = testDb;

/** A pending discovery join request in the tenant's pool, its CSR hash `hashDigit` repeated. */
async function pendingRequest(t: TestTenant, hashDigit: string): Promise<string> {
  const requestId = newId('jreq');
  await db().joinRequest.create({
    data: {
      id: requestId,
      tenantId: t.tenantId,
      siteId: t.siteId,
      poolId: t.poolId,
      attestor: 'discovery',
      state: 'pending',
      machineKey: `mk-${requestId}`,
      csrSha256: hashDigit.repeat(64),
      expiresAt: new Date(Date.now() + 3_600_000),
    },
  });
  return requestId;
}

describe('the console names operators, never ids, where it shows who did something', () => {
  it('a decided join request, its event and its audit entry carry the operator name resolved by the server', async () => {
    const t = await createTestTenant(db());
    const decider = t.operator;
    await db().operator.create({ data: { id: decider.id, email: `${decider.id}@example.test`, name: 'Ada Lovelace', passwordHash: 'x' } });
    const requestId = await pendingRequest(t, 'a');

    const rejected = await rejectJoinRequest(db(), decider, {
      tenantId: t.tenantId,
      poolId: t.poolId,
      requestId,
      reason: 'unknown serial',
    });
    expect(rejected).toMatchObject({ decidedBy: decider.actor, decidedByName: 'Ada Lovelace' });
    const { items } = await listJoinRequests(db(), t.viewer, { tenantId: t.tenantId, poolId: t.poolId, state: 'all' });
    expect(items.find((r) => r.id === requestId)).toMatchObject({ decidedBy: decider.actor, decidedByName: 'Ada Lovelace' });

    const events = await listEvents(db(), t.viewer, { tenantId: t.tenantId });
    const decided = events.items.find((e) => e.data.requestId === requestId && Object.values(e.data).includes(decider.actor));
    expect(decided?.actorNames).toEqual({ [decider.actor]: 'Ada Lovelace' });

    const audit = await listAudit(db(), t.admin, { tenantId: t.tenantId });
    expect(audit.items.find((e) => e.actor === decider.actor)).toMatchObject({
      actorName: 'Ada Lovelace',
      actorEmail: `${decider.id}@example.test`,
    });
  });

  it('an operator without a name is shown by email; API keys and removed operators get no name', async () => {
    const t = await createTestTenant(db());
    await db().operator.create({ data: { id: t.operator.id, email: `${t.operator.id}@example.test`, name: '', passwordHash: 'x' } });
    const requestId = await pendingRequest(t, 'b');
    expect(await rejectJoinRequest(db(), t.operator, { tenantId: t.tenantId, poolId: t.poolId, requestId, reason: 'no' })).toMatchObject({
      decidedByName: `${t.operator.id}@example.test`,
    });
    // The admin principal of the fixture has no operator row: no name, the actor stays as it is.
    const audit = await listAudit(db(), t.admin, { tenantId: t.tenantId });
    expect(audit.items.find((e) => e.actor === t.admin.actor)).toMatchObject({ actorName: null });
  });

  it('invitations and API keys name the admin who created them', async () => {
    const t = await createTestTenant(db());
    await db().operator.create({ data: { id: t.admin.id, email: `${t.admin.id}@example.test`, name: 'Grace Hopper', passwordHash: 'x' } });
    await createInvitation(db(), t.admin, { tenantId: t.tenantId, email: `new-${t.admin.id}@example.test`, role: 'viewer' });
    expect((await listInvitations(db(), t.admin, { tenantId: t.tenantId })).map((i) => i.createdByName)).toEqual(['Grace Hopper']);
    const key = await createApiKey(db(), t.admin, { tenantId: t.tenantId, role: 'viewer', name: 'ci' });
    expect(key.createdByName).toBe('Grace Hopper');
    expect((await listApiKeys(db(), t.admin, { tenantId: t.tenantId })).map((k) => k.createdByName)).toEqual(['Grace Hopper']);
  });
});
