import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { testDb } from '../../test/db';
import { createTestTenant, failure } from '../../test/fixtures';
import { tenantWithAdmin } from '../../test/operator-fixtures';
import { createCaller } from '../api/root';
import { principalOf } from '../authz/principal';
import { ensureRootTenant } from '../tenants/tenants';
import { acceptInvitation, createInvitation, listInvitations, revokeInvitation } from './invitations';
import { listOperators, removeOperator, setOperatorRole } from './members';
import { authenticateOperator, createOperator, loadOperatorPrincipal, loadSessionPrincipal } from './operators';

const PASSWORD = 'correct-horse-battery-staple';
const email = (label: string) => `${label}-${randomBytes(4).toString('hex')}@example.com`;

describe('invitations', () => {
  it('are one-time links, stored as a hash, that create the operator in the tenant with the role', async () => {
    const db = testDb();
    const { t, admin } = await tenantWithAdmin();
    const invitee = email('new');
    // The procedure's schema lower-cases the email (its adapter parses; createInvitation takes the parsed value).
    const invitation = await createCaller({ db, principal: admin }).invitations.create({
      tenantId: t.tenantId,
      email: invitee.toUpperCase(),
      role: 'approver',
    });
    expect(invitation).toMatchObject({ email: invitee, role: 'approver', state: 'pending', createdBy: admin.actor });
    expect(invitation.token).toMatch(/^bcinv_inv_[0-9a-z]{26}\.[A-Za-z0-9_-]{43}$/);
    const days = (Date.parse(invitation.expiresAt) - Date.parse(invitation.createdAt)) / 86_400_000;
    expect(days).toBeCloseTo(7, 2);
    const stored = await db.invitation.findUniqueOrThrow({ where: { id: invitation.id } });
    expect(Buffer.from(stored.secretHash).toString('base64url')).not.toContain(invitation.token.split('.')[1]);
    expect((await listInvitations(db, admin, { tenantId: t.tenantId })).map((i) => i.id)).toEqual([invitation.id]);

    // A wrong secret is the same refusal as a spent link.
    const forged = invitation.token.replace(/\.(.)/, (_, c: string) => `.${c === 'A' ? 'B' : 'A'}`);
    expect(await failure(acceptInvitation(db, { token: forged, name: 'New One', password: PASSWORD }))).toMatchObject({
      code: 'NOT_FOUND',
    });
    // Without a name, a new person is answered as a wrong password would be: nothing tells whether an account exists.
    expect(await failure(acceptInvitation(db, { token: invitation.token, password: PASSWORD }))).toMatchObject({
      code: 'INVALID_ARGUMENT',
      field: 'password',
      message: expect.stringContaining('give your name and a new password'),
    });

    const accepted = await acceptInvitation(db, { token: invitation.token, name: 'New One', password: PASSWORD });
    expect(accepted).toMatchObject({ email: invitee, tenantId: t.tenantId, role: 'approver' });
    expect(await authenticateOperator(db, invitee, PASSWORD)).toMatchObject({ id: accepted.operatorId, name: 'New One' });
    expect((await loadOperatorPrincipal(db, accepted.operatorId))!.memberships.get(t.tenantId)).toBe('approver');
    expect(await failure(acceptInvitation(db, { token: invitation.token, name: 'Again', password: PASSWORD }))).toMatchObject({
      code: 'NOT_FOUND',
    });
    expect(await listInvitations(db, admin, { tenantId: t.tenantId })).toEqual([]);
    expect((await listInvitations(db, admin, { tenantId: t.tenantId, includeClosed: true }))[0]).toMatchObject({ state: 'accepted' });
    const events = await db.event.findMany({
      where: { tenantId: t.tenantId, type: { in: ['operator.invited', 'operator.joined'] } },
      orderBy: { id: 'asc' },
    });
    expect(events.map((e) => e.type)).toEqual(['operator.invited', 'operator.joined']);
    expect(JSON.stringify(events.map((e) => e.data))).not.toContain(invitation.token.split('.')[1]);
    expect(await db.auditEntry.count({ where: { tenantId: t.tenantId, action: { in: ['operator.invited', 'operator.joined'] } } })).toBe(2);
  });

  it('refuse a revoked or expired link, and two accepts of one link race to exactly one operator', async () => {
    const db = testDb();
    const { t, admin } = await tenantWithAdmin();
    const revoked = await createInvitation(db, admin, { tenantId: t.tenantId, email: email('r'), role: 'viewer' });
    expect(await revokeInvitation(db, admin, { tenantId: t.tenantId, invitationId: revoked.id })).toMatchObject({ state: 'revoked' });
    expect(await failure(acceptInvitation(db, { token: revoked.token, name: 'R', password: PASSWORD }))).toMatchObject({
      code: 'NOT_FOUND',
    });
    const expired = await createInvitation(db, admin, { tenantId: t.tenantId, email: email('e'), role: 'viewer' });
    await db.invitation.update({ where: { id: expired.id }, data: { expiresAt: new Date(Date.now() - 1000) } });
    expect(await failure(acceptInvitation(db, { token: expired.token, name: 'E', password: PASSWORD }))).toMatchObject({
      code: 'NOT_FOUND',
    });

    const raced = await createInvitation(db, admin, { tenantId: t.tenantId, email: email('race'), role: 'viewer' });
    const results = await Promise.allSettled(
      [1, 2, 3].map(() => acceptInvitation(db, { token: raced.token, name: 'Race', password: PASSWORD })),
    );
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    expect(await db.operator.count({ where: { email: raced.email } })).toBe(1);
  });

  it('let an existing operator join another tenant with their own password', async () => {
    const db = testDb();
    const { t, admin } = await tenantWithAdmin();
    const other = await tenantWithAdmin();
    const person = email('both');
    const { id } = await createOperator(db, {
      email: person,
      name: 'Both',
      password: PASSWORD,
      tenantId: other.t.tenantId,
      role: 'viewer',
    });
    const invitation = await createInvitation(db, admin, { tenantId: t.tenantId, email: person, role: 'operator' });
    expect(await failure(acceptInvitation(db, { token: invitation.token, password: 'not-their-password' }))).toMatchObject({
      code: 'INVALID_ARGUMENT',
      field: 'password',
    });
    await acceptInvitation(db, { token: invitation.token, password: PASSWORD });
    const principal = (await loadOperatorPrincipal(db, id))!;
    expect([principal.memberships.get(t.tenantId), principal.memberships.get(other.t.tenantId)]).toEqual(['operator', 'viewer']);
    expect(await failure(createInvitation(db, admin, { tenantId: t.tenantId, email: person, role: 'viewer' }))).toMatchObject({
      code: 'ALREADY_EXISTS',
    });
  });

  it('let a root admin invite only the first admin of a tenant nobody can act in', async () => {
    const db = testDb();
    const root = await ensureRootTenant(db);
    const rootAdmin = principalOf('operator', 'op_rootadmin', [[root.id, 'admin']]);
    const empty = await createTestTenant(db);
    await db.membership.deleteMany({ where: { tenantId: empty.tenantId } });
    expect(await failure(createInvitation(db, rootAdmin, { tenantId: empty.tenantId, email: email('v'), role: 'viewer' }))).toMatchObject({
      code: 'NOT_FOUND',
    });
    const first = await createInvitation(db, rootAdmin, { tenantId: empty.tenantId, email: email('first'), role: 'admin' });
    await acceptInvitation(db, { token: first.token, name: 'First', password: PASSWORD });
    expect(
      await failure(createInvitation(db, rootAdmin, { tenantId: empty.tenantId, email: email('second'), role: 'admin' })),
    ).toMatchObject({ code: 'ACCESS_DENIED', message: expect.stringContaining('only its own admins invite operators') });
  });
});

