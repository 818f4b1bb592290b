/**
 * The closed set of domain error codes. The core throws DomainError; adapters map it once
 * (server/error-map.ts) to tRPC, HTTP and CLI exit codes. Messages are written for operators and never
 * carry secrets.
 */
export const DOMAIN_ERROR_CODES = [
  'NOT_FOUND',
  'INVALID_STATE',
  'CONFLICT',
  'INVALID_ARGUMENT',
  'ALREADY_EXISTS',
  'INVALID_CONFIG',
  'ACCESS_DENIED',
  'UNAUTHENTICATED',
] as const;

export type DomainErrorCode = (typeof DOMAIN_ERROR_CODES)[number];

export class DomainError extends Error {
  readonly code: DomainErrorCode;
  /** The input field the error is about, when there is one (for example `ttlSeconds`). */
  readonly field?: string;

  constructor(code: DomainErrorCode, message: string, options: { field?: string; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'DomainError';
    this.code = code;
    this.field = options.field;
  }
}

export const invalidArgument = (field: string, message: string) => new DomainError('INVALID_ARGUMENT', `${field}: ${message}`, { field });
