import { beforeAll, describe, expect, it } from 'vitest';
import { testDb } from '../../test/db';
import { createTestTenant, type TestTenant } from '../../test/fixtures';
import { agentJoin, createJoinHarness, machineClaims, mintToken, type JoinHarness } from '../../test/join-harness';
import { createPool } from '../pools/pools';
import { revokeJoinToken } from '../tokens/join-tokens';
import { refusalLimitKey } from './refusals';

let h: JoinHarness;
beforeAll(async () => {
  h = await createJoinHarness();
});
const db = () => testDb();

/**
 * Runs `during` while another instance holds an uncommitted insert of a node with the trusted hardware key
 * `key`, and commits that insert 300 ms later: `during`'s joins wait on the row, then find it committed.
 */
async function whileAnotherInstanceInserts<T>(t: TestTenant, key: Buffer, nodeId: string, during: () => Promise<T>): Promise<T> {
  const other = await h.pool.connect();
  await other.query('BEGIN');
  await other.query(
    `INSERT INTO nodes (id, tenant_id, site_id, pool_id, role, state, trust, hardware_key, hardware_key_trusted, attestor)
     VALUES ($1, $2, $3, $4, 'node', 'adopted', 'tenant-owned', $5, true, 'join-token')`,
    [nodeId, t.tenantId, t.site.id, t.pool.id, key],
  );
  const pending = during();
  await new Promise((r) => setTimeout(r, 300));
  await other.query('COMMIT');
  other.release();
  return pending;
}

describe('reclaims', () => {
  it('lets a known machine with a new key reclaim its node through an allowReclaim token', async () => {
    const t = await createTestTenant(db());
    const claims = machineClaims();
    const first = await agentJoin(h, (await mintToken(t)).token!, claims);
    const nodeId = first.answer!.nodeId;
    const oldSerial = (await db().nodeCert.findFirstOrThrow({ where: { nodeId } })).serial;

    // Same machine, reinstalled: a new key, claims in another order and case.
    const reinstalled = {
      ...claims,
      productUuid: claims.productUuid!.toUpperCase(),
      macs: claims.macs!.map((m) => m.toUpperCase().replace(/:/g, '-')),
    };
    const second = await agentJoin(h, (await mintToken(t, { allowReclaim: true })).token!, reinstalled);
    expect(second.status).toBe(200);
    expect(second.answer!.nodeId).toBe(nodeId);
    const node = await db().node.findUniqueOrThrow({ where: { id: nodeId } });
    expect(node.identityGeneration).toBe(2);
    const certs = await db().nodeCert.findMany({ where: { nodeId }, orderBy: { createdAt: 'asc' } });
    expect(certs).toHaveLength(2);
    expect(certs.find((c) => c.serial === oldSerial)).toMatchObject({ revocationReason: 'reclaimed', identityGeneration: 1 });
    expect(certs.find((c) => c.serial !== oldSerial)).toMatchObject({ revokedAt: null, identityGeneration: 2 });
    const revokedEvents = await db().event.findMany({ where: { tenantId: t.tenantId, type: 'security.certificate-revoked' } });
    expect(revokedEvents.map((e) => e.data)).toEqual([{ nodeId, serial: oldSerial, reason: 'reclaimed' }]);
    const audit = await db().auditEntry.findMany({
      where: { tenantId: t.tenantId, resource: `compute-node/${nodeId}` },
      orderBy: { id: 'asc' },
    });
    expect(audit.map((a) => a.action)).toEqual(['node.joined', 'node.reclaimed']);
    expect((audit[1]!.data as { reclaim: boolean }).reclaim).toBe(true);
    expect(await db().node.count({ where: { tenantId: t.tenantId } })).toBe(1);
  });

  it('refuses a reclaim into another pool even with allowReclaim', async () => {
    const t = await createTestTenant(db());
    const claims = machineClaims();
    await agentJoin(h, (await mintToken(t)).token!, claims);
    const otherPool = await createPool(db(), t.admin, { tenantId: t.tenantId, siteId: t.site.id, name: 'pool-b', agent: 'bcd' });
    const result = await agentJoin(h, (await mintToken(t, { poolId: otherPool.id, allowReclaim: true })).token!, claims);
    expect(result.status).toBe(403);
    const events = await db().event.findMany({ where: { tenantId: t.tenantId, type: 'security.join.refused' } });
    expect(events.map((e) => (e.data as { reason: string }).reason)).toEqual(['join:reclaim']);
  });

  it('never reclaims with fewer than two identifiers: the machine joins as a new node', async () => {
    const t = await createTestTenant(db());
    const claims = {
      productSerial: 'To Be Filled By O.E.M.',
      productUuid: '03000200-0400-0500-0006-000700080009',
      macs: ['3c:ec:ef:aa:bb:01'],
    };
    const a = await agentJoin(h, (await mintToken(t, { expect: { mac: '3c:ec:ef:aa:bb:01' } })).token!, claims);
    const b = await agentJoin(h, (await mintToken(t, { expect: { mac: '3C:EC:EF:AA:BB:01' } })).token!, claims);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(a.answer!.nodeId).not.toBe(b.answer!.nodeId);
    const nodes = await db().node.findMany({ where: { tenantId: t.tenantId } });
    expect(nodes.every((n) => n.hardwareKeyTrusted === false)).toBe(true);
  });
});

