import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { testDb } from '../../test/db';
import { createTestTenant, failure } from '../../test/fixtures';
import { tenantWithAdmin } from '../../test/operator-fixtures';
import { createCaller } from '../api/root';
import { createApiKey } from '../api-keys/api-keys';
import { principalOf } from '../authz/principal';
import { ensureRootTenant } from '../tenants/tenants';
import { INVITATION_LINKS_PER_ADDRESS } from './accept-invitation';
import { acceptInvitation, createInvitation, describeInvitation } from './invitations';
import { SIGN_IN_THROTTLE, SignInLockedError, authenticateOperator, createOperator } from './operators';

const PASSWORD = 'correct-horse-battery-staple';
const email = (label: string) => `${label}-${randomBytes(4).toString('hex')}@example.com`;
/** A documentation address of its own per test, so tests sharing the database never share counts. */
const address = () => `198.51.100.${1 + (randomBytes(1)[0]! % 250)}-${randomBytes(3).toString('hex')}`;

describe('accepting an invitation', () => {
  it('checks an existing account’s password through the sign-in throttle: 30 wrong guesses, then the right one is refused', async () => {
    const db = testDb();
    const { t, admin } = await tenantWithAdmin('Admin Person');
    const other = await tenantWithAdmin('Admin Person');
    const person = email('existing');
    await createOperator(db, { email: person, name: 'Existing', password: PASSWORD, tenantId: other.t.tenantId, role: 'viewer' });
    const invitation = await createInvitation(db, admin, { tenantId: t.tenantId, email: person, role: 'operator' });
    const from = address();
    const answers = [];
    for (let i = 0; i < 30; i++)
      answers.push(await failure(acceptInvitation(db, { token: invitation.token, password: `guess-number-${i}` }, from)));
    // The first guesses are plain refusals; the throttle takes over once the free failures are spent.
    expect(answers.slice(0, SIGN_IN_THROTTLE.freeFailures).every((a) => a.code === 'INVALID_ARGUMENT')).toBe(true);
    expect(answers.at(-1)).toMatchObject({ code: 'INVALID_STATE', message: expect.stringContaining('Too many failed attempts') });
    const right = await failure(acceptInvitation(db, { token: invitation.token, password: PASSWORD }, from));
    expect(right).toMatchObject({ code: 'INVALID_STATE', message: expect.stringContaining('Too many failed attempts') });
    expect(await db.membership.count({ where: { tenantId: t.tenantId, operator: { email: person } } })).toBe(0);
    // The same counts as the sign-in form: that address is held back there too.
    await expect(authenticateOperator(db, person, PASSWORD, from)).rejects.toThrow(SignInLockedError);
    // From the owner's own address the link still works.
    expect(await acceptInvitation(db, { token: invitation.token, password: PASSWORD }, address())).toMatchObject({ tenantId: t.tenantId });
  }, 120_000);

  it('answers a wrong password and a missing account alike', async () => {
    const db = testDb();
    const { t, admin } = await tenantWithAdmin('Admin Person');
    const other = await tenantWithAdmin('Admin Person');
    const existing = email('has-account');
    await createOperator(db, { email: existing, name: 'Has', password: PASSWORD, tenantId: other.t.tenantId, role: 'viewer' });
    const toExisting = await createInvitation(db, admin, { tenantId: t.tenantId, email: existing, role: 'viewer' });
    const toNew = await createInvitation(db, admin, { tenantId: t.tenantId, email: email('no-account'), role: 'viewer' });
    const wrongPassword = await failure(acceptInvitation(db, { token: toExisting.token, password: 'not-the-password-1' }, address()));
    const wrongWithName = await failure(
      acceptInvitation(db, { token: toExisting.token, name: 'Has', password: 'not-the-password-1' }, address()),
    );
    const noName = await failure(acceptInvitation(db, { token: toNew.token, password: 'not-the-password-1' }, address()));
    const shortPassword = await failure(acceptInvitation(db, { token: toNew.token, name: 'New', password: 'short' }, address()));
    expect(wrongPassword).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'password' });
    for (const answer of [wrongWithName, noName, shortPassword]) expect(answer).toEqual(wrongPassword);
    expect(wrongPassword.message).not.toContain(existing);
  }, 60_000);

  it('shows what a usable link is for, and nothing for any other', async () => {
    const db = testDb();
    const { t, admin } = await tenantWithAdmin('Admin Person');
    const invitee = email('shown');
    const invitation = await createInvitation(db, admin, { tenantId: t.tenantId, email: invitee, role: 'approver' });
    expect(await describeInvitation(db, { token: invitation.token })).toEqual({
      tenantName: t.name,
      role: 'approver',
      email: invitee,
      invitedBy: 'Admin Person',
      expiresAt: invitation.expiresAt,
    });
    const forged = invitation.token.replace(/\.(.)/, (_, c: string) => `.${c === 'A' ? 'B' : 'A'}`);
    const unknown = `bcinv_inv_${'0'.repeat(26)}.${'A'.repeat(43)}`;
    for (const token of [forged, unknown, 'bcinv_nonsense']) {
      const answer = await failure(createCaller({ db, principal: null }).invitations.describe({ token }));
      expect(answer).toMatchObject({ code: 'NOT_FOUND' });
      expect(answer.message).not.toContain(invitee);
      expect(answer.message).not.toContain(t.name);
    }
    await acceptInvitation(db, { token: invitation.token, name: 'Shown', password: PASSWORD });
    expect(await failure(describeInvitation(db, { token: invitation.token }))).toMatchObject({ code: 'NOT_FOUND' });
  }, 60_000);

  it('lets one address try a bounded number of unusable links a minute, describe and accept together', async () => {
    const db = testDb();
    const from = address();
    const bogus = () => `bcinv_inv_${randomBytes(13).toString('hex')}.${randomBytes(32).toString('base64url')}`;
    const answers = [];
    for (let i = 0; i < INVITATION_LINKS_PER_ADDRESS + 5; i++) {
      const attempt =
        i % 2 ? describeInvitation(db, { token: bogus() }, from) : acceptInvitation(db, { token: bogus(), password: PASSWORD }, from);
      answers.push(await failure(attempt));
    }
    expect(answers.slice(0, INVITATION_LINKS_PER_ADDRESS).every((a) => a.code === 'NOT_FOUND')).toBe(true);
    for (const a of answers.slice(INVITATION_LINKS_PER_ADDRESS))
      expect(a).toMatchObject({ code: 'INVALID_STATE', message: expect.stringContaining('Too many invitation links') });
    // Another address is counted on its own.
    expect(await failure(describeInvitation(db, { token: bogus() }, address()))).toMatchObject({ code: 'NOT_FOUND' });
  }, 60_000);
});

