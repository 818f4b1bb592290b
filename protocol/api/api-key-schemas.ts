import { z } from 'zod';
import { ROLES } from './permissions';

/** An API key as the API answers it (never its secret, but for `createdApiKey` once). */
export const apiKeyRecord = z.object({
  id: z.string(),
  tenantId: z.string(),
  role: z.enum(ROLES),
  name: z.string(),
  createdBy: z.string(),
  /** The creating operator's email, when an operator created it (else null: an API key, the CLI on the server). */
  createdByEmail: z.string().nullable(),
  /** The creating operator's name, else email; null when no operator created it. */
  createdByName: z.string().nullable(),
  createdAt: z.string(),
  revokedAt: z.string().nullable(),
  expiresAt: z.string().nullable(),
  lastUsedAt: z.string().nullable(),
});
export type ApiKeyRecord = z.infer<typeof apiKeyRecord>;

/** The answer of `apiKeys.create`: the record and the key, shown this once. */
export const createdApiKey = apiKeyRecord.extend({ key: z.string() });
export const apiKeyList = z.object({ items: z.array(apiKeyRecord) });
