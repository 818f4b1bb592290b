import { beforeAll, describe, expect, it } from 'vitest';
import { testDb } from '../../test/db';
import { createTestTenant, failure, type TestTenant } from '../../test/fixtures';
import { watchSecretLeaks } from '../../test/secret-watch';
import { createCaller } from '../api/root';
import type { Principal } from '../authz/principal';
import { archivePool } from '../pools/pools';
import { buildOpenApiDocument } from '../api/rest/openapi';
import { createJoinToken } from './join-tokens';
import { hashTokenSecret, parseJoinToken } from './secret';
import type { CreatedJoinToken } from '../../protocol/api/token-schemas';

const db = testDb();
const { minted, answers } = watchSecretLeaks(db);
let t: TestTenant;
let operator: Principal;
let keys = 0;

const UUID = '4c4c4544-0031-3510-8052-b4c04f4e5632';
const GPU = 'GPU-7d5a1c2e-0b3f-4a6d-9e8c-1f2a3b4c5d6e';

/** Creates through the tRPC procedure, the API's edge, so zod validation runs as for any caller. */
async function create(input: Record<string, unknown>, principal = operator): Promise<CreatedJoinToken> {
  const created = await createCaller({ db, principal }).joinTokens.create({
    tenantId: t.tenantId,
    poolId: t.poolId,
    ttlSeconds: 3600,
    idempotencyKey: `key-${++keys}`,
    ...input,
  } as never);
  if (created.token) minted.push(created.token);
  answers.push(JSON.stringify(created.token ? { ...created, token: undefined } : created));
  return created;
}
const refused = (input: Record<string, unknown>, principal?: Principal) => failure(create(input, principal));

beforeAll(async () => {
  t = await createTestTenant(db, { label: 'jt-create' });
  operator = t.as('operator');
});

