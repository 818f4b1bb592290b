import { expect, test, type Browser, type Page } from '@playwright/test';
import { startOidcProvider, type TestOidcProvider } from '../../test/oidc-provider';
import { signInOverHttp, trpc } from '../support/session';

/**
 * Single sign-on in Chromium through a real OpenID provider (oidc-provider), which this file starts on the
 * issuer URL scripts/e2e.mjs configured the server with; its role map gives group `sso-operators` the
 * operator role in tenant `sso-team`. One worker runs the whole file: the provider listens on one port.
 */
test.describe.configure({ mode: 'serial' });

const TENANT = 'sso-team';
let idp: TestOidcProvider;

test.beforeAll(async ({ playwright, baseURL }) => {
  const issuer = process.env.BETTER_COMPUTE_OIDC_ISSUER;
  if (!issuer) throw new Error('BETTER_COMPUTE_OIDC_ISSUER is not set: run the end-to-end tests with `npm run test:e2e` (scripts/e2e.mjs)');
  const origin = new URL(baseURL!);
  const callbacks = ['localhost', '127.0.0.1'].map((host) => `${origin.protocol}//${host}:${origin.port}/api/auth/callback/oidc`);
  idp = await startOidcProvider({
    port: Number(new URL(issuer).port),
    clientId: process.env.BETTER_COMPUTE_OIDC_CLIENT_ID,
    clientSecret: process.env.BETTER_COMPUTE_OIDC_CLIENT_SECRET,
    redirectUri: callbacks,
    people: {
      'sso-op': { email: 'sso-op@example.com', email_verified: true, name: 'Sso Operator', groups: ['sso-operators', 'unmapped'] },
      'sso-nobody': { email: 'sso-nobody@example.com', email_verified: true, name: 'Nobody', groups: ['marketing'] },
    },
  });
  // The tenant the role map names: created by the root admin, who is no member of it (SSO gives the memberships).
  const admin = await playwright.request.newContext({ baseURL, extraHTTPHeaders: { origin: baseURL! } });
  await signInOverHttp(admin);
  const { items } = await trpc<{ items: { name: string }[] }>(admin, 'query', 'tenants.list', {});
  if (!items.some((t) => t.name === TENANT)) await trpc(admin, 'mutation', 'tenants.create', { name: TENANT });
  await admin.dispose();
});

test.afterAll(async () => {
  await idp?.close();
});

/** The console's sign-in page → the provider's login and consent pages → back to the console. */
async function signInWithProvider(page: Page, login: string) {
  await page.goto('/login');
  await page.getByRole('button', { name: 'Continue with Test IdP' }).click();
  await page.locator('input[name="login"]').fill(login);
  await page.locator('input[name="password"]').fill('any password');
  await page.getByRole('button', { name: 'Sign-in' }).click();
  await page.getByRole('button', { name: 'Continue' }).click();
}

async function freshPage(browser: Browser) {
  const context = await browser.newContext();
  return { page: await context.newPage(), close: () => context.close() };
}

test('signs in through the provider’s login page and lands in the mapped tenant with the operator role’s controls only', async ({
  browser,
  baseURL,
}) => {
  test.setTimeout(90_000);
  const { page, close } = await freshPage(browser);
  await signInWithProvider(page, 'sso-op');
  await expect(page).toHaveURL(new RegExp(`^${baseURL}/?$`));
  await expect(page.getByRole('group', { name: 'Signed-in operator' })).toContainText('Sso Operator');
  // One membership: the mapped tenant, shown without a switcher.
  await expect(page.getByRole('banner')).toContainText(TENANT);
  await expect(page.getByRole('combobox', { name: 'Tenant' })).toHaveCount(0);
  const nav = page.getByRole('navigation', { name: 'Console' });
  // Operators mint join tokens but do not manage pools or operators; no Tenants page.
  await nav.getByRole('link', { name: 'Join tokens', exact: true }).click();
  await expect(page.getByRole('heading', { name: 'Join tokens', level: 1 })).toBeVisible();
  await nav.getByRole('link', { name: 'Pools', exact: true }).click();
  await expect(page.getByRole('heading', { name: 'Pools', level: 1 })).toBeVisible();
  await expect(page.getByRole('button', { name: 'Create pool' })).toHaveCount(0);
  await nav.getByRole('link', { name: 'Operators', exact: true }).click();
  await expect(page.getByRole('main')).toContainText('only its admins see and manage its operators');
  await expect(nav.getByRole('link', { name: 'Tenants', exact: true })).toHaveCount(0);
  // The server agrees: the session is an operator of sso-team and nothing else.
  const { items } = await trpc<{ items: { name: string; role: string | null; isMember: boolean }[] }>(
    page.request,
    'query',
    'tenants.list',
    {},
  );
  expect(items.map((t) => [t.name, t.role])).toEqual([[TENANT, 'operator']]);
  await close();
});

