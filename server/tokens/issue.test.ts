import { beforeAll, describe, expect, it } from 'vitest';
import { testDb } from '../../test/db';
import { createTestTenant, failure, type TestTenant } from '../../test/fixtures';
import { watchSecretLeaks } from '../../test/secret-watch';
import { issueJoinToken } from './issue';

const db = testDb();
const { minted } = watchSecretLeaks(db);
let t: TestTenant;

beforeAll(async () => {
  t = await createTestTenant(db, { label: 'jt-issue' });
});

describe('issueJoinToken', () => {
  it('mints the other roles behind one function, with the same bounds', async () => {
    const { record: site, token } = await db.$transaction((tx) =>
      issueJoinToken(tx, {
        tenantId: t.tenantId,
        poolId: null,
        siteId: t.siteId,
        role: 'site',
        ttlSeconds: 600,
        maxUses: 16,
        createdBy: 'module:sites',
      }),
    );
    minted.push(token!);
    expect(site).toMatchObject({ role: 'site', poolId: null, siteId: t.siteId, maxUses: 16, state: 'live' });
    const discovery = await db.$transaction((tx) =>
      issueJoinToken(tx, {
        tenantId: t.tenantId,
        poolId: t.poolId,
        siteId: t.siteId,
        role: 'discovery',
        ttlSeconds: 600,
        maxUses: 1,
        boundMac: '3C-EC-EF-12-34-56',
        createdBy: 'module:boot',
        idempotencyKey: 'boot-1',
      }),
    );
    minted.push(discovery.token!);
    expect((await db.joinToken.findUniqueOrThrow({ where: { id: discovery.record.id } })).boundMac).toBe('3c:ec:ef:12:34:56');
    const event = await db.event.findFirstOrThrow({
      where: { type: 'security.join-token.created', data: { path: ['tokenId'], equals: discovery.record.id } },
    });
    expect(event.data).toMatchObject({ role: 'discovery', pinned: false });

    const issue = (input: Record<string, unknown>) =>
      failure(
        db.$transaction((tx) =>
          issueJoinToken(tx, {
            tenantId: t.tenantId,
            poolId: t.poolId,
            siteId: t.siteId,
            role: 'provisioned',
            ttlSeconds: 600,
            maxUses: 1,
            createdBy: 'module:deploy',
            ...input,
          } as never),
        ),
      );
    expect(await issue({ role: 'admin' })).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'role' });
    expect(await issue({ ttlSeconds: 59 })).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'ttlSeconds' });
    expect(await issue({ ttlSeconds: 86_401 })).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'ttlSeconds' });
    expect(await issue({ maxUses: 0 })).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'maxUses' });
    expect(await issue({ maxUses: 10_001 })).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'maxUses' });
    expect(await issue({ boundMac: 'nope' })).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'boundMac' });
    for (const boundMac of ['ff:ff:ff:ff:ff:ff', '01:00:5e:00:00:fb', '02:42:ac:11:00:02']) {
      expect(await issue({ boundMac }), boundMac).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'boundMac' });
    }
    expect(
      await issue({ idempotencyKey: 'boot-1', createdBy: 'module:boot', role: 'discovery', boundMac: '3c:ec:ef:12:34:57' }),
    ).toMatchObject({ code: 'CONFLICT', field: 'boundMac' });
    expect(await issue({ idempotencyKey: 'boot-1', createdBy: 'module:boot', role: 'node' })).toMatchObject({
      code: 'CONFLICT',
      field: 'role',
    });
  });

  it('keeps a database failure from carrying the row (and its hash) into an error', async () => {
    const error = await db
      .$transaction((tx) =>
        issueJoinToken(tx, {
          tenantId: t.tenantId,
          poolId: t.poolId,
          siteId: 'site_doesnotexist',
          role: 'node',
          ttlSeconds: 600,
          maxUses: 1,
          createdBy: 'test',
        }),
      )
      .then(
        () => null,
        (e: unknown) => e as Error,
      );
    if (!error) throw new Error('expected the insert to fail');
    expect(error).toBeInstanceOf(Error);
    expect(error.message).toMatch(/SQLSTATE 23503/);
    expect(error.cause).toBeUndefined();
    expect(JSON.stringify(error)).not.toMatch(/\\\\x[0-9a-f]{64}/);
  });
});
