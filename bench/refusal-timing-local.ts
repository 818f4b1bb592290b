/**
 * The refusal timing of `npm run bench:join` without the production build: JoinService in this process on an
 * embedded PostgreSQL (durable commits), answering request bodies as the HTTP fast path hands them over.
 * It isolates the server's own work from HTTP, which is where a difference between the two refusals shows.
 *
 * `npx tsx bench/refusal-timing-local.ts --refusals 200`
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { prepareJoinAttempt } from '../agent/join';
import { simulatedClaims } from '../agent/sim/simulate';
import { startEmbeddedDatabase } from '../server/db/embedded';
import { createPgPool } from '../server/db/pg';
import { JoinService } from '../server/join/join-service';
import { issueJoinToken } from '../server/tokens/issue';
import { formatRefusalTiming, measureRefusalTiming } from './refusal-timing';
import { bootstrapBenchDatabase, exitWhenDone } from './bench-db';

const { values } = parseArgs({ options: { refusals: { type: 'string', default: '200' } } });

async function main() {
  const dir = await mkdtemp(path.join(tmpdir(), 'bc-refusals-'));
  const database = await startEmbeddedDatabase(dir);
  try {
    const { db, first, pool, crypto, trust } = await bootstrapBenchDatabase(database.url);
    const pg = createPgPool(database.url, 8);
    const service = new JoinService({ pool: pg, loadCrypto: async () => crypto, loadRootTenantId: async () => first.rootTenantId });
    const token = (
      await issueJoinToken(db, {
        tenantId: pool.ownerTenantId,
        poolId: pool.id,
        siteId: pool.siteId,
        role: 'node',
        ttlSeconds: 3600,
        maxUses: 1000,
        createdBy: 'bench',
      })
    ).token!;
    // Admitted a few times first, as a token in use is: the server then knows it well (warm caches, hints).
    for (let i = 0; i < 20; i++) {
      const attempt = await prepareJoinAttempt({ token, trust, claims: simulatedClaims(i) });
      const answer = await service.joinBody(Buffer.from(attempt.body));
      if (answer.status !== 200) throw new Error(`warm-up join answered ${answer.status}`);
    }
    const timing = await measureRefusalTiming({
      knownToken: token,
      trust,
      samples: Number(values.refusals),
      send: async (body) => (await service.joinBody(Buffer.from(body))).status,
    });
    process.stdout.write(`${formatRefusalTiming(timing)}\n`);
    await pg.end();
    await db.$disconnect();
  } finally {
    await database.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

exitWhenDone(main(), 'failed');
