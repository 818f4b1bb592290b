import { z } from 'zod';

// The queue filter's shape, with no database code: the console's client bundle imports it (through
// protocol/api/join-request-schemas.ts), and server/requests/filter.ts turns it into SQL.

/** A day of seconds times 366: ages beyond a year are no filter anyone means. */
const MAX_AGE_SECONDS = 31_622_400;

/** A filter's free-text search: trimmed, 1 to 200 printable characters. */
export const searchText = z
  .string()
  .trim()
  .min(1)
  .max(200)
  .regex(/^[^\p{Cc}]*$/u, 'must be printable')
  .optional();

/**
 * What narrows the queue (the console's search box and filters, the CLI's `--all-pending` options). Flat, so
 * REST takes them as query parameters. Every field is optional; together they are an AND.
 */
export const requestFilterFields = {
  /**
   * Case-insensitive text found in the request id, the vouched MAC, the IP, or the claims' hostname, serials,
   * product UUID, MACs or GPU UUIDs. A MAC matches with `:`, `-` or no separators.
   */
  search: searchText,
  attestor: z
    .string()
    .min(1)
    .max(64)
    .regex(/^[a-z0-9-]+$/, 'an attestor name (lower case)')
    .optional(),
  /** Exactly the `vouchedBy` of the request (the identity that minted its discovery token). */
  vouchedBy: z.string().min(1).max(200).optional(),
  /** true: only requests whose hardware key is trusted; false: only the others. */
  trustedKey: z.boolean().optional(),
  /** Only requests that asked at least this many seconds ago. */
  minAgeSeconds: z.number().int().min(0).max(MAX_AGE_SECONDS).optional(),
  /** Only requests that asked at most this many seconds ago. */
  maxAgeSeconds: z.number().int().min(0).max(MAX_AGE_SECONDS).optional(),
};
/** The filter as `z.strictObject(requestFilterFields)` parses it (the schemas that take it add their own fields). */
export type RequestFilter = z.infer<z.ZodObject<typeof requestFilterFields, z.core.$strict>>;

/** The filter fields of a parsed input, without its other fields (pool, cursor, state, limit). */
export function pickFilter(input: RequestFilter & Record<string, unknown>): RequestFilter {
  const { search, attestor, vouchedBy, trustedKey, minAgeSeconds, maxAgeSeconds } = input;
  return Object.fromEntries(
    Object.entries({ search, attestor, vouchedBy, trustedKey, minAgeSeconds, maxAgeSeconds }).filter(([, v]) => v !== undefined),
  );
}
