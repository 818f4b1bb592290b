import type { Command } from 'commander';
import { tenantClientFor } from '../context';
import { wholeNumber } from '../options';
import { printJson, printTable } from '../output';

export function registerEventCommands(program: Command) {
  const events = program.command('events').description("A tenant's events (security.join.refused, node.joined, …)");
  events
    .command('list')
    .description('List events, newest first')
    .requiredOption('--tenant <tenant>', 'tenant id or name')
    .option('--type <type>', 'only this type, e.g. security.join.refused')
    .option('--limit <n>', 'how many (1 to 200)', wholeNumber(1, 200), 50)
    .option('--cursor <cursor>', 'continue after this event id')
    .option('--json', 'print JSON')
    .action(async (opts: { tenant: string; type?: string; limit: number; cursor?: string; json?: boolean }, cmd: Command) => {
      const { client, tenantPath } = await tenantClientFor(cmd, opts.tenant);
      const page = await client.get('events.list', `${tenantPath}/events`, {
        type: opts.type,
        limit: opts.limit,
        cursor: opts.cursor,
      });
      if (opts.json) return printJson(page.items);
      printTable(
        page.items,
        [
          ['id', (e) => e.id],
          ['time', (e) => e.createdAt],
          ['type', (e) => e.type],
          ['data', (e) => e.data],
        ],
        'No events.',
      );
      if (page.nextCursor) process.stdout.write(`More: --cursor ${page.nextCursor}\n`);
    });
}
