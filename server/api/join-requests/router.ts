import { requirePermission, router } from '../trpc';
import { approveJoinRequest, approveJoinRequests, rejectJoinRequest, rejectJoinRequests } from '../../requests/decisions';
import { getJoinRequest, listJoinRequests } from '../../requests/list';
import {
  approvedJoinRequests,
  approveJoinRequestInput,
  approveJoinRequestsInput,
  getJoinRequestInput,
  joinRequestPage,
  joinRequestRecord,
  listJoinRequestsInput,
  rejectJoinRequestInput,
  rejectJoinRequestsInput,
  rejectedJoinRequests,
} from '../../../protocol/api/join-request-schemas';
import { onJoinRequestChange } from './on-change';

/** Join requests of a pool (joining.md "Join requests and approvals"), decided on the pool: read like join tokens, decided as `compute:join-requests:decide` (approvers, operators, admins). */
export const joinRequestsRouter = router({
  list: requirePermission('compute:join-tokens:read')
    .input(listJoinRequestsInput)
    .output(joinRequestPage)
    .query(({ ctx, input }) => listJoinRequests(ctx.db, ctx.principal, input)),
  get: requirePermission('compute:join-tokens:read')
    .input(getJoinRequestInput)
    .output(joinRequestRecord)
    .query(({ ctx, input }) => getJoinRequest(ctx.db, ctx.principal, input)),
  approve: requirePermission('compute:join-requests:decide')
    .input(approveJoinRequestInput)
    .output(joinRequestRecord)
    .mutation(({ ctx, input }) => approveJoinRequest(ctx.db, ctx.principal, input)),
  approveMany: requirePermission('compute:join-requests:decide')
    .input(approveJoinRequestsInput)
    .output(approvedJoinRequests)
    .mutation(({ ctx, input }) => approveJoinRequests(ctx.db, ctx.principal, input)),
  reject: requirePermission('compute:join-requests:decide')
    .input(rejectJoinRequestInput)
    .output(joinRequestRecord)
    .mutation(({ ctx, input }) => rejectJoinRequest(ctx.db, ctx.principal, input)),
  rejectMany: requirePermission('compute:join-requests:decide')
    .input(rejectJoinRequestsInput)
    .output(rejectedJoinRequests)
    .mutation(({ ctx, input }) => rejectJoinRequests(ctx.db, ctx.principal, input)),
  onChange: onJoinRequestChange,
});
