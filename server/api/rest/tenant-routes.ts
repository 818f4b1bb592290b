import { restRoutes, T } from './route-table';

/** Tenants and what hangs off a tenant directly: sites, pools, join tokens, API keys, events, audit. */
export const TENANT_ROUTES = restRoutes([
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
]);