describe('joinTokens.create', () => {
  it('answers the record plus the token, and stores only the SHA-256 of the secret', async () => {
    const created = await create({ maxUses: 3, expect: { serial: 'SN-7701' } });
    expect(created).toMatchObject({
      poolId: t.poolId,
      siteId: t.siteId,
      role: 'node',
      usesLeft: 3,
      maxUses: 3,
      expect: { serial: 'SN-7701' },
      allowReclaim: false,
      hosted: null,
      state: 'live',
      revokedAt: null,
    });
    expect(created.id).toMatch(/^jt_[0-9a-hjkmnp-tv-z]{26}$/);
    const parsed = parseJoinToken(created.token!);
    expect(parsed?.id).toBe(created.id);
    const row = await db.joinToken.findUniqueOrThrow({ where: { id: created.id } });
    expect(Buffer.from(row.secretHash).equals(hashTokenSecret(parsed!.secret))).toBe(true);
    expect(row.createdBy).toBe(operator.actor);
    // The expiry is the database clock's: exactly ttlSeconds after creation.
    expect(row.expiresAt.getTime() - row.createdAt.getTime()).toBe(3600_000);
    expect(Object.keys(created)).not.toContain('secretHash');
  });

  it('defaults maxUses to 1, allowReclaim to false and expect to none', async () => {
    const created = await create({});
    expect(created).toMatchObject({ maxUses: 1, usesLeft: 1, allowReclaim: false, expect: null, hosted: null });
    const hosted = await create({ hosted: 'kubernetes', allowReclaim: true });
    expect(hosted).toMatchObject({ hosted: 'kubernetes', allowReclaim: true });
  });

  it('checks every bound on both sides of its limit, naming the field', async () => {
    expect(await refused({ ttlSeconds: 59 })).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'ttlSeconds' });
    expect((await create({ ttlSeconds: 60 })).expiresAt).toBeTruthy();
    expect((await create({ ttlSeconds: 86_400 })).expiresAt).toBeTruthy();
    expect(await refused({ ttlSeconds: 86_401 })).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'ttlSeconds' });
    expect(await refused({ ttlSeconds: 90.5 })).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'ttlSeconds' });
    expect(await refused({ ttlSeconds: undefined })).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'ttlSeconds' });

    expect(await refused({ maxUses: 0 })).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'maxUses' });
    expect((await create({ maxUses: 1 })).maxUses).toBe(1);
    expect((await create({ maxUses: 10_000 })).maxUses).toBe(10_000);
    expect(await refused({ maxUses: 10_001 })).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'maxUses' });
    expect(await refused({ maxUses: 1.5 })).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'maxUses' });

    expect(await refused({ idempotencyKey: undefined })).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'idempotencyKey' });
    expect(await refused({ idempotencyKey: '' })).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'idempotencyKey' });
    expect((await create({ idempotencyKey: 'k'.repeat(200) })).id).toBeTruthy();
    expect(await refused({ idempotencyKey: 'k'.repeat(201) })).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'idempotencyKey' });
    expect(await refused({ idempotencyKey: 'bad\nkey' })).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'idempotencyKey' });
    expect(await refused({ idempotencyKey: ' padded' })).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'idempotencyKey' });

    expect(await refused({ hosted: 'docker' })).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'hosted' });
    expect(await refused({ allowReclaim: 'yes' })).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'allowReclaim' });
    expect(await refused({ poolId: 'not-a-pool' })).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'poolId' });
  });

  it('validates expect: at least one identifier, mac aa:bb:cc:dd:ee:ff, gpuUuid GPU-…', async () => {
    expect(await refused({ expect: {} })).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'expect' });
    expect(await refused({ expect: { hostname: 'x' } })).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'expect' });
    expect(await refused({ expect: { mac: '3c-ec-ef-12-34-56' } })).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'expect.mac' });
    expect(await refused({ expect: { mac: '02:42:ac:11:00:02' } })).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'expect.mac' });
    expect(await refused({ expect: { gpuUuid: '7d5a1c2e-0b3f-4a6d-9e8c-1f2a3b4c5d6e' } })).toMatchObject({
      code: 'INVALID_ARGUMENT',
      field: 'expect.gpuUuid',
    });
    expect(await refused({ expect: { productUuid: 'nope' } })).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'expect.productUuid' });
    expect(await refused({ expect: { serial: 'Default string' } })).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'expect.serial' });
    expect(await refused({ expect: { serial: 7701 } })).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'expect.serial' });
  });

  it('stores each expect form normalized', async () => {
    const forms: [Record<string, string>, Record<string, string>][] = [
      [{ productUuid: UUID.toUpperCase() }, { productUuid: UUID }],
      [{ productUuid: `{${UUID.toUpperCase()}}` }, { productUuid: UUID }],
      [{ productUuid: UUID.replaceAll('-', '') }, { productUuid: UUID }],
      [{ serial: '  SN-7701 ' }, { serial: 'SN-7701' }],
      [{ mac: '3C:EC:EF:12:34:56' }, { mac: '3c:ec:ef:12:34:56' }],
      [{ gpuUuid: GPU.toUpperCase().replace(/^GPU-/, 'GPU-') }, { gpuUuid: GPU }],
      [{ gpuUuid: `GPU-${GPU.slice(4).replaceAll('-', '')}` }, { gpuUuid: GPU }],
      [
        { productUuid: UUID.toUpperCase(), serial: 'SN-1', mac: '3C:EC:EF:12:34:56', gpuUuid: GPU.toUpperCase() },
        { productUuid: UUID, serial: 'SN-1', mac: '3c:ec:ef:12:34:56', gpuUuid: GPU },
      ],
    ];
    for (const [given, stored] of forms) {
      const created = await create({ expect: given });
      expect(created.expect).toEqual(stored);
      expect((await db.joinToken.findUniqueOrThrow({ where: { id: created.id } })).expect).toEqual(stored);
    }
  });

  it('refuses pools that cannot take token joins: agent none and archived are INVALID_STATE', async () => {
    const agentless = await t.newPool('none');
    const none = await refused({ poolId: agentless });
    expect(none).toMatchObject({ code: 'INVALID_STATE', field: 'poolId' });
    expect(none.message).toMatch(/runs? no daemon/);
    const archived = await t.newPool();
    await archivePool(db, t.admin, { tenantId: t.tenantId, poolId: archived });
    expect(await refused({ poolId: archived })).toMatchObject({ code: 'INVALID_STATE', field: 'poolId' });
    expect(await db.joinToken.count({ where: { poolId: { in: [agentless, archived] } } })).toBe(0);
  });

  it('publishes security.join-token.created with pinned and hosted, and audits the caller', async () => {
    const plain = await create({});
    const pinned = await create({ expect: { mac: '3c:ec:ef:12:34:56' }, hosted: 'kubernetes', maxUses: 2 });
    const events = await db.event.findMany({ where: { tenantId: t.tenantId, type: 'security.join-token.created' } });
    const eventOf = (id: string) => events.find((e) => (e.data as { tokenId: string }).tokenId === id)!.data;
    expect(eventOf(plain.id)).toEqual({
      tokenId: plain.id,
      poolId: t.poolId,
      siteId: t.siteId,
      role: 'node',
      maxUses: 1,
      expiresAt: plain.expiresAt,
      pinned: false,
      actor: operator.actor,
    });
    expect(eventOf(pinned.id)).toEqual({
      tokenId: pinned.id,
      poolId: t.poolId,
      siteId: t.siteId,
      role: 'node',
      maxUses: 2,
      expiresAt: pinned.expiresAt,
      pinned: true,
      hosted: 'kubernetes',
      actor: operator.actor,
    });
    const audit = await db.auditEntry.findFirstOrThrow({
      where: { tenantId: t.tenantId, action: 'join-token.created', resource: `compute-join-token/${pinned.id}` },
    });
    expect(audit.actor).toBe(operator.actor);
  });

  it('lists the three operations in the OpenAPI document', () => {
    const doc = buildOpenApiDocument('/api/compute', 'test') as { paths: Record<string, Record<string, { operationId: string }>> };
    expect(doc.paths['/v1/tenants/{tenantId}/pools/{poolId}/join-tokens']?.get?.operationId).toBe('joinTokens.list');
    expect(doc.paths['/v1/tenants/{tenantId}/pools/{poolId}/join-tokens']?.post?.operationId).toBe('joinTokens.create');
    expect(doc.paths['/v1/tenants/{tenantId}/pools/{poolId}/join-tokens/{tokenId}/revoke']?.post?.operationId).toBe('joinTokens.revoke');
    expect(JSON.stringify(doc)).not.toMatch(/secretHash|secret_hash/);
  });
});

