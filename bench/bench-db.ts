import { randomBytes } from 'node:crypto';
import type { JoinTrust } from '../agent/join';
import { bootstrapFirstStart } from '../server/boot/bootstrap';
import { createDb } from '../server/db/client';
import { migrate } from '../server/db/migrate';
import { loadPki } from '../server/pki/bundle/store';
import { joinCryptoFromBundle } from '../server/pki/issuance/join-crypto';

/**
 * The benchmark's database as a first start leaves it: migrated, bootstrapped for bench.example.com under a new
 * secret, with its default pool, PKI and join keys. The benchmark made the PKI, so it pins the keys like an
 * install would (`trust`): no trust on first use.
 */
export async function bootstrapBenchDatabase(url: string) {
  await migrate(url);
  const db = createDb(url, { max: 4 });
  const secret = randomBytes(32).toString('base64url');
  const first = await bootstrapFirstStart(db, { secret, trustDomain: 'bench.example.com' });
  const pool = await db.pool.findUniqueOrThrow({ where: { id: first.defaultPoolId! } });
  const bundle = await loadPki(db, secret);
  const crypto = joinCryptoFromBundle(bundle);
  const trust: JoinTrust = {
    encryptionJwk: crypto.encryptionPublicJwk,
    signingCertificateDer: Buffer.from(crypto.signingCertificate, 'base64'),
    signingKeyPin: crypto.signingKeyPin,
  };
  return { db, secret, first, pool, bundle, crypto, trust };
}

/** Exits 0 once `run` resolves, or 1 with its error on stderr after `prefix`. */
export function exitWhenDone(run: Promise<void>, prefix: string): void {
  run.then(
    () => process.exit(0),
    (error: unknown) => {
      process.stderr.write(`${prefix}: ${error instanceof Error ? error.stack : String(error)}\n`);
      process.exit(1);
    },
  );
}
