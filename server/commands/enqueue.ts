import type { Db, Tx } from '../db/client';
import { DomainError } from '../../protocol/errors';
import { authorize, resource } from '../authz/authorize';
import type { Principal } from '../authz/principal';
import { newId } from '../ids';
import { COMMAND_KINDS, kindAllowed } from '../../protocol/command-wire';
import { pickNodeFilter } from '../../protocol/api/node-filter';
import {
  DEFAULT_COMMAND_DELIVERY_SECONDS,
  DEFAULT_COMMAND_TIMEOUT_SECONDS,
  MAX_COMMAND_BATCH_NODES,
  type EnqueueCommandInput,
} from '../../protocol/api/command-schemas';
import { countMatchingNodes, matchingNodeIds } from '../nodes/node-filter';
import { INSERT_COMMANDS, LOCK_TARGETS, MAX_OPEN_COMMANDS_PER_NODE } from './commands-sql';
import { getBatch, getCommand } from './queries';

/** Nodes one transaction of a batch enqueue takes (locked in id order). */
const BATCH_PAGE = 500;
const PAGE_TRANSACTION = { maxWait: 10_000, timeout: 60_000 };

interface Target {
  id: string;
  state: string;
  allowed_kinds: string[] | null;
  has_cert: boolean;
  open: number;
}

interface Spec {
  tenantId: string;
  kind: string;
  actor: string;
  /** Unix seconds: the delivery deadline. */
  notAfter: number;
  timeoutSeconds: number;
  batchId: string | null;
}

/** Why a node cannot be sent `kind`, or null when it can: the batch records it as `rejected` with this reason. */
function refusalOf(target: Target, kind: string): string | null {
  if (target.state === 'retired') return 'node-retired';
  if (!target.has_cert) return 'no-live-certificate';
  if (!kindAllowed(kind, target.allowed_kinds)) return 'kind-not-allowed';
  if (target.open >= MAX_OPEN_COMMANDS_PER_NODE) return 'too-many-open-commands';
  return null;
}

/**
 * Locks `nodeIds` (of `spec.tenantId`) and writes one command each, `queued`, or `rejected` with why when
 * `single` is false (a batch); for a single node a refusal is thrown instead (INVALID_STATE). Answers the ids.
 * Both statements stay plain SQL (commands-sql.ts, PREPAREd by the SQL check): the lock reads `allowed_kinds`, a
 * text[] column the schema declares Unsupported, so the generated Kysely types do not have it; the insert writes
 * the commands, their events and audit rows in one statement from unnested arrays, a page of up to 500 nodes.
 */
async function enqueueLocked(tx: Tx, nodeIds: string[], spec: Spec, single: boolean): Promise<string[]> {
  const targets = await tx.$queryRawUnsafe<Target[]>(LOCK_TARGETS, nodeIds, spec.tenantId);
  if (single && targets.length === 0) throw new DomainError('NOT_FOUND', `Node ${nodeIds[0]} not found`);
  const rows = targets.map((target) => ({ id: newId('cmd'), target, reason: refusalOf(target, spec.kind) }));
  if (single && rows[0]!.reason) throw new DomainError('INVALID_STATE', singleRefusal(rows[0]!.reason, spec.kind, nodeIds[0]!));
  await tx.$queryRawUnsafe(
    INSERT_COMMANDS,
    rows.map((r) => r.id),
    rows.map((r) => r.target.id),
    rows.map((r) => (r.reason ? 'rejected' : 'queued')),
    rows.map((r) => r.reason),
    spec.tenantId,
    spec.kind,
    '{}',
    spec.actor,
    spec.notAfter,
    spec.timeoutSeconds,
    spec.batchId,
  );
  return rows.map((r) => r.id);
}

function singleRefusal(reason: string, kind: string, nodeId: string): string {
  switch (reason) {
    case 'kind-not-allowed':
      return `The certificate of node ${nodeId} does not allow ${kind} commands`;
    case 'too-many-open-commands':
      return `Node ${nodeId} already has ${MAX_OPEN_COMMANDS_PER_NODE} commands queued or sent; wait for them to finish`;
    case 'node-retired':
      return `Node ${nodeId} is retired`;
    default:
      return `Node ${nodeId} has no live certificate`;
  }
}

