import type { KeyObject } from 'node:crypto';
import type { Db } from '../db/client';
import { logError } from '../log';
import { joinCryptoFromBundle, type JoinCrypto } from '../pki/issuance/join-crypto';
import { installPins } from '../pki/pins-summary';
import { hasPki, loadPki } from '../pki/bundle/store';
import { getRootTenant } from '../tenants/tenants';
import type { TrustState } from '../pki/rotation/trust-state';

const RETRY_MISSING_MS = 5_000;

/** What the server holds of the PKI at run time: JoinService's keys and the serving CA's pin. */
export interface PkiRuntime {
  crypto: JoinCrypto;
  servingCaPin: string;
  /** Every key trusted at the current trust version (rotations); `trustStateOf` fills it in when absent. */
  trust?: TrustState;
  /** The serving CA in use (PEM), which issues the gateways' certificates; set by the PKI source. */
  servingCa?: { certificatePem: string; privateKeyPem: string };
  /** The command-signing key in use (its certificate is first in the trust state's commandTrustBundle). */
  commandSigningKey?: KeyObject;
}

/**
 * JoinService's keys (`pki.join`), opened once from the stored PKI bundle with the secret
 * (BETTER_COMPUTE_SECRET). A deployment without a bundle or a secret gets null (every join is
 * INVALID_CONFIG); that answer is re-checked every few seconds, so `pki init` on a running server takes
 * effect without a restart. The composition root (server/boot/services.ts) makes one per process.
 */
export class PkiSource {
  private value: PkiRuntime | null = null;
  private at = 0;
  private pending?: Promise<PkiRuntime | null>;

  constructor(
    private readonly db: Db,
    private readonly secret: () => string | undefined = () => process.env.BETTER_COMPUTE_SECRET,
  ) {}

  async load(): Promise<PkiRuntime | null> {
    if (this.value) return this.value;
    if (this.at && Date.now() - this.at < RETRY_MISSING_MS) return this.pending ?? this.value;
    const pending = this.open();
    this.pending = pending;
    this.at = Date.now();
    const value = await pending;
    this.value = value;
    this.pending = undefined;
    this.at = Date.now();
    return value;
  }

  async loadCrypto(): Promise<JoinCrypto | null> {
    return (await this.load())?.crypto ?? null;
  }

  private async open(): Promise<PkiRuntime | null> {
    const secret = this.secret();
    if (!secret || !(await hasPki(this.db))) return null;
    try {
      const bundle = await loadPki(this.db, secret);
      return { crypto: joinCryptoFromBundle(bundle), servingCaPin: installPins(bundle).servingCaPin };
    } catch (error) {
      logError('JoinService keys could not be loaded', error);
      return null;
    }
  }
}

const sources = new WeakMap<Db, PkiSource>();

/**
 * The PKI runtime of `db`'s deployment, for callers that hold only a database client (the install script's
 * procedure): one PkiSource per client, so its keys are opened once.
 */
export function loadPkiRuntime(db: Db): Promise<PkiRuntime | null> {
  let source = sources.get(db);
  if (!source) sources.set(db, (source = new PkiSource(db)));
  return source.load();
}

/** The root tenant's id, cached once found: it receives refusal events before a caller proved anything. */
export function rootTenantIdOf(db: Db): () => Promise<string | null> {
  let id: string | undefined;
  return async () => {
    if (id) return id;
    const root = await getRootTenant(db);
    if (root) id = root.id;
    return root?.id ?? null;
  };
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

/** How the line printed for BETTER_COMPUTE_JOIN_STATS starts. */
export const JOIN_STATS_PREFIX = 'join-pipeline-stats ';
