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

export interface PoolFormValues {
  siteId: string;
  name: string;
  agent: PoolAgent;
  joinAttestors: JoinAttestor[];
  platformOperated: boolean;
  /** As typed: names separated by commas. */
  acceptanceChecks: string;
  /** As typed: EK hashes (hex SHA-256 of the EK public key) separated by commas, spaces or lines. */
  tpmEkAllowList: string;
}

export type PoolFormField = 'siteId' | 'name' | 'agent' | 'joinAttestors' | 'platformOperated' | 'acceptanceChecks' | 'tpmEkAllowList';

/** The EK hashes of the allow-list field, in the order typed. */
function parseEkHashList(text: string): string[] {
  return text.split(/[\s,]+/).filter(Boolean);
}

function parseCheckList(text: string): string[] {
  return text
    .split(',')
    .map((check) => check.trim())
    .filter(Boolean);
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
  const checks = parseCheckList(values.acceptanceChecks);
  return {
    tenantId,
    siteId: values.siteId,
    name: values.name.trim(),
    agent: values.agent,
    ...(Object.keys(policy).length ? { policy } : {}),
    ...(checks.length ? { acceptanceChecks: checks } : {}),
  };
}

/** Which form field a server error is about (`acceptanceChecks.2` → acceptanceChecks); null for the form as a whole. */
export function formFieldOf(serverField: string | null): PoolFormField | null {
  if (!serverField) return null;
  const [head, second] = serverField.split('.');
  if (head === 'siteId' || head === 'name' || head === 'agent' || head === 'acceptanceChecks') return head;
  if (head === 'policy' && second === 'joinAttestors') return 'joinAttestors';
  if (head === 'policy' && second === 'kubernetes') return 'platformOperated';
  if (head === 'policy' && second === 'tpm') return 'tpmEkAllowList';
  return null;
}

/**
 * The message to show next to a field. For one bad acceptance check the server names its index; the
 * operator typed a list, so the message names the check instead.
 */
export function poolFieldMessage(error: ApiError, values: PoolFormValues): string {
  const ekIndex = /^policy\.tpm\.ekAllowList\.(\d+)$/.exec(error.field ?? '')?.[1];
  const ekHash = ekIndex === undefined ? undefined : parseEkHashList(values.tpmEkAllowList ?? '')[Number(ekIndex)];
  if (ekHash !== undefined) return `“${ekHash}”: ${fieldMessage(error)}`;
  const index = /^acceptanceChecks\.(\d+)$/.exec(error.field ?? '')?.[1];
  const check = index === undefined ? undefined : parseCheckList(values.acceptanceChecks)[Number(index)];
  return check === undefined ? fieldMessage(error) : `“${check}”: ${fieldMessage(error)}`;
}
