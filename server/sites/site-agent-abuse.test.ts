import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testDb, testDatabaseUrl } from '../../test/db';
import { createTestTenant } from '../../test/fixtures';
import { insertKnownNode, randomMac } from '../../test/discovery-harness';
import { mintToken } from '../../test/join-harness';
import { createRenewHarness, joinThroughGateway, type RenewHarness } from '../../test/renew-harness';
import { joinSiteAgent, mint, redeem, refusalReasons, secondSiteOf, siteCall } from '../../test/site-agent-harness';
import { SITE_AGENT_REFUSED, SITE_DISCOVERY_TOKEN_PATH, SITE_REDEEM_PATH } from '../../protocol/site-agent-wire';
import { createPgPool } from '../db/pg';
import { SharedRateLimit } from '../http/shared-rate-limit';
import { deleteNode, revokeNodeIdentity, setCordon } from '../nodes/lifecycle';
import { updateSite } from './update';

// What a site agent cannot do: mint past its rate (shared through PostgreSQL) or its site's cap, for another
// site's machine, with a node's certificate or none, or once its certificate is revoked; and whatever it sends,
// the answer is the uniform refusal (never a 500), with the reason in a security.site-agent.refused event.

// Above the fuzz test's calls of one agent, so each of its bodies meets the parser, not the rate.
const RATE = 40;
let r: RenewHarness;
beforeAll(async () => {
  r = await createRenewHarness({
    env: { BETTER_COMPUTE_SECRET: 'site-agent-abuse-secret-0123456789abcdefghijklmn' },
    siteAgentLimit: { limit: RATE, windowSeconds: 60 },
  });
});
afterAll(async () => {
  await r?.close();
});
const db = testDb;
const refused = SITE_AGENT_REFUSED.body.toString();

