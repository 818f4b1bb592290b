import type { Role } from '../../protocol/api/permissions';

/**
 * Who is calling: a console operator (next-auth session) or an API key. `memberships` maps each tenant the
 * caller belongs to onto its role there; an API key belongs to exactly one tenant.
 */
export interface Principal {
  kind: 'operator' | 'api-key' | 'local';
  id: string;
  /** How the caller is named in audit rows, e.g. `operator:op_…` or `api-key:ak_…`. */
  actor: string;
  memberships: ReadonlyMap<string, Role>;
  /**
   * Signed in with a printed one-time password: the only thing this principal may do is choose a new
   * password (the procedure ladder refuses everything else).
   */
  passwordChangeRequired?: true;
}

export function principalOf(kind: Principal['kind'], id: string, memberships: Iterable<[string, Role]>): Principal {
  return { kind, id, actor: `${kind}:${id}`, memberships: new Map(memberships) };
}
