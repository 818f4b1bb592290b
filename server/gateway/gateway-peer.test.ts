import { webcrypto, X509Certificate } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateNodeKeyAndCsr } from '../../agent/keys';
import { chainToPem, postToGateway } from '../../agent/renew/gateway-client';
import { loadIdentity, type LoadedIdentity } from '../../agent/renew/identity';
import { buildRenewBody } from '../../agent/renew/renew';
import { testDb } from '../../test/db';
import { createTestTenant } from '../../test/fixtures';
import { spawnGateway, type SpawnedGateway } from '../../test/gateway-process';
import { mintToken } from '../../test/join-harness';
import { BASE, createRenewHarness, issueRecordedCertificate, joinThroughGateway, type RenewHarness } from '../../test/renew-harness';
import { issueNodeCertificate } from '../pki/issuance/node-certificate';
import * as x509 from '../../test/pki/x509';
import { certificatesOf, isNodeCertificate } from './peer';

// The gateway process vouches for a client certificate only when the node CA issued it (dates aside): an
// expired self-signed or foreign-CA certificate naming a node is a caller without a certificate, whatever
// OpenSSL's last complaint about it was.

const REFUSED = '{"code":"ACCESS_DENIED","message":"Renew refused"}';
const PATH = `${BASE}/v1/renew`;
const ALG = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
const HOUR = 3_600_000;
const crypto = webcrypto as unknown as Crypto;

let r: RenewHarness;
let gateway: SpawnedGateway;
beforeAll(async () => {
  // Its own tenant for refusals that name no node: the counts below are of this file's calls alone.
  r = await createRenewHarness({ ownRefusalTenant: true });
  gateway = await spawnGateway({
    credentials: { chainPem: r.gatewayCert.chainPem, keyPem: r.gatewayCert.privateKeyPem, nodeCaPem: r.h.bundle.nodeCa.certificatePem },
    apiUrl: r.apiUrl,
  });
}, 60_000);
afterAll(async () => {
  await gateway?.stop();
  await r?.close();
});

const target = () => ({ ...r.target, gatewayUrl: gateway.url });

/** The tenants of this file's victims: refusals naming their nodes go there. */
const victimTenants: string[] = [];

async function victim(): Promise<LoadedIdentity> {
  const t = await createTestTenant(testDb());
  victimTenants.push(t.tenantId);
  const { dir } = await joinThroughGateway(r, (await mintToken(t)).token!);
  return loadIdentity(dir);
}

async function pkcs8Pem(key: CryptoKey) {
  const der = Buffer.from(await crypto.subtle.exportKey('pkcs8', key));
  return `-----BEGIN PRIVATE KEY-----\n${der
    .toString('base64')
    .match(/.{1,64}/g)!
    .join('\n')}\n-----END PRIVATE KEY-----\n`;
}

/**
 * A certificate with a node certificate's profile naming `spiffeId`, expired an hour ago: self-signed, or
 * signed by a foreign key under the node CA's own subject (so OpenSSL finds the real node CA by name and
 * reports a bad signature, then the date).
 */
async function forged(spiffeId: string, issuer: 'self' | 'foreign-ca') {
  const keys = (await crypto.subtle.generateKey(ALG, true, ['sign', 'verify'])) as CryptoKeyPair;
  const foreign = (await crypto.subtle.generateKey(ALG, true, ['sign', 'verify'])) as CryptoKeyPair;
  const nodeCaSubject = new x509.X509Certificate(r.h.bundle.nodeCa.certificatePem).subject;
  const cert = await x509.X509CertificateGenerator.create(
    {
      serialNumber: '0a1b2c',
      subject: 'OU=bc-role:node',
      issuer: issuer === 'self' ? 'OU=bc-role:node' : nodeCaSubject,
      notBefore: new Date(Date.now() - 2 * HOUR),
      notAfter: new Date(Date.now() - HOUR),
      signingAlgorithm: ALG,
      publicKey: keys.publicKey,
      signingKey: issuer === 'self' ? keys.privateKey : foreign.privateKey,
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
        new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth, x509.ExtendedKeyUsage.clientAuth]),
        new x509.SubjectAlternativeNameExtension([{ type: 'url', value: spiffeId }]),
      ],
    },
    crypto,
  );
  return { certificatePem: cert.toString('pem'), keyPem: await pkcs8Pem(keys.privateKey) };
}

