import { certifyNodeKey, type TpmAttestationBody } from './attestation';
import type { TpmClient } from './client';
import { createTpmCsr, type TpmCsr } from './csr';
import { createEndorsementKey } from './endorsement';
import { createAttestationKey, createNodeKey, loadKey, withStoragePrimary, type TpmKeyBlob } from './keys';
import type { EkKind } from './templates';

/** Everything round one of a `tpm` join sends, and the key blobs bcd keeps (the AK's and `node.key`'s). */
export interface TpmJoinMaterial {
  readonly ekKind: EkKind;
  readonly ak: TpmKeyBlob;
  readonly nodeKey: TpmKeyBlob;
  readonly csr: TpmCsr;
  readonly attestation: TpmAttestationBody;
}

/**
 * Round one, in the order a TPM without a resource manager can hold (three transient objects): read the EK
 * and flush it, make (or reuse) the AK and a new node key under the storage primary, sign the node key's CSR
 * in the TPM, have the AK certify the node key over sha256(csr), flush everything. Passing the AK of an
 * earlier join keeps its Name, which is what a renewal's key attestation must show.
 */
export async function prepareTpmJoin(
  tpm: TpmClient,
  options: { ekKind?: EkKind | 'auto'; ak?: TpmKeyBlob; commonName?: string } = {},
): Promise<TpmJoinMaterial> {
  const ek = await createEndorsementKey(tpm, options.ekKind ?? 'auto');
  await tpm.flush(ek.handle);
  const { ak, nodeKey, handles } = await withStoragePrimary(tpm, async (srk) => {
    const akBlob = options.ak ?? (await createAttestationKey(tpm, srk));
    const nodeBlob = await createNodeKey(tpm, srk);
    const akHandle = await loadKey(tpm, srk, akBlob);
    const nodeHandle = await loadKey(tpm, srk, nodeBlob).catch(async (error) => {
      await tpm.flush(akHandle);
      throw error;
    });
    return { ak: akBlob, nodeKey: nodeBlob, handles: [akHandle, nodeHandle] as const };
  });
  const [akHandle, nodeKeyHandle] = handles;
  try {
    const csr = await createTpmCsr(tpm, nodeKeyHandle, nodeKey.publicArea, { commonName: options.commonName });
    const attestation = await certifyNodeKey(tpm, {
      ek,
      akHandle,
      akPublic: ak.publicArea,
      nodeKeyHandle,
      nodeKeyPublic: nodeKey.publicArea,
      csrDer: csr.csrDer,
    });
    return { ekKind: ek.kind, ak, nodeKey, csr, attestation };
  } finally {
    await tpm.flush(nodeKeyHandle);
    await tpm.flush(akHandle);
  }
}

/**
 * Round two's secret: loads the AK, re-creates the EK of `ekKind` (the same key: same template, same seed)
 * and activates the server's credential challenge with both, then flushes them.
 */
export async function answerTpmChallenge(
  tpm: TpmClient,
  input: { ak: TpmKeyBlob; ekKind: EkKind; credentialBlob: Buffer; encryptedSecret: Buffer },
): Promise<Buffer> {
  const akHandle = await withStoragePrimary(tpm, (srk) => loadKey(tpm, srk, input.ak));
  try {
    const ek = await createEndorsementKey(tpm, input.ekKind);
    try {
      return await tpm.activateCredential(akHandle, ek.handle, input.credentialBlob, input.encryptedSecret);
    } finally {
      await tpm.flush(ek.handle);
    }
  } finally {
    await tpm.flush(akHandle);
  }
}
