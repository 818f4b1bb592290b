import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readLeafNames } from '../../../../protocol/certificate-names';
import { TpmClient } from '../../../../agent/tpm/client';
import { createEndorsementKey } from '../../../../agent/tpm/endorsement';
import { answerTpmChallenge, prepareTpmJoin, type TpmJoinMaterial } from '../../../../agent/tpm/join-material';
import { readTpmChallenge, runTpmJoin, tpmJoinBody, TpmJoinError, type PostJoin } from '../../../../agent/tpm/tpm-join';
import { parseTpmAddress } from '../../../../agent/tpm/transport';
import { startSwtpm, type Swtpm } from '../../../../test/swtpm';
import { createEkRoot, issueEkCertificate, writeEkCertificate } from '../../../../test/tpm-provision';
import { createPkiBundle } from '../../../pki/bundle';
import { joinCryptoFromBundle } from '../../../pki/join-crypto';
import { issueNodeCertificate } from '../../../pki/node-certificate';
import { parseCsr } from '../../crypto/csr';
import { signEnvelope } from '../../../../protocol/envelope';
import { checkActivation, issueTpmChallenge, type TpmChallengeRecord } from './challenge';
import { decideTpmJoin, type TpmJoinRequestRow, type TpmSiteRow } from './decide';
import { ekRootsFromEnvironment } from './ek-certificate';
import { parseTpmPublic, spkiOf } from './public-area';
import { verifyTpmAttestation } from './verify';
import { parseTpmAttestation } from './wire';

/**
 * The agent's two round trips (agent/tpm/tpm-join.ts) against the attestor's parts (verify, challenge, decide)
 * with a real TPM. What the admission transaction keeps in PostgreSQL (challenges, join requests) is a Map
 * here: this file proves that bcd and the attestor agree on the bytes and the decisions, not JoinService.
 */
const crypto = joinCryptoFromBundle(createPkiBundle({ trustDomain: 'tpm.example.com' }));
const trust = { signingKeyPin: crypto.signingKeyPin, signingCertificateDer: Buffer.from(crypto.signingCertificate, 'base64') };
const claims = { productUuid: '4c4c4544-0031-3510-8052-b4c04f4e5632', macs: [], gpuUuids: [] } as never;

let swtpm: Swtpm;
let tpm: TpmClient;
let rootsDir: string;

beforeAll(async () => {
  swtpm = await startSwtpm();
  tpm = await TpmClient.open(parseTpmAddress(swtpm.address));
  rootsDir = mkdtempSync(join(tmpdir(), 'bc-ek-roots-'));
});
afterAll(async () => {
  await tpm?.close();
  await swtpm?.stop();
  rmSync(rootsDir, { recursive: true, force: true });
});