/** The newest event's id: what a call publishes comes after it. */
const lastEventId = async () => (await testDb().event.aggregate({ _max: { id: true } }))._max.id ?? 0n;
/** security.renew.refused events after `after` of this file's tenants (its refusal tenant, its victims'). */
const refusalsSince = (after: bigint) =>
  testDb().event.findMany({
    where: { type: 'security.renew.refused', id: { gt: after }, tenantId: { in: [r.h.rootTenantId, ...victimTenants] } },
    orderBy: { id: 'asc' },
  });
const callsOf = (path: string) =>
  gateway.lines
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { peer: string; path: string; status: number })
    .filter((l) => l.path === path);

describe('the gateway process vouches only for certificates of the node CA', () => {
  it.each(['self', 'foreign-ca'] as const)(
    'an expired %s-signed certificate naming a node: the uniform refusal, and nothing names the node',
    async (issuer) => {
      const node = await victim();
      const client = await forged(node.spiffeId, issuer);
      // The caller asks to renew the victim's real leaf (certificates are no secret), presenting its forgery.
      const next = generateNodeKeyAndCsr();
      const body = buildRenewBody(node, next.csrDer, next.csrSha256, Math.floor(Date.now() / 1000));
      const since = await lastEventId();
      const before = callsOf(PATH).length;
      const reply = await postToGateway(target(), client, PATH, body);
      expect(reply.status).toBe(403);
      expect(reply.body.toString()).toBe(REFUSED);

      const events = await refusalsSince(since);
      expect(events.map((e) => e.data)).toEqual([expect.objectContaining({ reason: 'no-client-certificate', nodeId: null, serial: null })]);
      expect(events[0]!.tenantId).toBe(r.h.rootTenantId);
      expect(JSON.stringify(events.map((e) => e.data))).not.toContain(node.identity.nodeId);
      await expect.poll(() => callsOf(PATH).length).toBe(before + 1);
      expect(callsOf(PATH).at(-1)).toMatchObject({ peer: '-', status: 403 });
      expect(gateway.lines.join('\n')).not.toContain(node.spiffeId);
    },
  );

  it('a real node certificate that expired is still vouched for: refused as expired, naming its node', async () => {
    const node = await victim();
    const key = generateNodeKeyAndCsr();
    const old = await issueRecordedCertificate(r, node.identity, key.spkiDer, { notBefore: new Date(Date.now() - HOUR), ttlSeconds: 60 });
    const expired = {
      ...node,
      privateKey: key.privateKey,
      identity: {
        ...node.identity,
        privateKeyPem: key.privateKeyPem,
        certificateChain: [old.der.toString('base64'), node.identity.certificateChain[1]!],
      },
    };
    const next = generateNodeKeyAndCsr();
    const since = await lastEventId();
    const reply = await postToGateway(
      target(),
      { keyPem: key.privateKeyPem, certificatePem: chainToPem([old.der.toString('base64')]) },
      PATH,
      buildRenewBody(expired, next.csrDer, next.csrSha256, Math.floor(Date.now() / 1000)),
    );
    expect(reply.status).toBe(403);
    expect(reply.body.toString()).toBe(REFUSED);
    expect((await refusalsSince(since)).map((e) => e.data)).toEqual([
      expect.objectContaining({ reason: 'expired', nodeId: node.identity.nodeId, serial: old.serialHex }),
    ]);
    await expect.poll(() => callsOf(PATH).some((l) => l.peer === node.spiffeId && l.status === 403)).toBe(true);
  });

  it('a current node certificate renews through the process', async () => {
    const node = await victim();
    const next = generateNodeKeyAndCsr();
    const reply = await postToGateway(
      target(),
      { keyPem: node.identity.privateKeyPem, certificatePem: chainToPem([node.identity.certificateChain[0]!]) },
      PATH,
      buildRenewBody(node, next.csrDer, next.csrSha256, Math.floor(Date.now() / 1000)),
    );
    expect(reply.status).toBe(200);
    await expect.poll(() => callsOf(PATH).some((l) => l.peer === node.spiffeId && l.status === 200)).toBe(true);
  });
});

