import { AsyncLocalStorage } from 'node:async_hooks';
import { spawn } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { Db } from '../server/db/client';
import { testDatabaseUrl } from './db';
import { serveCompute } from './serve-compute';
import { createServices } from '../server/boot/services';
import { normalizedPath } from '../server/boot/http-server';
import { createAgentEndpoints } from '../server/http/agent-endpoints';

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
  const services = createServices({ databaseUrl: testDatabaseUrl(), db });
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

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs the real CLI (bin/better-compute.mjs) as a child process. DATABASE_URL points at the test database
 * (only `--local` commands read it); `env` adds to or, with `undefined`, removes from the environment.
 */
export function runCli(args: string[], env: Record<string, string | undefined> = {}): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['bin/better-compute.mjs', ...args], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: testDatabaseUrl(), NODE_NO_WARNINGS: '1', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
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
