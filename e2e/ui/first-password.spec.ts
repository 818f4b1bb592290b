import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { expect, test } from '@playwright/test';

/**
 * A fresh one-time password, as `operators create --local` prints it on the server machine (run here against
 * the e2e server's own data directory, whose running PostgreSQL it finds), for an operator no other spec uses.
 */
function oneTimeOperator(): { email: string; password: string } {
  const dataDir = process.env.E2E_DATA_DIR;
  if (!dataDir) throw new Error('E2E_DATA_DIR is not set: run `npm run test:e2e`.');
  const email = `first-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 6)}@example.com`;
  const env: NodeJS.ProcessEnv = { ...process.env, BETTER_COMPUTE_DATA_DIR: dataDir };
  delete env.DATABASE_URL;
  const run = spawnSync(
    process.execPath,
    [
      path.join(process.cwd(), 'bin/better-compute.mjs'),
      'operators',
      'create',
      '--local',
      '--email',
      email,
      '--tenant',
      'root',
      '--role',
      'viewer',
    ],
    { env, encoding: 'utf8' },
  );
  expect(run.status, run.stderr).toBe(0);
  const password = /One-time password for \S+: (\S+)/.exec(run.stdout)?.[1];
  expect(password).toBeTruthy();
  return { email, password: password! };
}

test('a one-time password must be replaced before anything else, in the browser', async ({ page }) => {
  // Two sign-ins and a password change, each a 32 MiB scrypt, on a machine other tests share.
  test.setTimeout(60_000);
  const { email, password } = oneTimeOperator();
  await page.goto('/login?callbackUrl=%2Fevents');
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page).toHaveURL(/\/choose-password$/);
  await expect(page.getByRole('heading', { name: 'Choose a new password' })).toBeVisible();

  // Every console page and every API call of this session is refused until then.
  await page.goto('/pools');
  await expect(page).toHaveURL(/\/choose-password$/);
  const api = await page.request.get(`/api/trpc/tenants.list?input=${encodeURIComponent('{}')}`);
  expect(api.status()).toBe(403);
  expect((await api.json()).error.data.domainCode).toBe('ACCESS_DENIED');

  // The form's own checks, then the server's: a wrong one-time password is named as such.
  const chosen = `chosen-${Math.random().toString(36).slice(2)}-pw`;
  const alert = page.getByRole('main').getByRole('alert');
  // Every problem at once, each under its field.
  await page.getByLabel('New password', { exact: true }).fill('short');
  await page.getByLabel('Repeat the new password').fill('shorter');
  await page.getByRole('button', { name: 'Set the new password' }).click();
  await expect(alert).toHaveText([
    'Give the one-time password you signed in with.',
    'Use at least 12 characters.',
    'The two new passwords differ.',
  ]);
  await expect(page.getByLabel('One-time password')).toHaveAttribute('aria-invalid', 'true');
  await expect(page.getByLabel('Repeat the new password')).toHaveAttribute('aria-invalid', 'true');
  await page.getByLabel('One-time password').fill(password);
  await page.getByLabel('New password', { exact: true }).fill('short');
  await page.getByLabel('Repeat the new password').fill('short');
  await page.getByRole('button', { name: 'Set the new password' }).click();
  await expect(alert).toHaveText('Use at least 12 characters.');
  await page.getByLabel('One-time password').fill('not-the-one-time-password');
  await page.getByLabel('New password', { exact: true }).fill(chosen);
  await page.getByLabel('Repeat the new password').fill(chosen);
  await page.getByRole('button', { name: 'Set the new password' }).click();
  await expect(alert).toHaveText('That is not the one-time password you signed in with.');

  await page.getByLabel('One-time password').fill(password);
  await page.getByRole('button', { name: 'Set the new password' }).click();
  // The console opens on the tenant's overview.
  await expect(page).toHaveURL(/^[^?]*:\/\/[^/]+\/(\?|$)/);
  await expect(page.getByRole('group', { name: 'Signed-in operator' })).toContainText(email);
  expect((await page.request.get(`/api/trpc/tenants.list?input=${encodeURIComponent('{}')}`)).status()).toBe(200);

  // The one-time password no longer signs in; the chosen one does.
  await page.getByRole('button', { name: 'Sign out' }).click();
  await expect(page).toHaveURL(/\/login$/);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page.getByRole('main').getByRole('alert')).toHaveText('Wrong email or password.');
  await page.getByLabel('Password').fill(chosen);
  await page.getByRole('button', { name: 'Sign in' }).click();
  // The console opens on the tenant's overview.
  await expect(page).toHaveURL(/^[^?]*:\/\/[^/]+\/(\?|$)/);
});