describe('expect and placeholders', () => {
  it('matches expect after normalization and refuses a mismatch without consuming', async () => {
    const t = await createTestTenant(db());
    const claims = machineClaims({ boardSerial: 'board-77', gpuUuids: ['GPU-7D5A0000-1111-2222-3333-444455556666'] });
    for (const expectation of [
      { serial: 'BOARD-77' },
      { productUuid: claims.productUuid!.replace(/-/g, '').toUpperCase() },
      { mac: claims.macs![0]!.toUpperCase() },
      { gpuUuid: 'gpu-7d5a0000-1111-2222-3333-444455556666'.replace('gpu', 'GPU') },
    ]) {
      const minted = await mintToken(t, { expect: expectation, allowReclaim: true });
      const result = await agentJoin(h, minted.token!, claims);
      expect(result.status, JSON.stringify(expectation)).toBe(200);
    }
    const wrong = await mintToken(t, { expect: { serial: 'someone-else' } });
    expect((await agentJoin(h, wrong.token!, claims)).status).toBe(403);
    expect((await db().joinToken.findUniqueOrThrow({ where: { id: wrong.id } })).usesLeft).toBe(1);
  });
});

describe('concurrency', () => {
  it('admits exactly 10 of 50 concurrent joins on a maxUses 10 token and refuses 40', async () => {
    const t = await createTestTenant(db());
    const { token, id } = await mintToken(t, { maxUses: 10 });
    const results = await Promise.all(Array.from({ length: 50 }, () => agentJoin(h, token!, machineClaims())));
    expect(results.filter((r) => r.status === 200)).toHaveLength(10);
    expect(results.filter((r) => r.status === 403)).toHaveLength(40);
    expect((await db().joinToken.findUniqueOrThrow({ where: { id } })).usesLeft).toBe(0);
    expect(await db().node.count({ where: { tenantId: t.tenantId } })).toBe(10);
  });

  it('ends two racing joins of one machine with one CONFLICT', async () => {
    const t = await createTestTenant(db());
    const claims = machineClaims();
    const { token } = await mintToken(t, { maxUses: 2 });
    const { prepareJoinAttempt } = await import('../../agent/join');
    // Both requests are on the wire before either is admitted.
    const attempts = await Promise.all([1, 2].map(() => prepareJoinAttempt({ token: token!, trust: h.trust, claims })));
    const answers = await Promise.all(attempts.map((a) => h.service.join(JSON.parse(a.body))));
    expect(answers.map((r) => r.status).sort()).toEqual([200, 409]);
    expect(JSON.parse(answers.find((r) => r.status === 409)!.body.toString())).toEqual({
      code: 'CONFLICT',
      message: 'This machine joined concurrently; retry',
    });
    expect(await db().node.count({ where: { tenantId: t.tenantId } })).toBe(1);
  });

  it('answers CONFLICT when another instance inserts the same machine while this join is in flight', async () => {
    const t = await createTestTenant(db());
    const claims = machineClaims();
    const { token } = await mintToken(t);
    const { deriveHardwareKey } = await import('./hardware/hardware-key');
    const key = deriveHardwareKey(claims).key!;
    const result = await whileAnotherInstanceInserts(t, key, `node_other${Date.now()}`, () => agentJoin(h, token!, claims));
    expect(result.status).toBe(409);
  });

  it('admits no one with a token once its revocation committed', async () => {
    const t = await createTestTenant(db());
    const minted = await mintToken(t, { maxUses: 100 });
    expect((await agentJoin(h, minted.token!, machineClaims())).status).toBe(200);
    await revokeJoinToken(db(), t.admin, { tenantId: t.tenantId, poolId: t.pool.id, tokenId: minted.id });
    const after = await Promise.all(Array.from({ length: 5 }, () => agentJoin(h, minted.token!, machineClaims())));
    expect(after.map((r) => r.status)).toEqual([403, 403, 403, 403, 403]);
    expect(await db().node.count({ where: { tenantId: t.tenantId } })).toBe(1);
  });
});

