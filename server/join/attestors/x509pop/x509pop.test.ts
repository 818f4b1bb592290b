import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateNodeKeyAndCsr, type NodeKeyAndCsr } from '../../../../agent/keys';
import { parseIdentity, type LoadedIdentity } from '../../../../agent/renew/identity';
import { verifyJoinAnswer, verifyJoinChallenge } from '../../../../agent/verify-answer';
import { x509popBody } from '../../../../agent/x509pop';
import { testDb } from '../../../../test/db';
import { createTestTenant, type TestTenant } from '../../../../test/fixtures';
import { agentJoin, createJoinHarness, machineClaims, mintToken, type JoinHarness } from '../../../../test/join-harness';
import { JOIN_REFUSED } from '../../../../protocol/join-wire';
import { issueNodeCertificate } from '../../../pki/issuance/node-certificate';

let h: JoinHarness;
beforeAll(async () => {
  h = await createJoinHarness();
});
afterAll(async () => {
  await h.pool.end();
});

const db = () => testDb();

/** A tenant whose pool admits token joins and x509pop re-joins, and a node joined into it with a token. */
async function joinedNode(options: { policy?: string[] | null; allowReclaim?: boolean } = {}) {
  const t = await createTestTenant(db());
  const policy = options.policy === undefined ? ['join-token', 'x509pop'] : options.policy;
  if (policy) await db().pool.update({ where: { id: t.pool.id }, data: { policy: { joinAttestors: policy } } });
  const claims = machineClaims();
  const { token } = await mintToken(t, { maxUses: 2, ...(options.allowReclaim ? { allowReclaim: true } : {}) });
  const joined = await agentJoin(h, token!, claims);
  expect(joined.status).toBe(200);
  const answer = joined.answer!;
  const last = parseIdentity(joined.keys.privateKeyPem, { ...answer });
  return { t, claims, token: token!, last, nodeId: answer.nodeId };
}

/** Moves the node's certificates' end `age` into the past at the database's clock (the row is the authority). */
async function expire(nodeId: string, age: string) {
  await db().$executeRawUnsafe(
    `UPDATE node_certs SET not_after = compute_now() - $2::interval, not_before = compute_now() - $2::interval - interval '1 day' WHERE node_id = $1`,
    nodeId,
    age,
  );
}

async function send(body: string) {
  const answer = await h.service.join(JSON.parse(body));
  return { status: answer.status, bytes: answer.body, json: JSON.parse(answer.body.toString()) };
}

const signing = (keys: NodeKeyAndCsr) => ({
  signingKeyPin: h.trust.signingKeyPin,
  signingCertificateDer: h.trust.signingCertificateDer,
  csrSha256: keys.csrSha256,
});

/** The leaf (DER) of `last`'s certificate chain. */
const leafOf = (last: LoadedIdentity) => Buffer.from(last.identity.certificateChain[0]!, 'base64');

/** Round one for `last`'s leaf with new keys (role unnamed); its answer. */
const roundOneWithNewKeys = (last: LoadedIdentity) =>
  send(x509popBody({ leafDer: leafOf(last), keys: generateNodeKeyAndCsr(), claims: machineClaims() }));

/** Round one for `last` with `keys`; the verified challenge's nonce. */
async function roundOne(last: LoadedIdentity, keys: NodeKeyAndCsr, claims = machineClaims()) {
  const one = await send(x509popBody({ leafDer: leafOf(last), keys, claims, role: last.identity.role }));
  expect(one.status).toBe(200);
  return verifyJoinChallenge(one.json, { ...signing(keys), attestor: 'x509pop' }).nonce;
}

function roundTwo(
  last: LoadedIdentity,
  keys: NodeKeyAndCsr,
  nonce: string,
  options: { proofKeys?: NodeKeyAndCsr; claims?: ReturnType<typeof machineClaims> } = {},
) {
  const leafDer = leafOf(last);
  const body = JSON.parse(
    x509popBody({ leafDer, keys, claims: options.claims ?? machineClaims(), role: last.identity.role, lastKey: last.privateKey, nonce }),
  );
  if (options.proofKeys) {
    // The proof made for another CSR, sent with this one.
    body.attestation.proof = JSON.parse(
      x509popBody({ leafDer, keys: options.proofKeys, claims: {}, lastKey: last.privateKey, nonce }),
    ).attestation.proof;
  }
  return send(JSON.stringify(body));
}

async function refusalReasons(t: TestTenant) {
  const events = await db().event.findMany({ where: { tenantId: t.tenantId, type: 'security.join.refused' }, orderBy: { id: 'asc' } });
  return events.map((e) => (e.data as { reason: string }).reason);
}

/** The reasons of the root tenant's latest 20 refusals for the CSR `csrSha256`, newest first. */
async function rootRefusalReasons(csrSha256: string) {
  const events = await db().event.findMany({
    where: { tenantId: h.rootTenantId, type: 'security.join.refused' },
    orderBy: { id: 'desc' },
    take: 20,
  });
  return events.filter((e) => (e.data as { csrSha256: string }).csrSha256 === csrSha256).map((e) => (e.data as { reason: string }).reason);
}

