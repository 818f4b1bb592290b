import { expect, test, type Page } from '@playwright/test';
import { adminCredentials, uniqueName } from '../support/env';
import { signInNewOperator, signInThroughForm, trpc } from '../support/session';
import { expectNoSeriousViolations } from '../support/axe';

const nav = (page: Page) => page.getByRole('navigation', { name: 'Console' });

test('Access: invite an operator with a one-time link, revoke it, create and revoke an API key, create a tenant and invite its first admin', async ({
  page,
}) => {
  test.setTimeout(120_000);
  await page.context().grantPermissions(['clipboard-read', 'clipboard-write']);
  await signInThroughForm(page);

  await nav(page).getByRole('link', { name: 'Operators', exact: true }).click();
  await expect(page.getByRole('heading', { name: 'Operators', level: 1 })).toBeVisible();
  // The first admin is listed by name or email with its role, never by id.
  const members = page.getByRole('region', { name: 'Members' });
  await expect(members.getByRole('row')).not.toHaveCount(1);
  await expect(members).not.toContainText('op_');
  await expectNoSeriousViolations(page, 'operators');

  const email = `${uniqueName('invitee')}@example.com`;
  await page.getByRole('button', { name: 'Invite operator' }).click();
  const invite = page.getByRole('dialog', { name: 'Invite an operator' });
  await invite.getByLabel('Email').fill(email);
  await invite.getByLabel('Role').selectOption('approver');
  await invite.getByRole('button', { name: 'Create invitation link' }).click();
  const link = page.getByRole('dialog', { name: 'Invitation link' });
  const field = link.getByLabel('Invitation link');
  await expect(field).toHaveValue(/\/invite#bcinv_inv_[0-9a-z]{26}\.[A-Za-z0-9_-]{43}$/);
  await expectNoSeriousViolations(page, 'invitation-link');
  // Done before a copy asks first; after Copy it closes, and the link is gone from the page.
  await link.getByRole('button', { name: 'Done' }).click();
  await expect(link.getByRole('alert')).toContainText('nobody can show it again');
  await link.getByRole('button', { name: 'Keep it open' }).click();
  await link.getByRole('button', { name: 'Copy' }).click();
  await expect(link.getByRole('status')).toHaveText('Copied to the clipboard.');
  const copied = await page.evaluate(() => navigator.clipboard.readText());
  expect(copied).toBe(await field.inputValue());
  await link.getByRole('button', { name: 'Done' }).click();
  await expect(link).toBeHidden();
  await expect(page.locator('body')).not.toContainText(copied.split('#')[1]!);

  const pending = page.getByRole('region', { name: 'Pending invitations' });
  const row = pending.getByRole('row').filter({ hasText: email });
  await expect(row).toContainText('approver');
  await row.getByRole('button', { name: `Revoke the invitation of ${email}` }).click();
  await page.getByRole('dialog', { name: 'Revoke the invitation?' }).getByRole('button', { name: 'Revoke invitation' }).click();
  await expect(row).toHaveCount(0);
  // The last admin cannot be removed: the server says why in the dialog.
  const self = members.getByRole('row').filter({ hasText: adminCredentials().email });
  await self.getByRole('button', { name: /^Remove / }).click();
  const confirm = page.getByRole('dialog', { name: /^Remove / });
  await confirm.getByRole('button', { name: 'Remove operator' }).click();
  await expect(confirm.getByRole('alert')).toContainText('last admin');
  await confirm.getByRole('button', { name: 'Cancel' }).click();

  await nav(page).getByRole('link', { name: 'API keys', exact: true }).click();
  await expect(page.getByRole('heading', { name: 'API keys', level: 1 })).toBeVisible();
  const keyName = uniqueName('ci');
  await page.getByRole('button', { name: 'Create API key' }).click();
  const create = page.getByRole('dialog', { name: 'Create API key' });
  await create.getByLabel('Name').fill(keyName);
  await create.getByLabel('Role').selectOption('viewer');
  await create.getByLabel('Expires').selectOption({ label: '30 days' });
  await create.getByRole('button', { name: 'Create key' }).click();
  const shown = page.getByRole('dialog', { name: 'New API key' });
  const key = await shown.getByLabel('API key').inputValue();
  expect(key).toMatch(/^bcak_ak_[0-9a-z]{26}\.[A-Za-z0-9_-]{43}$/);
  // The key works, and its use shows in the list.
  const tenants = await trpc<{ items: { id: string; isRoot: boolean }[] }>(page.request, 'query', 'tenants.list', {});
  const rootId = tenants.items.find((t) => t.isRoot)!.id;
  const used = await page.request.get(`/api/trpc/pools.list?input=${encodeURIComponent(JSON.stringify({ tenantId: rootId }))}`, {
    headers: { authorization: `Bearer ${key}`, cookie: '' },
  });
  expect(used.status()).toBe(200);
  await shown.getByRole('button', { name: 'Download as file' }).click();
  await shown.getByRole('button', { name: 'Done' }).click();
  await expect(shown).toBeHidden();
  await page.reload();
  const keyRow = page.getByRole('row').filter({ hasText: keyName });
  await expect(keyRow).toContainText('viewer');
  await expect(keyRow).not.toContainText('operator:op_');
  await expect(keyRow.getByRole('cell').nth(3)).not.toHaveText('never');
  await expectNoSeriousViolations(page, 'api-keys');
  await keyRow.getByRole('button', { name: `Revoke API key ${keyName}` }).click();
  await page
    .getByRole('dialog', { name: `Revoke API key ${keyName}?` })
    .getByRole('button', { name: 'Revoke key' })
    .click();
  await expect(keyRow).toHaveCount(0);

  // Root admins: Tenants, a new tenant, and its first admin's invitation. Creating it makes no membership.
  await nav(page).getByRole('link', { name: 'Tenants', exact: true }).click();
  await expect(page.getByRole('heading', { name: 'Tenants', level: 1 })).toBeVisible();
  const tenantName = uniqueName('team');
  await page.getByRole('button', { name: 'Create tenant' }).click();
  await page.getByRole('dialog', { name: 'Create tenant' }).getByLabel('Name').fill(tenantName);
  await page.getByRole('dialog', { name: 'Create tenant' }).getByRole('button', { name: 'Create tenant' }).click();
  const tenantRow = page.getByRole('row').filter({ hasText: tenantName });
  await expect(tenantRow).toContainText('not a member');
  await expectNoSeriousViolations(page, 'tenants');
  // The tenant switcher lists the caller's memberships only: not the tenant it created.
  await expect(page.getByRole('banner').getByRole('option', { name: tenantName, exact: true })).toHaveCount(0);

  await tenantRow.getByRole('button', { name: `Invite first admin of ${tenantName}` }).click();
  const firstAdmin = page.getByRole('dialog', { name: `Invite the first admin of ${tenantName}` });
  const firstEmail = `${uniqueName('first-admin')}@example.com`;
  await firstAdmin.getByLabel('Email').fill(firstEmail);
  await firstAdmin.getByRole('button', { name: 'Create invitation link' }).click();
  const firstLink = page.getByRole('dialog', { name: 'Invitation link' });
  const firstUrl = await firstLink.getByLabel('Invitation link').inputValue();
  expect(firstUrl).toMatch(/\/invite#bcinv_inv_[0-9a-z]{26}\.[A-Za-z0-9_-]{43}$/);
  await firstLink.getByRole('button', { name: 'Copy' }).click();
  await firstLink.getByRole('button', { name: 'Done' }).click();
  await expect(firstLink).toBeHidden();
  // The first admin accepts in another browser and lands in the new tenant with an admin's controls.
  const other = await page.context().browser()!.newContext();
  const newcomer = await other.newPage();
  await newcomer.goto(firstUrl);
  const password = `first-admin-${Math.random().toString(36).slice(2)}-pw`;
  await newcomer.getByLabel('Your name').fill('First Admin');
  await newcomer.getByLabel('Password', { exact: true }).fill(password);
  await newcomer.getByLabel('Repeat the password').fill(password);
  await newcomer.getByRole('button', { name: 'Accept and sign in' }).click();
  await expect(newcomer.getByRole('banner')).toContainText(tenantName);
  await nav(newcomer).getByRole('link', { name: 'Operators', exact: true }).click();
  await expect(newcomer.getByRole('main')).toContainText(tenantName);
  await expect(newcomer.getByRole('button', { name: 'Invite operator' })).toBeVisible();
  await other.close();
  // Once the tenant has its admin, the root admin can no longer invite another "first" one.
  await page.reload();
  await tenantRow.getByRole('button', { name: `Invite first admin of ${tenantName}` }).click();
  await firstAdmin.getByLabel('Email').fill(`${uniqueName('second')}@example.com`);
  await firstAdmin.getByRole('button', { name: 'Create invitation link' }).click();
  await expect(firstAdmin.getByRole('alert')).toContainText('already has members or API keys: only its own admins invite operators');
  await firstAdmin.getByRole('button', { name: 'Cancel' }).click();

  await page.getByRole('link', { name: /^Account of / }).click();
  await expect(page.getByRole('heading', { name: 'Account', level: 1 })).toBeVisible();
  await expect(page.getByRole('button', { name: 'Change password' })).toBeVisible();
  await expect(page.getByRole('button', { name: 'Sign out of every session' })).toBeVisible();
  await expectNoSeriousViolations(page, 'account');
});

test('a viewer of a tenant sees the Access pages without their controls', async ({ page, browser, baseURL }) => {
  test.setTimeout(60_000);
  await signInThroughForm(page);
  // A real viewer of the tenant: the pages arrive rendered by the server with the viewer's role.
  const { items } = await trpc<{ items: { id: string; isRoot: boolean }[] }>(page.request, 'query', 'tenants.list', {});
  const viewer = await signInNewOperator(browser, page.request, {
    baseURL: baseURL!,
    tenantId: items.find((t) => t.isRoot)!.id,
    role: 'viewer',
  });
  try {
    const as = viewer.page;
    await nav(as).getByRole('link', { name: 'Operators', exact: true }).click();
    await expect(as.getByRole('main')).toContainText('only its admins see and manage its operators');
    await expect(as.getByRole('button', { name: 'Invite operator' })).toHaveCount(0);
    await nav(as).getByRole('link', { name: 'API keys', exact: true }).click();
    await expect(as.getByRole('heading', { name: 'API keys', level: 1 })).toBeVisible();
    await expect(as.getByRole('status').filter({ hasText: /^Loading/ })).toHaveCount(0);
    await expect(as.getByRole('button', { name: 'Create API key' })).toHaveCount(0);
    await expect(as.getByRole('button', { name: /^Revoke API key/ })).toHaveCount(0);
    await expect(nav(as).getByRole('link', { name: 'Tenants', exact: true })).toHaveCount(0);
  } finally {
    await viewer.context.close();
  }
});
