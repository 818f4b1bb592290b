import { X509Certificate, type KeyObject } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { TpmCheckFailure } from './reasons';

/** What the join records about an EK certificate, whether or not it chains to a configured vendor root. */
export interface EkCertificateFacts {
  /** The issuer's distinguished name, as the queue shows it. */
  readonly issuer: string;
  readonly serialNumber: string;
  /** True when the certificate chains to a root of the EK roots directory and every link is within its dates. */
  readonly chainsToRoot: boolean;
  /** Why it does not chain (for the join request and the logs), when `chainsToRoot` is false. */
  readonly chainProblem?: string;
}

/** Links above the EK certificate a chain may have: vendor chains are root, one or two intermediates, EK. */
const MAX_INTERMEDIATES = 4;
const PEM_BLOCK = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/**
 * Loads the vendor roots (`BETTER_COMPUTE_TPM_EK_ROOTS` will name the directory): every `.pem`, `.crt` or
 * `.cer` file in it, each holding one or more PEM certificates. A file that holds none, or a certificate that
 * does not parse, stops the load with an error naming the file, so a typo never silently trusts nothing.
 */
export function loadEkRoots(directory: string): X509Certificate[] {
  const roots: X509Certificate[] = [];
  for (const file of readdirSync(directory).sort()) {
    if (!/\.(pem|crt|cer)$/i.test(file)) continue;
    const path = join(directory, file);
    const blocks = readFileSync(path, 'utf8').match(PEM_BLOCK) ?? [];
    if (blocks.length === 0) throw new Error(`EK roots: ${path} holds no PEM certificate`);
    for (const block of blocks) {
      try {
        roots.push(new X509Certificate(block));
      } catch (error) {
        throw new Error(`EK roots: ${path} holds a certificate that does not parse`, { cause: error });
      }
    }
  }
  return roots;
}

const withinDates = (cert: X509Certificate, now: Date) => new Date(cert.validFrom) <= now && now <= new Date(cert.validTo);
const issuedBy = (cert: X509Certificate, issuer: X509Certificate) => {
  try {
    return cert.checkIssued(issuer) && cert.verify(issuer.publicKey);
  } catch {
    return false;
  }
};

/** The key's public components, so an EK certificate's key compares equal whatever its SPKI algorithm says. */
function sameKey(a: KeyObject, b: KeyObject): boolean {
  const ja = a.export({ format: 'jwk' });
  const jb = b.export({ format: 'jwk' });
  return ja.kty === jb.kty && ja.n === jb.n && ja.e === jb.e && ja.crv === jb.crv && ja.x === jb.x && ja.y === jb.y;
}

/**
 * Checks an EK certificate against the EK it must certify and the vendor roots. A certificate that does not
 * parse, or certifies another key, is refused; one that merely does not chain (unknown vendor, expired link)
 * is reported as such, since the attestor then enrolls rather than refuses.
 *
 * @throws TpmCheckFailure `tpm:ek-certificate` or `tpm:ek-certificate-key`.
 */
export function checkEkCertificate(
  der: Buffer,
  intermediatesDer: readonly Buffer[],
  roots: readonly X509Certificate[],
  ekKey: KeyObject,
  now: Date,
): EkCertificateFacts {
  let leaf: X509Certificate;
  let intermediates: X509Certificate[];
  try {
    leaf = new X509Certificate(der);
    intermediates = intermediatesDer.map((bytes) => new X509Certificate(bytes));
  } catch {
    throw new TpmCheckFailure('tpm:ek-certificate', 'an EK certificate or intermediate does not parse');
  }
  let leafKey: KeyObject;
  try {
    leafKey = leaf.publicKey;
  } catch {
    throw new TpmCheckFailure('tpm:ek-certificate', 'the EK certificate key does not import');
  }
  if (!sameKey(leafKey, ekKey)) throw new TpmCheckFailure('tpm:ek-certificate-key', 'the EK certificate certifies another key');

  const facts = { issuer: leaf.issuer.replace(/\n/g, ', '), serialNumber: leaf.serialNumber };
  const problem = chainProblem(leaf, intermediates, roots, now);
  return problem ? { ...facts, chainsToRoot: false, chainProblem: problem } : { ...facts, chainsToRoot: true };
}

function chainProblem(
  leaf: X509Certificate,
  intermediates: X509Certificate[],
  roots: readonly X509Certificate[],
  now: Date,
): string | undefined {
  if (roots.length === 0) return 'no EK roots are configured';
  let current = leaf;
  const unused = [...intermediates];
  for (let depth = 0; depth <= MAX_INTERMEDIATES; depth++) {
    if (!withinDates(current, now)) return `${current === leaf ? 'the EK certificate' : 'an intermediate'} is outside its validity period`;
    const root = roots.find((candidate) => issuedBy(current, candidate));
    if (root) return withinDates(root, now) ? undefined : 'the root is outside its validity period';
    const index = unused.findIndex((candidate) => candidate.ca && issuedBy(current, candidate));
    if (index < 0) return 'no configured root or given intermediate issued it';
    current = unused.splice(index, 1)[0]!; // index was found in unused
  }
  return 'the chain is too long';
}

/**
 * The vendor roots `BETTER_COMPUTE_TPM_EK_ROOTS` names (a directory of PEM roots), or none when it is unset:
 * then no EK chains, and every activated TPM is admitted only by an allow-list, an approval or its own node.
 */
export function ekRootsFromEnvironment(env: Record<string, string | undefined> = process.env): X509Certificate[] {
  const directory = env.BETTER_COMPUTE_TPM_EK_ROOTS?.trim();
  if (!directory) return [];
  try {
    return loadEkRoots(directory);
  } catch (error) {
    throw new Error(`BETTER_COMPUTE_TPM_EK_ROOTS: ${(error as Error).message}`, { cause: error });
  }
}
