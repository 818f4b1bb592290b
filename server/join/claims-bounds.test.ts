import { beforeAll, describe, expect, it } from 'vitest';
import { prepareJoinAttempt } from '../../agent/join';
import { generateNodeKeyAndCsr } from '../../agent/keys';
import { CLAIM_LIMITS } from '../../protocol/hardware-claims';
import { testDb } from '../../test/db';
import { createTestTenant, type TestTenant } from '../../test/fixtures';
import { createJoinHarness, machineClaims, mintToken, type JoinHarness } from '../../test/join-harness';
import { randomMac } from '../../test/discovery-harness';
import { createDiscoveryToken } from '../tokens/site-scoped';
import { isPrepared, prepareJoin } from './prepare';

// Claims are the machine's unverified words: every attestor path parses them with the one shared parser
// (protocol/hardware-claims.ts) before its own checks, and a claim over a bound (a length, a count) or holding a
// character that makes it read other than it is, is refused as malformed: nothing is stored, no token is spent.

let h: JoinHarness;
let t: TestTenant;
beforeAll(async () => {
  h = await createJoinHarness();
  t = await createTestTenant(testDb(), { label: 'claims-bounds' });
});

const mac = '3c:ec:ef:12:34:56';
/** Claims no machine may send, each with what is wrong with it. */
const OVER: Array<[string, Record<string, unknown>]> = [
  ['an overlong hostname', { hostname: 'h'.repeat(CLAIM_LIMITS.hostname + 1) }],
  ['a hostname with a right-to-left override', { hostname: 'node\u202e10-r' }],
  ['a hostname with a zero-width space', { hostname: 'node\u200b01' }],
  ['a serial with a C1 control', { productSerial: 'SN\u009b1' }],
  ['a product name with a bidirectional isolate', { productName: 'SYS\u2066-421' }],
  ['an overlong serial', { boardSerial: 'S'.repeat(CLAIM_LIMITS.serial + 1) }],
  ['an overlong product UUID', { productUuid: 'u'.repeat(CLAIM_LIMITS.uuid + 1) }],
  ['too many MACs', { macs: Array.from({ length: CLAIM_LIMITS.macs + 1 }, () => mac) }],
  ['an overlong MAC', { macs: ['m'.repeat(CLAIM_LIMITS.mac + 1)] }],
  ['too many GPU UUIDs', { gpuUuids: Array.from({ length: CLAIM_LIMITS.gpuUuids + 1 }, (_, i) => `GPU-${i}`) }],
  ['an overlong vendor', { sysVendor: 'v'.repeat(CLAIM_LIMITS.dmiText + 1) }],
  ['a MAC that is not text', { macs: [{ toString: 'x' }] }],
];

/** A join body of `attestor` with `claims`: sealed with a real token where the attestor takes one. */
async function bodyOf(attestor: string, claims: Record<string, unknown>): Promise<Record<string, unknown>> {
  if (attestor === 'join-token' || attestor === 'discovery') {
    const token =
      attestor === 'join-token'
        ? (await mintToken(t)).token!
        : (await createDiscoveryToken(testDb(), t.admin, { tenantId: t.tenantId, siteId: t.siteId, mac: randomMac(), ttlSeconds: 600 }))
            .token!;
    const attempt = await prepareJoinAttempt({
      token,
      trust: h.trust,
      claims: claims as never,
      role: attestor === 'discovery' ? 'discovery' : 'node',
      attestor,
    });
    return JSON.parse(attempt.body) as Record<string, unknown>;
  }
  // Tokenless attestors: their own attestation is never reached.
  const keys = generateNodeKeyAndCsr();
  return { csr: keys.csrDer.toString('base64'), attestor, role: 'node', claims, attestation: { siteId: t.siteId } };
}

describe('claims over their bounds', () => {
  for (const attestor of ['join-token', 'discovery', 'tpm', 'x509pop']) {
    it(`are refused as malformed on the ${attestor} path, storing nothing`, async () => {
      for (const [what, claims] of OVER) {
        const body = await bodyOf(attestor, { ...machineClaims(), ...claims });
        expect(prepareJoin(body, h.crypto), what).toMatchObject({ reason: 'join:malformed' });
        expect((await h.service.join(body, '198.51.100.77')).status, what).toBe(403);
      }
      expect(await testDb().joinRequest.count({ where: { siteId: t.siteId } })).toBe(0);
      expect(await testDb().node.count({ where: { siteId: t.siteId } })).toBe(0);
    });
  }

  it('the same claims within their bounds prepare (the refusal is the claim, not the body)', async () => {
    const body = await bodyOf('join-token', machineClaims({ hostname: 'h'.repeat(CLAIM_LIMITS.hostname), macs: [mac] }));
    expect(isPrepared(prepareJoin(body, h.crypto))).toBe(true);
  });
});
