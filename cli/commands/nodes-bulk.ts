import { type Command, InvalidArgumentError } from 'commander';
import { parseLabelArgument } from '../../protocol/api/labels';
import type { NodeFilter } from '../../protocol/api/node-filter';
import { NODE_BULK_ACTIONS, type NodeBulkActionName, type NodeBulkResult } from '../../protocol/api/node-bulk-schemas';
import { DomainError } from '../../protocol/errors';
import { enc, type ApiClient } from '../client';
import { clientFor } from '../context';
import { printJson } from '../output';
import { progressBar } from '../progress';
import { addNodeFilterOptions, nodeFilterOf, type NodeFilterOptions } from './node-filter-options';

const repeat = (value: string, previous: string[] = []) => [...previous, value];

type BulkOpts = NodeFilterOptions & {
  tenant?: string;
  allMatching?: boolean;
  set?: string[];
  remove?: string[];
  yes?: boolean;
  json?: boolean;
};

/** `--set k=v …` and `--remove k …` as the set-labels action takes them. */
function labelChange(opts: BulkOpts) {
  const set: Record<string, string> = {};
  for (const text of opts.set ?? []) {
    const label = parseLabelArgument(text);
    if (!label) throw new InvalidArgumentError(`--set ${text}: a label as key=value`);
    set[label.key] = label.value;
  }
  if (!Object.keys(set).length && !opts.remove?.length) throw new InvalidArgumentError('set-labels needs --set key=value or --remove key');
  return { set, remove: opts.remove ?? [] };
}

/**
 * Walks every page of the matching nodes, on the server, until no page is left. The progress is against the
 * list's exact total when the list answers one (a label filter is not sent as a query here: no total then).
 */
async function runAllMatching(client: ApiClient, path: string, body: Record<string, unknown>, filter: NodeFilter, label: string) {
  const { labels, ...flat } = filter;
  const counted = labels?.length ? null : await client.get('nodes.list', path, { ...flat, limit: 1 });
  const total = (counted as { total?: number } | null)?.total ?? null;
  const bar = total === null ? null : progressBar(label, total);
  const all: NodeBulkResult = { changed: [], unchanged: [], skipped: [], nextAfter: null };
  let after: string | undefined;
  for (;;) {
    const page = await client.post('nodes.bulk', `${path}/bulk`, { ...body, matching: filter, ...(after ? { after } : {}) });
    all.changed.push(...page.changed);
    all.unchanged.push(...page.unchanged);
    all.skipped.push(...page.skipped);
    const done = all.changed.length + all.unchanged.length + all.skipped.length;
    if (bar) bar.update(Math.min(done, total!));
    else process.stderr.write(`${label}: ${done}\n`);
    if (!page.nextAfter) break;
    after = page.nextAfter;
  }
  bar?.done();
  return all;
}

/**
 * `nodes bulk <action> [nodeIds...] | --all-matching [filters]`: cordon, uncordon, revoke-identity or set-labels on
 * the named nodes, or on every node the filters select (as `nodes list` shows them), a page of 50 per call.
 */
export function registerNodeBulkCommand(nodes: Command) {
  addNodeFilterOptions(
    nodes
      .command('bulk <action> [nodeIds...]')
      .description(`Act on many nodes at once (${NODE_BULK_ACTIONS.join(', ')}): the named ones, or --all-matching the filters`)
      .option('--tenant <tenant>', "tenant id or name (default: the API key's tenant)")
      .option('--all-matching', 'every node the filters select (all nodes without filters), a page (50) per call'),
  )
    .option('--set <key=value>', 'set-labels: set this label (repeatable)', repeat)
    .option('--remove <key>', 'set-labels: remove this label (repeatable)', repeat)
    .option('--yes', 'confirm acting on every matching node')
    .option('--json', 'print JSON')
    .action(async (action: string, nodeIds: string[], opts: BulkOpts, cmd: Command) => {
      if (!(NODE_BULK_ACTIONS as readonly string[]).includes(action))
        throw new InvalidArgumentError(`action: one of ${NODE_BULK_ACTIONS.join(', ')}`);
      if (!nodeIds.length === !opts.allMatching) throw new InvalidArgumentError('name node ids, or pass --all-matching');
      const filter = nodeFilterOf(opts);
      if (nodeIds.length && Object.keys(filter).length)
        throw new InvalidArgumentError('the filters go with --all-matching, not with node ids');
      if (opts.allMatching && !opts.yes)
        throw new DomainError('INVALID_ARGUMENT', `This ${action}s every matching node; confirm with --yes`, { field: 'yes' });
      const name = action as NodeBulkActionName;
      const body = name === 'set-labels' ? { action: name, ...labelChange(opts) } : { action: name };
      const client = clientFor(cmd);
      const path = `/v1/tenants/${enc(await client.tenantId(opts.tenant))}/nodes`;
      const result = opts.allMatching
        ? await runAllMatching(client, path, body, filter, `${action}`)
        : await client.post('nodes.bulk', `${path}/bulk`, { ...body, nodeIds });
      if (opts.json) return printJson(result);
      process.stdout.write(
        `${action}: changed ${result.changed.length} node(s)` +
          `${result.unchanged.length ? `; ${result.unchanged.length} already so` : ''}` +
          `${result.skipped.length ? `; skipped ${result.skipped.length}` : ''}\n`,
      );
      for (const s of result.skipped) process.stdout.write(`  skipped ${s.nodeId}: ${s.reason}\n`);
    });
}
