import { createPublicKey } from 'node:crypto';
import { P256_SPKI_PREFIX } from '../../protocol/p256';
import { ALG, ECC_CURVE } from './constants';
import { TpmReader } from './marshal';

/**
 * The uncompressed point of an ECC P-256 TPMT_PUBLIC the TPM returned (Part 2 §12.2.4), read field by field:
 * bcd needs it for the CSR's SubjectPublicKeyInfo. Anything else (RSA, another curve, trailing bytes) throws.
 */
function p256PointOf(publicArea: Buffer): Buffer {
  const r = new TpmReader(publicArea);
  if (r.u16() !== ALG.ecc) throw new Error('the TPM key is not an ECC key');
  r.u16(); // nameAlg
  r.u32(); // objectAttributes
  r.sized(); // authPolicy
  if (r.u16() !== ALG.null) {
    r.u16(); // symmetric: keyBits
    r.u16(); // symmetric: mode
  }
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

const ECC_JWK_CURVES = new Map<number, { crv: string; size: number }>([
  [ECC_CURVE.nistP256, { crv: 'P-256', size: 32 }],
  [ECC_CURVE.nistP384, { crv: 'P-384', size: 48 }],
]);

/**
 * The DER SubjectPublicKeyInfo of an EK's TPMT_PUBLIC (RSA, or ECC P-256/P-384), encoded as node:crypto encodes
 * any imported key: the bytes whose SHA-256 is the EK hash of allow-lists and enrollment requests.
 */
export function ekSpkiOf(publicArea: Buffer): Buffer {
  const r = new TpmReader(publicArea);
  const type = r.u16();
  r.u16(); // nameAlg
  r.u32(); // objectAttributes
  r.sized(); // authPolicy
  if (r.u16() !== ALG.null) {
    r.u16(); // symmetric: keyBits
    r.u16(); // and mode
  }
  const scheme = r.u16();
  if (scheme !== ALG.null && scheme !== 0x0015) r.u16(); // a scheme's hash (RSAES has none)
  if (type === ALG.rsa) {
    r.u16(); // keyBits
    const exponent = r.u32() || 65537;
    const modulus = r.sized();
    r.end('TPMT_PUBLIC');
    const e = Buffer.alloc(4);
    e.writeUInt32BE(exponent);
    let start = 0;
    while (start < 3 && e[start] === 0) start++;
    return createPublicKey({
      key: { kty: 'RSA', n: modulus.toString('base64url'), e: e.subarray(start).toString('base64url') },
      format: 'jwk',
    }).export({ type: 'spki', format: 'der' });
  }
  if (type !== ALG.ecc) throw new Error('the EK is neither RSA nor ECC');
  const curve = ECC_JWK_CURVES.get(r.u16());
  if (!curve) throw new Error('the ECC EK is not on P-256 or P-384');
  if (r.u16() !== ALG.null) r.u16(); // kdf
  const x = r.sized();
  const y = r.sized();
  r.end('TPMT_PUBLIC');
  if (x.length !== curve.size || y.length !== curve.size) throw new Error('the EK coordinates are not the curve size');
  return createPublicKey({
    key: { kty: 'EC', crv: curve.crv, x: x.toString('base64url'), y: y.toString('base64url') },
    format: 'jwk',
  }).export({ type: 'spki', format: 'der' });
}
