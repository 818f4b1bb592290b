import { router } from '../trpc';
import { domainMutation, domainQuery } from '../domain-procedure';
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
  list: domainQuery('compute:join-tokens:read', listJoinRequestsInput, joinRequestPage, listJoinRequests),
  get: domainQuery('compute:join-tokens:read', getJoinRequestInput, joinRequestRecord, getJoinRequest),
  approve: domainMutation('compute:join-requests:decide', approveJoinRequestInput, joinRequestRecord, approveJoinRequest),
  approveMany: domainMutation('compute:join-requests:decide', approveJoinRequestsInput, approvedJoinRequests, approveJoinRequests),
  reject: domainMutation('compute:join-requests:decide', rejectJoinRequestInput, joinRequestRecord, rejectJoinRequest),
  rejectMany: domainMutation('compute:join-requests:decide', rejectJoinRequestsInput, rejectedJoinRequests, rejectJoinRequests),
  onChange: onJoinRequestChange,
});
