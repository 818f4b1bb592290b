import type { Db, Tx } from '../db/client';
import { typed } from '../db/typed';
import { DomainError } from '../../protocol/errors';
import { authorize, resource } from '../authz/authorize';
import type { Principal } from '../authz/principal';
import { pickNodeFilter } from '../../protocol/api/node-filter';
import { NODE_BULK_PAGE, type NodeBulkInput, type NodeBulkResult } from '../../protocol/api/node-bulk-schemas';
import { matchingNodeIds } from './node-filter';
import { applyCordon, applyRevokeIdentity } from './lifecycle';
import { changeLockedNodeLabels } from './labels';

type NodeRow = Awaited<ReturnType<Tx['node']['findUniqueOrThrow']>>;
type Outcome = 'changed' | 'unchanged';

/** A bulk page is one transaction: long enough for 50 revocations on a busy database, short enough to hold its locks. */
const PAGE_TRANSACTION = { maxWait: 10_000, timeout: 60_000 };

/**
 * Sets and removes labels on a node whose row lock `tx` holds, exactly as the label editor does
 * (changeLockedNodeLabels: audited and published as `node.labels-changed` with the labels before and after).
 * INVALID_ARGUMENT when the result breaks the label limits.
 */
async function applyLabels(tx: Tx, principal: Principal, node: NodeRow, set: Record<string, string>, remove: string[]): Promise<Outcome> {
  const result = await changeLockedNodeLabels(tx, principal.actor, node, { set, remove, replace: false });
  return result.changed ? 'changed' : 'unchanged';
}

async function applyOne(tx: Tx, principal: Principal, node: NodeRow, input: NodeBulkInput): Promise<Outcome> {
  switch (input.action) {
    case 'cordon':
    case 'uncordon':
      return (await applyCordon(tx, principal, node, input.action === 'cordon')) ? 'changed' : 'unchanged';
    case 'revoke-identity':
      await applyRevokeIdentity(tx, principal, node);
      return 'changed';
    case 'set-labels':
      return applyLabels(tx, principal, node, input.set ?? {}, input.remove ?? []);
    default:
      throw new DomainError('INVALID_ARGUMENT', `Unknown bulk action ${String(input.action)}`);
  }
}

/**
 * `nodes.bulk`: one action (cordon, uncordon, revoke identity, set labels) on the named nodes, or with `matching`
 * on the next page (at most 50, in id order after `after`) of the nodes the fleet list's filter selects, as the
 * queue's bulk decisions do: the caller repeats with `nextAfter` until it is null. Each node is changed by the
 * same function as its single action, under its row lock, with one audit row and event per node; a page is one
 * transaction. Decided as `compute:nodes:manage` on the tenant, then on each node's pool: a node the caller may
 * not manage, a retired one to cordon, or one whose labels would break the limits is `skipped` with why.
 */
export async function bulkNodeAction(db: Db, principal: Principal, input: NodeBulkInput): Promise<NodeBulkResult> {
  const tenantId = await authorize(db, principal, 'compute:nodes:manage', resource.tenant(input.tenantId));
  if (tenantId !== input.tenantId) throw new DomainError('NOT_FOUND', `Tenant ${input.tenantId} not found`);
  const page = input.matching
    ? await matchingNodeIds(db, tenantId, pickNodeFilter(input.matching), { after: input.after, limit: NODE_BULK_PAGE })
    : [...new Set(input.nodeIds!)].sort();
  const nextAfter = input.matching && page.length === NODE_BULK_PAGE ? page[page.length - 1]! : null;
  const result: NodeBulkResult = { changed: [], unchanged: [], skipped: [], nextAfter };
  if (!page.length) return result;
  const createdUpTo = input.matching?.createdUpTo ? new Date(input.matching.createdUpTo) : null;
  await db.$transaction(async (tx) => {
    // Locked in id order, the order every bulk page takes them, so two bulk actions never deadlock.
    await typed(tx)
      .selectFrom('nodes')
      .select('id')
      .where('id', 'in', page)
      .where('tenant_id', '=', tenantId)
      .orderBy('id')
      .forUpdate()
      .execute();
    const rows = new Map((await tx.node.findMany({ where: { id: { in: page }, tenantId } })).map((n) => [n.id, n]));
    const allowed = new Map<string, string | null>();
    for (const id of page) {
      const node = rows.get(id);
      if (!node) {
        result.skipped.push({ nodeId: id, reason: 'not found' });
        continue;
      }
      // A node that joined after the operator counted the matches is not changed unseen.
      if (createdUpTo && node.createdAt > createdUpTo) continue;
      const denied = await deniedOn(tx, principal, node, allowed);
      if (denied) {
        result.skipped.push({ nodeId: id, reason: denied });
        continue;
      }
      try {
        result[await applyOne(tx, principal, node, input)].push(id);
      } catch (error) {
        // Domain refusals are raised before the node's first write, so the page's other nodes stand.
        if (!(error instanceof DomainError)) throw error;
        result.skipped.push({ nodeId: id, reason: error.message });
      }
    }
  }, PAGE_TRANSACTION);
  return result;
}

/** Why the caller may not manage the node (its pool, else the node itself), decided once per pool; null when it may. */
async function deniedOn(tx: Tx, principal: Principal, node: NodeRow, cache: Map<string, string | null>): Promise<string | null> {
  const target = node.poolId ? resource.pool(node.poolId) : resource.node(node.id);
  if (!cache.has(target)) {
    const verdict = await authorize(tx, principal, 'compute:nodes:manage', target).then(
      () => null,
      (error: unknown) => {
        if (error instanceof DomainError) return error.code === 'NOT_FOUND' ? 'not found' : 'not permitted';
        throw error;
      },
    );
    cache.set(target, verdict);
  }
  return cache.get(target)!;
}
