import { beforeAll, describe, expect, it } from 'vitest';
import { testDb } from '../../test/db';
import { createTestTenant, failure, type TestTenant } from '../../test/fixtures';
import { watchSecretLeaks } from '../../test/secret-watch';
import type { Db, Tx } from '../db/client';
import { createCaller } from '../api/root';
import { createJoinToken, listJoinTokens, revokeJoinToken } from './join-tokens';
import { issueJoinToken } from './issue';
import type { JoinTokenPage } from '../../protocol/api/token-schemas';

const db = testDb();
const { minted, answers } = watchSecretLeaks(db);
let t: TestTenant;
let keys = 0;

async function mint(poolId = t.poolId, input: Record<string, unknown> = {}) {
  const created = await createJoinToken(db, t.admin, {
    tenantId: t.tenantId,
    poolId,
    ttlSeconds: 3600,
    idempotencyKey: `k-${++keys}`,
    maxUses: 1,
    allowReclaim: false,
    ...input,
  });
  minted.push(created.token!);
  return created;
}
async function list(poolId: string, input: Record<string, unknown> = {}, principal = t.admin): Promise<JoinTokenPage> {
  const page = await createCaller({ db, principal }).joinTokens.list({ tenantId: t.tenantId, poolId, ...input } as never);
  answers.push(JSON.stringify(page));
  return page;
}
const revoke = (poolId: string, tokenId: string, principal = t.admin) =>
  createCaller({ db, principal }).joinTokens.revoke({ tenantId: t.tenantId, poolId, tokenId });
/** A node token issued as a module issues one, in `tx`: the tokens of one transaction share created_at. */
const issueNodeToken = (tx: Tx, poolId: string) =>
  issueJoinToken(tx, { tenantId: t.tenantId, poolId, siteId: t.siteId, role: 'node', ttlSeconds: 600, maxUses: 1, createdBy: 'test' });

beforeAll(async () => {
  t = await createTestTenant(db, { label: 'jt-list' });
});

