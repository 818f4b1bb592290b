import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateNodeKeyAndCsr } from '../../../agent/keys';
import { verifyJoinAnswer, verifyJoinChallenge } from '../../../agent/verify-answer';
import { testDb } from '../../../test/db';
import { createTestTenant, failure } from '../../../test/fixtures';
import { createJoinHarness, machineClaims, type JoinHarness } from '../../../test/join-harness';
import { challengeMismatch, consumeChallenges, loadChallenges, type StoredChallenge } from '../challenges';
import { refuse } from '../decide';
import { JoinRefusal } from '../crypto/refusal';
import { JOIN_REFUSED } from '../../../protocol/join-wire';
import { DomainError } from '../../../protocol/errors';
import { getSite } from '../../sites/sites';
import { updateSite } from '../../sites/update';
import { checkRenewal, registerAttestor, unregisterAttestor } from './index';
import type { Attestor, AttestorVerdict } from './types';

// A new attestor plugged in from outside the core: registered here, it parses its own `attestation`,
// challenges in round one, loads its own rows and its challenge in round two, decides and writes, and a join
// through JoinService uses it. Nothing under server/join/ (outside attestors/) knows its name.

const NAME = 'fake-challenge';

interface FakeEvidence {
  poolId: string;
  nonce: string | null;
  answer: string | null;
}

interface FakeState {
  pools: Map<string, { tenantId: string; siteId: string; joinAttestors: string[] | null }>;
  challenges: Map<string, StoredChallenge>;
  used: string[];
}

/** The answer round two must carry: the nonce hashed with the attestor's own label. */
const answerTo = (nonce: string) => createHash('sha256').update(`fake-answer\n${nonce}`).digest('hex');

const fake: Attestor<FakeState> = {
  name: NAME,
  prepare(request) {
    const attestation = request.body.attestation as Record<string, unknown> | undefined;
    if (typeof attestation?.poolId !== 'string') throw new JoinRefusal('join:malformed', 'attestation.poolId');
    const nonce = typeof attestation.nonce === 'string' ? attestation.nonce : null;
    const answer = typeof attestation.answer === 'string' ? attestation.answer : null;
    const evidence: FakeEvidence = { poolId: attestation.poolId, nonce, answer };
    return { token: null, evidence };
  },
  holdKeys: (join) => [`fake:${(join.evidence as FakeEvidence).poolId}`],
  async load(client, joins) {
    const evidence = joins.map((j) => j.evidence as FakeEvidence);
    const [pools, challenges] = await Promise.all([
      client.query('SELECT id, owner_tenant_id, site_id, policy FROM pools WHERE id = ANY($1::text[]) FOR UPDATE', [
        evidence.map((e) => e.poolId),
      ]),
      loadChallenges(
        client,
        NAME,
        evidence.flatMap((e) => (e.nonce ? [e.nonce] : [])),
      ),
    ]);
    return {
      pools: new Map(
        pools.rows.map((r) => [r.id, { tenantId: r.owner_tenant_id, siteId: r.site_id, joinAttestors: r.policy?.joinAttestors ?? null }]),
      ),
      challenges,
      used: [],
    };
  },
  decide({ join }, state): AttestorVerdict {
    const evidence = join.evidence as FakeEvidence;
    const pool = state.pools.get(evidence.poolId);
    if (!pool) return refuse(`${NAME}:unknown-pool`);
    if (!pool.joinAttestors?.includes(NAME)) return refuse(`${NAME}:pool-attestor`, pool.tenantId);
    if (!evidence.nonce)
      return {
        admitted: false,
        challenge: true,
        subject: evidence.poolId,
        tenantId: pool.tenantId,
        data: { hint: 'sha256 of fake-answer and the nonce' },
      };
    state.used.push(evidence.nonce);
    if (challengeMismatch(state.challenges.get(evidence.nonce), { csrSha256: join.csr.csrSha256, subject: evidence.poolId }))
      return refuse(`${NAME}:nonce`, pool.tenantId);
    state.challenges.delete(evidence.nonce);
    if (evidence.answer !== answerTo(evidence.nonce)) return refuse(`${NAME}:answer`, pool.tenantId);
    return {
      admitted: true,
      reclaim: null,
      tenantId: pool.tenantId,
      siteId: pool.siteId,
      poolId: evidence.poolId,
      role: 'node',
      certRole: 'node',
      hardwareKeyTrusted: false,
      trust: 'tenant-owned',
      state: 'adopted',
      actor: `${NAME}:${evidence.poolId}`,
    };
  },
  async write(client, state) {
    await consumeChallenges(client, state.used);
    return state.used.length > 0;
  },
  // Beside the join: a setting of each site (a colour, grey by default) and a check of its nodes' renewals.
  siteSettings: {
    field: 'fake',
    read: (stored) => ({ colour: (stored as { colour?: string } | undefined)?.colour ?? 'grey' }),
    update(stored, change) {
      const colour = (change as { colour?: string } | undefined)?.colour;
      if (colour !== undefined && !['grey', 'blue'].includes(colour))
        throw new DomainError('INVALID_ARGUMENT', `fake.colour: ${colour} is not a colour`, { field: 'fake.colour' });
      const settings = { colour: colour ?? (stored as { colour?: string } | undefined)?.colour ?? 'grey' };
      return { stored: settings, audit: settings };
    },
  },
  renewal: {
    check: ({ statements, keyAttestation }) =>
      !statements.some((uri) => uri.startsWith(`urn:bc:${NAME}:`))
        ? null
        : keyAttestation?.proof === 'fake-proof'
          ? { ok: true }
          : { ok: false, reason: 'fake-proof', detail: 'the renewal carries no fake proof' },
  },
};

