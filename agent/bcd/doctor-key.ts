import { createPrivateKey, createPublicKey, X509Certificate } from 'node:crypto';
import { readLeafNames } from '../../protocol/certificate-names';
import { isTpmKeyText } from '../renew/identity';
import { withTpm } from '../tpm/identify';
import { decodeKeyBlob, loadKey, withStoragePrimary } from '../tpm/keys';
import { describeTpmAddress, withNodeKeyTpm, type NodeKeyTpm } from '../tpm/node-key';
import { p256SpkiOf } from '../tpm/public-area';
import type { NodeKeyHelper } from '../helper/client';

/** The SPKI DER of `node.key`'s key: a PKCS#8 key's, or a TPM key blob's public area. */
export function nodeKeySpki(keyText: string): Buffer {
  if (isTpmKeyText(keyText)) return p256SpkiOf(decodeKeyBlob(keyText).publicArea);
  return createPublicKey(createPrivateKey(keyText)).export({ type: 'spki', format: 'der' });
}

/**
 * `bcd doctor`'s `key` line: where the node key lives. A TPM-held key (node.key holds its TPM record) must load in
 * the TPM `--tpm` / `BCD_TPM` names (else /dev/tpmrm0), and says whether a `tpm` join's AK certified it or nothing
 * proves it to the control plane (`unattested`). A software key (PKCS#8 node.key) says so, and when a TPM opens,
 * that the next renewal moves the key into it: under `[helper]` (`helper`), the helper's TPM.
 */
export async function checkNodeKey(keyText: string, leafDer: Buffer, tpm: NodeKeyTpm, helper?: NodeKeyHelper): Promise<string> {
  const where = describeTpmAddress(tpm.address);
  if (!isTpmKeyText(keyText) && helper) return softwareKeyUnderHelper(helper);
  if (!isTpmKeyText(keyText)) {
    const opens = await withNodeKeyTpm(tpm, async () => true).catch((error: Error) => {
      throw new Error(`software (node.key); the TPM named (${where}) cannot be used: ${error.message}`, { cause: error });
    });
    return opens ? `software (node.key); the next renewal makes the key in the TPM at ${where}` : 'software (node.key)';
  }
  const blob = decodeKeyBlob(keyText);
  try {
    await withTpm(tpm.address, (client) => withStoragePrimary(client, async (srk) => client.flush(await loadKey(client, srk, blob))));
  } catch (error) {
    throw new Error(`TPM-held (node.key holds its TPM record), but the TPM at ${where} cannot load it: ${(error as Error).message}`, {
      cause: error,
    });
  }
  const ak = readLeafNames(new X509Certificate(leafDer).raw).uris.find((uri) => uri.startsWith('urn:bc:tpm-ak:'));
  return `TPM-held (node.key holds its TPM record; loads in the TPM at ${where}; ${ak ? `certified by the AK ${ak}` : 'unattested'})`;
}

/**
 * A software key's line under `[helper]`: the helper is asked for a next key as the next renewal will ask (the key
 * is discarded; nothing is stored), so the line says whether that renewal moves the key into the helper's TPM. A
 * helper that reports no TPM, or does not answer, is not a failure: the key then stays in software.
 */
async function softwareKeyUnderHelper(helper: NodeKeyHelper): Promise<string> {
  try {
    await helper.nextKey({ ak: null, akStatement: null });
    return `software (node.key); the next renewal makes the key in the TPM through bcd helper (${helper.socketPath})`;
  } catch (error) {
    return `software (node.key); the next renewal keeps it in software (${(error as Error).message})`;
  }
}
