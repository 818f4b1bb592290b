/**
 * Why a TPM attestation was refused: the `<reason>` of `tpm:<reason>` in `security.join.refused`. One reason per
 * check, so an operator reading the event knows which rule failed; the agent only ever sees the uniform 403.
 */
export type TpmRefusalReason =
  | 'tpm:attestation' // a field missing, not base64, or a TPM structure that does not parse exactly
  | 'tpm:ek-type' // the EK is not RSA-2048 or ECC P-256/P-384 with a sha256 name and AES-CFB
  | 'tpm:ek-attributes' // the EK is not a fixedTPM restricted decryption key made in its TPM
  | 'tpm:ek-certificate' // an EK certificate that does not parse
  | 'tpm:ek-certificate-key' // an EK certificate for another key than the EK's public area
  | 'tpm:ak-type' // the AK is not ECDSA P-256 with sha256
  | 'tpm:ak-fixed-tpm'
  | 'tpm:ak-fixed-parent'
  | 'tpm:ak-sensitive-data-origin'
  | 'tpm:ak-decrypt' // an AK that can also decrypt
  | 'tpm:ak-restricted' // an AK that would sign any digest, so its attestations prove nothing
  | 'tpm:node-key-type' // the node key is not an ECC P-256 signing key
  | 'tpm:node-key-fixed-tpm'
  | 'tpm:node-key-fixed-parent'
  | 'tpm:node-key-sensitive-data-origin'
  | 'tpm:node-key-restricted' // a restricted node key cannot sign a CSR or a renewal proof
  | 'tpm:node-key-sign'
  | 'tpm:node-key-csr' // the node key is not the CSR's key
  | 'tpm:attest-magic' // not TPM_GENERATED_VALUE: not made by a TPM
  | 'tpm:attest-type' // not a TPM2_Certify attestation
  | 'tpm:attest-signature' // not signed by the AK
  | 'tpm:attest-qualifying-data' // extraData is not sha256(csr)
  | 'tpm:attest-name' // certifies another object than the node key
  | 'tpm:challenge-unknown' // round two's nonce was never issued to tpm, or was used already (a replayed activation)
  | 'tpm:challenge-expired' // the challenge is older than its 60 seconds
  | 'tpm:challenge-csr' // the challenge was made for another CSR
  | 'tpm:challenge-binding' // the challenge was made for another EK or AK
  | 'tpm:activation-secret' // the secret is not the challenge's: the TPM did not activate it
  | 'tpm:site' // the named site is missing, archived or another tenant's
  | 'tpm:pool' // the named pool is missing, archived, runs no daemon, is in another site, or refuses tpm joins
  | 'tpm:role' // a tpm join asks for a role other than node
  | 'tpm:enrollment' // neither vendor-rooted nor listed, and the site's enrollment is off (the default)
  | 'tpm:queue-full' // a new enrollment, and the site's maxPendingRequests already wait (../../request-admission.ts)
  | 'tpm:rate-limited' // a new enrollment past the new-request rate limits, or round one past the address's challenge limit
  | 'tpm:request' // the EK's join request was rejected or expired, or approved for another CSR
  | 'tpm:reclaim'; // the EK's node is retired or in another site

/** A refused TPM check. Thrown inside this folder only; `verifyTpmAttestation` returns it as a value. */
export class TpmCheckFailure extends Error {
  constructor(
    readonly reason: TpmRefusalReason,
    readonly detail: string,
  ) {
    super(detail);
    this.name = 'TpmCheckFailure';
  }
}
