import type { Command } from 'commander';
import { clientFor } from '../context';
import { parseTtl } from './join-tokens';
import { createTokenToFile, parseWhole, sitePath } from './site-scoped-tokens';

type Opts = { tenant: string; site: string; mac: string; ip?: string; workflowId?: string; bootLeaseEpoch?: number; ttl?: number; key?: string; out: string; json?: boolean };

/** `discovery-tokens create`: what a site's boot step runs once per PXE lease. */
export function registerDiscoveryTokenCommands(program: Command) {
  program
    .command('discovery-tokens')
    .description('Discovery tokens: one per PXE lease, bound to its MAC, single use')
    .command('create')
    .description('Create a discovery token for one PXE-booted machine; written to --out (0600), never printed')
    .requiredOption('--tenant <tenant>', 'tenant id or name')
    .requiredOption('--site <siteId>', 'the site the machine booted in')
    .requiredOption('--mac <mac>', "the lease's MAC, aa:bb:cc:dd:ee:ff")
    .option('--ip <ip>', 'the address the lease gave')
    .option('--workflow-id <id>', 'the boot workflow')
    .option('--boot-lease-epoch <n>', "the lease's epoch", parseWhole)
    .option('--ttl <duration>', 'lifetime, 1m to 24h (default 1h)', parseTtl)
    .option('--key <idempotencyKey>', 'idempotency key: a retry with the same key mints nothing new')
    .requiredOption('--out <file>', 'write the token to this new 0600 file')
    .option('--json', 'print the record as JSON')
    .action(async (opts: Opts, cmd: Command) => {
      const client = clientFor(cmd);
      const tenantId = await client.tenantId(opts.tenant);
      const body = {
        mac: opts.mac,
        ...(opts.ip ? { ip: opts.ip } : {}),
        ...(opts.workflowId ? { workflowId: opts.workflowId } : {}),
        ...(opts.bootLeaseEpoch !== undefined ? { bootLeaseEpoch: opts.bootLeaseEpoch } : {}),
        ...(opts.ttl ? { ttlSeconds: opts.ttl } : {}),
        ...(opts.key ? { idempotencyKey: opts.key } : {}),
      };
      await createTokenToFile(client, sitePath(tenantId, opts.site, 'discovery-tokens'), body, { out: opts.out, json: opts.json, kind: 'discovery' });
    });
}
