import { createHash } from 'node:crypto';
import { TAG } from '../../protocol/der/tags';
import { bitString, sequence, set, tlv, utf8String } from '../../protocol/der/writer';
import type { TpmClient } from './client';
import { p256SpkiOf } from './public-area';
import { derEcdsaSignature } from './signature';

const OID_COMMON_NAME = Buffer.from('550403', 'hex');
// SEQUENCE { ecdsa-with-SHA256 } with the parameters absent (RFC 5758 §3.2), as the server's CSR parser requires.
const ECDSA_SHA256_ALGORITHM = Buffer.from('300a06082a8648ce3d040302', 'hex');

/** A PKCS#10 request for a key held in the TPM. */
export interface TpmCsr {
  readonly csrDer: Buffer;
  readonly spkiDer: Buffer;
  /** Lowercase hex sha256 of `csrDer`: the seal's `csr`, the Certify's qualifying data (as bytes). */
  readonly csrSha256: string;
}

/**
 * Builds the CSR of the TPM key `keyHandle` (whose TPMT_PUBLIC is `publicArea`) and has the TPM sign its
 * certificationRequestInfo: sha256 of those bytes goes to TPM2_Sign and the signature is DER-encoded here.
 * Assembled by hand, not through an OpenSSL provider, because a provider-made request carries explicit NULL
 * parameters in its signature algorithm, which the server's strict parser refuses (as RFC 5758 asks).
 */
export async function createTpmCsr(
  tpm: TpmClient,
  keyHandle: number,
  publicArea: Buffer,
  options: { commonName?: string } = {},
): Promise<TpmCsr> {
  const spkiDer = p256SpkiOf(publicArea);
  const rdns = options.commonName ? [set(sequence(tlv(TAG.oid, OID_COMMON_NAME), utf8String(options.commonName)))] : [];
  const info = sequence(Buffer.from([0x02, 0x01, 0x00]), sequence(...rdns), spkiDer, Buffer.from([0xa0, 0x00]));
  const digest = createHash('sha256').update(info).digest();
  const signature = derEcdsaSignature(await tpm.signDigest(keyHandle, digest));
  const csrDer = sequence(info, ECDSA_SHA256_ALGORITHM, bitString(signature));
  return { csrDer, spkiDer, csrSha256: createHash('sha256').update(csrDer).digest('hex') };
}