let h: JoinHarness;
beforeAll(async () => {
  h = await createJoinHarness();
  registerAttestor(fake);
});
afterAll(async () => {
  unregisterAttestor(NAME);
  await h.pool.end();
});

async function fakeJoin(body: Record<string, unknown>) {
  const answer = await h.service.join(body);
  return { status: answer.status, json: JSON.parse(answer.body.toString()), bytes: answer.body };
}

describe('an attestor registered outside the core', () => {
  it('challenges in round one, admits on a good answer in round two, and never twice on one nonce', async () => {
    const db = testDb();
    const t = await createTestTenant(db);
    await db.pool.update({ where: { id: t.pool.id }, data: { policy: { joinAttestors: [NAME] } } });
    const keys = generateNodeKeyAndCsr();
    const base = { csr: keys.csrDer.toString('base64'), claims: machineClaims(), attestor: NAME, role: 'node' };
    const trust = { signingKeyPin: h.trust.signingKeyPin, signingCertificateDer: h.trust.signingCertificateDer, csrSha256: keys.csrSha256 };

    const one = await fakeJoin({ ...base, attestation: { poolId: t.pool.id } });
    expect(one.status).toBe(200);
    const challenge = verifyJoinChallenge(one.json, { ...trust, attestor: NAME });
    expect(challenge.challenge).toEqual({ hint: 'sha256 of fake-answer and the nonce' });
    expect(challenge.expiresAt).toBeGreaterThan(Date.now() / 1000);
    const stored = await db.joinChallenge.findMany({ where: { attestor: NAME, subject: t.pool.id } });
    expect(stored).toHaveLength(1);
    expect(Buffer.from(stored[0]!.nonceSha256).equals(createHash('sha256').update(challenge.nonce).digest())).toBe(true);

    // A wrong answer is refused and burns the nonce.
    const wrong = await fakeJoin({ ...base, attestation: { poolId: t.pool.id, nonce: challenge.nonce, answer: 'no' } });
    expect(wrong.bytes.equals(JOIN_REFUSED.body)).toBe(true);
    const burnt = await fakeJoin({
      ...base,
      attestation: { poolId: t.pool.id, nonce: challenge.nonce, answer: answerTo(challenge.nonce) },
    });
    expect(burnt.bytes.equals(JOIN_REFUSED.body)).toBe(true);
    const refusals = await db.event.findMany({ where: { tenantId: t.tenantId, type: 'security.join.refused' }, orderBy: { id: 'asc' } });
    expect(refusals.map((e) => (e.data as { reason: string }).reason)).toEqual([`${NAME}:answer`, `${NAME}:nonce`]);

    const again = verifyJoinChallenge((await fakeJoin({ ...base, attestation: { poolId: t.pool.id } })).json, { ...trust, attestor: NAME });
    const two = await fakeJoin({ ...base, attestation: { poolId: t.pool.id, nonce: again.nonce, answer: answerTo(again.nonce) } });
    expect(two.status).toBe(200);
    const joined = verifyJoinAnswer(two.json, { ...trust, publicKeySpkiDer: keys.spkiDer, expectedRole: 'node' });
    expect(joined.status).toBe('joined');
    const node = await db.node.findUniqueOrThrow({ where: { id: (joined as { nodeId: string }).nodeId } });
    expect(node).toMatchObject({ poolId: t.pool.id, tenantId: t.tenantId, attestor: NAME, identityGeneration: 1 });
    const audit = await db.auditEntry.findFirstOrThrow({ where: { resource: `compute-node/${node.id}` } });
    expect(audit).toMatchObject({ actor: `${NAME}:${t.pool.id}`, action: 'node.joined' });
    expect(await db.joinChallenge.count({ where: { attestor: NAME, subject: t.pool.id } })).toBe(0);
  });

  it('is refused by the pool policy it checks, and its nonce is bound to the CSR it was issued for', async () => {
    const db = testDb();
    const t = await createTestTenant(db);
    const keys = generateNodeKeyAndCsr();
    const base = { csr: keys.csrDer.toString('base64'), claims: machineClaims(), attestor: NAME, role: 'node' };
    const notListed = await fakeJoin({ ...base, attestation: { poolId: t.pool.id } });
    expect(notListed.bytes.equals(JOIN_REFUSED.body)).toBe(true);

    await db.pool.update({ where: { id: t.pool.id }, data: { policy: { joinAttestors: [NAME] } } });
    const one = await fakeJoin({ ...base, attestation: { poolId: t.pool.id } });
    const { nonce } = verifyJoinChallenge(one.json, {
      signingKeyPin: h.trust.signingKeyPin,
      signingCertificateDer: h.trust.signingCertificateDer,
      csrSha256: keys.csrSha256,
      attestor: NAME,
    });
    const other = generateNodeKeyAndCsr();
    const swapped = await fakeJoin({
      ...base,
      csr: other.csrDer.toString('base64'),
      attestation: { poolId: t.pool.id, nonce, answer: answerTo(nonce) },
    });
    expect(swapped.bytes.equals(JOIN_REFUSED.body)).toBe(true);
    const reasons = (
      await db.event.findMany({ where: { tenantId: t.tenantId, type: 'security.join.refused' }, orderBy: { id: 'asc' } })
    ).map((e) => (e.data as { reason: string }).reason);
    expect(reasons).toEqual([`${NAME}:pool-attestor`, `${NAME}:nonce`]);
  });

  it('registers its site settings and its renewal check: sites read and validate them, renew asks the check', async () => {
    const db = testDb();
    const t = await createTestTenant(db);
    const site = await getSite(db, t.admin, { tenantId: t.tenantId, siteId: t.siteId });
    expect(site).toMatchObject({ fake: { colour: 'grey' }, discovery: { approval: 'unknown-machines' }, tpm: { enrollment: false } });
    // sites.update hands the attestor its own field: a value it refuses leaves the site as it was.
    const input = { tenantId: t.tenantId, siteId: t.siteId, requiredApprovals: 2, fake: { colour: 'plaid' } };
    expect(await failure(updateSite(db, t.admin, input as never))).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'fake.colour' });
    expect((await db.site.findUniqueOrThrow({ where: { id: t.siteId } })).requiredApprovals).toBe(1);

    // The function RenewService asks for a renewal's checks (and x509pop for a re-join's).
    const csr = { csrSha256: 'ab'.repeat(32), spkiDer: Buffer.alloc(0) };
    expect(checkRenewal({ statements: ['urn:bc:other:1'], keyAttestation: null, csr })).toEqual({ ok: true, checked: false });
    expect(checkRenewal({ statements: [`urn:bc:${NAME}:1`], keyAttestation: null, csr })).toEqual({
      ok: false,
      reason: 'fake-proof',
      detail: 'the renewal carries no fake proof',
    });
    expect(checkRenewal({ statements: [`urn:bc:${NAME}:1`], keyAttestation: { proof: 'fake-proof' }, csr })).toEqual({
      ok: true,
      checked: true,
    });
  });
});
