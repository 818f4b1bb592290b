import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, signInThroughProvider, startOidcProvider, type TestOidcProvider } from '../../test/oidc-provider';
import {
  createServerDatabase,
  newServerSecret,
  startServerProcess,
  type ServerDatabase,
  type ServerProcess,
} from '../../test/server-process';
import { hasOwnPassword } from '../operators/account';
import { createCaller } from '../api/root';
import { createOperator, loadOperatorPrincipal, resetOperatorPassword } from '../operators/operators';
import { getRootTenant } from '../tenants/tenants';
import { newId } from '../ids';
import { projectResource, resource } from '../authz/authorize';
import { principalOf } from '../authz/principal';

/**
 * OpenID Connect end to end: a real oidc-provider on a loopback port, the server process (test/server-main.ts)
 * serving next-auth with the console's options, and the authorization-code flow driven over HTTP through
 * the provider's own login and consent pages.
 */
let provider: TestOidcProvider;
let server: ServerProcess;
let database: ServerDatabase;
let consoleUrl: string;
const team = `team-${randomBytes(3).toString('hex')}`;
const lab = `lab-${randomBytes(3).toString('hex')}`;

beforeAll(async () => {
  database = await createServerDatabase('oidc');
  const port = await freePort();
  consoleUrl = `http://127.0.0.1:${port}`;
  provider = await startOidcProvider({
    redirectUri: `${consoleUrl}/api/auth/callback/oidc`,
    people: {
      alice: { email: 'alice@example.com', email_verified: true, name: 'Alice Admin', groups: ['platform-admins', 'lab-viewers'] },
      bob: { email: 'bob@example.com', email_verified: true, name: 'Bob', groups: ['marketing'] },
      carol: { email: 'carol@example.com', email_verified: false, name: 'Carol', groups: ['platform-admins'] },
      dave: { email: 'dave@example.com', email_verified: true, name: 'Dave', groups: [] },
      frank: { email: 'frank@example.com', email_verified: true, name: 'Frank', groups: ['platform-admins'] },
    },
  });
  server = await startServerProcess({
    databaseUrl: database.url,
    secret: newServerSecret(),
    port,
    env: {
      NEXTAUTH_URL: consoleUrl,
      NEXTAUTH_SECRET: randomBytes(32).toString('base64url'),
      BETTER_COMPUTE_OIDC_ISSUER: provider.issuer,
      BETTER_COMPUTE_OIDC_CLIENT_ID: provider.clientId,
      BETTER_COMPUTE_OIDC_CLIENT_SECRET: provider.clientSecret,
      // Single sign-on for the team; the password form is break-glass for root admins only.
      BETTER_COMPUTE_PASSWORD_SIGN_IN: 'false',
      BETTER_COMPUTE_OIDC_ROLE_MAP: JSON.stringify({
        'platform-admins': { tenant: team, role: 'admin' },
        'lab-viewers': [{ tenant: lab, role: 'viewer' }],
      }),
    },
  });
  for (const name of [team, lab]) {
    await database.db.$transaction(async (tx) => {
      const tenant = await tx.tenant.create({ data: { id: newId('tnt'), name } });
      await projectResource(tx, resource.tenant(tenant.id), tenant.id);
    });
  }
}, 120_000);

afterAll(async () => {
  await server?.stop();
  await provider?.close();
  await database?.close();
});

const tenantId = async (name: string) => (await database.db.tenant.findUniqueOrThrow({ where: { name } })).id;

