import { requirePermission, router } from '../trpc';
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
  create: requirePermission('compute:join-tokens:create')
    .input(createJoinTokenInput)
    .output(createdJoinToken)
    .mutation(({ ctx, input }) => createJoinToken(ctx.db, ctx.principal, input)),
  list: requirePermission('compute:join-tokens:read')
    .input(listJoinTokensInput)
    .output(joinTokenPage)
    .query(({ ctx, input }) => listJoinTokens(ctx.db, ctx.principal, input)),
  revoke: requirePermission('compute:join-tokens:revoke')
    .input(revokeJoinTokenInput)
    .output(joinTokenRecord)
    .mutation(({ ctx, input }) => revokeJoinToken(ctx.db, ctx.principal, input)),
});
