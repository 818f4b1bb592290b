import { X509Certificate } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeIdentity } from '../../../agent/identity-store';
import { generateNodeKeyAndCsr, type NodeKeyAndCsr } from '../../../agent/keys';
import { loadIdentity } from '../../../agent/renew/identity';
import { runRenewalLoop } from '../../../agent/renew/loop';
import { testDb } from '../../../test/db';
import { insertKnownNode, mintDiscoveryToken, randomMac } from '../../../test/discovery-harness';
import { createTestTenant } from '../../../test/fixtures';
import { agentJoin, machineClaims, mintToken } from '../../../test/join-harness';
import { createRenewHarness, joinThroughGateway, type RenewHarness } from '../../../test/renew-harness';
import { JoinService } from '../../join/join-service';
import { approveJoinRequest } from '../../requests/decisions';
import { createDiscoveryToken } from '../../tokens/site-scoped';
import { MAX_NODE_CERT_TTL_SECONDS, MAX_RAMDISK_CERT_TTL_SECONDS, NODE_CERT_BACKDATE_SECONDS } from './node-certificate';

// protocol.md "The node certificate": "Valid for" is notAfter − notBefore, a backdate for clock skew inside it.
// Every issuing path goes through the real JoinService / RenewService here, and each certificate's validity is
// read back from its DER.

let r: RenewHarness;
beforeAll(async () => {
  r = await createRenewHarness();
});
afterAll(async () => {
  await r?.close();
});
const db = testDb;

/** notAfter − notBefore of a b64 DER leaf, and how far notBefore lies before `issuedBy` (ms since the epoch). */
function validity(b64: string, issuedBy: number) {
  const cert = new X509Certificate(Buffer.from(b64, 'base64'));
  const from = Date.parse(cert.validFrom);
  const to = Date.parse(cert.validTo);
  return { seconds: (to - from) / 1000, backdatedAtLeast: (issuedBy - from) / 1000 };
}

/** The certificate is valid for exactly `ttl` seconds and starts a backdate before it was issued. */
function expectLifetime(b64: string, ttl: number, issuedBy: number) {
  const v = validity(b64, issuedBy);
  expect(v.seconds).toBe(ttl);
  // Issued between `issuedBy − a few seconds` and `issuedBy`, truncated to the second: notBefore still lies about
  // the backdate before it, so an agent whose clock runs minutes behind holds a certificate already valid.
  expect(v.backdatedAtLeast).toBeGreaterThanOrEqual(NODE_CERT_BACKDATE_SECONDS - 30);
}

const pxeJoin = (token: string, mac: string, keys?: NodeKeyAndCsr, claims = machineClaims({ macs: [mac] })) =>
  agentJoin(r.h, token, claims, { role: 'discovery', attestor: 'discovery', expectedRole: 'ramdisk', keys });

