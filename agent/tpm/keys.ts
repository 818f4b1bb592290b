import type { TpmClient } from './client';
import { RH } from '../../protocol/tpm/constants';
import { attestationKeyTemplate, nodeKeyTemplate, storagePrimaryTemplate } from './templates';

/**
 * A key the TPM made under bcd's storage primary: its public area and its private area wrapped by the TPM
 * (useless outside this TPM). This is all `node.key` needs to hold for a TPM-held node key.
 */
export interface TpmKeyBlob {
  readonly publicArea: Buffer;
  readonly privateBlob: Buffer;
}

/**
 * Runs `use` with the storage primary loaded, and flushes it afterwards. The primary is re-derived from its
 * template each time (same TPM, same owner seed, same key), so bcd keeps no persistent handle.
 */
export async function withStoragePrimary<T>(tpm: TpmClient, use: (parent: number) => Promise<T>): Promise<T> {
  const { handle } = await tpm.createPrimary(RH.owner, storagePrimaryTemplate());
  try {
    return await use(handle);
  } finally {
    await tpm.flush(handle);
  }
}

/** The restricted ECDSA P-256 attestation key, made under `parent`. */
export const createAttestationKey = (tpm: TpmClient, parent: number): Promise<TpmKeyBlob> => tpm.create(parent, attestationKeyTemplate());

/** The unrestricted ECDSA P-256 node key, made under `parent`. */
export const createNodeKey = (tpm: TpmClient, parent: number): Promise<TpmKeyBlob> => tpm.create(parent, nodeKeyTemplate());

/** Loads a key blob under `parent`; the handle is transient (flush it when done). */
export async function loadKey(tpm: TpmClient, parent: number, blob: TpmKeyBlob): Promise<number> {
  return (await tpm.load(parent, blob.privateBlob, blob.publicArea)).handle;
}

/** `node.key`'s text for a TPM-held key: a marker line, then the public and the wrapped private area. */
export function encodeKeyBlob(blob: TpmKeyBlob): string {
  return `bcd-tpm-key v1\npublic ${blob.publicArea.toString('base64')}\nprivate ${blob.privateBlob.toString('base64')}\n`;
}

export function decodeKeyBlob(text: string): TpmKeyBlob {
  const match = /^bcd-tpm-key v1\npublic ([A-Za-z0-9+/=]+)\nprivate ([A-Za-z0-9+/=]+)\n?$/.exec(text);
  if (!match) throw new Error('node.key is not a bcd TPM key blob');
  // Both groups of the pattern are required, so a match has them.
  return { publicArea: Buffer.from(match[1]!, 'base64'), privateBlob: Buffer.from(match[2]!, 'base64') };
}
