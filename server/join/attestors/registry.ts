import type { JoinRequestRow } from '../../requests/records';
import type { AttestorRequestFields, RenewalLeaf, RenewalLife, RenewalRequest, RenewalVerdict } from './hooks';
import { PROTOCOL_ATTESTORS } from './names';
import type { Attestor } from './types';

/** Each attestor has its own state type: the registry holds them all. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- each attestor has its own state type
type AnyAttestor = Attestor<any>;

const registry = new Map<string, AnyAttestor>();

const NAME = /^[a-z][a-z0-9-]{0,31}$/;

/**
 * Registers an attestor under its name. The server's attestors are registered in ./index.ts, at module load, in
 * every thread that prepares joins (a preparation thread loads that module too); a test may register a fake one
 * in its own process, where JoinService then prepares in process.
 */
export function registerAttestor(attestor: AnyAttestor): void {
  if (!NAME.test(attestor.name)) throw new Error(`attestor name ${JSON.stringify(attestor.name)} is not a lowercase name`);
  if (registry.has(attestor.name)) throw new Error(`attestor ${attestor.name} is registered twice`);
  registry.set(attestor.name, attestor);
}

/** Takes an attestor out again (tests that registered a fake one). */
export function unregisterAttestor(name: string): void {
  registry.delete(name);
}

/** The registered attestor of that name, or undefined (the join is then refused by name, `join:attestor`). */
export const attestorNamed = (name: string): AnyAttestor | undefined => registry.get(name);

/**
 * Whether a join may name this attestor at all: one protocol.md defines (refused by name, `join:attestor`,
 * while it is not registered) or one registered here. Anything else is malformed, so events and metric
 * labels stay bounded.
 */
export const isKnownAttestor = (name: string): boolean => (PROTOCOL_ATTESTORS as readonly string[]).includes(name) || registry.has(name);

const withSiteSettings = () => [...registry.values()].flatMap((a) => (a.siteSettings ? [a.siteSettings] : []));

/** Every attestor's settings of a site (its row's columns, by field), defaults filled in: the site record's fields. */
export function siteSettingsOf(row: Readonly<Record<string, unknown>>): Record<string, unknown> {
  return Object.fromEntries(withSiteSettings().map((s) => [s.field, s.read(row[s.field])]));
}

/**
 * What `sites.update` stores in each attestor's column for `input` (its fields by name, absent when not sent), and
 * what the audit row says of each. Throws the first attestor's DomainError for a change it refuses.
 */
export function updatedSiteSettings(
  row: Readonly<Record<string, unknown>>,
  input: Readonly<Record<string, unknown>>,
): { stored: Record<string, unknown>; audit: Record<string, unknown> } {
  const stored: Record<string, unknown> = {};
  const audit: Record<string, unknown> = {};
  for (const settings of withSiteSettings()) {
    const updated = settings.update(row[settings.field], input[settings.field]);
    stored[settings.field] = updated.stored;
    audit[settings.field] = updated.audit;
  }
  return { stored, audit };
}

/** A queued request's attestor-owned fields: its attestor's, null where it registers none. */
export function requestFieldsOf(row: JoinRequestRow): AttestorRequestFields {
  return { tpm: null, ekCertified: null, ...registry.get(row.attestor)?.requestFields?.(row) };
}

/** The life the attestors give the leaf's identity: the first that refuses, else the shortest; null when none caps it. */
export function renewalLife(leaf: RenewalLeaf): RenewalLife | null {
  const lives = [...registry.values()].flatMap((attestor) => attestor.renewal?.life?.(leaf) ?? []);
  if (!lives.length) return null;
  return (
    lives.find((life) => life.refusal) ?? lives.reduce((shortest, life) => (life.leftSeconds < shortest.leftSeconds ? life : shortest))
  );
}

/**
 * The attestors' checks of a renewal (or of a re-join that renews, x509pop): the first refusal, or ok with
 * `checked` true when a statement of the leaf asked an attestor for a check (its node key is then attested).
 */
export function checkRenewal(renewal: RenewalRequest): { ok: true; checked: boolean } | Extract<RenewalVerdict, { ok: false }> {
  let checked = false;
  for (const attestor of registry.values()) {
    const verdict = attestor.renewal?.check?.(renewal);
    if (!verdict) continue;
    if (!verdict.ok) return verdict;
    checked = true;
  }
  return { ok: true, checked };
}
