import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCsr, generateNodeKeyAndCsr } from '../../agent/keys';
import { chainToPem, postToGateway } from '../../agent/renew/gateway-client';
import { loadIdentity, type LoadedIdentity } from '../../agent/renew/identity';
import { buildRenewBody } from '../../agent/renew/renew';
import { testDb } from '../../test/db';
import { createTestTenant } from '../../test/fixtures';
import { mintToken } from '../../test/join-harness';
import { BASE, createRenewHarness, joinThroughGateway, type RenewHarness } from '../../test/renew-harness';

const PATH = `${BASE}/v1/renew`;

let r: RenewHarness;
beforeAll(async () => {
  r = await createRenewHarness();
});
afterAll(async () => {
  await r?.close();
});

async function joinedNodes(n: number): Promise<Array<LoadedIdentity & { tenantId: string }>> {
  const t = await createTestTenant(testDb());
  const nodes = [];
  for (let i = 0; i < n; i++) {
    const { dir } = await joinThroughGateway(r, (await mintToken(t)).token!);
    nodes.push(Object.assign(await loadIdentity(dir), { tenantId: t.tenantId }));
  }
  return nodes;
}

const clientOf = (id: LoadedIdentity) => ({ keyPem: id.identity.privateKeyPem, certificatePem: chainToPem([id.identity.certificateChain[0]!]) });
const now = () => Math.floor(Date.now() / 1000);
const freshBody = (id: LoadedIdentity) => {
  const next = generateNodeKeyAndCsr();
  return buildRenewBody(id, next.csrDer, next.csrSha256, now());
};
const reasons = async (tenantId: string, nodeId: string) =>
  (await testDb().event.findMany({ where: { tenantId, type: 'security.renew.refused' }, orderBy: { id: 'asc' } }))
    .map((e) => e.data as { reason: string; nodeId: string })
    .filter((d) => d.nodeId === nodeId)
    .map((d) => d.reason);

describe('Renewals that arrive together share one transaction', () => {
  it('renews concurrent agents in fewer transactions than renewals, each a node_certs row and a first contact', async () => {
    const nodes = await joinedNodes(8);
    const before = { ...r.renew.writes.stats };
    const replies = await Promise.all(nodes.map((id) => postToGateway(r.target, clientOf(id), PATH, freshBody(id))));
    expect(replies.map((x) => x.status)).toEqual(nodes.map(() => 200));
    const runs = r.renew.writes.stats.runs - before.runs;
    expect(r.renew.writes.stats.calls - before.calls).toBe(8);
    expect(runs).toBeLessThan(8);
    for (const id of nodes) {
      expect(await testDb().nodeCert.count({ where: { nodeId: id.identity.nodeId } })).toBe(2);
      expect(await testDb().event.count({ where: { tenantId: id.tenantId, type: 'node.connected', data: { path: ['nodeId'], equals: id.identity.nodeId } } })).toBe(1);
    }
  });

  it('a renewal refused inside a group writes nothing: its proof stays unused, while the others of the group renew', async () => {
    const [reused, ...others] = await joinedNodes(4);
    // The current key's own CSR: refused as key-reused in the write, beside renewals that succeed.
    const csrDer = createCsr(reused!.privateKey, Buffer.from(reused!.leaf.publicKey.export({ type: 'spki', format: 'der' })));
    const body = buildRenewBody(reused!, csrDer, createHash('sha256').update(csrDer).digest('hex'), now());
    const before = r.renew.writes.stats.runs;
    const replies = await Promise.all([
      postToGateway(r.target, clientOf(reused!), PATH, body),
      ...others.map((id) => postToGateway(r.target, clientOf(id), PATH, freshBody(id))),
    ]);
    expect(replies.map((x) => x.status)).toEqual([403, 200, 200, 200]);
    expect(r.renew.writes.stats.runs - before).toBeLessThan(4);
    // Had the refused renewal recorded its proof, the same body would now be a replay.
    expect((await postToGateway(r.target, clientOf(reused!), PATH, body)).status).toBe(403);
    expect(await reasons(reused!.tenantId, reused!.identity.nodeId)).toEqual(['key-reused', 'key-reused']);
    expect(await testDb().renewProof.count({ where: { nodeId: reused!.identity.nodeId } })).toBe(0);
  });
});
