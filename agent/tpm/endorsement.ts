import type { TpmClient } from './client';
import { EK_CERT_NV_INDEX, RH } from '../../protocol/tpm/constants';
import { nvDataSize, nvReadAll } from './nv';
import { ekTemplate, type EkKind } from './templates';

/** A loaded endorsement key: flush `handle` when done (it is a transient object re-derived on demand). */
export interface EndorsementKey {
  readonly handle: number;
  readonly kind: EkKind;
  /** TPMT_PUBLIC, what MakeCredential encrypts to. */
  readonly publicArea: Buffer;
  /** The manufacturer's EK certificate (DER) from its NV index, when the TPM has one. */
  readonly certificate?: Buffer;
}

const CERT_INDEX: Record<EkKind, number> = { rsa: EK_CERT_NV_INDEX.rsa2048, ecc: EK_CERT_NV_INDEX.eccP256 };

/**
 * Reads the EK certificate of `kind` from its NV index (TCG EK Credential Profile §2.2.1.5), or undefined when
 * the index is not defined. Some TPMs pad the index after the DER; only the certificate's own length is kept.
 */
async function readEkCertificate(tpm: TpmClient, kind: EkKind): Promise<Buffer | undefined> {
  const size = await nvDataSize(tpm, CERT_INDEX[kind]);
  if (size === undefined || size === 0) return undefined;
  const bytes = await nvReadAll(tpm, CERT_INDEX[kind], size);
  return derPrefix(bytes);
}

/**
 * Creates the EK from the TCG default template of `kind`; `auto` takes the kind whose certificate the TPM
 * holds (ECC first, the smaller), else ECC P-256. The EK's private part never changes for a given TPM and
 * template, so re-creating it later gives the same key.
 */
export async function createEndorsementKey(tpm: TpmClient, kind: EkKind | 'auto' = 'auto'): Promise<EndorsementKey> {
  let chosen: EkKind = kind === 'auto' ? 'ecc' : kind;
  let certificate: Buffer | undefined;
  if (kind === 'auto') {
    certificate = await readEkCertificate(tpm, 'ecc');
    if (!certificate) {
      const rsa = await readEkCertificate(tpm, 'rsa');
      if (rsa) [chosen, certificate] = ['rsa', rsa];
    }
  } else {
    certificate = await readEkCertificate(tpm, kind);
  }
  const primary = await tpm.createPrimary(RH.endorsement, ekTemplate(chosen));
  return { handle: primary.handle, kind: chosen, publicArea: primary.publicArea, certificate };
}

/** The DER element at the start of `bytes` (SEQUENCE with a definite length), dropping any padding after it. */
function derPrefix(bytes: Buffer): Buffer {
  if (bytes.length < 2 || bytes[0] !== 0x30) throw new Error('the EK certificate index does not hold a DER certificate');
  const first = bytes[1]!; // at least 2 bytes: checked above
  let length = first;
  let header = 2;
  if (first & 0x80) {
    const count = first & 0x7f;
    if (count === 0 || count > 3 || bytes.length < 2 + count) throw new Error('the EK certificate has a malformed length');
    length = 0;
    for (let i = 0; i < count; i++) length = length * 256 + bytes[2 + i]!; // 2 + count bytes: checked above
    header = 2 + count;
  }
  if (header + length > bytes.length) throw new Error('the EK certificate index is shorter than its certificate');
  return bytes.subarray(0, header + length);
}
