import { expect, test } from '@playwright/test';
import { uniqueName } from '../support/env';
import { joinMachine } from '../support/machine';
import { openConsole, trpc } from '../support/session';
import { roleState } from '../support/roles';

// Signed in as the first admin by the setup project (e2e/support/roles.ts), not through the form.
test.use({ storageState: roleState('admin') });

/**
 * The operator's daily path end to end: a token made in the console's dialog, copied with its Copy button,
 * is what reaches the machine (read back from the clipboard, not from the page), and the machine that joined
 * with it shows on the nodes page with that token.
 */
test('a token copied from the dialog joins a machine that then shows on the nodes page', async ({ page, context }) => {
  test.setTimeout(90_000);
  await openConsole(page);
  const { items: tenants } = await trpc<{ items: { id: string; isRoot: boolean }[] }>(page.request, 'query', 'tenants.list', {});
  const tenantId = tenants.find((t) => t.isRoot)!.id;
  const site = await trpc<{ id: string }>(page.request, 'mutation', 'sites.create', { tenantId, name: uniqueName('copy-site') });
  const poolName = uniqueName('copy-pool');
  const pool = await trpc<{ id: string }>(page.request, 'mutation', 'pools.create', {
    tenantId,
    siteId: site.id,
    name: poolName,
    agent: 'bcd',
  });

  await page.goto(`/join-tokens?pool=${pool.id}&tenant=${tenantId}`);
  await expect(page.getByRole('heading', { name: `Pool ${poolName}`, level: 2 })).toBeVisible();
  await page.getByRole('button', { name: 'Create join token' }).click();
  const dialog = page.getByRole('dialog', { name: 'Create join token' });
  await dialog.getByLabel('Lifetime', { exact: true }).selectOption({ label: '1 hour' });
  await dialog.getByRole('button', { name: 'Create token' }).click();
  await expect(dialog).toBeHidden();

  const panel = page.getByRole('region', { name: 'New join token' });
  await context.grantPermissions(['clipboard-read', 'clipboard-write']);
  await page.evaluate(() => navigator.clipboard.writeText(''));
  await panel.getByRole('button', { name: 'Copy' }).click();
  await expect(panel.getByText('Copied to the clipboard.')).toBeVisible();
  const copied = await page.evaluate(() => navigator.clipboard.readText());
  expect(copied).toMatch(/^bcjt_jt_[0-9a-z]{26}\.[A-Za-z0-9_-]{43}$/);
  const tokenId = copied.slice('bcjt_'.length, copied.indexOf('.'));
  // Copied, so Done closes without asking.
  await panel.getByRole('button', { name: 'Done' }).click();
  await expect(panel).toHaveCount(0);

  const { response } = await joinMachine(page.request, copied);
  expect(response.status()).toBe(200);
  const { items } = await trpc<{ items: { id: string }[] }>(page.request, 'query', 'nodes.list', { tenantId, poolId: pool.id });
  expect(items).toHaveLength(1);
  const nodeId = items[0]!.id;

  await page.goto(`/nodes?pool=${pool.id}&tenant=${tenantId}`);
  const row = page.getByRole('row').filter({ has: page.getByRole('link', { name: nodeId }) });
  await expect(row).toBeVisible();
  await expect(row).toContainText(tokenId);
});
