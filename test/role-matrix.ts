import { appRouter, createCaller } from '../server/api/root';
import type { ApiMeta } from '../server/api/trpc';
import type { Principal } from '../server/authz/principal';
import { testApiServices } from './api-services';
import { testDb } from './db';

/** The role × procedure matrix tests' view of the API: every procedure by its dotted path, and how to call one. */
type Procedure = { _def: { type: 'query' | 'mutation' | 'subscription'; meta?: ApiMeta } };
export const procedures = Object.entries(appRouter._def.procedures as unknown as Record<string, Procedure>);

/** Open to every signed-in caller (the own account), or to anyone (an invitation link is its own proof). */
export const EVERYONE = [
  'account.changePassword',
  'account.signOutEverywhere',
  'invitations.accept',
  'invitations.describe',
  'account.linkSso',
];

/** The deployment's own procedures: root tenant admins only, so FORBIDDEN to every role of any other tenant. */
export const ROOT_ADMIN_ONLY = ['pki.rotation.status', 'pki.rotation.prepare', 'pki.rotation.activate', 'pki.rotation.retire'];

/** The procedure at a dotted path (`group.name`, or deeper: `pki.rotation.status`) of a caller. */
export function procedureOf(caller: unknown, path: string): (input: unknown) => Promise<unknown> {
  let at = caller;
  for (const name of path.split('.')) at = (at as Record<string, unknown>)[name];
  return at as (input: unknown) => Promise<unknown>;
}

/** A caller as `principal` on the test database, with the services its live streams read. */
export const callerAs = (principal: Principal | null) => createCaller({ db: testDb(), principal, services: testApiServices() });
