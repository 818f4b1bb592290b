import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prepareJoinAttempt } from '../../agent/join';
import { generateNodeKeyAndCsr } from '../../agent/keys';
import { testDb } from '../../test/db';
import { createTestTenant, type TestTenant } from '../../test/fixtures';
import { agentJoin, createJoinHarness, createJoinServicePair, machineClaims, type JoinHarness } from '../../test/join-harness';
import { randomMac } from '../../test/discovery-harness';
import type { HardwareClaims } from '../../protocol/hardware-claims';
import { JOIN_REFUSED } from '../../protocol/join-wire';
import { CREATED_EVENT_LIMIT } from './request-store-sql';
import { updateSite } from '../sites/update';
import { createDiscoveryToken } from '../tokens/site-scoped';
import { rejectJoinRequest } from './decisions';

// protocol.md "Discovery joins": one discovery token (one lease) holds at most one live request, whatever
// claims its attempts send; a site's queue is capped; `node.join-request.created` is rate-limited.

let h: JoinHarness;
beforeAll(async () => {
  h = await createJoinHarness();
});
const db = testDb;

async function lease(t: TestTenant) {
  const mac = randomMac();
  const created = await createDiscoveryToken(db(), t.admin, { tenantId: t.tenantId, siteId: t.siteId, mac, ttlSeconds: 3600 });
  return { mac, token: created.token!, tokenId: created.id };
}

/** Claims that differ in everything the caller chooses (product UUID, serials, hostname, extra MACs) but keep the bound MAC. */
const variation = (mac: string, i: number): HardwareClaims =>
  machineClaims({
    macs: [mac, randomMac()],
    productUuid: randomUUID(),
    productSerial: `SN-${i}-${randomUUID().slice(0, 8)}`,
    boardSerial: `B-${i}`,
    hostname: `pxe-${i}`,
  });

const pendingRequests = (t: TestTenant) => db().joinRequest.findMany({ where: { siteId: t.siteId, state: 'pending' } });
const reasons = async (t: TestTenant) =>
  (await db().event.findMany({ where: { tenantId: t.tenantId, type: 'security.join.refused' }, orderBy: { id: 'asc' } })).map(
    (e) => (e.data as { reason: string }).reason,
  );

describe('one live request per discovery token', () => {
  it('50 claim variations on one token, sent at once to two JoinService instances, leave ONE pending request refreshed by them', async () => {
    const t = await createTestTenant(db());
    const m = await lease(t);
    const attempts = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        prepareJoinAttempt({
          token: m.token,
          trust: h.trust,
          claims: variation(m.mac, i),
          role: 'discovery',
          attestor: 'discovery',
          keys: generateNodeKeyAndCsr(),
        }),
      ),
    );
    const pair = createJoinServicePair(h, { maxBatch: 8 });
    try {
      const answers = await Promise.all(attempts.map((a, i) => pair.services[i % 2]!.join(JSON.parse(a.body))));
      // Every attempt is deferred (none admitted, none refused): each one waits in the same request.
      expect(answers.map((a) => a.status)).toEqual(answers.map(() => 200));
      const ids = new Set(
        answers.map((a) => JSON.parse(Buffer.from(JSON.parse(a.body.toString()).body, 'base64url').toString()).requestId as string),
      );
      expect(ids.size).toBe(1);
    } finally {
      await pair.close();
    }
    const pending = await pendingRequests(t);
    expect(pending).toHaveLength(1);
    expect(pending[0]!.mac).toBe(m.mac);
    expect(attempts.map((a) => a.keys.csrSha256)).toContain(pending[0]!.csrSha256);
    expect(await db().joinRequest.count({ where: { siteId: t.siteId } })).toBe(1);
    expect(await db().event.count({ where: { tenantId: t.tenantId, type: 'node.join-request.created' } })).toBe(1);
    expect(await db().node.count({ where: { siteId: t.siteId } })).toBe(0);
  });

  it('refreshes the request with a later attempt that claims a different machine: same id, its CSR hash and claims', async () => {
    const t = await createTestTenant(db());
    const m = await lease(t);
    const first = await agentJoin(h, m.token, variation(m.mac, 1), { role: 'discovery', attestor: 'discovery', expectedRole: 'ramdisk' });
    const claims = variation(m.mac, 2);
    const second = await agentJoin(h, m.token, claims, { role: 'discovery', attestor: 'discovery', expectedRole: 'ramdisk' });
    const id = (first.answer as unknown as { requestId: string }).requestId;
    expect((second.answer as unknown as { requestId: string }).requestId).toBe(id);
    const row = await db().joinRequest.findUniqueOrThrow({ where: { id } });
    expect(row).toMatchObject({
      state: 'pending',
      csrSha256: second.keys.csrSha256,
      claims: expect.objectContaining({ productUuid: claims.productUuid }),
    });
  });
});

