import { createHash } from 'node:crypto';
import type { TpmClient } from './client';
import type { EndorsementKey } from './endorsement';

/** A `tpm` join's round-one `attestation`, as docs/tpm-attestation.md fixes it (every field standard base64). */
export interface TpmAttestationBody {
  ekPublic: string;
  ekCertificate?: string;
  akPublic: string;
  nodeKeyPublic: string;
  certifyInfo: string;
  certifySignature: string;
}

/**
 * TPM2_Certify of the node key by the AK with `sha256(csr)` as qualifying data, assembled with the EK into
 * round one's attestation. The qualifying data binds the attestation to this CSR, so it cannot be replayed for
 * another key's request.
 */
export async function certifyNodeKey(
  tpm: TpmClient,
  input: { ek: EndorsementKey; akHandle: number; akPublic: Buffer; nodeKeyHandle: number; nodeKeyPublic: Buffer; csrDer: Buffer },
): Promise<TpmAttestationBody> {
  const qualifyingData = createHash('sha256').update(input.csrDer).digest();
  const { attest, signature } = await tpm.certify(input.nodeKeyHandle, input.akHandle, qualifyingData);
  return {
    ekPublic: input.ek.publicArea.toString('base64'),
    ...(input.ek.certificate ? { ekCertificate: input.ek.certificate.toString('base64') } : {}),
    akPublic: input.akPublic.toString('base64'),
    nodeKeyPublic: input.nodeKeyPublic.toString('base64'),
    certifyInfo: attest.toString('base64'),
    certifySignature: signature.toString('base64'),
  };
}

/**
 * Round two's secret: TPM2_ActivateCredential of the server's challenge with the AK and the EK both loaded.
 * The TPM refuses (TPM_RC_INTEGRITY) unless the challenge was made for this AK's Name and this EK.
 */
export function activateChallenge(
  tpm: TpmClient,
  input: { akHandle: number; ekHandle: number; credentialBlob: Buffer; encryptedSecret: Buffer },
): Promise<Buffer> {
  return tpm.activateCredential(input.akHandle, input.ekHandle, input.credentialBlob, input.encryptedSecret);
}