describe('x509pop re-joins', () => {
  it('re-admits a node whose certificate expired an hour ago: same node, next generation, old certificates revoked', async () => {
    const { t, last, nodeId, claims } = await joinedNode();
    await expire(nodeId, '1 hour');
    const keys = generateNodeKeyAndCsr();
    const nonce = await roundOne(last, keys, claims);
    expect(await db().joinChallenge.count({ where: { attestor: 'x509pop', subject: nodeId, csrSha256: keys.csrSha256 } })).toBe(1);
    const two = await roundTwo(last, keys, nonce, { claims });
    expect(two.status).toBe(200);
    const answer = verifyJoinAnswer(two.json, { ...signing(keys), publicKeySpkiDer: keys.spkiDer, expectedRole: 'node' });
    expect(answer).toMatchObject({ status: 'joined', nodeId, siteId: t.site.id, role: 'node' });

    const node = await db().node.findUniqueOrThrow({ where: { id: nodeId } });
    expect(node).toMatchObject({ identityGeneration: 2, poolId: t.pool.id, tenantId: t.tenantId, attestor: 'join-token' });
    const certs = await db().nodeCert.findMany({ where: { nodeId }, orderBy: { identityGeneration: 'asc' } });
    expect(certs.map((c) => [c.identityGeneration, c.role, c.revocationReason])).toEqual([
      [1, 'node', 'reclaimed'],
      [2, 'node', null],
    ]);
    const joined = await db().event.findMany({ where: { tenantId: t.tenantId, type: 'node.joined' }, orderBy: { id: 'asc' } });
    expect(joined.at(-1)!.data).toMatchObject({
      nodeId,
      attestor: 'x509pop',
      reclaim: true,
      identityGeneration: 2,
      certificateSerial: certs[1]!.serial,
    });
    expect(joined.at(-1)!.data).not.toHaveProperty('tokenId');
    expect(await db().event.count({ where: { tenantId: t.tenantId, type: 'security.certificate-revoked' } })).toBe(1);
    const audit = await db().auditEntry.findFirstOrThrow({ where: { resource: `compute-node/${nodeId}`, action: 'node.reclaimed' } });
    expect(audit.actor).toBe(`x509pop:${certs[0]!.serial}`);
    // The nonce was used up.
    expect(await db().joinChallenge.count({ where: { subject: nodeId } })).toBe(0);
    // The same round two again: its CSR's key is certified now, so the core refuses it as a replay.
    const replay = await roundTwo(last, keys, nonce);
    expect(replay.bytes.equals(JOIN_REFUSED.body)).toBe(true);
    expect(await rootRefusalReasons(keys.csrSha256)).toEqual(['join:token']);
    // And with a new key and a fresh round one, the old leaf is of an older generation.
    const newer = generateNodeKeyAndCsr();
    expect((await send(x509popBody({ leafDer: leafOf(last), keys: newer, claims }))).status).toBe(403);
    expect(await refusalReasons(t)).toEqual(['x509pop:generation']);
  });

  it('refuses a certificate that expired 8 days ago, and one that has not expired, at round one', async () => {
    const { t, last, nodeId } = await joinedNode();
    const fresh = await roundOneWithNewKeys(last);
    expect(fresh.bytes.equals(JOIN_REFUSED.body)).toBe(true);
    await expire(nodeId, '8 days');
    const old = await roundOneWithNewKeys(last);
    expect(old.status).toBe(403);
    expect(old.bytes.equals(JOIN_REFUSED.body)).toBe(true);
    expect(await refusalReasons(t)).toEqual(['x509pop:not-expired', 'x509pop:expired']);
    expect((await db().node.findUniqueOrThrow({ where: { id: nodeId } })).identityGeneration).toBe(1);
  });

  it('refuses a replayed nonce, a nonce issued for another CSR, and a proof over another CSR, each with its reason', async () => {
    const { t, last, nodeId } = await joinedNode();
    await expire(nodeId, '1 hour');
    const keys = generateNodeKeyAndCsr();

    // A proof made over another CSR than the one sent.
    const n1 = await roundOne(last, keys);
    const otherCsr = await roundTwo(last, keys, n1, { proofKeys: generateNodeKeyAndCsr() });
    expect(otherCsr.bytes.equals(JOIN_REFUSED.body)).toBe(true);

    // A nonce issued for `keys`' CSR, answered (with a good proof) for another CSR.
    const other = generateNodeKeyAndCsr();
    const swapped = await roundTwo(last, other, n1);
    expect(swapped.bytes.equals(JOIN_REFUSED.body)).toBe(true);

    // That refused round two used the nonce up: the good answer to it is now a replay.
    const replayed = await roundTwo(last, keys, n1);
    expect(replayed.bytes.equals(JOIN_REFUSED.body)).toBe(true);

    // A fresh round one still admits.
    const n2 = await roundOne(last, keys);
    expect((await roundTwo(last, keys, n2)).status).toBe(200);
    expect(await refusalReasons(t)).toEqual(['x509pop:nonce', 'x509pop:nonce']);
    // A proof that does not verify is refused before the database: its event goes to the root tenant.
    const rootReasons = await db().event.findMany({
      where: { tenantId: h.rootTenantId, type: 'security.join.refused', createdAt: { gte: new Date(Date.now() - 60_000) } },
    });
    expect(rootReasons.map((e) => (e.data as { reason: string; csrSha256: string }).csrSha256)).toContain(keys.csrSha256);
    expect(
      rootReasons
        .filter((e) => (e.data as { csrSha256: string }).csrSha256 === keys.csrSha256)
        .map((e) => (e.data as { reason: string }).reason),
    ).toEqual(['x509pop:proof']);
  });

  it('refuses a leaf of an older generation, a revoked node, and a pool whose joinAttestors lacks x509pop', async () => {
    // An older generation: the machine reclaimed its node with a token since.
    const reclaimed = await joinedNode({ allowReclaim: true });
    const again = await agentJoin(h, reclaimed.token, reclaimed.claims);
    expect(again.status).toBe(200);
    await expire(reclaimed.nodeId, '1 hour');
    expect((await roundOneWithNewKeys(reclaimed.last)).status).toBe(403);
    expect(await refusalReasons(reclaimed.t)).toEqual(['x509pop:generation']);

    // Revoked (nodes.revokeIdentity revokes the current certificates).
    const revoked = await joinedNode();
    await expire(revoked.nodeId, '1 hour');
    await db().$executeRawUnsafe(
      `UPDATE node_certs SET revoked_at = compute_now(), revocation_reason = 'revoked' WHERE node_id = $1`,
      revoked.nodeId,
    );
    expect((await roundOneWithNewKeys(revoked.last)).status).toBe(403);
    expect(await refusalReasons(revoked.t)).toEqual(['x509pop:revoked']);

    // A pool that lists only join-token, and one with no policy at all: x509pop is opt-in.
    for (const policy of [['join-token'], null]) {
      const off = await joinedNode({ policy });
      await expire(off.nodeId, '1 hour');
      expect((await roundOneWithNewKeys(off.last)).status).toBe(403);
      expect(await refusalReasons(off.t)).toEqual(['x509pop:pool-attestor']);
    }
  });

  it('refuses a leaf that is not byte for byte one of ours', async () => {
    const { last, nodeId } = await joinedNode();
    await expire(nodeId, '1 hour');
    const der = leafOf(last);
    // The same certificate with its signature's last byte changed: same key, same names, not our bytes.
    const forged = Buffer.from(der);
    forged[forged.length - 1] = forged[forged.length - 1]! ^ 1;
    const answer = await send(x509popBody({ leafDer: forged, keys: generateNodeKeyAndCsr(), claims: machineClaims() }));
    expect(answer.bytes.equals(JOIN_REFUSED.body)).toBe(true);
    const events = await db().event.findMany({
      where: { tenantId: h.rootTenantId, type: 'security.join.refused' },
      orderBy: { id: 'desc' },
      take: 5,
    });
    expect(events.map((e) => (e.data as { reason: string }).reason)).toContain('x509pop:certificate-unknown');
  });

  it('refuses a TPM-bound identity (a leaf naming a TPM AK) without key attestation, in round one', async () => {
    const keys = generateNodeKeyAndCsr();
    const leaf = issueNodeCertificate(h.crypto.nodeCa, {
      publicKeySpkiDer: keys.spkiDer,
      trustDomain: h.crypto.trustDomain,
      siteId: 'site_x',
      nodeId: 'node_tpm',
      role: 'node',
      notBefore: new Date(Date.now() - 2 * 86_400_000),
      ttlSeconds: 86_400,
      extraUris: ['urn:bc:tpm-ak:sha256:' + 'ab'.repeat(32)],
    });
    const next = generateNodeKeyAndCsr();
    const answer = await send(x509popBody({ leafDer: leaf.der, keys: next, claims: machineClaims() }));
    expect(answer.bytes.equals(JOIN_REFUSED.body)).toBe(true);
    // `{}` is as missing as no field; a field of another shape is malformed.
    const empty = JSON.parse(x509popBody({ leafDer: leaf.der, keys: next, claims: machineClaims() }));
    empty.attestation.keyAttestation = {};
    expect((await send(JSON.stringify(empty))).bytes.equals(JOIN_REFUSED.body)).toBe(true);
    empty.attestation.keyAttestation = 'certify';
    expect((await send(JSON.stringify(empty))).bytes.equals(JOIN_REFUSED.body)).toBe(true);
    expect(await rootRefusalReasons(next.csrSha256)).toEqual([
      'x509pop:key-attestation-malformed',
      'x509pop:key-attestation-missing',
      'x509pop:key-attestation-missing',
    ]);
  });
});