describe('idempotency', () => {
  it('returns the record without token on a retry with the same key, comparing normalized values', async () => {
    const first = await create({ idempotencyKey: 'adopt-rack-b7-u12', expect: { mac: '3C:EC:EF:12:34:56', serial: 'SN-7701' } });
    expect(first.token).toBeDefined();
    const retry = await create({ idempotencyKey: 'adopt-rack-b7-u12', expect: { serial: ' SN-7701', mac: '3c:ec:ef:12:34:56' } });
    expect(retry.token).toBeUndefined();
    expect('token' in retry).toBe(false);
    const { token: _first, ...record } = first;
    expect(retry).toEqual(record);
    expect(
      await db.event.count({
        where: { tenantId: t.tenantId, type: 'security.join-token.created', data: { path: ['tokenId'], equals: first.id } },
      }),
    ).toBe(1);
  });

  it('is CONFLICT when the same key asks for a different pool, expect, allowReclaim, hosted or maxUses', async () => {
    const otherPool = await t.newPool();
    const base = { idempotencyKey: 'conflicts', expect: { serial: 'SN-1' }, maxUses: 2 };
    await create(base);
    const cases: [Record<string, unknown>, string][] = [
      [{ poolId: otherPool }, 'poolId'],
      [{ expect: { serial: 'SN-2' } }, 'expect'],
      [{ expect: { serial: 'SN-1', mac: '3c:ec:ef:12:34:56' } }, 'expect'],
      [{ expect: undefined }, 'expect'],
      [{ allowReclaim: true }, 'allowReclaim'],
      [{ hosted: 'kubernetes' }, 'hosted'],
      [{ maxUses: 3 }, 'maxUses'],
    ];
    for (const [change, field] of cases) {
      expect(await refused({ ...base, ...change }), field).toMatchObject({ code: 'CONFLICT', field });
    }
    // A different TTL is not a conflict: the original expiry stands.
    const retry = await create({ ...base, ttlSeconds: 600 });
    expect(retry.token).toBeUndefined();
    expect(await db.joinToken.count({ where: { tenantId: t.tenantId, idempotencyKey: 'conflicts' } })).toBe(1);
  });

  it('scopes the key to the tenant and the calling identity', async () => {
    const mine = await create({ idempotencyKey: 'shared-key' });
    const colleague = await create({ idempotencyKey: 'shared-key' }, t.as('operator'));
    expect(colleague.token).toBeDefined();
    expect(colleague.id).not.toBe(mine.id);
    const other = await createTestTenant(db, { label: 'jt-create-other' });
    const elsewhere = await createJoinToken(db, other.admin, {
      tenantId: other.tenantId,
      poolId: other.poolId,
      ttlSeconds: 60,
      idempotencyKey: 'shared-key',
      maxUses: 1,
      allowReclaim: false,
    });
    expect(elsewhere.token).toBeDefined();
    minted.push(elsewhere.token!);
  });

  it('makes exactly one token from ten concurrent creates with one key', async () => {
    const results = await Promise.all(Array.from({ length: 10 }, () => create({ idempotencyKey: 'concurrent', maxUses: 5 })));
    expect(results.filter((r) => r.token !== undefined)).toHaveLength(1);
    expect(new Set(results.map((r) => r.id)).size).toBe(1);
    expect(await db.joinToken.count({ where: { tenantId: t.tenantId, idempotencyKey: 'concurrent' } })).toBe(1);
    expect(
      await db.event.count({
        where: { tenantId: t.tenantId, type: 'security.join-token.created', data: { path: ['tokenId'], equals: results[0]!.id } },
      }),
    ).toBe(1);
  });
});

