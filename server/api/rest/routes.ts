import type { AnyTRPCMutationProcedure, AnyTRPCProcedure, AnyTRPCQueryProcedure } from '@trpc/server';
import type { AppRouter } from '../root';
import { PREPARE_MAX_BODY_BYTES } from '../../../protocol/api/pki-rotation-schemas';

/**
 * The REST surface for automation: each route is an adapter over one tRPC procedure, so both APIs share
 * validation, authorization and the error model. Path parameters and the query (GET) or JSON body
 * (POST) are merged into the procedure's input.
 */
interface RestRoute {
  method: 'GET' | 'POST';
  path: string;
  procedure: string;
  summary: string;
  /** The largest request body the route reads, in bytes; 1 MiB (DEFAULT_MAX_BODY_BYTES) when unset. */
  maxBodyBytes?: number;
}

type Procedures = AppRouter['_def']['record'];
/** Every procedure of a router record as its dotted path (`group.name`, or deeper: `pki.rotation.status`). */
type PathsOf<R, Prefix extends string = ''> = {
  [K in keyof R & string]: R[K] extends AnyTRPCProcedure ? `${Prefix}${K}` : PathsOf<R[K], `${Prefix}${K}.`>;
}[keyof R & string];
type ProcedurePath = PathsOf<Procedures>;
type ProcedureIn<R, P extends string> = P extends `${infer H}.${infer Rest}`
  ? H extends keyof R
    ? ProcedureIn<R[H], Rest>
    : never
  : P extends keyof R
    ? R[P]
    : never;
type ProcedureAt<P extends ProcedurePath> = ProcedureIn<Procedures, P>;
/** A query is read with GET, a mutation with POST; a subscription has no REST route. */
type MethodOf<P extends ProcedurePath> =
  ProcedureAt<P> extends AnyTRPCQueryProcedure ? 'GET' : ProcedureAt<P> extends AnyTRPCMutationProcedure ? 'POST' : never;
type InputOf<P extends ProcedurePath> = ProcedureAt<P>['_def']['$types']['input'];
/** The `{name}` parameters of a path. */
type PathParams<Path extends string> = Path extends `${string}{${infer Name}}${infer Rest}` ? Name | PathParams<Rest> : never;
/** The parameters that are not a field of the procedure's input taking text (the handler merges them in). */
type StrayParams<P extends ProcedurePath, Path extends string> = Exclude<
  PathParams<Path>,
  { [K in keyof InputOf<P> & string]: [Extract<InputOf<P>[K], string>] extends [never] ? never : K }[keyof InputOf<P> & string]
>;

/** A route as written: its procedure must exist, and its method be the procedure's. */
type RouteSpec = { [P in ProcedurePath]: Omit<RestRoute, 'method' | 'procedure'> & { method: MethodOf<P>; procedure: P } }[ProcedurePath];
/** Each route's path, or the message naming its parameters that its procedure's input lacks. */
type CheckedPaths<R extends readonly RouteSpec[]> = {
  [I in keyof R]: R[I] extends { procedure: infer P extends ProcedurePath; path: infer Path extends string }
    ? [StrayParams<P, Path>] extends [never]
      ? R[I]
      : R[I] & { error: `${Path}: {${StrayParams<P, Path>}} is not a text field of ${P}'s input` }
    : R[I];
};

/** The route table, checked by `tsc` against the router (routes.test.ts shows what fails to compile). */
export function restRoutes<const R extends readonly RouteSpec[]>(routes: R & CheckedPaths<R>): readonly RestRoute[] {
  return routes;
}

const T = '/v1/tenants/{tenantId}';

