import { createPublicKey, type KeyObject } from 'node:crypto';
import { signEnvelope, type SignedEnvelope } from '../../../protocol/envelope';
import { spkiPin } from '../../../protocol/pins';
import type { JoinCrypto, PublicEcJwk } from '../issuance/join-crypto';

/** A signing key JoinService trusts, with its pin and its certificate (standard base64 DER). */
export interface TrustedSigningKey {
  pin: string;
  key: KeyObject;
  certificate: string;
}

/** A join-encryption key whose seals open (private), with its pin and public JWK. */
export interface TrustedEncryptionKey {
  pin: string;
  key: KeyObject;
  jwk: PublicEcJwk;
}

/** A node CA whose certificates the gateway and JoinService accept (standard base64 DER), with its pin. */
export interface TrustedNodeCa {
  pin: string;
  certificate: string;
}

/**
 * What the deployment trusts at one trust version: every list holds the key in use first, then the other key
 * of a rotation that is prepared or active (at most two entries each). Built from the stored PKI by the
 * rotation module; `trustStateOf` derives a one-key state from a bare JoinCrypto (no rotation).
 */
export interface TrustState {
  /** Increases with every rotation step; 1 before any. */
  version: number;
  servingCaPins: string[];
  signingKeys: TrustedSigningKey[];
  encryptionKeys: TrustedEncryptionKey[];
  nodeCas: TrustedNodeCa[];
  /** Every trusted command-signing certificate, the one in use first (standard base64 DER). */
  commandTrustBundle: string[];
}

/** The trust set's body (protocol.md "Trust rotation"), for one node. */
export interface TrustSetBody {
  status: 'trust';
  nodeId: string;
  version: number;
  servingCaPins: string[];
  joinSigningKeyPins: string[];
  joinEncryptionKeyPins: string[];
  joinEncryptionJwks: PublicEcJwk[];
  commandTrustBundle: string[];
}

/** A join answer's `trust` (protocol.md "Answers"). */
export interface JoinAnswerTrust {
  version: number;
  servingCaPins: string[];
  joinSigningKeyPins: string[];
  joinEncryptionKeyPins: string[];
}

const derived = new WeakMap<JoinCrypto, TrustState>();

/**
 * The trust state of a runtime: its own when the PKI source built one (rotations), else the one-key state of
 * `crypto` at version 1 (tests that hand a bare JoinCrypto, a deployment that never rotated).
 */
export function trustStateOf(runtime: { crypto: JoinCrypto; servingCaPin: string; trust?: TrustState }): TrustState {
  if (runtime.trust) return runtime.trust;
  let state = derived.get(runtime.crypto);
  if (!state) {
    const crypto = runtime.crypto;
    state = {
      version: 1,
      servingCaPins: [runtime.servingCaPin],
      signingKeys: [{ pin: crypto.signingKeyPin, key: crypto.signingKey, certificate: crypto.signingCertificate }],
      encryptionKeys: [{ pin: crypto.encryptionKeyPin, key: crypto.encryptionKey, jwk: crypto.encryptionPublicJwk }],
      nodeCas: [{ pin: spkiPin(createPublicKey(crypto.nodeCa.key)), certificate: crypto.nodeCaCertificate }],
      commandTrustBundle: crypto.commandTrustBundle,
    };
    derived.set(crypto, state);
  }
  return state;
}

/** The trust set for `nodeId` (the body of a `trust` event). */
export function trustSetBody(trust: TrustState, nodeId: string): TrustSetBody {
  return {
    status: 'trust',
    nodeId,
    version: trust.version,
    servingCaPins: trust.servingCaPins,
    joinSigningKeyPins: trust.signingKeys.map((k) => k.pin),
    joinEncryptionKeyPins: trust.encryptionKeys.map((k) => k.pin),
    joinEncryptionJwks: trust.encryptionKeys.map((k) => k.jwk),
    commandTrustBundle: trust.commandTrustBundle,
  };
}

/** A join or renewal answer's `trust`. */
export function joinAnswerTrust(trust: TrustState): JoinAnswerTrust {
  return {
    version: trust.version,
    servingCaPins: trust.servingCaPins,
    joinSigningKeyPins: trust.signingKeys.map((k) => k.pin),
    joinEncryptionKeyPins: trust.encryptionKeys.map((k) => k.pin),
  };
}

/**
 * A signed envelope of `body` under every trusted signing key: `sig` by the key in use, and, while a
 * signing-key rotation is prepared or active, `sigs` with one signature per trusted key (protocol.md "Answers").
 */
export function signTrusted(trust: TrustState, body: object): SignedEnvelope & { sigs?: { pin: string; sig: string }[] } {
  // Stub: the rotation module replaces this with the multi-key signature (one serialization, one sign per key).
  return signEnvelope(body, trust.signingKeys[0]!.key);
}
