import { expect, test, type Page } from '@playwright/test';
import { uniqueName } from '../support/env';
import { roleState } from '../support/roles';

// Signed in as the first admin by the setup project (e2e/support/roles.ts), not through the form.
test.use({ storageState: roleState('admin') });

const site = (page: Page, name: string) => page.getByRole('region', { name: `Site ${name}` });
const poolRow = (page: Page, siteName: string, poolName: string) =>
  site(page, siteName)
    .getByRole('row')
    .filter({ has: page.getByText(poolName, { exact: true }) });

async function openCreateDialog(page: Page) {
  await page.getByRole('button', { name: 'Create pool' }).click();
  const dialog = page.getByRole('dialog', { name: 'Create pool' });
  await expect(dialog).toBeVisible();
  await expect(dialog.getByLabel('Name')).toBeFocused();
  return dialog;
}

test.beforeEach(async ({ page }) => {
  await page.goto('/pools');
});

test('the default site lists the default pool', async ({ page }) => {
  await expect(page.getByRole('heading', { name: 'Pools', level: 1 })).toBeVisible();
  await expect(site(page, 'default')).toBeVisible();
  const row = poolRow(page, 'default', 'default');
  await expect(row).toBeVisible();
  await expect(row.getByRole('cell', { name: 'bcd', exact: true })).toBeVisible();
  await expect(row.getByText(/^pool_/)).toBeVisible();
  await expect(row.getByText('Active')).toBeVisible();
});

test('a pool created through the dialog is listed with its policy', async ({ page }) => {
  const name = uniqueName('e2e');
  const dialog = await openCreateDialog(page);
  await expect(dialog.getByLabel('Site')).toHaveValue(/^site_/);
  await dialog.getByLabel('Name').fill(name);
  await dialog.getByRole('radio', { name: /bcd/ }).check();
  await dialog.getByRole('checkbox', { name: /join-token/ }).check();
  await dialog.getByRole('checkbox', { name: /tpm/ }).check();
  await dialog.getByRole('checkbox', { name: /Platform-operated/ }).check();
  // Only the checks the agent runs are offered, each with its threshold.
  const checks = dialog.getByRole('group', { name: /Acceptance checks/ });
  await expect(checks.getByRole('checkbox')).toHaveCount(4);
  await checks.getByRole('checkbox', { name: /identity/ }).check();
  await checks.getByRole('checkbox', { name: /gpu-count/ }).check();
  await checks.getByLabel('Minimum GPUs').fill('4');
  await dialog.getByRole('button', { name: 'Create pool' }).click();

  await expect(dialog).toBeHidden();
  await expect(page.getByRole('status')).toContainText(`Pool ${name} created in site default.`);
  const row = poolRow(page, 'default', name);
  await expect(row).toBeVisible();
  for (const text of ['join-token', 'tpm', 'k8s platform-operated', 'identity', 'gpu-count']) {
    await expect(row.getByText(text, { exact: true })).toBeVisible();
  }
});

test('the server’s errors show next to the field they are about', async ({ page }) => {
  const dialog = await openCreateDialog(page);
  const name = dialog.getByLabel('Name');

  await name.fill('default');
  await dialog.getByRole('button', { name: 'Create pool' }).click();
  await expect(name).toHaveAttribute('aria-invalid', 'true');
  await expect(name).toHaveAccessibleDescription(/A pool named default already exists in site default/);
  await expect(dialog).toBeVisible();

  // Editing the field clears its error; a bad threshold is reported on the checks group, by the check's name.
  await name.fill(uniqueName('e2e'));
  await expect(name).not.toHaveAttribute('aria-invalid', 'true');
  const checks = dialog.getByRole('group', { name: /Acceptance checks/ });
  await checks.getByRole('checkbox', { name: /min-cpus/ }).check();
  await checks.getByLabel('Minimum CPUs').fill('0');
  await dialog.getByRole('button', { name: 'Create pool' }).click();
  await expect(checks).toHaveAttribute('aria-invalid', 'true');
  await expect(checks.getByRole('alert')).toHaveText(/^min-cpus: /);

  await dialog.getByRole('button', { name: 'Cancel' }).click();
  await expect(dialog).toBeHidden();
});

test('archiving a pool asks first and then hides it', async ({ page }) => {
  const name = uniqueName('e2e-archive');
  const dialog = await openCreateDialog(page);
  await dialog.getByLabel('Name').fill(name);
  await dialog.getByRole('button', { name: 'Create pool' }).click();
  await expect(poolRow(page, 'default', name)).toBeVisible();

  await poolRow(page, 'default', name)
    .getByRole('button', { name: `Archive pool ${name}` })
    .click();
  const confirm = page.getByRole('dialog', { name: `Archive pool ${name}?` });
  await expect(confirm.getByRole('button', { name: 'Cancel' })).toBeFocused();
  await confirm.getByRole('button', { name: 'Cancel' }).click();
  await expect(poolRow(page, 'default', name)).toBeVisible();

  await poolRow(page, 'default', name)
    .getByRole('button', { name: `Archive pool ${name}` })
    .click();
  await confirm.getByRole('button', { name: 'Archive pool' }).click();
  await expect(confirm).toBeHidden();
  await expect(poolRow(page, 'default', name)).toHaveCount(0);

  await page.getByLabel('Show archived').check();
  await expect(poolRow(page, 'default', name).getByText('Archived')).toBeVisible();
});
