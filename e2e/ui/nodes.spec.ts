import { randomUUID } from 'node:crypto';
import { expect, test } from '@playwright/test';
import { uniqueName } from '../support/env';
import { joinMachine } from '../support/machine';
import { openConsole, trpc } from '../support/session';
import { roleState } from '../support/roles';

// Signed in as the first admin by the setup project (e2e/support/roles.ts), not through the form.
test.use({ storageState: roleState('admin') });

/** A machine joined with a pool's token shows on the nodes page; its page has its certificate and events, and a confirmed cordon. */
test('a joined machine shows on the nodes page, and its page cordons it after a confirmation', async ({ page }) => {
  test.setTimeout(90_000);
  await openConsole(page);
  const { items: tenants } = await trpc<{ items: { id: string; isRoot: boolean }[] }>(page.request, 'query', 'tenants.list', {});
  const tenantId = tenants.find((t) => t.isRoot)!.id;
  const site = await trpc<{ id: string }>(page.request, 'mutation', 'sites.create', { tenantId, name: uniqueName('nodes-site') });
  const pool = await trpc<{ id: string }>(page.request, 'mutation', 'pools.create', {
    tenantId,
    siteId: site.id,
    name: uniqueName('nodes-pool'),
    agent: 'bcd',
  });
  const { token, id: tokenId } = await trpc<{ id: string; token: string }>(page.request, 'mutation', 'joinTokens.create', {
    tenantId,
    poolId: pool.id,
    ttlSeconds: 600,
    idempotencyKey: randomUUID(),
  });
  const { response } = await joinMachine(page.request, token);
  expect(response.status()).toBe(200);
  // The answer is a signed envelope; the pool is new, so its only node is the one that just joined.
  const { items } = await trpc<{ items: { id: string }[] }>(page.request, 'query', 'nodes.list', { tenantId, poolId: pool.id });
  expect(items).toHaveLength(1);
  const nodeId = items[0]!.id;

  await page.goto(`/nodes?pool=${pool.id}&tenant=${tenantId}`);
  const link = page.getByRole('link', { name: nodeId });
  await expect(link).toBeVisible();
  const row = page.getByRole('row').filter({ has: link });
  await expect(row).toContainText('adopt');
  await expect(row).toContainText(tokenId);
  await expect(row).toContainText(/expires in \d+ (h|min)/);

  await link.click();
  // The page is titled by the machine's hostname, with the node id beside it.
  await expect(page.getByTestId('node-id')).toHaveText(nodeId);
  await expect(page.getByRole('region', { name: 'Certificates' }).getByRole('rowheader')).toHaveText(/^[0-9a-f]+$/);
  await page.getByRole('button', { name: `Cordon node ${nodeId}` }).click();
  const dialog = page.getByRole('dialog', { name: 'Cordon node' });
  await expect(dialog).toContainText('takes no new work');
  await dialog.getByRole('button', { name: 'Cordon' }).click();
  await expect(dialog).toBeHidden();
  await expect(page.getByRole('button', { name: `Uncordon node ${nodeId}` })).toBeVisible();
  // A cordoned node may be deleted; the action appears only now.
  await expect(page.getByRole('button', { name: `Delete node ${nodeId}` })).toBeVisible();
  await expect(page.getByRole('region', { name: 'Events' })).toContainText('node.');
});
