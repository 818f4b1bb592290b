import { sequence, unsignedInteger } from '../../protocol/der/writer';
import { ALG } from '../../protocol/tpm/constants';
import { TpmReader } from '../../protocol/tpm/marshal';

/**
 * The DER `ECDSA-Sig-Value` (RFC 5480 §2.2: SEQUENCE { r INTEGER, s INTEGER }) of an ECDSA TPMT_SIGNATURE, the
 * form a CSR's and a certificate's signature BIT STRING holds. Integers are minimal and positive.
 */
export function derEcdsaSignature(tpmtSignature: Buffer): Buffer {
  const reader = new TpmReader(tpmtSignature);
  if (reader.u16() !== ALG.ecdsa) throw new Error('the TPM signature is not ECDSA');
  if (reader.u16() !== ALG.sha256) throw new Error('the TPM signature is not over sha256');
  const r = reader.sized();
  const s = reader.sized();
  reader.end('TPMT_SIGNATURE');
  return sequence(unsignedInteger(r), unsignedInteger(s));
}
