import { createPrivateKey, type KeyObject } from 'node:crypto';
import type { Db } from '../db/client';
import { ChannelListener } from '../db/listen';
import { logError } from '../log';
import { joinCryptoFromBundle, type JoinCrypto } from '../pki/issuance/join-crypto';
import { installPins } from '../pki/pins-summary';
import type { PkiBundle } from '../pki/bundle/bundle';
import { openPkiBundle } from '../pki/bundle/seal';
import { PKI_BUNDLE_ID } from '../pki/bundle/store';
import { servingCaChainOf } from '../pki/rotation/cross-certificate';
import { PKI_CHANGED_CHANNEL } from '../pki/rotation/rotation-sql';
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
  /**
   * PEM, in order: what a gateway sends after its leaf (the serving CA in use, or while its rotation is active the
   * cross-certificate and the previous CA; `servingCaChainOf`). Absent: the serving CA alone.
   */
  servingCaChain?: string[];
  /** The command-signing key in use (its certificate is first in the trust state's commandTrustBundle). */
  commandSigningKey?: KeyObject;
  /** The other command-signing key while its rotation is prepared or active: commands carry `sigs` by both. */
  commandOtherSigningKey?: KeyObject;
}

/** How often a PKI source checks `pki_bundles.trust_version` (the LISTEN on `pki_changed` is faster). */
export const PKI_POLL_MS = 2_000;

/**
 * JoinService's keys (`pki.join`), opened from the stored PKI bundle with the secret (BETTER_COMPUTE_SECRET).
 * A deployment without a bundle or a secret gets null (every join is INVALID_CONFIG); that answer is re-checked
 * every few seconds, so `pki init` on a running server takes effect without a restart. The composition root
 * (server/boot/services.ts) makes one per process.
 *
 * Trust rotation: the runtime is kept until `pki_bundles.trust_version` changes. `load()` never waits on the
 * database once a runtime is loaded: when the last check is older than {@link PKI_POLL_MS} it starts one in the
 * background (one small query) and answers with the runtime it holds; a changed version opens the bundle again
 * (scrypt, about 0.3 s) and swaps in a new runtime, built once per version. While anyone listens
 * (`onChange`), or from the first load with `watch` (a server process's source), the source also checks every
 * {@link PKI_POLL_MS} by itself and, given `databaseUrl`, LISTENs on `pki_changed`, so every instance follows
 * a step within seconds.
 */
export class PkiSource {
  private value: PkiRuntime | null = null;
  /** The `trust_version` of the row the runtime was opened from. */
  private version = 0;
  private at = 0;
  private pending?: Promise<PkiRuntime | null>;
  private checking?: Promise<PkiRuntime | null>;
  private readonly listeners = new Set<(runtime: PkiRuntime) => void>();
  private timer?: NodeJS.Timeout;
  private channel?: ChannelListener<string>;

  constructor(
    private readonly db: Db,
    private readonly secret: () => string | undefined = () => process.env.BETTER_COMPUTE_SECRET,
    private readonly options: {
      /** Where to LISTEN on `pki_changed` (none: polling only). */
      databaseUrl?: string;
      pollMs?: number;
      /** Check every `pollMs` and on `pki_changed` from the first load on, listeners or not (a server's source). */
      watch?: boolean;
    } = {},
  ) {}

  async load(): Promise<PkiRuntime | null> {
    if (this.options.watch) this.startWatching();
    if (this.value) {
      if (Date.now() - this.at >= (this.options.pollMs ?? PKI_POLL_MS)) void this.check();
      return this.value;
    }
    if (this.at && Date.now() - this.at < RETRY_MISSING_MS) return this.pending ?? this.value;
    return this.reload();
  }

  async loadCrypto(): Promise<JoinCrypto | null> {
    return (await this.load())?.crypto ?? null;
  }

  /**
   * Reads the trust version now and, when it differs from the loaded one, loads the new runtime (telling the
   * `onChange` listeners). Resolves with the runtime current afterwards. Never throws: a failed check is logged
   * and the runtime held is kept.
   */
  check(): Promise<PkiRuntime | null> {
    // A PKI that would not open is tried again only every few seconds (as `load` does), not on every check.
    if (!this.value && this.at && Date.now() - this.at < RETRY_MISSING_MS) return Promise.resolve(null);
    this.checking ??= (async () => {
      try {
        const row = await this.db.pkiBundle.findUnique({ where: { id: PKI_BUNDLE_ID }, select: { trustVersion: true } });
        if (!row || (this.value && row.trustVersion === this.version)) {
          this.at = Date.now();
          return this.value;
        }
        return await this.reload();
      } catch (error) {
        logError('could not check the PKI trust version', error);
        return this.value;
      } finally {
        this.checking = undefined;
      }
    })();
    return this.checking;
  }

