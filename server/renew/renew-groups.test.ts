import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createCsr, generateNodeKeyAndCsr } from '../../agent/keys';
import { chainToPem, postToGateway } from '../../agent/renew/gateway-client';
import { loadIdentity, type LoadedIdentity } from '../../agent/renew/identity';
import { buildRenewBody } from '../../agent/renew/renew';
import { testDb } from '../../test/db';
import { createTestTenant } from '../../test/fixtures';
import { mintToken } from '../../test/join-harness';
import { BASE, joinThroughGateway } from '../../test/renew-harness';
import { r, useRenewHarness } from '../../test/renew-file';
import { voucherFromServingChain } from '../gateway/gateway';
import { RenewService } from './renew-service';
import { PEER_HEADER, VOUCH_HEADER, vouchHeaders } from '../vouching/vouch';

const PATH = `${BASE}/v1/renew`;

useRenewHarness();

async function joinedNodes(n: number): Promise<Array<LoadedIdentity & { tenantId: string }>> {
  const t = await createTestTenant(testDb());
  const nodes = [];
  for (let i = 0; i < n; i++) {
    const { dir } = await joinThroughGateway(r, (await mintToken(t)).token!);
    nodes.push(Object.assign(await loadIdentity(dir), { tenantId: t.tenantId }));
  }
  return nodes;
}

const clientOf = (id: LoadedIdentity) => ({
  keyPem: id.identity.privateKeyPem,
  certificatePem: chainToPem([id.identity.certificateChain[0]!]),
});
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
      expect(
        await testDb().event.count({
          where: { tenantId: id.tenantId, type: 'node.connected', data: { path: ['nodeId'], equals: id.identity.nodeId } },
        }),
      ).toBe(1);
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

describe('Groups of two instances racing on one database', () => {
  // A second RenewService on the same database: another API instance behind the same gateway.
  const second = () =>
    new RenewService({
      pool: r.h.pool,
      loadRuntime: async () => ({ crypto: r.h.crypto, servingCaPin: r.servingCaPin }),
      loadRootTenantId: async () => r.h.rootTenantId,
      refusalLimit: { limit: 1000, window: '60 seconds', keyPrefix: `${r.h.keyPrefix}-renew2` },
    });
  const voucher = () => voucherFromServingChain(r.gatewayCert.chainPem, r.gatewayCert.privateKeyPem);
  const call = (service: RenewService, id: LoadedIdentity, body: string) => {
    const leaf = Buffer.from(id.identity.certificateChain[0]!, 'base64');
    const headers = vouchHeaders(voucher(), leaf, Buffer.from(body), PATH);
    return service.renew({ body: Buffer.from(body), vouch: headers[VOUCH_HEADER], peer: headers[PEER_HEADER], path: PATH });
  };

  it('one new key asked for by two nodes through two instances is certified once; the rest of both groups renew', async () => {
    // Several rounds: in some the two groups' statements overlap and the unique index decides (the group
    // then falls back to one renewal at a time), in others the later group already sees the certificate.
    for (let round = 0; round < 3; round++) {
      const nodes = await joinedNodes(6);
      const other = second();
      const shared = generateNodeKeyAndCsr();
      const bodyFor = (id: LoadedIdentity, key = generateNodeKeyAndCsr()) => buildRenewBody(id, key.csrDer, key.csrSha256, now());
      // Nodes 0 and 3 ask for the same new key, each in its own instance's group.
      const answers = await Promise.all([
        ...nodes.slice(0, 3).map((id, i) => call(r.renew, id, i === 0 ? bodyFor(id, shared) : bodyFor(id))),
        ...nodes.slice(3).map((id, i) => call(other, id, i === 0 ? bodyFor(id, shared) : bodyFor(id))),
      ]);
      const statuses = answers.map((a) => a.status);
      expect([statuses[0], statuses[3]].sort()).toEqual([200, 403]);
      expect([statuses[1], statuses[2], statuses[4], statuses[5]]).toEqual([200, 200, 200, 200]);
      const sharedSpki = createHash('sha256').update(shared.spkiDer).digest();
      expect(await testDb().nodeCert.count({ where: { spkiSha256: sharedSpki } })).toBe(1);
      const loser = statuses[0] === 403 ? nodes[0]! : nodes[3]!;
      expect(await reasons(loser.tenantId, loser.identity.nodeId)).toEqual(['key-reused']);
    }
  });

  it('one proof sent 10 times to each of two instances issues one certificate', async () => {
    const [id] = await joinedNodes(1);
    const other = second();
    const body = freshBody(id!);
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => call(i % 2 ? other : r.renew, id!, body)));
    expect(answers.filter((a) => a.status === 200)).toHaveLength(1);
    expect(await testDb().nodeCert.count({ where: { nodeId: id!.identity.nodeId } })).toBe(2);
    expect((await reasons(id!.tenantId, id!.identity.nodeId)).filter((x) => x === 'replay')).toHaveLength(19);
  });
});
