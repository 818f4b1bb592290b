import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testDb } from '../../test/db';
import { createTestTenant } from '../../test/fixtures';
import { insertKnownNode, randomMac } from '../../test/discovery-harness';
import { createRenewHarness, type RenewHarness } from '../../test/renew-harness';
import { joinSiteAgent, mint, refusalReasons, secondSiteOf } from '../../test/site-agent-harness';
import { SITE_AGENT_REFUSED } from '../../protocol/site-agent-wire';

// Whose MACs a site agent's mint is checked against: the tenant's other sites only (another tenant's machines
// claim what they like and must neither block nor reveal anything), and exactly, when two sites of the tenant
// mint the same MAC at once.

let r: RenewHarness;
beforeAll(async () => {
  r = await createRenewHarness({ env: { BETTER_COMPUTE_SECRET: 'site-agent-mac-scope-secret-0123456789abcdefghij' } });
});
afterAll(async () => {
  await r?.close();
});
const db = testDb;
const refused = SITE_AGENT_REFUSED.body.toString();

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
