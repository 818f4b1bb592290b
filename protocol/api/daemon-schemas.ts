import { z } from 'zod';
import { idOf } from './resource-names';

export const hex256 = z.string().regex(/^[0-9a-f]{64}$/, 'a lowercase hex SHA-256');
const pin = z.string().regex(/^sha256\/[A-Za-z0-9+/]{43}=$/, 'a pin: sha256/ + base64 of a SHA-256');
// An origin only: the script appends the base path and the download path itself. A host is a DNS name, an IPv4
// address or an IPv6 address in brackets (`https://[fd00::1]:8443`; no zone id), written as the URL parser
// writes it (so `[FD00:0::1]` becomes `[fd00::1]`).
export const origin = z
  .string()
  .url()
  .refine(
    (value) => /^https?:\/\/(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?\/?$/.test(value),
    'an http(s) origin with no path, query or credentials',
  )
  .transform((value) => new URL(value).origin);

export const installScriptInput = z
  .strictObject({
    tenantId: idOf('tnt'),
    poolId: idOf('pool'),
    /** Defaults to the pool's site; when given it must be the pool's. */
    siteId: idOf('site').optional(),
    gatewayUrl: origin,
    baseUrl: origin,
    bcdVersion: z
      .string()
      .regex(/^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?$/)
      .optional(),
    /** Digests per arch; when absent, taken from the SHA256SUMS of this server's build of that version. */
    sha256: z.strictObject({ amd64: hex256.optional(), arm64: hex256.optional() }).optional(),
    /** Instead of sha256: the digests of a signed release manifest at this URL, trusted through releasePins. */
    releaseManifestUrl: z.string().url().optional(),
    /** Pins of the release key (`sha256/` + base64); several so that a key rotation can list both keys. */
    releasePins: z.array(pin).min(1).max(8).optional(),
  })
  .superRefine((value, ctx) => {
    if (value.releaseManifestUrl && value.sha256) {
      ctx.addIssue({ code: 'custom', path: ['releaseManifestUrl'], message: 'releaseManifestUrl and sha256 are exclusive: pass one' });
    }
    if (Boolean(value.releaseManifestUrl) !== Boolean(value.releasePins)) {
      const path = value.releaseManifestUrl ? 'releasePins' : 'releaseManifestUrl';
      ctx.addIssue({ code: 'custom', path: [path], message: 'releaseManifestUrl and releasePins go together' });
    }
  });
export type InstallScriptInput = z.infer<typeof installScriptInput>;

export const installScriptOutput = z.object({
  filename: z.string(),
  script: z.string(),
  bcdVersion: z.string(),
  sha256: z.object({ amd64: z.string().optional(), arm64: z.string().optional() }),
});
