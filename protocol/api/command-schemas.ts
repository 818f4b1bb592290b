import { z } from 'zod';
import { idOf } from './resource-names';
import { nodeFilterFields } from './node-filter';

// Commands (protocol.md "Commands") as the management API takes and answers them. Shapes only: the console's
// client bundle imports this file.

export const COMMAND_STATES = ['queued', 'sent', 'succeeded', 'failed', 'rejected', 'expired'] as const;
export type CommandState = (typeof COMMAND_STATES)[number];

/** The default and the bounds of a command's time limit (seconds from its delivery to its answer). */
export const DEFAULT_COMMAND_TIMEOUT_SECONDS = 300;
const MAX_COMMAND_TIMEOUT_SECONDS = 3600;
/** The default and the bounds of how long a command waits for a session (its delivery deadline). */
export const DEFAULT_COMMAND_DELIVERY_SECONDS = 3600;
const MAX_COMMAND_DELIVERY_SECONDS = 7 * 24 * 3600;

/**
 * The most nodes one batch may select (docs/abuse-limits.md): an enqueue writes its commands within the request,
 * 500 nodes a transaction, so a filter that selects more is refused (INVALID_ARGUMENT) before anything is written.
 */
export const MAX_COMMAND_BATCH_NODES = 10_000;

/**
 * A kind: any short name parses (so an unknown one is answered INVALID_ARGUMENT by the domain, naming the kinds
 * of protocol 1); `args` must be `{}` for every kind of protocol 1.
 */
const commandFields = {
  kind: z
    .string()
    .min(1)
    .max(64)
    .regex(/^[a-z0-9][a-z0-9._-]*$/),
  args: z.strictObject({}).optional(),
  timeoutSeconds: z.number().int().min(10).max(MAX_COMMAND_TIMEOUT_SECONDS).optional(),
  /** How long it may wait for the node to hold a session; past it, it ends `expired`. */
  deliverWithinSeconds: z.number().int().min(10).max(MAX_COMMAND_DELIVERY_SECONDS).optional(),
};

/**
 * One node (`nodeId`), or many: the nodes of a pool (`poolId` with `tenantId`) or of the fleet list's filter
 * (`matching` with `tenantId`). Flat, so REST reads it as one JSON body.
 */
export const enqueueCommandInput = z
  .strictObject({
    ...commandFields,
    nodeId: idOf('node').optional(),
    tenantId: idOf('tnt').optional(),
    matching: z.strictObject(nodeFilterFields).optional(),
  })
  .refine((v) => (v.nodeId === undefined) !== (v.matching === undefined), {
    message: 'name nodeId, or matching (a filter or a pool), not both',
    path: ['nodeId'],
  })
  .refine((v) => v.matching === undefined || v.tenantId !== undefined, { message: 'matching goes with tenantId', path: ['tenantId'] });
export type EnqueueCommandInput = z.output<typeof enqueueCommandInput>;

export const commandRecord = z.object({
  id: z.string(),
  tenantId: z.string(),
  nodeId: z.string(),
  kind: z.string(),
  args: z.record(z.string(), z.unknown()),
  state: z.enum(COMMAND_STATES),
  createdBy: z.string(),
  createdAt: z.string(),
  notAfter: z.string(),
  timeoutSeconds: z.number().int(),
  sentAt: z.string().nullable(),
  finishedAt: z.string().nullable(),
  sessionId: z.string().nullable(),
  certificateSerial: z.string().nullable(),
  /** Why it ended rejected or expired without an answer (`kind-not-allowed`, `not-delivered`, `not-answered`). */
  reason: z.string().nullable(),
  output: z.record(z.string(), z.unknown()).nullable(),
  batchId: z.string().nullable(),
});
export type CommandRecord = z.infer<typeof commandRecord>;

const commandCounts = z.object(Object.fromEntries(COMMAND_STATES.map((s) => [s, z.number().int()])) as Record<CommandState, z.ZodNumber>);

export const commandBatch = z.object({
  id: z.string(),
  tenantId: z.string(),
  kind: z.string(),
  selector: z.record(z.string(), z.unknown()),
  total: z.number().int(),
  counts: commandCounts,
  /** Every command of the batch has ended (none queued or sent). */
  done: z.boolean(),
  createdBy: z.string(),
  createdAt: z.string(),
});
export type CommandBatch = z.infer<typeof commandBatch>;

/** One command (to one node), or a batch with its progress. */
export const enqueueCommandResult = z.object({ command: commandRecord.nullable(), batch: commandBatch.nullable() });

/** `tenantId`, when given (REST's path), must be the command's tenant. */
export const commandRefInput = z.strictObject({ tenantId: idOf('tnt').optional(), commandId: z.string().regex(/^cmd_[0-9a-z]{1,40}$/) });
export const batchRefInput = z.strictObject({ tenantId: idOf('tnt').optional(), batchId: z.string().regex(/^cmdb_[0-9a-z]{1,40}$/) });

export const listCommandsInput = z.strictObject({
  tenantId: idOf('tnt').optional(),
  nodeId: idOf('node'),
  limit: z.number().int().min(1).max(100).default(20),
  /** The `nextCursor` of the previous page. */
  cursor: z
    .string()
    .regex(/^cmd_[0-9a-z]{1,40}$/)
    .optional(),
});
export const commandList = z.object({ items: z.array(commandRecord), nextCursor: z.string().nullable() });
