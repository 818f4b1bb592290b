import * as structures from '../../../../protocol/tpm/public-area';
import { TpmFormatError } from '../../../../protocol/tpm/marshal';
import { TpmCheckFailure } from './reasons';

export { hasAttribute, type TpmPublic } from '../../../../protocol/tpm/public-area';

/** A parser of protocol/tpm whose malformed input is refused as `tpm:attestation`, with the parser's detail. */
export function refusedAsAttestation<A extends unknown[], R>(parse: (...args: A) => R): (...args: A) => R {
  return (...args) => {
    try {
      return parse(...args);
    } catch (error) {
      if (error instanceof TpmFormatError) throw new TpmCheckFailure('tpm:attestation', error.message);
      throw error;
    }
  };
}

// The TPMT_PUBLIC parsing bcd shares (protocol/tpm/public-area.ts), as the attestor's checks throw.

/** @throws TpmCheckFailure `tpm:attestation` on any malformed or unsupported structure. */
export const parseTpmPublic = refusedAsAttestation(structures.parseTpmPublic);
/** @throws TpmCheckFailure `tpm:attestation` when nameAlg is not sha256, sha384 or sha512. */
export const tpmName = refusedAsAttestation(structures.tpmName);
/** @throws TpmCheckFailure `tpm:attestation` for an unknown curve or a key OpenSSL refuses. */
export const publicKeyOf = refusedAsAttestation(structures.publicKeyOf);
export const spkiOf = refusedAsAttestation(structures.spkiOf);
