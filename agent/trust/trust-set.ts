import { createPublicKey, X509Certificate, type JsonWebKey, type KeyObject } from 'node:crypto';
import { spkiPin } from '../../protocol/pins';
import type { EncryptionJwk } from '../seal-token';

/**
 * The trust set an agent holds (protocol.md "Trust rotation"): every key it accepts, by pin, the one in use
 * first. Version 0 is the set the install's pins make before any set arrived.
 */
export interface TrustSet {
  readonly version: number;
  readonly servingCaPins: readonly string[];
  readonly joinSigningKeyPins: readonly string[];
  readonly joinEncryptionKeyPins: readonly string[];
  /** Public P-256 JWKs of encryption keys; only those whose pin is in `joinEncryptionKeyPins` are sealed to. */
  readonly joinEncryptionJwks: readonly EncryptionJwk[];
  /** Trusted command-signing certificates, standard base64 DER. */
  readonly commandTrustBundle: readonly string[];
}

/** The pins an install wrote (config.toml, or the CLI agent's options): the root of every later set. */
export interface InstallPins {
  readonly servingCaPin?: string;
  readonly joinSigningKeyPin?: string;
  readonly joinEncryptionKeyPin?: string;
}

const PIN = /^sha256\/[A-Za-z0-9+/]{43}=$/;
const B64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
/** At most this many entries per list: a rotation trusts two keys of a kind at once. */
const MAX_KEYS = 8;
/** Command certificates are small; a bundle beyond this is not one the server sends. */
const MAX_BUNDLE = 16;
const MAX_CERTIFICATE_CHARS = 16_384;

/** The set the install's pins make: version 0, one pin of each kind that was given. */
export function installTrustSet(
  pins: InstallPins,
  extra: { joinEncryptionJwk?: EncryptionJwk; commandTrustBundle?: readonly string[] } = {},
): TrustSet {
  return {
    version: 0,
    servingCaPins: pins.servingCaPin ? [pins.servingCaPin] : [],
    joinSigningKeyPins: pins.joinSigningKeyPin ? [pins.joinSigningKeyPin] : [],
    joinEncryptionKeyPins: pins.joinEncryptionKeyPin ? [pins.joinEncryptionKeyPin] : [],
    joinEncryptionJwks: extra.joinEncryptionJwk ? [extra.joinEncryptionJwk] : [],
    commandTrustBundle: extra.commandTrustBundle ? [...extra.commandTrustBundle] : [],
  };
}

/** The pin of a public P-256 JWK, or null when it is not one. */
export function pinOfEncryptionJwk(value: unknown): { jwk: EncryptionJwk; pin: string } | null {
  if (typeof value !== 'object' || value === null) return null;
  const { kty, crv, x, y, d } = value as Record<string, unknown>;
  if (kty !== 'EC' || crv !== 'P-256' || typeof x !== 'string' || typeof y !== 'string' || d !== undefined) return null;
  try {
    const jwk: EncryptionJwk = { kty, crv, x, y };
    return { jwk, pin: spkiPin(createPublicKey({ key: jwk as JsonWebKey, format: 'jwk' })) };
  } catch {
    return null;
  }
}

/** The public key of a certificate (standard base64 DER) with its pin, or null when it does not parse. */
export function keyOfCertificate(b64Der: unknown): { key: KeyObject; pin: string } | null {
  if (typeof b64Der !== 'string' || b64Der.length > MAX_CERTIFICATE_CHARS || !B64.test(b64Der)) return null;
  try {
    const key = new X509Certificate(Buffer.from(b64Der, 'base64')).publicKey;
    return { key, pin: spkiPin(key) };
  } catch {
    return null;
  }
}

const pinList = (value: unknown, allowEmpty: boolean): string[] | null =>
  Array.isArray(value) &&
  value.length <= MAX_KEYS &&
  (allowEmpty || value.length > 0) &&
  value.every((pin) => typeof pin === 'string' && PIN.test(pin))
    ? [...new Set(value as string[])]
    : null;

const bundleOf = (value: unknown): string[] | null =>
  Array.isArray(value) &&
  value.length <= MAX_BUNDLE &&
  value.every((c) => typeof c === 'string' && c.length > 0 && c.length <= MAX_CERTIFICATE_CHARS && B64.test(c))
    ? [...(value as string[])]
    : null;

/**
 * Reads the fields of a trust set (a `trust` event's body, a join answer's `trust`, trust.json). `pinsOnly`:
 * a join or renewal answer's `trust` carries no JWKs and no bundle. Returns the set, or why it is malformed.
 */
export function parseTrustSet(value: unknown, options: { pinsOnly?: boolean } = {}): TrustSet | string {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'not an object';
  const v = value as Record<string, unknown>;
  if (!Number.isSafeInteger(v.version) || (v.version as number) < 0) return 'version is not a whole number';
  const servingCaPins = pinList(v.servingCaPins, false);
  if (!servingCaPins) return 'servingCaPins is not a list of pins';
  const joinSigningKeyPins = pinList(v.joinSigningKeyPins, false);
  if (!joinSigningKeyPins) return 'joinSigningKeyPins is not a list of pins';
  const joinEncryptionKeyPins = pinList(v.joinEncryptionKeyPins, false);
  if (!joinEncryptionKeyPins) return 'joinEncryptionKeyPins is not a list of pins';
  if (options.pinsOnly)
    return {
      version: v.version as number,
      servingCaPins,
      joinSigningKeyPins,
      joinEncryptionKeyPins,
      joinEncryptionJwks: [],
      commandTrustBundle: [],
    };
  if (!Array.isArray(v.joinEncryptionJwks) || v.joinEncryptionJwks.length > MAX_KEYS) return 'joinEncryptionJwks is not a list';
  const joinEncryptionJwks: EncryptionJwk[] = [];
  for (const entry of v.joinEncryptionJwks) {
    const found = pinOfEncryptionJwk(entry);
    if (!found) return 'joinEncryptionJwks holds something other than a public P-256 JWK';
    joinEncryptionJwks.push(found.jwk);
  }
  const commandTrustBundle = bundleOf(v.commandTrustBundle);
  if (!commandTrustBundle) return 'commandTrustBundle is not a list of b64 certificates';
  return { version: v.version as number, servingCaPins, joinSigningKeyPins, joinEncryptionKeyPins, joinEncryptionJwks, commandTrustBundle };
}

/** The key new seals use: the first JWK whose pin is trusted, in the order of `joinEncryptionKeyPins`. */
export function sealingJwk(set: TrustSet): EncryptionJwk | null {
  const byPin = new Map<string, EncryptionJwk>();
  for (const jwk of set.joinEncryptionJwks) {
    const found = pinOfEncryptionJwk(jwk);
    if (found) byPin.set(found.pin, found.jwk);
  }
  for (const pin of set.joinEncryptionKeyPins) {
    const jwk = byPin.get(pin);
    if (jwk) return jwk;
  }
  return null;
}
