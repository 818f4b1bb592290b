import { InvalidArgumentError, type Command } from 'commander';
import { DomainError } from '../../protocol/errors';
import { acceptanceCheckSpec, BUILT_IN_CHECKS } from '../../protocol/acceptance-checks';
import { POOL_AGENTS, type PoolPolicy, type PoolRecord } from '../../protocol/api/pool-schemas';
import { enc } from '../client';
import { tenantClientFor } from '../context';
import { printJson, printTable, printRows } from '../output';
import { addGetAndArchive } from './get-archive';
import { registerStaleNodeCommands } from './pools-stale';

const list = (value: string) =>
  value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

type AcceptanceSpec = NonNullable<PoolPolicy['acceptance']>[number];

/** What each check's value is, for `--acceptance-check` (the settings the agent is sent in `policy.acceptance`). */
const CHECK_VALUES: Record<(typeof BUILT_IN_CHECKS)[number], { usage: string; field: 'min' | 'minGiB' | null }> = {
  identity: { usage: 'identity', field: null },
  'min-cpus': { usage: 'min-cpus=<CPUs>', field: 'min' },
  'min-memory': { usage: 'min-memory=<GiB>', field: 'minGiB' },
  'gpu-count': { usage: 'gpu-count=<GPUs>', field: 'min' },
};
const CHECK_USAGE = Object.values(CHECK_VALUES)
  .map((c) => c.usage)
  .join(', ');

/**
 * One `--acceptance-check` (repeatable): `identity`, or a check with its threshold, e.g. `min-cpus=8`,
 * `min-memory=64` (GiB), `gpu-count=8`. Added to the ones before it; a check named twice is refused.
 */
export function parseAcceptanceCheck(value: string, previous: AcceptanceSpec[] = []): AcceptanceSpec[] {
  const [name = '', threshold, ...rest] = value.trim().split('=');
  const known = (BUILT_IN_CHECKS as readonly string[]).includes(name) ? CHECK_VALUES[name as keyof typeof CHECK_VALUES] : null;
  if (!known) throw new InvalidArgumentError(`"${name}" is not a check the agent runs; expected one of: ${CHECK_USAGE}`);
  if (previous.some((spec) => spec.check === name)) throw new InvalidArgumentError(`${name} is given more than once`);
  if (!known.field) {
    if (threshold !== undefined) throw new InvalidArgumentError(`${name} takes no value; expected ${known.usage}`);
    return [...previous, acceptanceCheckSpec.parse({ check: name })];
  }
  const number = threshold?.trim() && !rest.length ? Number(threshold) : Number.NaN;
  const parsed = acceptanceCheckSpec.safeParse({ check: name, [known.field]: number });
  if (!parsed.success) throw new InvalidArgumentError(`${name} needs a valid number; expected ${known.usage}`);
  return [...previous, parsed.data];
}

function printPool(pool: PoolRecord) {
  printTable(
    [pool],
    [
      ['id', (p) => p.id],
      ['name', (p) => p.name],
      ['site', (p) => p.siteId],
      ['agent', (p) => p.agent],
      ['policy', (p) => p.policy],
      ['checks', (p) => p.acceptanceChecks.join(',')],
      ['archived', (p) => p.archivedAt],
    ],
  );
}

