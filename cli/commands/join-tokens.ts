import { type Command, InvalidArgumentError, Option } from 'commander';
import { DomainError } from '../../protocol/errors';
import type { CreatedJoinToken, JoinTokenRecord } from '../../protocol/api/token-schemas';
import { enc } from '../client';
import { clientFor } from '../context';
import { printJson, printRows } from '../output';
import { writeNewSecretFile } from '../secret-file';
import { collectLabel, labelsField } from '../label-options';

const DURATION = /^(?:(\d{1,5})h)?(?:(\d{1,5})m)?(?:(\d{1,6})s)?$/;

/**
 * `--ttl`: a duration of hours, minutes and seconds in that order (`90s`, `15m`, `1h`, `1h30m`, `24h`),
 * in whole seconds from one minute to one day.
 */
export function parseTtl(value: string): number {
  const match = DURATION.exec(value);
  if (!value || !match || (!match[1] && !match[2] && !match[3])) {
    throw new InvalidArgumentError('use a duration like 90s, 15m, 1h or 1h30m, from 1m to 24h');
  }
  const seconds = Number(match[1] ?? 0) * 3600 + Number(match[2] ?? 0) * 60 + Number(match[3] ?? 0);
  if (seconds < 60 || seconds > 86_400)
    throw new InvalidArgumentError(`${value} is ${seconds} seconds; use 1m to 24h (60 to 86400 seconds)`);
  return seconds;
}

function parseMaxUses(value: string): number {
  if (!/^\d{1,6}$/.test(value)) throw new InvalidArgumentError('use a whole number from 1 to 10000');
  return Number(value);
}

type CreateOpts = {
  tenant?: string;
  pool: string;
  ttl: number;
  maxUses?: number;
  allowReclaim?: boolean;
  expectProductUuid?: string;
  expectSerial?: string;
  expectMac?: string;
  expectGpuUuid?: string;
  hosted?: 'kubernetes';
  key: string;
  name?: string;
  description?: string;
  out?: string;
  label?: Record<string, string>;
  json?: boolean;
};

function createBody(opts: CreateOpts): Record<string, unknown> {
  const expect = Object.fromEntries(
    [
      ['productUuid', opts.expectProductUuid],
      ['serial', opts.expectSerial],
      ['mac', opts.expectMac],
      ['gpuUuid', opts.expectGpuUuid],
    ].filter(([, value]) => value !== undefined),
  );
  return {
    ttlSeconds: opts.ttl,
    ...(opts.maxUses !== undefined ? { maxUses: opts.maxUses } : {}),
    ...(opts.allowReclaim ? { allowReclaim: true } : {}),
    ...(Object.keys(expect).length ? { expect } : {}),
    ...(opts.hosted ? { hosted: opts.hosted } : {}),
    ...(opts.name !== undefined ? { name: opts.name } : {}),
    ...(opts.description !== undefined ? { description: opts.description } : {}),
    ...labelsField(opts.label),
    idempotencyKey: opts.key,
  };
}

const describeToken = (t: JoinTokenRecord) => `${t.maxUses === 1 ? '1 use' : `${t.maxUses} uses`}, expires ${t.expiresAt}`;
const pinnedTo = (t: JoinTokenRecord) => (t.expect ? Object.keys(t.expect).join(',') : 'no');

