import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { generateNodeKeyAndCsr } from '../../agent/keys';
import { testDb } from '../../test/db';
import { randomMac } from '../../test/discovery-harness';
import { agentJoin, createJoinHarness, machineClaims, type JoinHarness } from '../../test/join-harness';
import { callerAs, EVERYONE, procedureOf, procedures, ROOT_ADMIN_ONLY } from '../../test/role-matrix';
import { createCaller } from '../api/root';
import { acceptInvitation } from '../operators/invitations';
import { createOperator, loadOperatorPrincipal } from '../operators/operators';
import { ensureRootTenant } from '../tenants/tenants';
import type { Principal } from './principal';

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
  const caller = callerAs(principal);
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
