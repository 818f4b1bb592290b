import type { KeyObject } from 'node:crypto';
import { readFile, rename, unlink } from 'node:fs/promises';
import path from 'node:path';
import { spkiPin } from '../../protocol/pins';
import { syncDirectory, writeTemporary } from '../identity-store';
import type { EncryptionJwk } from '../seal-token';
import { verifyTrustedEnvelope } from './envelope';
import {
  installTrustSet,
  keyOfCertificate,
  parseTrustSet,
  pinOfEncryptionJwk,
  sealingJwk,
  type InstallPins,
  type TrustSet,
} from './trust-set';

/** The trust file beside identity.json (0600). */
export const TRUST_FILE = 'trust.json';

/** What trust.json holds: the set, and the install pins it grew from (a re-install with other pins starts over). */
interface TrustFile extends TrustSet {
  format: 1;
  installPins: InstallPins;
  updatedAt: string;
}

/** Test seam: runs after the temporary file is flushed and before it is renamed over trust.json. */
interface TrustWriteHooks {
  beforeRename?: () => void | Promise<void>;
}

/**
 * Writes trust.json atomically: a new 0600 file beside it, flushed, renamed over it, then the directory
 * flushed. A crash at any point leaves the old file or the new one, never a mix.
 */
async function writeTrustFile(dir: string, set: TrustSet, installPins: InstallPins, hooks: TrustWriteHooks = {}): Promise<void> {
  const file = path.join(dir, TRUST_FILE);
  const record: TrustFile = { format: 1, ...copy(set), installPins, updatedAt: new Date().toISOString() };
  const temporary = await writeTemporary(file, `${JSON.stringify(record, null, 2)}\n`);
  try {
    await hooks.beforeRename?.();
    await rename(temporary, file);
  } catch (error) {
    await unlink(temporary).catch(() => {});
    throw error;
  }
  await syncDirectory(dir);
}

const copy = (set: TrustSet): TrustSet => ({
  version: set.version,
  servingCaPins: [...set.servingCaPins],
  joinSigningKeyPins: [...set.joinSigningKeyPins],
  joinEncryptionKeyPins: [...set.joinEncryptionKeyPins],
  joinEncryptionJwks: [...set.joinEncryptionJwks],
  commandTrustBundle: [...set.commandTrustBundle],
});

/**
 * Reads trust.json: the set and its install pins, null when there is none.
 *
 * @throws Error when it exists but cannot be read or is malformed.
 */