describe('inviting an email twice', () => {
  it('is a CONFLICT while the first invitation is pending, and replacing it revokes the old link', async () => {
    const db = testDb();
    const { t, admin } = await tenantWithAdmin('Admin Person');
    const invitee = email('twice');
    const first = await createInvitation(db, admin, { tenantId: t.tenantId, email: invitee, role: 'viewer' });
    const again = await failure(
      createCaller({ db, principal: admin }).invitations.create({ tenantId: t.tenantId, email: invitee, role: 'viewer' }),
    );
    expect(again).toMatchObject({ code: 'CONFLICT', field: 'email', message: expect.stringContaining('already has a pending invitation') });
    const second = await createInvitation(db, admin, { tenantId: t.tenantId, email: invitee, role: 'operator', replacePending: true });
    expect(await failure(acceptInvitation(db, { token: first.token, name: 'Old', password: PASSWORD }))).toMatchObject({
      code: 'NOT_FOUND',
    });
    expect(await acceptInvitation(db, { token: second.token, name: 'New', password: PASSWORD })).toMatchObject({ role: 'operator' });
    expect(
      await failure(createInvitation(db, admin, { tenantId: t.tenantId, email: invitee, role: 'viewer', replacePending: true })),
    ).toMatchObject({
      code: 'ALREADY_EXISTS',
      message: expect.stringContaining('already an operator of this tenant'),
    });
  }, 60_000);
});

describe('the first admin of a tenant, staged by a root admin', () => {
  async function emptyTenant() {
    const db = testDb();
    const root = await ensureRootTenant(db);
    const rootAdmin = principalOf('operator', 'op_rootadmin', [[root.id, 'admin']]);
    const t = await createTestTenant(db);
    await db.membership.deleteMany({ where: { tenantId: t.tenantId } });
    return { db, t, rootAdmin };
  }

  it('is one way in: a pending invitation counts, so no second invitation and no first API key', async () => {
    const { db, t, rootAdmin } = await emptyTenant();
    await createInvitation(db, rootAdmin, { tenantId: t.tenantId, email: email('first'), role: 'admin' });
    expect(await failure(createInvitation(db, rootAdmin, { tenantId: t.tenantId, email: email('spare'), role: 'admin' }))).toMatchObject({
      code: 'ACCESS_DENIED',
      message: expect.stringContaining('pending invitation'),
    });
    expect(await failure(createApiKey(db, rootAdmin, { tenantId: t.tenantId, role: 'admin', name: 'spare' }))).toMatchObject({
      code: 'ACCESS_DENIED',
    });
    expect(await db.apiKey.count({ where: { tenantId: t.tenantId } })).toBe(0);
  }, 60_000);

  it('races to exactly one way in when invitations and a key are asked for at once', async () => {
    const { db, t, rootAdmin } = await emptyTenant();
    const results = await Promise.allSettled([
      createInvitation(db, rootAdmin, { tenantId: t.tenantId, email: email('a'), role: 'admin' }),
      createInvitation(db, rootAdmin, { tenantId: t.tenantId, email: email('b'), role: 'admin' }),
      createInvitation(db, rootAdmin, { tenantId: t.tenantId, email: email('c'), role: 'admin' }),
      createApiKey(db, rootAdmin, { tenantId: t.tenantId, role: 'admin', name: 'k1' }),
      createApiKey(db, rootAdmin, { tenantId: t.tenantId, role: 'admin', name: 'k2' }),
    ]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const ways =
      (await db.invitation.count({ where: { tenantId: t.tenantId } })) + (await db.apiKey.count({ where: { tenantId: t.tenantId } }));
    expect(ways).toBe(1);
  }, 60_000);

  it('is refused at acceptance once the tenant has an admin of its own', async () => {
    const { db, t, rootAdmin } = await emptyTenant();
    const staged = await createInvitation(db, rootAdmin, { tenantId: t.tenantId, email: email('staged'), role: 'admin' });
    // The tenant gets its own admin another way (the local CLI's `operators create`).
    await createOperator(db, { email: email('own'), name: 'Own Admin', password: PASSWORD, tenantId: t.tenantId, role: 'admin' });
    expect(await failure(acceptInvitation(db, { token: staged.token, name: 'Staged', password: PASSWORD }))).toMatchObject({
      code: 'INVALID_STATE',
      message: expect.stringContaining('first admin'),
    });
    expect(await db.operator.count({ where: { email: staged.email } })).toBe(0);
  }, 60_000);
});
