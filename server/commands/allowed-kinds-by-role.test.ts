import { readFileSync } from 'node:fs';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMigratedDatabase, dropDatabase } from '../../test/db';
import { RAMDISK_ALLOWED_KINDS, TENANT_CONTROLLED_ALLOWED_KINDS } from './allowed-kinds';

// A certificate of a restricted role (a tenant-controlled node's, a ramdisk's) must not accept every command
// because its row was written without `allowed_kinds`: issued before the column existed, or by the previous
// release during a rolling upgrade. Migration 20261210310000 gives those rows their role's list, and a trigger
// every such row inserted later.

const DATABASE = 'allowed_kinds_by_role';
const MIGRATION = new URL('../../prisma/migrations/20261210310000_allowed_kinds_by_role/migration.sql', import.meta.url);
let client: pg.Client;

beforeAll(async () => {
  client = new pg.Client({ connectionString: await createMigratedDatabase(DATABASE) });
  await client.connect();
  await client.query(`INSERT INTO tenants (id, name) VALUES ('tnt_kinds', 'kinds')`);
  await client.query(`INSERT INTO sites (id, owner_tenant_id, name, kind) VALUES ('site_kinds', 'tnt_kinds', 'kinds', 'custom')`);
  await client.query(
    `INSERT INTO nodes (id, tenant_id, site_id, role, state, trust, attestor)
     SELECT 'node_kinds_' || r, 'tnt_kinds', 'site_kinds', r, 'adopted', 'token', 'join-token' FROM unnest(ARRAY['node', 'node-tenant', 'ramdisk']) r`,
  );
}, 120_000);

afterAll(async () => {
  await client?.end();
  await dropDatabase(DATABASE);
});

/** Inserts a certificate row as a writer that knows nothing of `allowed_kinds` does; answers the stored value. */
async function insertLegacyRow(role: string, serial: string): Promise<string[] | null> {
  await client.query(
    `INSERT INTO node_certs (serial, node_id, identity_generation, role, spki_sha256, der, not_before, not_after)
     VALUES ($1::text, $2, 1, $3, sha256(convert_to($1::text, 'UTF8')), '\\x00', now(), now() + interval '1 day')`,
    [serial, `node_kinds_${role}`, role],
  );
  return (await client.query(`SELECT allowed_kinds FROM node_certs WHERE serial = $1`, [serial])).rows[0].allowed_kinds;
}

describe('allowed kinds of a restricted role', () => {
  it('are set on a row inserted without them, and only for the restricted roles', async () => {
    expect(await insertLegacyRow('node-tenant', 'k1')).toEqual([...TENANT_CONTROLLED_ALLOWED_KINDS]);
    expect(await insertLegacyRow('ramdisk', 'k2')).toEqual([...RAMDISK_ALLOWED_KINDS]);
    expect(await insertLegacyRow('node', 'k3')).toBeNull();
  });

  it('are given by the migration to rows written before it, which it may run over again', async () => {
    await client.query(`ALTER TABLE node_certs DISABLE TRIGGER node_certs_role_allowed_kinds`);
    expect(await insertLegacyRow('node-tenant', 'k4')).toBeNull();
    expect(await insertLegacyRow('ramdisk', 'k5')).toBeNull();
    await client.query(`ALTER TABLE node_certs ENABLE TRIGGER node_certs_role_allowed_kinds`);
    await client.query(readFileSync(MIGRATION, 'utf8'));
    const rows = await client.query(`SELECT serial, allowed_kinds FROM node_certs WHERE serial IN ('k4', 'k5', 'k3') ORDER BY serial`);
    expect(rows.rows).toEqual([
      { serial: 'k3', allowed_kinds: null },
      { serial: 'k4', allowed_kinds: [...TENANT_CONTROLLED_ALLOWED_KINDS] },
      { serial: 'k5', allowed_kinds: [...RAMDISK_ALLOWED_KINDS] },
    ]);
  });
});
