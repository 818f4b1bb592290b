import { createHash } from 'node:crypto';
import { SCHEME } from '../tls13/handshake';
import type { TlsClientSigner } from '../tls13/client';
import type { TpmClient } from './client';
import { withTpm } from './identify';
import { loadKey, withStoragePrimary, type TpmKeyBlob } from './keys';
import { derEcdsaSignature } from './signature';

/**
 * TPM2_Sign of a sha256 `digest` by the TPM key `blob`, as a DER `ECDSA-Sig-Value` (what a TLS CertificateVerify
 * carries). One of the TPM operations a node key needs, with renewal.ts's signWithTpmKey (IEEE P1363, for proofs),
 * node-key.ts's makeTpmNodeKey and renewal.ts's prepareTpmRenewal (certify).
 */
async function signDigestDer(tpm: TpmClient, blob: TpmKeyBlob, digest: Buffer): Promise<Buffer> {
  const handle = await withStoragePrimary(tpm, (srk) => loadKey(tpm, srk, blob));
  try {
    return derEcdsaSignature(await tpm.signDigest(handle, digest));
  } finally {
    await tpm.flush(handle);
  }
}

/**
 * The TLS 1.3 client signer of a TPM-held node key (ECDSA P-256, so ecdsa_secp256r1_sha256): the handshake's
 * CertificateVerify content is hashed here and the TPM signs the digest. The TPM at `address` (as `--tpm` /
 * `BCD_TPM` name it) is opened for the one signature and closed again, so nothing holds it between handshakes.
 */
export function tpmTlsSigner(address: string | undefined, nodeKey: TpmKeyBlob, certificateChain: readonly Buffer[]): TlsClientSigner {
  return {
    certificateChain,
    scheme: SCHEME.ecdsaSecp256r1Sha256,
    sign: (content) => withTpm(address, (tpm) => signDigestDer(tpm, nodeKey, createHash('sha256').update(content).digest())),
  };
}