export const REST_ROUTES = restRoutes([
  { method: 'GET', path: '/v1/tenants', procedure: 'tenants.list', summary: 'List the tenants you can see' },
  { method: 'POST', path: '/v1/tenants', procedure: 'tenants.create', summary: 'Create a tenant' },
  { method: 'GET', path: `${T}/sites`, procedure: 'sites.list', summary: "List a tenant's sites" },
  { method: 'POST', path: `${T}/sites`, procedure: 'sites.create', summary: 'Create a site' },
  { method: 'GET', path: `${T}/sites/{siteId}`, procedure: 'sites.get', summary: 'Get a site' },
  { method: 'POST', path: `${T}/sites/{siteId}/archive`, procedure: 'sites.archive', summary: 'Archive a site' },
  { method: 'GET', path: `${T}/pools`, procedure: 'pools.list', summary: "List a tenant's pools" },
  { method: 'POST', path: `${T}/pools`, procedure: 'pools.create', summary: 'Create a pool' },
  { method: 'GET', path: `${T}/pools/{poolId}`, procedure: 'pools.get', summary: 'Get a pool' },
  { method: 'POST', path: `${T}/pools/{poolId}/archive`, procedure: 'pools.archive', summary: 'Archive a pool' },
  { method: 'POST', path: `${T}/pools/{poolId}/update`, procedure: 'pools.update', summary: "Edit a pool's TPM EK allow-list" },
  {
    method: 'POST',
    path: `${T}/pools/{poolId}/stale-nodes/policy`,
    procedure: 'pools.setStaleNodesPolicy',
    summary: "Set or remove a pool's stale-node policy",
  },
  {
    method: 'GET',
    path: `${T}/pools/{poolId}/stale-nodes`,
    procedure: 'pools.staleNodes',
    summary: "What a pool's stale-node policy would do now (a dry run)",
  },
  {
    method: 'POST',
    path: `${T}/pools/{poolId}/stale-nodes/apply`,
    procedure: 'pools.applyStaleNodes',
    summary: "Apply a pool's stale-node policy now",
  },
  {
    method: 'GET',
    path: `${T}/pools/{poolId}/join-tokens`,
    procedure: 'joinTokens.list',
    summary: "List a pool's join tokens (never their secrets)",
  },
  {
    method: 'POST',
    path: `${T}/pools/{poolId}/join-tokens`,
    procedure: 'joinTokens.create',
    summary: 'Create a join token (the token is shown once)',
  },
  {
    method: 'POST',
    path: `${T}/pools/{poolId}/join-tokens/{tokenId}/revoke`,
    procedure: 'joinTokens.revoke',
    summary: 'Revoke a join token',
  },
  { method: 'GET', path: `${T}/api-keys`, procedure: 'apiKeys.list', summary: "List a tenant's API keys" },
  { method: 'POST', path: `${T}/api-keys`, procedure: 'apiKeys.create', summary: 'Create an API key (shown once)' },
  { method: 'POST', path: `${T}/api-keys/{apiKeyId}/revoke`, procedure: 'apiKeys.revoke', summary: 'Revoke an API key' },
  { method: 'GET', path: `${T}/events`, procedure: 'events.list', summary: "List a tenant's events" },
  { method: 'GET', path: `${T}/audit`, procedure: 'audit.list', summary: "List a tenant's audit log" },
  { method: 'GET', path: `${T}/audit/facets`, procedure: 'audit.facets', summary: "The actions and actors of a tenant's audit log" },
  {
    method: 'GET',
    path: `${T}/nodes`,
    procedure: 'nodes.list',
    summary: "List a tenant's nodes: search and filters as query parameters (labels repeated), exact total, paged",
  },
  {
    method: 'GET',
    path: `${T}/nodes/{nodeId}`,
    procedure: 'nodes.get',
    summary: 'Get a node: state, trust, identity, current certificate and certificate history, conditions',
  },
  {
    method: 'POST',
    path: `${T}/nodes/bulk`,
    procedure: 'nodes.bulk',
    summary: 'Cordon, uncordon, revoke or label the named nodes, or a page of the nodes a filter selects',
  },
  { method: 'POST', path: `${T}/nodes/{nodeId}/adopt`, procedure: 'nodes.adopt', summary: 'Adopt a node that is still adopting' },
  {
    method: 'POST',
    path: `${T}/nodes/{nodeId}/recheck`,
    procedure: 'nodes.recheck',
    summary: "Run the pool's acceptance checks on an adopting node again (a pass adopts it)",
  },
  { method: 'POST', path: `${T}/nodes/{nodeId}/cordon`, procedure: 'nodes.cordon', summary: 'Cordon a node' },
  { method: 'POST', path: `${T}/nodes/{nodeId}/uncordon`, procedure: 'nodes.uncordon', summary: 'Uncordon a node' },
  {
    method: 'POST',
    path: `${T}/nodes/{nodeId}/labels`,
    procedure: 'nodes.setLabels',
    summary: "Set, override or remove a node's labels (set, remove, replace)",
  },
  {
    method: 'POST',
    path: `${T}/nodes/{nodeId}/revoke-identity`,
    procedure: 'nodes.revokeIdentity',
    summary: 'Revoke every certificate of a node (it must join again)',
  },
  {
    method: 'POST',
    path: `${T}/nodes/{nodeId}/delete`,
    procedure: 'nodes.delete',
    summary: 'Delete a cordoned node (frees its hardware key and MACs)',
  },
  { method: 'GET', path: `${T}/nodes/{nodeId}/commands`, procedure: 'commands.list', summary: "A node's commands, newest first, paged" },
  {
    method: 'POST',
    path: `${T}/commands`,
    procedure: 'commands.enqueue',
    summary: 'Queue a command to one node (`nodeId`), or to every node a filter or pool selects (`matching`: a batch with progress)',
  },
  {
    method: 'POST',
    path: `${T}/nodes/{nodeId}/commands`,
    procedure: 'commands.enqueue',
    summary: 'Queue a command (bcd.doctor, bcd.renew, trust.refresh) to a node; sent on its session',
  },
  { method: 'GET', path: `${T}/commands/{commandId}`, procedure: 'commands.get', summary: 'Get a command: state, times, result' },
  {
    method: 'GET',
    path: `${T}/command-batches/{batchId}`,
    procedure: 'commands.batch',
    summary: "A batch's progress: its commands counted by state",
  },
  { method: 'POST', path: `${T}/sites/{siteId}/update`, procedure: 'sites.update', summary: "Update a site's discovery and TPM settings" },
  {
    method: 'POST',
    path: `${T}/sites/{siteId}/discovery-tokens`,
    procedure: 'discoveryTokens.create',
    summary: 'Create a discovery token for one PXE lease (shown once)',
  },
  { method: 'POST', path: `${T}/sites/{siteId}/site-tokens`, procedure: 'siteTokens.create', summary: 'Create a site token (shown once)' },
  {
    method: 'GET',
    path: `${T}/sites/{siteId}/approval-rules`,
    procedure: 'approvalRules.list',
    summary: "List a site's approval rules, in the order they decide",
  },
  { method: 'POST', path: `${T}/sites/{siteId}/approval-rules`, procedure: 'approvalRules.create', summary: 'Append an approval rule' },
  {
    method: 'POST',
    path: `${T}/sites/{siteId}/approval-rules/dry-run`,
    procedure: 'approvalRules.dryRun',
    summary: 'What a draft rule would decide among recent requests (saves nothing)',
  },
  {
    method: 'POST',
    path: `${T}/sites/{siteId}/approval-rules/{ruleId}/update`,
    procedure: 'approvalRules.update',
    summary: 'Replace an approval rule',
  },
  {
    method: 'POST',
    path: `${T}/sites/{siteId}/approval-rules/{ruleId}/move`,
    procedure: 'approvalRules.move',
    summary: 'Move an approval rule to a position',
  },
  {
    method: 'POST',
    path: `${T}/sites/{siteId}/approval-rules/{ruleId}/delete`,
    procedure: 'approvalRules.delete',
    summary: 'Delete an approval rule',
  },
  {
    method: 'GET',
    path: `${T}/sites/{siteId}/expected-machines`,
    procedure: 'expectedMachines.list',
    summary: "List a site's expected machines (waiting by default)",
  },
  {
    method: 'POST',
    path: `${T}/sites/{siteId}/expected-machines/import`,
    procedure: 'expectedMachines.import',
    summary: 'Import expected machines from CSV or JSON (or preview)',
    maxBodyBytes: 4 * 1024 * 1024,
  },
  {
    method: 'POST',
    path: `${T}/sites/{siteId}/expected-machines/delete`,
    procedure: 'expectedMachines.delete',
    summary: 'Delete expected machines that have not arrived',
  },
  {
    method: 'GET',
    path: `${T}/sites/{siteId}/expected-machines/unmatched`,
    procedure: 'expectedMachines.unmatched',
    summary: 'Discovery arrivals of the last 7 days that no expected machine admitted',
  },
  {
    method: 'GET',
    path: `${T}/pools/{poolId}/join-requests`,
    procedure: 'joinRequests.list',
    summary: "List a pool's join requests (pending by default)",
  },
  {
    method: 'POST',
    path: `${T}/pools/{poolId}/join-requests/approve`,
    procedure: 'joinRequests.approveMany',
    summary: 'Approve a page of join requests',
  },
  {
    method: 'POST',
    path: `${T}/pools/{poolId}/join-requests/reject`,
    procedure: 'joinRequests.rejectMany',
    summary: 'Reject a page of join requests',
  },
  { method: 'GET', path: `${T}/pools/{poolId}/join-requests/{requestId}`, procedure: 'joinRequests.get', summary: 'Get a join request' },
  {
    method: 'POST',
    path: `${T}/pools/{poolId}/join-requests/{requestId}/approve`,
    procedure: 'joinRequests.approve',
    summary: 'Approve a join request',
  },
  {
    method: 'POST',
    path: `${T}/pools/{poolId}/join-requests/{requestId}/reject`,
    procedure: 'joinRequests.reject',
    summary: 'Reject a join request',
  },
  {
    method: 'POST',
    path: `${T}/nodes/{nodeId}/user-data`,
    procedure: 'provisioning.userData',
    summary: 'Cloud-init user data that joins a deployed machine back as this node (holds a single-use token)',
  },
  {
    method: 'POST',
    path: `${T}/pools/{poolId}/install-script`,
    procedure: 'daemon.installScript',
    summary: "Generate a pool's bcd install script (holds no secret)",
  },
  { method: 'GET', path: `${T}/operators`, procedure: 'operators.list', summary: "List a tenant's operators (admins)" },
  {
    method: 'POST',
    path: `${T}/operators/{operatorId}/role`,
    procedure: 'operators.setRole',
    summary: "Change an operator's role (the last admin stays admin)",
  },
  {
    method: 'POST',
    path: `${T}/operators/{operatorId}/remove`,
    procedure: 'operators.remove',
    summary: 'Remove an operator from the tenant and end their sessions',
  },
  { method: 'GET', path: `${T}/invitations`, procedure: 'invitations.list', summary: "List a tenant's pending invitations" },
  {
    method: 'POST',
    path: `${T}/invitations`,
    procedure: 'invitations.create',
    summary: 'Invite an operator by email (the one-time token is shown once)',
  },
  {
    method: 'POST',
    path: `${T}/invitations/{invitationId}/revoke`,
    procedure: 'invitations.revoke',
    summary: 'Revoke a pending invitation',
  },
  { method: 'GET', path: `${T}/webhooks`, procedure: 'webhooks.list', summary: "List a tenant's webhook subscriptions (admins)" },
  {
    method: 'POST',
    path: `${T}/webhooks`,
    procedure: 'webhooks.create',
    summary: 'Create a webhook subscription (its signing secret is shown once)',
  },
  {
    method: 'GET',
    path: `${T}/webhooks/event-types`,
    procedure: 'webhooks.eventTypes',
    summary: 'The event types a webhook subscription may name',
  },
  { method: 'GET', path: `${T}/webhooks/{webhookId}`, procedure: 'webhooks.get', summary: 'Get a webhook subscription' },
  {
    method: 'POST',
    path: `${T}/webhooks/{webhookId}/update`,
    procedure: 'webhooks.update',
    summary: "Change a webhook's URL, event types, description or enabled",
  },
  {
    method: 'POST',
    path: `${T}/webhooks/{webhookId}/delete`,
    procedure: 'webhooks.delete',
    summary: 'Delete a webhook subscription and its deliveries',
  },
  {
    method: 'POST',
    path: `${T}/webhooks/{webhookId}/rotate-secret`,
    procedure: 'webhooks.rotateSecret',
    summary: "Replace a webhook's signing secret (the new one is shown once)",
  },
  {
    method: 'POST',
    path: `${T}/webhooks/{webhookId}/test`,
    procedure: 'webhooks.test',
    summary: 'Send a signed webhook.test event to the subscription',
  },
  {
    method: 'GET',
    path: `${T}/webhooks/{webhookId}/deliveries`,
    procedure: 'webhooks.deliveries',
    summary: "List a webhook's deliveries, newest first",
  },
  {
    method: 'POST',
    path: `${T}/webhooks/{webhookId}/deliveries/{deliveryId}/redeliver`,
    procedure: 'webhooks.redeliver',
    summary: 'Send a delivery again, under the same webhook-id',
  },
  {
    method: 'GET',
    path: '/v1/pki/rotation',
    procedure: 'pki.rotation.status',
    summary: "Each PKI key's rotation phase, pins and readiness (root admins)",
  },
  {
    method: 'POST',
    path: '/v1/pki/rotation/{kind}/prepare',
    procedure: 'pki.rotation.prepare',
    summary: 'Prepare the next key of a kind: made by the server, or imported (root admins)',
    maxBodyBytes: PREPARE_MAX_BODY_BYTES,
  },
  {
    method: 'POST',
    path: '/v1/pki/rotation/{kind}/activate',
    procedure: 'pki.rotation.activate',
    summary: 'Put the prepared key of a kind in use; the previous stays trusted (root admins)',
  },
  {
    method: 'POST',
    path: '/v1/pki/rotation/{kind}/retire',
    procedure: 'pki.rotation.retire',
    summary: 'Stop trusting the previous key of a kind (root admins)',
  },
]);

/** The status of a success: 201 for a POST that creates, else 200. */
export function successStatus(route: RestRoute): 200 | 201 {
  return route.method === 'POST' && route.procedure.endsWith('.create') ? 201 : 200;
}

interface RouteMatch {
  route: RestRoute;
  params: Record<string, string>;
}

const compiled = REST_ROUTES.map((route) => {
  const names: string[] = [];
  const pattern = route.path.replace(/\{(\w+)\}/g, (_, name: string) => {
    names.push(name);
    return '([^/]+)';
  });
  return { route, names, regex: new RegExp(`^${pattern}$`) };
});

/** Finds the route for a method and a path relative to the base path; `allowed` lists methods on a path miss. */
export function matchRoute(method: string, path: string): RouteMatch | { allowed: string[] } | null {
  const allowed: string[] = [];
  for (const { route, names, regex } of compiled) {
    const m = regex.exec(path);
    if (!m) continue;
    if (route.method !== method) {
      allowed.push(route.method);
      continue;
    }
    const params = Object.fromEntries(names.map((n, i) => [n, decodeURIComponent(m[i + 1]!)]));
    return { route, params };
  }
  return allowed.length ? { allowed } : null;
}
