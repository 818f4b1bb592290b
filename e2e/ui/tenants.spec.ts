import { expect, test } from '@playwright/test';
import { uniqueName } from '../support/env';
import { signInThroughForm, trpc } from '../support/session';

test('an operator of several tenants switches between them, and the URL keeps the choice', async ({ page }) => {
  await signInThroughForm(page);
  await page.goto('/pools');
  // The operator who creates a tenant administers it; a second tenant turns the tenant name into a switcher.
  const name = uniqueName('e2e-tenant');
  const tenant = await trpc<{ id: string }>(page.request, 'mutation', 'tenants.create', { name });
  await page.reload();

  const switcher = page.getByRole('banner').getByLabel('Tenant');
  await expect(switcher.getByRole('option', { name: 'root', exact: true })).toBeAttached();
  await switcher.selectOption({ label: name });
  await expect(page).toHaveURL(new RegExp(`/pools\\?tenant=${tenant.id}$`));
  await expect(page.getByRole('heading', { name: 'Pools', level: 1 })).toBeVisible();
  await expect(page.getByText(`Tenant ${name}.`)).toBeVisible();
  // The new tenant's own (empty) pools page, not an error.
  await expect(page.getByText('This tenant has no sites yet.')).toBeVisible();
  await expect(page.getByText(/not found/i)).toHaveCount(0);

  await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Events' }).click();
  await expect(page).toHaveURL(new RegExp(`/events\\?tenant=${tenant.id}$`));
  await expect(page.getByText(`What happened in tenant ${name}`)).toBeVisible();

  await page.goto('/pools?tenant=tnt_doesnotexist');
  await expect(page.getByRole('alert').filter({ hasText: 'Tenant “tnt_doesnotexist” not found.' })).toBeVisible();
});
