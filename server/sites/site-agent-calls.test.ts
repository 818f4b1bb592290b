import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testDb } from '../../test/db';
import { createTestTenant, expectNoSecretLeaks } from '../../test/fixtures';
import { randomMac } from '../../test/discovery-harness';
import { machineClaims } from '../../test/join-harness';
import { BASE, createRenewHarness, type RenewHarness } from '../../test/renew-harness';
import { joinSiteAgent, mint, redeem, refusalReasons } from '../../test/site-agent-harness';
import { postToGateway } from '../../agent/renew/gateway-client';
import { prepareJoinAttempt } from '../../agent/join';
import { SECRET_REF, SITE_AGENT_REFUSED } from '../../protocol/site-agent-wire';

// The site agent's two calls through the real gateway (mutual TLS) and the API's agent endpoints, on PostgreSQL:
// a discovery token per MAC as a secret reference, redeemed once; retries, newer leases and races.

const secret = 'site-agent-test-secret-0123456789abcdefghijklmnopqrstuv';
let r: RenewHarness;
beforeAll(async () => {
  r = await createRenewHarness({ env: { BETTER_COMPUTE_SECRET: secret } });
});
afterAll(async () => {
  await r?.close();
});
const db = testDb;
const refused = SITE_AGENT_REFUSED.body.toString();
const liveTokens = (siteId: string, mac: string) =>
  db().joinToken.count({ where: { siteId, role: 'discovery', boundMac: mac, revokedAt: null, usesLeft: { gt: 0 } } });

describe('a site agent mints a discovery token for a lease and redeems it once', () => {
  it('the ramdisk joins with it into the queue, vouched for by the site agent with the lease epoch; the token is nowhere else', async () => {
    const t = await createTestTenant(db());
    const agent = await joinSiteAgent(r, t);
    const cert = await db().nodeCert.findFirstOrThrow({ where: { nodeId: agent.nodeId } });
    expect(cert.role).toBe('site');
    const mac = randomMac();
    const minted = await mint(r, agent.dir, { mac, ip: '10.1.2.3', bootLeaseEpoch: 41 });
    expect(minted.status).toBe(200);
    expect(minted.json.ref).toMatch(SECRET_REF);
    expect(minted.text).not.toContain('bcjt_');
    const row = await db().secretRef.findUniqueOrThrow({ where: { id: minted.json.ref as string } });
    expect(row.sealed).not.toBeNull();
    const redeemed = await redeem(r, agent.dir, minted.json.ref as string);
    expect(redeemed.status).toBe(200);
    expect(redeemed.json.tokenId).toBe(minted.json.tokenId);
    const token = redeemed.json.token as string;
    expect(token).toMatch(/^bcjt_/);
    // Redeemed: the seal is gone from the database, and a second redeem is the uniform refusal.
    expect((await db().secretRef.findUniqueOrThrow({ where: { id: row.id } })).sealed).toBeNull();
    expect((await redeem(r, agent.dir, row.id)).text).toBe(refused);
    expect(await refusalReasons(agent.nodeId)).toEqual(['ref-unknown-or-redeemed']);

    const attempt = await prepareJoinAttempt({
      token,
      trust: r.h.trust,
      claims: machineClaims({ macs: [mac] }),
      role: 'discovery',
      attestor: 'discovery',
    });
    const joined = await postToGateway(r.target, undefined, `${BASE}/v1/join`, attempt.body);
    expect(joined.status).toBe(200);
    const request = await db().joinRequest.findFirstOrThrow({ where: { siteId: t.siteId, tokenId: minted.json.tokenId as string } });
    expect(request).toMatchObject({ state: 'pending', vouchedBy: `node:${agent.nodeId}`, bootLeaseEpoch: 41n });
    const refs = await db().secretRef.findMany({ where: { siteId: t.siteId } });
    const refsText = JSON.stringify(refs, (_, v: unknown) => (typeof v === 'bigint' ? String(v) : v));
    await expectNoSecretLeaks(db(), [token], [...r.gatewayLines, refsText]);
  });

  it('the same lease epoch is a retry (the same reference); a newer one revokes the unredeemed token; an older one is refused', async () => {
    const t = await createTestTenant(db());
    const agent = await joinSiteAgent(r, t);
    const mac = randomMac();
    const first = await mint(r, agent.dir, { mac, bootLeaseEpoch: 5 });
    const again = await mint(r, agent.dir, { mac: mac.toUpperCase().replace(/:/g, '-'), bootLeaseEpoch: 5 });
    expect(again.json).toEqual(first.json);
    const newer = await mint(r, agent.dir, { mac, bootLeaseEpoch: 6 });
    expect(newer.status).toBe(200);
    expect(newer.json.ref).not.toBe(first.json.ref);
    const old = await db().joinToken.findUniqueOrThrow({ where: { id: first.json.tokenId as string } });
    expect(old.revokedAt).not.toBeNull();
    expect(old.revokedBy).toBe(`node:${agent.nodeId}`);
    const revokedEvents = await db().event.findMany({ where: { tenantId: t.tenantId, type: 'security.join-token.revoked' } });
    expect(revokedEvents.map((e) => e.data)).toEqual([expect.objectContaining({ tokenId: old.id, reason: 'newer-lease' })]);
    expect(
      await db().auditEntry.count({
        where: { tenantId: t.tenantId, action: 'join-token.revoked', resource: `compute-join-token/${old.id}` },
      }),
    ).toBe(1);
    expect(await liveTokens(t.siteId, mac)).toBe(1);
    // The superseded reference no longer redeems; the older epoch is refused.
    expect((await redeem(r, agent.dir, first.json.ref as string)).text).toBe(refused);
    expect((await mint(r, agent.dir, { mac, bootLeaseEpoch: 4 })).text).toBe(refused);
    expect(await refusalReasons(agent.nodeId)).toEqual(['ref-unknown-or-redeemed', 'stale-lease']);
  });

  it('races: twenty mints for one MAC at once leave one live token; twenty redeems of one reference give the token once', async () => {
    const t = await createTestTenant(db());
    const agent = await joinSiteAgent(r, t);
    const mac = randomMac();
    const mints = await Promise.all(Array.from({ length: 20 }, (_, i) => mint(r, agent.dir, { mac, bootLeaseEpoch: 100 + (i % 2) })));
    // Each mint either answers a reference or is refused (an older epoch after the newer won), never a 500.
    expect(mints.every((m) => m.status === 200 || m.text === refused)).toBe(true);
    expect(await liveTokens(t.siteId, mac)).toBe(1);
    expect(await db().secretRef.count({ where: { siteId: t.siteId, mac, supersededAt: null } })).toBe(1);

    const other = randomMac();
    const minted = await mint(r, agent.dir, { mac: other, bootLeaseEpoch: 1 });
    const redeems = await Promise.all(Array.from({ length: 20 }, () => redeem(r, agent.dir, minted.json.ref as string)));
    expect(redeems.filter((x) => x.status === 200)).toHaveLength(1);
    expect(redeems.filter((x) => x.text === refused)).toHaveLength(19);
  });
});
