import { execFile, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/**
 * Builds bcd with scripts/build-bcd.mjs into `.cache/bcd-test/<pid>` (amd64 only). build-bcd reuses its
 * content-hashed cache, so only the first run after an agent change pays for esbuild, the blob and postject.
 */
export async function buildBcdForTests(): Promise<{ dir: string; version: string; binary: string; sha256: string }> {
  const dir = path.join(ROOT, '.cache/bcd-test', String(process.pid));
  mkdirSync(dir, { recursive: true });
  await promisify(execFile)(process.execPath, ['scripts/build-bcd.mjs', '--quiet', '--no-arm64', '--out', dir], {
    cwd: ROOT,
    maxBuffer: 1 << 24,
  });
  const { version } = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string };
  const sums = readFileSync(path.join(dir, version, 'SHA256SUMS'), 'utf8');
  const sha256 = /^([0-9a-f]{64}) {2}linux-amd64$/m.exec(sums)![1]!;
  return { dir, version, binary: path.join(dir, version, 'linux-amd64'), sha256 };
}

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command with exactly `env` (no inherited environment) and `input` on standard input. */
export function run(command: string, args: string[], options: { env: NodeJS.ProcessEnv; input?: string; cwd?: string }): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env: options.env, cwd: options.cwd });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.on('error', () => {}); // a script that refuses before reading closes its stdin early
    child.stdin.end(options.input ?? '');
  });
}

/** A machine: a directory that bcd and the install script treat as `/` (BCD_ROOT), with its own DMI product UUID and serial. */
export function newMachineRoot(): string {
  const root = mkdtempSync(path.join(tmpdir(), 'bcd-root-'));
  mkdirSync(path.join(root, 'sys/class/dmi/id'), { recursive: true });
  writeFileSync(path.join(root, 'sys/class/dmi/id/product_uuid'), `${randomUUID()}\n`);
  writeFileSync(path.join(root, 'sys/class/dmi/id/product_serial'), `SN-${randomUUID().slice(0, 8)}\n`);
  return root;
}
