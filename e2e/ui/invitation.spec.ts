import { expect, test } from '@playwright/test';
import { signInOverHttp, trpc } from '../support/session';

interface Tenant {
  id: string;
  isRoot: boolean;
}

test('an invited operator accepts in the browser, signs in, and a removal ends the open console', async ({ page, playwright, baseURL }) => {
  // The admin works over HTTP with its own session, as another browser would.
  const admin = await playwright.request.newContext({ baseURL, extraHTTPHeaders: { origin: baseURL! } });
  await signInOverHttp(admin);
  const { items } = await trpc<{ items: Tenant[] }>(admin, 'query', 'tenants.list', {});
  const root = items.find((t) => t.isRoot)!;
  const email = `invited-${Date.now().toString(36)}@example.com`;
  const invitation = await trpc<{ id: string; token: string }>(admin, 'mutation', 'invitations.create', {
    tenantId: root.id,
    email,
    role: 'viewer',
  });

  await page.goto(`/invite#${invitation.token}`);
  await expect(page.getByRole('heading', { name: 'Accept your invitation' })).toBeVisible();
  const password = `invited-${Math.random().toString(36).slice(2)}-pw`;
  await page.getByLabel('Your name').fill('Invited Viewer');
  await page.getByLabel('Password', { exact: true }).fill(password);
  await page.getByLabel('Repeat the password').fill(password);
  await page.getByRole('button', { name: 'Accept and sign in' }).click();
  // The console opens on the tenant's overview; the removal below is watched from Pools.
  await expect(page).toHaveURL(/^[^?]*:\/\/[^/]+\/(\?|$)/);
  await expect(page.getByRole('group', { name: 'Signed-in operator' })).toContainText('Invited Viewer');

  // The link worked once.
  const second = await page.context().browser()!.newContext();
  const other = await second.newPage();
  await other.goto(`${baseURL}/invite#${invitation.token}`);
  await other.getByLabel('Your name').fill('Someone Else');
  await other.getByLabel('Password', { exact: true }).fill(password);
  await other.getByLabel('Repeat the password').fill(password);
  await other.getByRole('button', { name: 'Accept and sign in' }).click();
  await expect(other.getByRole('main').getByRole('alert')).toContainText('This invitation link is not valid');
  await second.close();

  // The admin removes the operator: the open console notices by itself (its live stream ends, the lists
  // re-read and are refused) and asks to sign in again; a new page load is refused too.
  const operators = await trpc<{ items: { id: string; email: string }[] }>(admin, 'query', 'operators.list', { tenantId: root.id });
  const invited = operators.items.find((o) => o.email === email)!;
  await page.goto('/pools');
  await expect(page.getByRole('heading', { name: 'Pools', level: 1 })).toBeVisible();
  await trpc(admin, 'mutation', 'operators.remove', { tenantId: root.id, operatorId: invited.id });
  await expect(page).toHaveURL(/\/login\?callbackUrl=%2Fpools[^&]*&expired=1$/, { timeout: 40_000 });
  await page.goto('/events');
  await expect(page).toHaveURL(/\/login\?callbackUrl=%2Fevents&expired=1$/);
  await admin.dispose();
});
