/**
 * The approval-rule form of the console: text fields (lists one per line or comma-separated) to the input
 * `approvalRules.create`, `.update` and `.dryRun` take, and back; with the checks the form makes before it
 * sends (the server checks again, and its message shows under the field it names).
 */

type RuleAction = 'approve' | 'reject' | 'leave';

/** The conditions, in the order the form shows them; `source` is where the value a join is matched on comes from. */
export const CONDITIONS = [
  {
    key: 'macPrefixes',
    label: 'MAC or OUI prefix',
    source: 'vouched',
    list: true,
    placeholder: '3c:ec:ef',
    hint: 'The MAC the boot step saw, by prefix: an OUI such as 3c:ec:ef, or a whole MAC.',
  },
  {
    key: 'subnets',
    label: 'Subnet',
    source: 'vouched',
    list: true,
    placeholder: '10.20.0.0/16',
    hint: "CIDR blocks the lease's address must be in.",
  },
  {
    key: 'vouchedBy',
    label: 'Vouched by',
    source: 'vouched',
    list: true,
    placeholder: 'module:boot',
    hint: 'Who minted the discovery token.',
  },
  {
    key: 'serials',
    label: 'Serials',
    source: 'claimed',
    list: true,
    placeholder: 'SN-7701',
    hint: 'Product, board or chassis serials, one per line.',
  },
  { key: 'productUuids', label: 'Product UUIDs', source: 'claimed', list: true, placeholder: '4c4c4544-…', hint: 'One per line.' },
  { key: 'gpuUuids', label: 'GPU UUIDs', source: 'claimed', list: true, placeholder: 'GPU-7d5a…', hint: 'One per line.' },
  { key: 'hostnamePattern', label: 'Hostname', source: 'claimed', list: false, placeholder: 'gpu-a-*', hint: 'With * and ? wildcards.' },
  { key: 'vendors', label: 'Vendor', source: 'claimed', list: true, placeholder: 'Supermicro', hint: 'DMI sys_vendor, with wildcards.' },
  { key: 'models', label: 'Model', source: 'claimed', list: true, placeholder: 'SYS-421GE-*', hint: 'DMI product_name, with wildcards.' },
] as const;
type ConditionKey = (typeof CONDITIONS)[number]['key'];

export interface RuleFormValues {
  name: string;
  action: RuleAction;
  poolId: string;
  conditions: Record<ConditionKey, string>;
  discoveryOnly: boolean;
  maxAdmissions: string;
  /** `datetime-local` text (local time), or empty. */
  validUntil: string;
  enabled: boolean;
}

const EMPTY_CONDITIONS = Object.fromEntries(CONDITIONS.map((c) => [c.key, ''])) as Record<ConditionKey, string>;
export const INITIAL_RULE_VALUES: RuleFormValues = {
  name: '',
  action: 'approve',
  poolId: '',
  conditions: EMPTY_CONDITIONS,
  discoveryOnly: false,
  maxAdmissions: '',
  validUntil: '',
  enabled: true,
};

export type RuleFormField = 'name' | 'poolId' | 'match' | 'maxAdmissions' | 'validUntil' | `match.${ConditionKey}`;
export type RuleFieldErrors = Partial<Record<RuleFormField, string>>;

const listOf = (text: string) =>
  text
    .split(/[\n,]/)
    .map((v) => v.trim())
    .filter(Boolean);

/** The rule body the API takes (without tenant and site), from the form's values. */
export function toRuleInput(values: RuleFormValues) {
  const match: Record<string, unknown> = {};
  for (const c of CONDITIONS) {
    const text = values.conditions[c.key].trim();
    if (!text) continue;
    match[c.key] = c.list ? listOf(text) : text;
  }
  if (values.discoveryOnly) match.attestor = 'discovery';
  const maxAdmissions = values.action === 'approve' && values.maxAdmissions.trim() ? Number(values.maxAdmissions) : undefined;
  return {
    name: values.name.trim(),
    action: values.action,
    match,
    ...(values.action === 'approve' ? { poolId: values.poolId } : {}),
    ...(maxAdmissions !== undefined ? { maxAdmissions } : {}),
    ...(values.validUntil ? { validUntil: new Date(values.validUntil).toISOString() } : {}),
    enabled: values.enabled,
  };
}

