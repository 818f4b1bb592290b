import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { testDb } from '../../test/db';
import { newId } from '../ids';
import { typed } from './typed';

describe('the typed SQL layer over Prisma', () => {
  const db = testDb();

  it('reads and writes with the schema types: Buffer, Date, row counts, arrays', async () => {
    const tenantId = newId('tnt');
    await typed(db)
      .insertInto('tenants')
      .values({ id: tenantId, name: `typed-${tenantId}` })
      .execute();
    const secret = randomBytes(32);
    const keyId = newId('key');
    await typed(db)
      .insertInto('api_keys')
      .values({ id: keyId, tenant_id: tenantId, role: 'viewer', name: 'typed', secret_hash: secret, created_by: 'test' })
      .execute();

    const row = await typed(db)
      .selectFrom('api_keys')
      .select(['id', 'secret_hash', 'created_at', 'expires_at'])
      .where('tenant_id', '=', tenantId)
      .where('id', 'in', [keyId, 'key_absent'])
      .executeTakeFirstOrThrow();
    expect(Buffer.isBuffer(row.secret_hash)).toBe(true);
    expect(row.secret_hash.equals(secret)).toBe(true);
    expect(row.created_at).toBeInstanceOf(Date);
    expect(row.expires_at).toBeNull();

    const until = new Date(Date.now() + 3_600_000);
    const updated = await typed(db).updateTable('api_keys').set({ expires_at: until }).where('tenant_id', '=', tenantId).executeTakeFirst();
    expect(updated.numUpdatedRows).toBe(1n);
    const untouched = await typed(db).updateTable('api_keys').set({ expires_at: until }).where('id', '=', 'key_absent').executeTakeFirst();
    expect(untouched.numUpdatedRows).toBe(0n);

    const ids = await sql<{ id: string }>`SELECT id FROM api_keys WHERE id = ANY(${[keyId]}::text[])`.execute(typed(db));
    expect(ids.rows).toEqual([{ id: keyId }]);

    const deleted = await typed(db).deleteFrom('api_keys').where('id', '=', keyId).returning('id').execute();
    expect(deleted).toEqual([{ id: keyId }]);
  });

  it('shares the Prisma transaction: a rollback undoes the typed writes, the Prisma ones see them', async () => {
    const tenantId = newId('tnt');
    const failure = new Error('roll back');
    await expect(
      db.$transaction(async (tx) => {
        await typed(tx)
          .insertInto('tenants')
          .values({ id: tenantId, name: `typed-${tenantId}` })
          .execute();
        // Prisma sees the typed write inside the same transaction...
        expect(await tx.tenant.findUnique({ where: { id: tenantId } })).not.toBeNull();
        throw failure;
      }),
    ).rejects.toBe(failure);
    // ...and nothing of it is left after the rollback.
    expect(await typed(db).selectFrom('tenants').select('id').where('id', '=', tenantId).executeTakeFirst()).toBeUndefined();
  });

  it('refuses Kysely transactions: Prisma opens them', async () => {
    await expect(
      typed(db)
        .transaction()
        .execute(async () => undefined),
    ).rejects.toThrow(/Prisma/);
  });
});
