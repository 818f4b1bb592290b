import { requirePermission, router } from '../trpc';
import { enqueueCommand } from '../../commands/enqueue';
import { getBatch, getCommand, listCommands } from '../../commands/queries';
import {
  batchRefInput,
  commandBatch,
  commandList,
  commandRecord,
  commandRefInput,
  enqueueCommandInput,
  enqueueCommandResult,
  listCommandsInput,
} from '../../../protocol/api/command-schemas';

/** Commands to nodes (protocol.md "Commands"): enqueue, a node's list, one command, a batch's progress. */
export const commandsRouter = router({
  enqueue: requirePermission('compute:nodes:manage')
    .input(enqueueCommandInput)
    .output(enqueueCommandResult)
    .mutation(({ ctx, input }) => enqueueCommand(ctx.db, ctx.principal, input)),
  list: requirePermission('compute:nodes:read')
    .input(listCommandsInput)
    .output(commandList)
    .query(({ ctx, input }) => listCommands(ctx.db, ctx.principal, input)),
  get: requirePermission('compute:nodes:read')
    .input(commandRefInput)
    .output(commandRecord)
    .query(({ ctx, input }) => getCommand(ctx.db, ctx.principal, input)),
  batch: requirePermission('compute:nodes:read')
    .input(batchRefInput)
    .output(commandBatch)
    .query(({ ctx, input }) => getBatch(ctx.db, ctx.principal, input)),
});
