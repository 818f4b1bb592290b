import { expect, test } from '@playwright/test';
import { consolePages, followNav, openPage, seedConsole, type ConsoleSeed } from '../support/console-pages';
import { layoutProblems, summarize } from '../support/layout-check';
import { roleState } from '../support/roles';

test.use({ storageState: roleState('admin') });

let seed: ConsoleSeed;
test.beforeAll(async ({ browser }) => {
  test.setTimeout(120_000);
  const context = await browser.newContext({ storageState: roleState('admin'), baseURL: process.env.E2E_BASE_URL });
  seed = await seedConsole(context.request);
  await context.close();
});
test.afterAll(() => seed?.stop());

const SIZES = [
  { name: 'desktop', viewport: { width: 1440, height: 900 } },
  { name: 'phone', viewport: { width: 390, height: 844 } },
] as const;

for (const size of SIZES) {
  for (const colorScheme of ['light', 'dark'] as const) {
    test.describe(`${size.name} ${size.viewport.width}×${size.viewport.height}, ${colorScheme}`, () => {
      test.use({ viewport: size.viewport, colorScheme });

      test('every page: no sideways scroll, no squeezed row, no control cut off', async ({ page }) => {
        test.setTimeout(240_000);
        const failures: Record<string, string[]> = {};
        for (const { path, heading } of consolePages(seed)) {
          await openPage(page, path, heading);
          const problems = await layoutProblems(page);
          if (problems.length) failures[path.replace(/[?&]tenant=[^&]*/, '')] = summarize(problems);
        }
        expect(failures).toEqual({});
      });
    });
  }
}

test.describe('the phone menu', () => {
  test.use({ viewport: { width: 390, height: 844 } });

  test('one Menu button instead of the links: it opens, Escape closes it with focus back, a link closes it', async ({ page }) => {
    await openPage(page, `/pools?tenant=${seed.tenantId}`, 'Pools');
    const nav = page.getByRole('navigation', { name: 'Console' });
    const menu = nav.getByRole('button', { name: 'Menu' });
    await expect(menu).toHaveAttribute('aria-expanded', 'false');
    await expect(nav.getByRole('link', { name: 'Events' })).toBeHidden();
    await menu.click();
    await expect(menu).toHaveAttribute('aria-expanded', 'true');
    await expect(nav.getByRole('link', { name: 'Events' })).toBeVisible();
    await nav.getByRole('link', { name: 'Events' }).focus();
    await page.keyboard.press('Escape');
    await expect(menu).toHaveAttribute('aria-expanded', 'false');
    await expect(menu).toBeFocused();
    await expect(nav.getByRole('link', { name: 'Events' })).toBeHidden();
    await followNav(page, 'Sites');
    await expect(page.getByRole('heading', { name: 'Sites', level: 1 })).toBeVisible();
    await expect(menu).toHaveAttribute('aria-expanded', 'false');
  });
});

test.describe('desktop', () => {
  test('no Menu button; the nav shows its links', async ({ page }) => {
    await openPage(page, `/pools?tenant=${seed.tenantId}`, 'Pools');
    const nav = page.getByRole('navigation', { name: 'Console' });
    await expect(nav.getByRole('button', { name: 'Menu' })).toBeHidden();
    await expect(nav.getByRole('link', { name: 'Events' })).toBeVisible();
  });
});