describe("a site's queue cap", () => {
  it('refuses a new machine with discovery:queue-full (the uniform 403) once maxPendingRequests wait, still refreshes a waiting one, and takes new ones after a decision', async () => {
    const t = await createTestTenant(db());
    await updateSite(db(), t.admin, { tenantId: t.tenantId, siteId: t.siteId, discovery: { maxPendingRequests: 2 } });
    const [a, b, c] = await Promise.all([lease(t), lease(t), lease(t)]);
    const joinAs = (m: typeof a, claims = machineClaims({ macs: [m.mac] })) =>
      agentJoin(h, m.token, claims, { role: 'discovery', attestor: 'discovery', expectedRole: 'ramdisk' });
    const first = await joinAs(a);
    expect((await joinAs(b)).answer!.status).toBe('pending');
    const full = await joinAs(c);
    expect(full.status).toBe(403);
    expect(full.bytes.equals(JOIN_REFUSED.body)).toBe(true);
    expect(await reasons(t)).toEqual(['discovery:queue-full']);
    // A waiting lease is refreshed, not refused.
    expect((await joinAs(a)).answer!.status).toBe('pending');
    expect(await pendingRequests(t)).toHaveLength(2);
    await rejectJoinRequest(db(), t.operator, {
      tenantId: t.tenantId,
      poolId: t.poolId,
      requestId: (first.answer as unknown as { requestId: string }).requestId,
      reason: 'unknown machine',
    });
    expect((await joinAs(c)).answer!.status).toBe('pending');
  });

  it('holds under concurrency across two JoinService instances: 12 new machines at once, a cap of 5, exactly 5 wait', async () => {
    const t = await createTestTenant(db());
    await updateSite(db(), t.admin, { tenantId: t.tenantId, siteId: t.siteId, discovery: { maxPendingRequests: 5 } });
    const leases = await Promise.all(Array.from({ length: 12 }, () => lease(t)));
    const attempts = await Promise.all(
      leases.map((m) =>
        prepareJoinAttempt({
          token: m.token,
          trust: h.trust,
          claims: machineClaims({ macs: [m.mac] }),
          role: 'discovery',
          attestor: 'discovery',
        }),
      ),
    );
    const pair = createJoinServicePair(h, { maxBatch: 2 });
    try {
      const answers = await Promise.all(attempts.map((a, i) => pair.services[i % 2]!.join(JSON.parse(a.body))));
      expect(answers.filter((a) => a.status === 200)).toHaveLength(5);
      expect(answers.filter((a) => a.status === 403)).toHaveLength(7);
    } finally {
      await pair.close();
    }
    expect(await pendingRequests(t)).toHaveLength(5);
  });
});

describe('node.join-request.created', () => {
  it(
    `is published at most ${CREATED_EVENT_LIMIT.limit} times per site and minute; the next carries how many were suppressed`,
    { timeout: 120_000 },
    async () => {
      const t = await createTestTenant(db());
      const n = CREATED_EVENT_LIMIT.limit + 3;
      // Tokens are minted one after another: their transactions are set-up, not what is under test, and 63 at
      // once wait on the shared client's connections long enough to time out on a loaded machine.
      const leases: Awaited<ReturnType<typeof lease>>[] = [];
      for (let i = 0; i < n; i++) leases.push(await lease(t));
      const attempts = await Promise.all(
        leases.map((m) =>
          prepareJoinAttempt({
            token: m.token,
            trust: h.trust,
            claims: machineClaims({ macs: [m.mac] }),
            role: 'discovery',
            attestor: 'discovery',
          }),
        ),
      );
      const answers = await Promise.all(attempts.map((a) => h.service.join(JSON.parse(a.body))));
      expect(answers.every((a) => a.status === 200)).toBe(true);
      expect(await pendingRequests(t)).toHaveLength(n);
      expect(await db().event.count({ where: { tenantId: t.tenantId, type: 'node.join-request.created' } })).toBe(
        CREATED_EVENT_LIMIT.limit,
      );
      // The window restarts: the next event says how many were dropped before it.
      await db()
        .$executeRaw`UPDATE rate_limits SET window_start = window_start - interval '61 seconds' WHERE key = ${`${CREATED_EVENT_LIMIT.keyPrefix}:${t.tenantId}:${t.siteId}`}`;
      const late = await lease(t);
      expect(
        (
          await agentJoin(h, late.token, machineClaims({ macs: [late.mac] }), {
            role: 'discovery',
            attestor: 'discovery',
            expectedRole: 'ramdisk',
          })
        ).answer!.status,
      ).toBe('pending');
      const last = await db().event.findFirstOrThrow({
        where: { tenantId: t.tenantId, type: 'node.join-request.created' },
        orderBy: { id: 'desc' },
      });
      expect(last.data).toMatchObject({ siteId: t.siteId, attestor: 'discovery', suppressed: 3 });
    },
  );
});

afterAll(async () => {
  await h?.pool.end();
});
