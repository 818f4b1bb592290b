import { type Command, InvalidArgumentError } from 'commander';
import { COMMAND_KINDS } from '../../protocol/command-wire';
import type { CommandRecord } from '../../protocol/api/command-schemas';
import { DomainError } from '../../protocol/errors';
import { enc, type ApiClient } from '../client';
import { clientFor } from '../context';
import { printJson } from '../output';
import { progressBar } from '../progress';
import { wholeNumber } from '../options';
import { addNodeFilterOptions, nodeFilterOf, type NodeFilterOptions } from './node-filter-options';

type RunOpts = NodeFilterOptions & { tenant?: string; kind: string; timeout?: number; wait?: boolean; yes?: boolean; json?: boolean };

const POLL_MS = 1_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const ended = (c: CommandRecord) => c.state !== 'queued' && c.state !== 'sent';

/** Polls the command until it ends (its time limit and delivery deadline bound the wait). */
async function waitForCommand(client: ApiClient, tenantPath: string, id: string): Promise<CommandRecord> {
  for (;;) {
    const command = await client.get('commands.get', `${tenantPath}/commands/${enc(id)}`);
    if (ended(command)) return command;
    await sleep(POLL_MS);
  }
}

/**
 * `nodes run <node> --kind K` or `nodes run --pool P --kind K` (or any node filter): queues a command (protocol.md
 * "Commands") to one node, or to every node the filters select as one batch; with --wait, shows the command's
 * end and its result, or the batch's progress until every command ended.
 */
export function registerNodeRunCommand(nodes: Command) {
  addNodeFilterOptions(
    nodes
      .command('run [nodeId]')
      .description(`Run a command on a node, or on every node the filters select (${COMMAND_KINDS.join(', ')})`)
      .requiredOption('--kind <kind>', `the command: ${COMMAND_KINDS.join(', ')}`),
  )
    .option('--tenant <tenant>', "tenant id or name (default: the API key's tenant)")
    .option('--timeout <seconds>', 'how long the node has to answer once it received it (default 300)', wholeNumber(10, 3600))
    .option('--wait', 'wait until it ended (each command of a batch), showing progress')
    .option('--yes', 'confirm running on every matching node')
    .option('--json', 'print JSON')
    .action(async (nodeId: string | undefined, opts: RunOpts, cmd: Command) => {
      const filter = nodeFilterOf(opts);
      if (nodeId && Object.keys(filter).length) throw new InvalidArgumentError('name a node, or filters (--pool, --search, …), not both');
      if (!nodeId && !Object.keys(filter).length) throw new InvalidArgumentError('name a node, or filters such as --pool or --search');
      if (!nodeId && !opts.yes && !opts.pool)
        throw new DomainError('INVALID_ARGUMENT', 'This runs the command on every matching node; confirm with --yes', { field: 'yes' });
      const client = clientFor(cmd);
      const tenantId = await client.tenantId(opts.tenant);
      const tenantPath = `/v1/tenants/${enc(tenantId)}`;
      const body = { kind: opts.kind, ...(opts.timeout ? { timeoutSeconds: opts.timeout } : {}) };
      const queued = await client.post(
        'commands.enqueue',
        `${tenantPath}/commands`,
        nodeId ? { ...body, nodeId, tenantId } : { ...body, tenantId, matching: filter },
      );
      if (queued.command) {
        const command = opts.wait ? await waitForCommand(client, tenantPath, queued.command.id) : queued.command;
        if (opts.json) return printJson(command);
        process.stdout.write(
          `${command.id} ${command.kind} on ${command.nodeId}: ${command.state}${command.reason ? ` (${command.reason})` : ''}\n`,
        );
        if (command.output) process.stdout.write(`${JSON.stringify(command.output, null, 2)}\n`);
        return;
      }
      let batch = queued.batch!;
      if (opts.wait) {
        const bar = progressBar(`${batch.kind}`, batch.total);
        while (!batch.done) {
          bar.update(batch.total - batch.counts.queued - batch.counts.sent);
          await sleep(POLL_MS);
          batch = await client.get('commands.batch', `${tenantPath}/command-batches/${enc(batch.id)}`);
        }
        bar.done();
      }
      if (opts.json) return printJson(batch);
      const counts = Object.entries(batch.counts)
        .filter(([, n]) => n > 0)
        .map(([state, n]) => `${state} ${n}`)
        .join(', ');
      process.stdout.write(`${batch.id} ${batch.kind} on ${batch.total} node(s)${counts ? `: ${counts}` : ''}\n`);
    });
}
