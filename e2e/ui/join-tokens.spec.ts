import { expect, test, type Page } from '@playwright/test';
import { uniqueName } from '../support/env';
import { openConsole, trpc } from '../support/session';
import { roleState } from '../support/roles';

// Signed in as the first admin by the setup project (e2e/support/roles.ts), not through the form.
test.use({ storageState: roleState('admin') });

const TOKEN = /^bcjt_jt_[0-9a-z]{26}\.[A-Za-z0-9_-]{43}$/;

const tokensPanel = (page: Page) => page.getByRole('region', { name: /^Pool / });
const tokenRow = (page: Page, tokenId: string) =>
  tokensPanel(page)
    .getByRole('row')
    .filter({ has: page.getByRole('rowheader', { name: tokenId }) });
const oneTimePanel = (page: Page) => page.getByRole('region', { name: 'New join token' });

async function openJoinTokens(page: Page) {
  await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Join tokens' }).click();
  await expect(page.getByRole('heading', { name: 'Join tokens', level: 1 })).toBeVisible();
  // The first bcd pool is chosen when the URL names none: on a fresh server, the default pool.
  await expect(page.getByLabel('Pool', { exact: true }).locator('option:checked')).toHaveText('default');
  await expect(page.getByRole('heading', { name: 'Pool default', level: 2 })).toBeVisible();
}

async function openCreateDialog(page: Page) {
  await page.getByRole('button', { name: 'Create join token' }).click();
  const dialog = page.getByRole('dialog', { name: 'Create join token' });
  await expect(dialog).toBeVisible();
  await expect(dialog.getByLabel('Lifetime', { exact: true })).toBeFocused();
  return dialog;
}

/** Creates a token pinned to `serial` through the dialog; returns the bearer token read from the one-time panel. */
async function createPinnedToken(page: Page, serial: string): Promise<string> {
  const dialog = await openCreateDialog(page);
  await dialog.getByLabel('Lifetime', { exact: true }).selectOption({ label: '1 hour' });
  await dialog.getByLabel('Serial', { exact: true }).fill(serial);
  await dialog.getByRole('button', { name: 'Create token' }).click();
  await expect(dialog).toBeHidden();
  await expect(oneTimePanel(page)).toBeVisible();
  return oneTimePanel(page).getByLabel('Join token', { exact: true }).inputValue();
}

/** Done on a token never copied or downloaded: the console asks first, and this confirms the discard. */
async function discardToken(page: Page) {
  await oneTimePanel(page).getByRole('button', { name: 'Done' }).click();
  await page.getByRole('dialog', { name: 'Discard the join token?' }).getByRole('button', { name: 'Discard token' }).click();
  await expect(oneTimePanel(page)).toHaveCount(0);
}

const idOf = (token: string) => token.slice('bcjt_'.length, token.indexOf('.'));

test.beforeEach(async ({ page }) => {
  await openConsole(page);
  await openJoinTokens(page);
});

test('a token is shown once, then listed as live with its pinned serial', async ({ page, context }) => {
  const serial = uniqueName('SN');
  const token = await createPinnedToken(page, serial);
  expect(token).toMatch(TOKEN);
  const panel = oneTimePanel(page);
  await expect(panel.getByText('it is shown only once and never again')).toBeVisible();
  await expect(panel.getByLabel('Join token', { exact: true })).toHaveAttribute('readonly', '');
  await expect(panel.getByLabel('Join token', { exact: true })).toBeFocused();

  // Copy writes the token to the clipboard (granted here; without the permission the field is selected instead).
  await context.grantPermissions(['clipboard-read', 'clipboard-write']);
  await panel.getByRole('button', { name: 'Copy' }).click();
  await expect(panel.getByText('Copied to the clipboard.')).toBeVisible();
  expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(token);
  await page.evaluate(() => navigator.clipboard.writeText(''));

  const secret = token.split('.')[1]!;
  await panel.getByRole('button', { name: 'Done' }).click();
  await expect(panel).toHaveCount(0);
  await expect(page.getByRole('button', { name: 'Create join token' })).toBeFocused();
  expect(await page.content()).not.toContain(secret);
  expect(page.url()).not.toContain(secret);
  const storage = await page.evaluate(() => JSON.stringify([{ ...localStorage }, { ...sessionStorage }]));
  expect(storage).not.toContain(secret);

  const row = tokenRow(page, idOf(token));
  await expect(row.getByText('Live', { exact: true })).toBeVisible();
  await expect(row.getByText(serial, { exact: true })).toBeVisible();
  await expect(row.getByRole('cell', { name: '1 / 1' })).toBeVisible();
});