describe('joinTokens.list', () => {
  it('pages newest first with a cursor, never repeating or skipping a token', async () => {
    const pool = await t.newPool();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await mint(pool)).id);
    // Tokens created in one transaction share created_at: the id breaks the tie.
    await db.$transaction(async (tx) => {
      for (let i = 0; i < 2; i++) {
        const { record, token } = await issueNodeToken(tx, pool);
        ids.push(record.id);
        minted.push(token!);
      }
    });
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await list(pool, { limit: 2, cursor });
      expect(page.items.length).toBeLessThanOrEqual(2);
      seen.push(...page.items.map((i) => i.id));
      cursor = page.nextCursor ?? undefined;
      pages++;
    } while (cursor);
    expect(pages).toBe(4);
    expect(seen).toEqual([...ids].reverse());
    expect((await list(pool)).items).toHaveLength(7);
    expect((await list(pool)).nextCursor).toBeNull();
  });

  it('checks limit on both sides of its bounds and refuses a foreign cursor', async () => {
    const pool = await t.newPool();
    for (let i = 0; i < 3; i++) await mint(pool);
    expect(await failure(list(pool, { limit: 0 }))).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'limit' });
    expect((await list(pool, { limit: 1 })).items).toHaveLength(1);
    expect((await list(pool, { limit: 200 })).items).toHaveLength(3);
    expect(await failure(list(pool, { limit: 201 }))).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'limit' });
    expect(await failure(list(pool, { cursor: (await mint()).id }))).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'cursor' });
    expect(await failure(list(pool, { cursor: 'bcjt_x.y' }))).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'cursor' });
  });

  it('holds up to 100 by default and 200 at most', async () => {
    const pool = await t.newPool();
    await db.$transaction(
      async (tx) => {
        for (let i = 0; i < 201; i++) {
          const { token } = await issueNodeToken(tx, pool);
          if (i === 0) minted.push(token!);
        }
      },
      { timeout: 60_000 },
    );
    const first = await list(pool);
    expect(first.items).toHaveLength(100);
    expect(first.nextCursor).toBe(first.items[99]!.id);
    const big = await list(pool, { limit: 200 });
    expect(big.items).toHaveLength(200);
    expect((await list(pool, { limit: 200, cursor: big.nextCursor })).items).toHaveLength(1);
  });

  it('shows live tokens only, and every token with its state with includeInactive', async () => {
    const pool = await t.newPool();
    const live = await mint(pool);
    const revoked = await mint(pool);
    const expired = await mint(pool);
    const usedUp = await mint(pool, { maxUses: 3 });
    await revoke(pool, revoked.id);
    await db.joinToken.update({ where: { id: expired.id }, data: { expiresAt: new Date(Date.now() - 1000) } });
    await db.joinToken.update({ where: { id: usedUp.id }, data: { usesLeft: 0 } });

    expect((await list(pool)).items.map((i) => i.id)).toEqual([live.id]);
    const all = await list(pool, { includeInactive: true });
    expect(Object.fromEntries(all.items.map((i) => [i.id, i.state]))).toEqual({
      [live.id]: 'live',
      [revoked.id]: 'revoked',
      [expired.id]: 'expired',
      [usedUp.id]: 'used-up',
    });
    expect(all.items.find((i) => i.id === usedUp.id)).toMatchObject({ usesLeft: 0, maxUses: 3 });
    for (const item of all.items) {
      expect(Object.keys(item).sort()).toEqual([
        'allowReclaim',
        'createdAt',
        'createdBy',
        'createdByEmail',
        'description',
        'expect',
        'expiresAt',
        'hosted',
        'id',
        'labels',
        'lastUsedAt',
        'maxUses',
        'name',
        'poolId',
        'revokedAt',
        'revokedBy',
        'revokedByEmail',
        'role',
        'siteId',
        'state',
        'usesLeft',
      ]);
    }
  });

  it('decides expiry by the database clock (compute_now)', async () => {
    const pool = await t.newPool();
    const token = await mint(pool, { ttlSeconds: 60 });
    const at = async (now: string) =>
      db.$transaction(async (tx) => {
        await tx.$executeRaw`SELECT set_config('compute.now', ${now}, true)`;
        return listJoinTokens(tx as unknown as Db, t.admin, { tenantId: t.tenantId, poolId: pool, includeInactive: true });
      });
    const before = new Date(new Date(token.expiresAt).getTime() - 1).toISOString();
    expect((await at(before)).items[0]).toMatchObject({ id: token.id, state: 'live' });
    expect((await at(token.expiresAt)).items[0]).toMatchObject({ id: token.id, state: 'expired' });
    expect((await list(pool)).items.map((i) => i.id)).toEqual([token.id]);
  });

  it('is compute:join-tokens:read: viewers list, other tenants get NOT_FOUND', async () => {
    await mint();
    expect((await list(t.poolId, {}, t.as('viewer'))).items.length).toBeGreaterThan(0);
    const other = await createTestTenant(db, { label: 'jt-list-iso' });
    expect(await failure(list(t.poolId, {}, other.admin))).toMatchObject({ code: 'NOT_FOUND' });
    expect(await failure(listJoinTokens(db, other.admin, { tenantId: other.tenantId, poolId: t.poolId }))).toMatchObject({
      code: 'NOT_FOUND',
    });
  });
});

