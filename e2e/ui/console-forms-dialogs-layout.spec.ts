import { readFile } from 'node:fs/promises';
import { expect, test, type Page } from '@playwright/test';
import { adminCredentials, uniqueName } from '../support/env';
import { joinMachine } from '../support/machine';
import { roleState } from '../support/roles';
import { openConsole } from '../support/session';

/** How the console behaves for an operator: dialogs, forms and their errors, one-time tokens, sign-in redirects, layout. */

const oneTimePanel = (page: Page) => page.getByRole('region', { name: 'New join token' });
const nav = (page: Page) => page.getByRole('navigation', { name: 'Console' });

async function openCreateDialog(page: Page) {
  await nav(page).getByRole('link', { name: 'Join tokens' }).click();
  await expect(page.getByRole('heading', { name: 'Pool default', level: 2 })).toBeVisible();
  await page.getByRole('button', { name: 'Create join token' }).click();
  const dialog = page.getByRole('dialog', { name: 'Create join token' });
  await expect(dialog).toBeVisible();
  return dialog;
}

async function mintToken(page: Page, options: { maxUses?: string; reclaim?: boolean } = {}) {
  const dialog = await openCreateDialog(page);
  if (options.maxUses) await dialog.getByLabel('Max uses', { exact: true }).fill(options.maxUses);
  if (options.reclaim) await dialog.getByRole('checkbox', { name: /Allow reclaim/ }).check();
  await dialog.getByRole('button', { name: 'Create token' }).click();
  await expect(oneTimePanel(page)).toBeVisible();
  return oneTimePanel(page).getByLabel('Join token', { exact: true }).inputValue();
}

/** Text cut off by its box: wider content than the element shows. */
const isClipped = (page: Page, selector: string) =>
  page.locator(selector).evaluateAll((elements) => elements.some((el) => el.scrollWidth > el.clientWidth + 1));

// The first requests to a fresh server compile and warm its routes; sign-in must not time out on them.
test.beforeAll(async ({ request }) => {
  await request.get('/login');
  await request.get('/api/auth/csrf');
});

