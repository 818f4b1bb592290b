import type { z } from 'zod';
import { apiKeyList, apiKeyRecord, createdApiKey } from '../protocol/api/api-key-schemas';
import { installScriptOutput } from '../protocol/api/daemon-schemas';
import { userDataOutput } from '../protocol/api/provisioning-schemas';
import { eventPage } from '../protocol/api/event-schemas';
import { deleteExpectedAnswer, expectedList, importExpectedAnswer, unmatchedAnswer } from '../protocol/api/expected-schemas';
import {
  approvedJoinRequests,
  joinRequestChange,
  joinRequestPage,
  joinRequestRecord,
  rejectedJoinRequests,
} from '../protocol/api/join-request-schemas';
import { nodeDetail, nodeList, revokeResult } from '../protocol/api/node-schemas';
import { nodeBulkResult } from '../protocol/api/node-bulk-schemas';
import { commandBatch, commandRecord, enqueueCommandResult } from '../protocol/api/command-schemas';
import {
  createdInvitation,
  invitationList,
  invitationRecord,
  operatorList,
  operatorRecord,
  operatorRemoved,
} from '../protocol/api/operator-schemas';
import { rotationStatusRecord, rotationStepRecord } from '../protocol/api/pki-rotation-schemas';
import { poolList, poolRecord } from '../protocol/api/pool-schemas';
import { staleNodesApplied, staleNodesPlan } from '../protocol/api/stale-nodes';
import { siteList, siteRecord } from '../protocol/api/site-schemas';
import { tenantList, tenantRecord } from '../protocol/api/tenant-schemas';
import { createdJoinToken, joinTokenPage, joinTokenRecord } from '../protocol/api/token-schemas';
import {
  deliveryList,
  deliveryRecord,
  webhookEventTypeList,
  webhookList,
  webhookRecord,
  webhookWithSecret,
} from '../protocol/api/webhook-schemas';
import { dryRunAnswer, ruleList, ruleRecord } from '../server/rules/schemas';

/**
 * Every API call the CLI makes, by the tRPC procedure it reaches: the REST route (method and path template,
 * as server/api/rest/routes.ts declares it) and the output schema the procedure declares, imported from the
 * same schema module the server uses. ApiClient takes a procedure name from this table and parses the answer
 * with its schema, so a command cannot call the API without one. `cli/api.test.ts` checks each entry against
 * the server's route table and the procedure's `.output()`, and that these schemas reach nothing but zod.
 */
const get = <const P extends string, S extends z.ZodType>(path: P, output: S) => ({ method: 'GET' as const, path, output });
const post = <const P extends string, S extends z.ZodType>(path: P, output: S) => ({ method: 'POST' as const, path, output });

const T = '/v1/tenants/{tenantId}';
const SITE = `${T}/sites/{siteId}` as const;
const POOL = `${T}/pools/{poolId}` as const;
const WEBHOOK = `${T}/webhooks/{webhookId}` as const;

