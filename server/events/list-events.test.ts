import { describe, expect, it } from 'vitest';
import { testDb } from '../../test/db';
import { createTestTenant } from '../../test/fixtures';
import { createCaller } from '../api/root';
import { newId } from '../ids';
import { publishEvent } from './publish';

describe('events.list nodeId', () => {
  it('lists only the events about one node, and combines with the reason filter', async () => {
    const db = testDb();
    const t = await createTestTenant(db);
    const [a, b] = [newId('node'), newId('node')];
    await publishEvent(db, { tenantId: t.tenantId, type: 'node.cordoned', data: { nodeId: a } });
    await publishEvent(db, { tenantId: t.tenantId, type: 'node.revoked', data: { nodeId: a, reason: 'stolen' } });
    await publishEvent(db, { tenantId: t.tenantId, type: 'node.cordoned', data: { nodeId: b } });
    const viewer = createCaller({ db, principal: t.viewer });
    const ofA = await viewer.events.list({ tenantId: t.tenantId, nodeId: a });
    expect(ofA.items.map((e) => e.type)).toEqual(['node.revoked', 'node.cordoned']);
    const both = await viewer.events.list({ tenantId: t.tenantId, nodeId: a, reason: 'stolen' });
    expect(both.items.map((e) => e.type)).toEqual(['node.revoked']);
  });
});
