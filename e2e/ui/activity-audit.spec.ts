import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { expect, test, type APIRequestContext, type Page } from '@playwright/test';
import { openConsole, trpc } from '../support/session';
import { roleState } from '../support/roles';

// The audit log at fleet scale: rows one or two lines high whatever the details, the details readable as
// labelled fields across the table's width, filters in the URL, and the CSV export of what the filters show;
// at desktop and phone width, in the light and the dark theme.

const CSV_HEADER = 'time,actor,actor_name,actor_email,action,resource,reason,details';

async function createdToken(request: APIRequestContext) {
  const { items: tenants } = await trpc<{ items: { id: string; isRoot: boolean }[] }>(request, 'query', 'tenants.list', {});
  const tenantId = tenants.find((t) => t.isRoot)!.id;
  const { items: pools } = await trpc<{ items: { id: string; name: string; agent: string }[] }>(request, 'query', 'pools.list', {
    tenantId,
  });
  const poolId = pools.find((p) => p.name === 'default' && p.agent === 'bcd')!.id;
  const minted = await trpc<{ id: string }>(request, 'mutation', 'joinTokens.create', {
    tenantId,
    poolId,
    ttlSeconds: 600,
    idempotencyKey: randomUUID(),
  });
  return { tenantId, tokenId: minted.id };
}

/** The tallest row of the audit table, in CSS pixels. */
const tallestRow = (page: Page) =>
  page.locator('tbody tr.audit-row').evaluateAll((rows) => Math.max(0, ...rows.map((row) => row.getBoundingClientRect().height)));

for (const viewport of [
  { width: 1440, height: 900 },
  { width: 390, height: 844 },
]) {
  for (const colorScheme of ['light', 'dark'] as const) {
    test.describe(`${viewport.width}×${viewport.height}, ${colorScheme}`, () => {
      test.use({ storageState: roleState('admin'), viewport, colorScheme });

      test('audit rows stay short, details read as fields, filters stay in the URL, the export is the filtered CSV', async ({ page }) => {
        // Several page loads and a download, on a machine that may be shared with other runs.
        test.setTimeout(120_000);
        const { tenantId, tokenId } = await createdToken(page.request);
        await openConsole(page);
        await page.goto(`/audit?tenant=${tenantId}`);
        await expect(page.getByRole('heading', { name: 'Audit', level: 1 })).toBeVisible();
        const log = page.getByRole('region', { name: 'Audit log' });
        const row = log.locator('tr.audit-row').filter({ hasText: `compute-join-token/${tokenId}` });
        await expect(row).toBeVisible();

        // No row is taller than a few lines (a line is about 20 px; the old Details column made rows 3,700 px).
        expect(await tallestRow(page)).toBeLessThanOrEqual(80);

        // The details open below the row, as labelled fields, each value on a line or two.
        await row.getByRole('button', { name: /Show details/ }).click();
        const details = log.getByRole('region', { name: `Details of join-token.created on compute-join-token/${tokenId}` });
        await expect(details).toBeVisible();
        const idempotency = details.locator('dd').filter({ hasText: /^[0-9a-f-]{36}$/ });
        await expect(idempotency).toHaveCount(1);
        const box = (await idempotency.boundingBox())!;
        expect(box.height).toBeLessThanOrEqual(44);
        expect(box.width).toBeGreaterThan(120);
        await expect(details.getByText('idempotency key', { exact: true })).toBeVisible();
        await row.getByRole('button', { name: 'Hide details' }).click();
        await expect(details).toHaveCount(0);

        // Facets and a time range, applied by the server and kept in the URL.
        await page.getByLabel('Action').selectOption('join-token.created');
        await expect(page).toHaveURL(/[?&]action=join-token\.created/);
        await page.getByLabel('Time range').selectOption('1h');
        await expect(page).toHaveURL(/[?&]range=1h/);
        await expect(row).toBeVisible();
        await expect(log.locator('tr.audit-row').filter({ hasNotText: 'join-token.created' })).toHaveCount(0);
        await page.reload();
        await expect(page.getByLabel('Action')).toHaveValue('join-token.created');
        await expect(row).toBeVisible();

        // The export downloads the filtered log: the header, and this token's row.
        const download = page.waitForEvent('download');
        await page.getByRole('link', { name: 'Export CSV' }).click();
        const file = await (await download).path();
        const text = await readFile(file, 'utf8');
        const lines = text.split('\r\n').filter(Boolean);
        expect(lines[0]).toBe(CSV_HEADER);
        const ours = lines.find((line) => line.includes(`compute-join-token/${tokenId}`));
        expect(ours).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+Z,operator:op_[^,]+,[^,]*,[^,]*,join-token\.created,compute-join-token\/jt_/);
        expect(lines.slice(1).every((line) => line.includes(',join-token.created,'))).toBe(true);
      });
    });
  }
}
