import { createHash } from 'node:crypto';
import type { TpmClient } from './client';
import { createTpmCsr, type TpmCsr } from './csr';
import { createNodeKey, loadKey, withStoragePrimary, type TpmKeyBlob } from './keys';
import { NAME_HASHES } from '../../protocol/tpm/constants';
import { TpmReader } from '../../protocol/tpm/marshal';
import { agentErrorClass } from '../errors';

/** Renew's `keyAttestation` (docs/tpm-attestation.md): standard base64 of the TPM structures. */
export interface TpmKeyAttestationBody {
  akPublic: string;
  nodeKeyPublic: string;
  certifyInfo: string;
  certifySignature: string;
}

/** What a renewal of a TPM-bound identity sends and keeps: the next node key (its blob is the next `node.key`). */
interface TpmRenewalMaterial {
  readonly nodeKey: TpmKeyBlob;
  readonly csr: TpmCsr;
  readonly keyAttestation: TpmKeyAttestationBody;
}

/** The TPM cannot make the renewal's attestation: bcd must not send the renewal at all. */
export class TpmRenewalError extends agentErrorClass('TPM', 'TpmRenewalError') {}

/** `urn:bc:tpm-ak:<nameAlg>:<hex digest>` of a loaded key's Name (nameAlg u16 || digest), as the server spells it. */
export function akStatementOfName(name: Buffer): string {
  const alg = NAME_HASHES.get(new TpmReader(name).u16())?.name;
  if (!alg) throw new TpmRenewalError('the AK has a name algorithm the server does not accept');
  return `urn:bc:tpm-ak:${alg}:${name.subarray(2).toString('hex')}`;
}

/**
 * A renewal's next key and its attestation: a new node key made under the storage primary, its CSR signed in
 * the TPM, and the AK's TPM2_Certify of it over sha256(csr). Before anything is signed, the AK loaded from
 * `ak` must be the one `akStatement` (the current leaf's statement) names; a TPM that was cleared or replaced
 * cannot load the blob at all. Either way this throws, so the renewal is never sent without the attestation
 * the server requires.
 *
 * @throws TpmRenewalError when the AK is not the leaf's; a TpmError or a transport error when the TPM fails.
 */
export async function prepareTpmRenewal(tpm: TpmClient, input: { ak: TpmKeyBlob; akStatement: string }): Promise<TpmRenewalMaterial> {
  const { nodeKey, akHandle, nodeKeyHandle, akName } = await withStoragePrimary(tpm, async (srk) => {
    const nodeBlob = await createNodeKey(tpm, srk);
    const ak = await tpm.load(srk, input.ak.privateBlob, input.ak.publicArea);
    const nodeHandle = await loadKey(tpm, srk, nodeBlob).catch(async (error) => {
      await tpm.flush(ak.handle);
      throw error;
    });
    return { nodeKey: nodeBlob, akHandle: ak.handle, nodeKeyHandle: nodeHandle, akName: ak.name };
  });
  try {
    const derived = akStatementOfName(akName);
    if (derived !== input.akStatement) {
      throw new TpmRenewalError(
        `the TPM's AK is ${derived}, but the certificate names ${input.akStatement}: this is not the TPM the node joined with`,
      );
    }
    const csr = await createTpmCsr(tpm, nodeKeyHandle, nodeKey.publicArea);
    const qualifyingData = createHash('sha256').update(csr.csrDer).digest();
    const { attest, signature } = await tpm.certify(nodeKeyHandle, akHandle, qualifyingData);
    return {
      nodeKey,
      csr,
      keyAttestation: {
        akPublic: input.ak.publicArea.toString('base64'),
        nodeKeyPublic: nodeKey.publicArea.toString('base64'),
        certifyInfo: attest.toString('base64'),
        certifySignature: signature.toString('base64'),
      },
    };
  } finally {
    await tpm.flush(nodeKeyHandle);
    await tpm.flush(akHandle);
  }
}

/**
 * The IEEE P1363 `r || s` (what Renew's `popSig` carries) of a sha256 `digest` signed by the TPM key `blob`:
 * a TPM-held current key proves possession for the renewal.
 */
export async function signWithTpmKey(tpm: TpmClient, blob: TpmKeyBlob, digest: Buffer): Promise<Buffer> {
  const handle = await withStoragePrimary(tpm, (srk) => loadKey(tpm, srk, blob));
  try {
    const r = new TpmReader(await tpm.signDigest(handle, digest));
    r.u16(); // ECDSA
    r.u16(); // sha256
    const pad = (v: Buffer) => Buffer.concat([Buffer.alloc(32 - v.length), v]);
    return Buffer.concat([pad(r.sized()), pad(r.sized())]);
  } finally {
    await tpm.flush(handle);
  }
}