/**
 * `commands.enqueue`: a command of a protocol-1 kind (else INVALID_ARGUMENT) with `args` `{}`, to one node or
 * to every node of a pool or a node filter (a batch whose progress is its commands' states). Decided as
 * `compute:nodes:manage` on the node (its pool's grant included), or on the tenant for a batch. One node whose
 * current certificate does not allow the kind, that is retired or that already holds
 * {@link MAX_OPEN_COMMANDS_PER_NODE} open commands is refused (INVALID_STATE); in a batch such nodes get a
 * `rejected` command with the reason, counted in its progress. A batch selects at most
 * {@link MAX_COMMAND_BATCH_NODES} nodes (more: INVALID_ARGUMENT, nothing written). A node without a session is queued until the
 * delivery deadline. Every command is audited and published (`node.command.enqueued`); the gateways holding
 * the nodes' sessions are told in the same transaction (the table's trigger), and deliver at once.
 */
export async function enqueueCommand(db: Db, principal: Principal, input: EnqueueCommandInput) {
  if (!(COMMAND_KINDS as readonly string[]).includes(input.kind))
    throw new DomainError('INVALID_ARGUMENT', `Unknown command kind ${input.kind}; the kinds are ${COMMAND_KINDS.join(', ')}`);
  const now = Math.floor(Date.now() / 1000);
  const base = {
    kind: input.kind,
    actor: principal.actor,
    notAfter: now + (input.deliverWithinSeconds ?? DEFAULT_COMMAND_DELIVERY_SECONDS),
    timeoutSeconds: input.timeoutSeconds ?? DEFAULT_COMMAND_TIMEOUT_SECONDS,
  };
  if (input.nodeId) {
    const tenantId = await authorize(db, principal, 'compute:nodes:manage', resource.node(input.nodeId));
    if (input.tenantId && tenantId !== input.tenantId) throw new DomainError('NOT_FOUND', `Node ${input.nodeId} not found`);
    const [id] = await db.$transaction((tx) => enqueueLocked(tx, [input.nodeId!], { ...base, tenantId, batchId: null }, true));
    return { command: await getCommand(db, principal, { commandId: id! }), batch: null };
  }
  const filter = pickNodeFilter(input.matching!);
  // A pool's operators may run commands on its nodes; any other filter is decided on the tenant.
  const target = filter.poolId ? resource.pool(filter.poolId) : resource.tenant(input.tenantId!);
  const tenantId = await authorize(db, principal, 'compute:nodes:manage', target);
  if (tenantId !== input.tenantId) throw new DomainError('NOT_FOUND', `Tenant ${input.tenantId} not found`);
  const total = await countMatchingNodes(db, tenantId, filter);
  if (total > MAX_COMMAND_BATCH_NODES)
    throw new DomainError(
      'INVALID_ARGUMENT',
      `The filter selects ${total.toLocaleString('en-US')} nodes; a batch takes at most ${MAX_COMMAND_BATCH_NODES.toLocaleString('en-US')}: narrow the filter (a pool, a label, a state) or send several batches`,
    );
  const batchId = newId('cmdb');
  await db.commandBatch.create({
    data: { id: batchId, tenantId, kind: input.kind, selector: filter as object, total, createdBy: principal.actor },
  });
  const spec: Spec = { ...base, tenantId, batchId };
  // Pages in id order, each one transaction; nodes that joined after the count are left out (`total` stands).
  let after: string | undefined;
  let written = 0;
  while (written < total) {
    const page = await matchingNodeIds(db, tenantId, filter, { after, limit: Math.min(BATCH_PAGE, total - written) });
    if (!page.length) break;
    await db.$transaction((tx) => enqueueLocked(tx, page, spec, false), PAGE_TRANSACTION);
    written += page.length;
    after = page[page.length - 1];
  }
  // Nodes that left the filter between the count and the pages: the total is what was enqueued.
  if (written !== total) await db.commandBatch.update({ where: { id: batchId }, data: { total: written } });
  return { command: null, batch: await getBatch(db, principal, { batchId }) };
}
