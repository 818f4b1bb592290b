import { createPrivateKey, X509Certificate } from 'node:crypto';
import { mkdir, open, readFile, rename } from 'node:fs/promises';
import path from 'node:path';

/** Where a gateway's credentials live: the serving chain (leaf, serving CA), its key, and the node CAs. */
interface GatewayFiles {
  chain: string;
  key: string;
  nodeCa: string;
}

export const gatewayFilesIn = (dir: string): GatewayFiles => ({
  chain: path.join(dir, 'chain.pem'),
  key: path.join(dir, 'key.pem'),
  nodeCa: path.join(dir, 'node-ca.pem'),
});

/** The name a file is written under before its rename. */
const pending = (file: string) => `${file}.next`;

const keyMatches = (chainPem: string, keyPem: string) => {
  try {
    return new X509Certificate(chainPem).checkPrivateKey(createPrivateKey(keyPem));
  } catch {
    return false;
  }
};

/**
 * Reads the three files. A write that stopped between renaming the key and the chain (writeGatewayFiles) left
 * the new key beside the old chain and the new chain under its pending name: that rename is finished here, so a
 * restart serves the pair that was being written.
 */
export async function readGatewayFiles(files: GatewayFiles) {
  const [servingChainPem, servingKeyPem, nodeCaPem] = await Promise.all([
    readFile(files.chain, 'utf8'),
    readFile(files.key, 'utf8'),
    readFile(files.nodeCa, 'utf8'),
  ]);
  if (!keyMatches(servingChainPem, servingKeyPem)) {
    const next = await readFile(pending(files.chain), 'utf8').catch(() => null);
    if (next && keyMatches(next, servingKeyPem)) {
      await rename(pending(files.chain), files.chain);
      return { servingChainPem: next, servingKeyPem, nodeCaPem };
    }
  }
  return { servingChainPem, servingKeyPem, nodeCaPem };
}

/** True when the stored chain is valid for at least a day and was issued by `servingCaPem`. */
export async function gatewayFilesCurrent(files: GatewayFiles, servingCaPem: string): Promise<boolean> {
  try {
    const { servingChainPem } = await readGatewayFiles(files);
    const leaf = new X509Certificate(servingChainPem);
    const ca = new X509Certificate(servingCaPem);
    return leaf.verify(ca.publicKey) && Date.parse(leaf.validTo) > Date.now() + 86_400_000;
  } catch {
    return false;
  }
}

async function writeSynced(file: string, text: string, mode: number) {
  const handle = await open(file, 'w', mode);
  try {
    await handle.writeFile(text);
    await handle.chmod(mode);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * Writes the three files (the key 0600) so that a reader, or a restart after a crash at any point, finds a
 * chain and a key that belong together: each is written and synced under a pending name first, then renamed,
 * the node CAs first, then the key, then the chain (readGatewayFiles finishes a rename the crash cut short).
 */
export async function writeGatewayFiles(files: GatewayFiles, content: { chainPem: string; keyPem: string; nodeCaPem: string }) {
  const dir = path.dirname(files.chain);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const order = [
    [files.nodeCa, content.nodeCaPem, 0o644],
    [files.key, content.keyPem, 0o600],
    [files.chain, content.chainPem, 0o644],
  ] as const;
  for (const [file, text, mode] of order) await writeSynced(pending(file), text, mode);
  for (const [file] of order) await rename(pending(file), file);
  // The renames themselves reach the disk with the directory.
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
