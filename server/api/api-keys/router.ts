import { requirePermission, router } from '../trpc';
import { createApiKey, createApiKeyInput, listApiKeys, listApiKeysInput, revokeApiKey, revokeApiKeyInput } from '../../api-keys/api-keys';
import { apiKeyList, apiKeyRecord, createdApiKey } from '../../../protocol/api/api-key-schemas';

export const apiKeysRouter = router({
  create: requirePermission('compute:api-keys:manage')
    .input(createApiKeyInput)
    .output(createdApiKey)
    .mutation(({ ctx, input }) => createApiKey(ctx.db, ctx.principal, input)),
  list: requirePermission('compute:api-keys:read')
    .input(listApiKeysInput)
    .output(apiKeyList)
    .query(async ({ ctx, input }) => ({ items: await listApiKeys(ctx.db, ctx.principal, input) })),
  revoke: requirePermission('compute:api-keys:manage')
    .input(revokeApiKeyInput)
    .output(apiKeyRecord)
    .mutation(({ ctx, input }) => revokeApiKey(ctx.db, ctx.principal, input)),
});