test.describe('signed in', () => {
  // Signed in as the first admin by the setup project (e2e/support/roles.ts), not through the form.
  test.use({ storageState: roleState('admin') });
  test.beforeEach(async ({ page }) => {
    await openConsole(page);
  });

  test('the revoke confirmation wraps its text inside the dialog, "cannot be undone" included', async ({ page }) => {
    await mintToken(page);
    await page.getByRole('button', { name: 'Download as file' }).click();
    await oneTimePanel(page).getByRole('button', { name: 'Done' }).click();
    await page
      .getByRole('button', { name: /^Revoke join token / })
      .first()
      .click();
    const confirm = page.getByRole('dialog', { name: 'Revoke join token?' });
    await expect(confirm.getByText(/This cannot be undone\./)).toBeInViewport();
    expect(await confirm.locator('.dialog-body p').evaluate((p) => getComputedStyle(p).whiteSpace)).toBe('normal');
    expect(await isClipped(page, 'dialog[open] .dialog-body, dialog[open] .dialog-body p')).toBe(false);
    const [dialogBox, textBox] = [await confirm.boundingBox(), await confirm.getByText(/This cannot be undone\./).boundingBox()];
    expect(textBox!.x + textBox!.width).toBeLessThanOrEqual(dialogBox!.x + dialogBox!.width);
    await confirm.getByRole('button', { name: 'Cancel' }).click();
  });

  test('the one-time token: asks before Done, a nav click or a reload; downloads as join-token; says the next step and reclaim', async ({
    page,
  }) => {
    const token = await mintToken(page, { reclaim: true });
    const panel = oneTimePanel(page);
    await expect(panel.getByText('reclaim allowed')).toBeVisible();
    await expect(panel.getByText('sudo sh install-bcd.sh < join-token')).toBeVisible();

    // Done without a copy asks; keeping it keeps the token on the page.
    await panel.getByRole('button', { name: 'Done' }).click();
    const ask = page.getByRole('dialog', { name: 'Discard the join token?' });
    await expect(ask).toBeVisible();
    await ask.getByRole('button', { name: 'Cancel' }).click();
    await expect(panel.getByLabel('Join token', { exact: true })).toHaveValue(token);

    // A nav click is held back and asked about too.
    await nav(page).getByRole('link', { name: 'Events' }).click();
    await expect(ask).toBeVisible();
    await expect(page).toHaveURL(/\/join-tokens/);
    await ask.getByRole('button', { name: 'Cancel' }).click();

    // A reload (or closing the tab) gets the browser's own prompt.
    const prompt = page.waitForEvent('dialog');
    void page.reload().catch(() => {});
    const dialog = await prompt;
    expect(dialog.type()).toBe('beforeunload');
    await dialog.dismiss();
    await expect(panel.getByLabel('Join token', { exact: true })).toHaveValue(token);

    // Download as file: the CLI's --out bytes under the CLI's name; then nothing is at risk and Done just closes.
    const download = page.waitForEvent('download');
    await panel.getByRole('button', { name: 'Download as file' }).click();
    const file = await download;
    expect(file.suggestedFilename()).toBe('join-token');
    expect(await readFile((await file.path())!, 'utf8')).toBe(`${token}\n`);
    await nav(page).getByRole('link', { name: 'Events' }).click();
    await expect(page.getByRole('heading', { name: 'Events', level: 1 })).toBeVisible();
    await expect(ask).toHaveCount(0);
  });

  test('the create form shows every field error at once, in its own style, and takes 1h30m', async ({ page }) => {
    const dialog = await openCreateDialog(page);
    const creates: string[] = [];
    page.on('request', (request) => request.url().includes('joinTokens.create') && creates.push(request.url()));
    await dialog.getByLabel('Lifetime', { exact: true }).selectOption({ label: 'Custom…' });
    const lifetime = dialog.getByLabel('Custom lifetime');
    await lifetime.fill('25h');
    await dialog.getByLabel('Max uses', { exact: true }).fill('0');
    await dialog.getByLabel('MAC', { exact: true }).fill('aa-bb-cc');
    await dialog.getByLabel('GPU UUID', { exact: true }).fill('nvidia');
    await dialog.getByRole('button', { name: 'Create token' }).click();
    for (const label of ['Custom lifetime', 'Max uses', 'MAC', 'GPU UUID']) {
      await expect(dialog.getByLabel(label, { exact: true })).toHaveAttribute('aria-invalid', 'true');
    }
    await expect(lifetime).toHaveAccessibleDescription(/90000 seconds/);
    await expect(dialog.getByLabel('MAC', { exact: true })).toHaveAccessibleDescription(/must be aa:bb:cc:dd:ee:ff/);
    await expect(dialog.getByLabel('GPU UUID', { exact: true })).toHaveAccessibleDescription(/GPU- followed by a UUID/);
    // The first invalid control in the form's order takes the focus.
    await expect(dialog.getByLabel('Max uses', { exact: true })).toBeFocused();
    // Not the browser's bubble: the form does not use native validation at all.
    expect(await dialog.locator('form').evaluate((form) => (form as HTMLFormElement).noValidate)).toBe(true);
    expect(creates).toEqual([]);

    await lifetime.fill('1h30m');
    await dialog.getByLabel('Max uses', { exact: true }).fill('1');
    await dialog.getByLabel('MAC', { exact: true }).fill('');
    await dialog.getByLabel('GPU UUID', { exact: true }).fill('');
    const created = page.waitForResponse((response) => response.url().includes('joinTokens.create'));
    await dialog.getByRole('button', { name: 'Create token' }).click();
    const body = await (await created).json();
    const record = (Array.isArray(body) ? body[0] : body).result.data;
    const lifetimeSeconds = (Date.parse(record.expiresAt) - Date.parse(record.createdAt)) / 1000;
    expect(Math.round(lifetimeSeconds)).toBe(5400);
  });

  test('the create-pool form shows the name and check errors at once', async ({ page }) => {
    await page.goto('/pools');
    await page.getByRole('button', { name: 'Create pool' }).click();
    const dialog = page.getByRole('dialog', { name: 'Create pool' });
    await dialog.getByLabel('Name').fill('Bad Name!');
    const checks = dialog.getByRole('group', { name: /Acceptance checks/ });
    await checks.getByRole('checkbox', { name: /gpu-count/ }).check();
    await checks.getByLabel('Minimum GPUs').fill('');
    await dialog.getByRole('button', { name: 'Create pool' }).click();
    await expect(dialog.getByLabel('Name')).toHaveAttribute('aria-invalid', 'true');
    await expect(checks.getByRole('alert')).toHaveText(/^gpu-count: /);
    await expect(dialog.getByLabel('Name')).toBeFocused();
    await dialog.getByRole('button', { name: 'Cancel' }).click();
  });

  test('a token used up by a join leaves the live list when the page is looked at again, without a reload', async ({ page, request }) => {
    const token = await mintToken(page);
    const tokenId = token.slice('bcjt_'.length, token.indexOf('.'));
    await page.getByRole('button', { name: 'Download as file' }).click();
    await oneTimePanel(page).getByRole('button', { name: 'Done' }).click();
    const row = page.getByRole('row').filter({ has: page.getByRole('rowheader', { name: tokenId }) });
    await expect(row.getByRole('cell', { name: '1 / 1' })).toBeVisible();
    // Who created it, and no use yet.
    await expect(row.getByText(`by ${adminCredentials().email}`)).toBeVisible();
    await expect(row.getByText('never', { exact: true })).toBeVisible();

    const joined = await joinMachine(request, token);
    expect(joined.response.status()).toBe(200);
    // No reload, no focus change, no polling loop: the join's node.joined event re-reads the list (SSE).
    await expect(row).toHaveCount(0);
    await page.getByLabel('Show inactive').check();
    await expect(row.getByText('Used up', { exact: true })).toBeVisible();
    // Its last use is in the past: "just now" by the page's clock, never "in less than a minute".
    await expect(row.getByText(/^(just now|\d+ min ago)$/)).toBeVisible();
    await expect(row.getByRole('button', { name: /Revoke/ })).toHaveCount(0);
  });

  test('table headers are at least 12 px, and Sign out comes after the nav in tab order', async ({ page }) => {
    const size = await page
      .locator('.table thead th')
      .first()
      .evaluate((th) => parseFloat(getComputedStyle(th).fontSize));
    expect(size).toBeGreaterThanOrEqual(12);
    await page.getByRole('link', { name: 'Better Compute' }).focus();
    const order: string[] = [];
    // Brand, tenant, 11 nav links (Access included), the account link, then Sign out.
    for (let i = 0; i < 20 && !order.includes('Sign out'); i++) {
      await page.keyboard.press('Tab');
      order.push(await page.evaluate(() => document.activeElement?.textContent?.trim() ?? ''));
    }
    expect(order).toContain('Sign out');
    expect(order.indexOf('Pools')).toBeGreaterThanOrEqual(0);
    expect(order.indexOf('Pools')).toBeLessThan(order.indexOf('Sign out'));
    expect(order.indexOf('Events')).toBeLessThan(order.indexOf('Sign out'));
  });

  test("a proxy's HTML error page says the server could not be reached, and Retry recovers", async ({ page }) => {
    await page.route('**/api/trpc/**', (route) =>
      route.fulfill({ status: 502, contentType: 'text/html', body: '<html><body><h1>502 Bad Gateway</h1></body></html>' }),
    );
    await nav(page).getByRole('link', { name: 'Events' }).click();
    const alert = page.getByRole('alert').filter({ hasText: 'could not be reached' });
    await expect(alert).toBeVisible({ timeout: 20_000 });
    await expect(page.getByText(/Unexpected token/)).toHaveCount(0);
    await page.unroute('**/api/trpc/**');
    await alert.getByRole('button', { name: 'Retry' }).click();
    await expect(alert).toHaveCount(0);
    await expect(page.getByRole('heading', { name: 'Events', level: 1 })).toBeVisible();
  });
});

