import { createPublicKey, sign, type KeyObject } from 'node:crypto';
import type { SignedEnvelope } from '../../../protocol/envelope';
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
interface TrustedNodeCa {
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
  // A JoinCrypto made from a bundle carries its own; one without a serving CA pin gets the runtime's.
  const own = runtime.crypto.trust;
  if (own && own.servingCaPins.length) return own;
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
    if (own) state = { ...own, servingCaPins: [runtime.servingCaPin] };
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

const answerTrusts = new WeakMap<TrustState, JoinAnswerTrust>();

/** A join or renewal answer's `trust`, made once per trust state (every answer of a version shares it). */
export function joinAnswerTrust(trust: TrustState): JoinAnswerTrust {
  let answer = answerTrusts.get(trust);
  if (!answer) {
    answer = {
      version: trust.version,
      servingCaPins: trust.servingCaPins,
      joinSigningKeyPins: trust.signingKeys.map((k) => k.pin),
      joinEncryptionKeyPins: trust.encryptionKeys.map((k) => k.pin),
    };
    answerTrusts.set(trust, answer);
  }
  return answer;
}

/** A signed envelope that may carry one signature per trusted signing key (protocol.md "Answers"). */
type TrustedEnvelope = SignedEnvelope & { sigs?: { pin: string; sig: string }[] };

const es256 = (bytes: Buffer, key: KeyObject) => sign('sha256', bytes, { key, dsaEncoding: 'ieee-p1363' }).toString('base64url');

/**
 * A signed envelope of `body` under every trusted signing key: `body` serialized once, `sig` by the key in
 * use, and, only while a signing-key rotation is prepared or active (more than one trusted key), `sigs` with
 * one signature per trusted key, the key in use first (protocol.md "Answers"). Outside a rotation the envelope
 * is byte for byte what `signEnvelope` makes, at the cost of one signature.
 */
export function signTrusted(trust: TrustState, body: object): TrustedEnvelope {
  const bytes = Buffer.from(JSON.stringify(body), 'utf8');
  const [inUse, ...others] = trust.signingKeys;
  if (!inUse) throw new Error('The trust state holds no signing key');
  const sig = es256(bytes, inUse.key);
  const envelope: TrustedEnvelope = { body: bytes.toString('base64url'), sig };
  if (others.length) envelope.sigs = [{ pin: inUse.pin, sig }, ...others.map((k) => ({ pin: k.pin, sig: es256(bytes, k.key) }))];
  return envelope;
}
