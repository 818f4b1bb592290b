import type { z } from 'zod';
import type { Db, Tx } from '../db/client';
import { DomainError } from '../../protocol/errors';
import { authorize, resource } from '../authz/authorize';
import type { Action } from '../../protocol/api/permissions';
import type { Principal } from '../authz/principal';
import { certificateHistory } from './certificate-history';
import { nodePageFacts } from './detail-page';
import { sessionStates } from '../sessions/node-session-state';
import { countMatchingNodes, matchingNodeIds } from './node-filter';
import { pickNodeFilter, type NodeFilter } from '../../protocol/api/node-filter';
import type {
  listNodesInput,
  NodeDetail,
  NodeListItem,
  nodeRefInput,
  NodeSessionState,
  NodeSummary,
} from '../../protocol/api/node-schemas';
import { decidedByLabel } from '../requests/records';

type NodeRow = Awaited<ReturnType<Db['node']['findUniqueOrThrow']>>;

const toNodeSummary = (n: NodeRow): NodeSummary => ({
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
  labels: n.labels as Record<string, string>,
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

/**
 * Decides reading the nodes a fleet filter names (the pool's, or the tenant's), and answers the tenant the
 * decision was made on with the filter. A pool of one tenant named with another tenant's id is NOT_FOUND.
 */
export async function authorizeNodeFilter(
  db: Db,
  principal: Principal,
  input: NodeFilter & { tenantId: string; poolId?: string },
): Promise<{ tenantId: string; filter: NodeFilter }> {
  const tenantId = await authorize(
    db,
    principal,
    'compute:nodes:read',
    input.poolId ? resource.pool(input.poolId) : resource.tenant(input.tenantId),
  );
  if (tenantId !== input.tenantId) throw new DomainError('NOT_FOUND', `Pool ${input.poolId} not found`);
  return { tenantId, filter: pickNodeFilter(input) };
}

/**
 * Lists a tenant's nodes under the fleet view's filter (server/nodes/node-filter.ts), in id order, a page at a
 * time, with the exact number the filter selects. The filter is the tenant
 * authorization decided on (the pool's owner), never the tenant the caller named: a pool of one tenant named
 * with another tenant's id is NOT_FOUND, as in loadPool.
 */
export async function listNodes(db: Db, principal: Principal, input: z.infer<typeof listNodesInput>) {
  const { tenantId, filter } = await authorizeNodeFilter(db, principal, input);
  const [ids, total] = await Promise.all([
    matchingNodeIds(db, tenantId, filter, { after: input.cursor, limit: input.limit + 1 }),
    countMatchingNodes(db, tenantId, filter),
  ]);
  const pageIds = ids.slice(0, input.limit);
  const rows = await db.node.findMany({ where: { id: { in: pageIds } }, orderBy: { id: 'asc' } });
  return {
    items: await withIdentities(db, rows),
    nextCursor: ids.length > input.limit ? pageIds[pageIds.length - 1]! : null,
    total,
  };
}

/**
 * The node's current certificate is its live one that expires last; validity is kept in whole seconds, so two
 * renewals within a second tie on it, and the later issued (the one the node holds) comes first.
 */
const CURRENT_FIRST = [{ notAfter: 'desc' as const }, { createdAt: 'desc' as const }, { serial: 'desc' as const }];

/** The page's certificates and join tokens in two queries, by the same rules as `nodeDetail` reads one node's. */
async function withIdentities(db: Db, nodes: NodeRow[]): Promise<NodeListItem[]> {
  const ids = nodes.map((n) => n.id);
  const [certs, joins, sessions, requests] = await Promise.all([
    db.nodeCert.findMany({ where: { nodeId: { in: ids }, revokedAt: null }, orderBy: CURRENT_FIRST }),
    db.auditEntry.findMany({
      where: { resource: { in: ids.map(resource.node) }, action: { in: ['node.joined', 'node.reclaimed'] } },
      orderBy: { id: 'desc' },
    }),
    sessionStates(db, nodes),
    admittingRequests(db, ids),
  ]);
  return nodes.map((node) => {
    const cert = certs.find((c) => c.nodeId === node.id && c.identityGeneration === node.identityGeneration);
    const joined = joins.find((j) => j.resource === resource.node(node.id));
    return {
      ...toNodeSummary(node),
      ...identityOf(node, cert ?? null, joined ?? null, sessions.get(node.id)!, requests.get(node.id) ?? null),
    };
  });
}

/** The join request whose approval admitted each node (the newest, if a node was admitted more than once). */
async function admittingRequests(db: Db | Tx, nodeIds: string[]): Promise<Map<string, AdmittingRequest>> {
  const rows = await db.joinRequest.findMany({
    where: { nodeId: { in: nodeIds } },
    select: { id: true, nodeId: true, decidedBy: true, reason: true },
    orderBy: [{ consumedAt: 'asc' }, { id: 'asc' }],
  });
  return new Map(rows.map((r) => [r.nodeId!, { id: r.id, decidedBy: decidedByLabel(r.decidedBy, null, r.reason) }]));
}
/** The request that admitted a node, and who decided it when no person did (`rule <name>`, `import <id>`). */
interface AdmittingRequest {
  id: string;
  decidedBy: string | null;
}

type CertRow = Awaited<ReturnType<Db['nodeCert']['findFirst']>>;
type AuditRow = Awaited<ReturnType<Db['auditEntry']['findFirst']>>;

/** The `nodeKey` the (last) join's audit row recorded: `tpm` or `unattested`, null when it has none. */
function nodeKeyOf(joined: AuditRow): 'tpm' | 'unattested' | null {
  const value = (joined?.data as { nodeKey?: unknown } | null | undefined)?.nodeKey;
  return value === 'tpm' || value === 'unattested' ? value : null;
}

function identityOf(node: NodeRow, cert: CertRow, joined: AuditRow, session: NodeSessionState, request: AdmittingRequest | null) {
  return {
    session,
    trustVersion: node.trustVersion,
    trustVersionAt: node.trustVersionAt?.toISOString() ?? null,
    hardwareKeyTrusted: node.hardwareKeyTrusted,
    hasHardwareKey: node.hardwareKey !== null,
    joinTokenId: joined?.actor.startsWith('join-token:') ? joined.actor.slice('join-token:'.length) : null,
    nodeKey: nodeKeyOf(joined),
    claims: (node.claims ?? {}) as Record<string, unknown>,
    joinRequestId: request?.id ?? null,
    joinRequestDecidedBy: request?.decidedBy ?? null,
    certificate: cert
      ? {
          serial: cert.serial,
          notBefore: cert.notBefore.toISOString(),
          notAfter: cert.notAfter.toISOString(),
          identityGeneration: cert.identityGeneration,
        }
      : null,
  };
}

/** A node's detail: its current certificate and certificate history, the token it joined with, and its conditions. */
export async function nodeDetail(db: Db | Tx, node: NodeRow): Promise<NodeDetail> {
  const [cert, joins, sessions, requests] = await Promise.all([
    db.nodeCert.findFirst({
      where: { nodeId: node.id, identityGeneration: node.identityGeneration, revokedAt: null },
      orderBy: CURRENT_FIRST,
    }),
    // One entry per join of the machine: the newest names the token, all of them name the serials joins issued.
    db.auditEntry.findMany({
      where: { resource: resource.node(node.id), action: { in: ['node.joined', 'node.reclaimed'] } },
      orderBy: { id: 'desc' },
    }),
    sessionStates(db, [node]),
    admittingRequests(db, [node.id]),
  ]);
  const [history, page] = await Promise.all([
    certificateHistory(db, node.id, cert?.serial ?? null, joins),
    nodePageFacts(db, node, cert?.serial ?? null),
  ]);
  const conditions = [];
  const acceptance = await acceptanceCondition(db, node);
  if (acceptance) conditions.push(acceptance);
  if (node.cordoned) conditions.push({ type: 'Cordoned', status: true, message: 'The node takes no new work' });
  if (!cert) conditions.push({ type: 'IdentityValid', status: false, message: 'The node has no live certificate: it must join again' });
  return {
    ...toNodeSummary(node),
    ...identityOf(node, cert, joins[0] ?? null, sessions.get(node.id)!, requests.get(node.id) ?? null),
    ...page,
    conditions,
    ...history,
  };
}

/**
 * AcceptanceFailed, from the node's latest acceptance run of its generation: true with the failing checks and
 * why when it failed; false while one runs, or when none has (an adopting node of a pool whose checks bcd does
 * not run waits for nodes.adopt). An adopted node whose last run passed has no such condition.
 */
async function acceptanceCondition(db: Db | Tx, node: NodeRow) {
  const run = await db.nodeAcceptanceRun.findFirst({
    where: { nodeId: node.id, identityGeneration: node.identityGeneration },
    orderBy: [{ startedAt: 'desc' }, { id: 'desc' }],
  });
  const results = (run?.results ?? []) as Array<{ check: string; passed: boolean; message: string }>;
  if (run?.state === 'failed') {
    const failed = results.filter((r) => !r.passed);
    return {
      type: 'AcceptanceFailed',
      status: true,
      message: `Failed: ${failed.map((r) => `${r.check} (${r.message})`).join('; ')}`,
      checks: results,
    };
  }
  if (node.state !== 'adopting') return null;
  if (run?.state === 'pending')
    return { type: 'AcceptanceFailed', status: false, message: 'Acceptance checks are running', checks: results };
  return { type: 'AcceptanceFailed', status: false, message: 'Acceptance checks have not passed yet', checks: results };
}

export async function getNode(db: Db, principal: Principal, input: z.infer<typeof nodeRefInput>): Promise<NodeDetail> {
  return nodeDetail(db, await loadNode(db, principal, 'compute:nodes:read', input));
}
