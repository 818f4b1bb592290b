import { randomBytes } from 'node:crypto';
import { expect, test } from '@playwright/test';
import { newScope } from '../support/queue';
import { roleState } from '../support/roles';
import { trpc } from '../support/session';

/**
 * The expected-machines import panel at desktop and phone width, light and dark: a pool is named by its name or
 * its id, a pool it cannot use is refused with what was expected, and values are shown as text (markup in a
 * hostname stays characters, never an element).
 */

test.use({ storageState: roleState('admin') });

const VIEWPORTS = [
  { name: 'desktop', width: 1440, height: 900 },
  { name: 'phone', width: 390, height: 844 },
] as const;
const MARKUP = '<img src=x onerror=alert(1)>';

for (const viewport of VIEWPORTS) {
  for (const colorScheme of ['light', 'dark'] as const) {
    test(`import by pool name, refusals that say what was expected, values as text (${viewport.name}, ${colorScheme})`, async ({
      page,
    }) => {
      test.setTimeout(90_000);
      await page.setViewportSize({ width: viewport.width, height: viewport.height });
      await page.emulateMedia({ colorScheme });
      const dialogs: string[] = [];
      page.on('dialog', (dialog) => {
        dialogs.push(dialog.message());
        void dialog.dismiss();
      });
      const scope = await newScope(page.request);
      const { name: poolName } = await trpc<{ name: string }>(page.request, 'query', 'pools.get', {
        tenantId: scope.tenantId,
        poolId: scope.poolId,
      });
      const plain = await trpc<{ id: string; name: string }>(page.request, 'mutation', 'pools.create', {
        tenantId: scope.tenantId,
        siteId: scope.siteId,
        name: `plain-${randomBytes(4).toString('hex')}`,
        agent: 'none',
      });
      const serial = (n: number) => `SN-E2E-${randomBytes(3).toString('hex')}-${n}`;

      await page.goto(`/expected-machines?site=${scope.siteId}&tenant=${scope.tenantId}`);
      await expect(page.getByRole('heading', { name: 'Expected machines', level: 1 })).toBeVisible();
      await page.getByRole('button', { name: 'Import', exact: true }).click();
      const panel = page.getByRole('region', { name: 'Import expected machines' });
      await panel
        .getByLabel('List')
        .fill(
          [
            'serial,pool,hostname',
            `${serial(1)},${poolName},"${MARKUP}"`,
            `${serial(2)},${scope.poolId},"=HYPERLINK(""http://evil.example"")"`,
            `${serial(3)},rack-b,lost`,
            `${serial(4)},${plain.name},plain`,
          ].join('\n'),
        );
      await panel.getByRole('button', { name: 'Preview' }).click();
      await expect(panel).toContainText('Would import 2 machines');
      const rejected = panel.getByRole('table', { name: 'Rejected rows' });
      const expected = 'expected the name or id of a pool of this site that runs bcd';
      const rack = rejected.getByRole('row').filter({ hasText: 'rack-b' });
      await expect(rack).toContainText(`pool: "rack-b" is not a pool of site`);
      await expect(rack).toContainText(expected);
      await expect(rejected.getByRole('row').filter({ hasText: plain.name })).toContainText(`runs none, not bcd; ${expected}`);
      await expect(panel).not.toContainText('not a live bcd pool');
      // A refusal reads as a sentence: its row is a few lines tall at most, and its text is not cut off.
      const box = await rack.boundingBox();
      expect(box!.height).toBeLessThan(viewport.width < 600 ? 200 : 80);
      // The reasons wrap inside the panel instead of running off the side of the table's scroll area.
      expect(await rejected.evaluate((table) => table.parentElement!.scrollWidth <= table.parentElement!.clientWidth + 1)).toBe(true);
      const why = await rack.getByRole('cell').nth(1).boundingBox();
      expect(why!.x + why!.width).toBeLessThanOrEqual(viewport.width);

      // The markup is characters in the preview, not an element.
      const sample = panel.getByRole('table', { name: 'First accepted rows' });
      await expect(sample).toContainText(MARKUP);
      await expect(panel.locator('img')).toHaveCount(0);

      await panel.getByRole('button', { name: 'Import 2 machines' }).click();
      await expect(panel).toContainText('Imported 2 machines');
      const waiting = page.getByRole('region', { name: 'Not arrived yet', exact: true });
      await expect(waiting).toContainText(MARKUP);
      await expect(waiting).toContainText('=HYPERLINK("http://evil.example")');
      await expect(waiting.locator('img')).toHaveCount(0);
      await expect(waiting.locator('a')).toHaveCount(0);
      expect(dialogs).toEqual([]);
      await page.screenshot({ path: `test-results/expected-machines-import-${viewport.name}-${colorScheme}.png`, fullPage: true });
    });
  }
}
