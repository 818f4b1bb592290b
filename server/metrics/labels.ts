import { KNOWN_ATTESTORS } from '../../protocol/join-wire';

/**
 * Label values are closed sets or shapes our own code produces: a label never carries a node id, a token,
 * a MAC or anything else a machine picks, so a fleet of any size keeps a bounded number of series.
 * Anything outside the set becomes `other`.
 */
const ATTESTORS = new Set<string>(KNOWN_ATTESTORS);
const ROLES = new Set(['node', 'site', 'provisioned', 'discovery']);
/** `<attestor>:<reason>` (joins) or `<reason>` (renewals), as the refusal tables name them. */
const REASON = /^(?:[a-z0-9-]{1,32}:)?[a-z0-9-]{1,48}$/;
/** A guard behind the shape: reasons are code constants, a few dozen at most. */
const MAX_REASONS = 128;
const seenReasons = new Set<string>();

const OTHER = 'other';

export const attestorLabel = (attestor: string | null | undefined): string => (attestor && ATTESTORS.has(attestor) ? attestor : OTHER);

export const roleLabel = (role: string | null | undefined): string => (role && ROLES.has(role) ? role : OTHER);

/** A refusal reason as a label value; empty stays empty (no refusal). */
export function reasonLabel(reason: string | null | undefined): string {
  if (!reason) return '';
  if (!REASON.test(reason)) return OTHER;
  if (seenReasons.has(reason)) return reason;
  if (seenReasons.size >= MAX_REASONS) return OTHER;
  seenReasons.add(reason);
  return reason;
}
