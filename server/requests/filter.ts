import { z } from 'zod';
import { Prisma } from '../db/generated/client';

/** A day of seconds times 366: ages beyond a year are no filter anyone means. */
const MAX_AGE_SECONDS = 31_622_400;

/**
 * What narrows the queue (the console's search box and filters, the CLI's `--all-pending` options). Flat, so
 * REST takes them as query parameters. Every field is optional; together they are an AND.
 */
export const requestFilterFields = {
  /**
   * Case-insensitive text found in the request id, the vouched MAC, the IP, or the claims' hostname, serials,
   * product UUID, MACs or GPU UUIDs. A MAC matches with `:`, `-` or no separators.
   */
  search: z.string().trim().min(1).max(200).regex(/^[^\p{Cc}]*$/u, 'must be printable').optional(),
  attestor: z.string().min(1).max(64).regex(/^[a-z0-9-]+$/, 'an attestor name (lower case)').optional(),
  /** Exactly the `vouchedBy` of the request (the identity that minted its discovery token). */
  vouchedBy: z.string().min(1).max(200).optional(),
  /** true: only requests whose hardware key is trusted; false: only the others. */
  trustedKey: z.boolean().optional(),
  /** Only requests that asked at least this many seconds ago. */
  minAgeSeconds: z.number().int().min(0).max(MAX_AGE_SECONDS).optional(),
  /** Only requests that asked at most this many seconds ago. */
  maxAgeSeconds: z.number().int().min(0).max(MAX_AGE_SECONDS).optional(),
};
export const requestFilter = z.strictObject(requestFilterFields);
export type RequestFilter = z.infer<typeof requestFilter>;

/** `%`, `_` and `\` stand for themselves in the search text. */
const likeEscape = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`);

/**
 * The text a search reads, one line per request: the fields the issue names and nothing secret (no CSR hash,
 * no token id). MACs are also given as bare hex digits so `3cecef`, `3c:ec:ef` and `3c-ec-ef` all match.
 */
const SEARCHED = Prisma.sql`lower(concat_ws(' ', id, mac, replace(mac, ':', ''), ip, claims->>'hostname', claims->>'productSerial',
  claims->>'boardSerial', claims->>'chassisSerial', claims->>'productUuid', claims->'macs', claims->'gpuUuids'))`;

/** The SQL condition (ANDed, with a leading AND) a filter adds to a statement over `join_requests`. */
export function filterCondition(filter: RequestFilter): Prisma.Sql {
  const parts: Prisma.Sql[] = [];
  if (filter.search) {
    const text = filter.search.toLowerCase();
    const bare = text.replace(/[:-]/g, '');
    // A MAC typed with separators also matches the bare digits of the stored one.
    const alternatives = [...new Set([text, bare.length >= 2 && /^[0-9a-f]+$/.test(bare) ? bare : text])];
    // LIKE ANY: the searched text is built once per row, whatever the number of alternatives.
    parts.push(Prisma.sql`${SEARCHED} LIKE ANY(${alternatives.map((a) => `%${likeEscape(a)}%`)}::text[])`);
  }
  if (filter.attestor) parts.push(Prisma.sql`attestor = ${filter.attestor}`);
  if (filter.vouchedBy) parts.push(Prisma.sql`vouched_by = ${filter.vouchedBy}`);
  if (filter.trustedKey === true) parts.push(Prisma.sql`hardware_key_trusted IS TRUE`);
  if (filter.trustedKey === false) parts.push(Prisma.sql`hardware_key_trusted IS NOT TRUE`);
  if (filter.minAgeSeconds !== undefined) parts.push(Prisma.sql`created_at <= compute_now() - ${filter.minAgeSeconds}::int * interval '1 second'`);
  if (filter.maxAgeSeconds !== undefined) parts.push(Prisma.sql`created_at >= compute_now() - ${filter.maxAgeSeconds}::int * interval '1 second'`);
  return parts.length ? Prisma.sql`AND ${Prisma.join(parts, ' AND ')}` : Prisma.empty;
}

/** The filter fields of a parsed input, without its other fields (pool, cursor, state, limit). */
export function pickFilter(input: RequestFilter & Record<string, unknown>): RequestFilter {
  const { search, attestor, vouchedBy, trustedKey, minAgeSeconds, maxAgeSeconds } = input;
  return Object.fromEntries(Object.entries({ search, attestor, vouchedBy, trustedKey, minAgeSeconds, maxAgeSeconds }).filter(([, v]) => v !== undefined));
}
