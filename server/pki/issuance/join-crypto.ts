import { createPrivateKey, createPublicKey, X509Certificate, type KeyObject } from 'node:crypto';
import { DomainError } from '../../../protocol/errors';
import type { PkiBundle } from '../bundle/bundle';
import { isP256PrivateKey, loadIssuingCa, parsePair } from '../ca/issuing-ca';
import { prepareIssuer, type NodeCertificateIssuer } from './node-certificate-issuer';
import { spkiPin } from '../../../protocol/pins';
import { isSelfSigned } from '../bundle/signing-certificate';
import { parseTrustDomain } from '../ca/trust-domain';
import { buildTrustState } from '../rotation/trust-build';
import type { TrustState } from '../rotation/trust-state';

/** A public P-256 JWK with exactly the members a daemon needs to seal a token. */
export interface PublicEcJwk {
  kty: 'EC';
  crv: 'P-256';
  x: string;
  y: string;
}

/**
 * JoinService's keys, parsed once at startup for the hot path (`pki.join` in the server options). Holds private
 * keys: never log it or return it from an API.
 */
export interface JoinCrypto {
  trustDomain: string;
  /** The node CA, ready for `issueNodeCertificate` (its derived bytes are already cached). */
  nodeCa: Required<NodeCertificateIssuer>;
  /** The node CA certificate, standard base64 DER (the last entry of every `certificateChain`). */
  nodeCaCertificate: string;
  /** The node CA's pin, recorded as `node_certs.ca_pin` on every certificate it issues. */
  nodeCaPin: string;
  /** Signs JoinResponse envelopes (ES256). */
  signingKey: KeyObject;
  /** The signing key's certificate, standard base64 DER (the well-known `signingCertificate`). */
  signingCertificate: string;
  signingKeyPin: string;
  /** Opens sealed tokens (ECDH-ES+A256KW); private. */
  encryptionKey: KeyObject;
  encryptionPublicJwk: PublicEcJwk;
  encryptionKeyPin: string;
  /**
   * Every encryption key a seal may be made to: the one in use first, then the other key of a rotation that is
   * prepared or active (seals to either open).
   */
  encryptionKeys: KeyObject[];
  /** The command-signing trust bundle, standard base64 DER certificates. */
  commandTrustBundle: string[];
  /** Everything trusted at this trust version (server/pki/rotation/trust-build.ts), built with these keys. */
  trust: TrustState;
}

/** What `pkiJoinCrypto` takes: PEM as the PKI bundle stores it (a PkiBundle itself fits). */
interface JoinCryptoInput {
  trustDomain: string;
  nodeCa: { certificatePem: string; privateKeyPem: string };
  signingKey: { certificatePem: string; privateKeyPem: string };
  encryptionKey: { privateKeyPem: string };
  /** Base64 DER or PEM certificates; empty when absent. */
  commandTrustBundle?: readonly string[];
  /** The serving CA in use (its pin heads the trust state's `servingCaPins`), the rotations and the trust version. */
  servingCa?: PkiBundle['servingCa'];
  rotations?: PkiBundle['rotations'];
  trustVersion?: number;
}

/**
 * Parses and checks JoinService's keys: the trust domain; the node CA is a CA whose key matches; the signing
 * certificate matches its key, is not a CA, and is self-signed (or, from an older bundle, issued by the node
 * CA); the encryption key is P-256. All keys are P-256.
 *
 * @throws DomainError `INVALID_CONFIG` naming the part that is wrong (never any key material);
 *   `INVALID_ARGUMENT` for a bad trust domain.
 */
export function pkiJoinCrypto(input: JoinCryptoInput): JoinCrypto {
  const trustDomain = parseTrustDomain(input.trustDomain);
  const ca = loadIssuingCa(input.nodeCa, 'node CA');
  const nodeCa = { key: ca.key, certDer: ca.certDer, subjectDer: ca.subject };
  prepareIssuer(nodeCa);

  const signing = parsePair(input.signingKey, 'JoinService signing');
  if (signing.cert.ca) throw new DomainError('INVALID_CONFIG', 'The JoinService signing certificate must not be a CA certificate');
  // Self-signed, or (a bundle from before that, until the next start rotates it) issued by the node CA.
  const legacy = signing.cert.checkIssued(new X509Certificate(ca.certDer)) && signing.cert.verify(createPublicKey(ca.key));
  if (!isSelfSigned(signing.cert) && !legacy) {
    throw new DomainError('INVALID_CONFIG', 'The JoinService signing certificate is neither self-signed nor issued by the node CA');
  }

  let encryptionKey: KeyObject;
  try {
    encryptionKey = createPrivateKey(input.encryptionKey.privateKeyPem);
  } catch {
    throw new DomainError('INVALID_CONFIG', 'The JoinService encryption private key does not parse');
  }
  if (!isP256PrivateKey(encryptionKey)) throw new DomainError('INVALID_CONFIG', 'The JoinService encryption key is not an EC P-256 key');
  const jwk = createPublicKey(encryptionKey).export({ format: 'jwk' });

  const keys: Omit<JoinCrypto, 'encryptionKeys' | 'trust'> = {
    trustDomain,
    nodeCa,
    nodeCaCertificate: ca.certDer.toString('base64'),
    nodeCaPin: spkiPin(createPublicKey(ca.key)),
    signingKey: signing.key,
    signingCertificate: signing.cert.raw.toString('base64'),
    signingKeyPin: spkiPin(signing.cert.publicKey),
    encryptionKey,
    encryptionPublicJwk: { kty: 'EC', crv: 'P-256', x: String(jwk.x), y: String(jwk.y) },
    encryptionKeyPin: spkiPin(encryptionKey),
    commandTrustBundle: (input.commandTrustBundle ?? []).map(normalizeTrustCertificate),
  };
  const trust = buildTrustState(input, keys);
  return { ...keys, encryptionKeys: trust.encryptionKeys.map((k) => k.key), trust };
}

/** {@link pkiJoinCrypto} for a whole PKI bundle. */
export function joinCryptoFromBundle(bundle: PkiBundle): JoinCrypto {
  return pkiJoinCrypto(bundle);
}

/** The well-known document's `join` section, exactly as `protocol.md` fixes it; public material only. */
interface WellKnownJoinSection {
  encryptionJwk: PublicEcJwk;
  encryptionKeyPin: string;
  signingCertificate: string;
  signingKeyPin: string;
}

/** The `join` section of `GET /.well-known/better-compute` for `joinCrypto`. */
export function wellKnownJoinSection(joinCrypto: JoinCrypto): WellKnownJoinSection {
  const { kty, crv, x, y } = joinCrypto.encryptionPublicJwk;
  return {
    encryptionJwk: { kty, crv, x, y },
    encryptionKeyPin: joinCrypto.encryptionKeyPin,
    signingCertificate: joinCrypto.signingCertificate,
    signingKeyPin: joinCrypto.signingKeyPin,
  };
}

function normalizeTrustCertificate(certificate: string, index: number): string {
  try {
    const text = certificate.trim();
    const cert = new X509Certificate(text.startsWith('-----BEGIN') ? text : Buffer.from(text, 'base64'));
    return cert.raw.toString('base64');
  } catch {
    throw new DomainError('INVALID_CONFIG', `commandTrustBundle[${index}] is not a certificate`);
  }
}
