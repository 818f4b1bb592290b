import { expect, test } from '@playwright/test';
import { uniqueName } from '../support/env';
import { signInThroughForm } from '../support/session';

/**
 * Not a check: captures the console for a person to look at. Runs only when E2E_SCREENSHOTS names a
 * directory, e.g. `E2E_SCREENSHOTS=/tmp/shots npm run test:e2e -- --project ui screenshots`.
 */
const directory = process.env.E2E_SCREENSHOTS;
// Skipped in CI on purpose: it asserts nothing and only writes images when a person asks for them.
test.skip(!directory, 'set E2E_SCREENSHOTS to a directory to capture screenshots');

test('capture the console', async ({ page }) => {
  await page.goto('/login');
  await page.screenshot({ path: `${directory}/login.png` });
  await signInThroughForm(page);

  const pools = [
    { name: uniqueName('gpu-h100'), attestors: ['join-token', 'tpm'], checks: 'gpu-burn, nccl-allreduce' },
    { name: uniqueName('k8s-workers'), attestors: [], checks: '', platformOperated: true },
  ];
  for (const pool of pools) {
    await page.getByRole('button', { name: 'Create pool' }).click();
    const dialog = page.getByRole('dialog', { name: 'Create pool' });
    await dialog.getByLabel('Name').fill(pool.name);
    for (const attestor of pool.attestors) await dialog.getByRole('checkbox', { name: new RegExp(attestor) }).check();
    if (pool.platformOperated) await dialog.getByRole('checkbox', { name: /Platform-operated/ }).check();
    if (pool.checks) await dialog.getByLabel('Acceptance checks').fill(pool.checks);
    if (pool === pools[0]) await page.screenshot({ path: `${directory}/create-pool.png` });
    await dialog.getByRole('button', { name: 'Create pool' }).click();
    await expect(dialog).toBeHidden();
  }
  await page.screenshot({ path: `${directory}/pools.png`, fullPage: true });

  await page.getByRole('button', { name: 'Create pool' }).click();
  const dialog = page.getByRole('dialog', { name: 'Create pool' });
  await dialog.getByLabel('Name').fill('default');
  await dialog.getByRole('button', { name: 'Create pool' }).click();
  await expect(dialog.getByLabel('Name')).toHaveAttribute('aria-invalid', 'true');
  await page.screenshot({ path: `${directory}/create-pool-error.png` });
  await dialog.getByRole('button', { name: 'Cancel' }).click();

  await page.getByRole('link', { name: 'Events' }).click();
  await expect(page.getByRole('region', { name: 'Events' }).or(page.getByText('No events in this tenant yet.'))).toBeVisible();
  await page.screenshot({ path: `${directory}/events.png`, fullPage: true });
  await page.getByRole('link', { name: 'Join tokens' }).click();
  await expect(page.getByRole('heading', { name: 'Join tokens', level: 1 })).toBeVisible();
  await page.screenshot({ path: `${directory}/join-tokens.png` });
});
