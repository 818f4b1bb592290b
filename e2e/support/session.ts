import { expect, type APIRequestContext, type Browser, type BrowserContext, type Page } from '@playwright/test';
import { adminCredentials, uniqueName } from './env';

/** Signs in through the console's own form, as an operator would. */
export async function signInThroughForm(page: Page) {
  const { email, password } = adminCredentials();
  await page.goto('/login');
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  // The console opens on the tenant's overview.
  await expect(page).toHaveURL(/^[^?]*:\/\/[^/]+\/(\?|$)/);
  await waitForConsoleReady(page);
}

/**
 * Opens the console's overview with the session the page's context already holds (a role's saved state,
 * `test.use({ storageState: roleState('admin') })`), where signInThroughForm would have left it.
 */
export async function openConsole(page: Page) {
  await page.goto('/');
  await expect(page).toHaveURL(/^[^?]*:\/\/[^/]+\/(\?|$)/);
  await waitForConsoleReady(page);
}

/**
 * Waits until the console shell is hydrated and has its tenant: the top bar's tenant appears only after the
 * client has loaded the operator's tenants. A click on a nav link before that can race the hydration.
 */
async function waitForConsoleReady(page: Page) {
  await expect(page.getByRole('banner').locator('.tenant-current')).toBeVisible();
}

/** Signs a request context in through next-auth's credentials endpoint; its cookies then carry the session. */
export async function signInOverHttp(request: APIRequestContext) {
  const { email, password } = adminCredentials();
  const csrf = await request.get('/api/auth/csrf');
  expect(csrf.ok()).toBeTruthy();
  const { csrfToken } = (await csrf.json()) as { csrfToken: string };
  const callback = await request.post('/api/auth/callback/credentials', {
    form: { csrfToken, email, password, json: 'true' },
    maxRedirects: 0,
  });
  expect(callback.status()).toBeLessThan(400);
  const session = await (await request.get('/api/auth/session')).json();
  expect(session?.user?.email).toBe(email);
}

/** Calls a tRPC procedure with the context's session (no transformer: the body is the input itself). */
export async function trpc<T>(request: APIRequestContext, kind: 'query' | 'mutation', path: string, input: unknown): Promise<T> {
  const response =
    kind === 'query'
      ? await request.get(`/api/trpc/${path}?input=${encodeURIComponent(JSON.stringify(input))}`)
      : await request.post(`/api/trpc/${path}`, { data: input });
  const body = await response.json();
  expect(response.ok(), JSON.stringify(body.error ?? body)).toBeTruthy();
  return body.result.data as T;
}

/**
 * A new operator of `tenantId` with `role` (invited and accepted over the admin's `admin` request context),
 * signed in through the form in a browser context of its own, which the caller closes.
 */
export async function signInNewOperator(
  browser: Browser,
  admin: APIRequestContext,
  options: { baseURL: string; tenantId: string; role: 'viewer' | 'operator' | 'approver' | 'admin' },
): Promise<{ context: BrowserContext; page: Page }> {
  const email = `${uniqueName(options.role)}@example.com`;
  const password = `${options.role}-${Math.random().toString(36).slice(2)}-pw`;
  const invitation = await trpc<{ token: string }>(admin, 'mutation', 'invitations.create', {
    tenantId: options.tenantId,
    email,
    role: options.role,
  });
  await trpc(admin, 'mutation', 'invitations.accept', { token: invitation.token, name: `New ${options.role}`, password });
  // Signed out, whatever storageState the spec's `test.use` gives new contexts.
  const context = await browser.newContext({ baseURL: options.baseURL, storageState: { cookies: [], origins: [] } });
  const page = await context.newPage();
  await page.goto('/login');
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page).toHaveURL(/^[^?]*:\/\/[^/]+\/(\?|$)/);
  return { context, page };
}
