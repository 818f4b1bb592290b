import { existsSync } from 'node:fs';
import { mkdtemp, readFile, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { InvalidArgumentError } from 'commander';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCliInProcess, startCliApi, type ApiServer, type CliRun } from '../../test/cli';
import { testDb } from '../../test/db';
import { captureStderr, createTestTenant, expectNoSecretLeaks, type TestTenant } from '../../test/fixtures';
import { parseJoinToken } from '../../server/tokens/secret';
import { parseTtl } from './join-tokens';

describe('parseTtl', () => {
  it('reads hours, minutes and seconds in whole seconds', () => {
    expect(parseTtl('60s')).toBe(60);
    expect(parseTtl('90s')).toBe(90);
    expect(parseTtl('1m')).toBe(60);
    expect(parseTtl('15m')).toBe(900);
    expect(parseTtl('1h')).toBe(3600);
    expect(parseTtl('1h30m')).toBe(5400);
    expect(parseTtl('1h0m30s')).toBe(3630);
    expect(parseTtl('24h')).toBe(86_400);
    expect(parseTtl('1440m')).toBe(86_400);
  });

  it('refuses anything else with a clear message', () => {
    for (const bad of ['59s', '0m', '24h1s', '86401s', '25h']) expect(() => parseTtl(bad), bad).toThrow(/1m to 24h/);
    for (const bad of ['', '3600', '1.5h', '1d', '30m1h', '1h 30m', ' 1h', '1H', '-1h', 'h', '1hm', '1h1h']) {
      expect(() => parseTtl(bad), bad).toThrow(InvalidArgumentError);
    }
  });
});

const db = testDb();
const stderr = captureStderr();
const minted: string[] = [];
/** Everything the CLI wrote, except the one stdout whose job is to print a token. */
const outputs: string[] = [];
/** Every request the in-process server served. */
let requests: string[] = [];
let api: ApiServer;
let env: Record<string, string>;
let t: TestTenant;
let dir: string;

/**
 * Runs the CLI's program in process (cli.test.ts spawns the real executable for exit codes and piped output)
 * against the in-process server, keeping what it wrote for the leak check.
 */
async function cli(args: string[], options: { printsToken?: boolean } = {}): Promise<CliRun> {
  const run = await runCliInProcess(args, env);
  outputs.push(run.stderr);
  if (!options.printsToken) outputs.push(run.stdout);
  return run;
}

const scope = () => ['--tenant', t.tenantId, '--pool', t.poolId];

beforeAll(async () => {
  ({ api, t, env } = await startCliApi(db, { label: 'jt-cli', role: 'operator' }));
  requests = api.requests;
  dir = await mkdtemp(path.join(tmpdir(), 'jt-cli-'));
});

afterAll(async () => {
  stderr.stop();
  await api?.close();
  await expectNoSecretLeaks(db, minted, [...outputs, ...requests, ...stderr.lines]);
});

