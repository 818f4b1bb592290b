import { createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import { link, readFile, rename, unlink } from 'node:fs/promises';
import path from 'node:path';
import { IDENTITY_FILE, identityRecordText, NODE_KEY_FILE, syncDirectory, writeTemporary, type NodeIdentity } from '../identity-store';

/** A stored identity, parsed and checked: the key matches the leaf. */
export interface LoadedIdentity {
  readonly identity: NodeIdentity;
  readonly privateKey: KeyObject;
  readonly leaf: X509Certificate;
  readonly nodeCa: X509Certificate;
  readonly notBefore: Date;
  readonly notAfter: Date;
  readonly spiffeId: string;
}

/** The suffix of the files a renewal replaced, kept until the next renewal. */
export const PREVIOUS_SUFFIX = '.previous';

export class IdentityLoadError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'IdentityLoadError';
  }
}

async function readPair(keyFile: string, identityFile: string): Promise<LoadedIdentity> {
  const [keyPem, recordText] = await Promise.all([readFile(keyFile, 'utf8'), readFile(identityFile, 'utf8')]);
  return parseIdentity(keyPem, JSON.parse(recordText), { keyFile, identityFile });
}

/** Checks an identity held in memory (a key PEM and the identity record) as {@link loadIdentity} does. */
export function parseIdentity(
  keyPem: string,
  record: { nodeId?: unknown; siteId?: unknown; trustDomain?: unknown; role?: unknown; certificateChain?: unknown },
  names = { keyFile: 'the key', identityFile: 'the identity' },
): LoadedIdentity {
  const { keyFile, identityFile } = names;
  const chain = record.certificateChain;
  if (!Array.isArray(chain) || chain.length < 2 || !chain.every((c) => typeof c === 'string')) {
    throw new IdentityLoadError(`${identityFile} holds no certificate chain`);
  }
  for (const field of ['nodeId', 'siteId', 'trustDomain', 'role'] as const) {
    if (typeof record[field] !== 'string') throw new IdentityLoadError(`${identityFile} has no ${field}`);
  }
  const privateKey = createPrivateKey(keyPem);
  const leaf = new X509Certificate(Buffer.from(chain[0] as string, 'base64'));
  const nodeCa = new X509Certificate(Buffer.from(chain[chain.length - 1] as string, 'base64'));
  if (!leaf.checkPrivateKey(privateKey)) throw new IdentityLoadError(`${keyFile} is not the key of the certificate in ${identityFile}`);
  const identity: NodeIdentity = {
    privateKeyPem: keyPem,
    certificateChain: chain as string[],
    nodeId: record.nodeId as string,
    siteId: record.siteId as string,
    trustDomain: record.trustDomain as string,
    role: record.role as string,
  };
  return {
    identity,
    privateKey,
    leaf,
    nodeCa,
    notBefore: new Date(leaf.validFrom),
    notAfter: new Date(leaf.validTo),
    spiffeId: `spiffe://${identity.trustDomain}/site/${identity.siteId}/node/${identity.nodeId}`,
  };
}

/**
 * Loads the identity in `dir`. A crash between the two renames of {@link replaceIdentity} can leave a key
 * beside the other generation's certificate; the matching pair among the current and `.previous` files wins.
 *
 * @throws IdentityLoadError (or a file system error) when no consistent identity is there.
 */
export async function loadIdentity(dir: string): Promise<LoadedIdentity> {
  const key = path.join(dir, NODE_KEY_FILE);
  const record = path.join(dir, IDENTITY_FILE);
  const pairs: Array<[string, string]> = [
    [key, record],
    [key, record + PREVIOUS_SUFFIX],
    [key + PREVIOUS_SUFFIX, record],
  ];
  let first: unknown;
  for (const [keyFile, identityFile] of pairs) {
    try {
      return await readPair(keyFile, identityFile);
    } catch (error) {
      first ??= error;
    }
  }
  throw first;
}

/** Hard-links `file` to `file.previous` (replacing an older one); a missing file is skipped. */
async function keepPrevious(file: string): Promise<void> {
  await unlink(file + PREVIOUS_SUFFIX).catch(() => {});
  await link(file, file + PREVIOUS_SUFFIX).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== 'ENOENT') throw error;
  });
}

/**
 * Installs a renewed identity, which the caller has already verified: both files are written to flushed
 * temporaries, the current ones are kept as `.previous`, then each temporary is renamed over its file and the
 * directory is flushed. Until the renames the old identity stays in place untouched.
 */
export async function replaceIdentity(dir: string, identity: NodeIdentity): Promise<void> {
  const keyFile = path.join(dir, NODE_KEY_FILE);
  const identityFile = path.join(dir, IDENTITY_FILE);
  const temporaryKey = await writeTemporary(keyFile, identity.privateKeyPem);
  const temporaryIdentity = await writeTemporary(identityFile, identityRecordText(identity));
  try {
    await keepPrevious(keyFile);
    await keepPrevious(identityFile);
    await syncDirectory(dir);
    await rename(temporaryKey, keyFile);
    await rename(temporaryIdentity, identityFile);
    await syncDirectory(dir);
  } finally {
    await unlink(temporaryKey).catch(() => {});
    await unlink(temporaryIdentity).catch(() => {});
  }
}
