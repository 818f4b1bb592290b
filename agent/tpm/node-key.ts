import { stat } from 'node:fs/promises';
import type { TpmClient } from './client';
import { createTpmCsr, type TpmCsr } from './csr';
import { withTpm } from './identify';
import { createNodeKey, encodeKeyBlob, loadKey, withStoragePrimary, type TpmKeyBlob } from './keys';
import { describeTpmAddress } from './transport';

export { describeTpmAddress } from './transport';

/**
 * Where bcd keeps node keys: the TPM `--tpm` or `BCD_TPM` names (then the operator asked for it, and a TPM that
 * fails is an error), else `/dev/tpmrm0` when that device exists (the same rule as the `tpm` attestor's).
 */
export interface NodeKeyTpm {
  /** `--tpm` / `BCD_TPM` as given; undefined means `/dev/tpmrm0`. */
  readonly address: string | undefined;
  /** The operator named the TPM: failing to use it fails, never falls back to a software key. */
  readonly explicit: boolean;
}

/** The node-key TPM of `--tpm` (`flag`), else `BCD_TPM`, else the default device. */
export function nodeKeyTpmOf(flag: string | undefined, env: Readonly<Record<string, string | undefined>> = process.env): NodeKeyTpm {
  const named = (flag ?? env.BCD_TPM ?? '').trim();
  return named === '' ? { address: undefined, explicit: false } : { address: named, explicit: true };
}

/** A node key the TPM made, and its CSR signed in the TPM. */
interface TpmNodeKey {
  readonly nodeKey: TpmKeyBlob;
  readonly csr: TpmCsr;
}

/**
 * A new node key made under the storage primary and its PKCS#10 request signed by the TPM: what a join, a
 * renewal without key attestation and an x509pop re-join send. One of the TPM operations bcd needs (with
 * signing, agent/tpm/renewal.ts signWithTpmKey, and certifying, prepareTpmRenewal).
 */
export async function makeTpmNodeKey(tpm: TpmClient): Promise<TpmNodeKey> {
  return withStoragePrimary(tpm, async (srk) => {
    const nodeKey = await createNodeKey(tpm, srk);
    const handle = await loadKey(tpm, srk, nodeKey);
    try {
      return { nodeKey, csr: await createTpmCsr(tpm, handle, nodeKey.publicArea) };
    } finally {
      await tpm.flush(handle);
    }
  });
}

/**
 * Runs `use` with the node-key TPM open, or answers null when node keys stay in software: no TPM was named and
 * `/dev/tpmrm0` does not exist, or (told through `warn`) the default device exists but cannot be used. A TPM
 * the operator named that cannot be opened, or that fails, throws: bcd never quietly makes a software key then.
 */
export async function withNodeKeyTpm<T>(
  choice: NodeKeyTpm,
  use: (tpm: TpmClient) => Promise<T>,
  warn?: (line: string) => void,
): Promise<T | null> {
  if (choice.explicit) return withTpm(choice.address, use);
  const device = describeTpmAddress(choice.address);
  const present = await stat(device).then(
    () => true,
    () => false,
  );
  if (!present) return null;
  try {
    return await withTpm(choice.address, use);
  } catch (error) {
    warn?.(`${device} exists but cannot hold the node key (${(error as Error).message}); the node key stays in software (node.key)`);
    return null;
  }
}

/** A TPM-made next key as a join or renewal sends it: the CSR's fields and `node.key`'s text (the key's blob). */
export interface TpmJoinKeys {
  readonly csrDer: Buffer;
  readonly csrSha256: string;
  readonly spkiDer: Buffer;
  readonly privateKeyPem: string;
  readonly nodeKey: TpmKeyBlob;
}

/** {@link makeTpmNodeKey} in the node-key TPM, or null when node keys stay in software (see {@link withNodeKeyTpm}). */
export async function makeNodeKeyInTpm(choice: NodeKeyTpm, warn?: (line: string) => void): Promise<TpmJoinKeys | null> {
  const made = await withNodeKeyTpm(choice, makeTpmNodeKey, warn);
  return made ? { ...made.csr, privateKeyPem: encodeKeyBlob(made.nodeKey), nodeKey: made.nodeKey } : null;
}
