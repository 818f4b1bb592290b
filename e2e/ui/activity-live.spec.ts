import { randomUUID } from 'node:crypto';
import { expect, test } from '@playwright/test';
import { adminCredentials, uniqueName } from '../support/env';
import { joinMachine } from '../support/machine';
import { openConsole, trpc } from '../support/session';
import { roleState } from '../support/roles';

// Signed in as the first admin by the setup project (e2e/support/roles.ts), not through the form.
test.use({ storageState: roleState('admin') });

/** What the activity pages show beyond activity.spec.ts: a refusal's every column, live events with their links. */

async function freshPool(page: import('@playwright/test').Page) {
  const { items: tenants } = await trpc<{ items: { id: string; isRoot: boolean }[] }>(page.request, 'query', 'tenants.list', {});
  const tenantId = tenants.find((t) => t.isRoot)!.id;
  const site = await trpc<{ id: string }>(page.request, 'mutation', 'sites.create', { tenantId, name: uniqueName('live-site') });
  const pool = await trpc<{ id: string }>(page.request, 'mutation', 'pools.create', {
    tenantId,
    siteId: site.id,
    name: uniqueName('live-pool'),
    agent: 'bcd',
  });
  const mint = () =>
    trpc<{ id: string; token: string }>(page.request, 'mutation', 'joinTokens.create', {
      tenantId,
      poolId: pool.id,
      ttlSeconds: 600,
      idempotencyKey: randomUUID(),
    });
  return { tenantId, poolId: pool.id, mint };
}

// Each test joins machines against a server other helpers' runs share the cores with.
test.describe.configure({ timeout: 90_000 });

test.beforeEach(async ({ page }) => {
  await openConsole(page);
});

test("a refused join's row names its attestor, role and suppressed count, and copies the full hashes", async ({ page, context }) => {
  const { tenantId, poolId, mint } = await freshPool(page);
  const token = await mint();
  await trpc(page.request, 'mutation', 'joinTokens.revoke', { tenantId, poolId, tokenId: token.id });
  const refused = await joinMachine(page.request, token.token);
  expect(refused.response.status()).toBe(403);
  const [event] = (
    await trpc<{ items: { data: { csrSha256: string; hardwareKey: string; attestor: string; role: string; suppressed: number } }[] }>(
      page.request,
      'query',
      'events.list',
      {
        tenantId,
        type: 'security.join.refused',
        limit: 50,
      },
    )
  ).items.filter((e) => e.data.csrSha256 === refused.csrSha256);
  expect(event).toBeTruthy();

  await page.goto(`/refused-joins?tenant=${tenantId}`);
  const row = page
    .getByRole('region', { name: 'Refused joins' })
    .getByRole('row')
    .filter({ has: page.getByRole('button', { name: `Copy CSR hash ${refused.csrSha256}` }) });
  const cells = row.getByRole('cell');
  // Time, reason, attestor, role, caller, CSR hash, hardware key, suppressed.
  await expect(cells.nth(2)).toHaveText(event!.data.attestor);
  await expect(cells.nth(3)).toHaveText(event!.data.role);
  await expect(cells.nth(4)).toHaveText(/^[0-9a-f:.]+$/i);
  await expect(cells.nth(7)).toHaveText(String(event!.data.suppressed));
  await expect(row.getByTitle(event!.data.hardwareKey)).toHaveText(`${event!.data.hardwareKey.slice(0, 12)}…`);

  await context.grantPermissions(['clipboard-read', 'clipboard-write']);
  await page.evaluate(() => navigator.clipboard.writeText(''));
  await row.getByRole('button', { name: `Copy hardware key ${event!.data.hardwareKey}` }).click();
  await expect.poll(() => page.evaluate(() => navigator.clipboard.readText())).toBe(event!.data.hardwareKey);
  await row.getByRole('button', { name: `Copy CSR hash ${refused.csrSha256}` }).click();
  await expect.poll(() => page.evaluate(() => navigator.clipboard.readText())).toBe(refused.csrSha256);
});

