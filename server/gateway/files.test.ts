import { mkdtemp, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createPkiBundle } from '../pki/bundle/bundle';
import { issueGatewayCertificate } from '../pki/issuance/gateway';
import { gatewayFilesIn, readGatewayFiles, writeGatewayFiles } from './files';
import { voucherFromServingChain } from './gateway';

// A gateway rewrites its credentials while it runs (a rotation): a restart after a crash at any point of that
// write must find a chain and a key that belong together.

const bundle = createPkiBundle({ trustDomain: 'files.example.com' });
const pair = () => {
  const cert = issueGatewayCertificate(bundle, { sans: ['localhost'] });
  return { chainPem: cert.chainPem, keyPem: cert.privateKeyPem, nodeCaPem: bundle.nodeCa.certificatePem };
};

const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});
async function filesIn() {
  const dir = await mkdtemp(path.join(tmpdir(), 'bc-gw-files-'));
  dirs.push(dir);
  return { dir, files: gatewayFilesIn(dir) };
}

describe('writeGatewayFiles and readGatewayFiles', () => {
  it('replace all three files, the key 0600, leaving nothing behind', async () => {
    const { dir, files } = await filesIn();
    await writeGatewayFiles(files, pair());
    const next = pair();
    await writeGatewayFiles(files, next);
    const stored = await readGatewayFiles(files);
    expect(stored).toEqual({ servingChainPem: next.chainPem, servingKeyPem: next.keyPem, nodeCaPem: next.nodeCaPem });
    expect((await stat(files.key)).mode & 0o777).toBe(0o600);
    expect((await readdir(dir)).sort()).toEqual(['chain.pem', 'key.pem', 'node-ca.pem']);
  });

  /** A pair written, then the next pair's files written beside it but not yet renamed (a write cut short). */
  async function interruptedWrite(files: Awaited<ReturnType<typeof filesIn>>['files']) {
    const first = pair();
    await writeGatewayFiles(files, first);
    const next = pair();
    await writeFile(`${files.chain}.next`, next.chainPem);
    await writeFile(`${files.key}.next`, next.keyPem, { mode: 0o600 });
    return { first, next };
  }

  it('a crash between the key and the chain renames: the read finishes the write', async () => {
    const { files } = await filesIn();
    const { next } = await interruptedWrite(files);
    // What a write leaves when the process dies right after renaming the key.
    await rename(`${files.key}.next`, files.key);
    const stored = await readGatewayFiles(files);
    expect(stored.servingChainPem).toBe(next.chainPem);
    expect(() => voucherFromServingChain(stored.servingChainPem, stored.servingKeyPem)).not.toThrow();
    // And the files on disk agree with what was read.
    expect(await readGatewayFiles(files)).toEqual(stored);
  });

  it('a crash before the key was renamed: the previous pair, untouched', async () => {
    const { files } = await filesIn();
    const { first } = await interruptedWrite(files);
    const stored = await readGatewayFiles(files);
    expect(stored.servingChainPem).toBe(first.chainPem);
    expect(() => voucherFromServingChain(stored.servingChainPem, stored.servingKeyPem)).not.toThrow();
  });
});
