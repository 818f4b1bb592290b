import { createHash, randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMigratedDatabase, dropDatabase } from '../../test/db';
import { SELECT_PRESENTED_LEAVES } from './renew-sql';

// Every renewal group and every Hello group finds its presented leaves with SELECT_PRESENTED_LEAVES. node_certs
// grows by a row per renewal, faster than autovacuum analyzes it; as a plain join, a table without statistics
// for its sha256(der) index was hash-joined after hashing every row's DER, so the cost of each group grew with
// the table. The statement must find each leaf through the index whatever the statistics say.

const DATABASE = 'presented_leaves_plan';
const CERTIFICATES = 3000;
let client: pg.Client;
const ders: Buffer[] = [];

beforeAll(async () => {
  client = new pg.Client({ connectionString: await createMigratedDatabase(DATABASE) });
  await client.connect();
  // No ANALYZE may give the table statistics while the test runs: the case is a table that has none yet.
  await client.query(`ALTER TABLE node_certs SET (autovacuum_enabled = false)`);
  await client.query(`INSERT INTO tenants (id, name) VALUES ('tnt_plan', 'plan')`);
  await client.query(`INSERT INTO sites (id, owner_tenant_id, name, kind) VALUES ('site_plan', 'tnt_plan', 'plan', 'custom')`);
  await client.query(
    `INSERT INTO nodes (id, tenant_id, site_id, role, state, trust, attestor)
     SELECT 'node_plan' || g, 'tnt_plan', 'site_plan', 'node', 'adopted', 'token', 'join-token' FROM generate_series(1, 1000) g`,
  );
  for (let i = 0; i < CERTIFICATES; i++) ders.push(randomBytes(600));
  await client.query(
    `INSERT INTO node_certs (serial, node_id, identity_generation, role, spki_sha256, der, not_before, not_after)
     SELECT 'plan' || o, 'node_plan' || (1 + o % 1000), 1, 'node', sha256(('key' || o)::bytea), d, now(), now() + interval '1 day'
       FROM unnest($1::bytea[]) WITH ORDINALITY AS u(d, o)`,
    [ders],
  );
}, 120_000);

afterAll(async () => {
  await client?.end();
  await dropDatabase(DATABASE);
});

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest();
const literal = (values: Buffer[]) => `ARRAY[${values.map((b) => `'\\x${b.toString('hex')}'::bytea`).join(', ')}]`;

describe('the presented leaves of a renewal or Hello group', () => {
  it('are found through the sha256(der) index on a table without statistics, with generic and custom plans', async () => {
    const stats = await client.query(`SELECT count(*)::int AS n FROM pg_stats WHERE tablename = 'node_certs'`);
    expect(stats.rows[0].n).toBe(0);
    const presented = [ders[5]!, randomBytes(600), ders[2500]!];
    await client.query(`PREPARE leaves(bytea[], bytea[]) AS ${SELECT_PRESENTED_LEAVES}`);
    for (const mode of ['force_custom_plan', 'force_generic_plan']) {
      await client.query(`SET plan_cache_mode = ${mode}`);
      const args = `${literal(presented.map(sha256))}, ${literal(presented)}`;
      const plan = JSON.stringify((await client.query(`EXPLAIN (FORMAT JSON) EXECUTE leaves(${args})`)).rows[0]);
      expect(plan, mode).not.toMatch(/"Node Type":"Seq Scan"[^}]*"Relation Name":"node_certs"/);
      expect(plan, mode).toContain('"Index Name":"node_certs_der_sha256_idx"');
      // And it answers what it is asked: the two known leaves, in their places; the unknown one has no row.
      const rows = (await client.query(`EXECUTE leaves(${args})`)).rows as Array<{ ord: number; serial: string }>;
      expect(rows.map((r) => [r.ord, r.serial]).sort()).toEqual([
        [1, 'plan6'],
        [3, 'plan2501'],
      ]);
    }
  });
});
