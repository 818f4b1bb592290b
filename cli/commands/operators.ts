import type { Command } from 'commander';
import { resetOperatorPassword } from '../../server/operators/operators';
import { withLocalDb } from '../local-db';

export function registerOperatorCommands(program: Command) {
  const operators = program.command('operators').description('Console operators (on the server machine)');
  operators
    .command('reset-password')
    .description('Set a new one-time password for an operator, directly on the database, and print it once')
    .requiredOption('--email <email>', 'the operator, e.g. admin@better-compute.local')
    .requiredOption('--local', 'work directly on the database (required: there is no API for this)')
    .action(async (opts: { email: string }) => {
      const password = await withLocalDb((db) => resetOperatorPassword(db, opts.email));
      process.stdout.write(`New one-time password for ${opts.email.trim().toLowerCase()}: ${password}\nIt is shown only this once.\n`);
    });
}
