import type { z } from 'zod';
import type { Db, Tx } from '../db/client';
import { DomainError } from '../errors';
import { authorize, resource } from '../authz/authorize';
import type { Action } from '../authz/permissions';
import type { Principal } from '../authz/principal';
import type { listNodesInput, NodeDetail, nodeRefInput, NodeSummary } from './schemas';

type NodeRow = Awaited<ReturnType<Db['node']['findUniqueOrThrow']>>;

export const toNodeSummary = (n: NodeRow): NodeSummary => ({
  id: n.id,
  tenantId: n.tenantId,
  siteId: n.siteId,
  poolId: n.poolId,
  role: n.role,
  state: n.state,
  trust: n.trust,
  cordoned: n.cordoned,
  identityGeneration: n.identityGeneration,
  attestor: n.attestor,
  createdAt: n.createdAt.toISOString(),
  updatedAt: n.updatedAt.toISOString(),
});

/**
 * Loads a node after deciding `action` on its pool (on the node itself when it has no pool), and checks that
 * it belongs to the tenant the caller named. A node of another tenant is indistinguishable from a missing one.
 */
export async function loadNode(db: Db | Tx, principal: Principal, action: Action, input: z.infer<typeof nodeRefInput>): Promise<NodeRow> {
  const node = await db.node.findUnique({ where: { id: input.nodeId } });
  if (!node || node.tenantId !== input.tenantId) throw new DomainError('NOT_FOUND', `Node ${input.nodeId} not found`);
  await authorize(db, principal, action, node.poolId ? resource.pool(node.poolId) : resource.node(node.id));
  return node;
}

/** Lists a tenant's nodes, by pool, site and state, oldest first, a page at a time. */
export async function listNodes(db: Db, principal: Principal, input: z.infer<typeof listNodesInput>) {
  await authorize(db, principal, 'compute:nodes:read', input.poolId ? resource.pool(input.poolId) : resource.tenant(input.tenantId));
  const rows = await db.node.findMany({
    where: {
      tenantId: input.tenantId,
      ...(input.poolId ? { poolId: input.poolId } : {}),
      ...(input.siteId ? { siteId: input.siteId } : {}),
      ...(input.state ? { state: input.state } : {}),
      ...(input.cursor ? { id: { gt: input.cursor } } : {}),
    },
    orderBy: { id: 'asc' },
    take: input.limit + 1,
  });
  const page = rows.slice(0, input.limit);
  return { items: page.map(toNodeSummary), nextCursor: rows.length > input.limit ? page[page.length - 1]!.id : null };
}

/** A node's detail: its current certificate, the token it joined with, and its conditions. */
export async function nodeDetail(db: Db | Tx, node: NodeRow): Promise<NodeDetail> {
  const [cert, joined] = await Promise.all([
    db.nodeCert.findFirst({
      where: { nodeId: node.id, identityGeneration: node.identityGeneration, revokedAt: null },
      orderBy: { notAfter: 'desc' },
    }),
    db.auditEntry.findFirst({
      where: { resource: resource.node(node.id), action: { in: ['node.joined', 'node.reclaimed'] } },
      orderBy: { id: 'desc' },
    }),
  ]);
  const conditions = [];
  if (node.state === 'adopting') conditions.push({ type: 'AcceptanceFailed', status: false, message: 'Acceptance checks have not passed yet' });
  if (node.cordoned) conditions.push({ type: 'Cordoned', status: true, message: 'The node takes no new work' });
  if (!cert) conditions.push({ type: 'IdentityValid', status: false, message: 'The node has no live certificate: it must join again' });
  return {
    ...toNodeSummary(node),
    hardwareKeyTrusted: node.hardwareKeyTrusted,
    joinTokenId: joined?.actor.startsWith('join-token:') ? joined.actor.slice('join-token:'.length) : null,
    certificate: cert
      ? { serial: cert.serial, notBefore: cert.notBefore.toISOString(), notAfter: cert.notAfter.toISOString(), identityGeneration: cert.identityGeneration }
      : null,
    conditions,
  };
}

export async function getNode(db: Db, principal: Principal, input: z.infer<typeof nodeRefInput>): Promise<NodeDetail> {
  return nodeDetail(db, await loadNode(db, principal, 'compute:nodes:read', input));
}
