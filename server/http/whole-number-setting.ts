import { DomainError } from '../../protocol/errors';

/**
 * The whole number an environment variable sets, `fallback` when it is unset or empty.
 *
 * @throws DomainError INVALID_CONFIG naming the variable when its value is not a whole number from `min` to `max`.
 */
export function wholeNumberSetting(
  env: Record<string, string | undefined>,
  name: string,
  min: number,
  max: number,
  fallback: number,
): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new DomainError('INVALID_CONFIG', `${name} must be a whole number from ${min} to ${max}, not ${raw}`);
  }
  return n;
}