export const API = {
  'tenants.list': get('/v1/tenants', tenantList),
  'tenants.create': post('/v1/tenants', tenantRecord),
  'sites.list': get(`${T}/sites`, siteList),
  'sites.create': post(`${T}/sites`, siteRecord),
  'sites.get': get(SITE, siteRecord),
  'sites.archive': post(`${SITE}/archive`, siteRecord),
  'sites.update': post(`${SITE}/update`, siteRecord),
  'pools.list': get(`${T}/pools`, poolList),
  'pools.create': post(`${T}/pools`, poolRecord),
  'pools.get': get(POOL, poolRecord),
  'pools.archive': post(`${POOL}/archive`, poolRecord),
  'pools.update': post(`${POOL}/update`, poolRecord),
  'pools.setStaleNodesPolicy': post(`${POOL}/stale-nodes/policy`, poolRecord),
  'pools.staleNodes': get(`${POOL}/stale-nodes`, staleNodesPlan),
  'pools.applyStaleNodes': post(`${POOL}/stale-nodes/apply`, staleNodesApplied),
  'joinTokens.list': get(`${POOL}/join-tokens`, joinTokenPage),
  'joinTokens.create': post(`${POOL}/join-tokens`, createdJoinToken),
  'joinTokens.revoke': post(`${POOL}/join-tokens/{tokenId}/revoke`, joinTokenRecord),
  'apiKeys.list': get(`${T}/api-keys`, apiKeyList),
  'apiKeys.create': post(`${T}/api-keys`, createdApiKey),
  'apiKeys.revoke': post(`${T}/api-keys/{apiKeyId}/revoke`, apiKeyRecord),
  'events.list': get(`${T}/events`, eventPage),
  'nodes.list': get(`${T}/nodes`, nodeList),
  'nodes.get': get(`${T}/nodes/{nodeId}`, nodeDetail),
  'nodes.adopt': post(`${T}/nodes/{nodeId}/adopt`, nodeDetail),
  'nodes.recheck': post(`${T}/nodes/{nodeId}/recheck`, nodeDetail),
  'nodes.cordon': post(`${T}/nodes/{nodeId}/cordon`, nodeDetail),
  'nodes.uncordon': post(`${T}/nodes/{nodeId}/uncordon`, nodeDetail),
  'nodes.setLabels': post(`${T}/nodes/{nodeId}/labels`, nodeDetail),
  'nodes.revokeIdentity': post(`${T}/nodes/{nodeId}/revoke-identity`, revokeResult),
  'nodes.delete': post(`${T}/nodes/{nodeId}/delete`, nodeDetail),
  'nodes.bulk': post(`${T}/nodes/bulk`, nodeBulkResult),
  'commands.enqueue': post(`${T}/commands`, enqueueCommandResult),
  'commands.get': get(`${T}/commands/{commandId}`, commandRecord),
  'commands.batch': get(`${T}/command-batches/{batchId}`, commandBatch),
  'discoveryTokens.create': post(`${SITE}/discovery-tokens`, createdJoinToken),
  'siteTokens.create': post(`${SITE}/site-tokens`, createdJoinToken),
  'approvalRules.list': get(`${SITE}/approval-rules`, ruleList),
  'approvalRules.create': post(`${SITE}/approval-rules`, ruleRecord),
  'approvalRules.dryRun': post(`${SITE}/approval-rules/dry-run`, dryRunAnswer),
  'approvalRules.update': post(`${SITE}/approval-rules/{ruleId}/update`, ruleRecord),
  'approvalRules.move': post(`${SITE}/approval-rules/{ruleId}/move`, ruleList),
  'approvalRules.delete': post(`${SITE}/approval-rules/{ruleId}/delete`, ruleRecord),
  'expectedMachines.list': get(`${SITE}/expected-machines`, expectedList),
  'expectedMachines.import': post(`${SITE}/expected-machines/import`, importExpectedAnswer),
  'expectedMachines.delete': post(`${SITE}/expected-machines/delete`, deleteExpectedAnswer),
  'expectedMachines.unmatched': get(`${SITE}/expected-machines/unmatched`, unmatchedAnswer),
  'joinRequests.list': get(`${POOL}/join-requests`, joinRequestPage),
  'joinRequests.approveMany': post(`${POOL}/join-requests/approve`, approvedJoinRequests),
  'joinRequests.rejectMany': post(`${POOL}/join-requests/reject`, rejectedJoinRequests),
  'joinRequests.get': get(`${POOL}/join-requests/{requestId}`, joinRequestRecord),
  'joinRequests.approve': post(`${POOL}/join-requests/{requestId}/approve`, joinRequestRecord),
  'joinRequests.reject': post(`${POOL}/join-requests/{requestId}/reject`, joinRequestRecord),
  'daemon.installScript': post(`${POOL}/install-script`, installScriptOutput),
  'provisioning.userData': post(`${T}/nodes/{nodeId}/user-data`, userDataOutput),
  'operators.list': get(`${T}/operators`, operatorList),
  'operators.setRole': post(`${T}/operators/{operatorId}/role`, operatorRecord),
  'operators.remove': post(`${T}/operators/{operatorId}/remove`, operatorRemoved),
  'invitations.list': get(`${T}/invitations`, invitationList),
  'invitations.create': post(`${T}/invitations`, createdInvitation),
  'invitations.revoke': post(`${T}/invitations/{invitationId}/revoke`, invitationRecord),
  'webhooks.list': get(`${T}/webhooks`, webhookList),
  'webhooks.create': post(`${T}/webhooks`, webhookWithSecret),
  'webhooks.eventTypes': get(`${T}/webhooks/event-types`, webhookEventTypeList),
  'webhooks.update': post(`${WEBHOOK}/update`, webhookRecord),
  'webhooks.delete': post(`${WEBHOOK}/delete`, webhookRecord),
  'webhooks.rotateSecret': post(`${WEBHOOK}/rotate-secret`, webhookWithSecret),
  'webhooks.test': post(`${WEBHOOK}/test`, deliveryRecord),
  'webhooks.deliveries': get(`${WEBHOOK}/deliveries`, deliveryList),
  'webhooks.redeliver': post(`${WEBHOOK}/deliveries/{deliveryId}/redeliver`, deliveryRecord),
  'pki.rotation.status': get('/v1/pki/rotation', rotationStatusRecord),
  'pki.rotation.prepare': post('/v1/pki/rotation/{kind}/prepare', rotationStepRecord),
  'pki.rotation.activate': post('/v1/pki/rotation/{kind}/activate', rotationStepRecord),
  'pki.rotation.retire': post('/v1/pki/rotation/{kind}/retire', rotationStepRecord),
} as const;

/** The tRPC subscriptions the CLI follows over server-sent events, with the schema of each event's data. */
export const SUBSCRIPTIONS = {
  'joinRequests.onChange': joinRequestChange,
} as const;

export type Procedure = keyof typeof API;
type ProcedureOf<M extends 'GET' | 'POST'> = { [P in Procedure]: (typeof API)[P]['method'] extends M ? P : never }[Procedure];
export type GetProcedure = ProcedureOf<'GET'>;
export type PostProcedure = ProcedureOf<'POST'>;
export type Subscription = keyof typeof SUBSCRIPTIONS;
/** What a procedure answers, once its output schema parsed it. */
export type Answer<P extends Procedure> = z.output<(typeof API)[P]['output']>;
export type SubscriptionEvent<S extends Subscription> = z.output<(typeof SUBSCRIPTIONS)[S]>;

/** Whether `path` (percent-encoded segments, no query) is an instance of `template` (`{name}`: one segment). */
export function pathFits(template: string, path: string): boolean {
  const pattern = template
    .split(/(\{[^}]+\})/)
    .map((part) => (part.startsWith('{') ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('');
  return new RegExp(`^${pattern}$`).test(path);
}
