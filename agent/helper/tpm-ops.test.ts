import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeKeyTemplate } from '../tpm/templates';
import { nodeKeyHelper } from './client';
import { startHelperServer } from './server';
import { HelperRefusal, noTpmRefusal, tpmHelperOps } from './tpm-ops';

// bcd helper on a host without a TPM (none named, no /dev/tpmrm0): bcd-helper.service keeps running, so the host
// still gets its bcd.service, and every TPM request is refused with the reason; a named TPM is still opened.
const nodeKey = { publicArea: nodeKeyTemplate(), privateBlob: randomBytes(64) };
const renewPop = Buffer.from(`renew-pop\n${'ab'.repeat(32)}\nnode_01abc\n1700000000`);
const NO_TPM = /^this host has no TPM \(\/dev\/tpmrm0 does not exist\)/;

let dir: string;
let server: Server;
const logged: string[] = [];

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'bcd-helper-no-tpm-'));
  chmodSync(dir, 0o755);
  const owner = { uid: process.getuid!(), gid: process.getgid!() };
  const ops = tpmHelperOps(undefined, () => false);
  server = await startHelperServer({ socketPath: path.join(dir, 'run/helper.sock'), owner, ops, log: (line) => logged.push(line) });
});
afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
  rmSync(dir, { recursive: true, force: true });
});

describe('bcd helper without a TPM', () => {
  it('refuses signing and a next key with the reason, logs it, and keeps serving', async () => {
    const helper = nodeKeyHelper(path.join(dir, 'run/helper.sock'));
    await expect(helper.sign(nodeKey, 'renew-pop', renewPop)).rejects.toThrow(/refused: this host has no TPM \(\/dev\/tpmrm0/);
    await expect(helper.nextKey({ ak: null, akStatement: null })).rejects.toThrow(/refused: this host has no TPM/);
    expect(logged.filter((line) => line.includes('refused a request: this host has no TPM'))).toHaveLength(2);
    expect(server.listening).toBe(true);
  });

  it('is decided by the default device alone: a named TPM is opened (and fails as any TPM that does not open)', async () => {
    await expect(tpmHelperOps(undefined, () => false).sign(nodeKey, renewPop)).rejects.toThrow(HelperRefusal);
    expect(noTpmRefusal(undefined, () => false)).toMatch(NO_TPM);
    expect(noTpmRefusal(undefined, () => true)).toBeNull();
    expect(noTpmRefusal('swtpm:127.0.0.1:1', () => false)).toBeNull();
    const named = tpmHelperOps('swtpm:127.0.0.1:1', () => false).sign(nodeKey, renewPop);
    await expect(named).rejects.toThrow(/cannot open the TPM at swtpm:127\.0\.0\.1:1/);
    await expect(named).rejects.not.toThrow(HelperRefusal);
  });
});
