import AxeBuilder from '@axe-core/playwright';
import { randomUUID } from 'node:crypto';
import { expect, test, type Page } from '@playwright/test';
import { uniqueName } from '../support/env';
import { layoutProblems } from '../support/layout-check';
import { joinMachine } from '../support/machine';
import { openConsole, trpc } from '../support/session';
import { roleState } from '../support/roles';

// Signed in as the first admin by the setup project (e2e/support/roles.ts), not through the form.
test.use({ storageState: roleState('admin') });

async function expectNoSeriousViolations(page: Page, name: string) {
  const results = await new AxeBuilder({ page }).analyze();
  const serious = results.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.help} — ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
  expect(serious, `${name}: serious accessibility violations`).toEqual([]);
}

/** More machines than a page holds (100), so the list pages; their MACs are random (e2e/support/machine.ts). */
const MACHINES = 105;

/**
 * The nodes list at fleet scale: the exact total from the server, a page of 100 and the next on demand, a search
 * (a MAC typed with dashes) that runs on the server and lives in the URL, select all matching, and the CSV export
 * of the current filter; at 1440 and 390 px, without serious accessibility violations or a broken layout.
 */
test('nodes list: server search in the URL, exact total, paging, select all matching, export', async ({ page }) => {
  test.setTimeout(300_000);
  await openConsole(page);
  const { items: tenants } = await trpc<{ items: { id: string; isRoot: boolean }[] }>(page.request, 'query', 'tenants.list', {});
  const tenantId = tenants.find((t) => t.isRoot)!.id;
  const site = await trpc<{ id: string }>(page.request, 'mutation', 'sites.create', { tenantId, name: uniqueName('list-site') });
  const pool = await trpc<{ id: string }>(page.request, 'mutation', 'pools.create', {
    tenantId,
    siteId: site.id,
    name: uniqueName('list-pool'),
    agent: 'bcd',
  });
  const { token } = await trpc<{ token: string }>(page.request, 'mutation', 'joinTokens.create', {
    tenantId,
    poolId: pool.id,
    ttlSeconds: 600,
    maxUses: MACHINES,
    idempotencyKey: randomUUID(),
  });
  for (let start = 0; start < MACHINES; start += 15) {
    const batch = Array.from({ length: Math.min(15, MACHINES - start) }, () => joinMachine(page.request, token));
    for (const { response } of await Promise.all(batch)) expect(response.status()).toBe(200);
  }
  const listed = await trpc<{ items: Array<{ id: string; claims: { macs: string[] } }>; total: number }>(
    page.request,
    'query',
    'nodes.list',
    {
      tenantId,
      poolId: pool.id,
      limit: 500,
    },
  );
  expect(listed.total).toBe(MACHINES);
  const target = listed.items[42]!;
  const macWithDashes = target.claims.macs[0]!.replaceAll(':', '-').toUpperCase();

  for (const width of [1440, 390]) {
    await page.setViewportSize({ width, height: width > 1000 ? 900 : 844 });
    await page.goto(`/nodes?pool=${pool.id}&tenant=${tenantId}`);
    const rows = page.locator('tbody tr[id^="node-row-"]');
    const total = page.getByTestId('nodes-total');
    // The server's exact count, not the loaded page's.
    await expect(total).toHaveText(`${MACHINES} nodes match, 100 shown`);
    await expect(rows).toHaveCount(100);
    await expectNoSeriousViolations(page, `nodes list at ${width}`);
    expect(await layoutProblems(page), `layout at ${width}`).toEqual([]);

    // Select every loaded row, then every matching node.
    await page.getByRole('checkbox', { name: 'Select every loaded node' }).check();
    const selection = page.getByRole('region', { name: 'Selected nodes' });
    await expect(selection).toContainText('100 selected');
    await selection.getByRole('button', { name: `Select all ${MACHINES} matching` }).click();
    await expect(selection).toContainText(`All ${MACHINES} matching selected`);
    await expect(selection).toHaveAttribute('data-selected', 'all-matching');
    await selection.getByRole('button', { name: 'Clear selection' }).click();
    await expect(selection).toBeHidden();

    // The next page, from the cursor.
    await page.getByRole('button', { name: 'Load more nodes' }).click();
    await expect(rows).toHaveCount(MACHINES);
    await expect(total).toHaveText(`${MACHINES} nodes match`);

    // A MAC typed with dashes and in capitals finds the node on the server; the search goes into the URL.
    await page.getByRole('searchbox', { name: /Search by hostname/ }).fill(macWithDashes);
    await expect(page).toHaveURL(new RegExp(`[?&]q=${encodeURIComponent(macWithDashes)}`));
    await expect(total).toHaveText('1 node matches');
    await expect(rows).toHaveCount(1);
    await expect(rows.first()).toContainText(target.id);
    await expectNoSeriousViolations(page, `nodes search at ${width}`);

    // The URL alone brings the same list back.
    await page.reload();
    await expect(page.getByRole('searchbox', { name: /Search by hostname/ })).toHaveValue(macWithDashes);
    await expect(rows).toHaveCount(1);

    // The export button downloads the current filter.
    const exportLink = page.getByRole('link', { name: 'Export CSV' });
    const href = (await exportLink.getAttribute('href'))!;
    expect(href).toContain(`search=${encodeURIComponent(macWithDashes)}`);
    expect(href).toContain(`poolId=${pool.id}`);
    const csv = await page.request.get(href);
    expect(csv.status()).toBe(200);
    const lines = (await csv.text()).trim().split('\r\n');
    expect(lines).toHaveLength(2);
    expect(lines[1]!.startsWith(`${target.id},`)).toBe(true);

    // A value no filter takes is named, not silently dropped.
    await page.goto(`/nodes?pool=${pool.id}&tenant=${tenantId}&state=gone`);
    await expect(page.getByRole('status').filter({ hasText: 'Ignored state' })).toBeVisible();
  }
});
