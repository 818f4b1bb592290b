import { createHash, generateKeyPairSync, sign } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createCsr, generateNodeKeyAndCsr } from '../../agent/keys';
import { chainToPem, postToGateway } from '../../agent/renew/gateway-client';
import type { LoadedIdentity } from '../../agent/renew/identity';
import { buildRenewBody } from '../../agent/renew/renew';
import { testDb } from '../../test/db';
import { BASE } from '../../test/renew-harness';
import { joinedNode, r, useRenewHarness } from '../../test/renew-file';
import { issueNodeCertificate } from '../pki/issuance/node-certificate';
import { PEER_HEADER, VOUCH_HEADER, vouchHeaders } from '../vouching/vouch';
import { renewPopMessage } from '../../protocol/renew-wire';

const REFUSED = '{"code":"ACCESS_DENIED","message":"Renew refused"}';
const PATH = `${BASE}/v1/renew`;

useRenewHarness();

const clientOf = (id: LoadedIdentity) => ({
  keyPem: id.identity.privateKeyPem,
  certificatePem: chainToPem([id.identity.certificateChain[0]!]),
});
const freshBody = (id: LoadedIdentity, clientTime = Math.floor(Date.now() / 1000)) => {
  const next = generateNodeKeyAndCsr();
  return buildRenewBody(id, next.csrDer, next.csrSha256, clientTime);
};

/** `id` with a new key and a leaf our node CA signed for it (not stored): the key, the leaf and the identity. */
function withNewCertificate(id: LoadedIdentity, notBefore: Date, ttlSeconds: number) {
  const key = generateNodeKeyAndCsr();
  const cert = issueNodeCertificate(r.h.crypto.nodeCa, {
    publicKeySpkiDer: key.spkiDer,
    trustDomain: r.h.crypto.trustDomain,
    siteId: id.identity.siteId,
    nodeId: id.identity.nodeId,
    role: 'node',
    notBefore,
    ttlSeconds,
  });
  const identity = {
    ...id,
    privateKey: key.privateKey,
    identity: {
      ...id.identity,
      privateKeyPem: key.privateKeyPem,
      certificateChain: [cert.der.toString('base64'), id.identity.certificateChain[1]!],
    },
  };
  return { key, cert, identity };
}

/** The reasons of `security.renew.refused` events about `nodeId` (or with no node, in the root tenant). */
async function reasons(tenantId: string, nodeId: string | null): Promise<string[]> {
  const events = await testDb().event.findMany({ where: { tenantId, type: 'security.renew.refused' }, orderBy: { id: 'asc' } });
  return events
    .map((e) => e.data as { reason: string; nodeId: string | null })
    .filter((d) => d.nodeId === nodeId)
    .map((d) => d.reason);
}

async function expectRefused(reply: { status: number; body: Buffer }) {
  expect(reply.status).toBe(403);
  expect(reply.body.toString()).toBe(REFUSED);
}

