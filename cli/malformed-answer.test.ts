import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, runCliInProcess } from '../test/cli';

/**
 * The CLI against a tiny HTTP server that answers what each test tells it to, as a server of another
 * version or a proxy in its place might: a wrong-shaped answer must end the command with a clear error
 * (exit 1, the command, the procedure and the field named, no value of the answer printed) instead of
 * printing undefined.
 */
const TENANT = 'tnt_01hx0000000000000000000000';
const POOL = 'pool_01hx000000000000000000000';
const SECRET = 'bcak_ak_01hx0000000000000000000000.NEVER-PRINT-THIS-SECRET-VALUE-0000000000';

type Answer = { status?: number; type?: string; body: string };
let answers: Record<string, Answer> = {};
const requests: string[] = [];
let server: http.Server;
let url: string;
const dir = mkdtempSync(path.join(tmpdir(), 'bc-malformed-'));

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const key = `${req.method} ${req.url?.split('?')[0]}`;
    requests.push(key);
    const answer = answers[key] ?? { status: 404, body: JSON.stringify({ code: 'NOT_FOUND', message: `No route ${key}` }) };
    res.writeHead(answer.status ?? 200, { 'content-type': answer.type ?? 'application/json' });
    res.end(answer.body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
  rmSync(dir, { recursive: true, force: true });
});

const env = () => ({ BETTER_COMPUTE_URL: url, BETTER_COMPUTE_API_KEY: 'bcak_test' });
const cli = (args: string[]) => runCliInProcess(args, env());
const json = (body: unknown, status = 200): Answer => ({ status, body: JSON.stringify(body) });
const tenant = { id: TENANT, name: 'acme', isRoot: false, createdAt: '2026-12-03T04:00:00.000Z', isMember: true, role: 'admin' };

describe('a server answer of the wrong shape', () => {
  it('prints a well-formed answer (the fake server speaks the API)', async () => {
    answers = { 'GET /api/compute/v1/tenants': json({ items: [tenant] }) };
    const run = await cli(['tenants', 'list']);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(run.stdout).toContain(TENANT);
  });

  it('names the command, the procedure and the field, exits 1 and prints nothing else', async () => {
    answers = { 'GET /api/compute/v1/tenants': json({ items: [{ ...tenant, id: 7 }] }) };
    const run = await cli(['tenants', 'list', '--json']);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(
      /^error: tenants list: the server's answer to tenants\.list does not have the shape this CLI expects \(items\[0\]\.id: Invalid input: expected string, received number\); is the server another version of Better Compute\?\n$/,
    );
  });

  it('never prints a secret the answer carries, and writes no --out file', async () => {
    // A created key whose record is wrong: the key itself must not reach the terminal or a file.
    answers = { [`POST /api/compute/v1/tenants/${TENANT}/api-keys`]: json({ key: SECRET, id: 42, role: 'admin' }) };
    const out = path.join(dir, 'admin.key');
    for (const args of [[], ['--out', out], ['--json']]) {
      const run = await cli(['api-keys', 'create', '--tenant', TENANT, '--role', 'admin', ...args]);
      expect(run.code).toBe(1);
      expect(run.stderr).toContain('error: api-keys create: the server');
      expect(run.stderr).toContain('apiKeys.create');
      expect(run.stderr).toContain('id: Invalid input: expected string, received number');
      expect(run.stdout + run.stderr).not.toContain('NEVER-PRINT');
      expect(run.stdout).toBe('');
    }
    expect(existsSync(out)).toBe(false);
  });

  it("refuses fields a strict answer must not have (a token's hash), naming the key but not its value", async () => {
    const record = {
      id: 'jt_01hx0000000000000000000000',
      poolId: POOL,
      siteId: 'site_01hx000000000000000000000',
      role: 'node',
      usesLeft: 1,
      maxUses: 1,
      expect: null,
      allowReclaim: false,
      hosted: null,
      expiresAt: '2026-12-03T05:00:00.000Z',
      createdAt: '2026-12-03T04:00:00.000Z',
      revokedAt: null,
      revokedBy: null,
      revokedByEmail: null,
      name: null,
      description: null,
      createdBy: 'api-key:ak_01hx0000000000000000000000',
      createdByEmail: null,
      lastUsedAt: null,
      labels: {},
      state: 'live',
      token: 'bcjt_jt_01hx.NEVER-PRINT-THIS-TOKEN',
      secretHash: 'c2VjcmV0LWhhc2gtbmV2ZXItcHJpbnRlZA',
    };
    answers = { [`POST /api/compute/v1/tenants/${TENANT}/pools/${POOL}/join-tokens`]: json(record) };
    const run = await cli(['join-tokens', 'create', '--tenant', TENANT, '--pool', POOL, '--ttl', '1h', '--key', 'k1']);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('join-tokens create: the server');
    expect(run.stderr).toContain('joinTokens.create');
    expect(run.stderr).toContain('(the answer: Unrecognized key: "secretHash")');
    expect(run.stdout + run.stderr).not.toContain('c2VjcmV0');
    expect(run.stdout + run.stderr).not.toContain('NEVER-PRINT');
    expect(run.stdout).toBe('');
  });

  it('names the answer itself when a 200 carries no body', async () => {
    answers = { [`GET /api/compute/v1/tenants/${TENANT}/nodes`]: { body: '' } };
    const run = await cli(['nodes', 'list', '--tenant', TENANT]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('nodes list: ');
    expect(run.stderr).toContain('nodes.list');
    expect(run.stderr).toContain('(the answer: Invalid input: expected object, received undefined)');
  });

  it('checks each event of a subscription too (join-requests watch)', async () => {
    answers = {
      'GET /api/trpc/joinRequests.onChange': {
        type: 'text/event-stream',
        body: `event: connected\ndata: {}\n\ndata: ${JSON.stringify({ siteId: 'site_1', requestIds: 'jr_1' })}\n\n`,
      },
    };
    const run = await cli(['join-requests', 'watch', '--tenant', TENANT, '--pool', POOL]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('join-requests watch: ');
    expect(run.stderr).toContain('joinRequests.onChange');
    expect(run.stderr).toContain('requestIds: Invalid input: expected array, received string');
    expect(run.stdout).toBe('');
  });

  it('does not skip a changed request whose record is malformed (join-requests watch)', async () => {
    answers = {
      'GET /api/trpc/joinRequests.onChange': {
        type: 'text/event-stream',
        body: `data: ${JSON.stringify({ siteId: 'site_1', requestIds: ['jr_1'] })}\n\n`,
      },
      [`GET /api/compute/v1/tenants/${TENANT}/pools/${POOL}/join-requests/jr_1`]: json({ id: 'jr_1', state: 'waiting' }),
    };
    const run = await cli(['join-requests', 'watch', '--tenant', TENANT, '--pool', POOL]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("join-requests watch: the server's answer to joinRequests.get does not have the shape");
    expect(run.stderr).toContain('state: Invalid option: expected one of');
    expect(run.stdout).toBe('');
  });

  it('exits the real process with 1 and the same one line', async () => {
    answers = { [`GET /api/compute/v1/tenants/${TENANT}/sites`]: json({ items: [{ id: 'site_1', name: 'x' }] }) };
    const run = await runCli(['sites', 'list', '--tenant', TENANT], env());
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(
      /^error: sites list: the server's answer to sites\.list does not have the shape this CLI expects \(items\[0\]\.tenantId: /,
    );
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
  });
});
