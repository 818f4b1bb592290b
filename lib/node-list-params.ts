import { z } from 'zod';
import { nodeFilterFields, type NodeFilter } from '@/protocol/api/node-filter';

/**
 * The nodes page's filter in its URL: `?q=` (the search), `?pool=`, `?site=`, `?state=`, `?connected=true|false`,
 * `?role=`, `?attestor=`, `?key=trusted|unattested|none`, `?expiring=1d|7d|30d` and `?label=k=v,k2=v2` (a label
 * value holds no comma). The page in the browser, the server's read-ahead and the export link read it here, so the
 * three ask for the same nodes.
 */
export const NODE_LIST_PARAMS = ['q', 'pool', 'site', 'state', 'connected', 'role', 'attestor', 'key', 'expiring', 'label'] as const;
export type NodeListParams = Record<(typeof NODE_LIST_PARAMS)[number], string | null>;

/** The certificate-expiry choices the page offers, as `?expiring=` values. */
export const EXPIRING_CHOICES = { '1d': 86_400, '7d': 7 * 86_400, '30d': 30 * 86_400 } as const;

const one = <T>(schema: z.ZodType<T>, value: string | null | undefined): { value?: T; bad: boolean } => {
  if (value === null || value === undefined || value === '') return { bad: false };
  const parsed = schema.safeParse(value);
  return parsed.success ? { value: parsed.data, bad: false } : { bad: true };
};

/** The filter the URL names, and the parameters it names that no filter takes (shown, so they do not silently do nothing). */
export function nodeListFilterOf(params: Partial<NodeListParams>): { filter: NodeFilter; ignored: string[] } {
  const ignored: string[] = [];
  const filter: NodeFilter = {};
  const take = <K extends keyof NodeFilter>(name: string, key: K, parsed: { value?: NodeFilter[K]; bad: boolean }) => {
    if (parsed.bad) ignored.push(name);
    else if (parsed.value !== undefined) filter[key] = parsed.value;
  };
  take('q', 'search', one(nodeFilterFields.search, params.q));
  take('pool', 'poolId', one(z.string().regex(/^pool_[0-9a-z]+$/), params.pool));
  take('site', 'siteId', one(z.string().regex(/^site_[0-9a-z]+$/), params.site));
  take('state', 'state', one(nodeFilterFields.state, params.state));
  take(
    'connected',
    'connected',
    one(
      z.enum(['true', 'false']).transform((v) => v === 'true'),
      params.connected,
    ),
  );
  take('role', 'role', one(nodeFilterFields.role, params.role));
  take('attestor', 'attestor', one(nodeFilterFields.attestor, params.attestor));
  take('key', 'nodeKey', one(nodeFilterFields.nodeKey, params.key));
  take(
    'expiring',
    'expiringWithinSeconds',
    one(
      z.enum(Object.keys(EXPIRING_CHOICES) as [keyof typeof EXPIRING_CHOICES]).transform((v) => EXPIRING_CHOICES[v]),
      params.expiring,
    ),
  );
  take(
    'label',
    'labels',
    one(
      z
        .string()
        .transform((v) => v.split(',').filter(Boolean))
        .pipe(nodeFilterFields.labels.unwrap()),
      params.label,
    ),
  );
  return { filter, ignored };
}

/** The REST query of a filter (the export's): lists repeat their parameter. */
function nodeFilterQuery(filter: NodeFilter): string {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(filter) as Array<[string, unknown]>) {
    if (Array.isArray(value)) for (const item of value) query.append(key, String(item));
    else if (value !== undefined) query.set(key, String(value));
  }
  return query.toString();
}

/** The CSV export of the nodes a filter selects (server/entry/nodes-export.ts). */
export function nodeExportHref(tenantId: string, filter: NodeFilter): string {
  const query = nodeFilterQuery(filter);
  return `/api/compute/v1/tenants/${encodeURIComponent(tenantId)}/nodes/export.csv${query ? `?${query}` : ''}`;
}
