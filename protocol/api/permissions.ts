/** The roles a tenant membership or an API key carries, from most to least. */
export const ROLES = ['admin', 'operator', 'approver', 'viewer'] as const;
export type Role = (typeof ROLES)[number];

/** Every action the API decides, in the spec's names. */
const ACTIONS = [
  'compute:tenants:read',
  'compute:tenants:manage',
  'compute:sites:read',
  'compute:sites:manage',
  'compute:pools:read',
  'compute:pools:manage',
  'compute:join-tokens:read',
  'compute:join-tokens:create',
  'compute:join-tokens:revoke',
  'compute:join-requests:decide',
  'compute:api-keys:read',
  'compute:api-keys:manage',
  'compute:events:read',
  'compute:nodes:read',
  'compute:nodes:manage',
  'compute:audit:read',
  'compute:operators:read',
  'compute:operators:manage',
  'compute:webhooks:read',
  'compute:webhooks:manage',
  'compute:pki:read',
  'compute:pki:manage',
] as const;
export type Action = (typeof ACTIONS)[number];

const READ_ACTIONS = ACTIONS.filter((a) => a.endsWith(':read'));

// Who is in a tenant (emails, how they sign in) is for the tenant's admins, who manage it; so are the
// tenant's webhooks (their URLs may carry a receiver's credentials, their deliveries the event bodies). The
// PKI's rotation state is the deployment's: admins only, and of the root tenant only (server/api/pki).
const ADMIN_READS: readonly Action[] = ['compute:operators:read', 'compute:webhooks:read', 'compute:pki:read'];
const MEMBER_READS = READ_ACTIONS.filter((a) => !ADMIN_READS.includes(a));

/**
 * What each role may do within its own tenant. Viewers read; approvers also decide join requests and
 * nothing else; operators also run the join workflow (tokens, decisions, node actions); admins manage
 * everything, including sites, pools, API keys and operators.
 */
export const ROLE_ACTIONS: Record<Role, ReadonlySet<Action>> = {
  viewer: new Set(MEMBER_READS),
  approver: new Set([...MEMBER_READS, 'compute:join-requests:decide']),
  operator: new Set([
    ...MEMBER_READS,
    'compute:join-tokens:create',
    'compute:join-tokens:revoke',
    'compute:join-requests:decide',
    'compute:nodes:manage',
  ]),
  admin: new Set(ACTIONS),
};

export function roleAllows(role: Role, action: Action): boolean {
  return ROLE_ACTIONS[role].has(action);
}
