import { createPrivateKey, createPublicKey, webcrypto, X509Certificate } from 'node:crypto';
import * as x509 from '../../test/pki/x509';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { signedBy, trustBody, trustGeneration, type TrustGeneration } from '../../test/trust-fixture';
import { issueGatewayCertificate } from '../../server/pki/issuance/gateway';
import { pinnedFetch } from '../bcd/pinned-fetch';
import { resolveJoinTrust } from '../join';
import { generateNodeKeyAndCsr } from '../keys';
import { checkGatewayChainDer } from '../renew/gateway-client';
import { JoinAnswerError, verifyJoinAnswer } from '../verify-answer';
import { trustCheck } from './doctor';
import { TRUST_FILE, TrustStore } from './store';

const NODE = 'node_wire1';
const old: TrustGeneration = trustGeneration();
const next: TrustGeneration = trustGeneration();
const install = { servingCaPin: old.servingCaPin, joinSigningKeyPin: old.signingPin, joinEncryptionKeyPin: old.encryptionPin };

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'trust-wiring-'));
});
afterEach(() => rm(dir, { recursive: true, force: true }));

/** A store holding version 2: both generations trusted, the new one first, the old signing key known. */
async function rotatedStore() {
  const store = await TrustStore.open({ dir, install, log: () => {} });
  store.learnSigningKey(createPublicKey(old.signingKey));
  expect(await store.acceptEvent(signedBy(trustBody(NODE, 2, [next, old]), [old]), NODE)).toBe(true);
  return store;
}

