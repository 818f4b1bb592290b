import type { Command } from 'commander';
import { parseWhole, withSiteTokenAction, type SiteScopedTokenOptions } from './site-scoped-tokens';

type Opts = SiteScopedTokenOptions & { mac: string; ip?: string; workflowId?: string; bootLeaseEpoch?: number };

/** `discovery-tokens create`: what a site's boot step runs once per PXE lease. */
export function registerDiscoveryTokenCommands(program: Command) {
  withSiteTokenAction(
    program
      .command('discovery-tokens')
      .description('Discovery tokens: one per PXE lease, bound to its MAC, single use')
      .command('create')
      .description('Create a discovery token for one PXE-booted machine; written to --out (0600), never printed')
      .option('--tenant <tenant>', "tenant id or name (default: the API key's tenant)")
      .requiredOption('--site <siteId>', 'the site the machine booted in')
      .requiredOption('--mac <mac>', "the lease's MAC, aa:bb:cc:dd:ee:ff")
      .option('--ip <ip>', 'the address the lease gave')
      .option('--workflow-id <id>', 'the boot workflow')
      .option('--boot-lease-epoch <n>', "the lease's epoch", parseWhole),
    { procedure: 'discoveryTokens.create', tail: 'discovery-tokens', kind: 'discovery' },
    (opts: Opts) => ({
      mac: opts.mac,
      ...(opts.ip ? { ip: opts.ip } : {}),
      ...(opts.workflowId ? { workflowId: opts.workflowId } : {}),
      ...(opts.bootLeaseEpoch !== undefined ? { bootLeaseEpoch: opts.bootLeaseEpoch } : {}),
    }),
  );
}
