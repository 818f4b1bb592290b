import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readLeafNames } from '../protocol/certificate-names';
import { JOIN_REFUSED } from '../protocol/join-wire';
import { x509popProofMessage } from '../protocol/x509pop-wire';
import { testDb } from '../test/db';
import { machineClaims } from '../test/join-harness';
import { BASE, type RenewHarness } from '../test/renew-harness';
import { startSwtpm, type Swtpm } from '../test/swtpm';
import { startTwoTpms, tpmBoundNode, type TwoTpms } from '../test/tpm-node';
import { pinnedFetch } from './bcd/pinned-fetch';
import { generateNodeKeyAndCsr } from './keys';
import { postToGateway } from './renew/gateway-client';
import { loadNodeIdentity, type TpmLoadedIdentity } from './renew/identity';
import { RENEWAL_EXIT, runRenewalLoop } from './renew/loop';
import { withTpm } from './tpm/identify';
import { encodeKeyBlob, type TpmKeyBlob } from './tpm/keys';
import { p256SpkiOf } from './tpm/public-area';
import { prepareTpmRenewal, signWithTpmKey } from './tpm/renewal';
import { verifyJoinChallenge } from './verify-answer';
import { rejoinExpiredIdentity, runWithX509popRejoin, sendX509popRejoin, x509popBody } from './x509pop';

// The x509pop re-join of a TPM-bound identity (a leaf naming `urn:bc:tpm-ak:`) whose certificate expired while the
// machine was offline: the agent's own code, two swtpm TPMs, and the real JoinService behind the real gateway.

let r: RenewHarness;
let swtpmA: Swtpm;
let swtpmB: Swtpm;
let akA: TpmKeyBlob;
let statementA: string;
let akB: TpmKeyBlob;
let statementB: string;

let tpms: TwoTpms;

beforeAll(async () => {
  tpms = await startTwoTpms();
  ({ r, swtpmA, swtpmB, akA, statementA, akB, statementB } = tpms);
});

afterAll(() => tpms?.stop());

/** A TPM-bound node (TPM A, AK A) whose certificate expired an hour ago, in a pool that lists x509pop. */
async function expiredTpmNode() {
  const node = await tpmBoundNode(r, swtpmA.address, { blob: akA, statement: statementA }, undefined, {
    notBefore: new Date(Date.now() - 2 * 3_600_000),
    ttlSeconds: 3600,
  });
  const { poolId } = await testDb().node.findUniqueOrThrow({ where: { id: node.nodeId } });
  await testDb().pool.update({ where: { id: poolId! }, data: { policy: { joinAttestors: ['join-token', 'x509pop'] } } });
  return node;
}

/** The re-join as bcd node makes it: through the gateway, pinned to its serving CA, counting what it sends. */
function rejoin(dir: string, tpm: string) {
  const sent: string[] = [];
  const pinned = pinnedFetch({ servingCaPin: r.target.servingCaPin });
  const counting: typeof fetch = (input, init) => {
    sent.push(String(init?.body ?? ''));
    return pinned(input, init);
  };
  const run = () =>
    rejoinExpiredIdentity({
      serverUrl: r.target.gatewayUrl,
      basePath: BASE,
      trust: r.h.trust,
      identityDir: dir,
      claims: machineClaims(),
      tpm,
      fetch: counting,
    });
  return { run, sent };
}

const postJoin = (body: string) => postToGateway(r.target, undefined, `${BASE}/v1/join`, body);

/** The reasons of the root tenant's `security.join.refused` events for the CSR `csrSha256` (prepare refuses there). */
async function refusals(csrSha256: string): Promise<string[]> {
  const events = await testDb().event.findMany({
    where: { tenantId: r.h.rootTenantId, type: 'security.join.refused' },
    orderBy: { id: 'asc' },
  });
  return events
    .map((e) => e.data as { reason: string; csrSha256: string })
    .filter((d) => d.csrSha256 === csrSha256)
    .map((d) => d.reason);
}

