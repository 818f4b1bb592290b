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
