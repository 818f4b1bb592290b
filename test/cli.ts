import { AsyncLocalStorage } from 'node:async_hooks';
import { randomBytes } from 'node:crypto';
import { spawn } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { JoinTrust } from '../agent/join';
import type { Db } from '../server/db/client';
import { testDatabaseUrl } from './db';
import { createTestTenant, type TestTenant } from './fixtures';
import { outputOf } from './child-output';
import { serveCompute } from './serve-compute';
import { insertApiKey } from '../server/api-keys/api-keys';
import { createServices } from '../server/boot/services';
import { DEFAULT_NEW_REQUEST_LIMITS } from '../server/join/request-admission';
import { normalizedPath } from '../server/boot/http-server';
import { createAgentEndpoints } from '../server/entry/agent-endpoints';
import { hasPki, initPki } from '../server/pki/bundle/store';
import { ensureRootTenant } from '../server/tenants/tenants';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

export interface ApiServer {
  url: string;
  /** `METHOD /path?query` of every request served, in order: lets a test prove the CLI called nothing. */
  requests: string[];
  close: () => Promise<void>;
}

/**
 * The REST API and agent endpoints served in-process: the agent endpoints' own handler (as the boot server
 * mounts it, with services from the composition root) and, for every other path, the function the app's
 * compute route calls.
 */
export async function startApiServer(db: Db): Promise<ApiServer> {
  const requests: string[] = [];
  // New-join-request windows of its own: every test's machines join from 127.0.0.1 into the one database.
  const requestLimits = { ...DEFAULT_NEW_REQUEST_LIMITS, keyPrefix: `test-${randomBytes(4).toString('hex')}-requests` };
  const services = createServices({ databaseUrl: testDatabaseUrl(), db, requestLimits });
  const agent = createAgentEndpoints(services);
  const server = http.createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    if (agent(req, res, normalizedPath(req.url) ?? '')) return;
    void serveCompute(db, req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: async () => {
      await new Promise<void>((r) => server.close(() => r()));
      await services.close();
    },
  };
}

/** The secret of the one PKI the CLI test files share in the test database; random, as the secret rule demands. */
export const CLI_SECRET = 'cli-test-BTnO8SPfCgC-VYKWIk2JfVeW4vs1pyEn0mK4PuOB6Gc';

interface CliApi {
  api: ApiServer;
  /** A tenant of the file's own ({@link createTestTenant}). */
  t: TestTenant;
  /** The CLI's environment to call `api` as the tenant: its URL and an API key of the tenant. */
  env: { BETTER_COMPUTE_URL: string; BETTER_COMPUTE_API_KEY: string };
}

/**
 * The setup the CLI test files share: the in-process API server on `db`, a new tenant (`label` prefixes its
 * names) and an API key of it with `role`. With `sharedPki`, first what the join commands need: DATABASE_URL
 * and BETTER_COMPUTE_SECRET set (the in-process server's services read them like the real server's), the root
 * tenant, and the shared PKI ({@link CLI_SECRET}), made by whichever file gets there first. The caller closes
 * `api`.
 */
export async function startCliApi(
  db: Db,
  options: { label?: string; role?: 'admin' | 'operator'; sharedPki?: boolean } = {},
): Promise<CliApi> {
  if (options.sharedPki) {
    process.env.DATABASE_URL = testDatabaseUrl();
    process.env.BETTER_COMPUTE_SECRET = CLI_SECRET;
    await ensureRootTenant(db);
    if (!(await hasPki(db))) await initPki(db, { trustDomain: 'cli.example.com', secret: CLI_SECRET }).catch(() => {});
  }
  const api = await startApiServer(db);
  const t = await createTestTenant(db, { label: options.label });
  const { key } = await insertApiKey(db, { tenantId: t.tenantId, role: options.role ?? 'admin', name: 'cli' }, 'test');
  return { api, t, env: { BETTER_COMPUTE_URL: api.url, BETTER_COMPUTE_API_KEY: key } };
}

/** The agent's trust in the server at `url`, from its well-known document (as bcd resolves it on first use). */
export async function trustOf(url: string): Promise<JoinTrust> {
  const doc = (await (await fetch(`${url}/api/compute/.well-known/better-compute`)).json()) as {
    join: { encryptionJwk: JoinTrust['encryptionJwk']; signingCertificate: string; signingKeyPin: string };
  };
  return {
    encryptionJwk: doc.join.encryptionJwk,
    signingCertificateDer: Buffer.from(doc.join.signingCertificate, 'base64'),
    signingKeyPin: doc.join.signingKeyPin,
  };
}

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs the real CLI (bin/better-compute.mjs) as a child process. DATABASE_URL points at the test database
 * (only `--local` commands read it); `env` adds to or, with `undefined`, removes from the environment.
 */
export async function runCli(args: string[], env: Record<string, string | undefined> = {}): Promise<CliRun> {
  const child = spawn(process.execPath, ['bin/better-compute.mjs', ...args], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: testDatabaseUrl(), NODE_NO_WARNINGS: '1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return outputOf(child);
}

type Captured = { stdout: string; stderr: string };
const capturing = new AsyncLocalStorage<Captured>();

/** Thrown in place of process.exit by a command that runs in process (`agent run`, `agent doctor`). */
class ExitCalled extends Error {
  constructor(readonly code: number) {
    super(`process.exit(${code})`);
  }
}

let patched = false;
/**
 * Routes process.stdout/stderr writes and process.exit to the CLI run whose async context makes them; writes
 * from anything else in this process (the in-process API server's log, vitest) pass through unchanged.
 */
function patchProcessOnce() {
  if (patched) return;
  patched = true;
  for (const name of ['stdout', 'stderr'] as const) {
    const stream = process[name];
    const write = stream.write.bind(stream);
    stream.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
      const captured = capturing.getStore();
      if (!captured) return (write as (...args: unknown[]) => boolean)(chunk, ...rest);
      captured[name] += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString();
      const done = rest.find((arg) => typeof arg === 'function') as (() => void) | undefined;
      done?.();
      return true;
    }) as typeof stream.write;
  }
  const exit = process.exit.bind(process);
  process.exit = ((code?: number) => {
    if (capturing.getStore()) throw new ExitCalled(code ?? 0);
    return exit(code);
  }) as typeof process.exit;
}

/**
 * Runs the CLI in this process: the same program and error handler as bin/better-compute.mjs
 * (cli/program.ts), without a second of Node and tsx start-up per call. Output and the exit code are what
 * the spawned CLI would give; use {@link runCli} where the process itself is what is tested (exit status,
 * output through a pipe). `env` is applied to process.env for the run and restored after it, so runs must
 * not overlap (vitest runs a file's tests one at a time).
 */
export async function runCliInProcess(args: string[], env: Record<string, string | undefined> = {}): Promise<CliRun> {
  patchProcessOnce();
  const { runProgram } = await import('../cli/program');
  const applied: Record<string, string | undefined> = { DATABASE_URL: testDatabaseUrl(), ...env };
  const saved = Object.fromEntries(Object.keys(applied).map((key) => [key, process.env[key]]));
  const set = (values: Record<string, string | undefined>) => {
    for (const [key, value] of Object.entries(values)) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
  };
  set(applied);
  const captured: Captured = { stdout: '', stderr: '' };
  try {
    const code = await capturing.run(captured, () =>
      runProgram(['node', 'better-compute', ...args]).catch((error: unknown) => {
        if (error instanceof ExitCalled) return error.code;
        throw error;
      }),
    );
    return { code, ...captured };
  } finally {
    set(saved);
  }
}