describe('refusal events are rate-limited in the database', () => {
  it('writes at most the limit per reason and window, counting what it dropped', async () => {
    const limited = await createJoinHarness({ limit: 5 });
    const t = await createTestTenant(db());
    const minted = await mintToken(t);
    await db().joinToken.update({ where: { id: minted.id }, data: { revokedAt: new Date() } });
    for (let i = 0; i < 8; i++) expect((await agentJoin(limited, minted.token!, machineClaims())).status).toBe(403);
    const events = await db().event.findMany({ where: { tenantId: t.tenantId, type: 'security.join.refused' }, orderBy: { id: 'asc' } });
    expect(events).toHaveLength(5);
    expect(events.map((e) => (e.data as { suppressed: number }).suppressed)).toEqual([0, 0, 0, 0, 0]);
    // The next window: the first event reports the three that were dropped.
    await db().rateLimit.update({
      where: { key: refusalLimitKey(limited.keyPrefix, t.tenantId, 'join-token', 'join-token:revoked') },
      data: { windowStart: new Date(Date.now() - 61_000) },
    });
    await agentJoin(limited, minted.token!, machineClaims());
    const next = await db().event.findMany({ where: { tenantId: t.tenantId, type: 'security.join.refused' }, orderBy: { id: 'asc' } });
    expect(next).toHaveLength(6);
    expect((next[5]!.data as { suppressed: number }).suppressed).toBe(3);
  });

  it('keeps one limit per tenant: refusals in one tenant neither suppress nor are counted in another', async () => {
    const limited = await createJoinHarness({ limit: 2 });
    const [a, b] = [await createTestTenant(db()), await createTestTenant(db())];
    const revoked = async (t: typeof a) => {
      const minted = await mintToken(t);
      await db().joinToken.update({ where: { id: minted.id }, data: { revokedAt: new Date() } });
      return minted.token!;
    };
    const tokenA = await revoked(a);
    for (let i = 0; i < 5; i++) expect((await agentJoin(limited, tokenA, machineClaims())).status).toBe(403);
    expect(await db().event.count({ where: { tenantId: a.tenantId, type: 'security.join.refused' } })).toBe(2);
    expect((await agentJoin(limited, await revoked(b), machineClaims())).status).toBe(403);
    const ofB = await db().event.findMany({ where: { tenantId: b.tenantId, type: 'security.join.refused' } });
    expect(ofB.map((e) => e.data)).toEqual([expect.objectContaining({ reason: 'join-token:revoked', suppressed: 0 })]);
  });
});