describe('an expired TPM-bound identity re-joining with x509pop', () => {
  it('re-joins with the AK’s key attestation and a proof the TPM signs, keeping role and statement', async () => {
    const node = await expiredTpmNode();
    const { run, sent } = rejoin(node.dir, swtpmA.address);
    const answer = await run();
    expect(answer?.nodeId).toBe(node.nodeId);
    expect(sent).toHaveLength(2);
    // Both rounds carry the Certify; round two adds the nonce and the proof.
    const [one, two] = sent.map((body) => JSON.parse(body).attestation);
    expect(Object.keys(one).sort()).toEqual(['certificate', 'keyAttestation']);
    expect(Object.keys(two).sort()).toEqual(['certificate', 'keyAttestation', 'nonce', 'proof']);
    expect(Object.keys(one.keyAttestation).sort()).toEqual(['akPublic', 'certifyInfo', 'certifySignature', 'nodeKeyPublic']);

    // The new identity: the next key is a TPM key blob the new leaf certifies, the AK kept, the statement kept.
    const renewed = (await loadNodeIdentity(node.dir, { tpm: swtpmA.address })) as TpmLoadedIdentity;
    expect(renewed.tpm).toBeDefined();
    expect(renewed.tpm.nodeKey.publicArea.equals(node.key.publicArea)).toBe(false);
    const names = readLeafNames(renewed.leaf.raw);
    expect(names.spkiDer.equals(p256SpkiOf(renewed.tpm.nodeKey.publicArea))).toBe(true);
    expect(names.uris.slice(1)).toEqual([statementA]);
    expect(renewed.identity.role).toBe('node');
    expect(renewed.notAfter.getTime()).toBeGreaterThan(Date.now());
    expect(await readFile(path.join(node.dir, 'ak.key'), 'utf8')).toBe(encodeKeyBlob(akA));
    expect(await readFile(path.join(node.dir, 'node.key'), 'utf8')).toMatch(/^bcd-tpm-key v1\n/);

    // A reclaim, as for a software x509pop re-join: next generation, every older certificate revoked.
    const db = testDb();
    expect((await db.node.findUniqueOrThrow({ where: { id: node.nodeId } })).identityGeneration).toBe(2);
    const certs = await db.nodeCert.findMany({ where: { nodeId: node.nodeId }, orderBy: { createdAt: 'asc' } });
    expect(certs.map((c) => [c.identityGeneration, c.role, c.revocationReason])).toEqual([
      [1, 'node', 'reclaimed'],
      [1, 'node', 'reclaimed'],
      [2, 'node', null],
    ]);
    expect(Buffer.from(certs[2]!.der).equals(renewed.leaf.raw)).toBe(true);
    const joined = await db.event.findMany({ where: { tenantId: node.tenantId, type: 'node.joined' }, orderBy: { id: 'asc' } });
    expect(joined.map((e) => e.data as { attestor: string; reclaim: boolean; nodeKey: string })).toMatchObject([
      { attestor: 'join-token', reclaim: false, nodeKey: 'unattested' },
      { attestor: 'x509pop', reclaim: true, nodeKey: 'tpm' },
    ]);

    // The re-joined key is in the TPM and renews (with key attestation) through the gateway's mutual TLS.
    const lines: string[] = [];
    const renewal = { ...r.target, identityDir: node.dir, tpm: swtpmA.address, once: true, log: (l: string) => lines.push(l) };
    expect(await runRenewalLoop(renewal), lines.join('\n')).toBe(RENEWAL_EXIT.stopped);
  });

  it('is refused without keyAttestation, in either round, never downgraded to the proof alone', async () => {
    const node = await expiredTpmNode();
    const last = (await loadNodeIdentity(node.dir, { tpm: swtpmA.address })) as TpmLoadedIdentity;
    // The agent's own flow, given a software next key: the TPM signs the proof, nothing certifies the key.
    const software = generateNodeKeyAndCsr();
    await expect(
      sendX509popRejoin({
        serverUrl: r.target.gatewayUrl,
        basePath: BASE,
        trust: r.h.trust,
        last,
        claims: machineClaims(),
        keys: software,
        fetch: pinnedFetch({ servingCaPin: r.target.servingCaPin }),
      }),
    ).rejects.toMatchObject({ status: 403 });
    expect(await refusals(software.csrSha256)).toEqual(['x509pop:key-attestation-missing']);

    // Round one with TPM A's Certify gets a nonce; the same request's round two without it is refused.
    const made = await withTpm(swtpmA.address, (tpm) => prepareTpmRenewal(tpm, { ak: akA, akStatement: statementA }));
    const leafDer = last.leaf.raw;
    const base = { leafDer, keys: made.csr, claims: machineClaims(), role: 'node' };
    const one = await postJoin(x509popBody({ ...base, keyAttestation: made.keyAttestation }));
    expect(one.status).toBe(200);
    const { nonce } = verifyJoinChallenge(JSON.parse(one.body.toString()), {
      signingKeyPin: r.h.trust.signingKeyPin,
      signingCertificateDer: r.h.trust.signingCertificateDer,
      csrSha256: made.csr.csrSha256,
      attestor: 'x509pop',
    });
    const proof = await withTpm(swtpmA.address, (tpm) =>
      signWithTpmKey(tpm, node.key, createHash('sha256').update(x509popProofMessage(nonce, made.csr.csrSha256)).digest()),
    );
    const two = await postJoin(x509popBody({ ...base, nonce, proof }));
    expect(two.status).toBe(403);
    expect(two.body.equals(JOIN_REFUSED.body)).toBe(true);
    expect(await refusals(made.csr.csrSha256)).toEqual(['x509pop:key-attestation-missing']);
    // Nothing was re-admitted.
    expect((await testDb().node.findUniqueOrThrow({ where: { id: node.nodeId } })).identityGeneration).toBe(1);
  });

  it('is refused with another TPM’s AK', async () => {
    const node = await expiredTpmNode();
    const last = (await loadNodeIdentity(node.dir, { tpm: swtpmA.address })) as TpmLoadedIdentity;
    // TPM B's next key, certified by TPM B's AK: a valid Certify, by an AK the leaf does not name.
    const other = await withTpm(swtpmB.address, (tpm) => prepareTpmRenewal(tpm, { ak: akB, akStatement: statementB }));
    const one = await postJoin(
      x509popBody({ leafDer: last.leaf.raw, keys: other.csr, claims: machineClaims(), role: 'node', keyAttestation: other.keyAttestation }),
    );
    expect(one.status).toBe(403);
    expect(one.body.equals(JOIN_REFUSED.body)).toBe(true);
    expect(await refusals(other.csr.csrSha256)).toEqual(['x509pop:key-attestation-ak']);
    expect((await testDb().node.findUniqueOrThrow({ where: { id: node.nodeId } })).identityGeneration).toBe(1);
  });

  it('fails loudly and sends nothing when the TPM is unavailable or another one, and keeps the identity', async () => {
    const node = await expiredTpmNode();
    const files = async () => Promise.all(['node.key', 'identity.json', 'ak.key'].map((f) => readFile(path.join(node.dir, f), 'utf8')));
    const before = await files();
    const stopped = await startSwtpm();
    await stopped.stop();
    const unavailable = rejoin(node.dir, stopped.address);
    await expect(unavailable.run()).rejects.toThrow(/cannot open the TPM/);
    expect(unavailable.sent).toEqual([]);
    // TPM B cannot load TPM A's key blobs.
    const another = rejoin(node.dir, swtpmB.address);
    await expect(another.run()).rejects.toThrow();
    expect(another.sent).toEqual([]);

    // bcd node's wrapper says so and falls back to the loop's own answer for an expired identity.
    const lines: string[] = [];
    const code = await runWithX509popRejoin({
      identityDir: node.dir,
      run: () => runRenewalLoop({ ...r.target, identityDir: node.dir, tpm: stopped.address, once: true, log: (l) => lines.push(l) }),
      rejoin: unavailable.run,
      expiredExit: RENEWAL_EXIT.expired,
      log: (l) => lines.push(l),
    });
    expect(code, lines.join('\n')).toBe(RENEWAL_EXIT.expired);
    expect(lines.join('\n')).toMatch(/the x509pop re-join failed: .*cannot open the TPM/);
    expect(unavailable.sent).toEqual([]);
    expect(await files()).toEqual(before);
    expect((await testDb().node.findUniqueOrThrow({ where: { id: node.nodeId } })).identityGeneration).toBe(1);
  });
});