/** A tRPC mutation over HTTP without a session, as the link page calls it. */
async function trpcMutation(path: string, input: unknown) {
  const response = await fetch(`${consoleUrl}/api/trpc/${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(input),
  });
  return {
    status: response.status,
    body: (await response.json()) as { result?: { data: unknown }; error?: { message?: string; data?: { domainCode?: string } } },
  };
}

/** tRPC over HTTP with the session cookie, as the console's browser calls it. */
async function trpcQuery(cookie: string, path: string, input: unknown) {
  const response = await fetch(`${consoleUrl}/api/trpc/${path}?input=${encodeURIComponent(JSON.stringify(input))}`, {
    headers: { cookie },
  });
  return {
    status: response.status,
    body: (await response.json()) as { result?: { data: unknown }; error?: { data?: { domainCode?: string } } },
  };
}

describe('single sign-on through a real OpenID provider', () => {
  it('signs a person in whose groups map: created with the mapped memberships, then follows the provider at each sign-in', async () => {
    const first = await signInThroughProvider(consoleUrl, 'alice', '/pools');
    expect(first.location).toBe(`${consoleUrl}/pools`);
    expect(first.sessionCookie).not.toBeNull();

    const alice = await database.db.operator.findUniqueOrThrow({ where: { email: 'alice@example.com' }, include: { memberships: true } });
    expect(alice).toMatchObject({ name: 'Alice Admin', oidcSubject: `${provider.issuer} alice` });
    expect(alice.lastSignInAt).not.toBeNull();
    expect(alice.memberships.map((m) => [m.tenantId, m.role, m.source]).sort()).toEqual(
      [
        [await tenantId(team), 'admin', 'sso'],
        [await tenantId(lab), 'viewer', 'sso'],
      ].sort(),
    );
    // The session works over tRPC and sees exactly the mapped tenants with their roles.
    const tenants = await trpcQuery(first.sessionCookie!, 'tenants.list', {});
    expect(tenants.status).toBe(200);
    const items = (tenants.body.result!.data as { items: { name: string; role: string }[] }).items;
    expect(items.map((t) => [t.name, t.role]).sort()).toEqual([
      [lab, 'viewer'],
      [team, 'admin'],
    ]);
    // Admin in `team` lists operators; viewer in `lab` is refused the admin-only list.
    expect((await trpcQuery(first.sessionCookie!, 'operators.list', { tenantId: await tenantId(team) })).status).toBe(200);
    const refused = await trpcQuery(first.sessionCookie!, 'operators.list', { tenantId: await tenantId(lab) });
    expect(refused.body.error?.data?.domainCode).toBe('ACCESS_DENIED');
    const listed = (await trpcQuery(first.sessionCookie!, 'operators.list', { tenantId: await tenantId(team) })).body.result!.data as {
      items: { email: string; signIn: string; source: string }[];
    };
    expect(listed.items).toEqual([expect.objectContaining({ email: 'alice@example.com', signIn: 'sso', source: 'sso' })]);

    // The group is removed at the provider: the next sign-in removes that membership, and the other stays.
    provider.people.get('alice')!.groups = ['platform-admins'];
    const second = await signInThroughProvider(consoleUrl, 'alice');
    expect(second.sessionCookie).not.toBeNull();
    const after = await database.db.membership.findMany({ where: { operatorId: alice.id } });
    expect(after.map((m) => m.tenantId)).toEqual([await tenantId(team)]);
    const principal = await loadOperatorPrincipal(database.db, alice.id);
    expect([...principal!.memberships.keys()]).toEqual([await tenantId(team)]);
    const removal = await database.db.auditEntry.findFirst({
      where: { tenantId: await tenantId(lab), action: 'operator.removed', actor: `sso:${provider.issuer}` },
    });
    expect(removal?.data).toMatchObject({ operatorId: alice.id, via: 'sso' });
    // Still one operator for the person.
    expect(await database.db.operator.count({ where: { email: 'alice@example.com' } })).toBe(1);

    // Every group gone: the last SSO membership goes too, and the sign-in ends on the no-access page.
    provider.people.get('alice')!.groups = [];
    const third = await signInThroughProvider(consoleUrl, 'alice');
    expect(third.location).toBe(`${consoleUrl}/no-access?reason=no-access`);
    expect(third.sessionCookie).toBeNull();
    expect(await database.db.membership.count({ where: { operatorId: alice.id } })).toBe(0);
  }, 60_000);

  it('refuses a person whose groups map to nothing, and one whose email is not verified: no operator, no session', async () => {
    const bob = await signInThroughProvider(consoleUrl, 'bob');
    expect(bob.location).toBe(`${consoleUrl}/no-access?reason=no-access`);
    expect(bob.sessionCookie).toBeNull();
    const carol = await signInThroughProvider(consoleUrl, 'carol');
    expect(carol.location).toBe(`${consoleUrl}/no-access?reason=unverified`);
    expect(carol.sessionCookie).toBeNull();
    expect(await database.db.operator.count({ where: { email: { in: ['bob@example.com', 'carol@example.com'] } } })).toBe(0);
  }, 60_000);

  it('lets an invited person sign in with SSO when the verified email is the invitation’s', async () => {
    const root = (await getRootTenant(database.db))!;
    const admin = await database.db.membership.findFirstOrThrow({ where: { tenantId: root.id, role: 'admin' } });
    // The first admin once it has chosen its own password (the API refuses a one-time password everything else).
    const principal = principalOf('operator', admin.operatorId, [[root.id, 'admin']]);
    // Invited through the API in another case: the procedure stores the email lower-cased, as SSO looks it up.
    await createCaller({ db: database.db, principal }).invitations.create({
      tenantId: root.id,
      email: 'Dave@Example.COM',
      role: 'approver',
    });
    const dave = await signInThroughProvider(consoleUrl, 'dave');
    expect(dave.sessionCookie).not.toBeNull();
    const operator = await database.db.operator.findUniqueOrThrow({ where: { email: 'dave@example.com' }, include: { memberships: true } });
    expect(operator.memberships.map((m) => [m.tenantId, m.role, m.source])).toEqual([[root.id, 'approver', 'local']]);
    expect(await database.db.invitation.count({ where: { email: 'dave@example.com', acceptedBy: operator.id } })).toBe(1);
    // The invitation's membership is the admins' to manage: no group keeps it, and the next sign-in keeps it.
    expect((await signInThroughProvider(consoleUrl, 'dave')).sessionCookie).not.toBeNull();
    expect(await database.db.membership.count({ where: { operatorId: operator.id } })).toBe(1);
  }, 60_000);

  it('never takes over an account with a password by email: its password links it first, then SSO signs in as it', async () => {
    const password = `frank-${randomBytes(8).toString('hex')}`;
    const frank = await createOperator(database.db, {
      email: 'frank@example.com',
      name: 'Frank',
      password,
      tenantId: await tenantId(lab),
      role: 'viewer',
    });
    const first = await signInThroughProvider(consoleUrl, 'frank');
    expect(first.sessionCookie).toBeNull();
    expect(first.location).toMatch(new RegExp(`^${consoleUrl}/link-sso#bcsso_ssl_[0-9a-z]{26}\\.[A-Za-z0-9_-]{43}$`));
    const token = first.location.split('#')[1]!;
    // Nothing changed on the account: not linked, no membership from the provider's groups.
    const untouched = await database.db.operator.findUniqueOrThrow({ where: { id: frank.id }, include: { memberships: true } });
    expect(untouched.oidcSubject).toBeNull();
    expect(untouched.memberships.map((m) => m.tenantId)).toEqual([await tenantId(lab)]);

    const wrong = await trpcMutation('account.linkSso', { token, password: 'not-franks-password' });
    expect(wrong.body.error?.data?.domainCode).toBe('INVALID_ARGUMENT');
    expect((await database.db.operator.findUniqueOrThrow({ where: { id: frank.id } })).oidcSubject).toBeNull();
    const linked = await trpcMutation('account.linkSso', { token, password });
    expect(linked.body.result?.data).toEqual({ email: 'frank@example.com' });
    expect((await trpcMutation('account.linkSso', { token, password })).body.error?.data?.domainCode).toBe('NOT_FOUND');

    const after = await signInThroughProvider(consoleUrl, 'frank');
    expect(after.sessionCookie).not.toBeNull();
    const operator = await database.db.operator.findUniqueOrThrow({ where: { id: frank.id }, include: { memberships: true } });
    expect(operator.oidcSubject).toBe(`${provider.issuer} frank`);
    expect(operator.memberships.map((m) => [m.tenantId, m.role]).sort()).toEqual(
      [
        [await tenantId(lab), 'viewer'],
        [await tenantId(team), 'admin'],
      ].sort(),
    );
  }, 90_000);

  it('never links a root admin by email: the sign-in makes no session and the account stays unlinked', async () => {
    const root = (await getRootTenant(database.db))!;
    const admin = await database.db.membership.findFirstOrThrow({
      where: { tenantId: root.id, role: 'admin' },
      include: { operator: true },
    });
    provider.people.set('mallory', { email: admin.operator.email, email_verified: true, name: 'Mallory', groups: ['platform-admins'] });
    const attempt = await signInThroughProvider(consoleUrl, 'mallory');
    expect(attempt.sessionCookie).toBeNull();
    expect(attempt.location).toContain('/link-sso#bcsso_');
    const operator = await database.db.operator.findUniqueOrThrow({ where: { id: admin.operatorId }, include: { memberships: true } });
    expect(operator.oidcSubject).toBeNull();
    expect(operator.memberships.map((m) => m.tenantId)).toEqual([root.id]);
  }, 60_000);

  it('checks state: a callback whose state the browser did not start is refused without a session', async () => {
    const stolen = await signInThroughProvider(consoleUrl, 'dave');
    expect(stolen.sessionCookie).not.toBeNull();
    // Replaying the provider's callback URL from another browser (no state or PKCE cookies) makes no session.
    const csrf = await fetch(`${consoleUrl}/api/auth/csrf`);
    const replay = await fetch(`${consoleUrl}/api/auth/callback/oidc?code=forged&state=forged`, {
      redirect: 'manual',
      headers: {
        cookie: csrf.headers
          .getSetCookie()
          .map((c) => c.split(';')[0])
          .join('; '),
      },
    });
    expect(replay.status).toBe(302);
    expect(replay.headers.get('location')).toContain('error=OAuthCallback');
    expect(replay.headers.getSetCookie().some((c) => c.startsWith('next-auth.session-token='))).toBe(false);
  }, 60_000);

  it('with BETTER_COMPUTE_PASSWORD_SIGN_IN=false, the password signs in root admins only', async () => {
    async function passwordSignIn(email: string, password: string) {
      const csrf = await fetch(`${consoleUrl}/api/auth/csrf`);
      const cookie = csrf.headers
        .getSetCookie()
        .map((c) => c.split(';')[0])
        .join('; ');
      const { csrfToken } = (await csrf.json()) as { csrfToken: string };
      const response = await fetch(`${consoleUrl}/api/auth/callback/credentials`, {
        method: 'POST',
        redirect: 'manual',
        headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ csrfToken, email, password, json: 'true' }).toString(),
      });
      return response.headers.getSetCookie().some((c) => c.startsWith('next-auth.session-token='));
    }
    const password = `erin-${randomBytes(8).toString('hex')}`;
    const erin = await createOperator(database.db, {
      email: 'erin@example.com',
      name: 'Erin',
      password,
      tenantId: await tenantId(team),
      role: 'admin',
    });
    expect(await passwordSignIn('erin@example.com', password)).toBe(false);
    // The account page offers a password change only to those who have one; SSO-created operators have none.
    expect(await hasOwnPassword(database.db, erin.id)).toBe(true);
    const alice = await database.db.operator.findUniqueOrThrow({ where: { email: 'alice@example.com' } });
    expect(await hasOwnPassword(database.db, alice.id)).toBe(false);
    expect(await passwordSignIn('alice@example.com', 'sso-only')).toBe(false);
    const root = (await getRootTenant(database.db))!;
    const admin = await database.db.membership.findFirstOrThrow({
      where: { tenantId: root.id, role: 'admin' },
      include: { operator: true },
    });
    const oneTime = await resetOperatorPassword(database.db, admin.operator.email);
    expect(await passwordSignIn(admin.operator.email, oneTime)).toBe(true);
  }, 60_000);
});
