import { spawn } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { Db } from '../server/db/client';
import { testDatabaseUrl } from './db';
import { serveCompute } from './serve-compute';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

export interface ApiServer {
  url: string;
  /** `METHOD /path?query` of every request served, in order: lets a test prove the CLI called nothing. */
  requests: string[];
  close: () => Promise<void>;
}

/** The REST API and agent endpoints served in-process from the same function the app uses. */
export async function startApiServer(db: Db): Promise<ApiServer> {
  const requests: string[] = [];
  const server = http.createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    void serveCompute(db, req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, requests, close: () => new Promise((r) => server.close(() => r())) };
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