describe('site agent limits', () => {
  it('flood: past the per-agent rate every call is refused, and the count lives in PostgreSQL for every instance', async () => {
    const t = await createTestTenant(db());
    const agent = await joinSiteAgent(r, t);
    const answers = [];
    for (let i = 0; i < RATE + 3; i++) answers.push(await mint(r, agent.dir, { mac: randomMac(), bootLeaseEpoch: 1 }));
    expect(answers.slice(0, RATE).map((a) => a.status)).toEqual(Array(RATE).fill(200));
    expect(answers.slice(RATE).map((a) => a.text)).toEqual([refused, refused, refused]);
    expect((await refusalReasons(agent.nodeId)).every((reason) => reason === 'rate-limited')).toBe(true);
    // Another API instance (its own pool, nothing remembered in its memory) refuses the same agent at once.
    const pool = createPgPool(testDatabaseUrl(), 1);
    try {
      const other = new SharedRateLimit(pool, { keyPrefix: `${r.h.keyPrefix}-site-agent`, limit: RATE, windowSeconds: 60 });
      expect((await other.hit(agent.nodeId)).allowed).toBe(false);
    } finally {
      await pool.end();
    }
    // A second agent of the same site has a rate of its own.
    const second = await joinSiteAgent(r, t);
    expect((await mint(r, second.dir, { mac: randomMac(), bootLeaseEpoch: 1 })).status).toBe(200);
  });

  it("cap: the site's cap of live discovery tokens refuses the next mint", async () => {
    const t = await createTestTenant(db());
    await updateSite(db(), t.admin, { tenantId: t.tenantId, siteId: t.siteId, siteAgentTokenCap: 3 });
    const agent = await joinSiteAgent(r, t);
    for (let i = 0; i < 3; i++) expect((await mint(r, agent.dir, { mac: randomMac(), bootLeaseEpoch: 1 })).status).toBe(200);
    expect((await mint(r, agent.dir, { mac: randomMac(), bootLeaseEpoch: 1 })).text).toBe(refused);
    expect(await refusalReasons(agent.nodeId)).toEqual(['cap']);
    expect(await db().joinToken.count({ where: { siteId: t.siteId, role: 'discovery' } })).toBe(3);
  });

  it("another site's machine or lease (of the tenant), another agent's reference: refused", async () => {
    // Another site of the same tenant: the MAC check is the tenant's (below: never another tenant's).
    const t = await createTestTenant(db());
    const other = await secondSiteOf(t);
    const agent = await joinSiteAgent(r, t);
    const foreign = await joinSiteAgent(r, other);
    const known = randomMac();
    await insertKnownNode(other, { macs: [known] });
    expect((await mint(r, agent.dir, { mac: known, bootLeaseEpoch: 1 })).text).toBe(refused);
    const leased = randomMac();
    const theirs = await mint(r, foreign.dir, { mac: leased, bootLeaseEpoch: 1 });
    expect(theirs.status).toBe(200);
    expect((await mint(r, agent.dir, { mac: leased, bootLeaseEpoch: 2 })).text).toBe(refused);
    // Naming a site in the body is not a field of the call: the certificate's site is the only one.
    expect((await mint(r, agent.dir, { mac: randomMac(), bootLeaseEpoch: 1, siteId: other.siteId })).text).toBe(refused);
    expect((await redeem(r, agent.dir, theirs.json.ref as string)).text).toBe(refused);
    expect(await refusalReasons(agent.nodeId)).toEqual(['mac-other-site', 'mac-other-site', 'malformed', 'ref-unknown-or-redeemed']);
    expect((await redeem(r, foreign.dir, theirs.json.ref as string)).status).toBe(200);
  });

  it("a node's certificate, or none, is refused at both calls", async () => {
    const t = await createTestTenant(db());
    const node = await joinThroughGateway(r, (await mintToken(t)).token!);
    const agent = await joinSiteAgent(r, t);
    const minted = await mint(r, agent.dir, { mac: randomMac(), bootLeaseEpoch: 1 });
    expect((await mint(r, node.dir, { mac: randomMac(), bootLeaseEpoch: 1 })).text).toBe(refused);
    expect((await redeem(r, node.dir, minted.json.ref as string)).text).toBe(refused);
    expect((await mint(r, null, { mac: randomMac(), bootLeaseEpoch: 1 })).text).toBe(refused);
    expect(await refusalReasons(node.answer.nodeId)).toEqual(['role', 'role']);
  });

  it('a revoked site certificate is refused at once, and its unredeemed reference with it', async () => {
    const t = await createTestTenant(db());
    const agent = await joinSiteAgent(r, t);
    const minted = await mint(r, agent.dir, { mac: randomMac(), bootLeaseEpoch: 1 });
    expect(minted.status).toBe(200);
    await revokeNodeIdentity(db(), t.admin, { tenantId: t.tenantId, nodeId: agent.nodeId });
    expect((await mint(r, agent.dir, { mac: randomMac(), bootLeaseEpoch: 1 })).text).toBe(refused);
    expect((await redeem(r, agent.dir, minted.json.ref as string)).text).toBe(refused);
    expect(await refusalReasons(agent.nodeId)).toEqual(['revoked', 'revoked']);
    // A deleted (retired) site agent node likewise.
    const retired = await joinSiteAgent(r, t);
    expect((await mint(r, retired.dir, { mac: randomMac(), bootLeaseEpoch: 1 })).status).toBe(200);
    await setCordon(db(), t.admin, { tenantId: t.tenantId, nodeId: retired.nodeId }, true);
    await deleteNode(db(), t.admin, { tenantId: t.tenantId, nodeId: retired.nodeId });
    expect((await mint(r, retired.dir, { mac: randomMac(), bootLeaseEpoch: 1 })).text).toBe(refused);
  });

  it('fuzz: malformed bodies are the uniform refusal, never a 500', async () => {
    const t = await createTestTenant(db());
    const agent = await joinSiteAgent(r, t);
    const bodies: (string | object)[] = [
      '',
      'null',
      '[]',
      '{',
      '"mac"',
      {},
      { mac: randomMac() },
      { mac: randomMac(), bootLeaseEpoch: -1 },
      { mac: randomMac(), bootLeaseEpoch: 1.5 },
      { mac: randomMac(), bootLeaseEpoch: '1' },
      { mac: randomMac(), bootLeaseEpoch: 2 ** 60 },
      { mac: 'ff:ff:ff:ff:ff:ff', bootLeaseEpoch: 1 },
      { mac: '02:00:00:00:00:01', bootLeaseEpoch: 1 },
      { mac: 'not-a-mac', bootLeaseEpoch: 1 },
      { mac: randomMac(), bootLeaseEpoch: 1, ip: 'x'.repeat(100) },
      { mac: randomMac(), bootLeaseEpoch: 1, ip: 7 },
      { mac: ['3c:ec:ef:00:00:01'], bootLeaseEpoch: 1 },
      { mac: randomMac(), bootLeaseEpoch: 1, extra: true },
      JSON.stringify({ mac: randomMac(), bootLeaseEpoch: 1, pad: 'x'.repeat(8000) }),
      // Past the gateway's own body cap: refused there with the same bytes.
      JSON.stringify({ mac: randomMac(), bootLeaseEpoch: 1, pad: 'x'.repeat(70 * 1024) }),
      '\u0000\u0001\u0002',
    ];
    for (const body of bodies)
      expect((await siteCall(r, agent.dir, SITE_DISCOVERY_TOKEN_PATH, body)).text, JSON.stringify(body)).toBe(refused);
    const refs = ['', 'sref_', 'sref_' + 'a'.repeat(31), 'sref_' + 'a'.repeat(32), 'jt_x', 'sref_../../' + 'a'.repeat(24)];
    for (const ref of refs) expect((await siteCall(r, agent.dir, SITE_REDEEM_PATH, { ref })).text).toBe(refused);
    expect((await siteCall(r, agent.dir, SITE_REDEEM_PATH, '{"ref":1}')).text).toBe(refused);
    const reasons = await refusalReasons(agent.nodeId);
    // The two oversized bodies are refused before the certificate is read (at the API, an event naming no node).
    expect(reasons.length).toBe(bodies.length - 2 + refs.length + 1);
    expect(reasons.filter((x) => !['malformed', 'mac', 'oversized', 'ref-unknown-or-redeemed'].includes(x))).toEqual([]);
  });
});