describe('gateway chains under the trust set', () => {
  let server: https.Server;
  let url: string;
  const pem = issueGatewayCertificate(next.bundle, { sans: ['127.0.0.1'] });
  beforeAll(async () => {
    server = https.createServer({ cert: pem.chainPem, key: pem.privateKeyPem }, (_req, res) => res.end('{"ok":true}'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/x`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('pinnedFetch accepts a chain from the second serving CA only once the set holds its pin', async () => {
    const fresh = await TrustStore.open({ dir, install, log: () => {} });
    await expect(pinnedFetch({ servingCaPin: old.servingCaPin, trust: fresh })(url)).rejects.toThrow(/Refusing the gateway/);
    const store = await rotatedStore();
    expect((await pinnedFetch({ servingCaPin: old.servingCaPin, trust: store })(url)).status).toBe(200);
  });

  it("the TLS 1.3 client's chain check (checkGatewayChainDer) takes the set's pins", async () => {
    const chain = [pem.certificatePem, next.bundle.servingCa.certificatePem].map((p) => Buffer.from(new X509Certificate(p).raw));
    expect(() => checkGatewayChainDer(chain, [old.servingCaPin], '127.0.0.1')).toThrow(/serving CA does not match/);
    const store = await rotatedStore();
    expect(checkGatewayChainDer(chain, store.servingCaPins(), '127.0.0.1').checkIP('127.0.0.1')).toBe('127.0.0.1');
  });
});

describe('a serving CA certified by the one pinned', () => {
  it('is followed up to the pinned CA, and a CA that did not issue the one before stops the walk', async () => {
    const ALG = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
    const subtle = webcrypto.subtle;
    const der = (pem: string) => Buffer.from(new X509Certificate(pem).raw);
    const publicKey = await subtle.importKey(
      'spki',
      createPublicKey(next.bundle.servingCa.certificatePem).export({ type: 'spki', format: 'der' }),
      ALG,
      true,
      ['verify'],
    );
    const signingKey = await subtle.importKey(
      'pkcs8',
      createPrivateKey(old.bundle.servingCa.privateKeyPem).export({ type: 'pkcs8', format: 'der' }),
      ALG,
      false,
      ['sign'],
    );
    const cross = await x509.X509CertificateGenerator.create(
      {
        serialNumber: '0c05',
        subject: new X509Certificate(next.bundle.servingCa.certificatePem).subject.replace(/\n/g, ', '),
        issuer: new X509Certificate(old.bundle.servingCa.certificatePem).subject.replace(/\n/g, ', '),
        notBefore: new Date(Date.now() - 3_600_000),
        notAfter: new Date(Date.now() + 86_400_000),
        signingAlgorithm: ALG,
        // node:crypto's CryptoKey and the DOM's differ only in types (the newer KeyUsage values).
        publicKey: publicKey as unknown as CryptoKey,
        signingKey: signingKey as unknown as CryptoKey,
        extensions: [
          new x509.BasicConstraintsExtension(true, undefined, true),
          await x509.SubjectKeyIdentifierExtension.create(publicKey as unknown as CryptoKey, false, webcrypto as unknown as Crypto),
        ],
      },
      webcrypto as unknown as Crypto,
    );
    const leaf = issueGatewayCertificate(next.bundle, { sans: ['127.0.0.1'] });
    const crossDer = Buffer.from(cross.rawData);
    const chain = [der(leaf.certificatePem), crossDer, der(old.bundle.servingCa.certificatePem)];
    expect(checkGatewayChainDer(chain, [old.servingCaPin], '127.0.0.1').checkIP('127.0.0.1')).toBe('127.0.0.1');
    // Without the certificate that links them, or with the leaf's own CA in its place under another pin, it is refused.
    expect(() => checkGatewayChainDer([chain[0]!, chain[2]!], [old.servingCaPin], '127.0.0.1')).toThrow(
      /not signed by the pinned serving CA/,
    );
    expect(() => checkGatewayChainDer([chain[0]!, der(next.bundle.servingCa.certificatePem)], [old.servingCaPin], '127.0.0.1')).toThrow(
      /serving CA does not match/,
    );
  });
});

describe('joins during a signing and encryption rotation', () => {
  const keys = generateNodeKeyAndCsr();
  const answer = (signers: TrustGeneration[]) =>
    signedBy({ status: 'pending', requestId: 'jreq_1', retryAfterSeconds: 5, csrSha256: keys.csrSha256 }, signers);
  const options = { csrSha256: keys.csrSha256, publicKeySpkiDer: keys.spkiDer, expectedRole: 'node' };

  it('an answer whose sig is the new key verifies for an agent of the old pin through its sigs entry, and not without it', () => {
    const pinned = { signingKeyPin: old.signingPin, signingCertificateDer: Buffer.from(old.signingCertificate, 'base64') };
    expect(verifyJoinAnswer(answer([next, old]), { ...pinned, ...options }).status).toBe('pending');
    expect(() => verifyJoinAnswer(answer([next]), { ...pinned, ...options })).toThrow(JoinAnswerError);
  });

  it('resolveJoinTrust takes the pinned keys from join.next and, with a set held, seals to its first trusted key', async () => {
    const document = {
      join: {
        signingCertificate: next.signingCertificate,
        encryptionJwk: next.encryptionJwk,
        next: { signingCertificate: old.signingCertificate, encryptionJwk: old.encryptionJwk },
      },
    };
    const fetch = (async () => new Response(JSON.stringify(document), { status: 200 })) as typeof globalThis.fetch;
    const pins = { joinSigningKeyPin: old.signingPin, joinEncryptionKeyPin: old.encryptionPin };
    const before = await resolveJoinTrust({ serverUrl: 'https://cp.example', pins, fetch });
    expect(before.encryptionJwk).toEqual(old.encryptionJwk);
    expect([...before.signingKeys!.keys()]).toEqual([old.signingPin]);
    const store = await rotatedStore();
    const after = await resolveJoinTrust({ serverUrl: 'https://cp.example', pins, fetch, trust: store });
    expect(after.encryptionJwk).toEqual(next.encryptionJwk);
    expect([...after.signingKeys!.keys()].sort()).toEqual([next.signingPin, old.signingPin].sort());
    expect(verifyJoinAnswer(answer([next]), { ...after, ...options }).status).toBe('pending');
  });
});

describe('doctor', () => {
  it('shows version 0 and the install pins without trust.json, then the version and pins, and fails a file not 0600', async () => {
    expect(await trustCheck(dir, install)).toEqual({
      name: 'trust',
      ok: true,
      detail: `version 0 (no trust.json yet: the install's pins); serving CA pins ${old.servingCaPin}; join signing key pins ${old.signingPin}; join encryption key pins ${old.encryptionPin}`,
    });
    await rotatedStore();
    const held = await trustCheck(dir, install);
    expect(held.ok).toBe(true);
    expect(held.detail).toContain('version 2 (');
    expect(held.detail).toContain(`serving CA pins ${next.servingCaPin}, ${old.servingCaPin}`);
    await chmod(path.join(dir, TRUST_FILE), 0o644);
    expect(await trustCheck(dir, install)).toMatchObject({ ok: false, detail: expect.stringMatching(/mode 0644, not 0600/) });
    await writeFile(path.join(dir, TRUST_FILE), 'nonsense', { mode: 0o600 });
    await chmod(path.join(dir, TRUST_FILE), 0o600);
    expect(await trustCheck(dir, install)).toMatchObject({
      ok: false,
      detail: expect.stringMatching(/cannot be used \(trust\.json is not JSON\)/),
    });
  });
});
