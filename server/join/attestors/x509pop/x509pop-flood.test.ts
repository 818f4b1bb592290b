import { randomInt } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateNodeKeyAndCsr, type NodeKeyAndCsr } from '../../../../agent/keys';
import { parseIdentity, type LoadedIdentity } from '../../../../agent/renew/identity';
import { verifyJoinChallenge } from '../../../../agent/verify-answer';
import { x509popBody } from '../../../../agent/x509pop';
import { testDb } from '../../../../test/db';
import { createTestTenant } from '../../../../test/fixtures';
import { agentJoin, machineClaims, mintToken } from '../../../../test/join-harness';
import { BASE, createRenewHarness, type RenewHarness } from '../../../../test/renew-harness';
import { JOIN_REFUSED } from '../../../../protocol/join-wire';
import { voucherFromServingChain } from '../../../gateway/gateway';
import { vouchHeaders } from '../../../vouching/vouch';
import { newRequestLimitsFromEnv } from '../../../config/join-request-limits';

const PATH = `${BASE}/v1/join`;
// The core's one limit on challenges issued without a token, set through its variable as the server reads it
// (services.ts), above 60: a second, x509pop-only limit stacked on it would show as fewer nonces.
const LIMIT = 75;
const requestLimits = newRequestLimitsFromEnv({ BETTER_COMPUTE_CHALLENGES_PER_ADDRESS: String(LIMIT) });
let r: RenewHarness;
beforeAll(async () => {
  r = await createRenewHarness({ requestLimits: { challengesPerAddress: requestLimits.challengesPerAddress } });
});
afterAll(async () => {
  await r?.close();
});

/** A node of a pool that admits x509pop re-joins, whose certificate expired an hour ago. */
async function expiredNode(): Promise<LoadedIdentity> {
  const t = await createTestTenant(testDb());
  await testDb().pool.update({ where: { id: t.pool.id }, data: { policy: { joinAttestors: ['join-token', 'x509pop'] } } });
  const joined = await agentJoin(r.h, (await mintToken(t)).token!, machineClaims());
  expect(joined.status).toBe(200);
  await testDb().$executeRawUnsafe(
    `UPDATE node_certs SET not_after = compute_now() - interval '1 hour', not_before = compute_now() - interval '1 day' WHERE node_id = $1`,
    joined.answer!.nodeId,
  );
  return parseIdentity(joined.keys.privateKeyPem, { ...joined.answer! });
}

/**
 * Posts a join to the API as the gateway relays it: with the gateway's signed vouching naming `address` as the
 * caller (documentation addresses; the harness keys its rate limits apart from every other test's).
 */
async function relayedJoin(body: string, address: string) {
  const voucher = voucherFromServingChain(r.gatewayCert.chainPem, r.gatewayCert.privateKeyPem);
  const bytes = Buffer.from(body);
  const response = await fetch(`${r.apiUrl}${PATH}`, {
    method: 'POST',
    headers: { ...vouchHeaders(voucher, null, bytes, PATH, Date.now(), address), 'content-type': 'application/json' },
    body: bytes,
  });
  return { status: response.status, text: await response.text() };
}

const roundOneBody = (last: LoadedIdentity, keys: NodeKeyAndCsr) =>
  x509popBody({
    leafDer: Buffer.from(last.identity.certificateChain[0]!, 'base64'),
    keys,
    claims: machineClaims(),
    role: last.identity.role,
  });

describe('x509pop round one is limited per source address', () => {
  it('a flood from one address gets exactly the limit of nonces, then the uniform refusal (x509pop:rate-limited)', async () => {
    const last = await expiredNode();
    const keys = generateNodeKeyAndCsr();
    const address = `198.51.100.${randomInt(1, 255)}`;
    const answers = await Promise.all(Array.from({ length: LIMIT + 20 }, () => relayedJoin(roundOneBody(last, keys), address)));
    const challenged = answers.filter((a) => a.status === 200);
    expect(challenged).toHaveLength(LIMIT);
    const refused = answers.filter((a) => a.status !== 200);
    expect(refused).toHaveLength(20);
    for (const answer of refused) expect([answer.status, answer.text]).toEqual([JOIN_REFUSED.status, JOIN_REFUSED.body.toString()]);
    expect(await testDb().joinChallenge.count({ where: { attestor: 'x509pop', csrSha256: keys.csrSha256 } })).toBe(LIMIT);
    const events = await testDb().event.findMany({ where: { tenantId: r.h.rootTenantId, type: 'security.join.refused' } });
    const limited = events
      .map((e) => e.data as { reason: string; clientAddress?: string })
      .filter((d) => d.reason === 'x509pop:rate-limited' && d.clientAddress === address);
    expect(limited).toHaveLength(20);

    // Another address still gets its nonce, and round two from the limited address re-admits the node.
    const other = await relayedJoin(roundOneBody(last, keys), `203.0.113.${randomInt(1, 255)}`);
    expect(other.status).toBe(200);
    const signing = {
      signingKeyPin: r.h.trust.signingKeyPin,
      signingCertificateDer: r.h.trust.signingCertificateDer,
      csrSha256: keys.csrSha256,
    };
    const { nonce } = verifyJoinChallenge(JSON.parse(other.text), { ...signing, attestor: 'x509pop' });
    const two = x509popBody({
      leafDer: Buffer.from(last.identity.certificateChain[0]!, 'base64'),
      keys,
      claims: machineClaims(),
      role: last.identity.role,
      lastKey: last.privateKey,
      nonce,
    });
    expect((await relayedJoin(two, address)).status).toBe(200);
  });
});
