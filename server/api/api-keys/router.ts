import { z } from 'zod';
import { requirePermission, router } from '../trpc';
import {
  apiKeyRecord,
  createApiKey,
  createApiKeyInput,
  listApiKeys,
  listApiKeysInput,
  revokeApiKey,
  revokeApiKeyInput,
} from '../../api-keys/api-keys';

export const apiKeysRouter = router({
  create: requirePermission('compute:api-keys:manage')
    .input(createApiKeyInput)
    .output(apiKeyRecord.extend({ key: z.string() }))
    .mutation(({ ctx, input }) => createApiKey(ctx.db, ctx.principal, input)),
  list: requirePermission('compute:api-keys:read')
    .input(listApiKeysInput)
    .output(z.object({ items: z.array(apiKeyRecord) }))
    .query(async ({ ctx, input }) => ({ items: await listApiKeys(ctx.db, ctx.principal, input) })),
  revoke: requirePermission('compute:api-keys:manage')
    .input(revokeApiKeyInput)
    .output(apiKeyRecord)
    .mutation(({ ctx, input }) => revokeApiKey(ctx.db, ctx.principal, input)),
});
