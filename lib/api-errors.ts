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
  /** No answer from the API itself: the network failed, or something in between (a proxy) answered with its own page. */
  isUnreachable?: boolean;
}

export const UNREACHABLE_MESSAGE = 'The server could not be reached: the network or a proxy in front of it failed. Try again.';

/**
 * The messages of a failed fetch (Chromium, Firefox, Safari) and of JSON.parse given an HTML error page
 * (`Unexpected token '<'`, `… is not valid JSON`): neither came from the API, so neither is worth showing.
 */
const TRANSPORT_FAILURE =
  /failed to fetch|networkerror|load failed|network request failed|unexpected token|not valid json|json\.parse|unexpected end of json|unexpected character/i;

type ErrorShape = {
  message?: unknown;
  data?: { domainCode?: unknown; field?: unknown; httpStatus?: unknown; code?: unknown } | null;
};

const asString = (value: unknown) => (typeof value === 'string' && value ? value : null);

export function toApiError(error: unknown): ApiError {
  const shape = (typeof error === 'object' && error !== null ? error : {}) as ErrorShape;
  const data = shape.data ?? {};
  const message = asString(shape.message);
  // An answer from the API always carries `data` (the errorFormatter's); without it, look at what failed.
  const isUnreachable = !shape.data && message !== null && TRANSPORT_FAILURE.test(message);
  return {
    message: isUnreachable ? UNREACHABLE_MESSAGE : (message ?? 'Something went wrong. Try again.'),
    domainCode: asString(data.domainCode),
    field: asString(data.field),
    httpStatus: typeof data.httpStatus === 'number' ? data.httpStatus : null,
    isUnreachable,
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
