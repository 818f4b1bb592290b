import { DomainError } from '@/protocol/errors';
import { normalizeExpect } from '@/protocol/api/join-expect';
import { TOKEN_LIMITS } from '@/protocol/api/token-schemas';
import { fieldMessage } from './api-errors';
import { parseLifetime } from './duration';
import { CUSTOM_TTL, EXPECT_KEYS, type JoinTokenFormField, type JoinTokenFormValues } from './join-token-form';

export type JoinTokenFieldErrors = Partial<Record<JoinTokenFormField, string>>;

/**
 * Every problem of the form at once, in the server's words, before anything is sent: the server stops at
 * the first. Identifiers are checked by the server's own `normalizeExpect`, so the two cannot disagree;
 * the server still checks everything again.
 */
export function validateJoinTokenForm(values: JoinTokenFormValues): JoinTokenFieldErrors {
  const errors: JoinTokenFieldErrors = {};
  if (values.ttlChoice === CUSTOM_TTL) {
    const seconds = parseLifetime(values.customTtl);
    const { min, max } = TOKEN_LIMITS.ttlSeconds;
    if (Number.isNaN(seconds)) errors.ttlSeconds = 'use a duration like 90m, 1h30m or 24h, or a number of seconds';
    else if (seconds < min || seconds > max)
      errors.ttlSeconds = `${values.customTtl.trim()} is ${seconds} seconds; use 1m to 24h (60 to 86400 seconds)`;
  }
  const maxUses = values.maxUses.trim();
  const { min, max } = TOKEN_LIMITS.maxUses;
  if (!/^\d+$/.test(maxUses) || Number(maxUses) < min || Number(maxUses) > max) errors.maxUses = `use a whole number from ${min} to ${max}`;
  for (const key of EXPECT_KEYS) {
    const value = values.expect[key].trim();
    if (!value) continue;
    try {
      normalizeExpect({ [key]: value });
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      errors[`expect.${key}`] = fieldMessage({ message: error.message, field: `expect.${key}`, domainCode: error.code, httpStatus: 400 });
    }
  }
  return errors;
}