export function registerJoinTokenCommands(program: Command) {
  const tokens = program.command('join-tokens').description('Join tokens: credentials that let machines join one pool');
  tokens
    .command('create')
    .description('Create a node join token; it is shown (or written to --out) once')
    .option('--tenant <tenant>', "tenant id or name (default: the API key's tenant)")
    .requiredOption('--pool <poolId>', 'the pool machines join')
    .requiredOption('--ttl <duration>', 'lifetime, 1m to 24h (e.g. 15m, 1h, 1h30m)', parseTtl)
    .option('--max-uses <n>', 'how many machines may join with it, 1 to 10000 (default 1)', parseMaxUses)
    .option('--allow-reclaim', 'let a known machine with a new key reclaim its node')
    .option('--expect-product-uuid <uuid>', "pin to the machine's product UUID")
    .option('--expect-serial <serial>', "pin to the machine's product, board or chassis serial")
    .option('--expect-mac <mac>', 'pin to a permanent MAC, aa:bb:cc:dd:ee:ff')
    .option('--expect-gpu-uuid <uuid>', 'pin to a GPU UUID, GPU-…')
    .addOption(new Option('--hosted <kind>', 'for bcd as a DaemonSet on a Kubernetes cluster').choices(['kubernetes']))
    .requiredOption('--key <idempotencyKey>', 'idempotency key: a retry with the same key returns the same token record')
    .option('--name <text>', 'what the token is for, as lists show it (1 to 100 characters)')
    .option('--description <text>', 'notes on the token (up to 500 characters)')
    .option('--label <key=value>', 'a label the nodes it admits get (repeatable); never on the certificate', collectLabel)
    .option('--out <file>', 'write the token to a new 0600 file instead of printing it (never overwrites)')
    .option('--json', 'print the answer as JSON')
    .action(async (opts: CreateOpts, cmd: Command) => {
      const client = clientFor(cmd);
      const create = async () => {
        const tenantId = await client.tenantId(opts.tenant);
        return client.post('joinTokens.create', `/v1/tenants/${enc(tenantId)}/pools/${enc(opts.pool)}/join-tokens`, createBody(opts));
      };
      if (opts.out) {
        let created: CreatedJoinToken | undefined;
        // The file is reserved before the call, so a taken path fails before anything is minted; a refusal
        // below removes it again.
        await writeNewSecretFile(opts.out, async () => {
          created = await create();
          if (created.token === undefined) {
            throw new DomainError(
              'INVALID_STATE',
              `This --key was used before, for join token ${created.id}, whose token was shown only when it was created; nothing was written to ${opts.out}. ` +
                `If that token is lost, revoke that token (${created.id}) and create a new one with a new --key`,
            );
          }
          return created.token;
        });
        const { token: _written, ...record } = created!;
        if (opts.json) printJson(record);
        else process.stdout.write(`Created join token ${record.id} (${describeToken(record)}); written to ${opts.out}\n`);
        return;
      }
      const created = await create();
      if (opts.json) printJson(created);
      else if (created.token === undefined) {
        process.stdout.write(
          `Join token ${created.id} was already created with this --key (${describeToken(created)}); its token was shown only then.\n`,
        );
      } else {
        process.stdout.write(`Created join token ${created.id} (${describeToken(created)}). It is shown only once:\n${created.token}\n`);
      }
    });
  tokens
    .command('list')
    .description("List a pool's live join tokens (never their secrets)")
    .option('--tenant <tenant>', "tenant id or name (default: the API key's tenant)")
    .requiredOption('--pool <poolId>', 'the pool')
    .option('--all', 'include revoked, expired and used-up tokens')
    .option('--json', 'print JSON')
    .action(async (opts: { tenant?: string; pool: string; all?: boolean; json?: boolean }, cmd: Command) => {
      const client = clientFor(cmd);
      const path = `/v1/tenants/${enc(await client.tenantId(opts.tenant))}/pools/${enc(opts.pool)}/join-tokens`;
      const items: JoinTokenRecord[] = [];
      let cursor: string | undefined;
      do {
        const page = await client.get('joinTokens.list', path, { includeInactive: opts.all || undefined, limit: 200, cursor });
        items.push(...page.items);
        cursor = page.nextCursor ?? undefined;
      } while (cursor);
      printRows(
        items,
        opts.json,
        [
          ['id', (t) => t.id],
          ['state', (t) => (t.revokedBy ? `revoked by ${t.revokedByEmail ?? t.revokedBy}` : t.state)],
          ['uses left', (t) => `${t.usesLeft}/${t.maxUses}`],
          ['expires', (t) => t.expiresAt],
          ['pinned', pinnedTo],
          ['reclaim', (t) => (t.allowReclaim ? 'yes' : 'no')],
          ['hosted', (t) => t.hosted],
        ],
        opts.all ? 'No join tokens.' : 'No live join tokens (--all shows revoked, expired and used-up ones).',
      );
    });
  tokens
    .command('revoke <tokenId>')
    .description('Revoke a join token at once (pass its id, jt_…, never the token)')
    .option('--tenant <tenant>', "tenant id or name (default: the API key's tenant)")
    .requiredOption('--pool <poolId>', 'the pool')
    .action(async (tokenId: string, opts: { tenant?: string; pool: string }, cmd: Command) => {
      // Checked before anything is sent: a pasted token carries its secret, which must never travel as an id.
      if (tokenId.includes('.') || tokenId.startsWith('bcjt_')) {
        throw new DomainError('INVALID_ARGUMENT', 'pass the token id (jt_…), not the token', { field: 'tokenId' });
      }
      const client = clientFor(cmd);
      const path = `/v1/tenants/${enc(await client.tenantId(opts.tenant))}/pools/${enc(opts.pool)}/join-tokens/${enc(tokenId)}/revoke`;
      const token = await client.post('joinTokens.revoke', path);
      process.stdout.write(`Revoked join token ${token.id} (at ${token.revokedAt})\n`);
    });
}
