import { expect, test, type Page } from '@playwright/test';
import { uniqueName } from '../support/env';
import { layoutProblems } from '../support/layout-check';
import { joinMachine } from '../support/machine';
import { rootPoolWithToken } from '../support/node-pool';
import { openConsole, trpc } from '../support/session';
import { roleState } from '../support/roles';
import { expectAccessible } from '../support/axe';

// Signed in as the first admin by the setup project (e2e/support/roles.ts), not through the form.
test.use({ storageState: roleState('admin') });

/** A new site and bcd pool of the root tenant with `n` machines joined into it by token: their node ids. */
async function poolWithNodes(page: Page, n: number) {
  const { tenantId, pool, poolName, siteName, token } = await rootPoolWithToken(page, 'fleet', n);
  for (let i = 0; i < n; i++) {
    const { response } = await joinMachine(page.request, token);
    expect(response.status()).toBe(200);
  }
  const { items } = await trpc<{ items: { id: string }[] }>(page.request, 'query', 'nodes.list', { tenantId, poolId: pool.id });
  const nodeIds = items.map((node) => node.id);
  expect(nodeIds).toHaveLength(n);
  return { tenantId, poolId: pool.id, poolName, siteName, nodeIds };
}

for (const width of [1440, 390]) {
  test.describe(`at ${width} px`, () => {
    test.use({ viewport: { width, height: 900 } });

    test('the node page is titled by hostname with its id, names its pool and site, and lists the hardware', async ({ page }) => {
      await openConsole(page);
      const { tenantId, poolName, siteName, nodeIds } = await poolWithNodes(page, 1);
      await page.goto(`/nodes/${nodeIds[0]}?tenant=${tenantId}`);
      await expect(page.getByRole('heading', { level: 1 })).toHaveText('e2e-join');
      await expect(page.getByTestId('node-id')).toHaveText(nodeIds[0]!);
      await expect(page.getByRole('link', { name: poolName })).toBeVisible();
      await expect(page.getByRole('link', { name: siteName })).toBeVisible();
      await expect(page.getByTestId('node-role')).toHaveText('node');
      await expect(page.getByTestId('node-key-trust')).toContainText('trusted key');
      const inventory = page.getByTestId('node-inventory');
      await expect(inventory).toContainText('Product UUID');
      await expect(inventory).toContainText('MAC addresses (1)');
      await expect(page.getByTestId('node-admission')).toContainText('admitted without a join request');
      await expect(page.getByRole('region', { name: 'Session' })).toContainText('Gateway');
      expect(await layoutProblems(page)).toEqual([]);
      await expectAccessible(page);
    });

    test('select all matching, confirm the count, and every node is cordoned with an audit entry each', async ({ page }) => {
      await openConsole(page);
      const { tenantId, poolId, nodeIds } = await poolWithNodes(page, 3);
      await page.goto(`/nodes?tenant=${tenantId}&pool=${poolId}`);
      const bar = page.getByRole('toolbar', { name: 'Bulk actions on nodes' });
      // No bar before a node is selected; the list's header box selects the loaded rows (all 3 here).
      await expect(bar).toHaveCount(0);
      await expect(page.getByTestId('nodes-total')).toHaveText('3 nodes match');
      await page.getByRole('checkbox', { name: 'Select every loaded node' }).check();
      await expect(page.getByRole('region', { name: 'Selected nodes' })).toContainText('3 selected');
      await bar.getByRole('button', { name: 'Cordon 3', exact: true }).click();
      const dialog = page.getByRole('dialog', { name: 'Cordon 3 nodes' });
      expect(await layoutProblems(page)).toEqual([]);
      await expectAccessible(page);
      await dialog.getByRole('button', { name: 'Cordon 3 nodes' }).click();
      await expect(dialog).toBeHidden();
      await expect(bar.getByTestId('node-bulk-notice')).toHaveText('Cordoned 3 of 3 nodes.');
      const { items } = await trpc<{ items: { id: string; cordoned: boolean }[] }>(page.request, 'query', 'nodes.list', {
        tenantId,
        poolId,
      });
      expect(
        items
          .filter((n) => n.cordoned)
          .map((n) => n.id)
          .sort(),
      ).toEqual([...nodeIds].sort());
      const audit = await trpc<{ items: { resource: string; action: string }[] }>(page.request, 'query', 'audit.list', {
        tenantId,
        actionEquals: 'node.cordoned',
        limit: 200,
      });
      for (const id of nodeIds) expect(audit.items.map((a) => a.resource)).toContain(`compute-node/${id}`);
    });
  });
}

test("a viewer's bulk call is refused and changes no node", async ({ page, playwright, baseURL }) => {
  await openConsole(page);
  const { tenantId, poolId, nodeIds } = await poolWithNodes(page, 1);
  const { key } = await trpc<{ key: string }>(page.request, 'mutation', 'apiKeys.create', {
    tenantId,
    role: 'viewer',
    name: uniqueName('bulk-viewer'),
  });
  const forgery = await playwright.request.newContext({ baseURL, extraHTTPHeaders: { authorization: `Bearer ${key}` } });
  try {
    const forged = await forgery.post('/api/trpc/nodes.bulk', { data: { tenantId, matching: { poolId }, action: 'cordon' } });
    expect(forged.status()).toBe(403);
  } finally {
    await forgery.dispose();
  }
  const node = await trpc<{ cordoned: boolean }>(page.request, 'query', 'nodes.get', { tenantId, nodeId: nodeIds[0] });
  expect(node.cordoned).toBe(false);
});
