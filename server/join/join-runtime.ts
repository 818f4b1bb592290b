import type { Db } from '../db/client';
import { getDb } from '../db/client';
import { getPgPool } from '../db/pg';
import { logError } from '../log';
import { joinCryptoFromBundle, type JoinCrypto } from '../pki/join-crypto';
import { installPins } from '../pki/pins-summary';
import { hasPki, loadPki } from '../pki/store';
import { getRootTenant } from '../tenants/tenants';
import { JoinService } from './join-service';
import type { JoinPreparer } from './prepare';

const RETRY_MISSING_MS = 5_000;

/** What the server holds of the PKI at run time: JoinService's keys and the serving CA's pin. */
export interface PkiRuntime {
  crypto: JoinCrypto;
  servingCaPin: string;
}

interface CryptoCache {
  value: PkiRuntime | null;
  at: number;
  pending?: Promise<PkiRuntime | null>;
}

const globalForJoin = globalThis as unknown as { joinCrypto?: CryptoCache; joinService?: JoinService; rootTenantId?: string; joinPreparer?: JoinPreparer };

/**
 * Makes the process's JoinService prepare joins with `preparer` (the server's worker threads). Called
 * before the server takes requests; a JoinService made earlier keeps preparing on the calling thread.
 */
export function configureJoinPreparer(preparer: JoinPreparer) {
  globalForJoin.joinPreparer = preparer;
}

/**
 * JoinService's keys (`pki.join`), opened once from the stored PKI bundle with BETTER_COMPUTE_SECRET. A
 * deployment without a bundle or a secret gets null (every join is INVALID_CONFIG); that answer is
 * re-checked every few seconds, so `pki init` on a running server takes effect without a restart.
 */
export async function loadPkiRuntime(db: Db = getDb()): Promise<PkiRuntime | null> {
  const cache = globalForJoin.joinCrypto;
  if (cache?.value) return cache.value;
  if (cache && Date.now() - cache.at < RETRY_MISSING_MS) return cache.pending ?? cache.value;
  const pending = (async () => {
    const secret = process.env.BETTER_COMPUTE_SECRET;
    if (!secret || !(await hasPki(db))) return null;
    try {
      const bundle = await loadPki(db, secret);
      return { crypto: joinCryptoFromBundle(bundle), servingCaPin: installPins(bundle).servingCaPin };
    } catch (error) {
      logError('JoinService keys could not be loaded', error);
      return null;
    }
  })();
  globalForJoin.joinCrypto = { value: null, at: Date.now(), pending };
  const value = await pending;
  globalForJoin.joinCrypto = { value, at: Date.now() };
  return value;
}

export async function loadJoinCrypto(db: Db = getDb()): Promise<JoinCrypto | null> {
  return (await loadPkiRuntime(db))?.crypto ?? null;
}

/** The root tenant's id, cached once found: it receives refusal events before a caller proved anything. */
export async function loadRootTenantId(): Promise<string | null> {
  if (globalForJoin.rootTenantId) return globalForJoin.rootTenantId;
  const root = await getRootTenant(getDb());
  if (root) globalForJoin.rootTenantId = root.id;
  return root?.id ?? null;
}

/**
 * How many admission transactions one process keeps in flight: BETTER_COMPUTE_JOIN_IN_FLIGHT, default 1
 * (strictly one batch at a time; see JoinServiceOptions.maxInFlight for when more pays).
 */
export function joinInFlight(env: Record<string, string | undefined> = process.env): number | undefined {
  const configured = env.BETTER_COMPUTE_JOIN_IN_FLIGHT;
  if (configured === undefined || configured === '') return undefined;
  const n = Number(configured);
  if (!Number.isInteger(n) || n < 1 || n > 8) throw new Error(`BETTER_COMPUTE_JOIN_IN_FLIGHT must be 1 to 8, not ${configured}`);
  return n;
}

/** The process's JoinService, on DATABASE_URL. */
export function getJoinService(): JoinService {
  if (globalForJoin.joinService) return globalForJoin.joinService;
  const service = new JoinService({
    pool: getPgPool(),
    loadCrypto: () => loadJoinCrypto(),
    loadRootTenantId,
    preparer: globalForJoin.joinPreparer,
    certTtlSeconds: process.env.BETTER_COMPUTE_CERT_TTL_SECONDS ? Number(process.env.BETTER_COMPUTE_CERT_TTL_SECONDS) : undefined,
    maxInFlight: joinInFlight(),
  });
  // The join benchmark's profile: on SIGUSR2 the process prints its admission counters on one stdout line.
  if (process.env.BETTER_COMPUTE_JOIN_STATS === '1') {
    process.on('SIGUSR2', () => process.stdout.write(`${JOIN_STATS_PREFIX}${JSON.stringify(service.pipelineStats)}\n`));
  }
  return (globalForJoin.joinService = service);
}

/** How the line printed for BETTER_COMPUTE_JOIN_STATS starts. */
export const JOIN_STATS_PREFIX = 'join-pipeline-stats ';
