import { isIP } from 'node:net';
import { DomainError } from '../../../protocol/errors';
import type { PkiBundle } from '../bundle/bundle';
import { issueLeaf, newEcKeyPair } from '../ca/ca';
import { loadIssuingCa } from '../ca/issuing-ca';
import { dnsNameProblem } from '../ca/trust-domain';
import { servingCaChainOf } from '../rotation/cross-certificate';
import { encodeName, extendedKeyUsage, OIDS, subjectAltName, toPem, type GeneralName } from '../ca/x509-build';

/** A gateway's TLS identity, all PEM. */
interface GatewayCertificate {
  /** The leaf certificate. */
  certificatePem: string;
  /** Its P-256 private key, PKCS#8. */
  privateKeyPem: string;
  /**
   * The leaf followed by the serving CA (a "full chain", what a TLS server sends); while a serving CA rotation is
   * active, by the serving CA certified by the previous one and then the previous one (`servingCaChainOf`).
   */
  chainPem: string;
}

/**
 * The serving CA that issues, and what follows the leaf in the chain: a bundle's rotations, or a PKI runtime's
 * `servingCaChain` (PEM, in order); with neither, the serving CA alone.
 */
type ServingCaSource = Pick<PkiBundle, 'servingCa'> & Partial<Pick<PkiBundle, 'rotations'>> & { servingCaChain?: string[] };

/** Default and largest lifetime of a gateway certificate. */
const GATEWAY_TTL_DAYS = { default: 365, max: 825 } as const;
const MAX_SANS = 100;
const BACKDATE_MS = 5 * 60_000;

/**
 * Issues a TLS server certificate for a gateway from the serving CA that daemons pin: a fresh P-256 key,
 * subjectAltName with a dNSName per host name (a leftmost `*` label is allowed) or an iPAddress per IP literal,
 * keyUsage digitalSignature, extendedKeyUsage serverAuth, cA=false. Host names are lowercased.
 *
 * @param options.ttlDays lifetime in whole days, 1 to 825 (default 365); the certificate starts 5 minutes before
 *   `now` to absorb clock skew.
 * @throws DomainError `INVALID_ARGUMENT` (field `san` or `ttlDays`).
 */
export function issueGatewayCertificate(
  bundle: ServingCaSource,
  options: { sans: string[]; ttlDays?: number; now?: Date },
): GatewayCertificate {
  const keys = newEcKeyPair();
  const issued = issueGatewayCertificateForKey(bundle, { ...options, spkiDer: keys.spkiDer });
  return { ...issued, privateKeyPem: keys.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string };
}

/**
 * Issues a gateway's TLS server certificate, as {@link issueGatewayCertificate}, for a key the gateway holds
 * (`spkiDer`, from a CSR whose self-signature the caller verified): a running gateway asks for its next
 * certificate this way, so its private key never leaves it.
 *
 * @throws DomainError `INVALID_ARGUMENT` (field `san` or `ttlDays`).
 */
export function issueGatewayCertificateForKey(
  bundle: ServingCaSource,
  options: { spkiDer: Buffer; sans: string[]; ttlDays?: number; now?: Date },
): Omit<GatewayCertificate, 'privateKeyPem'> {
  const names = parseSans(options.sans);
  const ttlDays = options.ttlDays ?? GATEWAY_TTL_DAYS.default;
  if (!Number.isInteger(ttlDays) || ttlDays < 1 || ttlDays > GATEWAY_TTL_DAYS.max) {
    throw new DomainError('INVALID_ARGUMENT', `ttlDays: must be a whole number from 1 to ${GATEWAY_TTL_DAYS.max}`, { field: 'ttlDays' });
  }
  const now = Math.floor((options.now ?? new Date()).getTime() / 1000) * 1000;
  if (Number.isNaN(now)) throw new DomainError('INVALID_ARGUMENT', 'now: must be a valid date', { field: 'now' });
  const ca = loadIssuingCa(bundle.servingCa, 'serving CA');
  const certDer = issueLeaf(ca, {
    subject: encodeName([[OIDS.commonName, 'Better Compute gateway']]),
    spkiDer: options.spkiDer,
    notBefore: new Date(now - BACKDATE_MS),
    notAfter: new Date(now + ttlDays * 86_400_000),
    extensions: [extendedKeyUsage([OIDS.serverAuth]), subjectAltName(names)],
  });
  const certificatePem = toPem(certDer);
  return { certificatePem, chainPem: certificatePem + (bundle.servingCaChain ?? servingCaChainOf(bundle)).join('') };
}

/** Validates and normalizes the gateway's names: IP literals become iPAddress, the rest dNSName. */
function parseSans(sans: readonly string[]): GeneralName[] {
  if (!Array.isArray(sans) || sans.length === 0) throw invalidSan('name at least one host name or IP address');
  if (sans.length > MAX_SANS) throw invalidSan(`at most ${MAX_SANS} names`);
  const seen = new Set<string>();
  const names: GeneralName[] = [];
  for (const raw of sans) {
    if (typeof raw !== 'string') throw invalidSan('every name must be a string');
    const value = raw.trim().toLowerCase();
    if (seen.has(value)) continue;
    seen.add(value);
    if (value.startsWith('[') || value.includes('%'))
      throw invalidSan(`${JSON.stringify(raw)} is not a valid IP address (no brackets or zone)`);
    if (isIP(value) !== 0) {
      names.push({ type: 'ip', value });
      continue;
    }
    const problem = dnsNameProblem(value, { minLabels: 1, allowWildcard: true });
    if (problem) throw invalidSan(`${JSON.stringify(raw)} is not a host name or IP address: it ${problem}`);
    names.push({ type: 'dns', value });
  }
  return names;
}

function invalidSan(problem: string): DomainError {
  return new DomainError('INVALID_ARGUMENT', `san: ${problem}`, { field: 'san' });
}
