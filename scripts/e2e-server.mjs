// The server scripts/e2e.mjs tests: `.build/server/main.mjs` (what `npm start` runs) in a process group of its
// own, started on a fresh data directory and stopped with whatever it leaves behind. Only Node built-ins.
import { spawn } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { log, relay, secrets } from './e2e-output.mjs';

const STARTUP_TIMEOUT_MS = Number(process.env.E2E_STARTUP_TIMEOUT_MS || 180_000);
const STOP_TIMEOUT_MS = 30_000;
const RUNNING_LINE = /^Better Compute is running: console at (http:\/\/\S+)/;
const PASSWORD_LINE = /^Sign in as (\S+) with the one-time password: (\S+)\s*$/;

export async function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/**
 * Starts the server. `child` and `exited` (which resolves with its exit code) are there at once, for stopping it
 * on any path out; `ready` resolves with its URL and first admin once both lines have been printed.
 */
export function startServer({ env, port, dataDir }) {
  const child = spawn(process.execPath, ['.build/server/main.mjs'], {
    env: {
      ...env,
      PORT: String(port),
      BETTER_COMPUTE_DATA_DIR: dataDir,
      BETTER_COMPUTE_DOWNLOADS_DIR: path.join(dataDir, 'downloads'),
      BETTER_COMPUTE_WORKERS: process.env.BETTER_COMPUTE_WORKERS ?? '2',
      NEXTAUTH_URL: `http://localhost:${port}`,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    // Its own process group, so a server that ignores SIGTERM can be killed with its PostgreSQL.
    detached: true,
  });
  const exited = new Promise((done) => child.once('exit', (code, signal) => done(code ?? signal)));
  const ready = new Promise((resolve, reject) => {
    let url;
    let admin;
    const timer = setTimeout(() => reject(new Error(`The server did not start within ${STARTUP_TIMEOUT_MS / 1000}s`)), STARTUP_TIMEOUT_MS);
    const check = () => {
      if (url && admin) {
        clearTimeout(timer);
        resolve({ url, admin });
      }
    };
    relay(child.stdout, process.stdout, '[server] ', (line) => {
      const password = PASSWORD_LINE.exec(line);
      if (password) {
        secrets.add(password[2]);
        admin = { email: password[1], password: password[2] };
      }
      const running = RUNNING_LINE.exec(line);
      if (running) url = running[1].replace(/\/$/, '');
      if (url && !admin && /^Sign in with your operator account/.test(line)) {
        reject(new Error('The server printed no one-time password; is the data directory really fresh?'));
      }
      check();
    });
    relay(child.stderr, process.stderr, '[server] ');
    child.once('error', (error) => reject(error));
    void exited.then((code) => reject(new Error(`The server exited (${code}) before it was ready`)));
  });
  return { child, exited, ready };
}

const groupAlive = (pgid) => {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
};

/**
 * A server stopped while its PostgreSQL was still starting can exit before it could stop it. Whatever is
 * left in the server's process group (which this script created) gets SIGTERM, then SIGKILL. Resolves with
 * whether anything was left behind.
 */
async function stopStragglers(pgid) {
  // Give a PostgreSQL that is finishing its shutdown a moment before calling it left behind.
  for (let waited = 0; waited < 3_000 && pgid && groupAlive(pgid); waited += 100) await new Promise((r) => setTimeout(r, 100));
  if (!pgid || !groupAlive(pgid)) return false;
  log('Stopping processes the server left behind…');
  process.kill(-pgid, 'SIGTERM');
  for (let waited = 0; waited < 10_000 && groupAlive(pgid); waited += 200) await new Promise((r) => setTimeout(r, 200));
  if (groupAlive(pgid)) process.kill(-pgid, 'SIGKILL');
  return true;
}

/**
 * Stops a started server (SIGTERM, then SIGKILL to its whole process group) and what it left in that group.
 * Resolves with whether anything was left behind after it exited.
 */
export async function stopServer({ child, exited }) {
  if (child.exitCode === null && child.signalCode === null) {
    log('Stopping the server…');
    child.kill('SIGTERM');
    const stopped = await Promise.race([exited, new Promise((resolve) => setTimeout(() => resolve('timeout'), STOP_TIMEOUT_MS))]);
    if (stopped === 'timeout') {
      log(`The server did not stop within ${STOP_TIMEOUT_MS / 1000}s; killing it and its PostgreSQL.`);
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
      await exited;
    }
  }
  return stopStragglers(child.pid);
}
