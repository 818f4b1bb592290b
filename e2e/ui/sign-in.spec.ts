import { expect, test } from '@playwright/test';
import { adminCredentials } from '../support/env';
import { signInThroughForm } from '../support/session';

test('the console sends a visitor without a session to sign in', async ({ page }) => {
  await page.goto('/pools');
  // The page asked for comes along, to return to after sign-in.
  await expect(page).toHaveURL(/\/login\?callbackUrl=%2Fpools$/);
  await expect(page.getByRole('heading', { name: 'Sign in to the console' })).toBeVisible();
});

test('a wrong password shows an error and signs nobody in', async ({ page }) => {
  await page.goto('/login');
  await page.getByLabel('Email').fill(adminCredentials().email);
  await page.getByLabel('Password').fill('not-the-password');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page.getByRole('main').getByRole('alert')).toHaveText('Wrong email or password.');
  await expect(page).toHaveURL(/\/login$/);
  await expect(page.getByLabel('Password')).toHaveValue('');
  await expect(page.getByLabel('Password')).toBeFocused();
  await page.goto('/pools');
  await expect(page).toHaveURL(/\/login\?callbackUrl=%2Fpools$/);
});

test('an operator signs in, sees who is signed in, and signs out', async ({ page }) => {
  await signInThroughForm(page);
  // The account block follows the nav in tab order, so it sits beside the banner rather than in it.
  const banner = page.getByRole('group', { name: 'Signed-in operator' }).locator('..');
  await expect(banner.getByText(adminCredentials().email)).toBeVisible();
  await expect(page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Overview' })).toHaveAttribute(
    'aria-current',
    'page',
  );

  await banner.getByRole('button', { name: 'Sign out' }).click();
  await expect(page).toHaveURL(/\/login$/);
  await page.goto('/pools');
  // Signed out on purpose: the cookie is gone, so this is no expired session.
  await expect(page).toHaveURL(/\/login\?callbackUrl=%2Fpools$/);
});

test('after ten failed sign-ins an email is locked, and the form says so and how to recover', async ({ page }) => {
  // An address no test signs in with, so the lock touches no other test.
  const email = `locked-${Date.now().toString(36)}@example.com`;
  await page.goto('/login');
  const alert = page.getByRole('main').getByRole('alert');
  for (let i = 0; i < 10; i++) {
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill('not-the-password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    // The form empties the password once the server answered.
    await expect(page.getByLabel('Password')).toHaveValue('');
    await expect(alert).toHaveText('Wrong email or password.');
  }
  await page.getByLabel('Password').fill('not-the-password');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(alert).toContainText('Too many failed sign-ins for this email');
  await expect(alert).toContainText('better-compute operators reset-password --local');
});
