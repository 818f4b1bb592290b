import { type Command, InvalidArgumentError } from 'commander';
import { ROLES, type Role } from '../../protocol/api/permissions';
import { DomainError } from '../../protocol/errors';
import { createOperatorWithOneTimePassword, resetOperatorPassword } from '../../server/operators/operators';
import { resolveTenant } from '../../server/tenants/tenants';
import { enc } from '../client';
import { tenantClientFor } from '../context';
import { withLocalDb } from '../local-db';
import { printJson, printRows } from '../output';

const role = (value: string): Role => {
  if (!(ROLES as readonly string[]).includes(value)) throw new InvalidArgumentError(`use one of ${ROLES.join(', ')}`);
  return value as Role;
};

/** The console link that opens an invitation: the token rides in the fragment, which no server log records. */
const invitationLink = (serverUrl: string, token: string) => `${new URL(serverUrl).origin}/invite#${token}`;

export function registerOperatorCommands(program: Command) {
  const operators = program
    .command('operators')
    .description("A tenant's console operators (and break-glass commands on the server machine)");
  operators
    .command('invite')
    .description('Invite a person by email with a role; prints the one-time invitation link (valid 7 days) once')
    .requiredOption('--tenant <tenant>', 'tenant id or name')
    .requiredOption('--email <email>', 'who is invited')
    .requiredOption('--role <role>', `one of ${ROLES.join(', ')}`, role)
    .option('--json', 'print the invitation (with its token and link) as JSON')
    .action(async (opts: { tenant: string; email: string; role: Role; json?: boolean }, cmd: Command) => {
      const { client, tenantPath } = await tenantClientFor(cmd, opts.tenant);
      const created = await client.post('invitations.create', `${tenantPath}/invitations`, {
        email: opts.email,
        role: opts.role,
      });
      const link = invitationLink(client.baseUrl, created.token);
      if (opts.json) return printJson({ ...created, link });
      const mail = created.emailed ? ` Sent to ${created.email}.` : created.emailError ? ` ${created.emailError.replace(/\.$/, '')}.` : '';
      process.stdout.write(
        `Invited ${created.email} as ${created.role} (invitation ${created.id}, until ${created.expiresAt}).${mail} The link is shown only once:\n${link}\n`,
      );
    });
  operators
    .command('list')
    .description("List a tenant's operators (admins only)")
    .requiredOption('--tenant <tenant>', 'tenant id or name')
    .option('--json', 'print JSON')
    .action(async (opts: { tenant: string; json?: boolean }, cmd: Command) => {
      const { client, tenantPath } = await tenantClientFor(cmd, opts.tenant);
      const { items } = await client.get('operators.list', `${tenantPath}/operators`);
      printRows(items, opts.json, [
        ['id', (o) => o.id],
        ['email', (o) => o.email],
        ['name', (o) => o.name],
        ['role', (o) => o.role],
        ['sign-in', (o) => o.signIn],
        ['last sign-in', (o) => o.lastSignInAt],
      ]);
    });
  operators
    .command('set-role <operatorId>')
    .description("Change an operator's role in the tenant (the last admin stays admin)")
    .requiredOption('--tenant <tenant>', 'tenant id or name')
    .requiredOption('--role <role>', `one of ${ROLES.join(', ')}`, role)
    .option('--json', 'print the operator as JSON')
    .action(async (operatorId: string, opts: { tenant: string; role: Role; json?: boolean }, cmd: Command) => {
      const { client, tenantPath } = await tenantClientFor(cmd, opts.tenant);
      const changed = await client.post('operators.setRole', `${tenantPath}/operators/${enc(operatorId)}/role`, {
        role: opts.role,
      });
      if (opts.json) return printJson(changed);
      process.stdout.write(`${changed.email} is now ${changed.role}\n`);
    });
  operators
    .command('remove <operatorId>')
    .description('Remove an operator from the tenant; every session of theirs ends at once')
    .requiredOption('--tenant <tenant>', 'tenant id or name')
    .action(async (operatorId: string, opts: { tenant: string }, cmd: Command) => {
      const { client, tenantPath } = await tenantClientFor(cmd, opts.tenant);
      await client.post('operators.remove', `${tenantPath}/operators/${enc(operatorId)}/remove`);
      process.stdout.write(`Removed ${operatorId}\n`);
    });
  operators
    .command('reset-password')
    .description('Set a new one-time password for an operator, directly on the database, and print it once')
    .requiredOption('--email <email>', 'the operator, e.g. admin@better-compute.local')
    .requiredOption('--local', 'work directly on the database (required: there is no API for this)')
    .action(async (opts: { email: string }) => {
      const password = await withLocalDb((db) => resetOperatorPassword(db, opts.email));
      process.stdout.write(
        `New one-time password for ${opts.email.trim().toLowerCase()}: ${password}\nIt is shown only this once; signing in with it asks for a new password first.\n`,
      );
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
        return createOperatorWithOneTimePassword(
          db,
          { email: opts.email, name: opts.name, tenantId: tenant.id, role: opts.role },
          'local:cli',
        );
      });
      process.stdout.write(
        `Created operator ${created.id} (${opts.role}). One-time password for ${created.email}: ${created.password}\nIt is shown only this once; signing in with it asks for a new password first.\n`,
      );
    });
}

export function registerInvitationCommands(program: Command) {
  const invitations = program.command('invitations').description("A tenant's invitations (admins only)");
  invitations
    .command('list')
    .description('List pending invitations (never their links)')
    .requiredOption('--tenant <tenant>', 'tenant id or name')
    .option('--all', 'include accepted, revoked and expired ones')
    .option('--json', 'print JSON')
    .action(async (opts: { tenant: string; all?: boolean; json?: boolean }, cmd: Command) => {
      const { client, tenantPath } = await tenantClientFor(cmd, opts.tenant);
      const { items } = await client.get('invitations.list', `${tenantPath}/invitations`, {
        includeClosed: opts.all,
      });
      printRows(items, opts.json, [
        ['id', (i) => i.id],
        ['email', (i) => i.email],
        ['role', (i) => i.role],
        ['state', (i) => i.state],
        ['expires', (i) => i.expiresAt],
        ['by', (i) => i.createdBy],
      ]);
    });
  invitations
    .command('revoke <invitationId>')
    .description('Revoke a pending invitation at once')
    .requiredOption('--tenant <tenant>', 'tenant id or name')
    .action(async (invitationId: string, opts: { tenant: string }, cmd: Command) => {
      const { client, tenantPath } = await tenantClientFor(cmd, opts.tenant);
      const revoked = await client.post('invitations.revoke', `${tenantPath}/invitations/${enc(invitationId)}/revoke`);
      process.stdout.write(`Revoked invitation ${revoked.id} (${revoked.state})\n`);
    });
}