test('a deep link survives sign-in', async ({ page }) => {
  await page.goto('/join-tokens?show=all');
  await expect(page).toHaveURL(/\/login\?callbackUrl=%2Fjoin-tokens%3Fshow%3Dall/);
  await expect(page.getByText('Your session expired')).toHaveCount(0);
  const { email, password } = adminCredentials();
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page).toHaveURL(/\/join-tokens\?show=all$/);
  await expect(page.getByRole('heading', { name: 'Join tokens', level: 1 })).toBeVisible();
});

test('a session that no longer counts says it expired, and keeps the page asked for', async ({ page, context, baseURL }) => {
  await context.addCookies([{ name: 'next-auth.session-token', value: uniqueName('stale'), url: baseURL! }]);
  await page.goto('/events');
  await expect(page).toHaveURL(/\/login\?callbackUrl=%2Fevents&expired=1/);
  await expect(page.getByText('Your session expired.')).toBeVisible();
});

test.describe('phone, 390×844', () => {
  test.use({ storageState: roleState('admin'), viewport: { width: 390, height: 844 } });

  test('the nav reaches every page, nothing is wider than the screen, and Sign out is on screen', async ({ page }) => {
    await openConsole(page);
    const links = ['Overview', 'Pools', 'Join tokens', 'Join requests', 'Nodes', 'Refused joins', 'Events', 'Audit'];
    for (const name of links) {
      const link = nav(page).getByRole('link', { name, exact: true });
      // The links are behind the Menu button on a phone.
      await nav(page).getByRole('button', { name: 'Menu' }).click();
      await expect(link).toBeInViewport();
      const href = (await link.getAttribute('href'))!;
      await link.click();
      await expect(page).toHaveURL((url) => url.pathname === href.split('?')[0]);
      await expect(page.getByRole('heading', { level: 1 })).toBeVisible();
      // The new page closes the menu; the link, hidden behind it, is marked as the current page.
      await expect(nav(page).getByRole('button', { name: 'Menu' })).toHaveAttribute('aria-expanded', 'false');
      await expect(nav(page).locator(`a[href="${href}"]`)).toHaveAttribute('aria-current', 'page');
      const width = await page.evaluate(() => document.documentElement.scrollWidth);
      // On failure, name the elements that stick out, to say what to fix.
      const wide =
        width <= 390
          ? []
          : await page.evaluate(() =>
              [...document.querySelectorAll('body *')]
                .filter((el) => el.getBoundingClientRect().right > 391)
                // Clipped by a scrolling or hidden-overflow ancestor: not what widens the page, unless positioned out of it.
                .filter((el) => {
                  if (getComputedStyle(el).position === 'absolute') return true;
                  for (let up = el.parentElement; up; up = up.parentElement) if (getComputedStyle(up).overflowX !== 'visible') return false;
                  return true;
                })
                .slice(0, 8)
                .map((el) => `${el.tagName}.${el.className}`),
            );
      expect(width, `page width on ${name}: ${wide.join(', ')}`).toBeLessThanOrEqual(390);
      await expect(page.getByRole('button', { name: 'Sign out' })).toBeInViewport({ ratio: 1 });
    }
  });
});
