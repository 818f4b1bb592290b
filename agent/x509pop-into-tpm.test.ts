import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readLeafNames } from '../protocol/certificate-names';
import { testDb } from '../test/db';
import { createTestTenant } from '../test/fixtures';
import { machineClaims, mintToken } from '../test/join-harness';
import { BASE, createRenewHarness, issueRecordedCertificate, joinThroughGateway, type RenewHarness } from '../test/renew-harness';
import { startSwtpm, type Swtpm } from '../test/swtpm';
import { pinnedFetch } from './bcd/pinned-fetch';
import { writeIdentity } from './identity-store';
import { generateNodeKeyAndCsr } from './keys';
import { loadNodeIdentity, type TpmLoadedIdentity } from './renew/identity';
import { p256SpkiOf } from './tpm/public-area';
import { rejoinExpiredIdentity } from './x509pop';

// An x509pop re-join of a software identity on a machine where a TPM has appeared since (bcd's node-key TPM rule,
// agent/tpm/node-key.ts): the next key is made in the TPM, the software key proves possession, and the control plane
// records the key unattested (nothing certifies it). The agent's own code against the real gateway and JoinService.

let r: RenewHarness;
let swtpm: Swtpm;

beforeAll(async () => {
  [r, swtpm] = await Promise.all([createRenewHarness(), startSwtpm()]);
});
afterAll(async () => {
  await swtpm?.stop();
  await r?.close();
});

/** A software identity (PKCS#8 node.key) whose certificate expired an hour ago, in a pool that lists x509pop. */
async function expiredSoftwareNode() {
  const t = await createTestTenant(testDb());
  const joined = await joinThroughGateway(r, (await mintToken(t)).token!);
  const { answer } = joined;
  // Another software key than the join's (a key is certified once): the expired certificate is for it.
  const { privateKeyPem: keyPem, spkiDer: spki } = generateNodeKeyAndCsr();
  const cert = await issueRecordedCertificate(r, answer, spki, { notBefore: new Date(Date.now() - 2 * 3_600_000), ttlSeconds: 3600 });
  await writeIdentity(
    joined.dir,
    { ...answer, privateKeyPem: keyPem, certificateChain: [cert.der.toString('base64'), answer.certificateChain[1]!] },
    { reset: true },
  );
  const { poolId } = await testDb().node.findUniqueOrThrow({ where: { id: answer.nodeId } });
  await testDb().pool.update({ where: { id: poolId! }, data: { policy: { joinAttestors: ['join-token', 'x509pop'] } } });
  return { dir: joined.dir, nodeId: answer.nodeId, tenantId: t.tenantId };
}

describe('an expired software identity re-joining with x509pop once a TPM opens', () => {
  it('makes the next key in the TPM, proved by the software key, and is recorded unattested', async () => {
    const node = await expiredSoftwareNode();
    const answer = await rejoinExpiredIdentity({
      serverUrl: r.target.gatewayUrl,
      basePath: BASE,
      trust: r.h.trust,
      identityDir: node.dir,
      claims: machineClaims(),
      tpm: swtpm.address,
      nodeKeyTpm: { address: swtpm.address, explicit: true },
      fetch: pinnedFetch({ servingCaPin: r.target.servingCaPin }),
    });
    expect(answer?.nodeId).toBe(node.nodeId);
    expect(await readFile(path.join(node.dir, 'node.key'), 'utf8')).toMatch(/^bcd-tpm-key v1\n/);
    const rejoined = (await loadNodeIdentity(node.dir, { tpm: swtpm.address })) as TpmLoadedIdentity;
    expect(rejoined.tpm).toBeDefined();
    expect(rejoined.tpm.akStatement).toBeNull();
    expect(readLeafNames(rejoined.leaf.raw).spkiDer.equals(p256SpkiOf(rejoined.tpm.nodeKey.publicArea))).toBe(true);
    // No AK: nothing certifies the key to the control plane.
    expect((await readdir(node.dir)).includes('ak.key')).toBe(false);
    const joined = await testDb().event.findMany({ where: { tenantId: node.tenantId, type: 'node.joined' }, orderBy: { id: 'asc' } });
    expect(joined.map((e) => e.data as { attestor: string; nodeKey: string })).toMatchObject([
      { attestor: 'join-token', nodeKey: 'unattested' },
      { attestor: 'x509pop', nodeKey: 'unattested' },
    ]);
  });
});
