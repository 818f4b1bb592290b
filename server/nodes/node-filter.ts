import type { Prisma } from '../db/generated/client';
import type { Db, Tx } from '../db/client';
import { parseLabelArgument } from '../../protocol/api/labels';
import type { NodeFilter } from '../../protocol/api/node-filter';
import { connectedFilter } from '../sessions/node-session-state';

/**
 * The nodes of `tenantId` that `filter` selects, as a Prisma filter: the list, its export and the bulk actions
 * all read it, so "every matching node" is exactly what the list shows.
 */
export function nodeWhere(tenantId: string, filter: NodeFilter, now = new Date()): Prisma.NodeWhereInput {
  const and: Prisma.NodeWhereInput[] = [{ tenantId }];
  if (filter.poolId) and.push({ poolId: filter.poolId });
  if (filter.siteId) and.push({ siteId: filter.siteId });
  if (filter.state) and.push({ state: filter.state });
  if (filter.connected !== undefined) and.push(connectedFilter(filter.connected));
  if (filter.role) and.push({ role: filter.role });
  if (filter.attestor) and.push({ attestor: filter.attestor });
  if (filter.nodeKey === 'trusted') and.push({ hardwareKeyTrusted: true });
  if (filter.nodeKey === 'unattested') and.push({ hardwareKeyTrusted: false, NOT: { hardwareKey: null } });
  if (filter.nodeKey === 'none') and.push({ hardwareKey: null });
  if (filter.trustVersion !== undefined) and.push({ trustVersion: filter.trustVersion });
  if (filter.expiringWithinSeconds !== undefined)
    and.push({ certNotAfter: { lte: new Date(now.getTime() + filter.expiringWithinSeconds * 1000) } });
  for (const text of filter.labels ?? []) {
    const label = parseLabelArgument(text)!;
    and.push({ labels: { path: [label.key], equals: label.value } });
  }
  if (filter.search) {
    const text = filter.search;
    and.push({
      OR: [
        { id: { contains: text, mode: 'insensitive' } },
        { claims: { path: ['hostname'], string_contains: text } },
        { claims: { path: ['serial'], string_contains: text } },
        { claims: { path: ['productUuid'], string_contains: text } },
      ],
    });
  }
  return { AND: and };
}

/**
 * The ids of the nodes `filter` selects, in id order, a page at a time (`after`: the last id of the previous page):
 * what an export or a bulk action walks, never every row at once.
 */
export async function matchingNodeIds(
  db: Db | Tx,
  tenantId: string,
  filter: NodeFilter,
  page: { after?: string; limit: number },
): Promise<string[]> {
  const rows = await db.node.findMany({
    where: { AND: [nodeWhere(tenantId, filter), ...(page.after ? [{ id: { gt: page.after } }] : [])] },
    select: { id: true },
    orderBy: { id: 'asc' },
    take: page.limit,
  });
  return rows.map((row) => row.id);
}
