import Link from 'next/link';
import { withTenant } from '@/lib/tenant-url';

/**
 * Where an identifier in an event's data leads in the console: its pool's join tokens for a token or a
 * pool, the node's page, and the join-request queue opened on that request. Ids the console has no page for stay plain text.
 */
function hrefFor(key: string, value: string, data: Record<string, unknown>, tenantId: string): string | null {
  const poolId = typeof data.poolId === 'string' ? data.poolId : null;
  switch (key) {
    case 'poolId':
      return withTenant(`/join-tokens?pool=${encodeURIComponent(value)}`, tenantId);
    case 'tokenId':
      return poolId ? withTenant(`/join-tokens?pool=${encodeURIComponent(poolId)}`, tenantId) : null;
    case 'nodeId':
    case 'matchedNodeId':
      return withTenant(`/nodes/${encodeURIComponent(value)}`, tenantId);
    case 'requestId': {
      // The queue shows a request on its pool's page; `state=all` finds it whatever was decided since.
      const params = new URLSearchParams({ ...(poolId ? { pool: poolId } : {}), state: 'all', request: value });
      return withTenant(`/join-requests?${params.toString()}`, tenantId);
    }
    default:
      return null;
  }
}

/** `csrSha256` → `CSR SHA-256`: the data's keys as words. */
function labelOf(key: string): string {
  const special: Record<string, string> = {
    csrSha256: 'CSR SHA-256',
    tokenId: 'token',
    poolId: 'pool',
    siteId: 'site',
    nodeId: 'node',
    matchedNodeId: 'matched node',
    requestId: 'request',
  };
  return special[key] ?? key.replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase();
}

function valueText(value: unknown): string {
  if (value === null || value === undefined) return '—';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value);
}

/** An event's data in one line of text: its values, operators by name, for a row that must stay one line. */
export function eventSummary(data: Record<string, unknown>, actorNames: Record<string, string> = {}): string {
  return Object.values(data)
    .map((value) => (typeof value === 'string' && actorNames[value]) || valueText(value))
    .join(' · ');
}

/** An event's data as labelled fields, ids linked to their pages, instead of raw JSON. */
export function EventDetails({
  data,
  tenantId,
  actorNames = {},
}: {
  data: Record<string, unknown>;
  tenantId: string;
  actorNames?: Record<string, string>;
}) {
  const entries = Object.entries(data);
  if (!entries.length) return <span className="muted">no details</span>;
  return (
    <dl className="details">
      {entries.map(([key, value]) => {
        // Operators by name (else email), never by id; the id stays on hover.
        const name = typeof value === 'string' ? actorNames[value] : undefined;
        const text = name ?? valueText(value);
        const href = typeof value === 'string' ? hrefFor(key, value, data, tenantId) : null;
        return (
          <div key={key}>
            <dt>{labelOf(key)}</dt>
            <dd>
              {href ? (
                <Link href={href}>{text}</Link>
              ) : name ? (
                <strong title={value as string}>{name}</strong>
              ) : key === 'actor' ? (
                <strong>{text}</strong>
              ) : (
                <code>{text}</code>
              )}
            </dd>
          </div>
        );
      })}
    </dl>
  );
}
