import { createHash, createPrivateKey } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renewBodyJson } from '../../../../agent/renew/renew';
import { TpmClient } from '../../../../agent/tpm/client';
import { createEndorsementKey } from '../../../../agent/tpm/endorsement';
import { ekHashOf } from '../../../../agent/tpm/identify';
import { answerTpmChallenge, prepareTpmJoin } from '../../../../agent/tpm/join-material';
import { prepareTpmRenewal, signWithTpmKey } from '../../../../agent/tpm/renewal';
import { readTpmChallenge, runTpmJoin, tpmJoinBody, type PostJoin } from '../../../../agent/tpm/tpm-join';
import { parseTpmAddress } from '../../../../agent/tpm/transport';
import { readLeafNames } from '../../../../protocol/certificate-names';
import { renewPopMessage } from '../../../../protocol/renew-wire';
import { testDb } from '../../../../test/db';
import { createTestTenant, type TestTenant } from '../../../../test/fixtures';
import { createRenewHarness, type RenewHarness } from '../../../../test/renew-harness';
import { startSwtpm, type Swtpm } from '../../../../test/swtpm';
import { createEkRoot, issueEkCertificate, writeEkCertificate } from '../../../../test/tpm-provision';
import { createCaller } from '../../../api/root';
import { vouchHeaders, PEER_HEADER, VOUCH_HEADER } from '../../../vouching/vouch';
import { parseTpmPublic, spkiOf } from './public-area';
import { ThreadedPreparer } from '../../prepare-worker-pool';

// JoinService with the tpm attestor registered, a software TPM per machine (one EK each), no token anywhere.
const claims = { hostname: 'tpm-node' } as never;
const sha256 = (bytes: Buffer | string) => createHash('sha256').update(bytes).digest();

let r: RenewHarness;
let t: TestTenant;
let rootsDir: string;
const tpms: Array<{ swtpm: Swtpm; tpm?: TpmClient }> = [];

beforeAll(async () => {
  r = await createRenewHarness();
  t = await createTestTenant(testDb(), { label: 'tpm-join' });
  // Enrollment is off unless a site turns it on: this site does, so unlisted EKs wait in its queue.
  await testDb().site.update({ where: { id: t.siteId }, data: { tpm: { enrollment: true } } });
  rootsDir = mkdtempSync(join(tmpdir(), 'bc-ek-roots-'));
});
afterAll(async () => {
  for (const m of tpms) {
    await m.tpm?.close();
    await m.swtpm.stop();
  }
  await r?.close();
  rmSync(rootsDir, { recursive: true, force: true });
  delete process.env.BETTER_COMPUTE_TPM_EK_ROOTS;
});

async function machine(): Promise<TpmClient> {
  const swtpm = await startSwtpm();
  const tpm = await TpmClient.open(parseTpmAddress(swtpm.address));
  tpms.push({ swtpm, tpm });
  return tpm;
}

const post: PostJoin = async (body) => r.h.service.joinBody(Buffer.from(body));
const trust = () => ({ signingKeyPin: r.h.trust.signingKeyPin, signingCertificateDer: r.h.trust.signingCertificateDer });

async function refusals(): Promise<string[]> {
  const events = await testDb().event.findMany({
    where: { type: 'security.join.refused', tenantId: { in: [r.h.rootTenantId, t.tenantId] } },
    orderBy: { id: 'asc' },
  });
  return events.map((e) => (e.data as { reason: string }).reason).filter((reason) => reason.startsWith('tpm:'));
}

const leafOf = (answer: unknown) => readLeafNames(Buffer.from((answer as { certificateChain: string[] }).certificateChain[0]!, 'base64'));

