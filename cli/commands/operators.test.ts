import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../test/cli';
import { testDb } from '../../test/db';
import { createTestTenant } from '../../test/fixtures';
import { authenticateOperator } from '../../server/operators/operators';

describe('operators create --local', { timeout: 120_000 }, () => {
  it('creates an operator in a tenant with a one-time password, audited, and refuses a bad email or tenant', async () => {
    const t = await createTestTenant(testDb());
    const email = `new-${randomBytes(4).toString('hex')}@example.com`;
    const created = await runCli(['operators', 'create', '--email', email, '--tenant', t.tenantId, '--role', 'viewer', '--name', 'New One', '--local']);
    expect(created.code, created.stderr).toBe(0);
    const password = /One-time password for [^:]+: (\S+)/.exec(created.stdout)![1]!;
    expect(await authenticateOperator(testDb(), email, password)).toMatchObject({ email, name: 'New One', passwordChangeRequired: true });
    const operator = await testDb().operator.findUniqueOrThrow({ where: { email }, include: { memberships: true } });
    expect(operator.memberships.map((m) => [m.tenantId, m.role])).toEqual([[t.tenantId, 'viewer']]);
    expect(await testDb().auditEntry.count({ where: { tenantId: t.tenantId, action: 'operator.created', actor: 'local:cli', resource: `compute-operator/${operator.id}` } })).toBe(1);

    const again = await runCli(['operators', 'create', '--email', email.toUpperCase(), '--tenant', t.tenantId, '--role', 'viewer', '--local']);
    expect([again.code, again.stderr.trim()]).toEqual([7, `error (ALREADY_EXISTS): An operator with email ${email} already exists`]);
    const badTenant = await runCli(['operators', 'create', '--email', `x-${email}`, '--tenant', 'no-such-tenant', '--role', 'viewer', '--local']);
    expect([badTenant.code, badTenant.stderr.trim()]).toEqual([3, 'error (NOT_FOUND): Tenant no-such-tenant not found']);
    const badEmail = await runCli(['operators', 'create', '--email', 'not-an-email', '--tenant', t.tenantId, '--role', 'viewer', '--local']);
    expect(badEmail.code).toBe(2);
  });
});
