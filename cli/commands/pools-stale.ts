import { InvalidArgumentError, type Command } from 'commander';
import { DomainError } from '../../protocol/errors';
import { STALE_NODES_MAX_DAYS } from '../../protocol/api/stale-nodes';
import { enc } from '../client';
import { tenantClientFor } from '../context';
import { printJson, printTable } from '../output';

const days = (value: string) => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > STALE_NODES_MAX_DAYS)
    throw new InvalidArgumentError(`expected a whole number of days from 1 to ${STALE_NODES_MAX_DAYS}`);
  return n;
};

/** `pools stale-policy` (set or turn off) and `pools stale-nodes` (the dry run, or apply now). */
export function registerStaleNodeCommands(pools: Command) {
  pools
    .command('stale-policy <poolId>')
    .description("Set a pool's stale-node policy: cordon nodes disconnected N days, retire them M days later")
    .option('--tenant <tenant>', "tenant id or name (default: the API key's tenant)")
    .option('--cordon-after-days <N>', 'cordon a node disconnected this many days', days)
    .option('--retire-after-days <M>', 'retire a node the policy cordoned this many days ago, still disconnected', days)
    .option('--off', 'remove the policy (cordons it made stay)')
    .option('--json', 'print JSON')
    .action(
      async (
        poolId: string,
        opts: { tenant?: string; cordonAfterDays?: number; retireAfterDays?: number; off?: boolean; json?: boolean },
        cmd: Command,
      ) => {
        const setting = opts.cordonAfterDays !== undefined || opts.retireAfterDays !== undefined;
        if (Boolean(opts.off) === setting || (setting && (opts.cordonAfterDays === undefined || opts.retireAfterDays === undefined)))
          throw new DomainError('INVALID_ARGUMENT', 'give --cordon-after-days and --retire-after-days, or --off');
        const { client, tenantPath } = await tenantClientFor(cmd, opts.tenant);
        const staleNodes = opts.off ? null : { cordonAfterDays: opts.cordonAfterDays!, retireAfterDays: opts.retireAfterDays! };
        const pool = await client.post('pools.setStaleNodesPolicy', `${tenantPath}/pools/${enc(poolId)}/stale-nodes/policy`, {
          staleNodes,
        });
        if (opts.json) return printJson(pool);
        const policy = pool.policy.staleNodes;
        process.stdout.write(
          policy
            ? `Pool ${pool.id}: nodes disconnected ${policy.cordonAfterDays} days are cordoned, and retired ${policy.retireAfterDays} days later\n`
            : `Pool ${pool.id}: no stale-node policy\n`,
        );
      },
    );
  pools
    .command('stale-nodes <poolId>')
    .description("Apply a pool's stale-node policy now, or with --dry-run list what it would do")
    .option('--tenant <tenant>', "tenant id or name (default: the API key's tenant)")
    .option('--dry-run', 'change nothing: list the nodes the policy would cordon or retire now')
    .option('--limit <n>', 'how many nodes the dry run lists (1-1000; the counts cover all)', (v) => Number(v))
    .option('--json', 'print JSON')
    .action(async (poolId: string, opts: { tenant?: string; dryRun?: boolean; limit?: number; json?: boolean }, cmd: Command) => {
      const { client, tenantPath } = await tenantClientFor(cmd, opts.tenant);
      const path = `${tenantPath}/pools/${enc(poolId)}/stale-nodes`;
      if (!opts.dryRun) {
        const done = await client.post('pools.applyStaleNodes', `${path}/apply`, {});
        if (opts.json) return printJson(done);
        process.stdout.write(`Pool ${done.poolId}: cordoned ${done.cordoned}, retired ${done.retired}\n`);
        return;
      }
      const plan = await client.get('pools.staleNodes', path, { limit: opts.limit });
      if (opts.json) return printJson(plan);
      if (!plan.policy) {
        process.stdout.write(
          `Pool ${plan.poolId} has no stale-node policy (pools stale-policy ${plan.poolId} --cordon-after-days N --retire-after-days M)\n`,
        );
        return;
      }
      process.stdout.write(`Dry run at ${plan.evaluatedAt}: would retire ${plan.counts.retire}, cordon ${plan.counts.cordon}\n`);
      printTable(
        plan.items,
        [
          ['action', (s) => s.action],
          ['node', (s) => s.nodeId],
          ['hostname', (s) => s.hostname],
          ['disconnected since', (s) => s.disconnectedSince],
          ['cordoned by policy', (s) => s.staleCordonedAt],
        ],
        'No node is due.',
      );
    });
}
