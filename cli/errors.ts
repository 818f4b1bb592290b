import { ERROR_MAP, EXIT_INTERNAL } from '../server/error-map';
import { DomainError, DOMAIN_ERROR_CODES, type DomainErrorCode } from '../protocol/errors';
import { AGENT_EXIT, AgentError, errorLine } from '../agent/errors';

/**
 * The exit code of an error: the server's table (server/error-map.ts) for a domain error, 2 for commander's
 * usage errors, else the agent's table (agent/errors.ts): `better-compute agent` ends as bcd does, and an error
 * neither table knows exits 1.
 */
function exitCodeOf(error: unknown): number {
  if (error instanceof DomainError) return ERROR_MAP[error.code].exit;
  if (error && typeof error === 'object' && 'code' in error && (error as { code: string }).code === 'commander.invalidArgument') return 2;
  return error instanceof AgentError ? AGENT_EXIT[error.code] : EXIT_INTERNAL;
}

export function isDomainCode(code: unknown): code is DomainErrorCode {
  return typeof code === 'string' && (DOMAIN_ERROR_CODES as readonly string[]).includes(code);
}

/** The CLI's one error handler: a clear message, never a stack trace; answers the non-zero exit code. */
export function printError(error: unknown): number {
  const code = error instanceof DomainError ? ` (${error.code})` : '';
  process.stderr.write(`error${code}: ${errorLine(error)}\n`);
  return exitCodeOf(error);
}
