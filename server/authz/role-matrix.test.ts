import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { generateNodeKeyAndCsr } from '../../agent/keys';
import { testDatabaseUrl, testDb } from '../../test/db';
import { createTestTenant, type TestTenant } from '../../test/fixtures';
import { randomMac } from '../../test/discovery-harness';
import { agentJoin, createJoinHarness, machineClaims, type JoinHarness } from '../../test/join-harness';
import { appRouter, createCaller } from '../api/root';
import type { ApiMeta } from '../api/trpc';
import { createDiscoveryToken } from '../tokens/site-scoped';
import { acceptInvitation } from '../operators/invitations';
import { createOperator, loadOperatorPrincipal } from '../operators/operators';
import { ensureRootTenant } from '../tenants/tenants';
import { ROLES, type Role } from '../../protocol/api/permissions';
import type { Principal } from './principal';

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
  'provisioning.userData',
  'joinTokens.revoke',
  'nodes.adopt',
  'nodes.recheck',
  'nodes.cordon',
  'nodes.uncordon',
  'nodes.revokeIdentity',
  'nodes.delete',
  'nodes.bulk',
  'nodes.setLabels',
  'commands.enqueue',
];
// A mutation decided as a read action (it changes nothing stored) is open to every role that reads.
const READ_MUTATIONS = procedures
  .filter(([, p]) => p._def.type === 'mutation' && p._def.meta?.action?.endsWith(':read'))
  .map(([path]) => path);
const ALLOWED_MUTATIONS: Record<Role, string[] | 'all'> = {
  viewer: READ_MUTATIONS,
  approver: [...DECIDE, ...READ_MUTATIONS],
  operator: OPERATOR_MUTATIONS,
  admin: 'all',
};
/** Open to every signed-in caller (the own account), or to anyone (an invitation link is its own proof). */
const EVERYONE = ['account.changePassword', 'account.signOutEverywhere', 'invitations.accept', 'invitations.describe', 'account.linkSso'];
/** Queries only admins may make: who is in the tenant, and the tenant's webhooks. */
const ADMIN_QUERIES = ['operators.list', 'invitations.list', 'webhooks.eventTypes', 'webhooks.list', 'webhooks.get', 'webhooks.deliveries'];
/** Mutations only admins may make, named so that a change of the permission table shows here. */
const ADMIN_ONLY_WEBHOOK_MUTATIONS = [
  'webhooks.create',
  'webhooks.update',
  'webhooks.delete',
  'webhooks.rotateSecret',
  'webhooks.test',
  'webhooks.redeliver',
];

/** The deployment's own procedures: root tenant admins only, so FORBIDDEN to every role of any other tenant. */
const ROOT_ADMIN_ONLY = ['pki.rotation.status', 'pki.rotation.prepare', 'pki.rotation.activate', 'pki.rotation.retire'];

/** The procedure at a dotted path (`group.name`, or deeper: `pki.rotation.status`) of a caller. */
function procedureOf(caller: unknown, path: string): (input: unknown) => Promise<unknown> {
  let at = caller;
  for (const name of path.split('.')) at = (at as Record<string, unknown>)[name];
  return at as (input: unknown) => Promise<unknown>;
}

