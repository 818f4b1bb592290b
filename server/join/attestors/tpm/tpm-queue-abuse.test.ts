import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TpmClient } from '../../../../agent/tpm/client';
import { runTpmJoin, tpmJoinBody, TpmJoinError, type PostJoin } from '../../../../agent/tpm/tpm-join';
import { prepareTpmJoin } from '../../../../agent/tpm/join-material';
import { parseTpmAddress } from '../../../../agent/tpm/transport';
import type { TpmJoinMaterial } from '../../../../agent/tpm/join-material';
import { testDb } from '../../../../test/db';
import { createTestTenant, type TestTenant } from '../../../../test/fixtures';
import { createJoinHarness, createJoinServicePair, type JoinHarness } from '../../../../test/join-harness';
import { startSwtpm, type Swtpm } from '../../../../test/swtpm';
import { createCaller } from '../../../api/root';
import type { JoinService } from '../../join-service';

// The tokenless tpm path against a flood: a software TPM passes every check of an EK without a vendor root, so
// what bounds an unauthenticated caller is the site's enrollment setting (off by default), the site's cap on
// pending requests, and the new-request rate limits per source address and per site, kept in PostgreSQL.

const claims = { hostname: 'flood' } as never;
// New requests: 3 per source address and 5 per site per window (an hour, so the test never crosses one).
const LIMITS = { perAddress: 3, perSite: 5, windowSeconds: 3600 };

let h: JoinHarness;
const started: Array<{ swtpm: Swtpm; tpm: TpmClient }> = [];

beforeAll(async () => {
  // One refusal event per reason and minute: the next one after the window carries the count it suppressed.
  h = await createJoinHarness({ limit: 1, requestLimits: LIMITS });
});
afterAll(async () => {
  for (const m of started) {
    await m.tpm.close();
    await m.swtpm.stop();
  }
  await h?.pool.end();
});

/** `n` machines, each a fresh software TPM (its own EK). */
async function machines(n: number): Promise<TpmClient[]> {
  return Promise.all(
    Array.from({ length: n }, async () => {
      const swtpm = await startSwtpm();
      const tpm = await TpmClient.open(parseTpmAddress(swtpm.address));
      started.push({ swtpm, tpm });
      return tpm;
    }),
  );
}

const trust = () => ({ signingKeyPin: h.trust.signingKeyPin, signingCertificateDer: h.trust.signingCertificateDer });
const postFrom =
  (address: string, service: JoinService = h.service): PostJoin =>
  async (body) =>
    service.joinBody(Buffer.from(body), address);

type Outcome = { status: 'pending'; requestId: string; material: TpmJoinMaterial } | { status: 'refused' };

/** Both rounds of a tpm join from `address`: pending (with its request) or refused (the uniform 403). */
async function enroll(tpm: TpmClient, t: TestTenant, address: string, options: { material?: TpmJoinMaterial; service?: JoinService } = {}) {
  try {
    const { answer, material } = await runTpmJoin(tpm, {
      post: postFrom(address, options.service),
      trust: trust(),
      claims,
      target: { siteId: t.siteId },
      ...(options.material ? { material: options.material } : {}),
    });
    expect(answer.status).toBe('pending');
    return { status: 'pending', requestId: (answer as { requestId: string }).requestId, material } as Outcome;
  } catch (error) {
    if (error instanceof TpmJoinError && error.status === 403) return { status: 'refused' } as Outcome;
    throw error;
  }
}

async function siteWith(label: string, settings: { enrollment?: boolean; maxPendingRequests?: number }) {
  const t = await createTestTenant(testDb(), { label });
  const caller = createCaller({ db: testDb(), principal: t.admin });
  await caller.sites.update({
    tenantId: t.tenantId,
    siteId: t.siteId,
    ...(settings.enrollment !== undefined ? { tpm: { enrollment: settings.enrollment } } : {}),
    ...(settings.maxPendingRequests ? { discovery: { maxPendingRequests: settings.maxPendingRequests } } : {}),
  });
  return t;
}

const pending = (t: TestTenant) => testDb().joinRequest.count({ where: { siteId: t.siteId, state: 'pending' } });
const refusalEvents = async (t: TestTenant) =>
  (await testDb().event.findMany({ where: { tenantId: t.tenantId, type: 'security.join.refused' }, orderBy: { id: 'asc' } })).map(
    (e) => e.data as { reason: string; suppressed: number; clientAddress?: string; attestor: string },
  );