export function registerPoolCommands(program: Command) {
  const pools = program.command('pools').description('Pools: groups of machines in one site');
  pools
    .command('create')
    .description('Create a pool in one of the tenant’s sites')
    .option('--tenant <tenant>', "tenant id or name (default: the API key's tenant)")
    .requiredOption('--site <siteId>', 'site id')
    .requiredOption('--name <name>', 'lower-case name')
    .option('--agent <agent>', 'bcd (machines run the daemon) or none', 'bcd')
    .option('--join-attestors <list>', 'comma-separated attestors the pool accepts (policy.joinAttestors)', list)
    .option('--platform-operated', 'policy.kubernetes.platformOperated: true')
    .option(
      '--acceptance-check <check[=value]>',
      `an acceptance check the agent runs, with its threshold (policy.acceptance); repeatable: ${CHECK_USAGE}`,
      parseAcceptanceCheck,
    )
    .option('--json', 'print JSON')
    .action(
      async (
        opts: {
          tenant?: string;
          site: string;
          name: string;
          agent: string;
          joinAttestors?: string[];
          platformOperated?: boolean;
          acceptanceCheck?: AcceptanceSpec[];
          json?: boolean;
        },
        cmd: Command,
      ) => {
        if (!(POOL_AGENTS as readonly string[]).includes(opts.agent)) {
          throw new DomainError('INVALID_ARGUMENT', `--agent must be ${POOL_AGENTS.join(' or ')}`, { field: 'agent' });
        }
        const { client, tenantPath } = await tenantClientFor(cmd, opts.tenant);
        const policy: Record<string, unknown> = {};
        if (opts.joinAttestors) policy.joinAttestors = opts.joinAttestors;
        if (opts.platformOperated) policy.kubernetes = { platformOperated: true };
        // The server names the pool's checks from their settings (pools.create's acceptanceChecks alone is refused).
        if (opts.acceptanceCheck?.length) policy.acceptance = opts.acceptanceCheck;
        const pool = await client.post('pools.create', `${tenantPath}/pools`, {
          siteId: opts.site,
          name: opts.name,
          agent: opts.agent,
          policy,
        });
        if (opts.json) printJson(pool);
        else process.stdout.write(`Created pool ${pool.name} (${pool.id})\n`);
      },
    );
  pools
    .command('list')
    .description("List a tenant's pools")
    .requiredOption('--tenant <tenant>', 'tenant id or name')
    .option('--site <siteId>', 'only this site')
    .option('--all', 'include archived pools')
    .option('--json', 'print JSON')
    .action(async (opts: { tenant: string; site?: string; all?: boolean; json?: boolean }, cmd: Command) => {
      const { client, tenantPath } = await tenantClientFor(cmd, opts.tenant);
      const { items } = await client.get('pools.list', `${tenantPath}/pools`, {
        siteId: opts.site,
        includeArchived: opts.all,
      });
      printRows(items, opts.json, [
        ['id', (p) => p.id],
        ['name', (p) => p.name],
        ['site', (p) => p.siteId],
        ['agent', (p) => p.agent],
        ['archived', (p) => p.archivedAt],
      ]);
    });
  addGetAndArchive(pools, {
    noun: 'pool',
    collection: 'pools',
    procedures: { get: 'pools.get', archive: 'pools.archive' },
    print: printPool,
  });
  pools
    .command('update <poolId>')
    .description("Edit a pool's TPM EK allow-list: listed TPMs join this pool without an operator")
    .option('--tenant <tenant>', "tenant id or name (default: the API key's tenant)")
    .option('--tpm-allow-ek <hash>', 'add an EK hash (hex SHA-256 of the EK public key); repeatable', collect, [])
    .option('--tpm-disallow-ek <hash>', 'remove an EK hash; repeatable', collect, [])
    .option('--json', 'print JSON')
    .action(
      async (poolId: string, opts: { tenant?: string; tpmAllowEk: string[]; tpmDisallowEk: string[]; json?: boolean }, cmd: Command) => {
        const { client, tenantPath } = await tenantClientFor(cmd, opts.tenant);
        const pool = await client.post('pools.update', `${tenantPath}/pools/${enc(poolId)}/update`, {
          tpm: { addEkHashes: opts.tpmAllowEk, removeEkHashes: opts.tpmDisallowEk },
        });
        if (opts.json) return printJson(pool);
        process.stdout.write(`Pool ${pool.id}: ${pool.policy.tpm?.ekAllowList?.length ?? 0} EK hash(es) on its TPM allow-list\n`);
      },
    );
  registerStaleNodeCommands(pools);
}

const collect = (value: string, previous: string[]) => [...previous, value];
