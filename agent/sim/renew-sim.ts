import { parseIdentity, type LoadedIdentity } from '../renew/identity';
import { RenewRefusedError, renewOnce } from '../renew/renew';
import { backoffMs, renewalDelayMs, sleep } from '../renew/schedule';
import type { GatewayTarget } from '../renew/gateway-client';

export interface RenewSimStats {
  renewed: number;
  refused: number;
  failed: number;
}

/**
 * Keeps simulated machines renewing, each as `agent run` does (about 60% of the lifetime, jittered; capped
 * backoff on failures), in memory, until `signal` aborts. A machine refused three times in a row stops,
 * as the agent would.
 */
export async function keepRenewing(options: {
  machines: LoadedIdentity[];
  target: GatewayTarget & { basePath?: string };
  signal: AbortSignal;
  onEvent?: (event: 'renewed' | 'refused' | 'failed', machine: LoadedIdentity, stats: RenewSimStats) => void;
}): Promise<RenewSimStats> {
  const stats: RenewSimStats = { renewed: 0, refused: 0, failed: 0 };
  await Promise.all(
    options.machines.map(async (initial) => {
      let current = initial;
      let attempt = 0;
      let refusals = 0;
      while (!options.signal.aborted && refusals < 3) {
        const wait = attempt === 0 ? renewalDelayMs(current.notBefore, current.notAfter, Date.now()) : backoffMs(attempt - 1);
        if (!(await sleep(wait, options.signal))) break;
        try {
          const renewed = await renewOnce(current, options.target);
          current = parseIdentity(renewed.privateKeyPem, renewed);
          attempt = 0;
          refusals = 0;
          stats.renewed++;
          options.onEvent?.('renewed', current, stats);
        } catch (error) {
          attempt++;
          if (error instanceof RenewRefusedError) {
            refusals++;
            stats.refused++;
            options.onEvent?.('refused', current, stats);
          } else {
            stats.failed++;
            options.onEvent?.('failed', current, stats);
          }
        }
      }
    }),
  );
  return stats;
}
