import { createHash, createPublicKey, type KeyObject } from 'node:crypto';
import { ALG, CURVES, NAME_HASHES } from './constants';
import { structureReader, TpmFormatError } from './marshal';

/** A parsed TPMT_PUBLIC (Part 2 §12.2.4) of an RSA or ECC key: what the join checks and bcd read. */
export interface TpmPublic {
  /** The exact TPMT_PUBLIC bytes: what the Name is a hash of. */
  readonly bytes: Buffer;
  readonly type: 'rsa' | 'ecc';
  readonly nameAlg: number;
  readonly attributes: number;
  readonly authPolicy: Buffer;
  /** TPMT_SYM_DEF_OBJECT: `null` for a signing key. */
  readonly symmetric: { algorithm: number; keyBits: number; mode: number } | null;
  /** The key's signing or decryption scheme: `null` when TPM_ALG_NULL. */
  readonly scheme: { algorithm: number; hashAlg: number } | null;
  readonly rsa?: { keyBits: number; exponent: number; modulus: Buffer };
  readonly ecc?: { curve: number; kdf: number; x: Buffer; y: Buffer };
}

/** Whether `attribute` (a TPMA_OBJECT bit) is set. */
export const hasAttribute = (key: TpmPublic, attribute: number): boolean => (key.attributes & attribute) !== 0;

/**
 * Parses a TPMT_PUBLIC exactly: RSA and ECC keys only (an attestor never needs a keyed-hash or symmetric
 * object), every size within its buffer and nothing after the structure.
 *
 * @throws TpmFormatError on any malformed or unsupported structure (the server refuses it as `tpm:attestation`).
 */
export function parseTpmPublic(bytes: Buffer, what: string): TpmPublic {
  const r = structureReader(bytes, what);
  const typeId = r.u16();
  if (typeId !== ALG.rsa && typeId !== ALG.ecc) throw new TpmFormatError(`${what} is neither RSA nor ECC`);
  const nameAlg = r.u16();
  const attributes = r.u32();
  const authPolicy = r.sized();
  const symAlgorithm = r.u16();
  const symmetric = symAlgorithm === ALG.null ? null : { algorithm: symAlgorithm, keyBits: r.u16(), mode: r.u16() };
  const schemeAlgorithm = r.u16();
  // Every RSA and ECC scheme carries a hash algorithm but RSAES (0x0015, none) and ECDAA (0x001a, also a count).
  const scheme =
    schemeAlgorithm === ALG.null ? null : { algorithm: schemeAlgorithm, hashAlg: schemeAlgorithm === 0x0015 ? ALG.null : r.u16() };
  if (schemeAlgorithm === 0x001a) r.u16();
  let result: TpmPublic;
  if (typeId === ALG.rsa) {
    const keyBits = r.u16();
    const exponent = r.u32();
    const modulus = r.sized();
    result = {
      bytes: Buffer.from(bytes),
      type: 'rsa',
      nameAlg,
      attributes,
      authPolicy,
      symmetric,
      scheme,
      rsa: { keyBits, exponent, modulus },
    };
  } else {
    const curve = r.u16();
    const kdf = r.u16();
    if (kdf !== ALG.null) r.u16();
    const x = r.sized();
    const y = r.sized();
    result = { bytes: Buffer.from(bytes), type: 'ecc', nameAlg, attributes, authPolicy, symmetric, scheme, ecc: { curve, kdf, x, y } };
  }
  r.end();
  return result;
}

/**
 * A key's Name: nameAlg (u16) followed by H_nameAlg(TPMT_PUBLIC) (Part 1 §16). This is what TPM2_Certify
 * attests and what MakeCredential binds a credential to.
 *
 * @throws TpmFormatError when nameAlg is not sha256, sha384 or sha512.
 */
export function tpmName(key: TpmPublic): Buffer {
  const hash = NAME_HASHES.get(key.nameAlg);
  if (!hash) throw new TpmFormatError(`name algorithm 0x${key.nameAlg.toString(16)} is not accepted`);
  const alg = Buffer.alloc(2);
  alg.writeUInt16BE(key.nameAlg);
  return Buffer.concat([alg, createHash(hash.name).update(key.bytes).digest()]);
}

/**
 * The key as a node:crypto public key. OpenSSL refuses an ECC point off its curve and an RSA modulus that is
 * not one, so a key imported here is well formed.
 *
 * @throws TpmFormatError for an unknown curve or a key OpenSSL refuses.
 */
export function publicKeyOf(key: TpmPublic): KeyObject {
  // One import per parsed key: a join's checks and its MakeCredential each need the same keys.
  let imported = importedKeys.get(key);
  if (!imported) importedKeys.set(key, (imported = importPublicKey(key)));
  return imported;
}

const importedKeys = new WeakMap<TpmPublic, KeyObject>();

function importPublicKey(key: TpmPublic): KeyObject {
  try {
    if (key.rsa) {
      const exponent = key.rsa.exponent === 0 ? 65537 : key.rsa.exponent;
      const e = Buffer.alloc(4);
      e.writeUInt32BE(exponent);
      let start = 0;
      while (start < 3 && e[start] === 0) start++;
      return createPublicKey({
        key: { kty: 'RSA', n: key.rsa.modulus.toString('base64url'), e: e.subarray(start).toString('base64url') },
        format: 'jwk',
      });
    }
    const ecc = key.ecc!;
    const curve = CURVES.get(ecc.curve);
    if (!curve) throw new Error(`curve 0x${ecc.curve.toString(16)} is not supported`);
    if (ecc.x.length !== curve.size || ecc.y.length !== curve.size) throw new Error('coordinates are not the curve size');
    return createPublicKey({
      key: { kty: 'EC', crv: curve.jwk, x: ecc.x.toString('base64url'), y: ecc.y.toString('base64url') },
      format: 'jwk',
    });
  } catch (error) {
    throw new TpmFormatError(`public key does not import: ${(error as Error).message}`);
  }
}

/** The DER SubjectPublicKeyInfo of the key (what a CSR or an X.509 certificate carries). */
export const spkiOf = (key: TpmPublic): Buffer => publicKeyOf(key).export({ type: 'spki', format: 'der' });