test('a bad MAC shows the server’s error next to the MAC field', async ({ page }) => {
  const dialog = await openCreateDialog(page);
  const mac = dialog.getByLabel('MAC', { exact: true });

  await mac.fill('aa-bb-cc');
  await dialog.getByRole('button', { name: 'Create token' }).click();
  await expect(mac).toHaveAttribute('aria-invalid', 'true');
  await expect(mac).toHaveAccessibleDescription(/must be aa:bb:cc:dd:ee:ff/);

  // A well-formed but locally administered MAC is refused too, with its own reason; editing clears the error.
  await mac.fill('02:00:00:00:00:01');
  await expect(mac).not.toHaveAttribute('aria-invalid', 'true');
  await dialog.getByRole('button', { name: 'Create token' }).click();
  await expect(mac).toHaveAccessibleDescription(/globally administered/);
  await expect(dialog.getByLabel('Serial', { exact: true })).not.toHaveAttribute('aria-invalid', 'true');
  await expect(oneTimePanel(page)).toHaveCount(0);

  await dialog.getByRole('button', { name: 'Cancel' }).click();
  await expect(dialog).toBeHidden();
});

test('revoking asks first, takes the token off the live list, and Show inactive lists it as revoked', async ({ page }) => {
  const token = await createPinnedToken(page, uniqueName('SN-revoke'));
  const tokenId = idOf(token);
  await discardToken(page);

  const revokeButton = () => tokenRow(page, tokenId).getByRole('button', { name: `Revoke join token ${tokenId}` });
  await revokeButton().click();
  const confirm = page.getByRole('dialog', { name: 'Revoke join token?' });
  await expect(confirm).toContainText(tokenId);
  await expect(confirm.getByRole('button', { name: 'Cancel' })).toBeFocused();
  await confirm.getByRole('button', { name: 'Cancel' }).click();
  await expect(tokenRow(page, tokenId)).toBeVisible();

  await revokeButton().click();
  await confirm.getByRole('button', { name: 'Revoke token' }).click();
  await expect(confirm).toBeHidden();
  await expect(tokenRow(page, tokenId)).toHaveCount(0);
  // The revoke is confirmed in words, since the row it acted on has left the list.
  await expect(
    tokensPanel(page)
      .getByRole('status')
      .filter({ hasText: `Token ${tokenId} revoked` }),
  ).toBeVisible();

  await page.getByLabel('Show inactive').check();
  const row = tokenRow(page, tokenId);
  await expect(row.getByText('Revoked', { exact: true })).toBeVisible();
  await expect(row.getByRole('button', { name: /Revoke/ })).toHaveCount(0);

  // Revoking twice is not an error: the server answers with the revoked token.
  const tenants = await trpc<{ items: { id: string; name: string }[] }>(page.request, 'query', 'tenants.list', {});
  const poolId = await tokensPanel(page).getByTitle('Pool id').textContent();
  const again = await trpc<{ state: string }>(page.request, 'mutation', 'joinTokens.revoke', {
    tenantId: tenants.items.find((t) => t.name === 'root')!.id,
    poolId,
    tokenId,
  });
  expect(again.state).toBe('revoked');
});

test('?pool= names the pool, and an unknown one is reported', async ({ page }) => {
  const poolId = await tokensPanel(page).getByTitle('Pool id').textContent();
  await page.goto(`/join-tokens?pool=${poolId}`);
  await expect(page.getByRole('heading', { name: 'Pool default', level: 2 })).toBeVisible();
  await page.goto('/join-tokens?pool=pool_doesnotexist');
  await expect(page.getByRole('alert').filter({ hasText: 'Pool “pool_doesnotexist” not found.' })).toBeVisible();
  await expect(page.getByRole('button', { name: 'Create join token' })).toBeDisabled();
});
