import type { KeyObject } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import type { GatewayTarget } from '../renew/gateway-client';
import type { LoadedIdentity, NodeLoadedIdentity } from '../renew/identity';
import { runSessionLoop } from '../session/loop';

interface SessionSimStats {
  /** Machines with a session open now. */
  connected: number;
  /** Sessions opened so far (reconnects and moves after a renewal included). */
  opened: number;
  /** Machines whose loop ended (refused three times, expired). */
  stopped: number;
}

/**
 * `dev --sim N --sessions`: keeps a session open for each simulated machine, exactly as `agent run` does
 * (runSessionLoop: jittered reconnects, renewals on the session's connection), identities in memory, until
 * `signal` aborts.
 */
export async function keepSessions(options: {
  machines: LoadedIdentity[];
  target: GatewayTarget & { basePath?: string };
  agentVersion: string;
  signal: AbortSignal;
  /** The join-signing key every welcome must verify under. */
  signingKey?: KeyObject;
  onChange?: (stats: SessionSimStats) => void;
}): Promise<SessionSimStats> {
  const stats: SessionSimStats = { connected: 0, opened: 0, stopped: 0 };
  // Every machine's loop listens on the one signal (10,000 at most), which is no leak.
  setMaxListeners(0, options.signal);
  await Promise.all(
    options.machines.map(async (initial) => {
      let current: NodeLoadedIdentity = initial;
      let open = false;
      await runSessionLoop({
        identityDir: '(memory)',
        ...options.target,
        agentVersion: options.agentVersion,
        signingKey: options.signingKey,
        signal: options.signal,
        log: () => {},
        store: { load: async () => current, replace: async (identity) => void (current = identity) },
        onSession: (session) => {
          if (session) stats.opened++;
          if (Boolean(session) !== open) stats.connected += session ? 1 : -1;
          open = Boolean(session);
          options.onChange?.(stats);
        },
      });
      if (open) stats.connected--;
      stats.stopped++;
      options.onChange?.(stats);
    }),
  );
  return stats;
}
