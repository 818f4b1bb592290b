import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateNodeKeyAndCsr } from '../../agent/keys';
import { chainToPem, postToGateway } from '../../agent/renew/gateway-client';
import { loadIdentity, type LoadedIdentity } from '../../agent/renew/identity';
import { runRenewalLoop } from '../../agent/renew/loop';
import { buildRenewBody } from '../../agent/renew/renew';
import { insertKnownNode, randomMac } from '../../test/discovery-harness';
import { testDb } from '../../test/db';
import { createTestTenant, type TestTenant } from '../../test/fixtures';
import { machineClaims, mintToken } from '../../test/join-harness';
import { BASE, createRenewHarness, joinThroughGateway, type RenewHarness } from '../../test/renew-harness';
import { updateSite } from '../sites/update';
import { createDiscoveryToken } from '../tokens/site-scoped';

// A ramdisk identity lives at most the site's pendingTtlSeconds (default 24 h) from its first issue, however
// often it renews; past that, renewal is refused with its own reason (`ramdisk-lifetime`).

const REFUSED = '{"code":"ACCESS_DENIED","message":"Renew refused"}';
let r: RenewHarness;
beforeAll(async () => {
  r = await createRenewHarness();
});
afterAll(async () => {
  await r?.close();
});

/** A PXE ramdisk admitted at once (its bound MAC is a node's of the site), joined through the gateway. */
async function ramdisk(t: TestTenant): Promise<{ dir: string; id: LoadedIdentity }> {
  const mac = randomMac();
  await insertKnownNode(t, { macs: [mac] });
  const created = await createDiscoveryToken(testDb(), t.admin, { tenantId: t.tenantId, siteId: t.siteId, mac, ttlSeconds: 3600 });
  const { dir, answer } = await joinThroughGateway(r, created.token!, machineClaims({ macs: [mac] }), {
    role: 'discovery',
    attestor: 'discovery',
    expectedRole: 'ramdisk',
  });
  expect(answer.role).toBe('ramdisk');
  return { dir, id: await loadIdentity(dir) };
}

/** Moves the identity's first issue `seconds` into the past. */
const ageBy = (nodeId: string, seconds: number) =>
  testDb().$executeRaw`UPDATE nodes SET created_at = created_at - ${seconds}::int * interval '1 second' WHERE id = ${nodeId}`;

const renewOnce = (id: LoadedIdentity) => {
  const next = generateNodeKeyAndCsr();
  const body = buildRenewBody(id, next.csrDer, next.csrSha256, Math.floor(Date.now() / 1000));
  return postToGateway(
    r.target,
    { keyPem: id.identity.privateKeyPem, certificatePem: chainToPem([id.identity.certificateChain[0]!]) },
    `${BASE}/v1/renew`,
    body,
  );
};

async function refusalReasons(tenantId: string, nodeId: string) {
  const events = await testDb().event.findMany({ where: { tenantId, type: 'security.renew.refused' }, orderBy: { id: 'asc' } });
  return events
    .map((e) => e.data as { reason: string; nodeId: string })
    .filter((d) => d.nodeId === nodeId)
    .map((d) => d.reason);
}

describe("a ramdisk identity's total life", () => {
  it('renews within its life, never past its end: the renewed certificate ends by first issue + pendingTtlSeconds', async () => {
    const t = await createTestTenant(testDb());
    await updateSite(testDb(), t.admin, { tenantId: t.tenantId, siteId: t.siteId, discovery: { pendingTtlSeconds: 3_600 } });
    const { dir, id } = await ramdisk(t);
    await ageBy(id.identity.nodeId, 3_000);
    expect(await runRenewalLoop({ identityDir: dir, ...r.target, once: true, log: () => {} })).toBe(0);
    const renewed = await loadIdentity(dir);
    expect(renewed.leaf.serialNumber).not.toBe(id.leaf.serialNumber);
    const node = await testDb().node.findUniqueOrThrow({ where: { id: id.identity.nodeId } });
    const end = node.createdAt.getTime() + 3_600_000;
    expect(Date.parse(renewed.leaf.validTo)).toBeLessThanOrEqual(end);
    // Clamped: well under the 7,200 s a ramdisk certificate may otherwise last.
    expect(Date.parse(renewed.leaf.validTo) - Date.now()).toBeLessThan(700_000);
  });

  it('refuses renewal past 24 h from the first issue (the default) with reason ramdisk-lifetime, to the node owner', async () => {
    const t = await createTestTenant(testDb());
    const { id } = await ramdisk(t);
    const fresh = await renewOnce(id);
    expect(fresh.status).toBe(200);
    const { id: other } = await ramdisk(t);
    await ageBy(other.identity.nodeId, 86_400 - 30);
    const reply = await renewOnce(other);
    expect(reply.status).toBe(403);
    expect(reply.body.toString()).toBe(REFUSED);
    expect(await refusalReasons(t.tenantId, other.identity.nodeId)).toEqual(['ramdisk-lifetime']);
    expect(await testDb().nodeCert.count({ where: { nodeId: other.identity.nodeId } })).toBe(1);
  });

  it('does not cap a node identity', async () => {
    const t = await createTestTenant(testDb());
    const { dir } = await joinThroughGateway(r, (await mintToken(t)).token!);
    const id = await loadIdentity(dir);
    await ageBy(id.identity.nodeId, 40 * 86_400);
    expect((await renewOnce(id)).status).toBe(200);
  });
});
