import { createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import { link, readFile, rename, unlink } from 'node:fs/promises';
import path from 'node:path';
import {
  AK_KEY_FILE,
  IDENTITY_FILE,
  identityRecordText,
  NODE_KEY_FILE,
  syncDirectory,
  writeTemporary,
  type NodeIdentity,
} from '../identity-store';
import { readLeafNames } from '../../protocol/certificate-names';
import { decodeKeyBlob, type TpmKeyBlob } from '../tpm/keys';
import { p256SpkiOf } from '../tpm/public-area';
import type { NodeKeyHelper } from '../helper/client';
import { agentErrorClass } from '../errors';

/** A node key held in a TPM: its blob (what `node.key` holds), the AK the leaf names, and where the TPM is. */
export interface TpmHeldKey {
  readonly nodeKey: TpmKeyBlob;
  /** The AK's blob, when the identity directory holds one ({@link AK_KEY_FILE}). */
  readonly ak: TpmKeyBlob | null;
  /** The leaf's `urn:bc:tpm-ak:` statement, or null when the join did not certify the key. */
  readonly akStatement: string | null;
  /** `--tpm` / `BCD_TPM`: a device path or `swtpm:HOST:PORT`; /dev/tpmrm0 when absent. */
  readonly address?: string;
  /** Under `[helper]`: `bcd helper`, which holds the TPM, signs and makes keys instead (agent/helper). */
  readonly helper?: NodeKeyHelper;
}

/** `node.key`'s text is a TPM key blob rather than a PKCS#8 key. */
export const isTpmKeyText = (text: string) => text.startsWith('bcd-tpm-key v1\n');

/** A stored identity, parsed and checked: the key matches the leaf. */
export interface LoadedIdentity {
  readonly identity: NodeIdentity;
  readonly privateKey: KeyObject;
  readonly tpm?: undefined;
  readonly leaf: X509Certificate;
  readonly nodeCa: X509Certificate;
  readonly notBefore: Date;
  readonly notAfter: Date;
  readonly spiffeId: string;
}

/**
 * A stored identity whose node key the TPM holds: `identity.privateKeyPem` is `node.key`'s text (the key blob),
 * so storing a renewed one is the same as for a software key.
 */
export interface TpmLoadedIdentity extends Omit<LoadedIdentity, 'privateKey' | 'tpm'> {
  readonly privateKey: null;
  readonly tpm: TpmHeldKey;
}

/** Either kind of identity: what `bcd node`'s renewals and sessions run with. */
export type NodeLoadedIdentity = LoadedIdentity | TpmLoadedIdentity;

/** The suffix of the files a renewal replaced, kept until the next renewal. */
export const PREVIOUS_SUFFIX = '.previous';

export class IdentityLoadError extends agentErrorClass('IDENTITY', 'IdentityLoadError') {}

type TpmOptions = { ak: string | null; address?: string; helper?: NodeKeyHelper };

async function readPair(keyFile: string, identityFile: string, tpm?: TpmOptions): Promise<NodeLoadedIdentity> {
  const [keyPem, recordText] = await Promise.all([readFile(keyFile, 'utf8'), readFile(identityFile, 'utf8')]);
  const names = { keyFile, identityFile };
  return tpm && isTpmKeyText(keyPem)
    ? parseTpmIdentity(keyPem, JSON.parse(recordText), names, tpm)
    : parseIdentity(keyPem, JSON.parse(recordText), names);
}

type IdentityRecord = Parameters<typeof parseIdentity>[1];

/**
 * {@link parseIdentity} for a TPM-held key: `node.key` is a `bcd-tpm-key v1` blob, whose public key the leaf
 * must certify (only the TPM holding it can sign with it). `ak` is the AK blob's text, when there is one.
 */
export function parseTpmIdentity(
  keyText: string,
  record: IdentityRecord,
  names: { keyFile: string; identityFile: string },
  tpm: TpmOptions,
): TpmLoadedIdentity {
  const nodeKey = decodeKeyBlob(keyText);
  const rest = parseRecord(keyText, record, names.identityFile);
  const leafNames = readLeafNames(rest.leaf.raw);
  if (!leafNames.spkiDer.equals(p256SpkiOf(nodeKey.publicArea)))
    throw new IdentityLoadError(`${names.keyFile} is not the key of the certificate in ${names.identityFile}`);
  const akStatement = leafNames.uris.find((uri) => uri.startsWith('urn:bc:tpm-ak:')) ?? null;
  return {
    ...rest,
    privateKey: null,
    tpm: {
      nodeKey,
      ak: tpm.ak ? decodeKeyBlob(tpm.ak) : null,
      akStatement,
      ...(tpm.address ? { address: tpm.address } : {}),
      ...(tpm.helper ? { helper: tpm.helper } : {}),
    },
  };
}

/** Checks an identity held in memory (a key PEM and the identity record) as {@link loadIdentity} does. */
export function parseIdentity(
  keyPem: string,
  record: { nodeId?: unknown; siteId?: unknown; trustDomain?: unknown; role?: unknown; certificateChain?: unknown },
  names = { keyFile: 'the key', identityFile: 'the identity' },
): LoadedIdentity {
  const parsed = parseRecord(keyPem, record, names.identityFile);
  // Said plainly rather than as OpenSSL's decoder error: only loadNodeIdentity (bcd node) signs through the TPM.
  if (isTpmKeyText(keyPem)) throw new IdentityLoadError(`${names.keyFile} holds a key in the TPM, which only bcd node can use`);
  const privateKey = createPrivateKey(keyPem);
  if (!parsed.leaf.checkPrivateKey(privateKey))
    throw new IdentityLoadError(`${names.keyFile} is not the key of the certificate in ${names.identityFile}`);
  return { ...parsed, privateKey };
}

/** The record's fields and certificates, checked; the key is the caller's to check against the leaf. */
function parseRecord(
  keyText: string,
  record: { nodeId?: unknown; siteId?: unknown; trustDomain?: unknown; role?: unknown; certificateChain?: unknown },
  identityFile: string,
): Omit<LoadedIdentity, 'privateKey'> {
  const chain = record.certificateChain;
  if (!Array.isArray(chain) || chain.length < 2 || !chain.every((c) => typeof c === 'string')) {
    throw new IdentityLoadError(`${identityFile} holds no certificate chain`);
  }
  for (const field of ['nodeId', 'siteId', 'trustDomain', 'role'] as const) {
    if (typeof record[field] !== 'string') throw new IdentityLoadError(`${identityFile} has no ${field}`);
  }
  const leaf = new X509Certificate(Buffer.from(chain[0] as string, 'base64'));
  const nodeCa = new X509Certificate(Buffer.from(chain[chain.length - 1] as string, 'base64'));
  const identity: NodeIdentity = {
    privateKeyPem: keyText,
    certificateChain: chain as string[],
    nodeId: record.nodeId as string,
    siteId: record.siteId as string,
    trustDomain: record.trustDomain as string,
    role: record.role as string,
  };
  return {
    identity,
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
  return (await loadPair(dir)) as LoadedIdentity;
}

/**
 * {@link loadIdentity} for `bcd node`: a `node.key` holding a TPM key blob loads as a {@link TpmLoadedIdentity}
 * (with the AK blob of {@link AK_KEY_FILE} when present), to be used through the TPM at `options.tpm`.
 */
export async function loadNodeIdentity(dir: string, options: { tpm?: string; helper?: NodeKeyHelper } = {}): Promise<NodeLoadedIdentity> {
  const ak = await readFile(path.join(dir, AK_KEY_FILE), 'utf8').catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return null;
    throw error;
  });
  return loadPair(dir, { ak, ...(options.tpm ? { address: options.tpm } : {}), ...(options.helper ? { helper: options.helper } : {}) });
}

async function loadPair(dir: string, tpm?: TpmOptions): Promise<NodeLoadedIdentity> {
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
      return await readPair(keyFile, identityFile, tpm);
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

/** Removes `file` when it holds a software (PKCS#8) key rather than a TPM key blob. */
async function dropSoftwareKey(file: string, dir: string): Promise<void> {
  const text = await readFile(file, 'utf8').catch(() => null);
  if (text === null || isTpmKeyText(text)) return;
  await unlink(file);
  await syncDirectory(dir);
}

/**
 * Installs a renewed identity, which the caller has already verified: both files are written to flushed
 * temporaries, the current ones are kept as `.previous`, then each temporary is renamed over its file and the
 * directory is flushed. Until the renames the old identity stays in place untouched. When a software key's
 * successor is TPM-held, the software key's `.previous` copy is then removed.
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
    // A software key whose successor the TPM holds leaves no copy behind: the new pair is in place.
    if (isTpmKeyText(identity.privateKeyPem)) await dropSoftwareKey(keyFile + PREVIOUS_SUFFIX, dir);
  } finally {
    await unlink(temporaryKey).catch(() => {});
    await unlink(temporaryIdentity).catch(() => {});
  }
}
