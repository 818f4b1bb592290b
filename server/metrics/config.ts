import { DomainError } from '../../protocol/errors';

const LOG_LEVELS = ['debug', 'info', 'warn', 'error', 'silent'];

/**
 * The observability settings, checked at start: a scrape token short enough to guess is refused, and so is a
 * log level that would otherwise silently mean `info`.
 */
export function checkObservabilityConfig(env: Record<string, string | undefined>): void {
  const token = env.BETTER_COMPUTE_METRICS_TOKEN;
  if (token !== undefined && token !== '' && (token.length < 16 || /\s/.test(token))) {
    throw new DomainError(
      'INVALID_CONFIG',
      'BETTER_COMPUTE_METRICS_TOKEN must be at least 16 characters without spaces (openssl rand -base64 24)',
    );
  }
  const level = env.BETTER_COMPUTE_LOG_LEVEL;
  if (level !== undefined && level !== '' && !LOG_LEVELS.includes(level.toLowerCase())) {
    throw new DomainError('INVALID_CONFIG', `BETTER_COMPUTE_LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, not ${level}`);
  }
}
