import { staleNodesPolicySchema, type StaleNodesPolicy } from '@/protocol/api/stale-nodes';

export type StaleFormField = 'cordonAfterDays' | 'retireAfterDays';
export type StaleFormErrors = Partial<Record<StaleFormField, string>>;

/**
 * The stale-node policy form's two day fields as typed, checked with the server's own schema (whole days, 1 to
 * 365) so both fields' problems show at once; the policy when both are valid.
 */
export function parseStaleForm(values: Record<StaleFormField, string>): { policy: StaleNodesPolicy | null; errors: StaleFormErrors } {
  const errors: StaleFormErrors = {};
  const numbers: Record<string, number> = {};
  for (const field of ['cordonAfterDays', 'retireAfterDays'] as const) {
    const text = values[field].trim();
    if (!text) errors[field] = 'Enter a number of days';
    else numbers[field] = Number(text);
  }
  const result = staleNodesPolicySchema.safeParse(numbers);
  for (const issue of result.success ? [] : result.error.issues) {
    const field = issue.path[0] as StaleFormField;
    if (!errors[field]) errors[field] = Number.isNaN(numbers[field]) ? 'Enter a whole number of days' : issue.message;
  }
  return { policy: Object.keys(errors).length === 0 && result.success ? result.data : null, errors };
}