describe('node certificates last at most their lifetime, the backdate included', () => {
  it('a join: 86,400 s by default, and the configured certTtlSeconds', async () => {
    const t = await createTestTenant(db());
    const joined = await agentJoin(r.h, (await mintToken(t)).token!, machineClaims());
    expectLifetime(joined.answer!.certificateChain[0]!, MAX_NODE_CERT_TTL_SECONDS, Date.now());

    const short = new JoinService({
      pool: r.h.pool,
      loadCrypto: async () => r.h.crypto,
      loadRootTenantId: async () => r.h.rootTenantId,
      certTtlSeconds: 3_600,
    });
    const second = await agentJoin({ ...r.h, service: short }, (await mintToken(t)).token!, machineClaims());
    expectLifetime(second.answer!.certificateChain[0]!, 3_600, Date.now());
  });

  it('a reclaim', async () => {
    const t = await createTestTenant(db());
    const claims = machineClaims();
    const first = await agentJoin(r.h, (await mintToken(t)).token!, claims);
    const again = await agentJoin(r.h, (await mintToken(t, { allowReclaim: true })).token!, claims);
    expect(again.answer!.nodeId).toBe(first.answer!.nodeId);
    expect(await db().node.findUniqueOrThrow({ where: { id: first.answer!.nodeId } })).toMatchObject({ identityGeneration: 2 });
    expectLifetime(again.answer!.certificateChain[0]!, MAX_NODE_CERT_TTL_SECONDS, Date.now());
  });

  it('a known machine through discovery (under the lock, then signed early): 7,200 s', async () => {
    const t = await createTestTenant(db());
    const mac = randomMac();
    await insertKnownNode(t, { macs: [mac] });
    const { token } = await mintDiscoveryToken(t, mac, { maxUses: 3 });
    const first = await pxeJoin(token, mac);
    expect(first.answer).toMatchObject({ status: 'joined', role: 'ramdisk' });
    expectLifetime(first.answer!.certificateChain[0]!, MAX_RAMDISK_CERT_TTL_SECONDS, Date.now());
    // The first admission left a hint: this one was signed before the admission lock (server/join/presign.ts).
    const second = await pxeJoin(token, mac);
    expect(second.answer).toMatchObject({ status: 'joined', role: 'ramdisk' });
    expectLifetime(second.answer!.certificateChain[0]!, MAX_RAMDISK_CERT_TTL_SECONDS, Date.now());
  });

  it('an approved join request: 7,200 s', async () => {
    const t = await createTestTenant(db());
    const mac = randomMac();
    const created = await createDiscoveryToken(db(), t.admin, {
      tenantId: t.tenantId,
      siteId: t.siteId,
      mac,
      ip: '10.1.2.3',
      workflowId: 'wf-9',
      bootLeaseEpoch: 42,
      ttlSeconds: 3600,
    });
    const keys = generateNodeKeyAndCsr();
    const claims = machineClaims({ macs: [mac] });
    const pending = await pxeJoin(created.token!, mac, keys, claims);
    const requestId = (pending.answer as unknown as { status: string; requestId: string }).requestId;
    expect(pending.answer).toMatchObject({ status: 'pending' });
    await approveJoinRequest(db(), t.operator, { ttlSeconds: 3600, tenantId: t.tenantId, poolId: t.poolId, requestId });
    const admitted = await pxeJoin(created.token!, mac, keys, claims);
    expect(admitted.answer).toMatchObject({ status: 'joined', role: 'ramdisk' });
    expectLifetime(admitted.answer!.certificateChain[0]!, MAX_RAMDISK_CERT_TTL_SECONDS, Date.now());
  });

  it('a renewal through the gateway, of a node and of a ramdisk', async () => {
    const t = await createTestTenant(db());
    const { dir } = await joinThroughGateway(r, (await mintToken(t)).token!);
    expect(await runRenewalLoop({ identityDir: dir, ...r.target, once: true, log: () => {} })).toBe(0);
    expectLifetime((await loadIdentity(dir)).identity.certificateChain[0]!, MAX_NODE_CERT_TTL_SECONDS, Date.now());

    const mac = randomMac();
    await insertKnownNode(t, { macs: [mac] });
    const ramdisk = await pxeJoin((await mintDiscoveryToken(t, mac)).token, mac);
    const ramdiskDir = await mkdtemp(path.join(tmpdir(), 'bc-agent-'));
    const a = ramdisk.answer!;
    await writeIdentity(ramdiskDir, {
      privateKeyPem: ramdisk.keys.privateKeyPem,
      certificateChain: a.certificateChain,
      nodeId: a.nodeId,
      siteId: a.siteId,
      trustDomain: a.trustDomain,
      role: a.role,
    });
    expect(await runRenewalLoop({ identityDir: ramdiskDir, ...r.target, once: true, log: () => {} })).toBe(0);
    const renewed = await loadIdentity(ramdiskDir);
    expect(renewed.identity.role).toBe('ramdisk');
    expect(renewed.leaf.serialNumber).not.toBe(new X509Certificate(Buffer.from(a.certificateChain[0]!, 'base64')).serialNumber);
    expectLifetime(renewed.identity.certificateChain[0]!, MAX_RAMDISK_CERT_TTL_SECONDS, Date.now());
  });
});
