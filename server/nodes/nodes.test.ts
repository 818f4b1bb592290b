import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chainToPem, postToGateway } from '../../agent/renew/gateway-client';
import { loadIdentity } from '../../agent/renew/identity';
import { runRenewalLoop } from '../../agent/renew/loop';
import { buildRenewBody } from '../../agent/renew/renew';
import { generateNodeKeyAndCsr } from '../../agent/keys';
import { testDb } from '../../test/db';
import { createTestTenant, type TestTenant } from '../../test/fixtures';
import { machineClaims, mintToken } from '../../test/join-harness';
import { BASE, createRenewHarness, joinThroughGateway, type RenewHarness } from '../../test/renew-harness';
import { adoptNode, deleteNode, revokeNodeIdentity, setCordon } from './lifecycle';
import { getNode, listNodes } from './nodes';

let r: RenewHarness;
beforeAll(async () => {
  r = await createRenewHarness();
});
afterAll(async () => {
  await r?.close();
});

async function joined(t: TestTenant) {
  const { dir, answer } = await joinThroughGateway(r, (await mintToken(t)).token!);
  return { dir, nodeId: answer.nodeId, ref: { tenantId: t.tenantId, nodeId: answer.nodeId } };
}

const liveCerts = (nodeId: string) => testDb().nodeCert.count({ where: { nodeId, revokedAt: null } });

describe('nodes: read', () => {
  it('lists by pool and state with pages, and gets state, identity, certificate and the join token', async () => {
    const t = await createTestTenant(testDb());
    const { token, id: tokenId } = await mintToken(t, { maxUses: 3 });
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await joinThroughGateway(r, token!)).answer.nodeId);
    const first = await listNodes(testDb(), t.viewer, { tenantId: t.tenantId, poolId: t.pool.id, limit: 2 });
    expect(first.items).toHaveLength(2);
    const second = await listNodes(testDb(), t.viewer, { tenantId: t.tenantId, poolId: t.pool.id, limit: 2, cursor: first.nextCursor! });
    expect([...first.items, ...second.items].map((n) => n.id).sort()).toEqual([...ids].sort());
    expect(second.nextCursor).toBeNull();
    expect((await listNodes(testDb(), t.viewer, { tenantId: t.tenantId, state: 'retired', limit: 10 })).items).toHaveLength(0);

    const node = await getNode(testDb(), t.viewer, { tenantId: t.tenantId, nodeId: ids[0]! });
    expect(node).toMatchObject({ state: 'adopted', identityGeneration: 1, joinTokenId: tokenId, attestor: 'join-token', cordoned: false });
    expect(node.certificate?.serial).toMatch(/^[0-9a-f]+$/);
    // A token proves nothing about where the key lives: the node says its key is unattested.
    expect(node.nodeKey).toBe('unattested');
    // The list row carries the same identity as the detail (the console's nodes table reads only the list).
    const listed = [...first.items, ...second.items].find((n) => n.id === ids[0]);
    expect(listed).toMatchObject({
      joinTokenId: tokenId,
      certificate: node.certificate,
      hardwareKeyTrusted: node.hardwareKeyTrusted,
      nodeKey: 'unattested',
    });

    const other = await createTestTenant(testDb());
    await expect(getNode(testDb(), other.admin, { tenantId: t.tenantId, nodeId: ids[0]! })).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(setCordon(testDb(), t.viewer, { tenantId: t.tenantId, nodeId: ids[0]! }, true)).rejects.toMatchObject({
      code: 'ACCESS_DENIED',
    });
  });
});