test('a join shows on the open events page without a reload, its node, pool and token linked', async ({ page }) => {
  const { tenantId, poolId, mint } = await freshPool(page);
  const token = await mint();
  await page.goto(`/events?tenant=${tenantId}&type=node.joined`);
  const region = page.getByRole('region', { name: 'Events' });
  await expect(page.getByLabel('Type')).toHaveValue('node.joined');
  const joined = await joinMachine(page.request, token.token);
  expect(joined.response.status()).toBe(200);
  const { items } = await trpc<{ items: { id: string }[] }>(page.request, 'query', 'nodes.list', { tenantId, poolId });
  const nodeId = items[0]!.id;

  // Arrives live (events.onChange over SSE re-reads the list): no reload, no click.
  const row = region.locator('tr.event-row').filter({ hasText: nodeId });
  await expect(row).toBeVisible({ timeout: 15_000 });
  // One line per event; the data opens below the row, its ids linked.
  await row.getByRole('button', { name: /Show details/ }).click();
  const details = row.locator('xpath=following-sibling::tr[1]');
  await expect(details.getByRole('link', { name: nodeId })).toHaveAttribute('href', new RegExp(`/nodes/${nodeId}\\?tenant=${tenantId}$`));
  await expect(details.getByRole('link', { name: poolId })).toHaveAttribute(
    'href',
    new RegExp(`/join-tokens\\?pool=${poolId}&tenant=${tenantId}$`),
  );
  await expect(details.getByRole('link', { name: token.id })).toHaveAttribute(
    'href',
    new RegExp(`/join-tokens\\?pool=${poolId}&tenant=${tenantId}$`),
  );
  await details.getByRole('link', { name: nodeId }).click();
  // The page is titled by the machine's hostname, with the node id beside it.
  await expect(page.getByTestId('node-id')).toHaveText(nodeId);
});

test('a join token names who created it, and a join shows as its last use, in the past, without a reload', async ({ page }) => {
  const { tenantId, poolId } = await freshPool(page);
  const { id: tokenId, token } = await trpc<{ id: string; token: string }>(page.request, 'mutation', 'joinTokens.create', {
    tenantId,
    poolId,
    ttlSeconds: 600,
    maxUses: 2,
    idempotencyKey: randomUUID(),
  });
  await page.goto(`/join-tokens?pool=${poolId}&tenant=${tenantId}`);
  const row = page.getByRole('row').filter({ has: page.getByText(tokenId, { exact: true }) });
  await expect(row).toContainText(`by ${adminCredentials().email}`);
  // The token id is the row's header; the cells are state, uses, expiry, pin, reclaim, hosted, last used, created.
  const lastUsed = row.getByRole('cell').nth(6);
  await expect(lastUsed).toHaveText('never');
  expect((await joinMachine(page.request, token)).response.status()).toBe(200);
  // A use a moment ago, by the page's once-a-minute clock, reads as just now, never as a time to come.
  await expect(lastUsed).toHaveText(/^(just now|\d+ min ago)$/, { timeout: 15_000 });
});

test("a token's created event names who created it", async ({ page }) => {
  const { tenantId, mint } = await freshPool(page);
  const token = await mint();
  await page.goto(`/events?tenant=${tenantId}&type=security.join-token.created`);
  const row = page.getByRole('region', { name: 'Events' }).locator('tr.event-row').filter({ hasText: token.id });
  await row.getByRole('button', { name: /Show details/ }).click();
  const details = row.locator('xpath=following-sibling::tr[1]');
  // The operator by name (the first admin's), never by id.
  await expect(details.getByText('First admin', { exact: true })).toBeVisible();
  await expect(details.getByText(/^operator:/)).toHaveCount(0);
  await expect(row.getByText(/operator:/)).toHaveCount(0);
});
