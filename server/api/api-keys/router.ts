import { router } from '../trpc';
import { domainList, domainMutation } from '../domain-procedure';
import { createApiKey, createApiKeyInput, listApiKeys, listApiKeysInput, revokeApiKey, revokeApiKeyInput } from '../../api-keys/api-keys';
import { apiKeyList, apiKeyRecord, createdApiKey } from '../../../protocol/api/api-key-schemas';

export const apiKeysRouter = router({
  create: domainMutation('compute:api-keys:manage', createApiKeyInput, createdApiKey, createApiKey),
  list: domainList('compute:api-keys:read', listApiKeysInput, apiKeyList, listApiKeys),
  revoke: domainMutation('compute:api-keys:manage', revokeApiKeyInput, apiKeyRecord, revokeApiKey),
});
