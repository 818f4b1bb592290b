import { beforeAll, describe, expect, it } from 'vitest';
import { prepareJoinAttempt } from '../../agent/join';
import { testDb } from '../../test/db';
import { createTestTenant, type TestTenant } from '../../test/fixtures';
import { createJoinHarness, createJoinServicePair, machineClaims, type JoinHarness } from '../../test/join-harness';
import { randomMac } from '../../test/discovery-harness';
import { createDiscoveryToken } from '../tokens/site-scoped';
import type { JoinService } from './join-service';

// The admission rule every deferring attestor shares for a NEW join request (request-admission.ts), on the
// discovery path: new requests per source address and per site are bounded in PostgreSQL windows that every
// instance shares; a lease's retry refreshes its request and is never refused by them. (The tpm path:
// attestors/tpm/tpm-queue-abuse.test.ts; the cap's own discovery tests: ../requests/request-per-lease.test.ts.)

const LIMITS = { perAddress: 3, perSite: 5, windowSeconds: 3600 };

let h: JoinHarness;
beforeAll(async () => {
  h = await createJoinHarness({ requestLimits: LIMITS });
});
const db = testDb;

async function lease(t: TestTenant) {
  const mac = randomMac();
  const created = await createDiscoveryToken(db(), t.admin, { tenantId: t.tenantId, siteId: t.siteId, mac, ttlSeconds: 3600 });
  const attempt = await prepareJoinAttempt({
    token: created.token!,
    trust: h.trust,
    claims: machineClaims({ macs: [mac] }),
    role: 'discovery',
    attestor: 'discovery',
  });
  return JSON.parse(attempt.body) as unknown;
}

/** A discovery join from `address`: `pending` with its request id, or `refused`. */
async function joinFrom(body: unknown, address: string, service: JoinService = h.service) {
  const answer = await service.join(body, address);
  if (answer.status === 403) return 'refused';
  expect(answer.status).toBe(200);
  const envelope = JSON.parse(answer.body.toString()) as { body: string };
  return (JSON.parse(Buffer.from(envelope.body, 'base64url').toString()) as { requestId: string }).requestId;
}

const pending = (t: TestTenant) => db().joinRequest.count({ where: { siteId: t.siteId, state: 'pending' } });
const reasons = async (t: TestTenant) =>
  (await db().event.findMany({ where: { tenantId: t.tenantId, type: 'security.join.refused' }, orderBy: { id: 'asc' } })).map(
    (e) => e.data as { reason: string; suppressed: number; clientAddress?: string },
  );

describe('new discovery requests are rate-limited per source address and per site', () => {
  it('refuses past 3 per address and 5 per site (discovery:rate-limited), never a retry of a waiting lease', async () => {
    const t = await createTestTenant(db());
    const bodies = await Promise.all(Array.from({ length: 8 }, () => lease(t)));
    const first = await joinFrom(bodies[0], '203.0.113.40');
    expect(first).toMatch(/^jreq_/);
    expect(await joinFrom(bodies[1], '203.0.113.40')).toMatch(/^jreq_/);
    expect(await joinFrom(bodies[2], '203.0.113.40')).toMatch(/^jreq_/);
    expect(await joinFrom(bodies[3], '203.0.113.40')).toBe('refused');
    // The first lease's retry refreshes its request.
    expect(await joinFrom(bodies[0], '203.0.113.40')).toBe(first);
    expect(await joinFrom(bodies[4], '203.0.113.41')).toMatch(/^jreq_/);
    expect(await joinFrom(bodies[5], '203.0.113.41')).toMatch(/^jreq_/);
    // The site's window (5) is full, whatever the address.
    expect(await joinFrom(bodies[6], '203.0.113.42')).toBe('refused');
    expect(await pending(t)).toBe(5);
    const refused = await reasons(t);
    expect(refused.map((e) => [e.reason, e.clientAddress])).toEqual([
      ['discovery:rate-limited', '203.0.113.40'],
      ['discovery:rate-limited', '203.0.113.42'],
    ]);
    expect(refused.every((e) => typeof e.suppressed === 'number')).toBe(true);
  });

  it('shares the windows between instances: 9 new machines from one address at once across two, exactly 3 wait', async () => {
    const t = await createTestTenant(db());
    const bodies = await Promise.all(Array.from({ length: 9 }, () => lease(t)));
    const pair = createJoinServicePair(h, { maxBatch: 2, requestLimits: LIMITS });
    try {
      const answers = await Promise.all(bodies.map((body, i) => joinFrom(body, '203.0.113.50', pair.services[i % 2])));
      expect(answers.filter((a) => a !== 'refused')).toHaveLength(3);
    } finally {
      await pair.close();
    }
    expect(await pending(t)).toBe(3);
  });
});
