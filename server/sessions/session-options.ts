import type { KeyObject } from 'node:crypto';
import type pg from 'pg';
import type { JoinCrypto } from '../pki/issuance/join-crypto';
import type { TrustState } from '../pki/rotation/trust-state';
import type { SessionRefusalLimit } from './refusals';
import type { SessionSettings } from './settings';

export interface SessionServiceOptions {
  pool: pg.Pool;
  /**
   * JoinService's keys (the welcome is signed with the join-signing key), the serving CA pin and the trust
   * state (trustStateOf): read on every call, since a rotation swaps the runtime.
   */
  loadRuntime: () => Promise<{ crypto: JoinCrypto; servingCaPin: string; trust?: TrustState; commandSigningKey?: KeyObject } | null>;
  loadRootTenantId: () => Promise<string | null>;
  settings: SessionSettings;
  refusalLimit?: SessionRefusalLimit;
  /**
   * This process's event-loop lag now, in ms (eventLoopLag in hello-gate.ts unless given; tests inject one):
   * above HELLO_LAG_MS, at most MAX_HELLO_DECISIONS_LAGGING Hellos are decided at once.
   */
  lagMs?: () => number;
}

/** What the HTTP layer hands over, as for a renewal: the body, the gateway's headers and the path. */
export interface SessionCall {
  body: Buffer | null;
  vouch: string | undefined;
  peer: string | undefined;
  path: string;
}
