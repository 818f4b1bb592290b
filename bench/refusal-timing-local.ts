/**
 * The refusal timing of `npm run bench:join` without the production build: JoinService in this process on an
 * embedded PostgreSQL (durable commits), answering request bodies as the HTTP fast path hands them over.
 * It isolates the server's own work from HTTP, which is where a difference between the two refusals shows.
 *
 * `npx tsx bench/refusal-timing-local.ts --refusals 200`
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { prepareJoinAttempt, type JoinTrust } from '../agent/join';
import { simulatedClaims } from '../agent/sim/simulate';
import { bootstrapFirstStart } from '../server/boot/bootstrap';
import { createDb } from '../server/db/client';
import { startEmbeddedDatabase } from '../server/db/embedded';
import { migrate } from '../server/db/migrate';
import { createPgPool } from '../server/db/pg';
import { JoinService } from '../server/join/join-service';
import { joinCryptoFromBundle } from '../server/pki/issuance/join-crypto';
import { loadPki } from '../server/pki/bundle/store';
import { issueJoinToken } from '../server/tokens/issue';
import { formatRefusalTiming, measureRefusalTiming } from './refusal-timing';

const { values } = parseArgs({ options: { refusals: { type: 'string', default: '200' } } });

async function main() {
  const dir = await mkdtemp(path.join(tmpdir(), 'bc-refusals-'));
  const database = await startEmbeddedDatabase(dir);
  try {
    await migrate(database.url);
    const db = createDb(database.url, { max: 4 });
    const secret = randomBytes(32).toString('base64url');
    const first = await bootstrapFirstStart(db, { secret, trustDomain: 'bench.example.com' });
    const pool = await db.pool.findUniqueOrThrow({ where: { id: first.defaultPoolId! } });
    const crypto = joinCryptoFromBundle(await loadPki(db, secret));
    const trust: JoinTrust = {
      encryptionJwk: crypto.encryptionPublicJwk,
      signingCertificateDer: Buffer.from(crypto.signingCertificate, 'base64'),
      signingKeyPin: crypto.signingKeyPin,
    };
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

main().then(
  () => process.exit(0),
  (error) => {
    process.stderr.write(`failed: ${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  },
);
