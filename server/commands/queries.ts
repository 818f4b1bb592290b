import type { Db } from '../db/client';
import { DomainError } from '../../protocol/errors';
import { authorize, resource } from '../authz/authorize';
import type { Principal } from '../authz/principal';
import { COMMAND_STATES, type CommandBatch, type CommandRecord, type CommandState } from '../../protocol/api/command-schemas';

type CommandRow = NonNullable<Awaited<ReturnType<Db['nodeCommand']['findUnique']>>>;

const iso = (d: Date | null) => (d ? d.toISOString() : null);

function toRecord(row: CommandRow): CommandRecord {
  return {
    id: row.id,
    tenantId: row.tenantId,
    nodeId: row.nodeId,
    kind: row.kind,
    args: (row.args ?? {}) as Record<string, unknown>,
    state: row.state as CommandState,
    createdBy: row.createdBy,
    createdAt: row.createdAt.toISOString(),
    notAfter: row.notAfter.toISOString(),
    timeoutSeconds: row.timeLimitSeconds,
    sentAt: iso(row.sentAt),
    finishedAt: iso(row.finishedAt),
    sessionId: row.sessionId,
    certificateSerial: row.certSerial,
    reason: row.reason,
    output: (row.output ?? null) as Record<string, unknown> | null,
    batchId: row.batchId,
  };
}

/** `commands.get`: one command, decided as `compute:nodes:read` on its node (NOT_FOUND for anyone else). */
export async function getCommand(db: Db, principal: Principal, input: { tenantId?: string; commandId: string }): Promise<CommandRecord> {
  const row = await db.nodeCommand.findUnique({ where: { id: input.commandId } });
  if (!row || (input.tenantId && row.tenantId !== input.tenantId))
    throw new DomainError('NOT_FOUND', `Command ${input.commandId} not found`);
  await authorize(db, principal, 'compute:nodes:read', resource.node(row.nodeId)).catch((error: unknown) => {
    if (error instanceof DomainError && error.code === 'NOT_FOUND')
      throw new DomainError('NOT_FOUND', `Command ${input.commandId} not found`);
    throw error;
  });
  return toRecord(row);
}

/** `commands.list`: a node's commands, newest first, a page at a time (`cursor`: the previous page's `nextCursor`). */
export async function listCommands(
  db: Db,
  principal: Principal,
  input: { tenantId?: string; nodeId: string; limit: number; cursor?: string },
) {
  const tenantId = await authorize(db, principal, 'compute:nodes:read', resource.node(input.nodeId));
  if (input.tenantId && tenantId !== input.tenantId) throw new DomainError('NOT_FOUND', `Node ${input.nodeId} not found`);
  const rows = await db.nodeCommand.findMany({
    where: { nodeId: input.nodeId },
    orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
    take: input.limit + 1,
    ...(input.cursor ? { cursor: { id: input.cursor }, skip: 1 } : {}),
  });
  const items = rows.slice(0, input.limit).map(toRecord);
  return { items, nextCursor: rows.length > input.limit ? items[items.length - 1]!.id : null };
}

/**
 * `commands.batch`: a batch and its progress (its commands counted by state; `done` once none is queued or
 * sent), decided as `compute:nodes:read` on what its enqueue was decided on: the pool for a batch of a pool's
 * nodes, else the tenant. So whoever could enqueue it can read it (a pool's operators included).
 */
export async function getBatch(db: Db, principal: Principal, input: { tenantId?: string; batchId: string }): Promise<CommandBatch> {
  const batch = await db.commandBatch.findUnique({ where: { id: input.batchId } });
  if (!batch || (input.tenantId && batch.tenantId !== input.tenantId))
    throw new DomainError('NOT_FOUND', `Batch ${input.batchId} not found`);
  const poolId = (batch.selector as { poolId?: unknown } | null)?.poolId;
  const decidedOn = typeof poolId === 'string' ? resource.pool(poolId) : resource.tenant(batch.tenantId);
  const owner = await authorize(db, principal, 'compute:nodes:read', decidedOn).catch((error: unknown) => {
    if (error instanceof DomainError && error.code === 'NOT_FOUND') throw new DomainError('NOT_FOUND', `Batch ${input.batchId} not found`);
    throw error;
  });
  if (owner !== batch.tenantId) throw new DomainError('NOT_FOUND', `Batch ${input.batchId} not found`);
  const grouped = await db.nodeCommand.groupBy({ by: ['state'], where: { batchId: batch.id }, _count: { _all: true } });
  const counts = Object.fromEntries(COMMAND_STATES.map((s) => [s, 0])) as Record<CommandState, number>;
  for (const g of grouped) counts[g.state as CommandState] = g._count._all;
  return {
    id: batch.id,
    tenantId: batch.tenantId,
    kind: batch.kind,
    selector: batch.selector as Record<string, unknown>,
    total: batch.total,
    counts,
    done: counts.queued + counts.sent === 0,
    createdBy: batch.createdBy,
    createdAt: batch.createdAt.toISOString(),
  };
}
