import type { Command } from 'commander';
import { parseWhole, withSiteTokenAction, type SiteScopedTokenOptions } from './site-scoped-tokens';

type Opts = SiteScopedTokenOptions & { maxUses?: number };

/** `site-tokens create`: a token for `bcd site` agents of one site (at most 16 uses). */
export function registerSiteTokenCommands(program: Command) {
  withSiteTokenAction(
    program
      .command('site-tokens')
      .description('Site tokens: admit bcd site agents into one site')
      .command('create')
      .description('Create a site token; written to --out (0600), never printed')
      .option('--tenant <tenant>', "tenant id or name (default: the API key's tenant)")
      .requiredOption('--site <siteId>', 'the site')
      .option('--max-uses <n>', 'how many site agents may join with it, 1 to 16 (default 1)', parseWhole),
    { procedure: 'siteTokens.create', tail: 'site-tokens', kind: 'site' },
    (opts: Opts) => (opts.maxUses !== undefined ? { maxUses: opts.maxUses } : {}),
  );
}
