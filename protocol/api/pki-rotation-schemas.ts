import { z } from 'zod';

/**
 * The five keys a fleet trusts, as the API, the CLI's `<key>` and the console name them. The same list as
 * `PKI_KEY_KINDS` of server/pki/rotation/kinds.ts (a test keeps them equal): schemas here reach nothing but zod,
 * so the CLI and the console's client code can use them.
 */
export const PKI_KEY_KIND_NAMES = ['serving-ca', 'join-signing', 'join-encryption', 'node-ca', 'command-signing'] as const;
export type PkiKeyKindName = (typeof PKI_KEY_KIND_NAMES)[number];

/** How each key is named to an operator (equal to `PKI_KEY_LABELS`). */
export const PKI_KEY_KIND_LABELS: Record<PkiKeyKindName, string> = {
  'serving-ca': 'Serving CA',
  'join-signing': 'Join-signing key',
  'join-encryption': 'Join-encryption key',
  'node-ca': 'Node CA',
  'command-signing': 'Command-signing key',
};

/** Caps on an imported key: a PKCS#8 PEM of the largest key we take is ~3.3 KB, a certificate chain a few KB. */
export const IMPORTED_KEY_LIMITS = { privateKeyPemChars: 16_384, certificatePemChars: 65_536 } as const;
/** The REST body cap of `prepare` (an imported key and its certificate, with room for JSON escaping). */
export const PREPARE_MAX_BODY_BYTES = 256 * 1024;

const kind = z.enum(PKI_KEY_KIND_NAMES, { error: `must be one of ${PKI_KEY_KIND_NAMES.join(', ')}` });
const pem = (label: RegExp, what: string, max: number) =>
  z.string().max(max, `must be at most ${max} characters`).regex(label, `must be a PEM ${what}`);

/** A key brought from outside (a CA kept offline): its PKCS#8 private key and, except for join-encryption, certificate. */
const importedKey = z.strictObject({
  privateKeyPem: pem(/-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----/, 'private key', IMPORTED_KEY_LIMITS.privateKeyPemChars),
  certificatePem: pem(/-----BEGIN CERTIFICATE-----/, 'certificate', IMPORTED_KEY_LIMITS.certificatePemChars).optional(),
});

export const rotationStatusInput = z.strictObject({}).optional();
export const prepareRotationInput = z.strictObject({ kind, from: importedKey.optional() });
export const activateRotationInput = z.strictObject({ kind });
/** Retiring takes `force` only with a `reason` (audited), and a `reason` only with `force`. */
export const retireRotationInput = z
  .strictObject({
    kind,
    force: z.boolean().optional(),
    reason: z
      .string()
      .trim()
      .min(1, 'must not be empty')
      .max(500)
      .regex(/^[^\p{Cc}]*$/u, 'must be printable')
      .optional(),
  })
  .superRefine((input, ctx) => {
    if (input.force && !input.reason) ctx.addIssue({ code: 'custom', path: ['reason'], message: 'force needs a reason (it is audited)' });
    if (input.reason && !input.force) ctx.addIssue({ code: 'custom', path: ['force'], message: 'a reason is recorded only with force' });
  });

const count = z.number().int().min(0);

/** One key's rotation state (`pki.rotation.status`, and in each step's answer). */
const keyRotationStatus = z.object({
  kind,
  phase: z.enum(['idle', 'prepared', 'active']),
  since: z.string(),
  currentPin: z.string(),
  otherPin: z.string().nullable(),
  nextStep: z.enum(['prepare', 'activate', 'retire']),
  readiness: z.object({ trustVersion: count, nodesReady: count, nodesTotal: count }),
  liveCertificatesOfPrevious: count.optional(),
  gatewaysOnPrevious: count.optional(),
  lastRetiredAt: z.string().nullable(),
});
export type KeyRotationStatusRecord = z.infer<typeof keyRotationStatus>;

export const rotationStatusRecord = z.object({ trustVersion: count, keys: z.array(keyRotationStatus) });
export type RotationStatusRecord = z.infer<typeof rotationStatusRecord>;

export const rotationStepRecord = z.object({
  kind,
  phase: z.enum(['prepared', 'active', 'retired']),
  trustVersion: count,
  status: keyRotationStatus,
});