describe('nodes: lifecycle', () => {
  it('revokeIdentity revokes every certificate, publishes the events, and the agent stops with a clear message', async () => {
    const t = await createTestTenant(testDb());
    const { dir, nodeId, ref } = await joined(t);
    expect(await runRenewalLoop({ identityDir: dir, ...r.target, once: true, log: () => {} })).toBe(0);
    const result = await revokeNodeIdentity(testDb(), t.operator, ref);
    expect(result.revokedSerials).toHaveLength(2);
    expect(await liveCerts(nodeId)).toBe(0);
    expect(await testDb().event.count({ where: { tenantId: t.tenantId, type: 'security.certificate-revoked' } })).toBe(2);
    expect(await testDb().auditEntry.count({ where: { tenantId: t.tenantId, action: 'node.identity-revoked' } })).toBe(1);
    const lines: string[] = [];
    // Refused three times in a row (the backoff between them is short at first): a revoked identity.
    const code = await runRenewalLoop({ identityDir: dir, ...r.target, once: true, log: (l) => lines.push(l) });
    expect(code).toBe(3);
    expect(lines.at(-1)).toContain('join again: better-compute agent join --reset --yes');
  }, 40_000);

  it('delete needs a cordon first, retires the node and frees its hardware key and EK; the machine renews no more', async () => {
    const t = await createTestTenant(testDb());
    const { dir, nodeId, ref } = await joined(t);
    // As a certified tpm join binds it: the EK is freed with the hardware key, so the machine can join anew.
    await testDb().tpmEkBinding.create({ data: { ekSha256: createHash('sha256').update(nodeId).digest('hex'), nodeId } });
    await expect(deleteNode(testDb(), t.admin, ref)).rejects.toMatchObject({ code: 'INVALID_STATE' });
    expect((await setCordon(testDb(), t.admin, ref, true)).cordoned).toBe(true);
    const deleted = await deleteNode(testDb(), t.admin, ref);
    expect(deleted.state).toBe('retired');
    const row = await testDb().node.findUniqueOrThrow({ where: { id: nodeId } });
    expect(row.hardwareKey).toBeNull();
    expect(await testDb().tpmEkBinding.count({ where: { nodeId } })).toBe(0);
    expect((row.claims as { macs?: unknown }).macs).toBeUndefined();
    expect(await liveCerts(nodeId)).toBe(0);
    const current = await loadIdentity(dir);
    const next = generateNodeKeyAndCsr();
    const reply = await postToGateway(
      r.target,
      { keyPem: current.identity.privateKeyPem, certificatePem: chainToPem([current.identity.certificateChain[0]!]) },
      `${BASE}/v1/renew`,
      buildRenewBody(current, next.csrDer, next.csrSha256, Math.floor(Date.now() / 1000)),
    );
    expect(reply.status).toBe(403);
  });

  it('adopt moves an adopting node to adopted; uncordon undoes a cordon', async () => {
    const t = await createTestTenant(testDb(), { pool: { acceptanceChecks: ['gpu-burn'] } });
    const { ref } = await joined(t);
    expect((await getNode(testDb(), t.viewer, ref)).conditions.map((c) => c.type)).toContain('AcceptanceFailed');
    expect((await adoptNode(testDb(), t.admin, ref)).state).toBe('adopted');
    await setCordon(testDb(), t.admin, ref, true);
    expect((await setCordon(testDb(), t.admin, ref, false)).cordoned).toBe(false);
    const actions = (await testDb().auditEntry.findMany({ where: { tenantId: t.tenantId, resource: `compute-node/${ref.nodeId}` } })).map(
      (a) => a.action,
    );
    expect(actions).toEqual(expect.arrayContaining(['node.adopted', 'node.cordoned', 'node.uncordoned']));
  });

  it('a renewal racing revokeIdentity never leaves a live certificate of the revoked identity', async () => {
    const t = await createTestTenant(testDb());
    for (let i = 0; i < 8; i++) {
      const { dir, nodeId, ref } = await joined(t);
      const current = await loadIdentity(dir);
      const next = generateNodeKeyAndCsr();
      const body = buildRenewBody(current, next.csrDer, next.csrSha256, Math.floor(Date.now() / 1000));
      const client = { keyPem: current.identity.privateKeyPem, certificatePem: chainToPem([current.identity.certificateChain[0]!]) };
      await Promise.all([postToGateway(r.target, client, `${BASE}/v1/renew`, body), revokeNodeIdentity(testDb(), t.admin, ref)]);
      expect(await liveCerts(nodeId)).toBe(0);
    }
  });
});

describe('nodes: certificate history', () => {
  it('lists every certificate newest first with how it was issued; the current one is marked, and a revoke shows on all', async () => {
    const t = await createTestTenant(testDb());
    const { dir, nodeId, ref } = await joined(t);
    for (let i = 0; i < 2; i++) expect(await runRenewalLoop({ identityDir: dir, ...r.target, once: true, log: () => {} })).toBe(0);
    const rows = await testDb().nodeCert.findMany({ where: { nodeId }, orderBy: { createdAt: 'asc' } });
    expect(rows).toHaveLength(3);

    const node = await getNode(testDb(), t.viewer, ref);
    expect(node.certificateCount).toBe(3);
    expect(node.certificates.map((c) => c.serial)).toEqual(rows.map((c) => c.serial).reverse());
    expect(node.certificates.map((c) => c.issuedBy)).toEqual(['renewal', 'renewal', 'join']);
    expect(node.certificates.map((c) => c.isCurrent)).toEqual([true, false, false]);
    expect(node.certificate?.serial).toBe(node.certificates[0]!.serial);
    // The agent renews once the new certificate is in hand; the earlier ones stay valid until they expire.
    expect(node.certificates.every((c) => c.revokedAt === null && c.identityGeneration === 1)).toBe(true);
    expect(Date.parse(node.certificates[0]!.notAfter)).toBeGreaterThan(Date.parse(node.certificates[2]!.notBefore));
    // Only what an operator reads: no DER, no key hash.
    expect(Object.keys(node.certificates[0]!).sort()).toEqual([
      'identityGeneration',
      'isCurrent',
      'issuedBy',
      'notAfter',
      'notBefore',
      'revocationReason',
      'revokedAt',
      'serial',
    ]);

    const revoked = await revokeNodeIdentity(testDb(), t.operator, ref);
    expect(revoked.certificates).toHaveLength(3);
    const after = await getNode(testDb(), t.viewer, ref);
    expect(after.certificate).toBeNull();
    expect(after.certificates.map((c) => c.isCurrent)).toEqual([false, false, false]);
    for (const c of after.certificates) {
      expect(c.revocationReason).toBe('revoked');
      expect(Date.parse(c.revokedAt!)).toBeGreaterThan(0);
    }
  }, 60_000);

  it('names a reclaim as such, and shows the earlier generation revoked as reclaimed', async () => {
    const t = await createTestTenant(testDb());
    const claims = machineClaims();
    const first = (await joinThroughGateway(r, (await mintToken(t)).token!, claims)).answer;
    // The same machine joins again on a token that allows a reclaim: its identity is replaced (generation 2).
    const again = (await joinThroughGateway(r, (await mintToken(t, { allowReclaim: true })).token!, claims)).answer;
    expect(again.nodeId).toBe(first.nodeId);
    const node = await getNode(testDb(), t.viewer, { tenantId: t.tenantId, nodeId: first.nodeId });
    expect(node.certificates.map((c) => [c.issuedBy, c.identityGeneration, c.isCurrent, c.revocationReason])).toEqual([
      ['reclaim', 2, true, null],
      ['join', 1, false, 'reclaimed'],
    ]);
  });
});
