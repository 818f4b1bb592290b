import { type Command, InvalidArgumentError } from 'commander';
import { insertApiKey } from '../../server/api-keys/api-keys';
import type { ApiKeyRecord } from '../../protocol/api/api-key-schemas';
import { ROLES, type Role } from '../../protocol/api/permissions';
import { DomainError } from '../../protocol/errors';
import { resolveTenant } from '../../server/tenants/tenants';
import { enc } from '../client';
import { tenantClientFor } from '../context';
import { withLocalDb } from '../local-db';
import { wholeNumber } from '../options';
import { printJson, printRows } from '../output';
import { writeNewSecretFile } from '../secret-file';

const role = (value: string): Role => {
  if (!(ROLES as readonly string[]).includes(value)) throw new InvalidArgumentError(`use one of ${ROLES.join(', ')}`);
  return value as Role;
};

type CreateOpts = { tenant: string; role: Role; name?: string; ttlDays?: number; local?: boolean; out?: string; json?: boolean };

async function createKey(opts: CreateOpts, cmd: Command): Promise<ApiKeyRecord & { key: string }> {
  const name = opts.name ?? `${opts.role} key`;
  const ttl = opts.ttlDays ? { ttlSeconds: opts.ttlDays * 86_400 } : {};
  if (opts.local) {
    // Directly on the database, for the first admin key on the server machine.
    return withLocalDb(async (db) => {
      const tenant = await resolveTenant(db, opts.tenant);
      if (!tenant) throw new DomainError('NOT_FOUND', `Tenant ${opts.tenant} not found`);
      return insertApiKey(db, { tenantId: tenant.id, role: opts.role, name, ...ttl }, 'local:cli');
    });
  }
  const { client, tenantPath } = await tenantClientFor(cmd, opts.tenant);
  return client.post('apiKeys.create', `${tenantPath}/api-keys`, { role: opts.role, name, ...ttl });
}

export function registerApiKeyCommands(program: Command) {
  const keys = program.command('api-keys').description('API keys for automation (one tenant, one role each)');
  keys
    .command('create')
    .description('Create an API key; it is shown (or written to --out) once')
    .requiredOption('--tenant <tenant>', 'tenant id or name (root for the platform tenant)')
    .requiredOption('--role <role>', `one of ${ROLES.join(', ')}`, role)
    .option('--name <name>', 'a label for the key')
    .option('--ttl-days <days>', 'expire the key after this many days, 1 to 400 (default: until revoked)', wholeNumber(1, 400))
    .option('--local', 'create it directly on the database (on the server machine, before any key exists)')
    .option('--out <file>', 'write the key to a new 0600 file instead of printing it')
    .option('--json', 'print the record as JSON')
    .action(async (opts: CreateOpts, cmd: Command) => {
      let created: (ApiKeyRecord & { key: string }) | undefined;
      if (opts.out) {
        await writeNewSecretFile(opts.out, async () => (created = await createKey(opts, cmd)).key);
      } else {
        created = await createKey(opts, cmd);
      }
      const { key, ...record } = created!;
      if (opts.json) printJson(opts.out ? record : created);
      else if (opts.out) process.stdout.write(`Created API key ${record.id} (${record.role}); written to ${opts.out}\n`);
      else process.stdout.write(`Created API key ${record.id} (${record.role}). It is shown only once:\n${key}\n`);
    });
  keys
    .command('list')
    .description("List a tenant's API keys (never their secrets)")
    .requiredOption('--tenant <tenant>', 'tenant id or name')
    .option('--all', 'include revoked keys')
    .option('--json', 'print JSON')
    .action(async (opts: { tenant: string; all?: boolean; json?: boolean }, cmd: Command) => {
      const { client, tenantPath } = await tenantClientFor(cmd, opts.tenant);
      const { items } = await client.get('apiKeys.list', `${tenantPath}/api-keys`, { includeRevoked: opts.all });
      printRows(items, opts.json, [
        ['id', (k) => k.id],
        ['name', (k) => k.name],
        ['role', (k) => k.role],
        ['created by', (k) => k.createdByEmail ?? k.createdBy],
        ['created', (k) => k.createdAt],
        ['last used', (k) => k.lastUsedAt],
        ['expires', (k) => k.expiresAt],
        ['revoked', (k) => k.revokedAt],
      ]);
    });
  keys
    .command('revoke <apiKeyId>')
    .description('Revoke an API key at once')
    .option('--tenant <tenant>', "tenant id or name (default: the API key's tenant)")
    .action(async (apiKeyId: string, opts: { tenant?: string }, cmd: Command) => {
      if (apiKeyId.includes('.')) throw new DomainError('INVALID_ARGUMENT', 'Pass the key id (ak_…), not the key itself');
      const { client, tenantPath } = await tenantClientFor(cmd, opts.tenant);
      const key = await client.post('apiKeys.revoke', `${tenantPath}/api-keys/${enc(apiKeyId)}/revoke`);
      process.stdout.write(`Revoked API key ${key.id}\n`);
    });
}
