import type { Command } from 'commander';
import { clientFor } from '../context';
import { printJson, printRows } from '../output';

export function registerTenantCommands(program: Command) {
  const tenants = program.command('tenants').description('Tenants: who owns sites, pools and nodes');
  tenants
    .command('create')
    .description('Create a tenant (root tenant admins)')
    .requiredOption('--name <name>', 'lower-case name, e.g. acme')
    .option('--json', 'print JSON')
    .action(async (opts: { name: string; json?: boolean }, cmd: Command) => {
      const tenant = await clientFor(cmd).post('tenants.create', '/v1/tenants', { name: opts.name });
      if (opts.json) printJson(tenant);
      else process.stdout.write(`Created tenant ${tenant.name} (${tenant.id})\n`);
    });
  tenants
    .command('list')
    .description('List the tenants you can see')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }, cmd: Command) => {
      const { items } = await clientFor(cmd).get('tenants.list', '/v1/tenants');
      printRows(items, opts.json, [
        ['id', (t) => t.id],
        ['name', (t) => t.name],
        ['root', (t) => (t.isRoot ? 'yes' : '')],
        ['created', (t) => t.createdAt],
      ]);
    });
}
