import { beforeAll, describe, expect, it } from 'vitest';
import { generateNodeKeyAndCsr } from '../../agent/keys';
import { sealTokenSync } from '../../agent/seal-token';
import { testDb } from '../../test/db';
import { createTestTenant } from '../../test/fixtures';
import { agentJoin, createJoinHarness, machineClaims, mintToken, type JoinHarness } from '../../test/join-harness';
import { isFreshSeal, SEAL_IAT_TOLERANCE_SECONDS } from './crypto/open-seal';
import { JOIN_REFUSED } from '../../protocol/join-wire';

let h: JoinHarness;
beforeAll(async () => {
  h = await createJoinHarness();
});

const MINUTE = 60_000;

/** Joins with a seal whose `iat` is `offsetMs` from the database's now. */
async function joinSealedAt(offsetMs: number) {
  const t = await createTestTenant(testDb());
  const minted = await mintToken(t);
  const { now } = (await testDb().$queryRaw<{ now: Date }[]>`SELECT compute_now() AS now`)[0]!;
  const keys = generateNodeKeyAndCsr();
  const sealedToken = sealTokenSync(minted.token!, h.trust.encryptionJwk, keys.csrSha256, new Date(now.getTime() + offsetMs));
  const result = await agentJoin(h, minted.token!, machineClaims(), { keys, mutate: (b) => void (b.sealedToken = sealedToken) });
  const usesLeft = (await testDb().joinToken.findUniqueOrThrow({ where: { id: minted.id } })).usesLeft;
  const refusals = await testDb().event.findMany({
    where: { tenantId: h.rootTenantId, type: 'security.join.refused', data: { path: ['csrSha256'], equals: keys.csrSha256 } },
  });
  return { result, usesLeft, refusals: refusals.map((e) => (e.data as { reason: string }).reason) };
}

describe('the seal’s iat, against the database’s clock', () => {
  it('admits a seal made up to ten minutes before or after the database’s now', async () => {
    for (const offset of [-9 * MINUTE, 9 * MINUTE]) {
      const { result, usesLeft } = await joinSealedAt(offset);
      expect(result.status, `offset ${offset / MINUTE} min`).toBe(200);
      expect(usesLeft).toBe(0);
    }
  });

  it('refuses a stale or future seal with the uniform 403 (join:token, routed to the root tenant), spending nothing', async () => {
    for (const offset of [-11 * MINUTE, 11 * MINUTE, -30 * 86_400_000]) {
      const { result, usesLeft, refusals } = await joinSealedAt(offset);
      expect(result.status, `offset ${offset / MINUTE} min`).toBe(403);
      expect(result.bytes.equals(JOIN_REFUSED.body)).toBe(true);
      expect(usesLeft).toBe(1);
      expect(refusals).toEqual(['join:token']);
    }
  });

  it('isFreshSeal: inclusive at the tolerance, either way', () => {
    const now = new Date('2026-11-30T12:00:00Z');
    const at = (seconds: number) => Math.floor(now.getTime() / 1000) + seconds;
    expect(isFreshSeal(at(SEAL_IAT_TOLERANCE_SECONDS), now)).toBe(true);
    expect(isFreshSeal(at(-SEAL_IAT_TOLERANCE_SECONDS), now)).toBe(true);
    expect(isFreshSeal(at(SEAL_IAT_TOLERANCE_SECONDS + 1), now)).toBe(false);
    expect(isFreshSeal(at(-SEAL_IAT_TOLERANCE_SECONDS - 1), now)).toBe(false);
  });
});
