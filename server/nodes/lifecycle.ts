import type { z } from 'zod';
import { sql } from 'kysely';
import type { Db, Tx } from '../db/client';
import { typed } from '../db/typed';
import { DomainError } from '../../protocol/errors';
import { resource } from '../authz/authorize';
import type { Principal } from '../authz/principal';
import { publishEvent, writeAudit } from '../events/publish';
import { loadNode, nodeDetail } from './nodes';
import { lockNode } from './node-lock';
import { newRunId } from '../acceptance/report';
import type { NodeDetail, nodeRefInput } from '../../protocol/api/node-schemas';

type NodeRef = z.infer<typeof nodeRefInput>;

/**
 * Runs `change` on the node under its row lock, the lock a renewal takes too, so a renewal and a lifecycle
 * change are ordered: a renewal that commits first has its certificate revoked by the change, one that
 * comes after sees the change.
 */
async function withLockedNode<T>(
  db: Db,
  principal: Principal,
  input: NodeRef,
  change: (tx: Tx, node: Awaited<ReturnType<typeof loadNode>>) => Promise<T>,
): Promise<T> {
  await loadNode(db, principal, 'compute:nodes:manage', input);
  return db.$transaction(async (tx) => {
    await lockNode(tx, input.nodeId);
    const node = await tx.node.findUniqueOrThrow({ where: { id: input.nodeId } });
    return change(tx, node);
  });
}

/** A node change's audit row (the caller as actor) and its event of the same type. */
async function record(
  tx: Tx,
  principal: Principal,
  node: { id: string; tenantId: string },
  action: string,
  data: Record<string, unknown> = {},
) {
  await writeAudit(tx, { tenantId: node.tenantId, actor: principal.actor, action, resource: resource.node(node.id), data });
  await publishEvent(tx, { tenantId: node.tenantId, type: action, data: { nodeId: node.id, ...data } });
}

/** Revokes every live certificate of the node, one `security.certificate-revoked` event each. */
async function revokeAll(tx: Tx, node: { id: string; tenantId: string }, reason: string): Promise<string[]> {
  const revoked = await typed(tx)
    .updateTable('node_certs')
    .set({ revoked_at: sql<Date>`compute_now()`, revocation_reason: reason })
    .where('node_id', '=', node.id)
    .where('revoked_at', 'is', null)
    .returning('serial')
    .execute();
  for (const { serial } of revoked) {
    await publishEvent(tx, { tenantId: node.tenantId, type: 'security.certificate-revoked', data: { nodeId: node.id, serial, reason } });
  }
  return revoked.map((r) => r.serial);
}

/** Adopts a node that is still `adopting` (an operator accepts it without acceptance checks passing). */
export async function adoptNode(db: Db, principal: Principal, input: NodeRef): Promise<NodeDetail> {
  return withLockedNode(db, principal, input, async (tx, node) => {
    if (node.state === 'adopted') return nodeDetail(tx, node);
    if (node.state !== 'adopting')
      throw new DomainError('INVALID_STATE', `Node ${node.id} is ${node.state}; only an adopting node can be adopted`);
    const updated = await tx.node.update({ where: { id: node.id }, data: { state: 'adopted', updatedAt: new Date() } });
    await record(tx, principal, node, 'node.adopted', { by: 'operator' });
    return nodeDetail(tx, updated);
  });
}

type LockedNode = Awaited<ReturnType<typeof loadNode>>;

/**
 * Cordons (or uncordons) a node whose row lock `tx` holds: the single and the bulk action share it. Null when
 * the node already was so (nothing written); INVALID_STATE for a retired node.
 */
export async function applyCordon(tx: Tx, principal: Principal, node: LockedNode, cordoned: boolean): Promise<LockedNode | null> {
  if (node.state === 'retired') throw new DomainError('INVALID_STATE', `Node ${node.id} is retired`);
  if (node.cordoned === cordoned) return null;
  const updated = await tx.node.update({ where: { id: node.id }, data: { cordoned, updatedAt: new Date() } });
  await record(tx, principal, node, cordoned ? 'node.cordoned' : 'node.uncordoned');
  return updated;
}

/** Cordons (or uncordons) a node: it takes no new work. Idempotent. */
export async function setCordon(db: Db, principal: Principal, input: NodeRef, cordoned: boolean): Promise<NodeDetail> {
  return withLockedNode(db, principal, input, async (tx, node) =>
    nodeDetail(tx, (await applyCordon(tx, principal, node, cordoned)) ?? node),
  );
}

/** Revokes every live certificate of a node whose row lock `tx` holds, with its audit row and events: the serials. */
export async function applyRevokeIdentity(tx: Tx, principal: Principal, node: LockedNode): Promise<string[]> {
  const revokedSerials = await revokeAll(tx, node, 'revoked');
  await record(tx, principal, node, 'node.identity-revoked', { serials: revokedSerials });
  return revokedSerials;
}