/** The attestor's parts behind one function, as the join endpoint answers: 200 with a signed body or the uniform 403. */
function attestorUnderTest(site: TpmSiteRow, roots = ekRootsFromEnvironment({ BETTER_COMPUTE_TPM_EK_ROOTS: rootsDir })) {
  const challenges = new Map<string, TpmChallengeRecord>();
  const requests = new Map<string, TpmJoinRequestRow>();
  const refusals: string[] = [];
  const pool = { id: 'pool_tpm', siteId: site.id, ownerTenantId: site.ownerTenantId, agent: 'bcd', isArchived: false, joinAttestors: null, ekAllowList: [] };
  const answer = (body: object) => ({ status: 200, body: Buffer.from(JSON.stringify(signEnvelope(body, crypto.signingKey))) });
  const refused = (reason: string) => (refusals.push(reason), { status: 403, body: Buffer.from('{"code":"ACCESS_DENIED","message":"Join refused"}') });
  const post: PostJoin = async (text) => {
    const body = JSON.parse(text);
    const csr = parseCsr(Buffer.from(body.csr, 'base64'));
    let attestation;
    try {
      attestation = parseTpmAttestation(body.attestation);
    } catch {
      return refused('tpm:attestation');
    }
    const now = new Date();
    const verdict = verifyTpmAttestation(attestation, { csrSha256: csr.csrSha256, csrSpki: csr.spkiDer, ekRoots: roots, now });
    if (!verdict.ok) return refused(verdict.reason);
    if (!attestation.activation) {
      const { record, body: challenge } = issueTpmChallenge(verdict.facts, csr.csrSha256, now);
      challenges.set(record.id, record);
      return answer(challenge);
    }
    const record = challenges.get(attestation.activation.challengeId) ?? null;
    const activated = checkActivation(record, attestation.activation, verdict.facts, csr.csrSha256, now);
    if (!activated.ok) return refused(activated.reason);
    challenges.set(record!.id, { ...record!, usedAt: now });
    const machineKey = `tpm-ek:${verdict.facts.ekHash}`;
    const request = requests.get(machineKey) ?? null;
    const decision = decideTpmJoin({
      facts: verdict.facts, csrSha256: csr.csrSha256, role: body.role, site, pool: attestation.poolId === pool.id ? pool : null,
      poolNamed: attestation.poolId !== undefined, boundNode: null, request, approvedPool: request?.poolId === pool.id ? pool : null,
    });
    if (decision.kind === 'refuse') return refused(decision.reason);
    if (decision.kind === 'defer') {
      const id = request?.state === 'pending' ? request.id : `jreq_${requests.size + 1}`;
      requests.set(machineKey, { id, state: 'pending', csrSha256: csr.csrSha256, poolId: decision.request.poolId, isExpired: false });
      return answer({ status: 'pending', requestId: id, retryAfterSeconds: 30, csrSha256: csr.csrSha256 });
    }
    if (decision.consumesRequestId) requests.set(machineKey, { ...request!, state: 'consumed' });
    const cert = issueNodeCertificate(crypto.nodeCa, {
      publicKeySpkiDer: csr.spkiDer, trustDomain: crypto.trustDomain, siteId: decision.siteId, nodeId: 'node_tpm', role: 'node', notBefore: now, ttlSeconds: 3600, extraUris: [decision.statement],
    });
    return answer({
      status: 'joined', nodeId: 'node_tpm', certificateChain: [cert.der.toString('base64'), crypto.nodeCaCertificate], commandTrustBundle: crypto.commandTrustBundle,
      csrSha256: csr.csrSha256, trustDomain: crypto.trustDomain, siteId: decision.siteId, role: 'node',
    });
  };
  return { post, challenges, requests, refusals, pool };
}

const site = (ekAllowList: string[] = []): TpmSiteRow => ({ id: 'site_tpm', ownerTenantId: 'tnt_tpm', isArchived: false, tpm: { enrollment: true, pendingTtlSeconds: 3600, ekAllowList } });

