import { z } from 'zod';
import { pendingTtlSecondsSchema } from './discovery-settings';

/** An EK hash: the lowercase hex SHA-256 of the EK's DER SubjectPublicKeyInfo (docs/tpm-attestation.md). */
export const ekHashSchema = z
  .string()
  .transform((value) => value.trim().toLowerCase())
  .pipe(z.string().regex(/^[0-9a-f]{64}$/, 'must be the hex SHA-256 of the EK public key (64 hex digits)'));

/** The most EK hashes one site or pool lists. */
export const MAX_EK_ALLOW_LIST = 10_000;

/**
 * A site's `tpm` settings; absent keys take the defaults: `enrollment` false (an activated TPM whose EK neither
 * chains to a vendor root nor is listed is refused, `tpm:enrollment`, until the site turns enrollment on: a
 * tokenless join names only a site id, which every node certificate of the site carries), requests wait 86,400
 * seconds, nothing listed. A vendor-rooted or listed EK joins whatever `enrollment` says.
 */
export const tpmSiteSettingsSchema = z.strictObject({
  enrollment: z.boolean().default(false),
  pendingTtlSeconds: pendingTtlSecondsSchema,
  ekAllowList: z
    .array(z.string().regex(/^[0-9a-f]{64}$/))
    .max(MAX_EK_ALLOW_LIST)
    .default([]),
});
export type TpmSiteSettings = z.output<typeof tpmSiteSettingsSchema>;

/** The settings stored on a site row, defaults filled in; an unreadable value reads as the defaults. */
export function tpmSiteSettings(stored: unknown): TpmSiteSettings {
  const parsed = tpmSiteSettingsSchema.safeParse(stored ?? {});
  return parsed.success ? parsed.data : tpmSiteSettingsSchema.parse({});
}

/** A pool's `policy.tpm`: EK hashes admitted into this pool without an operator. */
export const tpmPoolPolicySchema = z.strictObject({
  ekAllowList: z.array(ekHashSchema).max(MAX_EK_ALLOW_LIST).optional(),
});

/** `list` with `add` appended and `remove` taken out, each hash once, in first-seen order. */
export function editAllowList(list: readonly string[], add: readonly string[] = [], remove: readonly string[] = []): string[] {
  const removed = new Set(remove);
  return [...new Set([...list, ...add])].filter((hash) => !removed.has(hash));
}
