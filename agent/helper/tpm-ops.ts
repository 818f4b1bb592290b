import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { nextTpmKey } from '../renew/tpm-renewal';
import { withTpm } from '../tpm/identify';
import type { TpmKeyBlob } from '../tpm/keys';
import { nodeKeyTemplate } from '../tpm/templates';
import { signWithTpmKey } from '../tpm/renewal';
import { describeTpmAddress } from '../tpm/transport';
import { agentErrorClass } from '../errors';

/** What the helper does with the TPM for each request: the socket server knows nothing else. */
export interface HelperOps {
  /** ECDSA P-256 over sha256(`message`) by the node key `key`, as r and s (32 bytes each). */
  sign(key: TpmKeyBlob, message: Buffer): Promise<{ r: Buffer; s: Buffer }>;
  /** A new node key, its CSR signed in the TPM, and with `ak` that AK's Certify of it over sha256(csr). */
  nextKey(input: { ak: TpmKeyBlob | null; akStatement: string | null }): Promise<NextKeyAnswer>;
}

interface NextKeyAnswer {
  key: TpmKeyBlob;
  csrDer: Buffer;
  keyAttestation: { akPublic: string; nodeKeyPublic: string; certifyInfo: string; certifySignature: string } | null;
}

export class HelperRefusal extends agentErrorClass('REFUSED', 'HelperRefusal') {}

// TPMT_PUBLIC starts with type, nameAlg (u16 each) and objectAttributes (u32): a node key's are the template's.
const NODE_KEY_HEAD = nodeKeyTemplate().subarray(0, 8);

/**
 * The key a `sign` names must be a node key (an unrestricted ECDSA signing key made by the TPM, as
 * agent/tpm/templates.ts's `nodeKeyTemplate`), never the AK or another kind of object under the storage primary.
 */
export function assertNodeKey(key: TpmKeyBlob): void {
  if (key.publicArea.length < 8 || !key.publicArea.subarray(0, 8).equals(NODE_KEY_HEAD))
    throw new HelperRefusal('the key is not a bcd node key');
}

/**
 * The helper's operations on the TPM at `address` (`--tpm` / `BCD_TPM`; /dev/tpmrm0 when absent), through the
 * TPM code `bcd node` runs as root (agent/tpm, agent/renew/tpm-renewal.ts). One TPM conversation at a time: a
 * software TPM takes one connection, and a request waits for the one before it.
 */
export function tpmHelperOps(address: string | undefined, hasDefaultTpm: () => boolean = defaultTpmPresent): HelperOps {
  let queue: Promise<unknown> = Promise.resolve();
  const serial = <T>(work: () => Promise<T>): Promise<T> => {
    const refusal = noTpmRefusal(address, hasDefaultTpm);
    if (refusal) return Promise.reject(new HelperRefusal(refusal));
    const next = queue.then(work, work);
    queue = next.catch(() => {});
    return next;
  };
  return {
    sign: (key, message) =>
      serial(async () => {
        const digest = createHash('sha256').update(message).digest();
        const rs = await withTpm(address, (tpm) => signWithTpmKey(tpm, key, digest));
        return { r: rs.subarray(0, 32), s: rs.subarray(32) };
      }),
    nextKey: ({ ak, akStatement }) =>
      serial(async () => {
        const next = await withTpm(address, (tpm) => nextTpmKey(tpm, { ak, akStatement }));
        return { key: next.nodeKey, csrDer: next.csr.csrDer, keyAttestation: next.keyAttestation ?? null };
      }),
  };
}

/** The request's key blob, decoded. */
export const blobOf = (key: { public: string; private: string }): TpmKeyBlob => ({
  publicArea: Buffer.from(key.public, 'base64'),
  privateBlob: Buffer.from(key.private, 'base64'),
});

const defaultTpmPresent = () => existsSync(describeTpmAddress(undefined));

/**
 * Why the helper refuses every TPM request on a host without a TPM (none named, and no `/dev/tpmrm0`), or null. It
 * keeps serving, so a TPM that appears later (enabled in the firmware) is used without a restart; a node without a
 * TPM keeps its key in software and never asks. A named TPM (`--tpm` / `BCD_TPM`) that fails to open is an error.
 */
export function noTpmRefusal(address: string | undefined, hasDefaultTpm: () => boolean = defaultTpmPresent): string | null {
  if ((address ?? '').trim() !== '' || hasDefaultTpm()) return null;
  return `this host has no TPM (${describeTpmAddress(undefined)} does not exist): a node without one keeps its key in software`;
}