describe('the tpm queue against a flood', () => {
  it('refuses an unlisted EK where the site never turned enrollment on (tpm:enrollment), leaving no request', async () => {
    const t = await createTestTenant(testDb(), { label: 'tpm-enrollment-default' });
    const [tpm] = await machines(1);
    expect(await enroll(tpm!, t, '198.51.100.1')).toEqual({ status: 'refused' });
    expect(await testDb().joinRequest.count({ where: { siteId: t.siteId } })).toBe(0);
    expect((await refusalEvents(t)).map((e) => e.reason)).toEqual(['tpm:enrollment']);
  });

  it('bounds new requests per source address and per site; a refresh is not new; the refusal event carries suppressed', async () => {
    const t = await siteWith('tpm-flood', { enrollment: true });
    const tpms = await machines(8);
    const [a1, a2, a3, a4, b1, b2, c1, c2] = tpms as [TpmClient, ...TpmClient[]];
    // One address: its first three new requests wait, the fourth is refused.
    const fromA = [];
    for (const tpm of [a1, a2, a3]) fromA.push(await enroll(tpm!, t, '203.0.113.10'));
    expect(fromA.map((o) => o.status)).toEqual(['pending', 'pending', 'pending']);
    expect(await enroll(a4!, t, '203.0.113.10')).toEqual({ status: 'refused' });
    // A waiting machine retrying from that address refreshes its own request: not a new one, never refused.
    const first = fromA[0] as Extract<Outcome, { status: 'pending' }>;
    expect(await enroll(a1, t, '203.0.113.10', { material: first.material })).toMatchObject({
      status: 'pending',
      requestId: first.requestId,
    });
    // Other addresses go on until the site's window (5) is full, whichever address asks.
    expect((await enroll(b1!, t, '203.0.113.11')).status).toBe('pending');
    expect((await enroll(b2!, t, '203.0.113.11')).status).toBe('pending');
    expect(await enroll(c1!, t, '203.0.113.12')).toEqual({ status: 'refused' });
    expect(await pending(t)).toBe(5);

    const events = await refusalEvents(t);
    expect(events).toEqual([
      expect.objectContaining({ attestor: 'tpm', reason: 'tpm:rate-limited', suppressed: 0, clientAddress: '203.0.113.10' }),
    ]);
    // The second refusal's event was suppressed (one per reason and minute); the next event after the window counts it.
    await testDb().$executeRawUnsafe(
      `UPDATE rate_limits SET window_start = window_start - interval '2 minutes' WHERE key LIKE $1`,
      `${h.keyPrefix}:${t.tenantId}:%`,
    );
    expect(await enroll(c2!, t, '203.0.113.12')).toEqual({ status: 'refused' });
    expect((await refusalEvents(t)).at(-1)).toMatchObject({ reason: 'tpm:rate-limited', suppressed: 1, clientAddress: '203.0.113.12' });
    expect(await pending(t)).toBe(5);
  });

  it("refuses a new request when the site's maxPendingRequests wait (tpm:queue-full), counting every attestor's requests", async () => {
    const t = await siteWith('tpm-cap', { enrollment: true, maxPendingRequests: 2 });
    // A discovery request of the same site already waits: one place is left.
    await testDb().joinRequest.create({
      data: {
        id: `jreq_disc${Date.now()}`,
        tenantId: t.tenantId,
        siteId: t.siteId,
        attestor: 'discovery',
        state: 'pending',
        machineKey: `mac:${t.siteId}:3c:ec:ef:00:00:01`,
        csrSha256: 'c'.repeat(64),
        expiresAt: new Date(Date.now() + 3_600_000),
      },
    });
    const [one, two] = await machines(2);
    const waiting = await enroll(one!, t, '192.0.2.21');
    expect(waiting.status).toBe('pending');
    expect(await enroll(two!, t, '192.0.2.22')).toEqual({ status: 'refused' });
    expect((await refusalEvents(t)).map((e) => e.reason)).toEqual(['tpm:queue-full']);
    // The waiting machine's retry refreshes its request even with the queue full.
    const again = await enroll(one!, t, '192.0.2.21', { material: (waiting as Extract<Outcome, { status: 'pending' }>).material });
    expect(again).toMatchObject({ status: 'pending' });
    expect(await pending(t)).toBe(2);
  });

  it('holds the cap under concurrency across two instances: 10 new EKs at once, a cap of 4, exactly 4 wait', async () => {
    const t = await siteWith('tpm-cap-race', { enrollment: true, maxPendingRequests: 4 });
    const tpms = await machines(10);
    const pair = createJoinServicePair(h, { maxBatch: 2, requestLimits: { perAddress: 100, perSite: 100, windowSeconds: 3600 } });
    try {
      const outcomes = await Promise.all(tpms.map((tpm, i) => enroll(tpm, t, `192.0.2.${100 + i}`, { service: pair.services[i % 2]! })));
      expect(outcomes.filter((o) => o.status === 'pending')).toHaveLength(4);
      expect(outcomes.filter((o) => o.status === 'refused')).toHaveLength(6);
    } finally {
      await pair.close();
    }
    expect(await pending(t)).toBe(4);
  });

  it('holds the per-address rate limit under concurrency across two instances: 8 new EKs from one address, exactly 3 wait', async () => {
    const t = await siteWith('tpm-rate-race', { enrollment: true });
    const tpms = await machines(8);
    const pair = createJoinServicePair(h, { maxBatch: 2, requestLimits: LIMITS });
    try {
      const outcomes = await Promise.all(tpms.map((tpm, i) => enroll(tpm, t, '192.0.2.250', { service: pair.services[i % 2]! })));
      expect(outcomes.filter((o) => o.status === 'pending')).toHaveLength(3);
    } finally {
      await pair.close();
    }
    expect(await pending(t)).toBe(3);
  });

  it('shows whether the EK is vendor-rooted on the queue row (ekCertified)', async () => {
    const t = await siteWith('tpm-ek-certified', { enrollment: true });
    const [tpm] = await machines(1);
    const waiting = (await enroll(tpm!, t, '192.0.2.31')) as Extract<Outcome, { status: 'pending' }>;
    const { items } = await createCaller({ db: testDb(), principal: t.viewer }).joinRequests.list({
      tenantId: t.tenantId,
      poolId: t.poolId,
    });
    expect(items.find((q) => q.id === waiting.requestId)).toMatchObject({
      attestor: 'tpm',
      ekCertified: false,
      clientAddress: '192.0.2.31',
    });
  });

  it('bounds round one (the credential challenge) per source address across two instances, an IPv6 /64 as one', async () => {
    const t = await createTestTenant(testDb(), { label: 'tpm-challenge-flood' });
    const [tpm] = await machines(1);
    const material = await prepareTpmJoin(tpm!);
    // Round one needs no token and no enrollment: the same attestation, sent again and again, is a new challenge each time.
    const body = Buffer.from(tpmJoinBody(material, { claims, target: { siteId: t.siteId } }));
    const pair = createJoinServicePair(h, { maxBatch: 2, refusalLimit: 1, requestLimits: { challengesPerAddress: 4 } });
    const stored = () => testDb().joinChallenge.count({ where: { attestor: 'tpm', csrSha256: material.csr.csrSha256 } });
    try {
      // Ten at once from addresses of one /64: four challenges, six uniform refusals.
      const answers = await Promise.all(
        Array.from({ length: 10 }, (_, i) => pair.services[i % 2]!.joinBody(body, `2001:db8:7:1::${(i + 1).toString(16)}`)),
      );
      expect(answers.filter((a) => a.status === 200)).toHaveLength(4);
      expect(answers.filter((a) => a.status === 403)).toHaveLength(6);
      expect(await stored()).toBe(4);
      // Another address has a window of its own.
      expect((await pair.services[0].joinBody(body, '198.51.100.77')).status).toBe(200);
      expect(await stored()).toBe(5);
    } finally {
      await pair.close();
    }
    // The refusals are events of the root tenant (no token), one per reason and minute: the rest are suppressed.
    const events = (
      await testDb().event.findMany({ where: { tenantId: h.rootTenantId, type: 'security.join.refused' }, orderBy: { id: 'asc' } })
    )
      .map((e) => e.data as { reason: string; suppressed: number; clientAddress?: string; attestor: string })
      .filter((e) => e.clientAddress?.startsWith('2001:db8:7:1::'));
    expect(events).toEqual([expect.objectContaining({ attestor: 'tpm', reason: 'tpm:rate-limited', suppressed: 0 })]);
  });
});
