import { beforeAll, describe, expect, it } from 'vitest';
import { testDb } from '../../test/db';
import { createTestTenant, type TestTenant } from '../../test/fixtures';
import { callerAs, EVERYONE, procedureOf, procedures, ROOT_ADMIN_ONLY } from '../../test/role-matrix';
import { ROLES, type Role } from '../../protocol/api/permissions';

const mutations = procedures.filter(([, p]) => p._def.type === 'mutation').map(([path]) => path);
const queries = procedures.filter(([, p]) => p._def.type === 'query').map(([path]) => path);

/**
 * The mutations each role may call at all (the early check of the ladder). Written out, so a change of the
 * permission table shows here as a change of this table. Every other mutation answers ACCESS_DENIED.
 */
const DECIDE = ['joinRequests.approve', 'joinRequests.approveMany', 'joinRequests.reject', 'joinRequests.rejectMany'];
const OPERATOR_MUTATIONS = [
  ...DECIDE,
  'daemon.installScript',
  'joinTokens.create',
  'provisioning.userData',
  'joinTokens.revoke',
  'nodes.adopt',
  'nodes.recheck',
  'nodes.cordon',
  'nodes.uncordon',
  'nodes.revokeIdentity',
  'nodes.delete',
  'nodes.bulk',
  'nodes.setLabels',
  'commands.enqueue',
];
// A mutation decided as a read action (it changes nothing stored) is open to every role that reads.
const READ_MUTATIONS = procedures
  .filter(([, p]) => p._def.type === 'mutation' && p._def.meta?.action?.endsWith(':read'))
  .map(([path]) => path);
const ALLOWED_MUTATIONS: Record<Role, string[] | 'all'> = {
  viewer: READ_MUTATIONS,
  approver: [...DECIDE, ...READ_MUTATIONS],
  operator: OPERATOR_MUTATIONS,
  admin: 'all',
};
/** Queries only admins may make: who is in the tenant, and the tenant's webhooks. */
const ADMIN_QUERIES = ['operators.list', 'invitations.list', 'webhooks.eventTypes', 'webhooks.list', 'webhooks.get', 'webhooks.deliveries'];
/** Mutations only admins may make, named so that a change of the permission table shows here. */
const ADMIN_ONLY_WEBHOOK_MUTATIONS = [
  'webhooks.create',
  'webhooks.update',
  'webhooks.delete',
  'webhooks.rotateSecret',
  'webhooks.test',
  'webhooks.redeliver',
];

/** The code a call by `role` fails with when given no input: FORBIDDEN is the role check, anything else came after it. */
async function codeOf(t: TestTenant, role: Role, path: string): Promise<string> {
  const caller = callerAs(t.as(role));
  try {
    await procedureOf(caller, path)({});
    return 'OK';
  } catch (error) {
    return (error as { code?: string }).code ?? 'THROWN';
  }
}

describe('the role × procedure matrix', () => {
  let t: TestTenant;
  beforeAll(async () => {
    t = await createTestTenant(testDb());
  });

  it('names an action on every procedure but the own account', () => {
    for (const [path, p] of procedures) {
      if (EVERYONE.includes(path)) expect(p._def.meta?.action, path).toBeUndefined();
      else expect(p._def.meta?.action, path).toMatch(/^compute:/);
    }
    for (const path of [...OPERATOR_MUTATIONS, ...EVERYONE, ...ADMIN_ONLY_WEBHOOK_MUTATIONS]) expect(mutations, path).toContain(path);
    for (const path of ADMIN_QUERIES) expect(queries, path).toContain(path);
    for (const path of ROOT_ADMIN_ONLY)
      expect(
        procedures.map(([p]) => p),
        path,
      ).toContain(path);
  });

  for (const role of ROLES) {
    it(`lets ${role} call exactly its mutations; every other one is ACCESS_DENIED`, async () => {
      const allowed = ALLOWED_MUTATIONS[role];
      for (const path of mutations) {
        const code = await codeOf(t, role, path);
        const mayCall = allowed === 'all' || allowed.includes(path) || EVERYONE.includes(path);
        if (ADMIN_ONLY_WEBHOOK_MUTATIONS.includes(path)) expect(mayCall, path).toBe(role === 'admin');
        if (ROOT_ADMIN_ONLY.includes(path)) expect(code, `${role} ${path}`).toBe('FORBIDDEN');
        else if (mayCall) expect(code, `${role} ${path}`).not.toBe('FORBIDDEN');
        else expect(code, `${role} ${path}`).toBe('FORBIDDEN');
      }
    });

    it(`lets ${role} read what its role reads`, async () => {
      for (const path of queries) {
        const code = await codeOf(t, role, path);
        if (ROOT_ADMIN_ONLY.includes(path)) expect(code, `${role} ${path}`).toBe('FORBIDDEN');
        else if (role !== 'admin' && ADMIN_QUERIES.includes(path)) expect(code, `${role} ${path}`).toBe('FORBIDDEN');
        else expect(code, `${role} ${path}`).not.toBe('FORBIDDEN');
      }
    });
  }
});
