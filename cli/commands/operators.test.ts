import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCliInProcess as runCli, startApiServer, type ApiServer } from '../../test/cli';
import { insertApiKey } from '../../server/api-keys/api-keys';
import { acceptInvitation } from '../../server/operators/invitations';
import { testDb } from '../../test/db';
import { createTestTenant } from '../../test/fixtures';
import { authenticateOperator, createOperator } from '../../server/operators/operators';

describe('operators create --local', { timeout: 120_000 }, () => {
  it('creates an operator in a tenant with a one-time password, audited, and refuses a bad email or tenant', async () => {
    const t = await createTestTenant(testDb());
    const email = `new-${randomBytes(4).toString('hex')}@example.com`;
    const created = await runCli([
      'operators',
      'create',
      '--email',
      email,
      '--tenant',
      t.tenantId,
      '--role',
      'viewer',
      '--name',
      'New One',
      '--local',
    ]);
    expect(created.code, created.stderr).toBe(0);
    const password = /One-time password for [^:]+: (\S+)/.exec(created.stdout)![1]!;
    expect(await authenticateOperator(testDb(), email, password)).toMatchObject({ email, name: 'New One', passwordChangeRequired: true });
    const operator = await testDb().operator.findUniqueOrThrow({ where: { email }, include: { memberships: true } });
    expect(operator.memberships.map((m) => [m.tenantId, m.role])).toEqual([[t.tenantId, 'viewer']]);
    expect(
      await testDb().auditEntry.count({
        where: { tenantId: t.tenantId, action: 'operator.created', actor: 'local:cli', resource: `compute-operator/${operator.id}` },
      }),
    ).toBe(1);

    const again = await runCli([
      'operators',
      'create',
      '--email',
      email.toUpperCase(),
      '--tenant',
      t.tenantId,
      '--role',
      'viewer',
      '--local',
    ]);
    expect([again.code, again.stderr.trim()]).toEqual([7, `error (ALREADY_EXISTS): An operator with email ${email} already exists`]);
    const badTenant = await runCli([
      'operators',
      'create',
      '--email',
      `x-${email}`,
      '--tenant',
      'no-such-tenant',
      '--role',
      'viewer',
      '--local',
    ]);
    expect([badTenant.code, badTenant.stderr.trim()]).toEqual([3, 'error (NOT_FOUND): Tenant no-such-tenant not found']);
    const badEmail = await runCli([
      'operators',
      'create',
      '--email',
      'not-an-email',
      '--tenant',
      t.tenantId,
      '--role',
      'viewer',
      '--local',
    ]);
    expect(badEmail.code).toBe(2);
  });
});

describe('operators and invitations over the API', { timeout: 180_000 }, () => {
  let api: ApiServer;
  beforeAll(async () => {
    api = await startApiServer(testDb());
  });
  afterAll(async () => api?.close());

  it('invite, list, set-role and remove, with --json, and keep the last admin', async () => {
    const db = testDb();
    const t = await createTestTenant(db);
    const { key } = await insertApiKey(db, { tenantId: t.tenantId, role: 'admin', name: 'cli' }, 'test');
    const env = { BETTER_COMPUTE_URL: api.url, BETTER_COMPUTE_API_KEY: key };
    const adminEmail = `admin-${randomBytes(4).toString('hex')}@example.com`;
    const { id: adminId } = await createOperator(db, {
      email: adminEmail,
      name: 'Admin',
      password: 'correct-horse-battery',
      tenantId: t.tenantId,
      role: 'admin',
    });

    const invitee = `inv-${randomBytes(4).toString('hex')}@example.com`;
    const invited = await runCli(['operators', 'invite', '--tenant', t.tenantId, '--email', invitee, '--role', 'approver', '--json'], env);
    expect(invited.code, invited.stderr).toBe(0);
    const invitation = JSON.parse(invited.stdout) as { id: string; token: string; link: string; state: string };
    expect(invitation).toMatchObject({ state: 'pending' });
    expect(invitation.link).toBe(`${new URL(api.url).origin}/invite#${invitation.token}`);
    const pending = await runCli(['invitations', 'list', '--tenant', t.tenantId, '--json'], env);
    expect(JSON.parse(pending.stdout)).toEqual([expect.objectContaining({ id: invitation.id, email: invitee, role: 'approver' })]);
    expect(pending.stdout).not.toContain(invitation.token);

    const { operatorId } = await acceptInvitation(db, { token: invitation.token, name: 'Invited', password: 'correct-horse-battery' });
    const listed = await runCli(['operators', 'list', '--tenant', t.tenantId, '--json'], env);
    expect(
      JSON.parse(listed.stdout)
        .map((o: { email: string; role: string }) => [o.email, o.role])
        .sort(),
    ).toEqual(
      [
        [adminEmail, 'admin'],
        [invitee, 'approver'],
      ].sort(),
    );
    const table = await runCli(['operators', 'list', '--tenant', t.tenantId], env);
    expect(table.stdout).toMatch(new RegExp(`${invitee}\\s+Invited\\s+approver`));

    const raised = await runCli(['operators', 'set-role', operatorId, '--tenant', t.tenantId, '--role', 'operator'], env);
    expect([raised.code, raised.stdout.trim()]).toEqual([0, `${invitee} is now operator`]);
    const demoteLast = await runCli(['operators', 'set-role', adminId, '--tenant', t.tenantId, '--role', 'viewer'], env);
    expect([demoteLast.code, demoteLast.stderr.trim()]).toEqual([
      5,
      'error (INVALID_STATE): This is the last admin of the tenant: make another operator admin first',
    ]);
    const removeLast = await runCli(['operators', 'remove', adminId, '--tenant', t.tenantId], env);
    expect(removeLast.code).toBe(5);
    const removed = await runCli(['operators', 'remove', operatorId, '--tenant', t.tenantId], env);
    expect([removed.code, removed.stdout.trim()]).toEqual([0, `Removed ${operatorId}`]);

    const second = JSON.parse(
      (await runCli(['operators', 'invite', '--tenant', t.tenantId, '--email', `x-${invitee}`, '--role', 'viewer', '--json'], env)).stdout,
    ) as { id: string };
    const revoked = await runCli(['invitations', 'revoke', second.id, '--tenant', t.tenantId], env);
    expect([revoked.code, revoked.stdout.trim()]).toEqual([0, `Revoked invitation ${second.id} (revoked)`]);
    const all = JSON.parse((await runCli(['invitations', 'list', '--tenant', t.tenantId, '--all', '--json'], env)).stdout) as {
      state: string;
    }[];
    expect(all.map((i) => i.state).sort()).toEqual(['accepted', 'revoked']);
    const badRole = await runCli(['operators', 'invite', '--tenant', t.tenantId, '--email', invitee, '--role', 'owner'], env);
    expect(badRole.code).toBe(2);
  });
});
