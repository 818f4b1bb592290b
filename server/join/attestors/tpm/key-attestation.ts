import { z } from 'zod';
import { parseTpmPublic } from './public-area';
import { TpmCheckFailure, type TpmRefusalReason } from './reasons';
import { akStatementOf, checkCertifiedNodeKey } from './verify';
import { canonicalBase64, PUBLIC_AREA_MAX } from './wire';
import type { RenewalRequest, RenewalVerdict } from '../hooks';

/** The statement prefix of a leaf whose node key a TPM attestation key certified at its `tpm` join. */
const TPM_AK_STATEMENT_PREFIX = 'urn:bc:tpm-ak:';

/** Renew's `keyAttestation` (docs/tpm-attestation.md "Renewal with a TPM-held key"). */
const keyAttestationSchema = z.object({
  akPublic: canonicalBase64(PUBLIC_AREA_MAX),
  nodeKeyPublic: canonicalBase64(PUBLIC_AREA_MAX),
  certifyInfo: canonicalBase64(PUBLIC_AREA_MAX),
  certifySignature: canonicalBase64(PUBLIC_AREA_MAX),
});

/** The renewal refusal reason of a failed check of the join's table: `node-key-*` as is, `attest-*` as `key-attestation-*`. */
function renewReasonOf(reason: TpmRefusalReason): string {
  const bare = reason.slice('tpm:'.length);
  if (bare.startsWith('node-key-')) return bare;
  if (bare.startsWith('attest-')) return `key-attestation-${bare.slice('attest-'.length)}`;
  return 'key-attestation-malformed';
}

/**
 * Checks a renewal's key attestation for a leaf that names a TPM AK (`statement`, read from the presented leaf
 * that matched its node_certs row, never from the request): the AK sent must be the one the statement names
 * (its Name is a hash of its whole public area, so the attributes checked at the join hold), and that AK's
 * TPM2_Certify must certify the CSR's key, a TPM-made non-restricted P-256 signing key, over sha256(csr).
 * Refusals: `key-attestation-missing`, `key-attestation-malformed`, `key-attestation-ak`, the node key's
 * `node-key-*` and the attestation's `key-attestation-{magic,type,signature,qualifying-data,name}`.
 * Pure: only a renewal whose leaf carries the statement calls it.
 */
function checkKeyAttestation(
  raw: Record<string, unknown> | null,
  statement: string,
  csr: { csrSha256: string; spkiDer: Buffer },
): RenewalVerdict {
  if (!raw)
    return { ok: false, reason: 'key-attestation-missing', detail: 'the leaf names a TPM AK and the request carries no keyAttestation' };
  const parsed = keyAttestationSchema.safeParse(raw);
  if (!parsed.success) {
    const field = parsed.error.issues[0]?.path.join('.') || 'keyAttestation';
    return { ok: false, reason: 'key-attestation-malformed', detail: `keyAttestation field ${field} is malformed` };
  }
  const attestation = parsed.data;
  try {
    const ak = parseTpmPublic(attestation.akPublic, 'the AK public area');
    if (akStatementOf(ak) !== statement)
      return { ok: false, reason: 'key-attestation-ak', detail: `the AK is not the one the leaf names (${statement})` };
    const nodeKey = parseTpmPublic(attestation.nodeKeyPublic, 'the node key public area');
    checkCertifiedNodeKey(ak, nodeKey, attestation, csr.csrSha256, csr.spkiDer);
    return { ok: true };
  } catch (error) {
    if (error instanceof TpmCheckFailure) return { ok: false, reason: renewReasonOf(error.reason), detail: error.detail };
    throw error;
  }
}

/**
 * The tpm attestor's check of a renewal, or of an x509pop re-join (which renews an expired identity): a leaf whose
 * statements name a TPM AK renews only with that AK's key attestation of the new key (checkKeyAttestation); null
 * for any other leaf.
 */
export function checkTpmRenewal(renewal: RenewalRequest): RenewalVerdict | null {
  const statement = renewal.statements.find((uri) => uri.startsWith(TPM_AK_STATEMENT_PREFIX));
  return statement ? checkKeyAttestation(renewal.keyAttestation, statement, renewal.csr) : null;
}
