import { expect, test } from '@playwright/test';
import { openPage } from '../support/console-pages';
import { uniqueName } from '../support/env';
import { roleState } from '../support/roles';
import { trpc } from '../support/session';

test.use({ storageState: roleState('admin') });

test('an admin creates a site and edits its settings in the console', async ({ page }) => {
  test.setTimeout(90_000);
  await openPage(page, '/sites', 'Sites');
  const name = uniqueName('e2e-site');
  await page.getByRole('button', { name: 'Create site' }).click();
  const create = page.getByRole('dialog', { name: 'Create site' });
  await create.getByLabel('Name').fill('Not A Name');
  await create.getByRole('button', { name: 'Create site' }).click();
  await expect(create.getByLabel('Name')).toHaveAttribute('aria-invalid', 'true');
  await create.getByLabel('Name').fill(name);
  await create.getByRole('button', { name: 'Create site' }).click();
  await expect(create).toBeHidden();
  await expect(page.getByRole('status')).toContainText(`Site ${name} created.`);
  const row = page.getByRole('row').filter({ has: page.getByRole('rowheader', { name: new RegExp(`^${name}`) }) });
  await expect(row).toContainText('known ones admitted');

  await row.getByRole('button', { name: `Settings of site ${name}` }).click();
  const settings = page.getByRole('dialog', { name: `Settings of site ${name}` });
  await settings.getByRole('radio', { name: /Hold every machine for a person/ }).check();
  await settings.getByLabel('Most requests waiting at once').fill('0');
  await settings.getByRole('button', { name: 'Save settings' }).click();
  // The server's bound, next to the field it is about.
  await expect(settings.getByLabel('Most requests waiting at once')).toHaveAccessibleDescription(/at least 1/);
  await settings.getByLabel('Most requests waiting at once').fill('50');
  await settings.getByLabel('A request waits (hours)').fill('2');
  await settings.getByRole('checkbox', { name: /Let unlisted TPMs wait in the queue/ }).setChecked(false);
  await settings.getByRole('radio', { name: /Two, by different people/ }).check();
  await settings.getByRole('button', { name: 'Save settings' }).click();
  await expect(settings).toBeHidden();
  await expect(row).toContainText('held for a person');
  await expect(row).toContainText('at most 50');
  await expect(row).toContainText('two people');

  const { items: tenants } = await trpc<{ items: { id: string; isRoot: boolean }[] }>(page.request, 'query', 'tenants.list', {});
  const tenantId = tenants.find((t) => t.isRoot)!.id;
  const { items: sites } = await trpc<{ items: { id: string; name: string }[] }>(page.request, 'query', 'sites.list', { tenantId });
  const site = await trpc<{
    discovery: { approval: string; maxPendingRequests: number; pendingTtlSeconds: number };
    tpm: { enrollment: boolean };
    requiredApprovals: number;
  }>(page.request, 'query', 'sites.get', { tenantId, siteId: sites.find((s) => s.name === name)!.id });
  expect(site.discovery).toEqual({ approval: 'always', maxPendingRequests: 50, pendingTtlSeconds: 7200 });
  expect(site.tpm.enrollment).toBe(false);
  expect(site.requiredApprovals).toBe(2);
});