  /**
   * Calls `listener` with every new runtime (a rotation step, or the PKI appearing), and, while any listener
   * is registered, checks every {@link PKI_POLL_MS} and on `pki_changed`. Returns the unsubscribe.
   */
  onChange(listener: (runtime: PkiRuntime) => void): () => void {
    this.listeners.add(listener);
    this.startWatching();
    return () => {
      this.listeners.delete(listener);
      if (!this.listeners.size && !this.options.watch) void this.close();
    };
  }

  private startWatching() {
    if (!this.timer) {
      this.timer = setInterval(() => void this.check(), this.options.pollMs ?? PKI_POLL_MS);
      this.timer.unref();
    }
    if (!this.channel && this.options.databaseUrl) {
      this.channel = new ChannelListener(this.options.databaseUrl, PKI_CHANGED_CHANNEL, (payload) => payload);
      this.channel.subscribe(() => void this.check()).catch((error: unknown) => logError('could not LISTEN on pki_changed', error));
    }
  }

  /** Stops the checks and the LISTEN (the runtime held stays; a later load or listener starts them again). */
  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    const channel = this.channel;
    this.channel = undefined;
    await channel?.close();
  }

  private reload(): Promise<PkiRuntime | null> {
    this.pending ??= (async () => {
      try {
        const opened = await this.open();
        this.at = Date.now();
        if (!opened) return this.value;
        const changed = opened.version !== this.version;
        this.value = opened.runtime;
        this.version = opened.version;
        if (changed) for (const listener of this.listeners) callSafely(listener, opened.runtime);
        return this.value;
      } finally {
        this.pending = undefined;
      }
    })();
    return this.pending;
  }

  private async open(): Promise<{ runtime: PkiRuntime; version: number } | null> {
    const secret = this.secret();
    if (!secret) return null;
    try {
      const row = await this.db.pkiBundle.findUnique({ where: { id: PKI_BUNDLE_ID } });
      if (!row) return null;
      const bundle = openPkiBundle(row.sealed, secret);
      if (bundle.trustDomain !== row.trustDomain) throw new Error('the stored PKI bundle does not match its row (trust domain differs)');
      return { runtime: pkiRuntimeOf(bundle), version: row.trustVersion };
    } catch (error) {
      logError('JoinService keys could not be loaded', error);
      return null;
    }
  }
}

function callSafely(listener: (runtime: PkiRuntime) => void, runtime: PkiRuntime) {
  try {
    listener(runtime);
  } catch (error) {
    logError('a PKI change listener failed', error);
  }
}

/** The runtime of an opened bundle: its keys in use, its trust state, the serving CA and the command key. */
export function pkiRuntimeOf(bundle: PkiBundle): PkiRuntime {
  const crypto = joinCryptoFromBundle(bundle);
  return {
    crypto,
    servingCaPin: installPins(bundle).servingCaPin,
    trust: crypto.trust,
    servingCa: { certificatePem: bundle.servingCa.certificatePem, privateKeyPem: bundle.servingCa.privateKeyPem },
    servingCaChain: servingCaChainOf(bundle),
    commandSigningKey: createPrivateKey(bundle.commandCa.privateKeyPem),
    ...(bundle.rotations?.['command-signing']
      ? { commandOtherSigningKey: createPrivateKey(bundle.rotations['command-signing'].privateKeyPem) }
      : {}),
  };
}

const sources = new WeakMap<Db, PkiSource>();

/**
 * The PKI runtime of `db`'s deployment, for callers that hold only a database client (the install script's
 * procedure): one PkiSource per client, so its keys are opened once.
 */
export function loadPkiRuntime(db: Db): Promise<PkiRuntime | null> {
  return sourceOf(db).load();
}

/**
 * {@link loadPkiRuntime}, checked against the stored trust version first (one small query): what outlives the
 * call, such as an install script's pins, comes from the keys in use right now, never from a runtime a few
 * seconds behind a rotation step.
 */
export async function loadCurrentPkiRuntime(db: Db): Promise<PkiRuntime | null> {
  const source = sourceOf(db);
  return (await source.load()) ? source.check() : null;
}

function sourceOf(db: Db): PkiSource {
  let source = sources.get(db);
  if (!source) sources.set(db, (source = new PkiSource(db)));
  return source;
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
