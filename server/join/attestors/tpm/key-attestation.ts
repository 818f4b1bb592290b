import { z } from 'zod';
import { parseTpmPublic } from './public-area';
import { TpmCheckFailure, type TpmRefusalReason } from './reasons';
import { akStatementOf, checkCertifiedNodeKey } from './verify';

/** The statement prefix of a leaf whose node key a TPM attestation key certified at its `tpm` join. */
export const TPM_AK_STATEMENT_PREFIX = 'urn:bc:tpm-ak:';

/** Standard base64 with padding, canonical, as the `tpm` join's attestation (server/join/attestors/tpm/wire.ts). */
const b64 = z
  .string()
  .max(1368)
  .regex(/^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/)
  .transform((text, ctx) => {
    const bytes = Buffer.from(text, 'base64');
    if (bytes.length === 0 || bytes.toString('base64') !== text) {
      ctx.addIssue({ code: 'custom', message: 'not canonical base64' });
      return z.NEVER;
    }
    return bytes;
  });

/** Renew's `keyAttestation` (docs/tpm-attestation.md "Renewal with a TPM-held key"). */
const keyAttestationSchema = z.object({ akPublic: b64, nodeKeyPublic: b64, certifyInfo: b64, certifySignature: b64 });

/** The renewal refusal reason of a failed check of the join's table: `node-key-*` as is, `attest-*` as `key-attestation-*`. */
function renewReasonOf(reason: TpmRefusalReason): string {
  const bare = reason.slice('tpm:'.length);
  if (bare.startsWith('node-key-')) return bare;
  if (bare.startsWith('attest-')) return `key-attestation-${bare.slice('attest-'.length)}`;
  return 'key-attestation-malformed';
}

type KeyAttestationVerdict = { ok: true } | { ok: false; reason: string; detail: string };

/**
 * Checks a renewal's key attestation for a leaf that names a TPM AK (`statement`, read from the presented leaf
 * that matched its node_certs row, never from the request): the AK sent must be the one the statement names
 * (its Name is a hash of its whole public area, so the attributes checked at the join hold), and that AK's
 * TPM2_Certify must certify the CSR's key, a TPM-made non-restricted P-256 signing key, over sha256(csr).
 * Refusals: `key-attestation-missing`, `key-attestation-malformed`, `key-attestation-ak`, the node key's
 * `node-key-*` and the attestation's `key-attestation-{magic,type,signature,qualifying-data,name}`.
 * Pure: only a renewal whose leaf carries the statement calls it.
 */
export function checkKeyAttestation(
  raw: Record<string, unknown> | null,
  statement: string,
  csr: { csrSha256: string; spkiDer: Buffer },
): KeyAttestationVerdict {
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
