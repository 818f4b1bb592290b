import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JOIN_REFUSED } from '../protocol/join-wire';
import { newServerSecret } from '../test/server-process';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
// Next's development server compiles each route on its first request; on a busy 2-core machine that is slow.
const STARTUP_MS = 240_000;

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** The environment of an operator's shell: without what vitest sets for its own workers (NODE_ENV=test, VITEST…). */
function operatorEnv(): Record<string, string | undefined> {
  return Object.fromEntries(Object.entries(process.env).filter(([name]) => name !== 'NODE_ENV' && !name.startsWith('VITEST')));
}

/**
 * `npm run dev` as an operator runs it (scripts/dev.mjs): on its embedded PostgreSQL in a data directory of its
 * own, without the gateway.
 */
describe('npm run dev', () => {
  let child: ChildProcess;
  let dataDir: string;
  let base: string;
  const output: string[] = [];

  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(tmpdir(), 'bc-dev-'));
    // As root, the embedded PostgreSQL runs as `postgres`, which must be able to enter the data directory.
    chmodSync(dataDir, 0o755);
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    const env: Record<string, string | undefined> = {
      ...operatorEnv(),
      DATABASE_URL: '',
      BETTER_COMPUTE_SECRET: newServerSecret(),
      BETTER_COMPUTE_DATA_DIR: dataDir,
      BETTER_COMPUTE_GATEWAY_PORT: '0',
      PORT: String(port),
      NODE_NO_WARNINGS: '1',
    };
    child = spawn(process.execPath, ['scripts/dev.mjs'], {
      cwd: ROOT,
      env: env as NodeJS.ProcessEnv,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    createInterface({ input: child.stderr! }).on('line', (line) => output.push(line));
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`npm run dev did not start:\n${output.join('\n')}`)), STARTUP_MS);
      createInterface({ input: child.stdout! }).on('line', (line) => {
        output.push(line);
        if (/Better Compute is running \(development server/.test(line)) {
          clearTimeout(timer);
          resolve();
        }
      });
      child.once('exit', (code) => reject(new Error(`npm run dev exited (${code}):\n${output.join('\n')}`)));
    });
  }, STARTUP_MS + 30_000);

  afterAll(async () => {
    if (child && child.exitCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  }, 60_000);

  it(
    'answers the well-known document through the Next route',
    async () => {
      const res = await fetch(`${base}/api/compute/.well-known/better-compute`);
      expect(res.status).toBe(200);
      const doc = (await res.json()) as Record<string, unknown>;
      // The first start bootstrapped the PKI on this database, so the join section is there.
      expect(doc).toMatchObject({ name: 'better-compute', basePath: '/api/compute' });
      expect(doc).toHaveProperty('join');
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    },
    STARTUP_MS,
  );

  it(
    'serves tRPC: an unauthenticated call is refused in the error model',
    async () => {
      const res = await fetch(`${base}/api/trpc/tenants.list`);
      expect(res.status).toBe(401);
      expect(JSON.stringify(await res.json())).toContain('UNAUTHORIZED');
    },
    STARTUP_MS,
  );

  it('serves the agent join on the fast path, with the uniform refusal', async () => {
    const res = await fetch(`${base}/api/compute/v1/join`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(res.status).toBe(JOIN_REFUSED.status);
    expect(Buffer.from(await res.arrayBuffer())).toEqual(Buffer.from(JOIN_REFUSED.body));
  }, 60_000);

  it('stops on SIGTERM, leaving nothing running', async () => {
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    expect(await exited, output.join('\n')).toBe(0);
    // The embedded PostgreSQL was stopped with the server, not left running on the data directory.
    expect(existsSync(path.join(dataDir, 'postgres', 'postmaster.pid'))).toBe(false);
  }, 60_000);
});
