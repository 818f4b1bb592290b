/**
 * The typed layer's cost per query: one representative read (an API key by id, with its live flag, as
 * authenticateApiKey does) through `typed(db)` (Kysely compiled, sent through Prisma's raw path), `$queryRaw`,
 * and a Prisma model call, in process against a fresh embedded database. `--iterations` (default 2000) each,
 * interleaved in rounds so drift hits all three alike; prints the median and p99 per query and the ratios.
 *
 *   npx tsx bench/typed-overhead.ts [--iterations 2000]
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { sql } from 'kysely';
import { percentile } from '../agent/sim/percentiles';
import { createDb, type Db } from '../server/db/client';
import { startEmbeddedDatabase } from '../server/db/embedded';
import { migrate } from '../server/db/migrate';
import { typed } from '../server/db/typed';
import { newId } from '../server/ids';

const { values } = parseArgs({ options: { iterations: { type: 'string', default: '2000' } } });
const iterations = Number(values.iterations);

const variants = {
  typed: (db: Db, id: string) =>
    typed(db)
      .selectFrom('api_keys')
      .select(['id', 'tenant_id', 'role', 'secret_hash'])
      .select((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', sql<Date>`compute_now()`)]).as('live'))
      .where('id', '=', id)
      .executeTakeFirst(),
  queryRaw: (db: Db, id: string) =>
    db.$queryRaw`SELECT id, tenant_id, role, secret_hash, (expires_at IS NULL OR expires_at > compute_now()) AS live
                   FROM api_keys WHERE id = ${id}`,
  prisma: (db: Db, id: string) =>
    db.apiKey.findUnique({ where: { id }, select: { id: true, tenantId: true, role: true, secretHash: true, expiresAt: true } }),
};

async function main() {
  const dir = await mkdtemp(path.join(tmpdir(), 'bc-bench-typed-'));
  const database = await startEmbeddedDatabase(dir);
  try {
    await migrate(database.url);
    const db = createDb(database.url, { max: 1 });
    const tenantId = newId('tnt');
    const id = newId('key');
    await db.tenant.create({ data: { id: tenantId, name: 'bench-typed' } });
    await db.apiKey.create({ data: { id, tenantId, role: 'viewer', name: 'bench', secretHash: Buffer.alloc(32), createdBy: 'bench' } });
    const ms: Record<string, number[]> = { typed: [], queryRaw: [], prisma: [] };
    for (let i = 0; i < iterations + 200; i++) {
      for (const [name, run] of Object.entries(variants)) {
        const started = performance.now();
        await run(db, id);
        if (i >= 200) ms[name]!.push(performance.now() - started); // the first 200 rounds warm up
      }
    }
    const p50 = (name: string) => percentile(ms[name]!, 50);
    for (const name of Object.keys(variants))
      console.log(`${name.padEnd(9)} p50 ${p50(name).toFixed(3)} ms  p99 ${percentile(ms[name]!, 99).toFixed(3)} ms`);
    console.log(`typed/queryRaw ${(p50('typed') / p50('queryRaw')).toFixed(2)}  typed/prisma ${(p50('typed') / p50('prisma')).toFixed(2)}`);
    await db.$disconnect();
  } finally {
    await database.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

void main();