test('a person whose groups map to nothing gets the no-access page and no session', async ({ browser }) => {
  test.setTimeout(60_000);
  const { page, close } = await freshPage(browser);
  await signInWithProvider(page, 'sso-nobody');
  await expect(page).toHaveURL(/\/no-access\?reason=no-access$/);
  await expect(page.getByRole('heading', { name: 'No access to this console' })).toBeVisible();
  await expect(page.getByRole('main').getByRole('alert')).toContainText('none of your groups gives access');
  await page.goto('/');
  await expect(page).toHaveURL(/\/login/);
  await close();
});

test('a group removed at the provider removes the membership at the next sign-in', async ({ browser }) => {
  test.setTimeout(60_000);
  idp.people.get('sso-op')!.groups = ['unmapped'];
  const { page, close } = await freshPage(browser);
  await signInWithProvider(page, 'sso-op');
  await expect(page).toHaveURL(/\/no-access\?reason=no-access$/);
  await close();
  idp.people.get('sso-op')!.groups = ['sso-operators'];
});

for (const size of [
  { width: 1440, height: 900 },
  { width: 390, height: 844 },
]) {
  test(`an account with a password is linked only by its password, never by the email alone (${size.width}×${size.height})`, async ({
    browser,
    playwright,
    baseURL,
  }) => {
    test.setTimeout(90_000);
    // The account exists with a password of its own (an invitation accepted with one).
    const email = `sso-pw-${size.width}-${Date.now().toString(36)}@example.com`;
    // A login of its own per size: once linked, the provider's subject signs in as that account.
    const login = `sso-pw-${size.width}`;
    idp.people.set(login, { email, email_verified: true, name: 'Has Password', groups: ['sso-operators'] });
    const admin = await playwright.request.newContext({ baseURL, extraHTTPHeaders: { origin: baseURL! } });
    await signInOverHttp(admin);
    const { items } = await trpc<{ items: { id: string; isRoot: boolean }[] }>(admin, 'query', 'tenants.list', {});
    const root = items.find((t) => t.isRoot)!;
    const invitation = await trpc<{ token: string }>(admin, 'mutation', 'invitations.create', { tenantId: root.id, email, role: 'viewer' });
    const password = `has-password-${Math.random().toString(36).slice(2)}`;
    await trpc(admin, 'mutation', 'invitations.accept', { token: invitation.token, name: 'Has Password', password });
    await admin.dispose();

    const { page, close } = await freshPage(browser);
    await page.setViewportSize(size);
    await signInWithProvider(page, login);
    await expect(page).toHaveURL(/\/link-sso#bcsso_/);
    await expect(page.getByRole('heading', { name: 'Link single sign-on to your account' })).toBeVisible();
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(size.width);
    // No session was made by the email alone.
    expect((await page.request.get(`/api/trpc/tenants.list?input=${encodeURIComponent('{}')}`)).status()).toBe(401);

    await page.getByLabel('Password of your account').fill('not-the-password');
    await page.getByRole('button', { name: 'Link single sign-on' }).click();
    await expect(page.getByRole('main').getByRole('alert')).toHaveText('That is not the password of this account.');
    await page.getByLabel('Password of your account').fill(password);
    await page.getByRole('button', { name: 'Link single sign-on' }).click();
    await expect(page.getByRole('status')).toContainText(`Single sign-on is linked to ${email}`);
    await close();

    // From now on single sign-on signs in as that account, with its own membership and the mapped one.
    const next = await freshPage(browser);
    await signInWithProvider(next.page, login);
    await expect(next.page.getByRole('group', { name: 'Signed-in operator' })).toContainText('Has Password');
    const tenants = await trpc<{ items: { name: string; role: string | null; isMember: boolean }[] }>(
      next.page.request,
      'query',
      'tenants.list',
      {},
    );
    expect(tenants.items.filter((t) => t.isMember).length).toBe(2);
    await next.close();
  });
}