export async function readTrustFile(dir: string): Promise<{ set: TrustSet; installPins: InstallPins } | null> {
  let text: string;
  try {
    text = await readFile(path.join(dir, TRUST_FILE), 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
  let record: unknown;
  try {
    record = JSON.parse(text);
  } catch {
    throw new Error(`${TRUST_FILE} is not JSON`);
  }
  const set = parseTrustSet(record);
  if (typeof set === 'string') throw new Error(`${TRUST_FILE} is malformed: ${set}`);
  const pins = (record as { installPins?: unknown }).installPins;
  const installPins = typeof pins === 'object' && pins !== null ? (pins as InstallPins) : {};
  return { set, installPins };
}

const PIN_FIELDS = ['servingCaPin', 'joinSigningKeyPin', 'joinEncryptionKeyPin'] as const;
/** Two sets of install pins disagree when a pin both name differs. */
const samePins = (a: InstallPins, b: InstallPins) => PIN_FIELDS.every((f) => a[f] === undefined || b[f] === undefined || a[f] === b[f]);
const mergedPins = (a: InstallPins, b: InstallPins): InstallPins => ({
  ...b,
  ...Object.fromEntries(PIN_FIELDS.filter((f) => a[f]).map((f) => [f, a[f]])),
});

interface OpenTrustStoreOptions {
  /** Where identity.json lives; trust.json is kept beside it. null: in memory only (simulated agents). */
  dir: string | null;
  /** The install's pins (config.toml, the CLI's options): the set at version 0 when no trust.json is held. */
  install: InstallPins;
  /** `join-encryption.jwk` of the install, when it matches its pin. */
  joinEncryptionJwk?: EncryptionJwk;
  log?: (line: string) => void;
  hooks?: TrustWriteHooks;
}

/**
 * The trust set this agent holds (protocol.md "Trust rotation"), durable in trust.json, and the public keys it
 * learned for the signing pins of the set. Sets are applied one at a time, in arrival order.
 */
export class TrustStore {
  #set: TrustSet;
  #installPins: InstallPins;
  readonly #dir: string | null;
  readonly #log: (line: string) => void;
  readonly #hooks: TrustWriteHooks;
  /**
   * Signing public keys learned (from the well-known document or given), by pin, shared by every store of the
   * process: a pin is the hash of its key, so a key found here is the key of that pin whoever learned it, and
   * a store uses it only for a pin its set trusts. Thousands of simulated agents then read the well-known
   * document once, not once each.
   */
  static readonly #keys = new Map<string, KeyObject>();
  #queue: Promise<unknown> = Promise.resolve();

  private constructor(options: OpenTrustStoreOptions, set: TrustSet, installPins: InstallPins) {
    this.#dir = options.dir;
    this.#log = options.log ?? ((line) => console.error(line));
    this.#hooks = options.hooks ?? {};
    this.#set = set;
    this.#installPins = installPins;
  }

  /**
   * Loads trust.json from `dir`, or starts from the install's pins (version 0) when there is none. A file that
   * cannot be read, or that grew from other install pins (the install ran again with new pins), is set aside
   * for the install's pins, with one line saying why.
   */
  static async open(options: OpenTrustStoreOptions): Promise<TrustStore> {
    const log = options.log ?? ((line: string) => console.error(line));
    const initial = installTrustSet(options.install, { joinEncryptionJwk: options.joinEncryptionJwk });
    if (!options.dir) return new TrustStore(options, initial, options.install);
    let held: Awaited<ReturnType<typeof readTrustFile>> = null;
    try {
      held = await readTrustFile(options.dir);
    } catch (error) {
      log(`agent: ignoring ${path.join(options.dir, TRUST_FILE)} (${(error as Error).message}); trusting the install's pins`);
    }
    if (held && !samePins(held.installPins, options.install)) {
      log(
        `agent: ${path.join(options.dir, TRUST_FILE)} grew from other install pins than this configuration's; trusting the install's pins`,
      );
      held = null;
    }
    if (!held) return new TrustStore(options, initial, options.install);
    const set = options.joinEncryptionJwk
      ? { ...held.set, joinEncryptionJwks: [...held.set.joinEncryptionJwks, options.joinEncryptionJwk] }
      : held.set;
    return new TrustStore(options, set, mergedPins(options.install, held.installPins));
  }

  /** The set held now. */
  get set(): TrustSet {
    return this.#set;
  }

  /** The version held (0: none received yet), as Hello reports it. */
  get version(): number {
    return this.#set.version;
  }

  /** The serving CA pins a gateway chain may verify up to. */
  servingCaPins(): readonly string[] {
    return this.#set.servingCaPins;
  }

  /** The learned public keys of the trusted signing pins. */
  signingKeys(): ReadonlyMap<string, KeyObject> {
    const keys = new Map<string, KeyObject>();
    for (const pin of this.#set.joinSigningKeyPins) {
      const key = TrustStore.#keys.get(pin);
      if (key) keys.set(pin, key);
    }
    return keys;
  }

  /** Whether a trusted signing pin has no known key yet (the well-known document publishes it). */
  lacksSigningKeys(): boolean {
    return this.#set.joinSigningKeyPins.some((pin) => !TrustStore.#keys.has(pin));
  }

  /** Keeps a signing public key when its pin is trusted; returns whether it was. */
  learnSigningKey(key: KeyObject): boolean {
    const pin = spkiPin(key);
    if (!this.#set.joinSigningKeyPins.includes(pin)) return false;
    if (!TrustStore.#keys.has(pin)) {
      // A rotation trusts two keys at a time; a long-lived process keeps only the recent ones.
      if (TrustStore.#keys.size >= 64) TrustStore.#keys.delete(TrustStore.#keys.keys().next().value!);
      TrustStore.#keys.set(pin, key);
    }
    return true;
  }

  /** {@link learnSigningKey} for a certificate (standard base64 DER), as `join.signingCertificate` carries it. */
  learnSigningCertificate(b64Der: unknown): boolean {
    const found = keyOfCertificate(b64Der);
    return found !== null && this.learnSigningKey(found.key);
  }

  /** Keeps an encryption JWK (in memory) when its pin is trusted; returns whether it was. */
  learnEncryptionJwk(value: unknown): boolean {
    const found = pinOfEncryptionJwk(value);
    if (!found || !this.#set.joinEncryptionKeyPins.includes(found.pin)) return false;
    if (!this.#set.joinEncryptionJwks.some((jwk) => jwk.x === found.jwk.x && jwk.y === found.jwk.y))
      this.#set = { ...this.#set, joinEncryptionJwks: [...this.#set.joinEncryptionJwks, found.jwk] };
    return true;
  }

  /** The key new seals use: the first JWK whose pin is trusted, or null when none is known. */
  sealingJwk(): EncryptionJwk | null {
    return sealingJwk(this.#set);
  }

  /**
   * A `trust` session event: applied only when its envelope verifies under a signing key trusted now, its
   * `nodeId` is `nodeId` and its version is higher than the one held. Anything else is ignored with one line
   * saying why (never the envelope). Resolves to whether the set was applied.
   */
  acceptEvent(envelope: unknown, nodeId: string, source = 'trust event'): Promise<boolean> {
    return this.#serially(async () => {
      let body: unknown;
      try {
        body = verifyTrustedEnvelope(envelope, this.signingKeys());
      } catch (error) {
        return this.#ignore(source, (error as Error).message);
      }
      const b = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
      if (b.status !== 'trust') return this.#ignore(source, 'the body is not a trust set');
      if (b.nodeId !== nodeId) return this.#ignore(source, `it is for another node than ${nodeId}`);
      const set = parseTrustSet(b);
      if (typeof set === 'string') return this.#ignore(source, `malformed: ${set}`);
      return this.#apply(set, source);
    });
  }

  /**
   * A join or renewal answer's `trust` (its envelope already verified under a trusted key, its `nodeId`
   * already checked): pins only, so the JWKs held are kept and the bundle is the answer's own.
   */
  acceptAnswerTrust(trust: unknown, answer: { commandTrustBundle?: readonly string[] }, source: string): Promise<boolean> {
    return this.#serially(async () => {
      const set = parseTrustSet(trust, { pinsOnly: true });
      if (typeof set === 'string') return this.#ignore(source, `malformed: ${set}`);
      // Every answer carries the set: one the agent holds already is nothing to report.
      if (set.version <= this.#set.version) return false;
      return this.#apply(
        {
          ...set,
          joinEncryptionJwks: this.#set.joinEncryptionJwks,
          commandTrustBundle: answer.commandTrustBundle ? [...answer.commandTrustBundle] : this.#set.commandTrustBundle,
        },
        source,
      );
    });
  }

  async #apply(set: TrustSet, source: string): Promise<boolean> {
    if (set.version <= this.#set.version)
      return this.#ignore(source, `version ${set.version} is not newer than the held version ${this.#set.version}`);
    if (this.#dir) {
      try {
        await writeTrustFile(this.#dir, set, this.#installPins, this.#hooks);
      } catch (error) {
        // Not applied either: what is used must be what a restart would load.
        this.#log(`agent: could not store trust set version ${set.version} from ${source}: ${(error as Error).message}`);
        return false;
      }
    }
    this.#set = set;
    this.#log(`agent: trust set version ${set.version} from ${source} applied${this.#dir ? ` and stored in ${TRUST_FILE}` : ''}`);
    return true;
  }

  #ignore(source: string, why: string): false {
    this.#log(`agent: ignored a trust set from ${source}: ${why}`);
    return false;
  }

  #serially<T>(run: () => Promise<T>): Promise<T> {
    const next = this.#queue.then(run, run);
    this.#queue = next.catch(() => {});
    return next;
  }
}
