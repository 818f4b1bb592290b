import { router } from '../trpc';
import { domainMutation, domainQuery } from '../domain-procedure';
import { createJoinToken, listJoinTokens, revokeJoinToken } from '../../tokens/join-tokens';
import {
  createdJoinToken,
  createJoinTokenInput,
  joinTokenPage,
  joinTokenRecord,
  listJoinTokensInput,
  revokeJoinTokenInput,
} from '../../../protocol/api/token-schemas';

/** Join tokens of a pool. The strict output schemas are what keep a secret's hash out of every answer. */
export const joinTokensRouter = router({
  create: domainMutation('compute:join-tokens:create', createJoinTokenInput, createdJoinToken, createJoinToken),
  list: domainQuery('compute:join-tokens:read', listJoinTokensInput, joinTokenPage, listJoinTokens),
  revoke: domainMutation('compute:join-tokens:revoke', revokeJoinTokenInput, joinTokenRecord, revokeJoinToken),
});