describe('joinTokens.revoke', () => {
  it('ends a token at once; revoking twice returns the record and publishes once', async () => {
    const token = await mint();
    const first = await revoke(t.poolId, token.id);
    expect(first).toMatchObject({ id: token.id, state: 'revoked' });
    expect(first.revokedAt).not.toBeNull();
    const second = await revoke(t.poolId, token.id);
    expect(second).toEqual(first);
    const events = await db.event.count({
      where: { tenantId: t.tenantId, type: 'security.join-token.revoked', data: { path: ['tokenId'], equals: token.id } },
    });
    expect(events).toBe(1);
    const audit = await db.auditEntry.findMany({
      where: { tenantId: t.tenantId, action: 'join-token.revoked', resource: `compute-join-token/${token.id}` },
    });
    expect(audit.map((a) => a.actor)).toEqual([t.admin.actor]);
    expect((await list(t.poolId)).items.map((i) => i.id)).not.toContain(token.id);
  });

  it('names who revoked in the event and who created in the record, with no use yet', async () => {
    const token = await mint();
    expect(token).toMatchObject({ createdBy: t.admin.actor, lastUsedAt: null });
    await revoke(t.poolId, token.id);
    const event = await db.event.findFirstOrThrow({
      where: { tenantId: t.tenantId, type: 'security.join-token.revoked', data: { path: ['tokenId'], equals: token.id } },
    });
    expect((event.data as { actor: string }).actor).toBe(t.admin.actor);
  });

  it('keeps a name and description, says who revoked it, and refuses an unprintable name naming the field', async () => {
    const token = await mint(t.poolId, { name: 'rack B7 intake', description: 'ticket 4411, 12 machines' });
    expect(token).toMatchObject({ name: 'rack B7 intake', description: 'ticket 4411, 12 machines', revokedBy: null, revokedByEmail: null });
    const operator = t.as('operator');
    await revoke(t.poolId, token.id, operator);
    const [listed] = (await list(t.poolId, { includeInactive: true })).items.filter((i) => i.id === token.id);
    expect(listed).toMatchObject({ state: 'revoked', name: 'rack B7 intake', revokedBy: operator.actor, revokedAt: expect.any(String) });
    // A second revocation by someone else keeps the first revoker.
    expect(await revoke(t.poolId, token.id)).toMatchObject({ revokedBy: operator.actor });
    expect(await failure(mint(t.poolId, { name: 'bad\u0007name' }))).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'name' });
    expect(await failure(mint(t.poolId, { description: 'x'.repeat(501) }))).toMatchObject({
      code: 'INVALID_ARGUMENT',
      field: 'description',
    });
  });

  it('publishes once when revocations race', async () => {
    const token = await mint();
    const results = await Promise.all(
      Array.from({ length: 5 }, () => revokeJoinToken(db, t.admin, { tenantId: t.tenantId, poolId: t.poolId, tokenId: token.id })),
    );
    expect(new Set(results.map((r) => r.revokedAt)).size).toBe(1);
    expect(await db.event.count({ where: { type: 'security.join-token.revoked', data: { path: ['tokenId'], equals: token.id } } })).toBe(1);
  });

  it('lets operators revoke, refuses viewers, and hides tokens of other pools and tenants', async () => {
    const token = await mint();
    expect(await failure(revoke(t.poolId, token.id, t.as('viewer')))).toMatchObject({ code: 'ACCESS_DENIED' });
    expect(await failure(revokeJoinToken(db, t.as('viewer'), { tenantId: t.tenantId, poolId: t.poolId, tokenId: token.id }))).toMatchObject(
      { code: 'ACCESS_DENIED' },
    );
    const otherPool = await t.newPool();
    expect(await failure(revoke(otherPool, token.id))).toMatchObject({ code: 'NOT_FOUND' });
    expect(await failure(revoke(t.poolId, 'jt_01k5w0000000000000000000000'))).toMatchObject({ code: 'NOT_FOUND' });
    const other = await createTestTenant(db, { label: 'jt-revoke-iso' });
    expect(await failure(revoke(t.poolId, token.id, other.admin))).toMatchObject({ code: 'NOT_FOUND' });
    expect(await failure(revoke(t.poolId, `bcjt_${token.id}.secret`))).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'tokenId' });
    expect((await revoke(t.poolId, token.id, t.as('operator'))).state).toBe('revoked');
  });
});
