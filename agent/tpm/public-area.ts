import { P256_SPKI_PREFIX } from '../../protocol/p256';
import { CURVES, ECC_CURVE } from '../../protocol/tpm/constants';
import { parseTpmPublic, spkiOf } from '../../protocol/tpm/public-area';

/**
 * The DER SubjectPublicKeyInfo of a P-256 TPM key the TPM returned (its TPMT_PUBLIC, Part 2 §12.2.4): bcd needs
 * it for the CSR. Anything else (RSA, another curve, trailing bytes) throws.
 */
export function p256SpkiOf(publicArea: Buffer): Buffer {
  const key = parseTpmPublic(publicArea, 'the TPM key');
  if (!key.ecc) throw new Error('the TPM key is not an ECC key');
  if (key.ecc.curve !== ECC_CURVE.nistP256) throw new Error('the TPM key is not on P-256');
  const { x, y } = key.ecc;
  if (x.length !== 32 || y.length !== 32) throw new Error('the TPM key coordinates are not 32 bytes');
  return Buffer.concat([P256_SPKI_PREFIX, Buffer.of(0x04), x, y]);
}

/**
 * The DER SubjectPublicKeyInfo of an EK's TPMT_PUBLIC (RSA, or ECC P-256/P-384), encoded as node:crypto encodes
 * any imported key: the bytes whose SHA-256 is the EK hash of allow-lists and enrollment requests.
 */
export function ekSpkiOf(publicArea: Buffer): Buffer {
  const ek = parseTpmPublic(publicArea, 'the EK');
  if (ek.ecc) {
    const curve = CURVES.get(ek.ecc.curve);
    if (!curve) throw new Error('the ECC EK is not on P-256 or P-384');
    if (ek.ecc.x.length !== curve.size || ek.ecc.y.length !== curve.size) throw new Error('the EK coordinates are not the curve size');
  }
  return spkiOf(ek);
}