describe('review hardening', () => {
  it('answers CONFLICT, not a reclaim, to a join whose machine another instance inserted during its batch', async () => {
    const t = await createTestTenant(db());
    const raced = machineClaims();
    const other = machineClaims();
    const { token } = await mintToken(t, { maxUses: 5, allowReclaim: true });
    const { deriveHardwareKey } = await import('./hardware/hardware-key');
    const { prepareJoinAttempt } = await import('../../agent/join');
    const attempts = await Promise.all([raced, other].map((claims) => prepareJoinAttempt({ token: token!, trust: h.trust, claims })));
    // Both in one batch, which blocks on the other instance's uncommitted row and then fails on it.
    const [racedAnswer, otherAnswer] = await whileAnotherInstanceInserts(t, deriveHardwareKey(raced).key!, `node_race${Date.now()}`, () =>
      Promise.all(attempts.map((a) => h.service.join(JSON.parse(a.body)))),
    );

    expect(racedAnswer!.status).toBe(409);
    expect(otherAnswer!.status).toBe(200);
    expect(await db().nodeCert.count({ where: { node: { tenantId: t.tenantId } } })).toBe(1);
  });

  it('refuses unknown attestors and malformed roles without echoing them into events', async () => {
    const t = await createTestTenant(db());
    const { token } = await mintToken(t);
    const weird = 'x'.repeat(5000);
    for (const mutate of [
      (b: Record<string, unknown>) => void (b.attestor = weird),
      (b: Record<string, unknown>) => void (b.role = 'node\u0000'),
    ]) {
      expect((await agentJoin(h, token!, machineClaims(), { mutate })).status).toBe(403);
    }
    const events = await db().event.findMany({
      where: { tenantId: h.rootTenantId, type: 'security.join.refused' },
      orderBy: { id: 'desc' },
      take: 50,
    });
    expect(events.some((e) => JSON.stringify(e.data).includes(weird))).toBe(false);
    expect(await db().rateLimit.count({ where: { key: { contains: weird } } })).toBe(0);
  });

  it('keeps a machine admitted only through expect untrusted, so it never reclaims', async () => {
    const t = await createTestTenant(db());
    // Two permanent MACs: two identifiers, but neither a product UUID nor a serial.
    const claims = { macs: ['3c:ec:ef:01:02:03', '3c:ec:ef:01:02:04'] };
    const first = await agentJoin(h, (await mintToken(t, { expect: { mac: '3c:ec:ef:01:02:03' } })).token!, claims);
    expect(first.status).toBe(200);
    expect(await db().node.findUniqueOrThrow({ where: { id: first.answer!.nodeId } })).toMatchObject({ hardwareKeyTrusted: false });
    const event = await db().event.findFirstOrThrow({ where: { tenantId: t.tenantId, type: 'node.joined' } });
    expect((event.data as { hardwareKeyTrusted: boolean }).hardwareKeyTrusted).toBe(false);
    const second = await agentJoin(h, (await mintToken(t, { expect: { mac: '3c:ec:ef:01:02:04' } })).token!, claims);
    expect(second.status).toBe(200);
    expect(second.answer!.nodeId).not.toBe(first.answer!.nodeId);
  });

  it('refuses a replayed join request as a bad seal, consuming nothing', async () => {
    const t = await createTestTenant(db());
    const minted = await mintToken(t, { maxUses: 3, allowReclaim: true });
    const { prepareJoinAttempt } = await import('../../agent/join');
    const attempt = await prepareJoinAttempt({ token: minted.token!, trust: h.trust, claims: machineClaims() });
    expect((await h.service.join(JSON.parse(attempt.body))).status).toBe(200);
    const replay = await h.service.join(JSON.parse(attempt.body));
    expect(replay.status).toBe(403);
    expect((await db().joinToken.findUniqueOrThrow({ where: { id: minted.id } })).usesLeft).toBe(2);
    expect(await db().nodeCert.count({ where: { node: { tenantId: t.tenantId } } })).toBe(1);
    expect(await db().nodeCert.count({ where: { node: { tenantId: t.tenantId }, revokedAt: { not: null } } })).toBe(0);
  });

  it('refuses claims that are not well-formed text instead of failing the batch', async () => {
    const t = await createTestTenant(db());
    const result = await agentJoin(h, (await mintToken(t)).token!, machineClaims({ hostname: 'x\ud800' }));
    expect(result.status).toBe(403);
  });
});
