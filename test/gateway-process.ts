import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureDevGatewayCredentials, startGatewayProcess } from '../server/boot/dev-gateway';
import { gatewayFilesIn, writeGatewayFiles } from '../server/gateway/files';
import type { Db } from '../server/db/client';

/** Whether `port` can be listened on, on every address (as the gateway listens), right now. */
const isFree = (port: number) =>
  new Promise<boolean>((resolve) => {
    const probe = net.createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, '0.0.0.0', () => probe.close(() => resolve(true)));
  });

/**
 * A free TCP port for a gateway whose URL the server must publish before the gateway starts. It is held by
 * nobody until the gateway listens, seconds later: a port the kernel hands out (`listen(0)`, outgoing
 * connections) comes from the ephemeral range, where any other test's server could take it meanwhile, so these
 * are drawn below it (Linux's range starts at 32768), at random, each checked free.
 */
export async function reservePort(): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    if (await isFree(port)) return port;
  }
}

async function waitForPort(port: number, timeoutMs = 60_000) {
  for (const start = Date.now(); Date.now() - start < timeoutMs; await new Promise((r) => setTimeout(r, 200))) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, '127.0.0.1', () => {
        socket.destroy();
        resolve(true);
      });
      socket.on('error', () => resolve(false));
    });
    if (open) return;
  }
  throw new Error(`the gateway did not listen on ${port} within ${timeoutMs / 1000} s`);
}

/**
 * The gateway as `npm start` runs it (server/boot/dev-gateway.ts): its own process, with a serving certificate
 * for localhost and 127.0.0.1 that the main process issued from the PKI in `db`, relaying to `apiUrl`.
 * Resolves once it accepts connections on `port`; `url` is https://127.0.0.1:<port>.
 */
export async function startTestGateway(options: {
  db: Db;
  secret: string;
  port: number;
  apiUrl: string;
}): Promise<{ url: string; stop(): Promise<void> }> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'bc-gateway-'));
  const dir = await ensureDevGatewayCredentials(options.db, options.secret, dataDir);
  const stop = startGatewayProcess({ dir, port: options.port, apiUrl: options.apiUrl, say: () => {} });
  await waitForPort(options.port);
  return {
    url: `https://127.0.0.1:${options.port}`,
    async stop() {
      await stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

const PROJECT_ROOT = fileURLToPath(new URL('..', import.meta.url));

/** A gateway process started by {@link spawnGateway}: its URL and port, and each line it wrote to stdout. */
export interface SpawnedGateway {
  url: string;
  port: number;
  /** Its credentials directory (removed by `stop`). */
  dir: string;
  /** Its stdout, a line each: the call log (`{"gateway":"call",…}`) and the start line. */
  lines: string[];
  /** SIGTERM (or `signal`: SIGKILL for a gateway that dies without a word), and waits for the exit. */
  stop(signal?: NodeJS.Signals): Promise<void>;
}

/**
 * The gateway process itself (server/gateway/main.ts, as `npm start` and `better-compute gateway` run it) with
 * the given credentials, relaying to `apiUrl`, with `env` added (its limits, for instance). Resolves once it
 * printed that it listens; its stdout stays readable in `lines` for the call log.
 */
export async function spawnGateway(options: {
  credentials: { chainPem: string; keyPem: string; nodeCaPem: string };
  apiUrl: string;
  env?: Record<string, string>;
  /**
   * A port reserved beforehand ({@link reservePort}): for a gateway whose URL the server publishes, or one started
   * again where its agents already point; else a free one.
   */
  port?: number;
  /** A network namespace (`ip netns`) to run it in: `port` is then a port of that namespace. */
  netns?: string;
}): Promise<SpawnedGateway> {
  const dir = mkdtempSync(path.join(tmpdir(), 'bc-gateway-'));
  await writeGatewayFiles(gatewayFilesIn(dir), options.credentials);
  const port = options.port ?? (await reservePort());
  const gatewayArgs = ['--import', 'tsx', path.join(PROJECT_ROOT, 'server/gateway/main.ts')];
  // `ip netns exec` execs the command in place, so the child is the gateway itself (its signals reach it).
  const [command, args]: [string, string[]] = options.netns
    ? ['ip', ['netns', 'exec', options.netns, process.execPath, ...gatewayArgs]]
    : [process.execPath, gatewayArgs];
  const child = spawn(command, args, {
    cwd: PROJECT_ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      ...options.env,
      BETTER_COMPUTE_GATEWAY_DIR: dir,
      BETTER_COMPUTE_GATEWAY_PORT: String(port),
      BETTER_COMPUTE_GATEWAY_API_URL: options.apiUrl,
    },
  });
  const lines: string[] = [];
  let stderr = '';
  let partial = '';
  const listening = new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      const parts = (partial + chunk.toString('utf8')).split('\n');
      partial = parts.pop()!;
      for (const line of parts) {
        lines.push(line);
        if (line.startsWith('Gateway listening')) resolve();
      }
    });
    child.stderr!.on('data', (chunk: Buffer) => void (stderr += chunk.toString('utf8')));
    child.once('exit', (code) => reject(new Error(`the gateway exited (${code}) before it listened: ${stderr}`)));
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  try {
    await listening;
  } finally {
    clearTimeout(timer);
  }
  return {
    url: `https://127.0.0.1:${port}`,
    port,
    dir,
    lines,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) {
        await new Promise<void>((resolve) => {
          child.once('exit', () => resolve());
          child.kill(signal);
        });
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
