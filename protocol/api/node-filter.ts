import { z } from 'zod';
import { searchText } from './join-request-filter';
import { labelSelector } from './labels';

// The fleet view's node filter, with no database code: the console's client bundle imports it (through
// protocol/api/node-schemas.ts), and server/nodes/node-filter.ts turns it into SQL. The list, its export and the
// bulk actions all take it, so "select all matching" means exactly the rows the list shows.

/** A year of seconds: expiry windows beyond it are no filter anyone means. */
const MAX_WINDOW_SECONDS = 31_622_400;

const NODE_KEY_TRUST = ['trusted', 'unattested', 'none'] as const;

/** What narrows the node list. Flat, so REST takes them as query parameters; together they are an AND. */
export const nodeFilterFields = {
  /**
   * Case-insensitive text found in the node id, the claims' hostname, serials, product UUID, MACs (with `:`, `-`
   * or no separators) or IPs, or a label's value.
   */
  search: searchText,
  poolId: z.string().min(1).max(100).optional(),
  siteId: z.string().min(1).max(100).optional(),
  state: z.enum(['adopting', 'adopted', 'retired']).optional(),
  /** Only nodes with (true) or without (false) a live session. */
  connected: z.boolean().optional(),
  role: z
    .string()
    .min(1)
    .max(64)
    .regex(/^[a-z0-9-]+$/)
    .optional(),
  attestor: z
    .string()
    .min(1)
    .max(64)
    .regex(/^[a-z0-9-]+$/)
    .optional(),
  /** The node key's trust: `trusted` (a hardware key the control plane verified), `unattested`, `none` (no hardware key). */
  nodeKey: z.enum(NODE_KEY_TRUST).optional(),
  /** Only nodes whose agent reported exactly this trust set version. */
  trustVersion: z.number().int().min(0).optional(),
  /** Only nodes whose current certificate ends within this many seconds (expired ones included). */
  expiringWithinSeconds: z.number().int().min(0).max(MAX_WINDOW_SECONDS).optional(),
  /** Every `key=value` given must be one of the node's labels. */
  labels: z.array(labelSelector).max(16).optional(),
};
/** The filter as `z.strictObject(nodeFilterFields)` parses it (the schemas that take it add their own fields). */
export type NodeFilter = z.infer<z.ZodObject<typeof nodeFilterFields, z.core.$strict>>;

const FILTER_KEYS = Object.keys(nodeFilterFields) as Array<keyof NodeFilter>;

/** The filter fields of a parsed input, without its other fields (tenant, cursor, limit). */
export function pickNodeFilter(input: NodeFilter & Record<string, unknown>): NodeFilter {
  return Object.fromEntries(FILTER_KEYS.filter((key) => input[key] !== undefined).map((key) => [key, input[key]])) as NodeFilter;
}
