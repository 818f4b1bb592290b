import { expect, test } from '@playwright/test';
import { uniqueName } from '../support/env';
import { openConsole, trpc } from '../support/session';
import { roleState } from '../support/roles';

// Signed in as the first admin by the setup project (e2e/support/roles.ts), not through the form.
test.use({ storageState: roleState('admin') });

interface Tenant {
  id: string;
  name: string;
  isRoot: boolean;
  isMember: boolean;
}

test('an operator of several tenants switches between them, and the URL keeps the choice', async ({ page, browser, baseURL }) => {
  test.setTimeout(90_000);
  // The root admin creates a tenant and invites its first admin; it does not become a member itself.
  await openConsole(page);
  const name = uniqueName('e2e-tenant');
  const tenant = await trpc<Tenant>(page.request, 'mutation', 'tenants.create', { name });
  expect(tenant.isMember).toBe(false);
  const root = (await trpc<{ items: Tenant[] }>(page.request, 'query', 'tenants.list', {})).items.find((t) => t.isRoot)!;
  const email = `${uniqueName('two-tenants')}@example.com`;
  const first = await trpc<{ token: string }>(page.request, 'mutation', 'invitations.create', {
    tenantId: tenant.id,
    email,
    role: 'admin',
  });
  const alsoRoot = await trpc<{ token: string }>(page.request, 'mutation', 'invitations.create', {
    tenantId: root.id,
    email,
    role: 'viewer',
  });
  // The root admin's switcher does not offer the tenant it only created.
  await page.goto('/pools');
  await expect(page.getByRole('heading', { name: 'Pools', level: 1 })).toBeVisible();
  await expect(page.getByRole('banner').getByRole('option', { name, exact: true })).toHaveCount(0);

  // The invited person accepts the new tenant's invitation in the browser, then the root tenant's with the
  // same account: two memberships turn the tenant name into a switcher.
  const context = await browser.newContext({ baseURL });
  const member = await context.newPage();
  await member.goto(`/invite#${first.token}`);
  const password = `two-tenants-${Math.random().toString(36).slice(2)}-pw`;
  await member.getByLabel('Your name').fill('Two Tenants');
  await member.getByLabel('Password', { exact: true }).fill(password);
  await member.getByLabel('Repeat the password').fill(password);
  await member.getByRole('button', { name: 'Accept and sign in' }).click();
  await expect(member).toHaveURL(/^[^?]*:\/\/[^/]+\/(\?|$)/);
  await expect(member.getByRole('banner')).toContainText(name);
  const accepted = await member.request.post('/api/trpc/invitations.accept', {
    data: { token: alsoRoot.token, password },
    headers: { origin: baseURL! },
  });
  expect(accepted.ok(), await accepted.text()).toBeTruthy();
  await member.goto('/pools');

  const switcher = member.getByRole('banner').getByLabel('Tenant');
  await expect(switcher.getByRole('option', { name: 'root', exact: true })).toBeAttached();
  await switcher.selectOption({ label: name });
  await expect(member).toHaveURL(new RegExp(`/pools\\?tenant=${tenant.id}$`));
  await expect(member.getByRole('heading', { name: 'Pools', level: 1 })).toBeVisible();
  await expect(member.getByText(`Tenant ${name}.`)).toBeVisible();
  // The new tenant's own (empty) pools page, with its admin's controls, not an error.
  await expect(member.getByText('This tenant has no sites yet.')).toBeVisible();
  await expect(member.getByText(/not found/i)).toHaveCount(0);

  await member.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Events' }).click();
  await expect(member).toHaveURL(new RegExp(`/events\\?tenant=${tenant.id}$`));
  await expect(member.getByText(`What happened in tenant ${name}`)).toBeVisible();

  await member.goto('/pools?tenant=tnt_doesnotexist');
  await expect(member.getByRole('alert').filter({ hasText: 'Tenant “tnt_doesnotexist” not found.' })).toBeVisible();
  // The root admin, who is no member of it, gets the same answer for the tenant it created.
  await page.goto(`/pools?tenant=${tenant.id}`);
  await expect(page.getByRole('alert').filter({ hasText: `Tenant “${tenant.id}” not found.` })).toBeVisible();
  await context.close();
});
