import { type Command, InvalidArgumentError } from 'commander';
import { ROLES, type Role } from '../../server/authz/permissions';
import { DomainError } from '../../server/errors';
import { createOperatorWithOneTimePassword, resetOperatorPassword } from '../../server/operators/operators';
import { resolveTenant } from '../../server/tenants/tenants';
import { withLocalDb } from '../local-db';

const role = (value: string): Role => {
  if (!(ROLES as readonly string[]).includes(value)) throw new InvalidArgumentError(`use one of ${ROLES.join(', ')}`);
  return value as Role;
};

export function registerOperatorCommands(program: Command) {
  const operators = program.command('operators').description('Console operators (on the server machine)');
  operators
    .command('reset-password')
    .description('Set a new one-time password for an operator, directly on the database, and print it once')
    .requiredOption('--email <email>', 'the operator, e.g. admin@better-compute.local')
    .requiredOption('--local', 'work directly on the database (required: there is no API for this)')
    .action(async (opts: { email: string }) => {
      const password = await withLocalDb((db) => resetOperatorPassword(db, opts.email));
      process.stdout.write(`New one-time password for ${opts.email.trim().toLowerCase()}: ${password}\nIt is shown only this once; signing in with it asks for a new password first.\n`);
    });
  operators
    .command('create')
    .description('Create an operator with a one-time password, directly on the database (break-glass), and print it once')
    .requiredOption('--email <email>', 'the new operator')
    .requiredOption('--tenant <tenant>', 'tenant id or name (root for the platform tenant)')
    .requiredOption('--role <role>', `one of ${ROLES.join(', ')}`, role)
    .option('--name <name>', 'the name the console shows (default: the email)')
    .requiredOption('--local', 'work directly on the database (on the server machine)')
    .action(async (opts: { email: string; tenant: string; role: Role; name?: string }) => {
      const created = await withLocalDb(async (db) => {
        const tenant = await resolveTenant(db, opts.tenant);
        if (!tenant) throw new DomainError('NOT_FOUND', `Tenant ${opts.tenant} not found`);
        return createOperatorWithOneTimePassword(db, { email: opts.email, name: opts.name, tenantId: tenant.id, role: opts.role }, 'local:cli');
      });
      process.stdout.write(`Created operator ${created.id} (${opts.role}). One-time password for ${created.email}: ${created.password}\nIt is shown only this once; signing in with it asks for a new password first.\n`);
    });
}
