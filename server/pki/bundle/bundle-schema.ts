import { z } from 'zod';
import { DomainError } from '../../../protocol/errors';
import type { PkiBundle } from './bundle';
import { PKI_KEY_KINDS } from '../rotation/kinds';

const pem = (label: string) => z.string().regex(new RegExp(`^-----BEGIN ${label}-----\\n[A-Za-z0-9+/=\\n]+-----END ${label}-----\\n?$`));
const certifiedKey = z.object({ certificatePem: pem('CERTIFICATE'), privateKeyPem: pem('PRIVATE KEY') });

const rotatingKey = z.object({
  phase: z.enum(['prepared', 'active']),
  certificatePem: pem('CERTIFICATE').optional(),
  privateKeyPem: pem('PRIVATE KEY'),
  crossCertificatePem: pem('CERTIFICATE').optional(),
});

/** The stored shape of a {@link PkiBundle}, version 1. Only shapes: keys and certificates are parsed on use. */
const pkiBundleSchema = z.object({
  version: z.literal(1),
  trustDomain: z.string().min(1),
  createdAt: z.iso.datetime(),
  nodeCa: certifiedKey,
  servingCa: certifiedKey,
  commandCa: certifiedKey,
  commandTrustBundle: z.array(z.string().regex(/^[A-Za-z0-9+/]+={0,2}$/)).min(1),
  signingKey: certifiedKey,
  encryptionKey: z.object({ privateKeyPem: pem('PRIVATE KEY') }),
  trustVersion: z.number().int().min(1).optional(),
  rotations: z.partialRecord(z.enum(PKI_KEY_KINDS), rotatingKey).optional(),
}) satisfies z.ZodType<PkiBundle>;

/**
 * Checks that `value` is a version 1 PKI bundle.
 *
 * @throws DomainError `INVALID_CONFIG` naming the first bad field's path (never its value, which may be a key).
 */
export function parsePkiBundle(value: unknown): PkiBundle {
  const result = pkiBundleSchema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const where = issue && issue.path.length > 0 ? issue.path.join('.') : 'the bundle';
  throw new DomainError('INVALID_CONFIG', `The PKI bundle is not a valid version 1 bundle (check ${where})`);
}
