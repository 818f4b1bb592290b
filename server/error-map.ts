import { DomainError, type DomainErrorCode } from '../protocol/errors';

/** One table for every transport: tRPC code, HTTP status and CLI exit code per domain error code. */
export const ERROR_MAP: Record<
  DomainErrorCode,
  {
    trpc: 'NOT_FOUND' | 'PRECONDITION_FAILED' | 'CONFLICT' | 'BAD_REQUEST' | 'SERVICE_UNAVAILABLE' | 'FORBIDDEN' | 'UNAUTHORIZED';
    http: number;
    exit: number;
  }
> = {
  INVALID_ARGUMENT: { trpc: 'BAD_REQUEST', http: 400, exit: 2 },
  NOT_FOUND: { trpc: 'NOT_FOUND', http: 404, exit: 3 },
  ACCESS_DENIED: { trpc: 'FORBIDDEN', http: 403, exit: 4 },
  UNAUTHENTICATED: { trpc: 'UNAUTHORIZED', http: 401, exit: 4 },
  INVALID_STATE: { trpc: 'PRECONDITION_FAILED', http: 412, exit: 5 },
  CONFLICT: { trpc: 'CONFLICT', http: 409, exit: 6 },
  ALREADY_EXISTS: { trpc: 'CONFLICT', http: 409, exit: 7 },
  INVALID_CONFIG: { trpc: 'SERVICE_UNAVAILABLE', http: 503, exit: 8 },
};

/** Exit code for an unexpected failure (a bug or an unreachable server). */
export const EXIT_INTERNAL = 1;

/** The JSON body every REST error answers with. */
interface ErrorBody {
  code: DomainErrorCode | 'INTERNAL';
  message: string;
  field?: string;
}

export function toErrorBody(error: unknown): { status: number; body: ErrorBody } {
  if (error instanceof DomainError) {
    const body: ErrorBody = { code: error.code, message: error.message };
    if (error.field) body.field = error.field;
    return { status: ERROR_MAP[error.code].http, body };
  }
  return { status: 500, body: { code: 'INTERNAL', message: 'Internal error' } };
}
