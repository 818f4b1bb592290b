import { InvalidArgumentError, type Command } from 'commander';
import { parseLabelArgument } from '../../protocol/api/labels';
import type { NodeFilter } from '../../protocol/api/node-filter';
import { wholeNumber } from '../options';

/** The node filter as command-line options (`nodes list`, `nodes export`, `nodes bulk`): the list's filter, flag for field. */
export interface NodeFilterOptions {
  search?: string;
  label?: string[];
  pool?: string;
  site?: string;
  state?: string;
  connected?: boolean;
  role?: string;
  attestor?: string;
  nodeKey?: string;
  trustVersion?: number;
  expiringWithin?: number;
}

/** `--label k=v`, repeatable: every one given must be a label of the node. */
function collectLabel(value: string, previous: string[] = []): string[] {
  if (!parseLabelArgument(value)) throw new InvalidArgumentError('use key=value (a label key, then its value)');
  return [...previous, value];
}

function yesNo(value: string): boolean {
  if (['true', 'yes'].includes(value)) return true;
  if (['false', 'no'].includes(value)) return false;
  throw new InvalidArgumentError('use yes or no');
}

const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400 };
/** `30d`, `12h`, `90m` or seconds. */
function duration(value: string): number {
  const match = /^(\d{1,8})([smhd]?)$/.exec(value);
  if (!match) throw new InvalidArgumentError('use a duration such as 7d, 12h, 30m or seconds');
  return Number(match[1]) * UNIT_SECONDS[match[2] || 's']!;
}

export function addNodeFilterOptions(command: Command): Command {
  return command
    .option('--search <text>', 'hostname, serial, product UUID, MAC (any separators), node id, IP or label value')
    .option('--label <key=value>', 'only nodes with this label (repeatable: all must match)', collectLabel)
    .option('--pool <poolId>', 'only this pool')
    .option('--site <siteId>', 'only this site')
    .option('--state <state>', 'adopting, adopted or retired')
    .option('--connected <yes|no>', 'only nodes with (yes) or without (no) a live session', yesNo)
    .option('--role <role>', 'only this certificate role')
    .option('--attestor <attestor>', 'only nodes that joined through this attestor')
    .option('--node-key <trust>', 'trusted, unattested or none')
    .option('--trust-version <n>', 'only nodes whose agent holds this trust set version', wholeNumber(0, 2_147_483_647))
    .option('--expiring-within <duration>', 'only nodes whose certificate ends within it (7d, 12h, or seconds)', duration);
}

/**
 * The options as the fleet filter (`nodes list` and `nodes export` send it as their query, `nodes bulk
 * --all-matching` as its body's `matching`): only the filters given.
 */
export function nodeFilterOf(opts: NodeFilterOptions): NodeFilter {
  const filter = {
    search: opts.search,
    labels: opts.label,
    poolId: opts.pool,
    siteId: opts.site,
    state: opts.state,
    connected: opts.connected,
    role: opts.role,
    attestor: opts.attestor,
    nodeKey: opts.nodeKey,
    trustVersion: opts.trustVersion,
    expiringWithinSeconds: opts.expiringWithin,
  };
  return Object.fromEntries(Object.entries(filter).filter(([, v]) => v !== undefined)) as NodeFilter;
}
