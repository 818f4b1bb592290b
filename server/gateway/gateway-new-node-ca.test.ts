import { createPublicKey, randomBytes, X509Certificate } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateNodeKeyAndCsr } from '../../agent/keys';
import { loadNodeIdentity, type NodeLoadedIdentity } from '../../agent/renew/identity';
import type { TrustStore } from '../../agent/trust/store';
import { openSession } from '../../agent/session/session-client';
import { testDb } from '../../test/db';
import { reservePort } from '../../test/gateway-process';
import { joinThroughRotatingGateway, startRotationApi, type RotationApi } from '../../test/rotation-api';
import { createRotatingPki, type RotatingPki } from '../../test/rotation-pki';
import { issueGatewayCertificate } from '../pki/issuance/gateway';
import { issueNodeCertificate } from '../pki/issuance/node-certificate';
import { gatewayFilesIn, writeGatewayFiles } from './files';
import { runGateway } from './main';

// The API issues certificates of a new node CA from the moment its instance activates the rotation, and an
// agent moves its session to such a certificate right after renewing. A gateway learns the node CAs by polling
// the API every few seconds: when an operator activates soon after the prepare (every node already holds the
// trust set, which travels on the sessions), the gateway may not trust the new CA yet. It must not refuse that
// agent's Hello as one without a client certificate: it asks the API for its credentials at once and checks
// the certificate again.

let rotating: RotatingPki;
let api: RotationApi;
let stopGateway: () => Promise<void>;
let gatewayUrl: string;
const credentialsKey = `gateway-new-node-ca-${randomBytes(4).toString('hex')}`;
/** The gateway's credentials calls so far (the API counts them in its rate limit). */
const credentialsCalls = async () =>
  Number(
    (
      await testDb().$queryRawUnsafe<Array<{ n: bigint }>>(
        'SELECT COALESCE(sum(count), 0)::bigint AS n FROM rate_limits WHERE key LIKE $1',
        `${credentialsKey}:%`,
      )
    )[0]!.n,
  );

beforeAll(async () => {
  rotating = createRotatingPki();
  // Activated, the API issues from the new node CA (the shared rotating PKI keeps issuing from the old one).
  const runtime = () => {
    const r = rotating.runtime();
    if (rotating.phase !== 'activated' && rotating.phase !== 'retired') return r;
    const { nodeCa, nodeCaCertificate, nodeCaPin } = rotating.nextCrypto;
    return { ...r, crypto: { ...r.crypto, nodeCa, nodeCaCertificate, nodeCaPin } };
  };
  const issuing = { ...rotating, pki: { load: async () => runtime(), loadCrypto: async () => runtime().crypto } };
  api = await startRotationApi(issuing, { credentialsLimit: { keyPrefix: credentialsKey }, ownRefusalTenant: true });
  const cert = issueGatewayCertificate(rotating.old, { sans: ['localhost', '127.0.0.1'] });
  const dir = await mkdtemp(path.join(tmpdir(), 'bc-gateway-node-ca-'));
  await writeGatewayFiles(gatewayFilesIn(dir), {
    chainPem: cert.chainPem,
    keyPem: cert.privateKeyPem,
    nodeCaPem: rotating.old.nodeCa.certificatePem,
  });
  const port = await reservePort();
  // It asks for its credentials once at start, then not again during the test unless something makes it.
  stopGateway = await runGateway({ dir, port, host: '127.0.0.1', apiUrl: api.url, credentialsPollMs: 3_600_000 });
  gatewayUrl = `https://127.0.0.1:${port}`;
  // Its start-up call has been answered before the API moves on.
  for (let waited = 0; (await credentialsCalls()) < 1 && waited < 20_000; waited += 100) await new Promise((r) => setTimeout(r, 100));
  await new Promise((r) => setTimeout(r, 500));
}, 60_000);
afterAll(async () => {
  await stopGateway?.();
  await api?.close();
});

/** Joins a machine through the gateway: its identity as the agent keeps it (issued by the node CA in use). */
async function joinNode() {
  return { identity: await loadNodeIdentity(await joinThroughRotatingGateway(rotating, anyServedPin())) };
}

/** The gateway as an agent holding both serving CA pins sees it (it may have moved to the new chain). */
const anyServedPin = () => ({
  gatewayUrl,
  servingCaPin: rotating.pins.oldServingCa,
  trust: { servingCaPins: () => [rotating.pins.oldServingCa, rotating.pins.nextServingCa] } as unknown as TrustStore,
});

describe('a gateway that has not yet polled the node CA the API issues from', () => {
  it('opens the session of a certificate of that CA instead of refusing it', async () => {
    // The gateway trusts only the old node CA (its start-up poll); the API has already moved on.
    rotating.phase = 'activated';
    const node = await joinNode();
    const leaf = new X509Certificate(Buffer.from(node.identity.identity.certificateChain[0]!, 'base64'));
    expect(leaf.verify(createPublicKey(rotating.nextCrypto.nodeCa.key))).toBe(true);
    expect(await credentialsCalls()).toBe(1);
    const session = await openSession(anyServedPin(), node.identity, { agentVersion: '0.1.0' });
    try {
      expect(session.welcome.nodeId).toBe(node.identity.identity.nodeId);
    } finally {
      session.close();
    }
    const refusals = await testDb().event.findMany({ where: { type: 'security.session.refused', tenantId: api.refusalTenantId } });
    expect(refusals.filter((e) => (e.data as { reason?: string }).reason === 'no-client-certificate')).toEqual([]);
  });

  it('still vouches for no one whose certificate chains to no CA the API trusts', async () => {
    const stranger = createRotatingPki();
    const key = generateNodeKeyAndCsr();
    const issued = issueNodeCertificate(stranger.oldCrypto.nodeCa, {
      publicKeySpkiDer: key.spkiDer,
      trustDomain: stranger.oldCrypto.trustDomain,
      siteId: 'site_stranger',
      nodeId: 'node_stranger',
      role: 'node',
      notBefore: new Date(),
      ttlSeconds: 3600,
    });
    const identity = {
      identity: {
        privateKeyPem: key.privateKeyPem,
        certificateChain: [issued.der.toString('base64'), stranger.oldCrypto.nodeCaCertificate],
        nodeId: 'node_stranger',
        siteId: 'site_stranger',
        trustDomain: stranger.oldCrypto.trustDomain,
        role: 'node',
      },
    } as unknown as NodeLoadedIdentity;
    const unvouched = async () =>
      (await testDb().event.findMany({ where: { type: 'security.session.refused', tenantId: api.refusalTenantId } })).filter(
        (e) => (e.data as { reason?: string }).reason === 'no-client-certificate',
      ).length;
    const before = await unvouched();
    await expect(openSession(anyServedPin(), identity, { agentVersion: '0.1.0' })).rejects.toThrow('Session refused');
    await expect.poll(unvouched).toBe(before + 1);
  });
});