/** The form's values for a saved rule (editing it). */
export function toRuleValues(rule: {
  name: string;
  action: RuleAction;
  poolId: string | null;
  match: Record<string, unknown>;
  maxAdmissions: number | null;
  validUntil: string | null;
  enabled: boolean;
}): RuleFormValues {
  const conditions = { ...EMPTY_CONDITIONS };
  for (const c of CONDITIONS) {
    const value = rule.match[c.key];
    if (Array.isArray(value)) conditions[c.key] = value.join('\n');
    else if (typeof value === 'string') conditions[c.key] = value;
  }
  const local = rule.validUntil
    ? new Date(new Date(rule.validUntil).getTime() - new Date(rule.validUntil).getTimezoneOffset() * 60_000).toISOString().slice(0, 16)
    : '';
  return {
    name: rule.name,
    action: rule.action,
    poolId: rule.poolId ?? '',
    conditions,
    discoveryOnly: rule.match.attestor === 'discovery',
    maxAdmissions: rule.maxAdmissions === null ? '' : String(rule.maxAdmissions),
    validUntil: local,
    enabled: rule.enabled,
  };
}

const SUBNET = /^[0-9a-fA-F:.]+\/\d{1,3}$/;
const MAC_PREFIX = /^[0-9a-fA-F]{2}([:-]?[0-9a-fA-F]{2}){0,5}$/;

/** Every problem the form can see before sending, per field. */
export function validateRuleForm(values: RuleFormValues, now = Date.now()): RuleFieldErrors {
  const errors: RuleFieldErrors = {};
  if (!values.name.trim()) errors.name = 'Name the rule: the queue shows "decided by rule <name>".';
  else if (values.name.trim().length > 100) errors.name = 'At most 100 characters.';
  if (values.action === 'approve' && !values.poolId) errors.poolId = 'Choose the pool an approved machine joins.';
  const named = CONDITIONS.some((c) => values.conditions[c.key].trim()) || values.discoveryOnly;
  if (!named) errors.match = 'Name at least one condition: a rule without one would match nothing.';
  const bad = listOf(values.conditions.macPrefixes).find((v) => !MAC_PREFIX.test(v));
  if (bad) errors['match.macPrefixes'] = `${bad} is not a MAC or a prefix of one, such as 3c:ec:ef.`;
  const badNet = listOf(values.conditions.subnets).find((v) => !SUBNET.test(v));
  if (badNet) errors['match.subnets'] = `${badNet} is not a CIDR block such as 10.20.0.0/16.`;
  if (values.action === 'approve' && values.maxAdmissions.trim()) {
    const n = Number(values.maxAdmissions);
    if (!Number.isInteger(n) || n < 1 || n > 1_000_000) errors.maxAdmissions = 'A whole number from 1 to 1,000,000.';
  }
  if (values.validUntil) {
    const at = new Date(values.validUntil).getTime();
    if (Number.isNaN(at)) errors.validUntil = 'Not a date.';
    else if (at <= now) errors.validUntil = 'A time in the future: the rule would never decide.';
  }
  return errors;
}

/** The form field a server error names (`match.macPrefixes.0` → `match.macPrefixes`), or null for the form's top. */
export function ruleFieldOf(field: string | null): RuleFormField | null {
  if (!field) return null;
  if (field === 'name' || field === 'poolId' || field === 'maxAdmissions' || field === 'validUntil' || field === 'match') return field;
  const condition = /^match\.(\w+)/.exec(field)?.[1];
  return condition && CONDITIONS.some((c) => c.key === condition)
    ? (`match.${condition}` as RuleFormField)
    : field.startsWith('match')
      ? 'match'
      : null;
}

/** How a rule's conditions read in the list: `vendors Supermicro · models SYS-*`. */
export function describeMatch(match: Record<string, unknown>): string {
  return Object.entries(match)
    .map(
      ([key, value]) => `${CONDITIONS.find((c) => c.key === key)?.label ?? key} ${Array.isArray(value) ? value.join(', ') : String(value)}`,
    )
    .join(' · ');
}