describe('tpm joins through JoinService', () => {
  it('an unlisted EK waits in the queue, is approved through tRPC and joins; the node renews only with its AK; the EK reclaims it', async () => {
    const tpm = await machine();
    const target = { siteId: t.siteId };
    const first = await runTpmJoin(tpm, { post, trust: trust(), claims, target });
    expect(first.answer.status).toBe('pending');
    const requestId = (first.answer as { requestId: string }).requestId;
    const caller = createCaller({ db: testDb(), principal: t.admin });
    const listed = (await caller.joinRequests.list({ tenantId: t.tenantId, poolId: t.poolId })).items.find((q) => q.id === requestId)!;
    expect(listed).toMatchObject({ attestor: 'tpm', tpm: { ekIssuer: 'no EK certificate', ekChainProblem: null }, ekCertified: false });
    expect(listed.tpm!.akStatement).toMatch(/^urn:bc:tpm-ak:sha256:[0-9a-f]{64}$/);
    await caller.joinRequests.approve({ tenantId: t.tenantId, poolId: t.poolId, requestId });

    const joined = await runTpmJoin(tpm, { post, trust: trust(), claims, target, material: first.material });
    expect(joined.answer.status).toBe('joined');
    const nodeId = (joined.answer as { nodeId: string }).nodeId;
    const leaf = leafOf(joined.answer);
    expect(leaf.uris[1]).toBe(listed.tpm!.akStatement);
    const node = await testDb().node.findUniqueOrThrow({ where: { id: nodeId } });
    expect(node).toMatchObject({ poolId: t.poolId, identityGeneration: 1 });
    expect(await testDb().tpmEkBinding.findUnique({ where: { ekSha256: listed.tpm!.ekHash } })).toMatchObject({ nodeId });
    const event = await testDb().event.findFirstOrThrow({
      where: { tenantId: t.tenantId, type: 'node.joined', data: { path: ['nodeId'], equals: nodeId } },
    });
    expect(event.data).toMatchObject({ attestor: 'tpm', nodeKey: 'tpm' });
    expect(
      (await caller.joinRequests.list({ tenantId: t.tenantId, poolId: t.poolId, state: 'all' })).items.find((q) => q.id === requestId),
    ).toMatchObject({ state: 'consumed', nodeId });

    // Renewal: with the AK's attestation of a new TPM key it renews; without it, it is refused.
    const renew = async (keyAttestation: object | undefined, csrDer: Buffer) => {
      const clientTime = Math.floor(Date.now() / 1000);
      const popSig = await signWithTpmKey(
        tpm,
        first.material.nodeKey,
        sha256(renewPopMessage(sha256(csrDer).toString('hex'), nodeId, clientTime)),
      );
      const body = Buffer.from(
        renewBodyJson({
          chain: (joined.answer as { certificateChain: string[] }).certificateChain,
          csrDer,
          clientTime,
          popSig,
          keyAttestation,
        }),
      );
      const voucher = {
        key: createPrivateKey(r.gatewayCert.privateKeyPem),
        chainB64: [r.gatewayCert.certificatePem, r.h.bundle.servingCa.certificatePem].map((pem) =>
          pem.replace(/-----[^-]+-----|\s/g, ''),
        ) as [string, string],
      };
      const headers = vouchHeaders(
        voucher,
        Buffer.from((joined.answer as { certificateChain: string[] }).certificateChain[0]!, 'base64'),
        body,
        '/api/compute/v1/renew',
      );
      return r.renew.renew({ body, vouch: headers[VOUCH_HEADER], peer: headers[PEER_HEADER], path: '/api/compute/v1/renew' });
    };
    const next = await prepareTpmRenewal(tpm, { ak: first.material.ak, akStatement: listed.tpm!.akStatement });
    expect((await renew(undefined, next.csr.csrDer)).status).toBe(403);
    expect((await renew(next.keyAttestation, next.csr.csrDer)).status).toBe(200);

    // The same TPM joins again (a reinstall: new AK, new key): its EK reclaims the node, generation 2.
    const again = await runTpmJoin(tpm, { post, trust: trust(), claims, target });
    expect(again.answer).toMatchObject({ status: 'joined', nodeId });
    expect((await testDb().node.findUniqueOrThrow({ where: { id: nodeId } })).identityGeneration).toBe(2);
  });

  it('a replayed activation and a challenge answered for another CSR are refused with their reasons', async () => {
    const tpm = await machine();
    const input = { claims, target: { siteId: t.siteId } };
    const a = await prepareTpmJoin(tpm);
    const b = await prepareTpmJoin(tpm, { ak: a.ak, ekKind: a.ekKind });
    const roundOne = async (material: typeof a) => {
      const challenge = readTpmChallenge((await post(tpmJoinBody(material, input))).body, trust(), material.csr.csrSha256);
      return { nonce: challenge.nonce, secret: await answerTpmChallenge(tpm, { ak: material.ak, ekKind: material.ekKind, ...challenge }) };
    };
    const before = (await refusals()).length;
    const activation = await roundOne(a);
    expect((await post(tpmJoinBody(a, input, activation))).status).toBe(200); // pending: an unlisted EK
    expect((await post(tpmJoinBody(a, input, activation))).status).toBe(403);
    expect((await post(tpmJoinBody(b, input, await roundOne(a)))).status).toBe(403);
    const wrong = await roundOne(a);
    expect((await post(tpmJoinBody(a, input, { ...wrong, secret: Buffer.alloc(32, 1) }))).status).toBe(403);
    // Round one whose Certify another AK made (the AK sent is not its signer): refused before any challenge.
    const other = await prepareTpmJoin(tpm, { ekKind: a.ekKind });
    const forged = { ...a, attestation: { ...a.attestation, akPublic: other.attestation.akPublic } };
    expect((await post(tpmJoinBody(forged, input))).status).toBe(403);
    expect((await refusals()).slice(before)).toEqual([
      'tpm:challenge-unknown',
      'tpm:challenge-csr',
      'tpm:activation-secret',
      'tpm:attest-signature',
    ]);
  });

  it('a vendor-rooted EK joins the named pool with no token; an EK on the site allow-list too', async () => {
    const vendor = await machine();
    const ek = await createEndorsementKey(vendor, 'ecc');
    await vendor.flush(ek.handle);
    const root = await createEkRoot();
    writeFileSync(join(rootsDir, 'vendor.pem'), root.pem);
    process.env.BETTER_COMPUTE_TPM_EK_ROOTS = rootsDir;
    await writeEkCertificate(vendor, 'ecc', await issueEkCertificate(root, spkiOf(parseTpmPublic(ek.publicArea, 'EK')), 'ecc'));
    const rooted = await runTpmJoin(vendor, { post, trust: trust(), claims, target: { siteId: t.siteId, poolId: t.poolId } });
    expect(rooted.answer.status).toBe('joined');

    const listed = await machine();
    const listedEk = await createEndorsementKey(listed, 'ecc');
    await listed.flush(listedEk.handle);
    await createCaller({ db: testDb(), principal: t.admin }).sites.update({
      tenantId: t.tenantId,
      siteId: t.siteId,
      tpm: { addEkHashes: [ekHashOf(listedEk.publicArea)] },
    });
    expect((await runTpmJoin(listed, { post, trust: trust(), claims, target: { siteId: t.siteId, poolId: t.poolId } })).answer.status).toBe(
      'joined',
    );
  });

  it('prepares in a preparation thread as on the event loop (the server prepares joins there)', async () => {
    const tpm = await machine();
    const material = await prepareTpmJoin(tpm);
    const threads = new ThreadedPreparer(1);
    try {
      const prepared = await threads.prepare(Buffer.from(tpmJoinBody(material, { claims, target: { siteId: t.siteId } })), r.h.crypto);
      expect(prepared).toMatchObject({
        attestor: 'tpm',
        token: null,
        evidence: { round: 1, subject: expect.stringMatching(/^[0-9a-f]{64}:000b[0-9a-f]{64}$/) },
      });
      const tampered = { ...material, attestation: { ...material.attestation, certifyInfo: 'AAAA' } };
      expect(await threads.prepare(Buffer.from(tpmJoinBody(tampered, { claims, target: { siteId: t.siteId } })), r.h.crypto)).toMatchObject(
        { reason: 'tpm:attestation' },
      );
    } finally {
      await threads.close();
    }
  });
});
