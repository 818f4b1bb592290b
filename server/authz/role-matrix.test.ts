import { beforeAll, describe, expect, it } from 'vitest';
import { generateNodeKeyAndCsr } from '../../agent/keys';
import { testDb } from '../../test/db';
import { createTestTenant, type TestTenant } from '../../test/fixtures';
import { randomMac } from '../../test/discovery-harness';
import { agentJoin, createJoinHarness, machineClaims, type JoinHarness } from '../../test/join-harness';
import { appRouter, createCaller } from '../api/root';
import type { ApiMeta } from '../api/trpc';
import { createDiscoveryToken } from '../tokens/site-scoped';
import { ROLES, type Role } from './permissions';

type Procedure = { _def: { type: 'query' | 'mutation' | 'subscription'; meta?: ApiMeta } };
const procedures = Object.entries(appRouter._def.procedures as unknown as Record<string, Procedure>);
const mutations = procedures.filter(([, p]) => p._def.type === 'mutation').map(([path]) => path);
const queries = procedures.filter(([, p]) => p._def.type === 'query').map(([path]) => path);

/**
 * The mutations each role may call at all (the early check of the ladder). Written out, so a change of the
 * permission table shows here as a change of this table. Every other mutation answers ACCESS_DENIED.
 */
const DECIDE = ['joinRequests.approve', 'joinRequests.approveMany', 'joinRequests.reject', 'joinRequests.rejectMany'];
const OPERATOR_MUTATIONS = [
  ...DECIDE,
  'daemon.installScript',
  'joinTokens.create',
  'joinTokens.revoke',
  'nodes.adopt',
  'nodes.recheck',
  'nodes.cordon',
  'nodes.uncordon',
  'nodes.revokeIdentity',
  'nodes.delete',
];
// A mutation decided as a read action (it changes nothing stored) is open to every role that reads.
const READ_MUTATIONS = procedures.filter(([, p]) => p._def.type === 'mutation' && p._def.meta?.action?.endsWith(':read')).map(([path]) => path);
const ALLOWED_MUTATIONS: Record<Role, string[] | 'all'> = {
  viewer: READ_MUTATIONS,
  approver: [...DECIDE, ...READ_MUTATIONS],
  operator: OPERATOR_MUTATIONS,
  admin: 'all',
};
/** Open to every signed-in caller (the own account), or to anyone (an invitation link is its own proof). */
const EVERYONE = ['account.changePassword', 'account.signOutEverywhere', 'invitations.accept'];
/** Queries only admins may make: who is in the tenant, and the tenant's webhooks. */
const ADMIN_QUERIES = ['operators.list', 'invitations.list', 'webhooks.eventTypes', 'webhooks.list', 'webhooks.get', 'webhooks.deliveries'];
/** Mutations only admins may make, named so that a change of the permission table shows here. */
const ADMIN_ONLY_WEBHOOK_MUTATIONS = ['webhooks.create', 'webhooks.update', 'webhooks.delete', 'webhooks.rotateSecret', 'webhooks.test', 'webhooks.redeliver'];

/** The code a call by `role` fails with when given no input: FORBIDDEN is the role check, anything else came after it. */
async function codeOf(t: TestTenant, role: Role, path: string): Promise<string> {
  const caller = createCaller({ db: testDb(), principal: t.as(role) }) as unknown as Record<string, Record<string, (input: unknown) => Promise<unknown>>>;
  const [group, name] = path.split('.') as [string, string];
  try {
    await caller[group]![name]!({});
    return 'OK';
  } catch (error) {
    return (error as { code?: string }).code ?? 'THROWN';
  }
}

describe('the role × procedure matrix', () => {
  let t: TestTenant;
  beforeAll(async () => {
    t = await createTestTenant(testDb());
  });

  it('names an action on every procedure but the own account', () => {
    for (const [path, p] of procedures) {
      if (EVERYONE.includes(path)) expect(p._def.meta?.action, path).toBeUndefined();
      else expect(p._def.meta?.action, path).toMatch(/^compute:/);
    }
    for (const path of [...OPERATOR_MUTATIONS, ...EVERYONE, ...ADMIN_ONLY_WEBHOOK_MUTATIONS]) expect(mutations, path).toContain(path);
    for (const path of ADMIN_QUERIES) expect(queries, path).toContain(path);
  });

  for (const role of ROLES) {
    it(`lets ${role} call exactly its mutations; every other one is ACCESS_DENIED`, async () => {
      const allowed = ALLOWED_MUTATIONS[role];
      for (const path of mutations) {
        const code = await codeOf(t, role, path);
        const mayCall = allowed === 'all' || allowed.includes(path) || EVERYONE.includes(path);
        if (ADMIN_ONLY_WEBHOOK_MUTATIONS.includes(path)) expect(mayCall, path).toBe(role === 'admin');
        if (mayCall) expect(code, `${role} ${path}`).not.toBe('FORBIDDEN');
        else expect(code, `${role} ${path}`).toBe('FORBIDDEN');
      }
    });

    it(`lets ${role} read what its role reads`, async () => {
      for (const path of queries) {
        const code = await codeOf(t, role, path);
        if (role !== 'admin' && ADMIN_QUERIES.includes(path)) expect(code, `${role} ${path}`).toBe('FORBIDDEN');
        else expect(code, `${role} ${path}`).not.toBe('FORBIDDEN');
      }
    });
  }
});

describe('an approver', () => {
  let h: JoinHarness;
  beforeAll(async () => {
    h = await createJoinHarness();
  });

  it('approves and rejects join requests, and nothing else', { timeout: 60_000 }, async () => {
    const db = testDb();
    const t = await createTestTenant(db);
    const pending = async () => {
      const mac = randomMac();
      const token = (await createDiscoveryToken(db, t.admin, { tenantId: t.tenantId, siteId: t.siteId, mac })).token!;
      const answer = await agentJoin(h, token, machineClaims({ macs: [mac] }), { role: 'discovery', attestor: 'discovery', keys: generateNodeKeyAndCsr() });
      return (answer.answer as unknown as { requestId: string }).requestId;
    };
    const [first, second] = [await pending(), await pending()];
    const approver = createCaller({ db, principal: t.as('approver') });
    await expect(approver.joinRequests.approve({ tenantId: t.tenantId, poolId: t.poolId, requestId: first, reason: 'rack B7' })).resolves.toMatchObject({ id: first, state: 'approved' });
    await expect(approver.joinRequests.reject({ tenantId: t.tenantId, poolId: t.poolId, requestId: second, reason: 'unknown' })).resolves.toMatchObject({ id: second, state: 'rejected' });
    await expect(approver.joinRequests.list({ tenantId: t.tenantId, poolId: t.poolId, state: 'all' })).resolves.toMatchObject({ items: expect.arrayContaining([expect.objectContaining({ id: first })]) });
    // A well-formed mutation of another kind is refused by the role, not by its input.
    const refused = await approver.joinTokens.create({ tenantId: t.tenantId, poolId: t.poolId, ttlSeconds: 600, idempotencyKey: 'approver-tries' }).catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: 'FORBIDDEN', message: expect.stringContaining('compute:join-tokens:create') });
    expect((refused as { cause?: { code?: string } }).cause?.code).toBe('ACCESS_DENIED');
  });
});
