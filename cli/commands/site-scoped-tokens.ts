import type { Command } from 'commander';
import { DomainError } from '../../protocol/errors';
import type { CreatedJoinToken } from '../../protocol/api/token-schemas';
import { enc, type ApiClient } from '../client';
import { clientFor } from '../context';
import { printJson } from '../output';
import { writeNewSecretFile } from '../secret-file';
import { parseTtl } from './join-tokens';

/**
 * Mints a site-scoped token and writes it to a new 0600 file (never printed): the file is reserved before
 * the call, so a taken path fails before anything is minted.
 */
async function createTokenToFile(
  client: ApiClient,
  procedure: 'discoveryTokens.create' | 'siteTokens.create',
  path: string,
  body: Record<string, unknown>,
  opts: { out: string; json?: boolean; kind: string },
) {
  let created: CreatedJoinToken | undefined;
  await writeNewSecretFile(opts.out, async () => {
    created = await client.post(procedure, path, body);
    if (created.token === undefined) {
      throw new DomainError(
        'INVALID_STATE',
        `This --key was used before, for token ${created.id}, whose token was shown only when it was created; nothing was written`,
      );
    }
    return created.token;
  });
  const { token: _written, ...record } = created!;
  if (opts.json) printJson(record);
  else
    process.stdout.write(
      `Created ${opts.kind} token ${record.id} (${record.maxUses} use(s), expires ${record.expiresAt}); written to ${opts.out}\n`,
    );
}

export const sitePath = (tenantId: string, siteId: string, tail: string) => `/v1/tenants/${enc(tenantId)}/sites/${enc(siteId)}/${tail}`;

/** A non-negative whole number option (`--boot-lease-epoch`, `--max-uses`). */
export function parseWhole(value: string): number {
  if (!/^\d{1,15}$/.test(value)) throw new DomainError('INVALID_ARGUMENT', `${value} is not a whole number`);
  return Number(value);
}

/** What every site-scoped token command takes besides its own options. */
export interface SiteScopedTokenOptions {
  tenant?: string;
  site: string;
  ttl?: number;
  key?: string;
  out: string;
  json?: boolean;
}

/** The options every site-scoped token command ends with: lifetime, idempotency key, the file, --json. */
function withTokenFileOptions(command: Command): Command {
  return command
    .option('--ttl <duration>', 'lifetime, 1m to 24h (default 1h)', parseTtl)
    .option('--key <idempotencyKey>', 'idempotency key: a retry with the same key mints nothing new')
    .requiredOption('--out <file>', 'write the token to this new 0600 file')
    .option('--json', 'print the record as JSON');
}

/** The request fields of those options. */
function tokenFileBody(opts: SiteScopedTokenOptions) {
  return { ...(opts.ttl ? { ttlSeconds: opts.ttl } : {}), ...(opts.key ? { idempotencyKey: opts.key } : {}) };
}

/**
 * `<group> create` of a site-scoped token: `command` with the shared options, minting into --out. `bodyOf`
 * gives the command's own request fields, which come first in the body.
 */
export function withSiteTokenAction<O extends SiteScopedTokenOptions>(
  command: Command,
  token: { procedure: 'discoveryTokens.create' | 'siteTokens.create'; tail: string; kind: string },
  bodyOf: (opts: O) => Record<string, unknown>,
): void {
  withTokenFileOptions(command).action(async (opts: O, cmd: Command) => {
    const client = clientFor(cmd);
    const tenantId = await client.tenantId(opts.tenant);
    const body = { ...bodyOf(opts), ...tokenFileBody(opts) };
    await createTokenToFile(client, token.procedure, sitePath(tenantId, opts.site, token.tail), body, {
      out: opts.out,
      json: opts.json,
      kind: token.kind,
    });
  });
}