describe('operators of a tenant', () => {
  it('are listed by email with role and last sign-in, for admins only', async () => {
    const db = testDb();
    const { t, admin } = await tenantWithAdmin();
    const viewer = email('viewer');
    await createOperator(db, { email: viewer, name: 'Viewer', password: PASSWORD, tenantId: t.tenantId, role: 'viewer' });
    await authenticateOperator(db, viewer, PASSWORD);
    const list = await listOperators(db, admin, { tenantId: t.tenantId });
    expect(list.find((o) => o.email === viewer)).toMatchObject({
      name: 'Viewer',
      role: 'viewer',
      signIn: 'password',
      lastSignInAt: expect.any(String),
    });
    expect(await failure(listOperators(db, t.as('operator'), { tenantId: t.tenantId }))).toMatchObject({ code: 'ACCESS_DENIED' });
    const outsider = await createTestTenant(db);
    expect(await failure(listOperators(db, outsider.admin, { tenantId: t.tenantId }))).toMatchObject({ code: 'NOT_FOUND' });
  });

  it('keep their last admin: not demoted, not removed, even by two admins at once', async () => {
    const db = testDb();
    const { t, adminId, admin } = await tenantWithAdmin();
    expect(await failure(setOperatorRole(db, admin, { tenantId: t.tenantId, operatorId: adminId, role: 'operator' }))).toMatchObject({
      code: 'INVALID_STATE',
    });
    expect(await failure(removeOperator(db, admin, { tenantId: t.tenantId, operatorId: adminId }))).toMatchObject({
      code: 'INVALID_STATE',
    });
    const { id: secondId } = await createOperator(db, {
      email: email('admin2'),
      name: 'Second',
      password: PASSWORD,
      tenantId: t.tenantId,
      role: 'admin',
    });
    const second = (await loadOperatorPrincipal(db, secondId))!;
    // Each demotes the other at the same moment: one wins, and the tenant keeps an admin.
    const results = await Promise.allSettled([
      setOperatorRole(db, admin, { tenantId: t.tenantId, operatorId: secondId, role: 'viewer' }),
      setOperatorRole(db, second, { tenantId: t.tenantId, operatorId: adminId, role: 'viewer' }),
    ]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    expect(await db.membership.count({ where: { tenantId: t.tenantId, role: 'admin' } })).toBe(1);
    expect(await db.event.count({ where: { tenantId: t.tenantId, type: 'operator.role-changed' } })).toBe(1);
  });

  it('removed, lose the tenant and every session at once', async () => {
    const db = testDb();
    const { t, admin } = await tenantWithAdmin();
    const { id } = await createOperator(db, {
      email: email('gone'),
      name: 'Gone',
      password: PASSWORD,
      tenantId: t.tenantId,
      role: 'operator',
    });
    const claim = { operatorId: id, sessionVersion: 1 };
    expect(await loadSessionPrincipal(db, claim)).not.toBeNull();
    // Through the API, as the console calls it.
    await expect(createCaller({ db, principal: admin }).operators.remove({ tenantId: t.tenantId, operatorId: id })).resolves.toEqual({
      removed: true,
    });
    expect(await loadSessionPrincipal(db, claim)).toBeNull();
    expect((await loadOperatorPrincipal(db, id))!.memberships.size).toBe(0);
    expect(await db.event.count({ where: { tenantId: t.tenantId, type: 'operator.removed' } })).toBe(1);
    expect(await db.auditEntry.count({ where: { tenantId: t.tenantId, action: 'operator.removed', actor: admin.actor } })).toBe(1);
    expect(await failure(removeOperator(db, admin, { tenantId: t.tenantId, operatorId: id }))).toMatchObject({ code: 'NOT_FOUND' });
  });
});
