import type { Command } from 'commander';
import { clientFor } from '../context';
import { parseTtl } from './join-tokens';
import { createTokenToFile, parseWhole, sitePath } from './site-scoped-tokens';

type Opts = { tenant: string; site: string; maxUses?: number; ttl?: number; key?: string; out: string; json?: boolean };

/** `site-tokens create`: a token for `bcd site` agents of one site (at most 16 uses). */
export function registerSiteTokenCommands(program: Command) {
  program
    .command('site-tokens')
    .description('Site tokens: admit bcd site agents into one site')
    .command('create')
    .description('Create a site token; written to --out (0600), never printed')
    .requiredOption('--tenant <tenant>', 'tenant id or name')
    .requiredOption('--site <siteId>', 'the site')
    .option('--max-uses <n>', 'how many site agents may join with it, 1 to 16 (default 1)', parseWhole)
    .option('--ttl <duration>', 'lifetime, 1m to 24h (default 1h)', parseTtl)
    .option('--key <idempotencyKey>', 'idempotency key: a retry with the same key mints nothing new')
    .requiredOption('--out <file>', 'write the token to this new 0600 file')
    .option('--json', 'print the record as JSON')
    .action(async (opts: Opts, cmd: Command) => {
      const client = clientFor(cmd);
      const tenantId = await client.tenantId(opts.tenant);
      const body = {
        ...(opts.maxUses !== undefined ? { maxUses: opts.maxUses } : {}),
        ...(opts.ttl ? { ttlSeconds: opts.ttl } : {}),
        ...(opts.key ? { idempotencyKey: opts.key } : {}),
      };
      await createTokenToFile(client, sitePath(tenantId, opts.site, 'site-tokens'), body, { out: opts.out, json: opts.json, kind: 'site' });
    });
}