/** The code a call by `role` fails with when given no input: FORBIDDEN is the role check, anything else came after it. */
async function codeOf(t: TestTenant, role: Role, path: string): Promise<string> {
  const caller = createCaller({ db: testDb(), principal: t.as(role) });
  try {
    await procedureOf(caller, path)({});
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
    for (const path of ROOT_ADMIN_ONLY)
      expect(
        procedures.map(([p]) => p),
        path,
      ).toContain(path);
  });

  for (const role of ROLES) {
    it(`lets ${role} call exactly its mutations; every other one is ACCESS_DENIED`, async () => {
      const allowed = ALLOWED_MUTATIONS[role];
      for (const path of mutations) {
        const code = await codeOf(t, role, path);
        const mayCall = allowed === 'all' || allowed.includes(path) || EVERYONE.includes(path);
        if (ADMIN_ONLY_WEBHOOK_MUTATIONS.includes(path)) expect(mayCall, path).toBe(role === 'admin');
        if (ROOT_ADMIN_ONLY.includes(path)) expect(code, `${role} ${path}`).toBe('FORBIDDEN');
        else if (mayCall) expect(code, `${role} ${path}`).not.toBe('FORBIDDEN');
        else expect(code, `${role} ${path}`).toBe('FORBIDDEN');
      }
    });

    it(`lets ${role} read what its role reads`, async () => {
      for (const path of queries) {
        const code = await codeOf(t, role, path);
        if (ROOT_ADMIN_ONLY.includes(path)) expect(code, `${role} ${path}`).toBe('FORBIDDEN');
        else if (role !== 'admin' && ADMIN_QUERIES.includes(path)) expect(code, `${role} ${path}`).toBe('FORBIDDEN');
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
      const token = (await createDiscoveryToken(db, t.admin, { tenantId: t.tenantId, siteId: t.siteId, mac, ttlSeconds: 3600 })).token!;
      const answer = await agentJoin(h, token, machineClaims({ macs: [mac] }), {
        role: 'discovery',
        attestor: 'discovery',
        keys: generateNodeKeyAndCsr(),
      });
      return (answer.answer as unknown as { requestId: string }).requestId;
    };
    const [first, second] = [await pending(), await pending()];
    const approver = createCaller({ db, principal: t.as('approver') });
    await expect(
      approver.joinRequests.approve({ tenantId: t.tenantId, poolId: t.poolId, requestId: first, reason: 'rack B7' }),
    ).resolves.toMatchObject({ id: first, state: 'approved' });
    await expect(
      approver.joinRequests.reject({ tenantId: t.tenantId, poolId: t.poolId, requestId: second, reason: 'unknown' }),
    ).resolves.toMatchObject({ id: second, state: 'rejected' });
    await expect(approver.joinRequests.list({ tenantId: t.tenantId, poolId: t.poolId, state: 'all' })).resolves.toMatchObject({
      items: expect.arrayContaining([expect.objectContaining({ id: first })]),
    });
    // A well-formed mutation of another kind is refused by the role, not by its input.
    const refused = await approver.joinTokens
      .create({ tenantId: t.tenantId, poolId: t.poolId, ttlSeconds: 600, idempotencyKey: 'approver-tries' })
      .catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: 'FORBIDDEN', message: expect.stringContaining('compute:join-tokens:create') });
    expect((refused as { cause?: { code?: string } }).cause?.code).toBe('ACCESS_DENIED');
  });
});

/**
 * A root admin creates tenants and invites their first admin, but does not act inside them: for every
 * procedure that names a tenant, a call with well-formed input naming real resources of a tenant it created
 * is refused (an outsider's NOT_FOUND; ACCESS_DENIED, saying why, on the two bootstrap paths), while the same call by that tenant's own admin gets past
 * authorization (so the input is valid and the resources exist).
 */
