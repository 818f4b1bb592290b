import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { createFreshDatabase, dropDatabase } from '../../test/db';
import { MIGRATIONS_DIR, migrate, readMigrations } from '../db/migrate';

// The migration that keys discovery requests by the token's lease re-keys rows written under the claims'
// hardware key, and leaves one pending request per lease (the newest), the others expired.

const MIGRATION = '20261202010000_discovery_request_per_lease';
const name = `lease_migration_${process.pid}`;
let url: string | null = null;
const before = mkdtempSync(path.join(tmpdir(), 'bc-migrations-'));

afterAll(async () => {
  rmSync(before, { recursive: true, force: true });
  if (url) await dropDatabase(name);
});

describe(MIGRATION, () => {
  it('re-keys discovery requests by site and bound MAC and keeps only the newest pending one per lease', async () => {
    url = await createFreshDatabase(name);
    // Every migration before this one, as a database of the previous release holds them.
    for (const m of await readMigrations())
      if (m.name < MIGRATION) cpSync(path.join(MIGRATIONS_DIR, m.name), path.join(before, m.name), { recursive: true });
    await migrate(url, { dir: before });

    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await client.query(`INSERT INTO tenants (id, name) VALUES ('tnt_m', 'm')`);
      await client.query(`INSERT INTO sites (id, owner_tenant_id, name, kind) VALUES ('site_m', 'tnt_m', 's', 'custom')`);
      const row = (id: string, key: string, state: string, mac: string | null, ageSeconds: number) =>
        client.query(
          `INSERT INTO join_requests (id, tenant_id, site_id, attestor, state, machine_key, mac, csr_sha256, expires_at, created_at)
           VALUES ($1, 'tnt_m', 'site_m', 'discovery', $2, $3, $4, 'ab', now() + interval '1 day', now() - $5::int * interval '1 second')`,
          [id, state, key, mac, ageSeconds],
        );
      // One lease that an attacker varied three times (three hardware keys), a rejected one, and another lease.
      await row('jreq_a1', 'hk:01', 'pending', '3c:ec:ef:00:00:01', 30);
      await row('jreq_a2', 'hk:02', 'pending', '3c:ec:ef:00:00:01', 20);
      await row('jreq_a3', 'hk:03', 'pending', '3c:ec:ef:00:00:01', 10);
      await row('jreq_r', 'hk:04', 'rejected', '3c:ec:ef:00:00:02', 40);
      await row('jreq_b', 'mac:site_m:3c:ec:ef:00:00:03', 'pending', '3c:ec:ef:00:00:03', 5);

      // This migration alone: later ones are not this test's subject.
      cpSync(path.join(MIGRATIONS_DIR, MIGRATION), path.join(before, MIGRATION), { recursive: true });
      expect((await migrate(url, { dir: before })).applied).toEqual([MIGRATION]);
      const { rows } = await client.query(`SELECT id, state, machine_key FROM join_requests ORDER BY id`);
      expect(rows).toEqual([
        { id: 'jreq_a1', state: 'expired', machine_key: 'mac:site_m:3c:ec:ef:00:00:01' },
        { id: 'jreq_a2', state: 'expired', machine_key: 'mac:site_m:3c:ec:ef:00:00:01' },
        { id: 'jreq_a3', state: 'pending', machine_key: 'mac:site_m:3c:ec:ef:00:00:01' },
        { id: 'jreq_b', state: 'pending', machine_key: 'mac:site_m:3c:ec:ef:00:00:03' },
        { id: 'jreq_r', state: 'rejected', machine_key: 'mac:site_m:3c:ec:ef:00:00:02' },
      ]);
    } finally {
      await client.end();
    }
  });
});
