import { readFile } from 'node:fs/promises';
import { collectLabel, labelsField } from '../label-options';
import { type Command, Option } from 'commander';
import { DomainError } from '../../protocol/errors';
import { formatOfName, splitImport } from '../../protocol/api/expected-import-parts';
import { CSV_LINE_BREAK, csvRow } from '../../lib/csv';
import type { Answer } from '../api';
import { clientFor } from '../context';
import { printJson, printTable, printRows } from '../output';
import { sitePath } from './site-scoped-tokens';

const scopeOptions = (command: Command) =>
  command
    .option('--tenant <tenant>', "tenant id or name (default: the API key's tenant)")
    .requiredOption('--site <siteId>', 'the site the machines boot in');

/** `expected-machines`: imported lists of machines a site expects; each one joins without waiting for a person. */
export function registerExpectedMachineCommands(program: Command) {
  const expected = program.command('expected-machines').description('Machines a site expects: listed ones join their pool at once');
  const pathOf = async (cmd: Command, opts: { tenant?: string; site: string }) => {
    const client = clientFor(cmd);
    return { client, path: sitePath(await client.tenantId(opts.tenant), opts.site, 'expected-machines') };
  };

  scopeOptions(
    expected
      .command('import <file>')
      .description('Import a CSV (header: serial, productUuid, mac, gpuUuid, pool, hostname, expiresAt, labels) or a JSON array'),
  )
    .option('--pool <pool>', 'the pool (name or id) of rows that name none')
    .addOption(new Option('--format <format>', 'csv or json (default: from the file name)').choices(['csv', 'json']))
    .option('--dry-run', 'show what would be imported and the rejected rows; save nothing')
    .option('--label <key=value>', "a label every row's node gets; a row's labels column overrides it (repeatable)", collectLabel)
    .option('--json', 'print JSON')
    .action(
      async (
        file: string,
        opts: {
          tenant?: string;
          site: string;
          pool?: string;
          format?: 'csv' | 'json';
          dryRun?: boolean;
          label?: Record<string, string>;
          json?: boolean;
        },
        cmd: Command,
      ) => {
        const { client, path } = await pathOf(cmd, opts);
        const format = opts.format ?? formatOfName(file);
        const content = await readFile(file, 'utf8').catch(() => {
          throw new DomainError('INVALID_ARGUMENT', `Cannot read ${file}`);
        });
        // Sent in parts of 2,000 rows, so a large file shows progress and no call nears the body limit.
        const parts = splitImport(format, content);
        const total = parts.reduce((n, p) => n + p.rows, 0);
        const answer: Answer<'expectedMachines.import'> = { importId: null, accepted: 0, rejected: [], sample: [] };
        let sent = 0;
        for (const part of parts) {
          const body = {
            format,
            content: part.content,
            preview: !!opts.dryRun,
            rowOffset: part.offset,
            ...(opts.pool ? { defaultPoolId: opts.pool } : {}),
            ...(answer.importId ? { importId: answer.importId } : {}),
            ...labelsField(opts.label),
          };
          const reply = await client.post('expectedMachines.import', `${path}/import`, body);
          answer.importId = reply.importId ?? answer.importId;
          answer.accepted += reply.accepted;
          answer.rejected.push(...reply.rejected);
          if (answer.sample.length < 20) answer.sample.push(...reply.sample.slice(0, 20 - answer.sample.length));
          sent += part.rows;
          if (parts.length > 1 && !opts.json) process.stderr.write(`${sent}/${total} rows\n`);
        }
        if (opts.json) return printJson(answer);
        const verb = opts.dryRun ? 'Would import' : 'Imported';
        process.stdout.write(
          `${verb} ${answer.accepted} machines${answer.importId ? ` (${answer.importId})` : ''}; ${answer.rejected.length} rows rejected\n`,
        );
        if (answer.rejected.length)
          printTable(answer.rejected, [
            ['row', (r) => r.row],
            ['reason', (r) => r.reason],
          ]);
      },
    );

  scopeOptions(expected.command('list').description('List expected machines that have not arrived (or, with --arrived, those that have)'))
    .option('--arrived', 'the machines that arrived, with the request that admitted them')
    .option('--limit <n>', 'at most this many (1 to 200)', (v) => Number(v), 100)
    .option('--json', 'print JSON')
    .option('--csv', "print CSV (safe to open in a spreadsheet: a value that starts like a formula is prefixed with ')")
    .action(
      async (opts: { tenant?: string; site: string; arrived?: boolean; limit: number; json?: boolean; csv?: boolean }, cmd: Command) => {
        const { client, path } = await pathOf(cmd, opts);
        const page = await client.get('expectedMachines.list', path, {
          state: opts.arrived ? 'arrived' : 'waiting',
          limit: opts.limit,
        });
        if (opts.json) return printJson(page);
        if (opts.csv) {
          const header = [
            'id',
            'importId',
            'serial',
            'productUuid',
            'mac',
            'gpuUuid',
            'pool',
            'hostname',
            'expiresAt',
            'arrivedAt',
            'requestId',
          ];
          const rows = page.items.map((i) =>
            csvRow([
              i.id,
              i.importId,
              i.serial,
              i.productUuid,
              i.mac,
              i.gpuUuid,
              i.poolId,
              i.hostname,
              i.expiresAt,
              i.arrivedAt,
              i.requestId,
            ]),
          );
          return void process.stdout.write([csvRow(header), ...rows].join(CSV_LINE_BREAK) + CSV_LINE_BREAK);
        }
        printTable(
          page.items,
          [
            ['id', (i) => i.id],
            ['serial', (i) => i.serial],
            ['product uuid', (i) => i.productUuid],
            ['mac', (i) => i.mac],
            ['gpu uuid', (i) => i.gpuUuid],
            ['pool', (i) => i.poolId],
            ['hostname', (i) => i.hostname],
            [opts.arrived ? 'arrived' : 'expires', (i) => (opts.arrived ? i.arrivedAt : i.expiresAt)],
          ],
          opts.arrived ? 'No expected machine has arrived.' : 'No expected machine is waiting.',
        );
        if (page.total > page.items.length) process.stdout.write(`${page.items.length} of ${page.total} shown\n`);
      },
    );

  scopeOptions(expected.command('unmatched').description('Discovery arrivals of the last 7 days that no expected machine admitted'))
    .option('--json', 'print JSON')
    .action(async (opts: { tenant?: string; site: string; json?: boolean }, cmd: Command) => {
      const { client, path } = await pathOf(cmd, opts);
      const { items } = await client.get('expectedMachines.unmatched', `${path}/unmatched`);
      printRows(
        items,
        opts.json,
        [
          ['request', (i) => i.requestId],
          ['state', (i) => i.state],
          ['mac', (i) => i.mac],
          ['hostname', (i) => i.hostname],
          ['serial', (i) => i.serial],
          ['decided by', (i) => i.decidedBy],
          ['arrived', (i) => i.createdAt],
        ],
        'Every arrival matched an expected machine.',
      );
    });

  scopeOptions(expected.command('delete [ids...]').description('Delete expected machines that have not arrived: by id, or a whole import'))
    .option('--import <importId>', 'every waiting machine of this import')
    .option('--json', 'print JSON')
    .action(async (ids: string[], opts: { tenant?: string; site: string; import?: string; json?: boolean }, cmd: Command) => {
      if (!ids.length === !opts.import) throw new DomainError('INVALID_ARGUMENT', 'Name expected machine ids or --import, not both');
      const { client, path } = await pathOf(cmd, opts);
      const answer = await client.post('expectedMachines.delete', `${path}/delete`, ids.length ? { ids } : { importId: opts.import });
      if (opts.json) return printJson(answer);
      process.stdout.write(`Deleted ${answer.deleted} expected machines\n`);
    });
}
