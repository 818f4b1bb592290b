/** The roles a tenant membership or an API key carries. */
export const ROLES = ['admin', 'operator', 'viewer'] as const;
export type Role = (typeof ROLES)[number];

/** Every action the API decides, in the spec's names. */
export const ACTIONS = [
  'compute:tenants:read',
  'compute:tenants:manage',
  'compute:sites:read',
  'compute:sites:manage',
  'compute:pools:read',
  'compute:pools:manage',
  'compute:join-tokens:read',
  'compute:join-tokens:create',
  'compute:join-tokens:revoke',
  'compute:api-keys:read',
  'compute:api-keys:manage',
  'compute:events:read',
  'compute:nodes:read',
  'compute:nodes:manage',
  'compute:audit:read',
] as const;
export type Action = (typeof ACTIONS)[number];

const READ_ACTIONS = ACTIONS.filter((a) => a.endsWith(':read'));

/**
 * What each role may do within its own tenant. Viewers read; operators also run the join workflow
 * (tokens, approvals); admins manage everything, including sites, pools and API keys.
 */
export const ROLE_ACTIONS: Record<Role, ReadonlySet<Action>> = {
  viewer: new Set(READ_ACTIONS),
  operator: new Set([...READ_ACTIONS, 'compute:join-tokens:create', 'compute:join-tokens:revoke', 'compute:nodes:manage']),
  admin: new Set(ACTIONS),
};

export function roleAllows(role: Role, action: Action): boolean {
  return ROLE_ACTIONS[role].has(action);
}
