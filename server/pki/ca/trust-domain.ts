import { DomainError } from '../../../protocol/errors';

const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

/** Options for {@link dnsNameProblem}. */
interface DnsNameRules {
  /** Fewest labels the name must have (a trust domain needs two: `compute.example.com`, not `localhost`). */
  minLabels: number;
  /** Allows `*` as the whole leftmost label (a wildcard certificate name). */
  allowWildcard?: boolean;
}

/**
 * Why `name` is not a lowercase DNS name under `rules`, or `undefined` when it is one. Shared by the trust domain
 * and the gateway's SANs so both follow one grammar: labels of 1 to 63 characters of `[a-z0-9-]` that neither
 * start nor end with `-`, at most 253 characters in all, no trailing dot, and a last label that is not all digits
 * (so an IPv4 address is never taken for a name).
 */
export function dnsNameProblem(name: string, rules: DnsNameRules): string | undefined {
  if (name.length === 0) return 'must not be empty';
  if (name.length > 253) return 'must be at most 253 characters';
  if (name.includes('://')) return 'must be a bare DNS name, without a scheme';
  if (name.includes('/')) return 'must be a bare DNS name, without a path';
  if (name.includes(':')) return 'must be a bare DNS name, without a port';
  if (/[A-Z]/.test(name)) return 'must be lowercase';
  if (name.endsWith('.')) return 'must not end with a dot';
  const labels = name.split('.');
  if (labels.length < rules.minLabels) {
    return rules.minLabels === 2
      ? 'must have at least two labels, such as compute.example.com'
      : `must have at least ${rules.minLabels} labels`;
  }
  for (const [index, label] of labels.entries()) {
    if (label === '*' && index === 0 && rules.allowWildcard && labels.length > 2) continue;
    if (label.length === 0) return 'must not contain an empty label';
    if (label.length > 63) return 'labels must be at most 63 characters';
    if (!LABEL.test(label)) {
      return label.startsWith('-') || label.endsWith('-')
        ? 'labels must not start or end with a hyphen'
        : 'labels may contain only a-z, 0-9 and hyphens';
    }
  }
  if (/^[0-9]+$/.test(labels.at(-1) ?? '')) return 'must not end with an all-numeric label (is it an IP address?)';
  return undefined;
}

/**
 * Parses the deployment's trust domain, the authority part of every SPIFFE ID the node CA signs
 * (`spiffe://<trustDomain>/site/…/node/…`). It must be a lowercase DNS name with at least two labels, such as
 * `compute.example.com`: no scheme, port, path, uppercase letter or trailing dot.
 *
 * @throws DomainError `INVALID_ARGUMENT` (field `trustDomain`) naming what is wrong.
 */
export function parseTrustDomain(value: unknown): string {
  if (typeof value !== 'string') throw invalidTrustDomain('must be a string');
  const problem = dnsNameProblem(value, { minLabels: 2 });
  if (problem) throw invalidTrustDomain(problem);
  return value;
}

function invalidTrustDomain(problem: string): DomainError {
  return new DomainError('INVALID_ARGUMENT', `trustDomain: ${problem}`, { field: 'trustDomain' });
}
