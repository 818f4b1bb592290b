import type { z } from 'zod';
import { sql } from 'kysely';
import type { Db, Tx } from '../db/client';
import { typed } from '../db/typed';
import { DomainError } from '../../protocol/errors';
import { resource } from '../authz/authorize';
import type { Principal } from '../authz/principal';
import { publishEvent, writeAudit } from '../events/publish';
import { applyLabelChange, formatLabelList, labelsSchema, type LabelChange } from '../../protocol/api/labels';
import type { setNodeLabelsInput } from '../../protocol/api/node-labels-schemas';
import type { NodeDetail } from '../../protocol/api/node-schemas';
import { loadNode, nodeDetail } from './nodes';
import { lockNode } from './node-lock';

// Operators' edits of a node's labels. Labels are descriptive only: they never reach a certificate (issuance
// reads none of them) and never enter an authorization decision (authorize() is decided on pools and nodes).

/** What a change did to one node: its labels before and after, and whether they differ. */
interface NodeLabelsChanged {
  nodeId: string;
  previous: Record<string, string>;
  labels: Record<string, string>;
  changed: boolean;
}

/**
 * Applies `change` to a node whose row the caller locked in `tx`, and, when the labels differ, writes them,
 * the `node.labels-changed` audit row (actor `actor`) and event, each naming the labels before and after.
 * An unchanged set writes nothing. The result must stay within labelsSchema's bounds (INVALID_ARGUMENT).
 * Shared by `nodes.setLabels` and the bulk actions on nodes (one audit row per node).
 */
export async function changeLockedNodeLabels(
  tx: Tx,
  actor: string,
  node: { id: string; tenantId: string; labels: unknown },
  change: LabelChange,
): Promise<NodeLabelsChanged> {
  const previous = (node.labels ?? {}) as Record<string, string>;
  const next = labelsSchema.safeParse(applyLabelChange(previous, change));
  if (!next.success) throw new DomainError('INVALID_ARGUMENT', `labels: ${next.error.issues[0]?.message ?? 'invalid'}`, { field: 'set' });
  const labels = next.data;
  if (formatLabelList(labels) === formatLabelList(previous)) return { nodeId: node.id, previous, labels, changed: false };
  await typed(tx)
    .updateTable('nodes')
    .set({ labels: sql`${JSON.stringify(labels)}::jsonb`, updated_at: sql<Date>`compute_now()` })
    .where('id', '=', node.id)
    .execute();
  const data = { nodeId: node.id, labels, previous };
  await writeAudit(tx, { tenantId: node.tenantId, actor, action: 'node.labels-changed', resource: resource.node(node.id), data });
  await publishEvent(tx, { tenantId: node.tenantId, type: 'node.labels-changed', data: { ...data, actor } });
  return { nodeId: node.id, previous, labels, changed: true };
}

/**
 * `nodes.setLabels` (`compute:nodes:manage` on the node's pool): sets, overrides and removes labels of one
 * node under its row lock (the lock a join's reclaim takes too, so an admission's labels and an operator's
 * edit are ordered), audited and published as `node.labels-changed`. A retired node is INVALID_STATE.
 */
export async function setNodeLabels(db: Db, principal: Principal, input: z.output<typeof setNodeLabelsInput>): Promise<NodeDetail> {
  await loadNode(db, principal, 'compute:nodes:manage', input);
  return db.$transaction(async (tx) => {
    await lockNode(tx, input.nodeId);
    const node = await tx.node.findUniqueOrThrow({ where: { id: input.nodeId } });
    if (node.state === 'retired') throw new DomainError('INVALID_STATE', `Node ${node.id} is retired`);
    const { labels, changed } = await changeLockedNodeLabels(tx, principal.actor, node, input);
    return nodeDetail(tx, changed ? { ...node, labels } : node);
  });
}
