import { z } from 'zod';
import { TpmCheckFailure } from './reasons';

/** Standard base64 with padding, canonical (re-encodes to itself), so one attestation has one spelling. */
export const canonicalBase64 = (maxBytes: number) =>
  z
    .string()
    .max(Math.ceil(maxBytes / 3) * 4)
    .regex(/^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/)
    .transform((text, ctx) => {
      const bytes = Buffer.from(text, 'base64');
      if (bytes.length === 0 || bytes.toString('base64') !== text) {
        ctx.addIssue({ code: 'custom', message: 'not canonical base64' });
        return z.NEVER;
      }
      return bytes;
    });

// Bounds well above what a TPM makes: an RSA-2048 TPMT_PUBLIC is 280 bytes, a vendor EK certificate 1-2 KiB.
export const PUBLIC_AREA_MAX = 1024;
const CERTIFICATE_MAX = 4096;

/**
 * The `attestation` of a `tpm` join (docs/tpm-attestation.md): round one carries the EK (its certificate
 * when the TPM has one, and always its public area, which MakeCredential needs), the AK's and the node key's
 * public areas, and TPM2_Certify of the node key by the AK; round two adds the activated secret.
 */
const tpmAttestationSchema = z.object({
  ekPublic: canonicalBase64(PUBLIC_AREA_MAX),
  ekCertificate: canonicalBase64(CERTIFICATE_MAX).optional(),
  ekIntermediates: z.array(canonicalBase64(CERTIFICATE_MAX)).max(4).optional(),
  akPublic: canonicalBase64(PUBLIC_AREA_MAX),
  nodeKeyPublic: canonicalBase64(PUBLIC_AREA_MAX),
  certifyInfo: canonicalBase64(PUBLIC_AREA_MAX),
  certifySignature: canonicalBase64(PUBLIC_AREA_MAX),
  /** The site the machine joins (bcd's config `site`): a tokenless join names it. */
  siteId: z.string().regex(/^site_[A-Za-z0-9_-]{1,64}$/),
  /** The pool, when the install names one; without it an admitted EK still waits for an operator to pick one. */
  poolId: z
    .string()
    .regex(/^pool_[A-Za-z0-9_-]{1,64}$/)
    .optional(),
  activation: z
    .object({
      /** Round one's nonce (protocol.md "Challenge rounds"): 32 bytes, b64url. */
      nonce: z.string().regex(/^[A-Za-z0-9_-]{43}$/),
      secret: canonicalBase64(64),
    })
    .optional(),
});

export type TpmAttestationWire = z.output<typeof tpmAttestationSchema>;

/**
 * Parses a `tpm` join's `attestation`. Unknown fields are ignored, as everywhere on the agent wire.
 *
 * @throws TpmCheckFailure `tpm:attestation` when a field is missing, too long or not canonical base64.
 */
export function parseTpmAttestation(raw: unknown): TpmAttestationWire {
  const parsed = tpmAttestationSchema.safeParse(raw);
  if (!parsed.success) {
    const path = parsed.error.issues[0]?.path.join('.') || 'attestation';
    throw new TpmCheckFailure('tpm:attestation', `attestation field ${path} is malformed`);
  }
  return parsed.data;
}
