import { X509Certificate } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';

/** Where a gateway's credentials live: the serving chain (leaf, serving CA), its key, and the node CA. */
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

export async function readGatewayFiles(files: GatewayFiles) {
  const [servingChainPem, servingKeyPem, nodeCaPem] = await Promise.all([
    readFile(files.chain, 'utf8'),
    readFile(files.key, 'utf8'),
    readFile(files.nodeCa, 'utf8'),
  ]);
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

/** Writes the three files (the key 0600), each through a temporary file and a rename. */
export async function writeGatewayFiles(files: GatewayFiles, content: { chainPem: string; keyPem: string; nodeCaPem: string }) {
  await mkdir(path.dirname(files.chain), { recursive: true, mode: 0o700 });
  for (const [file, text, mode] of [
    [files.key, content.keyPem, 0o600],
    [files.chain, content.chainPem, 0o644],
    [files.nodeCa, content.nodeCaPem, 0o644],
  ] as const) {
    await writeFile(`${file}.tmp`, text, { mode });
    await rename(`${file}.tmp`, file);
  }
}
