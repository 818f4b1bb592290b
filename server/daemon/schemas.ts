import { z } from 'zod';
import { idOf } from '../names';

const hex256 = z.string().regex(/^[0-9a-f]{64}$/, 'a lowercase hex SHA-256');
// An origin only: the script appends the base path and the download path itself.
const origin = z
  .string()
  .url()
  .refine((value) => /^https?:\/\/[A-Za-z0-9.:[\]-]+\/?$/.test(value), 'an http(s) origin with no path, query or credentials')
  .transform((value) => value.replace(/\/+$/, ''));

export const installScriptInput = z.strictObject({
  tenantId: idOf('tnt'),
  poolId: idOf('pool'),
  /** Defaults to the pool's site; when given it must be the pool's. */
  siteId: idOf('site').optional(),
  gatewayUrl: origin,
  baseUrl: origin,
  bcdVersion: z.string().regex(/^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?$/).optional(),
  /** Digests per arch; when absent, taken from the SHA256SUMS of this server's build of that version. */
  sha256: z.strictObject({ amd64: hex256.optional(), arm64: hex256.optional() }).optional(),
});
export type InstallScriptInput = z.infer<typeof installScriptInput>;

export const installScriptOutput = z.object({
  filename: z.string(),
  script: z.string(),
  bcdVersion: z.string(),
  sha256: z.object({ amd64: z.string().optional(), arm64: z.string().optional() }),
});