/**
 * Revokes every certificate of the node, so its next renewal is refused and it must join again; publishes
 * `security.certificate-revoked` per certificate.
 */
export async function revokeNodeIdentity(db: Db, principal: Principal, input: NodeRef): Promise<NodeDetail & { revokedSerials: string[] }> {
  return withLockedNode(db, principal, input, async (tx, node) => {
    const revokedSerials = await applyRevokeIdentity(tx, principal, node);
    return { ...(await nodeDetail(tx, node)), revokedSerials };
  });
}

/**
 * Deletes a cordoned node: it becomes `retired`, its certificates are revoked, and its hardware key, MAC and
 * TPM EK bindings are freed so the machine can join again as a new node. The row stays for the audit trail.
 */
export async function deleteNode(db: Db, principal: Principal, input: NodeRef): Promise<NodeDetail> {
  return withLockedNode(db, principal, input, async (tx, node) => {
    if (node.state === 'retired') return nodeDetail(tx, node);
    if (!node.cordoned) throw new DomainError('INVALID_STATE', `Node ${node.id} must be cordoned before it is deleted`);
    const { updated, serials } = await retireLockedNode(tx, node);
    await record(tx, principal, node, 'node.deleted', { serials });
    return nodeDetail(tx, updated);
  });
}

/**
 * The delete path's writes, on a node the caller holds locked (its row `FOR UPDATE`): the node becomes
 * `retired`, its certificates are revoked (`security.certificate-revoked` each), its hardware key, MACs and TPM
 * EK binding are freed. The caller writes its own audit row and event (`node.deleted`, `node.stale.retired`).
 */
export async function retireLockedNode(tx: Tx, node: { id: string; tenantId: string; claims: unknown }) {
  const claims = { ...((node.claims ?? {}) as Record<string, unknown>) };
  delete claims.macs;
  const serials = await revokeAll(tx, node, 'deleted');
  const updated = await tx.node.update({
    where: { id: node.id },
    data: { state: 'retired', hardwareKey: null, hardwareKeyTrusted: false, claims: claims as object, updatedAt: new Date() },
  });
  await tx.tpmEkBinding.deleteMany({ where: { nodeId: node.id } });
  return { updated, serials };
}

/**
 * Runs the pool's built-in acceptance checks again (`nodes.recheck`), for a node still `adopting`: a pending
 * run of its generation is asked again, else a new one starts (`node.acceptance.started`). The session that
 * holds the node is asked within a lease refresh; a node without a session is asked at its next Hello. A pass
 * adopts it.
 */
export async function recheckNode(db: Db, principal: Principal, input: NodeRef): Promise<NodeDetail> {
  return withLockedNode(db, principal, input, async (tx, node) => {
    if (node.state !== 'adopting')
      throw new DomainError('INVALID_STATE', `Node ${node.id} is ${node.state}; only an adopting node runs acceptance checks`);
    const pool = node.poolId ? await tx.pool.findUnique({ where: { id: node.poolId } }) : null;
    const checks = ((pool?.policy ?? {}) as { acceptance?: Array<{ check: string }> }).acceptance ?? [];
    if (!checks.length)
      throw new DomainError(
        'INVALID_STATE',
        `Pool ${node.poolId ?? '-'} lists no built-in acceptance checks (policy.acceptance); adopt the node with nodes.adopt`,
      );
    const pending = await tx.nodeAcceptanceRun.findFirst({ where: { nodeId: node.id, state: 'pending' } });
    const runId = pending?.identityGeneration === node.identityGeneration ? pending.id : newRunId();
    if (pending && pending.id === runId) {
      await tx.nodeAcceptanceRun.update({ where: { id: runId }, data: { deliveredSessionId: null, checks: checks as object } });
    } else {
      // A pending run of an older generation is superseded by this one.
      if (pending)
        await tx.nodeAcceptanceRun.update({
          where: { id: pending.id },
          data: {
            state: 'failed',
            finishedAt: new Date(),
            results: [{ check: 'identity', passed: false, message: 'superseded by a newer identity generation' }],
          },
        });
      await typed(tx)
        .insertInto('node_acceptance_runs')
        .values({
          id: runId,
          node_id: node.id,
          identity_generation: node.identityGeneration,
          checks: sql`${JSON.stringify(checks)}::jsonb`,
          state: 'pending',
          started_at: sql<Date>`compute_now()`,
        })
        .execute();
    }
    await writeAudit(tx, {
      tenantId: node.tenantId,
      actor: principal.actor,
      action: 'node.rechecked',
      resource: resource.node(node.id),
      data: { runId },
    });
    await publishEvent(tx, {
      tenantId: node.tenantId,
      type: 'node.acceptance.started',
      data: {
        nodeId: node.id,
        poolId: node.poolId,
        checks: checks.map((c) => c.check),
        identityGeneration: node.identityGeneration,
        runId,
        by: 'recheck',
      },
    });
    return nodeDetail(tx, node);
  });
}