describe('Renew refusals: the same bytes, the right reason', () => {
  it('an expired certificate (its node_certs row has expired)', async () => {
    const id = await joinedNode();
    await testDb().nodeCert.updateMany({ where: { nodeId: id.identity.nodeId }, data: { notAfter: new Date(Date.now() - 1000) } });
    await expectRefused(await postToGateway(r.target, clientOf(id), PATH, freshBody(id)));
    expect(await reasons(r.h.rootTenantId, id.identity.nodeId)).toEqual(['expired']);
  });

  it('a certificate that really expired: the gateway still vouches for it and the reason is expired', async () => {
    const id = await joinedNode();
    const { key, cert: old, identity: expired } = withNewCertificate(id, new Date(Date.now() - 3_600_000), 60);
    await testDb().nodeCert.create({
      data: {
        serial: old.serialHex,
        nodeId: id.identity.nodeId,
        identityGeneration: 1,
        role: 'node',
        spkiSha256: new Uint8Array(createHash('sha256').update(key.spkiDer).digest()),
        der: new Uint8Array(old.der),
        notBefore: old.notBefore,
        notAfter: old.notAfter,
      },
    });
    await expectRefused(await postToGateway(r.target, clientOf(expired), PATH, freshBody(expired)));
    expect(await reasons(r.h.rootTenantId, id.identity.nodeId)).toEqual(['expired']);
  });

  it('a revoked certificate', async () => {
    const id = await joinedNode();
    await testDb().nodeCert.updateMany({
      where: { nodeId: id.identity.nodeId },
      data: { revokedAt: new Date(), revocationReason: 'test' },
    });
    await expectRefused(await postToGateway(r.target, clientOf(id), PATH, freshBody(id)));
    expect(await reasons(r.h.rootTenantId, id.identity.nodeId)).toEqual(['revoked']);
  });

  it('a certificate of an older identity generation (after a reclaim)', async () => {
    const id = await joinedNode();
    await testDb().node.update({ where: { id: id.identity.nodeId }, data: { identityGeneration: 2 } });
    await expectRefused(await postToGateway(r.target, clientOf(id), PATH, freshBody(id)));
    expect(await reasons(r.h.rootTenantId, id.identity.nodeId)).toEqual(['generation']);
  });

  it('a retired (deleted) node', async () => {
    const id = await joinedNode();
    await testDb().node.update({ where: { id: id.identity.nodeId }, data: { state: 'retired' } });
    await expectRefused(await postToGateway(r.target, clientOf(id), PATH, freshBody(id)));
    expect(await reasons(r.h.rootTenantId, id.identity.nodeId)).toEqual(['node-retired']);
  });

  it("another node's certificate presenting this node's leaf", async () => {
    const victim = await joinedNode();
    const other = await joinedNode();
    const next = generateNodeKeyAndCsr();
    const clientTime = Math.floor(Date.now() / 1000);
    const popSig = sign('sha256', renewPopMessage(next.csrSha256, victim.identity.nodeId, clientTime), {
      key: other.privateKey,
      dsaEncoding: 'ieee-p1363',
    });
    const body = JSON.stringify({
      csr: next.csrDer.toString('base64'),
      chain: [victim.identity.certificateChain[0], victim.identity.certificateChain[1]],
      clientTime,
      popSig: popSig.toString('base64url'),
      keyAttestation: {},
    });
    await expectRefused(await postToGateway(r.target, clientOf(other), PATH, body));
    expect(await reasons(r.h.rootTenantId, victim.identity.nodeId)).toEqual(['peer-mismatch']);
  });

  it('a leaf signed by our node CA that is not a node_certs row', async () => {
    const id = await joinedNode();
    const { identity: forgedId } = withNewCertificate(id, new Date(), 3600);
    const before = (await reasons(r.h.rootTenantId, null)).filter((x) => x === 'certificate-unknown').length;
    await expectRefused(await postToGateway(r.target, clientOf(forgedId), PATH, freshBody(forgedId)));
    expect((await reasons(r.h.rootTenantId, null)).filter((x) => x === 'certificate-unknown').length).toBe(before + 1);
  });

  it('clientTime off by 61 seconds (either way), while 59 seconds renews', async () => {
    const id = await joinedNode();
    await expectRefused(await postToGateway(r.target, clientOf(id), PATH, freshBody(id, Math.floor(Date.now() / 1000) - 61)));
    await expectRefused(await postToGateway(r.target, clientOf(id), PATH, freshBody(id, Math.floor(Date.now() / 1000) + 62)));
    expect(await reasons(r.h.rootTenantId, id.identity.nodeId)).toEqual(['clock', 'clock']);
    expect((await postToGateway(r.target, clientOf(id), PATH, freshBody(id, Math.floor(Date.now() / 1000) - 58))).status).toBe(200);
  });

  it('the same proof twice within 120 seconds; the refusal goes to the node owner once the key is proven', async () => {
    const id = await joinedNode();
    const body = freshBody(id);
    expect((await postToGateway(r.target, clientOf(id), PATH, body)).status).toBe(200);
    await expectRefused(await postToGateway(r.target, clientOf(id), PATH, body));
    expect(await reasons(id.tenantId, id.identity.nodeId)).toEqual(['replay']);
  });

  it('a popSig that does not verify under the current key', async () => {
    const id = await joinedNode();
    const body = JSON.parse(freshBody(id));
    body.popSig = sign('sha256', Buffer.from('something else'), { key: id.privateKey, dsaEncoding: 'ieee-p1363' }).toString('base64url');
    await expectRefused(await postToGateway(r.target, clientOf(id), PATH, JSON.stringify(body)));
    expect(await reasons(r.h.rootTenantId, id.identity.nodeId)).toEqual(['pop']);
  });

  it('a CSR for a key that was certified before', async () => {
    const id = await joinedNode();
    // The current key's own CSR: a valid P-256 CSR, for a key that is certified.
    const csrDer = createCsr(id.privateKey, Buffer.from(id.leaf.publicKey.export({ type: 'spki', format: 'der' })));
    const body = buildRenewBody(id, csrDer, createHash('sha256').update(csrDer).digest('hex'), Math.floor(Date.now() / 1000));
    await expectRefused(await postToGateway(r.target, clientOf(id), PATH, body));
    expect(await reasons(id.tenantId, id.identity.nodeId)).toEqual(['key-reused']);
  });

  it('a CSR that is not a valid P-256 request, under a valid proof (reported to the owner)', async () => {
    const id = await joinedNode();
    const notACsr = Buffer.from('not a csr');
    const body = buildRenewBody(id, notACsr, createHash('sha256').update(notACsr).digest('hex'), Math.floor(Date.now() / 1000));
    await expectRefused(await postToGateway(r.target, clientOf(id), PATH, body));
    expect(await reasons(id.tenantId, id.identity.nodeId)).toEqual(['csr']);
  });

  it('no client certificate at the gateway', async () => {
    const id = await joinedNode();
    const before = (await reasons(r.h.rootTenantId, null)).filter((x) => x === 'no-client-certificate').length;
    await expectRefused(await postToGateway(r.target, undefined, PATH, freshBody(id)));
    expect((await reasons(r.h.rootTenantId, null)).filter((x) => x === 'no-client-certificate').length).toBe(before + 1);
  });

  it("a direct call to the API that fakes the gateway's vouching", async () => {
    const id = await joinedNode();
    const body = Buffer.from(freshBody(id));
    const peer = id.leaf.raw;
    // A plain header naming the peer, then an assertion signed by a key of the caller's own, with a chain that
    // copies the real serving CA certificate: neither verifies.
    const forgedKey = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
    const attempts: Record<string, string>[] = [
      { [PEER_HEADER]: peer.toString('base64') },
      vouchHeaders(
        {
          key: forgedKey,
          chainB64: [
            r.gatewayCert.certificatePem.replace(/-----[^-]+-----|\s/g, ''),
            r.h.bundle.servingCa.certificatePem.replace(/-----[^-]+-----|\s/g, ''),
          ],
        },
        peer,
        body,
        PATH,
      ),
    ];
    const before = (await reasons(r.h.rootTenantId, null)).filter((x) => x === 'unvouched').length;
    for (const headers of attempts) {
      const reply = await fetch(`${r.apiUrl}${PATH}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: body.toString(),
      });
      expect(reply.status).toBe(403);
      expect(await reply.text()).toBe(REFUSED);
    }
    expect(headersNamed(attempts[1]!)).toContain(VOUCH_HEADER);
    expect((await reasons(r.h.rootTenantId, null)).filter((x) => x === 'unvouched').length).toBe(before + 2);
  });
});

const headersNamed = (h: Record<string, string>) => Object.keys(h);

describe('Renew under concurrency', () => {
  it('20 concurrent renewals with one proof issue one certificate', async () => {
    const id = await joinedNode();
    const body = freshBody(id);
    const replies = await Promise.all(Array.from({ length: 20 }, () => postToGateway(r.target, clientOf(id), PATH, body)));
    expect(replies.filter((x) => x.status === 200)).toHaveLength(1);
    for (const reply of replies.filter((x) => x.status !== 200)) await expectRefused(reply);
    expect(await testDb().nodeCert.count({ where: { nodeId: id.identity.nodeId } })).toBe(2);
  });
});
