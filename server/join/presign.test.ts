import { X509Certificate } from 'node:crypto';
import type pg from 'pg';
import { beforeAll, describe, expect, it } from 'vitest';
import { prepareJoinAttempt } from '../../agent/join';
import { generateNodeKeyAndCsr } from '../../agent/keys';
import { testDb } from '../../test/db';
import { createTestTenant, type TestTenant } from '../../test/fixtures';
import { agentJoin, createJoinHarness, machineClaims, mintToken, type JoinHarness } from '../../test/join-harness';
import { insertKnownNode, mintDiscoveryToken, randomMac } from '../../test/discovery-harness';
import { newEcKeyPair } from '../pki/ca/ca';
import { MAX_RAMDISK_CERT_TTL_SECONDS } from '../pki/issuance/node-certificate';
import { hashTokenSecret } from '../tokens/secret';
import { JoinService } from './join-service';
import type { PreparedJoin } from './prepare';
import { CertificateHints } from './presign';
import { JOIN_REFUSED } from '../../protocol/join-wire';

let h: JoinHarness;
beforeAll(async () => {
  h = await createJoinHarness();
});

const MAC = randomMac;

/**
 * A `discovery` token bound to `mac`, for a machine its site knows (a node of the site holds the MAC), so
 * the discovery attestor admits it at once under the default `unknown-machines` policy.
 */
async function discoveryToken(t: TestTenant, mac: string, maxUses = 5) {
  await insertKnownNode(t, { macs: [mac] });
  return (await mintDiscoveryToken(t, mac, { maxUses })).token;
}

const lifetimeSeconds = (b64: string) => {
  const cert = new X509Certificate(Buffer.from(b64, 'base64'));
  return (Date.parse(cert.validTo) - Date.now()) / 1000;
};

describe('early certificate signing for a discovery (ramdisk) token', () => {
  it('admits later joins with a ramdisk-length certificate and refuses a wrong secret with the uniform 403', async () => {
    const t = await createTestTenant(testDb());
    const mac = MAC();
    const token = await discoveryToken(t, mac);
    const join = () =>
      agentJoin(h, token, machineClaims({ macs: [mac] }), { role: 'discovery', attestor: 'discovery', expectedRole: 'ramdisk' });

    const first = await join();
    expect(first.status).toBe(200);
    // The first admission left a hint: later joins of this token are signed before the lock.
    const second = await join();
    expect(second.status).toBe(200);
    expect(second.answer!.role).toBe('ramdisk');
    expect(lifetimeSeconds(second.answer!.certificateChain[0]!)).toBeLessThanOrEqual(MAX_RAMDISK_CERT_TTL_SECONDS);

    const wrong = token.replace(/\..*/, '.' + 'C'.repeat(42) + 'A');
    const refused = await agentJoin(h, wrong, machineClaims({ macs: [mac] }), {
      role: 'discovery',
      attestor: 'discovery',
      expectedRole: 'ramdisk',
    });
    expect(refused.status).toBe(403);
    expect(refused.bytes.equals(JOIN_REFUSED.body)).toBe(true);
  });

  it('keeps a batch that holds a discovery join in one transaction (no one-by-one retry)', async () => {
    const t = await createTestTenant(testDb());
    const mac = MAC();
    const token = await discoveryToken(t, mac);
    // A JoinService whose pool counts the connections its admissions take: one per batch, one per retried join.
    let connects = 0;
    const counting = new Proxy(h.pool, {
      get: (target, key) => (key === 'connect' ? () => (connects++, target.connect()) : Reflect.get(target, key)),
    }) as pg.Pool;
    const service = new JoinService({ pool: counting, loadCrypto: async () => h.crypto, loadRootTenantId: async () => h.rootTenantId });
    const attempt = (claims: ReturnType<typeof machineClaims>, tokenText = token, role = 'discovery') =>
      prepareJoinAttempt({ token: tokenText, trust: h.trust, claims, role, attestor: role === 'discovery' ? 'discovery' : '' }).then((a) =>
        JSON.parse(a.body),
      );
    // The first admission of the discovery token leaves this service a hint: later joins of it are signed early.
    expect((await service.join(await attempt(machineClaims({ macs: [mac] })))).status).toBe(200);

    const nodeToken = (await mintToken(t, { maxUses: 10 })).token!;
    const bodies = await Promise.all([
      ...Array.from({ length: 4 }, () => attempt(machineClaims(), nodeToken, 'node')),
      attempt(machineClaims({ macs: [mac] })),
    ]);
    connects = 0;
    const answers = await Promise.all(bodies.map((b) => service.join(b)));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);
    // Sent together, the five joins form one or two batches; a retry would add a connection per join.
    expect(connects).toBeLessThanOrEqual(2);
  });
});

describe('CertificateHints.presign', () => {
  const prepared = (): PreparedJoin => {
    const keys = generateNodeKeyAndCsr();
    return {
      csr: { spkiDer: keys.spkiDer, csrSha256: keys.csrSha256 },
      token: { id: 'jt_01m8ma917s0he7rk4w7m1b0zvj', sealedAt: Math.floor(Date.now() / 1000), secretHash: hashTokenSecret('s'.repeat(43)) },
      role: 'discovery',
      attestor: 'join-token',
      claims: {},
      hardware: { key: null, trusted: false, identifiers: 0, hasUuidOrSerial: false },
      trustedKey: null,
      spkiSha256: Buffer.alloc(32),
    };
  };

  it('signs a ramdisk certificate within the ramdisk lifetime whatever the configured lifetime', () => {
    const hints = new CertificateHints();
    const join = prepared();
    hints.remember(join.token!.id, 'site_a', 'ramdisk', join.token!.secretHash);
    const early = hints.presign(join, h.crypto, 86_400);
    expect(early).not.toBeNull();
    expect((early!.cert.notAfter.getTime() - Date.now()) / 1000).toBeLessThanOrEqual(MAX_RAMDISK_CERT_TTL_SECONDS);
  });

  it('signs nothing for a secret other than the one the hint was left with', () => {
    const hints = new CertificateHints();
    const join = prepared();
    hints.remember(join.token!.id, 'site_a', 'node', hashTokenSecret('another secret'));
    expect(hints.presign(join, h.crypto, 3600)).toBeNull();
    expect(hints.presign({ ...join, token: { ...join.token!, id: 'jt_unknown' } }, h.crypto, 3600)).toBeNull();
  });

  it('drops the optimisation instead of throwing when signing fails', () => {
    const hints = new CertificateHints();
    const join = prepared();
    hints.remember(join.token!.id, 'site_a', 'node', join.token!.secretHash);
    // A node CA whose key does not match its certificate: issueNodeCertificate refuses it.
    const broken = { ...h.crypto, nodeCa: { ...h.crypto.nodeCa, key: newEcKeyPair().privateKey } };
    expect(() => hints.presign(join, broken, 3600)).not.toThrow();
    expect(hints.presign(join, broken, 3600)).toBeNull();
  });
});
