import type { Db } from '../db/client';
import { logError } from '../log';
import { applyStalePolicies } from './stale-policy';

/** How often each instance applies the pools' stale-node policies; the policies count in days. */
const STALE_TICK_MS = 10 * 60_000;

/**
 * Applies every pool's stale-node policy every `intervalMs` (see applyStalePolicies) until the returned stop is
 * called; the stop waits for a tick under way. Every API instance runs one: the nodes are taken with SKIP
 * LOCKED, so however many run, each node is handled once. Failures are logged and the next tick tries again.
 * `onlyTenants` scopes it (tests share one database).
 */
export function startStaleNodeWorker(db: Db, options: { intervalMs?: number; onlyTenants?: string[] } = {}): () => Promise<void> {
  let running: Promise<unknown> | undefined;
  const timer = setInterval(() => {
    if (running) return;
    running = applyStalePolicies(db, { tenantIds: options.onlyTenants })
      .catch((error) => logError('stale-node policy failed', error))
      .finally(() => (running = undefined));
  }, options.intervalMs ?? STALE_TICK_MS);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await running;
  };
}