describe('isNodeCertificate', () => {
  it('checks issuer, signature, CA flag and usages, and nothing about dates', async () => {
    const nodeCas = certificatesOf(r.h.bundle.nodeCa.certificatePem);
    const key = generateNodeKeyAndCsr();
    const request = {
      publicKeySpkiDer: key.spkiDer,
      trustDomain: r.h.crypto.trustDomain,
      siteId: 'site_1',
      nodeId: 'node_1',
      role: 'node' as const,
      ttlSeconds: 60,
    };
    const expired = new X509Certificate(
      issueNodeCertificate(r.h.crypto.nodeCa, { ...request, notBefore: new Date(Date.now() - HOUR) }).der,
    );
    expect(isNodeCertificate(expired, nodeCas)).toBe(true);
    for (const issuer of ['self', 'foreign-ca'] as const) {
      expect(isNodeCertificate(new X509Certificate((await forged('spiffe://x/site/s/node/n', issuer)).certificatePem), nodeCas)).toBe(
        false,
      );
    }
    // The node CA itself (a CA, and no clientAuth leaf), and the serving CA's gateway leaf (another CA).
    expect(isNodeCertificate(nodeCas[0]!, nodeCas)).toBe(false);
    expect(isNodeCertificate(new X509Certificate(r.gatewayCert.chainPem), nodeCas)).toBe(false);
  });

  it('refuses what the node CA signed without a TLS client leaf profile', async () => {
    const nodeCas = certificatesOf(r.h.bundle.nodeCa.certificatePem);
    const caKey = await crypto.subtle.importKey('pkcs8', r.h.crypto.nodeCa.key.export({ type: 'pkcs8', format: 'der' }), ALG, false, [
      'sign',
    ]);
    const keys = (await crypto.subtle.generateKey(ALG, true, ['sign', 'verify'])) as CryptoKeyPair;
    const signed = async (extensions: x509.Extension[]) =>
      new X509Certificate(
        Buffer.from(
          (
            await x509.X509CertificateGenerator.create(
              {
                serialNumber: '01',
                subject: 'OU=bc-role:node',
                issuer: new x509.X509Certificate(r.h.bundle.nodeCa.certificatePem).subject,
                notBefore: new Date(Date.now() - HOUR),
                notAfter: new Date(Date.now() + HOUR),
                signingAlgorithm: ALG,
                publicKey: keys.publicKey,
                signingKey: caKey,
                extensions,
              },
              crypto,
            )
          ).rawData,
        ),
      );
    const leaf = new x509.BasicConstraintsExtension(false, undefined, true);
    const signing = new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true);
    const client = new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.clientAuth]);
    // The whole profile verifies: the CA's own signature, issuer and usages are what is checked.
    expect(isNodeCertificate(await signed([leaf, signing, client]), nodeCas)).toBe(true);
    expect(
      isNodeCertificate(await signed([leaf, signing, new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth])]), nodeCas),
    ).toBe(false);
    expect(
      isNodeCertificate(await signed([leaf, new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyEncipherment, true), client]), nodeCas),
    ).toBe(false);
    expect(isNodeCertificate(await signed([leaf, client]), nodeCas)).toBe(false);
    expect(isNodeCertificate(await signed([leaf, signing]), nodeCas)).toBe(false);
    expect(isNodeCertificate(await signed([new x509.BasicConstraintsExtension(true, undefined, true), signing, client]), nodeCas)).toBe(
      false,
    );
  });
});
