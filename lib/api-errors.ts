/**
 * Reading the server's error model in the browser. The tRPC errorFormatter (server/api/trpc.ts) puts the
 * domain code and the input field an error is about into `data`, so a form can show the message next to
 * the field it concerns.
 */
export interface ApiError {
  message: string;
  /** The domain error code (`ALREADY_EXISTS`, `INVALID_ARGUMENT`, …), or null for transport failures. */
  domainCode: string | null;
  /** The input field, dotted (`name`, `policy.joinAttestors`, `acceptanceChecks.0`), when the error names one. */
  field: string | null;
  httpStatus: number | null;
}

type ErrorShape = {
  message?: unknown;
  data?: { domainCode?: unknown; field?: unknown; httpStatus?: unknown; code?: unknown } | null;
};

const asString = (value: unknown) => (typeof value === 'string' && value ? value : null);

export function toApiError(error: unknown): ApiError {
  const shape = (typeof error === 'object' && error !== null ? error : {}) as ErrorShape;
  const data = shape.data ?? {};
  return {
    message: asString(shape.message) ?? 'Something went wrong. Try again.',
    domainCode: asString(data.domainCode),
    field: asString(data.field),
    httpStatus: typeof data.httpStatus === 'number' ? data.httpStatus : null,
  };
}

export function isClientError(error: unknown): boolean {
  const status = toApiError(error).httpStatus;
  return status !== null && status >= 400 && status < 500;
}

/**
 * The message without the `field: ` prefix the server adds for validation errors, for display next to
 * the field itself, where the prefix would only repeat the label.
 */
export function fieldMessage(error: ApiError): string {
  if (error.field && error.message.startsWith(`${error.field}: `)) return error.message.slice(error.field.length + 2);
  return error.message;
}
