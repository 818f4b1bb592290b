import { verify, type KeyObject } from 'node:crypto';
import { ALG, CURVES, NAME_HASHES, ST } from '../../../../protocol/tpm/constants';
import { structureReader } from '../../../../protocol/tpm/marshal';
import type { TpmPublic } from './public-area';
import { publicKeyOf, refusedAsAttestation } from './public-area';
import { TpmCheckFailure } from './reasons';

/** A parsed TPMS_ATTEST (Part 2 §10.12.12). `certified` is set for TPM_ST_ATTEST_CERTIFY only. */
interface TpmAttest {
  readonly magic: number;
  readonly type: number;
  readonly qualifiedSigner: Buffer;
  readonly extraData: Buffer;
  readonly clock: bigint;
  readonly resetCount: number;
  readonly restartCount: number;
  readonly safe: boolean;
  readonly firmwareVersion: bigint;
  readonly certified?: { name: Buffer; qualifiedName: Buffer };
}

/**
 * Parses a TPMS_ATTEST. Only a certify attestation's body is read; another type parses up to its header so
 * the caller can refuse it by type (`tpm:attest-type`) rather than as malformed.
 */
export const parseTpmAttest = refusedAsAttestation(readTpmAttest);

function readTpmAttest(bytes: Buffer): TpmAttest {
  const r = structureReader(bytes, 'the certify attestation');
  const magic = r.u32();
  const type = r.u16();
  const qualifiedSigner = r.sized();
  const extraData = r.sized();
  const clock = r.u64();
  const resetCount = r.u32();
  const restartCount = r.u32();
  const safe = r.u8() === 1;
  const firmwareVersion = r.u64();
  const header = { magic, type, qualifiedSigner, extraData, clock, resetCount, restartCount, safe, firmwareVersion };
  if (type !== ST.attestCertify) return header;
  const name = r.sized();
  const qualifiedName = r.sized();
  r.end();
  return { ...header, certified: { name, qualifiedName } };
}

/** A TPMT_SIGNATURE made with ECDSA (the only AK scheme accepted): the hash and the two integers. */
interface EcdsaSignature {
  readonly hashAlg: number;
  readonly r: Buffer;
  readonly s: Buffer;
}

const parseEcdsaSignature = refusedAsAttestation((bytes: Buffer, what: string): EcdsaSignature => {
  const reader = structureReader(bytes, what);
  const sigAlg = reader.u16();
  if (sigAlg !== ALG.ecdsa) throw new TpmCheckFailure('tpm:attest-signature', `${what} is not ECDSA (0x${sigAlg.toString(16)})`);
  const hashAlg = reader.u16();
  const r = reader.sized();
  const s = reader.sized();
  reader.end();
  return { hashAlg, r, s };
});

/** `r || s`, each left-padded to the curve size: the IEEE P1363 form node:crypto verifies. */
function p1363Of(signature: EcdsaSignature, size: number): Buffer | undefined {
  const pad = (v: Buffer) => {
    let start = 0;
    while (start < v.length - 1 && v[start] === 0) start++;
    const trimmed = v.subarray(start);
    if (trimmed.length > size) return undefined;
    return Buffer.concat([Buffer.alloc(size - trimmed.length), trimmed]);
  };
  const r = pad(signature.r);
  const s = pad(signature.s);
  return r && s ? Buffer.concat([r, s]) : undefined;
}

/**
 * Whether `signatureBytes` (a TPMT_SIGNATURE) is the ECDSA signature of `signedBytes` by `signer`, with the
 * hash the signature names; the hash must also be the signer's own scheme hash, so a key fixed to sha256 is
 * never believed with another hash.
 */
export function verifyEcdsaSignature(signer: TpmPublic, signedBytes: Buffer, signatureBytes: Buffer, what: string): boolean {
  const signature = parseEcdsaSignature(signatureBytes, what);
  const hash = NAME_HASHES.get(signature.hashAlg);
  const curve = signer.ecc ? CURVES.get(signer.ecc.curve) : undefined;
  if (!hash || !curve || signer.scheme?.hashAlg !== signature.hashAlg) return false;
  const raw = p1363Of(signature, curve.size);
  if (!raw) return false;
  const key: KeyObject = publicKeyOf(signer);
  try {
    return verify(hash.name, signedBytes, { key, dsaEncoding: 'ieee-p1363' }, raw);
  } catch {
    return false;
  }
}
