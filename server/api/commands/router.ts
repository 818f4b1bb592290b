import { router } from '../trpc';
import { domainMutation, domainQuery } from '../domain-procedure';
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
  enqueue: domainMutation('compute:nodes:manage', enqueueCommandInput, enqueueCommandResult, enqueueCommand),
  list: domainQuery('compute:nodes:read', listCommandsInput, commandList, listCommands),
  get: domainQuery('compute:nodes:read', commandRefInput, commandRecord, getCommand),
  batch: domainQuery('compute:nodes:read', batchRefInput, commandBatch, getBatch),
});
