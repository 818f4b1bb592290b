import { P256_SPKI_PREFIX } from '../../protocol/p256';
import { ALG, ECC_CURVE } from './constants';
import { TpmReader } from './marshal';

/**
 * The uncompressed point of an ECC P-256 TPMT_PUBLIC the TPM returned (Part 2 §12.2.4), read field by field:
 * bcd needs it for the CSR's SubjectPublicKeyInfo. Anything else (RSA, another curve, trailing bytes) throws.
 */
export function p256PointOf(publicArea: Buffer): Buffer {
  const r = new TpmReader(publicArea);
  if (r.u16() !== ALG.ecc) throw new Error('the TPM key is not an ECC key');
  r.u16(); // nameAlg
  r.u32(); // objectAttributes
  r.sized(); // authPolicy
  if (r.u16() !== ALG.null) (r.u16(), r.u16()); // symmetric: keyBits, mode
  const scheme = r.u16();
  if (scheme !== ALG.null) r.u16();
  if (scheme === 0x001a) r.u16(); // ECDAA's count
  if (r.u16() !== ECC_CURVE.nistP256) throw new Error('the TPM key is not on P-256');
  if (r.u16() !== ALG.null) r.u16(); // kdf
  const x = r.sized();
  const y = r.sized();
  r.end('TPMT_PUBLIC');
  if (x.length !== 32 || y.length !== 32) throw new Error('the TPM key coordinates are not 32 bytes');
  return Buffer.concat([Buffer.of(0x04), x, y]);
}

/** The DER SubjectPublicKeyInfo of a P-256 TPM key. */
export const p256SpkiOf = (publicArea: Buffer): Buffer => Buffer.concat([P256_SPKI_PREFIX, p256PointOf(publicArea)]);