describe("a tpm join's two round trips, bcd against the attestor", () => {
  it('an unlisted EK waits in the queue, and once approved the same CSR joins with the AK statement', async () => {
    const server = attestorUnderTest(site());
    const first = await runTpmJoin(tpm, { post: server.post, trust, claims, target: { siteId: 'site_tpm' } });
    expect(first.answer).toMatchObject({ status: 'pending', requestId: 'jreq_1' });
    const [request] = [...server.requests.entries()];
    expect(request![0]).toMatch(/^tpm-ek:[0-9a-f]{64}$/);

    server.requests.set(request![0], { ...request![1], state: 'approved', poolId: server.pool.id });
    const second = await runTpmJoin(tpm, { post: server.post, trust, claims, target: { siteId: 'site_tpm' }, material: first.material });
    expect(second.answer.status).toBe('joined');
    const leaf = readLeafNames(Buffer.from((second.answer as { certificateChain: string[] }).certificateChain[0]!, 'base64'));
    expect(leaf.uris[1]).toMatch(/^urn:bc:tpm-ak:sha256:[0-9a-f]{64}$/);
    expect(leaf.spkiDer.equals(first.material.csr.spkiDer)).toBe(true);
    expect(server.requests.get(request![0])!.state).toBe('consumed');
    expect(server.refusals).toEqual([]);
  });

  it('a vendor-rooted EK joins the named pool at once, with no token; an allow-listed EK too', async () => {
    const root = await createEkRoot();
    writeFileSync(join(rootsDir, 'vendor.pem'), root.pem);
    const ek = await createEndorsementKey(tpm, 'ecc');
    await tpm.flush(ek.handle);
    await writeEkCertificate(tpm, 'ecc', await issueEkCertificate(root, spkiOf(parseTpmPublic(ek.publicArea, 'EK')), 'ecc'));
    const server = attestorUnderTest(site());
    const joined = await runTpmJoin(tpm, { post: server.post, trust, claims, target: { siteId: 'site_tpm', poolId: server.pool.id } });
    expect(joined.answer.status).toBe('joined');
    expect(joined.material.attestation.ekCertificate).toBeDefined();

    // With no roots configured, only the site's allow-list admits it.
    const ekHash = (await import('node:crypto')).createHash('sha256').update(spkiOf(parseTpmPublic(ek.publicArea, 'EK'))).digest('hex');
    const listed = attestorUnderTest(site([ekHash]), []);
    expect((await runTpmJoin(tpm, { post: listed.post, trust, claims, target: { siteId: 'site_tpm', poolId: listed.pool.id } })).answer.status).toBe('joined');
    const unlisted = attestorUnderTest(site(), []);
    expect((await runTpmJoin(tpm, { post: unlisted.post, trust, claims, target: { siteId: 'site_tpm', poolId: unlisted.pool.id } })).answer.status).toBe('pending');
  });

  it('a replayed activation, and a challenge answered for another CSR, are refused with their reasons', async () => {
    const server = attestorUnderTest(site());
    const a = await prepareTpmJoin(tpm);
    const b = await prepareTpmJoin(tpm, { ak: a.ak, ekKind: a.ekKind });
    const input = { claims, target: { siteId: 'site_tpm' } };
    const roundOne = async (material: TpmJoinMaterial) => {
      const reply = await server.post(tpmJoinBody(material, input));
      const challenge = readTpmChallenge(reply.body, trust, material.csr.csrSha256);
      const secret = await answerTpmChallenge(tpm, { ak: material.ak, ekKind: material.ekKind, ...challenge });
      return { challengeId: challenge.challengeId, secret };
    };
    const activation = await roundOne(a);
    const roundTwo = tpmJoinBody(a, input, activation);
    expect((await server.post(roundTwo)).status).toBe(200);
    expect((await server.post(roundTwo)).status).toBe(403);
    // B's CSR with A's (unused) challenge: same EK and AK, another CSR.
    const another = await roundOne(a);
    expect((await server.post(tpmJoinBody(b, input, another))).status).toBe(403);
    // A wrong secret for A's own fresh challenge.
    const wrong = await roundOne(a);
    expect((await server.post(tpmJoinBody(a, input, { ...wrong, secret: Buffer.alloc(32, 1) }))).status).toBe(403);
    expect(server.refusals).toEqual(['tpm:challenge-used', 'tpm:challenge-csr', 'tpm:activation-secret']);
    // The agent sees only the refusal's status.
    await expect(runTpmJoin(tpm, { post: async () => ({ status: 403, body: Buffer.alloc(0) }), trust, claims, target: input.target, material: a })).rejects.toBeInstanceOf(TpmJoinError);
  });

  it('an expired challenge is refused', async () => {
    const material = await prepareTpmJoin(tpm);
    const csr = parseCsr(material.csr.csrDer);
    const verdict = verifyTpmAttestation(parseTpmAttestation({ ...material.attestation, siteId: 'site_tpm' }), { csrSha256: csr.csrSha256, csrSpki: csr.spkiDer, ekRoots: [], now: new Date() });
    if (!verdict.ok) throw new Error(verdict.reason);
    const issued = issueTpmChallenge(verdict.facts, csr.csrSha256, new Date(Date.now() - 61_000));
    const secret = await answerTpmChallenge(tpm, { ak: material.ak, ekKind: material.ekKind, credentialBlob: Buffer.from(issued.body.credentialBlob, 'base64'), encryptedSecret: Buffer.from(issued.body.encryptedSecret, 'base64') });
    const activation = { challengeId: issued.record.id, secret };
    expect(checkActivation(issued.record, activation, verdict.facts, csr.csrSha256, new Date())).toEqual({ ok: false, reason: 'tpm:challenge-expired' });
    expect(checkActivation(issued.record, activation, verdict.facts, csr.csrSha256, new Date(Date.now() - 30_000))).toEqual({ ok: true });
    expect(checkActivation(null, activation, verdict.facts, csr.csrSha256, new Date())).toEqual({ ok: false, reason: 'tpm:challenge-unknown' });
  });
});