describe('authorization', () => {
  it('lets operators and admins create, refuses viewers (ACCESS_DENIED), hides other tenants’ pools (NOT_FOUND)', async () => {
    expect((await create({}, t.as('admin'))).token).toBeDefined();
    expect((await create({}, t.as('operator'))).token).toBeDefined();
    expect(await refused({}, t.as('viewer'))).toMatchObject({ code: 'ACCESS_DENIED' });
    // Past the router's early check too: the domain function decides on the pool itself.
    expect(
      await failure(
        createJoinToken(db, t.as('viewer'), {
          tenantId: t.tenantId,
          poolId: t.poolId,
          ttlSeconds: 60,
          idempotencyKey: 'v',
          maxUses: 1,
          allowReclaim: false,
        }),
      ),
    ).toMatchObject({ code: 'ACCESS_DENIED' });

    const other = await createTestTenant(db, { label: 'jt-create-iso' });
    const outsider = other.admin;
    expect(await refused({}, outsider)).toMatchObject({ code: 'NOT_FOUND' });
    // Naming one's own tenant with another tenant's pool is NOT_FOUND as well.
    expect(await refused({ tenantId: other.tenantId }, outsider)).toMatchObject({ code: 'NOT_FOUND' });
    expect(await refused({ poolId: 'pool_01k5w0000000000000000000000' })).toMatchObject({ code: 'NOT_FOUND' });
    expect(await db.joinToken.count({ where: { tenantId: other.tenantId } })).toBe(0);
  });
});
