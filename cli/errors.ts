import { ERROR_MAP, EXIT_INTERNAL } from '../server/error-map';
import { DomainError, DOMAIN_ERROR_CODES, type DomainErrorCode } from '../protocol/errors';

/** An error the CLI reports as one line on stderr, exiting with the code the error table gives. */
function exitCodeOf(error: unknown): number {
  if (error instanceof DomainError) return ERROR_MAP[error.code].exit;
  if (error && typeof error === 'object' && 'code' in error && (error as { code: string }).code === 'commander.invalidArgument') return 2;
  return EXIT_INTERNAL;
}

export function isDomainCode(code: unknown): code is DomainErrorCode {
  return typeof code === 'string' && (DOMAIN_ERROR_CODES as readonly string[]).includes(code);
}

/** The CLI's one error handler: a clear message, never a stack trace; answers the non-zero exit code. */
export function printError(error: unknown): number {
  if (error instanceof DomainError) {
    process.stderr.write(`error (${error.code}): ${error.message}\n`);
  } else if (error instanceof Error) {
    process.stderr.write(`error: ${error.message}\n`);
  } else {
    process.stderr.write(`error: ${String(error)}\n`);
  }
  return exitCodeOf(error);
}
