import { expect, test, type Page } from '@playwright/test';
import { roleState } from '../support/roles';
import { openConsole, signInOverHttp, trpc } from '../support/session';

interface Tenant {
  id: string;
  name: string;
  isRoot: boolean;
}

const SIZES = [
  { width: 1440, height: 900 },
  { width: 390, height: 844 },
];

/** Nothing on the page is wider than the window (no sideways scrolling, no clipped details). */
async function expectNoOverflow(page: Page, width: number) {
  expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(width);
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
  // A spent link says so at once and offers no form to fill in.
  await expect(other.getByRole('main').getByRole('alert')).toContainText('This invitation link is not valid');
  await expect(other.getByLabel('Your name')).toHaveCount(0);
  await expect(other.getByRole('main')).not.toContainText(email);
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

for (const size of SIZES) {
  test(`the invitation page shows the tenant, role, inviter and email before accepting, and a bogus link shows nothing (${size.width}×${size.height})`, async ({
    page,
    playwright,
    baseURL,
  }) => {
    await page.setViewportSize(size);
    const admin = await playwright.request.newContext({ baseURL, extraHTTPHeaders: { origin: baseURL! } });
    await signInOverHttp(admin);
    const { items } = await trpc<{ items: Tenant[] }>(admin, 'query', 'tenants.list', {});
    const root = items.find((t) => t.isRoot)!;
    const email = `shown-${size.width}-${Date.now().toString(36)}@example.com`;
    const invitation = await trpc<{ id: string; token: string }>(admin, 'mutation', 'invitations.create', {
      tenantId: root.id,
      email,
      role: 'approver',
    });
    // Who invited, as the console names them (the list carries the inviter's name).
    const listed = await trpc<{ items: { id: string; createdByName: string | null }[] }>(admin, 'query', 'invitations.list', {
      tenantId: root.id,
    });
    const inviter = listed.items.find((i) => i.id === invitation.id)!.createdByName;
    expect(inviter).toBeTruthy();

    await page.goto(`/invite#${invitation.token}`);
    const details = page.getByRole('definition');
    await expect(details).toHaveText([root.name, /^approver/, inviter!, email]);
    await expect(page.getByRole('term')).toHaveText(['Tenant', 'Role', 'Invited by', 'Email']);
    await expectNoOverflow(page, size.width);

    // Every problem of the new password at once.
    await page.getByLabel('Your name').fill('Shown Person');
    await page.getByLabel('Password', { exact: true }).fill('short');
    await page.getByLabel('Repeat the password').fill('different');
    await page.getByRole('button', { name: 'Accept and sign in' }).click();
    await expect(page.getByRole('main').getByRole('alert')).toHaveText(['Use at least 12 characters.', 'The two new passwords differ.']);

    // A well-formed link that is not one: no tenant, no email, no form.
    const bogus = `bcinv_inv_${'0'.repeat(26)}.${'A'.repeat(43)}`;
    await page.goto(`/invite#${bogus}`);
    await expect(page.getByRole('main').getByRole('alert')).toContainText('This invitation link is not valid');
    await expect(page.getByRole('definition')).toHaveCount(0);
    await expect(page.getByRole('main')).not.toContainText(root.name);
    await expectNoOverflow(page, size.width);
    await admin.dispose();
  });
}

test.describe('inviting an email twice', () => {
  test.use({ storageState: roleState('admin') });

  for (const size of SIZES) {
    test(`warns in the invite dialog and replaces the pending link only when asked (${size.width}×${size.height})`, async ({ page }) => {
      await page.setViewportSize(size);
      await openConsole(page);
      await page.goto('/access/operators');
      await expect(page.getByRole('heading', { name: 'Operators', level: 1 })).toBeVisible();
      const email = `twice-${size.width}-${Date.now().toString(36)}@example.com`;
      const inviteOnce = async () => {
        await page.getByRole('button', { name: 'Invite operator' }).click();
        const dialog = page.getByRole('dialog', { name: 'Invite an operator' });
        await dialog.getByLabel('Email').fill(email);
        await dialog.getByRole('button', { name: 'Create invitation link' }).click();
        return dialog;
      };
      await inviteOnce();
      const link = page.getByRole('dialog', { name: 'Invitation link' });
      const first = await link.getByLabel('Invitation link').inputValue();
      // Not copied: Done asks first, and Discard closes it.
      await link.getByRole('button', { name: 'Done' }).click();
      await link.getByRole('button', { name: 'Discard' }).click();
      await expect(link).toBeHidden();

      const dialog = await inviteOnce();
      await expect(dialog.getByRole('alert')).toContainText('already has a pending invitation');
      await expect(dialog.getByRole('button', { name: 'Revoke the old link and invite again' })).toBeVisible();
      await expectNoOverflow(page, size.width);
      await dialog.getByRole('button', { name: 'Revoke the old link and invite again' }).click();
      const second = await link.getByLabel('Invitation link').inputValue();
      expect(second).not.toBe(first);
      // Only the new link stays pending.
      const pending = page.getByRole('region', { name: 'Pending invitations' });
      await expect(pending.getByRole('row').filter({ hasText: email })).toHaveCount(1);
    });
  }
});
