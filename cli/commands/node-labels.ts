import { type Command, InvalidArgumentError } from 'commander';
import { parseLabelArgument } from '../../protocol/api/labels';
import { DomainError } from '../../protocol/errors';
import { enc } from '../client';
import { clientFor } from '../context';
import { printJson, printTable } from '../output';

const collectKey = (value: string, previous: string[] = []) => {
  if (!/^[a-z0-9](?:[a-z0-9._/-]{0,61}[a-z0-9])?$/.test(value))
    throw new InvalidArgumentError(`${JSON.stringify(value)} is not a label key`);
  return [...previous, value];
};

/** `nodes label <node> k=v … [--remove k] [--replace]`: sets, overrides and removes a node's labels. */
export function registerNodeLabelCommand(nodes: Command) {
  nodes
    .command('label <nodeId> [labels...]')
    .description("Set or override a node's labels (key=value …), remove some (--remove key), or replace them all (--replace)")
    .option('--tenant <tenant>', "tenant id or name (default: the API key's tenant)")
    .option('--remove <key>', 'remove this label (repeatable)', collectKey)
    .option('--replace', 'the labels given become the whole set (every other label is removed)')
    .option('--json', 'print JSON')
    .action(
      async (
        nodeId: string,
        given: string[],
        opts: { tenant?: string; remove?: string[]; replace?: boolean; json?: boolean },
        cmd: Command,
      ) => {
        const set: Record<string, string> = {};
        for (const text of given) {
          const label = parseLabelArgument(text);
          if (!label)
            throw new DomainError('INVALID_ARGUMENT', `${JSON.stringify(text)} is not a label: use key=value`, { field: 'labels' });
          set[label.key] = label.value;
        }
        if (!given.length && !opts.remove?.length && !opts.replace)
          throw new DomainError('INVALID_ARGUMENT', 'Name labels to set (key=value) or to remove (--remove key)', { field: 'labels' });
        const client = clientFor(cmd);
        const path = `/v1/tenants/${enc(await client.tenantId(opts.tenant))}/nodes/${enc(nodeId)}/labels`;
        const node = await client.post('nodes.setLabels', path, { set, remove: opts.remove ?? [], replace: opts.replace === true });
        if (opts.json) return printJson(node);
        const rows = Object.entries(node.labels).sort(([a], [b]) => a.localeCompare(b));
        if (!rows.length) process.stdout.write(`Node ${node.id} has no labels.\n`);
        else
          printTable(rows, [
            ['key', ([key]) => key],
            ['value', ([, value]) => value],
          ]);
      },
    );
}