describe('the role × procedure matrix: a root admin in a tenant it created', () => {
  let h: JoinHarness;
  beforeAll(async () => {
    h = await createJoinHarness();
    // The live streams open the process's LISTEN connection.
    process.env.DATABASE_URL ??= testDatabaseUrl();
  });

  it('is refused on every tenant procedure that the tenant’s own admin may call', { timeout: 120_000 }, async () => {
    const db = testDb();
    const root = await ensureRootTenant(db);
    const suffix = randomBytes(4).toString('hex');
    const { id: rootAdminId } = await createOperator(db, {
      email: `root-${suffix}@example.com`,
      name: 'Root',
      password: 'correct horse battery',
      tenantId: root.id,
      role: 'admin',
    });
    const rootAdmin = (await loadOperatorPrincipal(db, rootAdminId))!;
    const created = await createCaller({ db, principal: rootAdmin }).tenants.create({ name: `made-${suffix}` });
    const tenantId = created.id;
    // Bootstrapped the proper way: the first admin's invitation, accepted; then a second member to manage.
    const invitation = await createCaller({ db, principal: rootAdmin }).invitations.create({
      tenantId,
      email: `first-${suffix}@example.com`,
      role: 'admin',
    });
    const firstAdmin = await acceptInvitation(db, { token: invitation.token, name: 'First', password: 'correct horse battery' });
    const admin = (await loadOperatorPrincipal(db, firstAdmin.operatorId))!;
    const api = createCaller({ db, principal: admin });
    // The root admin's session gained nothing from the invitation it sent.
    expect((await loadOperatorPrincipal(db, rootAdminId))!.memberships.has(tenantId)).toBe(false);
    const site = await api.sites.create({ tenantId, name: 'dc1' });
    const spareSite = await api.sites.create({ tenantId, name: 'dc2' });
    const pool = await api.pools.create({ tenantId, siteId: site.id, name: 'gpu', agent: 'bcd' });
    const sparePool = await api.pools.create({ tenantId, siteId: site.id, name: 'spare', agent: 'bcd' });
    const joinToken = await api.joinTokens.create({
      tenantId,
      poolId: pool.id,
      ttlSeconds: 600,
      maxUses: 1,
      idempotencyKey: `matrix-${suffix}`,
    });
    const node = await agentJoin(h, joinToken.token!, machineClaims());
    const nodeId = node.answer!.nodeId;
    const mac = randomMac();
    const discovery = await api.discoveryTokens.create({ tenantId, siteId: site.id, mac });
    const pending = await agentJoin(h, discovery.token!, machineClaims({ macs: [mac] }), {
      role: 'discovery',
      attestor: 'discovery',
      keys: generateNodeKeyAndCsr(),
    });
    const requestId = (pending.answer as unknown as { requestId: string }).requestId;
    const apiKey = await api.apiKeys.create({ tenantId, role: 'viewer', name: 'ci' });
    const member = await api.invitations.create({ tenantId, email: `member-${suffix}@example.com`, role: 'viewer' });
    const { operatorId } = await acceptInvitation(db, { token: member.token, name: 'Member', password: 'correct horse battery' });
    const openInvitation = await api.invitations.create({ tenantId, email: `later-${suffix}@example.com`, role: 'viewer' });
    const rule = await api.approvalRules.create({
      tenantId,
      siteId: site.id,
      name: 'rack',
      match: { macPrefixes: ['3c:ec:ef'] },
      action: 'leave',
    });
    // A webhook and a (never sent: no worker runs here) test delivery to call the webhook procedures on.
    process.env.BETTER_COMPUTE_SECRET ??= randomBytes(32).toString('base64url');
    const webhook = await api.webhooks.create({ tenantId, url: 'https://hooks.example.com/matrix', eventTypes: ['node.cordoned'] });
    const testDelivery = await api.webhooks.test({ tenantId, webhookId: webhook.id });
    const webhookRef = { tenantId, webhookId: webhook.id };
    const expected = await api.expectedMachines.import({
      tenantId,
      siteId: site.id,
      format: 'csv',
      content: `serial\nSN-MATRIX-${suffix}\n`,
      defaultPoolId: pool.id,
      preview: false,
    });

    const poolRef = { tenantId, poolId: pool.id };
    const nodeRef = { tenantId, nodeId };
    const command = (await api.commands.enqueue({ ...nodeRef, kind: 'bcd.doctor' })).command!;
    const batch = (await api.commands.enqueue({ tenantId, matching: { poolId: pool.id }, kind: 'bcd.doctor' })).batch!;
    const siteRef = { tenantId, siteId: site.id };
    const draftRule = { ...siteRef, name: 'draft', match: { macPrefixes: ['3c:ec:ef'] }, action: 'leave' as const };
    // In order: the tenant admin's control calls run in this order, so what destroys comes last.
    const INPUTS: [string, unknown][] = [
      ['sites.list', { tenantId }],
      ['sites.get', siteRef],
      ['sites.update', { ...siteRef, discovery: { approval: 'always' } }],
      ['sites.create', { tenantId, name: 'dc3' }],
      ['pools.list', { tenantId }],
      ['pools.get', poolRef],
      ['pools.counts', { tenantId }],
      ['pools.create', { tenantId, siteId: site.id, name: 'more', agent: 'bcd' }],
      ['pools.staleNodes', poolRef],
      ['pools.setStaleNodesPolicy', { ...poolRef, staleNodes: { cordonAfterDays: 7, retireAfterDays: 30 } }],
      ['pools.applyStaleNodes', poolRef],
      ['joinTokens.list', poolRef],
      ['joinTokens.create', { ...poolRef, ttlSeconds: 600, maxUses: 1, idempotencyKey: `matrix-2-${suffix}` }],
      ['joinTokens.revoke', { ...poolRef, tokenId: joinToken.id }],
      ['apiKeys.list', { tenantId }],
      ['apiKeys.create', { tenantId, role: 'admin', name: 'sneaky' }],
      ['apiKeys.revoke', { tenantId, apiKeyId: apiKey.id }],
      ['events.list', { tenantId }],
      ['events.onChange', { tenantId }],
      ['audit.list', { tenantId }],
      ['audit.facets', { tenantId }],
      ['overview.get', { tenantId }],
      ['nodes.list', { tenantId }],
      ['nodes.get', nodeRef],
      ['nodes.cordon', nodeRef],
      ['nodes.uncordon', nodeRef],
      ['nodes.recheck', nodeRef],
      ['nodes.adopt', nodeRef],
      ['commands.enqueue', { ...nodeRef, kind: 'bcd.doctor' }],
      ['commands.list', nodeRef],
      ['commands.get', { tenantId, commandId: command.id }],
      ['commands.batch', { tenantId, batchId: batch.id }],
      ['joinRequests.list', poolRef],
      ['joinRequests.get', { ...poolRef, requestId }],
      ['joinRequests.onChange', poolRef],
      ['joinRequests.approve', { ...poolRef, requestId }],
      ['joinRequests.approveMany', { ...poolRef, requestIds: [requestId] }],
      ['joinRequests.reject', { ...poolRef, requestId, reason: 'not ours' }],
      ['joinRequests.rejectMany', { ...poolRef, requestIds: [requestId], reason: 'not ours' }],
      ['discoveryTokens.create', { ...siteRef, mac: randomMac() }],
      ['siteTokens.create', siteRef],
      ['daemon.installScript', { ...poolRef, gatewayUrl: 'https://gw.example.com', baseUrl: 'https://compute.example.com' }],
      [
        'provisioning.userData',
        { ...nodeRef, ttlSeconds: 600, serverUrl: 'https://compute.example.com', sha256: { amd64: 'a'.repeat(64) } },
      ],
      ['operators.list', { tenantId }],
      ['operators.setRole', { tenantId, operatorId, role: 'approver' }],
      ['invitations.list', { tenantId }],
      ['invitations.create', { tenantId, email: `sneaky-${suffix}@example.com`, role: 'admin' }],
      ['invitations.revoke', { tenantId, invitationId: openInvitation.id }],
      ['approvalRules.list', siteRef],
      ['approvalRules.dryRun', draftRule],
      ['approvalRules.create', draftRule],
      ['approvalRules.update', { ...draftRule, ruleId: rule.id }],
      ['approvalRules.move', { ...siteRef, ruleId: rule.id, position: 1 }],
      ['approvalRules.delete', { ...siteRef, ruleId: rule.id }],
      ['expectedMachines.list', siteRef],
      ['expectedMachines.import', { ...siteRef, format: 'csv', content: 'serial,pool\nSN-1,gpu\n', preview: true }],
      ['expectedMachines.unmatched', siteRef],
      ['expectedMachines.delete', { ...siteRef, importId: expected.importId! }],
      ['webhooks.eventTypes', { tenantId }],
      ['webhooks.list', { tenantId }],
      ['webhooks.get', webhookRef],
      ['webhooks.deliveries', webhookRef],
      ['webhooks.create', { tenantId, url: 'https://hooks.example.com/sneaky', eventTypes: ['node.joined'] }],
      ['webhooks.update', { ...webhookRef, eventTypes: ['node.joined'] }],
      ['webhooks.test', webhookRef],
      ['webhooks.rotateSecret', webhookRef],
      ['webhooks.redeliver', { ...webhookRef, deliveryId: testDelivery.id }],
      ['webhooks.delete', webhookRef],
      ['operators.remove', { tenantId, operatorId }],
      ['nodes.setLabels', { ...nodeRef, set: { rack: 'c7' } }],
      ['nodes.bulk', { tenantId, nodeIds: [nodeId], action: 'cordon' }],
      ['nodes.revokeIdentity', nodeRef],
      ['nodes.delete', nodeRef],
      ['pools.update', { tenantId, poolId: sparePool.id, tpm: { addEkHashes: ['ab'.repeat(32)] } }],
      ['pools.archive', { tenantId, poolId: sparePool.id }],
      ['sites.archive', { tenantId, siteId: spareSite.id }],
    ];
    // Every procedure but creating and listing tenants (the root admin's own) and the own account names a tenant.
    const outsideTenants = ['tenants.create', 'tenants.list', ...EVERYONE, ...ROOT_ADMIN_ONLY];
    expect(INPUTS.map(([path]) => path).sort()).toEqual(
      procedures
        .map(([path]) => path)
        .filter((path) => !outsideTenants.includes(path))
        .sort(),
    );

    const auditBefore = await db.auditEntry.count({ where: { tenantId } });
    // Bootstrapping is over once the tenant has members: the two bootstrap paths say so, every other is NOT_FOUND.
    const BOOTSTRAP = ['apiKeys.create', 'invitations.create'];
    for (const [path, input] of INPUTS) {
      expect(await callCode(rootAdmin, path, input), `root admin ${path}`).toBe(BOOTSTRAP.includes(path) ? 'FORBIDDEN' : 'NOT_FOUND');
    }
    // The root admin changed nothing in the tenant.
    expect(await db.auditEntry.count({ where: { tenantId } })).toBe(auditBefore);
    for (const [path, input] of INPUTS) {
      expect(['NOT_FOUND', 'FORBIDDEN', 'BAD_REQUEST', 'THROWN'], `tenant admin ${path}`).not.toContain(await callCode(admin, path, input));
    }
  });
});

/** The code a call fails with, 'OK' when it succeeds; a subscription is read until its first event or 1 s. */
async function callCode(principal: Principal, path: string, input: unknown): Promise<string> {
  const caller = createCaller({ db: testDb(), principal });
  try {
    const result = await procedureOf(caller, path)(input);
    if (result && typeof result === 'object' && Symbol.asyncIterator in result) {
      const iterator = (result as AsyncIterable<unknown>)[Symbol.asyncIterator]();
      const quiet = new Promise((resolve) => setTimeout(resolve, 1_000, 'quiet'));
      await Promise.race([iterator.next(), quiet]);
      void iterator.return?.();
    }
    return 'OK';
  } catch (error) {
    return (error as { code?: string }).code ?? 'THROWN';
  }
}