describe('better-compute join-tokens', { timeout: 60_000 }, () => {
  it('create prints the token once; a replayed --key prints none', async () => {
    const run = await cli(['join-tokens', 'create', ...scope(), '--ttl', '1h30m', '--max-uses', '3', '--key', 'print-1'], {
      printsToken: true,
    });
    expect(run).toMatchObject({ code: 0, stderr: '' });
    const token = run.stdout.trim().split('\n').at(-1)!;
    const parsed = parseJoinToken(token);
    expect(parsed).not.toBeNull();
    minted.push(token);
    const row = await db.joinToken.findUniqueOrThrow({ where: { id: parsed!.id } });
    expect(row.expiresAt.getTime() - row.createdAt.getTime()).toBe(5400_000);
    expect(row).toMatchObject({ maxUses: 3, poolId: t.poolId, role: 'node' });

    const replay = await cli(['join-tokens', 'create', ...scope(), '--ttl', '1h30m', '--max-uses', '3', '--key', 'print-1']);
    expect(replay.code).toBe(0);
    expect(replay.stdout).toContain(parsed!.id);
    expect(replay.stdout).toMatch(/shown only then/);
  });

  it('create --out writes a new 0600 file, maps the flags, and prints no secret', async () => {
    const out = path.join(dir, 'join-token');
    const run = await cli([
      'join-tokens',
      'create',
      ...scope(),
      '--ttl',
      '15m',
      '--key',
      'out-1',
      '--out',
      out,
      '--json',
      '--allow-reclaim',
      '--hosted',
      'kubernetes',
      '--expect-serial',
      ' SN-7701 ',
      '--expect-mac',
      '3C:EC:EF:12:34:56',
      '--expect-product-uuid',
      '4C4C4544-0031-3510-8052-B4C04F4E5632',
      '--expect-gpu-uuid',
      'GPU-7D5A1C2E-0B3F-4A6D-9E8C-1F2A3B4C5D6E',
    ]);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect((await stat(out)).mode & 0o777).toBe(0o600);
    const token = (await readFile(out, 'utf8')).trim();
    expect(parseJoinToken(token)).not.toBeNull();
    minted.push(token);
    const record = JSON.parse(run.stdout) as Record<string, unknown>;
    expect(record).not.toHaveProperty('token');
    expect(record).toMatchObject({
      id: parseJoinToken(token)!.id,
      allowReclaim: true,
      hosted: 'kubernetes',
      expect: {
        serial: 'SN-7701',
        mac: '3c:ec:ef:12:34:56',
        productUuid: '4c4c4544-0031-3510-8052-b4c04f4e5632',
        gpuUuid: 'GPU-7d5a1c2e-0b3f-4a6d-9e8c-1f2a3b4c5d6e',
      },
    });
  });

  it('--out never writes over a file (ALREADY_EXISTS, exit 7) and mints nothing', async () => {
    const out = path.join(dir, 'taken');
    await writeFile(out, 'keep me\n');
    const before = requests.length;
    const run = await cli(['join-tokens', 'create', ...scope(), '--ttl', '1h', '--key', 'taken-1', '--out', out]);
    expect(run.code).toBe(7);
    expect(run.stderr).toMatch(/ALREADY_EXISTS/);
    expect(await readFile(out, 'utf8')).toBe('keep me\n');
    expect(requests.length).toBe(before);
    expect(await db.joinToken.count({ where: { tenantId: t.tenantId, idempotencyKey: 'taken-1' } })).toBe(0);
  });

  it('--out refuses a replayed --key (INVALID_STATE, exit 5) and removes the reserved file', async () => {
    const first = path.join(dir, 'first');
    expect((await cli(['join-tokens', 'create', ...scope(), '--ttl', '1h', '--key', 'replay-1', '--out', first])).code).toBe(0);
    minted.push((await readFile(first, 'utf8')).trim());
    const again = path.join(dir, 'again');
    const run = await cli(['join-tokens', 'create', ...scope(), '--ttl', '1h', '--key', 'replay-1', '--out', again]);
    expect(run.code).toBe(5);
    expect(run.stderr).toMatch(/INVALID_STATE/);
    expect(run.stderr).toMatch(/revoke that token \(jt_[0-9a-z]{26}\) and create a new one/);
    expect(existsSync(again)).toBe(false);
  });

  it('refuses bad flags before calling the server', async () => {
    const before = requests.length;
    for (const args of [
      ['--ttl', '59s'],
      ['--ttl', '25h'],
      ['--ttl', '1.5h'],
      ['--ttl', '1h', '--hosted', 'docker'],
      ['--ttl', '1h', '--max-uses', 'many'],
    ]) {
      const run = await cli(['join-tokens', 'create', ...scope(), '--key', 'bad-flags', ...args]);
      expect(run.code, args.join(' ')).toBe(2);
    }
    expect((await cli(['join-tokens', 'create', ...scope(), '--ttl', '1h'])).code).toBe(2);
    expect(requests.length).toBe(before);
    const server = await cli(['join-tokens', 'create', ...scope(), '--ttl', '1h', '--key', 'bad-uses', '--max-uses', '10001']);
    expect(server.code).toBe(2);
    expect(server.stderr).toMatch(/maxUses/);
  });

  it('list shows live tokens, --all every state, and never a secret', async () => {
    const out = path.join(dir, 'to-revoke');
    const created = await cli(['join-tokens', 'create', ...scope(), '--ttl', '1h', '--key', 'list-1', '--out', out, '--json']);
    const id = (JSON.parse(created.stdout) as { id: string }).id;
    minted.push((await readFile(out, 'utf8')).trim());

    const table = await cli(['join-tokens', 'list', ...scope()]);
    expect(table.code).toBe(0);
    expect(table.stdout.split('\n')[0]).toMatch(/^ID\s+STATE\s+USES LEFT\s+EXPIRES\s+PINNED\s+RECLAIM\s+HOSTED$/);
    expect(table.stdout).toContain(id);

    const revoked = await cli(['join-tokens', 'revoke', id, ...scope()]);
    expect(revoked).toMatchObject({ code: 0, stderr: '' });
    expect(revoked.stdout).toContain(`Revoked join token ${id}`);
    expect((await cli(['join-tokens', 'revoke', id, ...scope()])).code).toBe(0);

    expect((await cli(['join-tokens', 'list', ...scope()])).stdout).not.toContain(id);
    const all = await cli(['join-tokens', 'list', ...scope(), '--all', '--json']);
    const items = JSON.parse(all.stdout) as { id: string; state: string }[];
    expect(items.find((i) => i.id === id)?.state).toBe('revoked');
    expect(all.stdout).not.toMatch(/secret|hash/i);
  });

  it('revoke refuses a pasted token before any network call', async () => {
    const token = minted[0]!;
    const before = requests.length;
    const run = await cli(['join-tokens', 'revoke', token, ...scope()]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/INVALID_ARGUMENT/);
    expect(run.stderr).toMatch(/pass the token id \(jt_…\), not the token/);
    expect(run.stderr).not.toContain(parseJoinToken(token)!.secret);
    expect((await cli(['join-tokens', 'revoke', 'jt_x.y', ...scope()])).code).toBe(2);
    expect(requests.length).toBe(before);
    expect(await db.joinToken.count({ where: { id: parseJoinToken(token)!.id, revokedAt: { not: null } } })).toBe(0);
  });

  it('reports server refusals with the error table’s exit codes', async () => {
    const other = await createTestTenant(db, { label: 'jt-cli-other' });
    const run = await cli(['join-tokens', 'list', '--tenant', t.tenantId, '--pool', other.poolId]);
    expect(run.code).toBe(3);
    expect(run.stderr).toMatch(/NOT_FOUND/);
    const none = await t.newPool('none');
    const refused = await cli(['join-tokens', 'create', '--tenant', t.tenantId, '--pool', none, '--ttl', '1h', '--key', 'none-1']);
    expect(refused.code).toBe(5);
    expect(refused.stderr).toMatch(/no daemon/);
  });
});
