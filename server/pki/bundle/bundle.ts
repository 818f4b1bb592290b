import { DomainError } from '../../../protocol/errors';
import { createRootCa, newEcKeyPair, type IssuingCa } from '../ca/ca';
import { selfSignedSigningCertificate } from './signing-certificate';
import { parseTrustDomain } from '../ca/trust-domain';
import { toPem } from '../ca/x509-build';
import type { PkiKeyKind } from '../rotation/kinds';

/** A certificate and its private key. */
export interface PkiCertifiedKey {
  /** The certificate, PEM (`-----BEGIN CERTIFICATE-----`). */
  certificatePem: string;
  /** The private key, PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`). */
  privateKeyPem: string;
}

/**
 * Everything `better-compute pki init` creates, as plain JSON. It is stored only sealed (see `sealPkiBundle`),
 * since it holds every private key of the deployment. All keys are ECDSA/ECDH P-256.
 */
export interface PkiBundle {
  version: 1;
  /** The SPIFFE trust domain, a lowercase DNS name (`compute.example.com`). */
  trustDomain: string;
  /** When the bundle was made, RFC 3339 UTC. */
  createdAt: string;
  /** Self-signed root that signs node certificates (and nothing else a TLS peer could present). */
  nodeCa: PkiCertifiedKey;
  /** Self-signed root that signs the gateways' TLS certificates; daemons pin its key (`serving_ca_spki_pin`). */
  servingCa: PkiCertifiedKey;
  /** Self-signed root of the command-signing trust bundle. */
  commandCa: PkiCertifiedKey;
  /** The command-signing trust bundle sent in every JoinResponse: standard base64 of each DER certificate. */
  commandTrustBundle: string[];
  /**
   * JoinService signing key (signs JoinResponse envelopes) with a self-signed certificate, not a CA. Bundles made
   * before that carry a node-CA-issued one, replaced on the next start (`rotateSigningCertificate`).
   */
  signingKey: PkiCertifiedKey;
  /** JoinService encryption key, the recipient of sealed tokens (ECDH-ES+A256KW). It has no certificate. */
  encryptionKey: { privateKeyPem: string };
  /** The trust version (server/pki/rotation/): 1, or absent, before any rotation step; the row's column mirrors it. */
  trustVersion?: number;
  /**
   * The other key of each rotation under way, by kind: the next key while `prepared`, the previous one while
   * `active` (activation swaps it with the key in use, which always stays in the fields above). The
   * join-encryption key has no certificate; the command-signing key is the command CA.
   */
  rotations?: Partial<Record<PkiKeyKind, PkiRotatingKey>>;
}

/** The other key of a rotation under way (see {@link PkiBundle.rotations}). */
export interface PkiRotatingKey {
  phase: 'prepared' | 'active';
  /** Absent for the join-encryption key. */
  certificatePem?: string;
  privateKeyPem: string;
  /**
   * Serving CA only, while `active`: the serving CA in use (the new one) certified by this previous one, made at
   * activation (rotation/cross-certificate.ts). The gateways send it, then this CA, after their leaf until the
   * rotation is retired, so a machine that pins only this CA still accepts their chain.
   */
  crossCertificatePem?: string;
}

/** How long the roots and the JoinService signing certificate last: ten years. */
export const PKI_VALIDITY_DAYS = 3650;
/** Validity starts this long before `now`, so a machine whose clock runs behind still accepts the roots. */
const PKI_BACKDATE_SECONDS = 3600;

const DAY_MS = 86_400_000;

/**
 * Creates a new PKI for `trustDomain`: the node CA, the serving CA, the command-signing CA (whose certificate is
 * the command trust bundle), and the two JoinService keys. The signing key's certificate is self-signed with
 * keyUsage digitalSignature and cA=false: agents pin its key, and no CA a TLS peer trusts vouches for it. Nothing is stored: seal the result and keep it (`initPki`).
 *
 * @param options.now the clock (defaults to the current time); certificates start {@link PKI_BACKDATE_SECONDS}
 *   before it, truncated to the second, and last {@link PKI_VALIDITY_DAYS}.
 * @throws DomainError `INVALID_ARGUMENT` for a bad trust domain.
 */
export function createPkiBundle(options: { trustDomain: string; now?: Date }): PkiBundle {
  const trustDomain = parseTrustDomain(options.trustDomain);
  const now = options.now ?? new Date();
  if (Number.isNaN(now.getTime())) throw new DomainError('INVALID_ARGUMENT', 'now: must be a valid date', { field: 'now' });
  const notBefore = new Date(Math.floor(now.getTime() / 1000) * 1000 - PKI_BACKDATE_SECONDS * 1000);
  const notAfter = new Date(notBefore.getTime() + PKI_VALIDITY_DAYS * DAY_MS);

  const nodeCa = createRootCa('Better Compute node CA', notBefore, notAfter);
  const servingCa = createRootCa('Better Compute serving CA', notBefore, notAfter);
  const commandCa = createRootCa('Better Compute command-signing CA', notBefore, notAfter);

  const signing = newEcKeyPair();
  const signingCertDer = selfSignedSigningCertificate(signing.privateKey, notBefore, notAfter);
  const encryption = newEcKeyPair();

  return {
    version: 1,
    trustDomain,
    createdAt: now.toISOString(),
    nodeCa: certifiedKey(nodeCa),
    servingCa: certifiedKey(servingCa),
    commandCa: certifiedKey(commandCa),
    commandTrustBundle: [commandCa.certDer.toString('base64')],
    signingKey: { certificatePem: toPem(signingCertDer), privateKeyPem: pkcs8Pem(signing.privateKey) },
    encryptionKey: { privateKeyPem: pkcs8Pem(encryption.privateKey) },
  };
}

function certifiedKey(ca: IssuingCa): PkiCertifiedKey {
  return { certificatePem: toPem(ca.certDer), privateKeyPem: pkcs8Pem(ca.key) };
}

const pkcs8Pem = (key: IssuingCa['key']): string => key.export({ type: 'pkcs8', format: 'pem' }) as string;
