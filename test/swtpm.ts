import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A software TPM 2.0 (swtpm's socket mode) on loopback, with its own state directory. */
export interface Swtpm {
  host: string;
  /** The command port; `swtpm:HOST:PORT` in BCD_TPM. The control port is `port + 1`. */
  port: number;
  /** What `--tpm` / `BCD_TPM` takes. */
  address: string;
  stop(): Promise<void>;
}

const running = new Set<ChildProcess>();
// A failing or timed-out test file must not leave a TPM running after its worker exits.
process.once('exit', () => running.forEach((child) => child.kill('SIGKILL')));

/** Fails loudly, never skips: the TPM tests are part of the suite, and `npm test` installs swtpm. */
function requireSwtpm(): void {
  const probe = spawnSync('swtpm', ['--version'], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0) {
    throw new Error('swtpm is not installed, and the TPM tests need it: apt-get install -y swtpm swtpm-tools');
  }
}

const isFree = (port: number) =>
  new Promise<boolean>((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });

/** Two consecutive free ports (swtpm wants the command and control ports side by side here). */
async function freePortPair(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = 20000 + 2 * Math.floor(Math.random() * 15000);
    if ((await isFree(port)) && (await isFree(port + 1))) return port;
  }
  throw new Error('no two consecutive free ports for swtpm');
}

const canConnect = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => socket.end(() => resolve(true)));
    socket.once('error', () => resolve(false));
  });

/**
 * Starts a fresh swtpm (new state: a new EK seed, empty NV) already started with TPM2_Startup(CLEAR), and
 * resolves once its command port accepts connections. `stop` ends it and removes its state.
 */
export async function startSwtpm(): Promise<Swtpm> {
  requireSwtpm();
  const state = mkdtempSync(join(tmpdir(), 'bc-swtpm-'));
  const port = await freePortPair();
  const child = spawn(
    'swtpm',
    [
      'socket',
      '--tpm2',
      '--tpmstate',
      `dir=${state}`,
      '--server',
      `type=tcp,port=${port},bindaddr=127.0.0.1`,
      '--ctrl',
      `type=tcp,port=${port + 1},bindaddr=127.0.0.1`,
      '--flags',
      'not-need-init,startup-clear',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  running.add(child);
  let stderr = '';
  child.stderr!.on('data', (chunk) => (stderr += chunk));
  const exited = new Promise<void>((resolve) => child.once('exit', () => (running.delete(child), resolve())));
  const stop = async () => {
    if (running.has(child)) child.kill('SIGTERM');
    await exited;
    rmSync(state, { recursive: true, force: true });
  };
  const deadline = Date.now() + 10_000;
  while (!(await canConnect(port))) {
    if (!running.has(child) || Date.now() > deadline) {
      await stop();
      throw new Error(`swtpm did not start on port ${port}: ${stderr.trim() || 'no output'}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { host: '127.0.0.1', port, address: `swtpm:127.0.0.1:${port}`, stop };
}
