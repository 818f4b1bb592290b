import { createPrivateKey, X509Certificate } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { parseCsr } from '../join/crypto/csr';
import { createPkiBundle } from '../pki/bundle/bundle';
import { issueGatewayCertificate, issueGatewayCertificateForKey } from '../pki/issuance/gateway';
import { activateInBundle, prepareInBundle, retireInBundle } from '../pki/rotation/bundle-steps';
import { servingCaChainOf } from '../pki/rotation/cross-certificate';
import { makeRotatingKey } from '../pki/rotation/new-key';
import { CredentialsFollower } from './credentials-follower';
import { createGateway, type GatewayCredentials } from './gateway';

// The gateway's side of its credentials call: it changes what it serves only on a valid answer that differs,
// serves a new chain only for the key it asked for, and keeps what it has while the API is away.

const old = createPkiBundle({ trustDomain: 'follow.example.com' });
const next = createPkiBundle({ trustDomain: 'follow.example.com' });
const der = (pem: string) => new X509Certificate(pem).raw.toString('base64');
const start = issueGatewayCertificate(old, { sans: ['localhost'] });
const initial: GatewayCredentials = {
  servingChainPem: start.chainPem,
  servingKeyPem: start.privateKeyPem,
  nodeCaPem: old.nodeCa.certificatePem,
};

type Answer = { status: number; body: Buffer } | Error;

/** A follower over a fake API that answers `answer(body)`; what it applied and saved. */
function follower(answer: (body: { csr: string; trustVersion: number }) => Answer, start: GatewayCredentials = initial) {
  let current = start;
  const applied: GatewayCredentials[] = [];
  const saved: GatewayCredentials[] = [];
  const f = new CredentialsFollower({
    post: async (_path, body) => {
      const reply = answer(JSON.parse(body.toString()) as { csr: string; trustVersion: number });
      if (reply instanceof Error) throw reply;
      return reply;
    },
    basePath: '/api/compute',
    current: () => current,
    apply: (c) => void applied.push((current = c)),
    save: async (c) => void saved.push(c),
    log: () => {},
  });
  return { f, applied, saved };
}
const ok = (value: object) => ({ status: 200, body: Buffer.from(JSON.stringify(value)) });

describe('CredentialsFollower', () => {
  it('keeps what it serves while the API is unreachable, refuses or answers nonsense', async () => {
    for (const reply of [new Error('ECONNREFUSED'), { status: 503, body: Buffer.from('{}') }, ok({ trustVersion: 'x' })]) {
      const { f, applied } = follower(() => reply);
      await f.poll();
      expect(applied).toEqual([]);
      expect(f.stats.failures).toBe(1);
      expect(f.trustVersion).toBe(0);
    }
  });

  it('changes nothing for an answer naming what it serves, and records the version', async () => {
    const { f, applied } = follower(() => ok({ trustVersion: 5, servingChain: null, nodeCas: [der(old.nodeCa.certificatePem)] }));
    await f.poll();
    expect(applied).toEqual([]);
    expect(f.trustVersion).toBe(5);
  });

  it('serves a new chain for the key it asked for, then asks with a new key', async () => {
    const csrs: string[] = [];
    const { f, applied, saved } = follower(({ csr }) => {
      csrs.push(csr);
      const issued = issueGatewayCertificateForKey(next, { spkiDer: parseCsr(Buffer.from(csr, 'base64')).spkiDer, sans: ['localhost'] });
      const [leaf, ca] = issued.chainPem.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g)!;
      return ok({
        trustVersion: 3,
        servingChain: [der(leaf!), der(ca!)],
        nodeCas: [der(next.nodeCa.certificatePem), der(old.nodeCa.certificatePem)],
      });
    });
    await f.poll();
    expect(applied).toHaveLength(1);
    expect(saved).toEqual(applied);
    const served = applied[0]!;
    const leaf = new X509Certificate(served.servingChainPem);
    expect(leaf.checkPrivateKey(createPrivateKey(served.servingKeyPem))).toBe(true);
    expect(leaf.verify(new X509Certificate(next.servingCa.certificatePem).publicKey)).toBe(true);
    expect(served.nodeCaPem).toBe(next.nodeCa.certificatePem + old.nodeCa.certificatePem);
    await f.poll();
    expect(csrs[1]).not.toBe(csrs[0]);
  });

  it('sends what the API names after its leaf: the cross-certificate and the old CA while active, the CA alone after', async () => {
    const active = activateInBundle(prepareInBundle(old, 'serving-ca', makeRotatingKey('serving-ca')), 'serving-ca');
    const retired = retireInBundle(active, 'serving-ca');
    const plain = issueGatewayCertificate(retired, { sans: ['localhost'] });
    const start = { servingChainPem: plain.chainPem, servingKeyPem: plain.privateKeyPem, nodeCaPem: old.nodeCa.certificatePem };
    let tail = servingCaChainOf(active).map(der);
    const { f, applied } = follower(
      () => ok({ trustVersion: 3, servingChain: null, nodeCas: [der(old.nodeCa.certificatePem)], servingCaChain: tail }),
      start,
    );
    await f.poll();
    expect(applied).toHaveLength(1);
    expect(applied[0]!.servingKeyPem).toBe(plain.privateKeyPem);
    expect(applied[0]!.servingChainPem).toBe(plain.certificatePem + servingCaChainOf(active).join(''));
    await f.poll();
    expect(applied).toHaveLength(1);
    tail = servingCaChainOf(retired).map(der);
    await f.poll();
    expect(applied).toHaveLength(2);
    expect(applied[1]!.servingChainPem).toBe(plain.certificatePem + retired.servingCa.certificatePem);
    // A chain whose first CA did not sign the leaf is not taken.
    tail = [der(next.servingCa.certificatePem)];
    await f.poll();
    expect(applied).toHaveLength(2);
  });

  it('refuses a chain for another key than the one it asked for', async () => {
    const other = issueGatewayCertificate(next, { sans: ['localhost'] });
    const [leaf, ca] = other.chainPem.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g)!;
    const { f, applied } = follower(() =>
      ok({ trustVersion: 3, servingChain: [der(leaf!), der(ca!)], nodeCas: [der(old.nodeCa.certificatePem)] }),
    );
    await f.poll();
    expect(applied).toEqual([]);
    expect(f.stats.failures).toBe(1);
  });
});

describe('GatewayServer.updateCredentials', () => {
  it('refuses a key that does not match the chain, and keeps serving what it had', () => {
    const server = createGateway({ ...initial, apiUrl: 'http://127.0.0.1:9', basePath: '/api/compute' });
    const other = issueGatewayCertificate(next, { sans: ['localhost'] });
    expect(() => server.updateCredentials({ ...initial, servingChainPem: other.chainPem })).toThrow(/does not match/);
    expect(server.credentials()).toEqual(initial);
    server.sessions.stop();
  });
});