// Whose MACs a mint is checked against: the tenant's other sites only (another tenant's machines claim what they
// like and must neither block nor reveal anything), and exactly, when two sites of the tenant mint one MAC at once.
describe('the MAC check of a mint', () => {
  it("another tenant's node claiming the MAC, or its site agent's live lease of it, does not block the mint", async () => {
    const [t, other] = [await createTestTenant(db()), await createTestTenant(db())];
    const agent = await joinSiteAgent(r, t);
    const foreign = await joinSiteAgent(r, other);
    const claimed = randomMac();
    await insertKnownNode(other, { macs: [claimed] });
    expect((await mint(r, agent.dir, { mac: claimed, ip: '10.0.0.1', bootLeaseEpoch: 1 })).status).toBe(200);
    const leased = randomMac();
    expect((await mint(r, foreign.dir, { mac: leased, ip: '10.0.0.2', bootLeaseEpoch: 1 })).status).toBe(200);
    expect((await mint(r, agent.dir, { mac: leased, ip: '10.0.0.3', bootLeaseEpoch: 1 })).status).toBe(200);
    expect(await refusalReasons(agent.nodeId)).toEqual([]);
    // The other tenant's agent is not blocked by ours either.
    expect((await mint(r, foreign.dir, { mac: claimed, ip: '10.0.0.4', bootLeaseEpoch: 1 })).status).toBe(200);
  });

  it('a node of another site of the same tenant still blocks it', async () => {
    const t = await createTestTenant(db());
    const siteB = await secondSiteOf(t);
    const agent = await joinSiteAgent(r, t);
    const mac = randomMac();
    await insertKnownNode(siteB, { macs: [mac] });
    expect((await mint(r, agent.dir, { mac, bootLeaseEpoch: 1 })).text).toBe(refused);
    expect(await refusalReasons(agent.nodeId)).toEqual(['mac-other-site']);
  });

  it('race: two sites of one tenant minting one MAC at once: exactly one gets a token', async () => {
    const t = await createTestTenant(db());
    const siteB = await secondSiteOf(t);
    const agents = [await joinSiteAgent(r, t), await joinSiteAgent(r, siteB)];
    for (let round = 0; round < 8; round++) {
      const mac = randomMac();
      const answers = await Promise.all(agents.map((a) => mint(r, a.dir, { mac, ip: '10.0.0.9', bootLeaseEpoch: 1 })));
      expect(answers.map((a) => a.status).sort()).toEqual([200, 403]);
      const live = await db().secretRef.count({ where: { mac, supersededAt: null, siteId: { in: [t.siteId, siteB.siteId] } } });
      expect(live).toBe(1);
    }
  });
});
