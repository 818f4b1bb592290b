import { BUILT_IN_CHECKS, type BuiltInCheck } from '@/protocol/acceptance-checks';
import type { CreatePoolInput, JoinAttestor, PoolAgent } from './api-types';
import { fieldMessage, type ApiError } from './api-errors';

/** Attestors in the order the spec introduces them; a Record keeps the list in step with the server's enum. */
export const JOIN_ATTESTOR_HINTS: Record<JoinAttestor, string> = {
  'join-token': 'a one-time join token',
  discovery: 'unknown machines wait for approval',
  tpm: 'the machine proves its TPM 2.0',
  x509pop: 'an existing machine certificate',
};
export const JOIN_ATTESTORS = Object.keys(JOIN_ATTESTOR_HINTS) as JoinAttestor[];

export const POOL_AGENT_HINTS: Record<PoolAgent, string> = {
  bcd: 'Machines run the Better Compute daemon and join with it.',
  none: 'Machines run no daemon; they cannot join with a token.',
};
export const POOL_AGENTS = Object.keys(POOL_AGENT_HINTS) as PoolAgent[];

/** The checks bcd runs (protocol/acceptance-checks.ts), each with what it measures and its threshold's unit. */
export const ACCEPTANCE_CHECKS: Record<BuiltInCheck, { hint: string; threshold: { label: string; initial: string } | null }> = {
  identity: { hint: 'its product UUID, serials, MACs and GPUs still match what it joined with', threshold: null },
  'min-cpus': { hint: 'at least this many CPUs', threshold: { label: 'Minimum CPUs', initial: '8' } },
  'min-memory': { hint: 'at least this much memory', threshold: { label: 'Minimum memory (GiB)', initial: '64' } },
  'gpu-count': { hint: 'at least this many GPUs', threshold: { label: 'Minimum GPUs', initial: '8' } },
};
export { BUILT_IN_CHECKS };

export interface PoolFormValues {
  siteId: string;
  name: string;
  agent: PoolAgent;
  joinAttestors: JoinAttestor[];
  platformOperated: boolean;
  /** The ticked acceptance checks, each with its threshold as typed ('' for a check without one). */
  acceptance: Partial<Record<BuiltInCheck, string>>;
  /** As typed: EK hashes (hex SHA-256 of the EK public key) separated by commas, spaces or lines. */
  tpmEkAllowList: string;
}

/** A new pool's form: a bcd pool in `siteId`, nothing restricted or checked. */
export function initialPoolValues(siteId: string): PoolFormValues {
  return { siteId, name: '', agent: 'bcd', joinAttestors: [], platformOperated: false, acceptance: {}, tpmEkAllowList: '' };
}

export type PoolFormField = 'siteId' | 'name' | 'agent' | 'joinAttestors' | 'platformOperated' | 'acceptance' | 'tpmEkAllowList';

/** The EK hashes of the allow-list field, in the order typed. */
function parseEkHashList(text: string): string[] {
  return text.split(/[\s,]+/).filter(Boolean);
}

type CheckSpec = NonNullable<NonNullable<CreatePoolInput['policy']>['acceptance']>[number];

/** A threshold as typed; an empty one is sent as NaN so the server's schema names the field. */
const threshold = (text: string | undefined) => (text?.trim() ? Number(text) : Number.NaN);

function toCheckSpec(check: BuiltInCheck, text: string | undefined): CheckSpec {
  switch (check) {
    case 'identity':
      return { check };
    case 'min-memory':
      return { check, minGiB: threshold(text) };
    case 'min-cpus':
    case 'gpu-count':
      return { check, min: threshold(text) };
  }
}

/** The ticked checks, in the order the agent lists them. */
function tickedChecks(values: PoolFormValues): BuiltInCheck[] {
  return BUILT_IN_CHECKS.filter((check) => values.acceptance[check] !== undefined);
}

/**
 * The pools.create input for the form. Empty choices are left out rather than sent empty, so the
 * server's defaults apply (no attestors ticked means the pool's default attestors, not "none").
 */
export function toCreatePoolInput(tenantId: string, values: PoolFormValues): CreatePoolInput {
  const policy: NonNullable<CreatePoolInput['policy']> = {};
  if (values.joinAttestors.length) policy.joinAttestors = JOIN_ATTESTORS.filter((a) => values.joinAttestors.includes(a));
  if (values.platformOperated) policy.kubernetes = { platformOperated: true };
  const ekHashes = parseEkHashList(values.tpmEkAllowList ?? '');
  if (ekHashes.length) policy.tpm = { ekAllowList: ekHashes };
  const checks = tickedChecks(values);
  if (checks.length) policy.acceptance = checks.map((check) => toCheckSpec(check, values.acceptance[check]));
  return {
    tenantId,
    siteId: values.siteId,
    name: values.name.trim(),
    agent: values.agent,
    ...(Object.keys(policy).length ? { policy } : {}),
  };
}

/** Which form field a server error is about (`policy.acceptance.2.min` → acceptance); null for the form as a whole. */
export function formFieldOf(serverField: string | null): PoolFormField | null {
  if (!serverField) return null;
  const [head, second] = serverField.split('.');
  if (head === 'siteId' || head === 'name' || head === 'agent') return head;
  if (head === 'acceptanceChecks' || (head === 'policy' && second === 'acceptance')) return 'acceptance';
  if (head === 'policy' && second === 'joinAttestors') return 'joinAttestors';
  if (head === 'policy' && second === 'kubernetes') return 'platformOperated';
  if (head === 'policy' && second === 'tpm') return 'tpmEkAllowList';
  return null;
}

/**
 * The message to show next to a field. For one bad acceptance check the server names its index; the
 * operator ticked checks, so the message names the check instead.
 */
export function poolFieldMessage(error: ApiError, values: PoolFormValues): string {
  const ekIndex = /^policy\.tpm\.ekAllowList\.(\d+)$/.exec(error.field ?? '')?.[1];
  const ekHash = ekIndex === undefined ? undefined : parseEkHashList(values.tpmEkAllowList ?? '')[Number(ekIndex)];
  if (ekHash !== undefined) return `“${ekHash}”: ${fieldMessage(error)}`;
  const index = /^policy\.acceptance\.(\d+)/.exec(error.field ?? '')?.[1];
  const check = index === undefined ? undefined : tickedChecks(values)[Number(index)];
  return check === undefined ? fieldMessage(error) : `${check}: ${fieldMessage(error)}`;
}
