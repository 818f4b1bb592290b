import { randomUUID } from 'node:crypto';
import { expect, test, type Page } from '@playwright/test';
import { joinMachine } from '../support/machine';
import { signInNewOperator, trpc } from '../support/session';
import { roleState } from '../support/roles';

// Signed in as the first admin by the setup project (e2e/support/roles.ts), not through the form.
test.use({ storageState: roleState('admin') });

const defaultRow = (page: Page) =>
  page
    .getByRole('row')
    .filter({ has: page.getByRole('rowheader', { name: /^default/ }) })
    .first();

async function ids(page: Page) {
  const { items: tenants } = await trpc<{ items: { id: string; isRoot: boolean }[] }>(page.request, 'query', 'tenants.list', {});
  const tenantId = tenants.find((t) => t.isRoot)!.id;
  const { items: pools } = await trpc<{ items: { id: string; name: string; agent: string }[] }>(page.request, 'query', 'pools.list', {
    tenantId,
  });
  return { tenantId, poolId: pools.find((p) => p.name === 'default' && p.agent === 'bcd')!.id };
}

test('each pool shows its live counts and links to its join tokens and nodes', async ({ page }) => {
  await page.goto('/pools');
  const { tenantId, poolId } = await ids(page);
  const tokenLink = defaultRow(page).getByRole('link', { name: /\(join tokens of pool default\)$/ });
  const before = Number((await tokenLink.textContent())!.split(' ')[0]);
  expect(before).not.toBeNaN();

  const minted = await trpc<{ token: string }>(page.request, 'mutation', 'joinTokens.create', {
    tenantId,
    poolId,
    ttlSeconds: 600,
    maxUses: 2,
    idempotencyKey: randomUUID(),
  });
  expect((await joinMachine(page.request, minted.token)).response.status()).toBe(200);
  // The join's event re-reads the counts at once (events.onChange over SSE): no reload, no focus change.
  await expect(tokenLink).toHaveText(new RegExp(`^${before + 1} live`));
  await expect(defaultRow(page).getByRole('link', { name: /\(nodes of pool default\)$/ })).toHaveText(/^\d+ [a-z-]+/);

  await tokenLink.click();
  await expect(page).toHaveURL(new RegExp(`/join-tokens\\?pool=${poolId}`));
  await expect(page.getByRole('heading', { name: 'Pool default', level: 2 })).toBeVisible();
});

test('a viewer sees no create, archive or revoke controls', async ({ page, browser, baseURL }) => {
  // A real viewer of the tenant (the pages arrive rendered by the server with its role; the API spec checks
  // that the server itself refuses a viewer's calls).
  const { tenantId } = await ids(page);
  const viewer = await signInNewOperator(browser, page.request, { baseURL: baseURL!, tenantId, role: 'viewer' });
  try {
    const as = viewer.page;
    await as.goto('/pools');
    await expect(defaultRow(as)).toBeVisible();
    await expect(as.getByRole('button', { name: 'Create pool' })).toHaveCount(0);
    await expect(as.getByRole('button', { name: /^Archive/ })).toHaveCount(0);

    await as.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Join tokens' }).click();
    await expect(as.getByRole('heading', { name: 'Pool default', level: 2 })).toBeVisible();
    await expect(as.getByRole('button', { name: 'Create join token' })).toHaveCount(0);
    await expect(as.getByRole('button', { name: /^Revoke join token/ })).toHaveCount(0);
  } finally {
    await viewer.context.close();
  }
});

test('each pool links to its nodes and its join requests, and the pages open on that pool', async ({ page }) => {
  await page.goto('/pools');
  const { tenantId, poolId } = await ids(page);
  const nodesLink = defaultRow(page).getByRole('link', { name: /\(nodes of pool default\)$/ });
  await expect(nodesLink).toHaveAttribute('href', `/nodes?pool=${poolId}&tenant=${tenantId}`);
  const requestsLink = defaultRow(page).getByRole('link', { name: /\(join requests of pool default\)$/ });
  await expect(requestsLink).toHaveText(/^\d+ pending/);
  await requestsLink.click();
  await expect(page).toHaveURL(new RegExp(`/join-requests\\?pool=${poolId}`));
  await expect(page.getByRole('heading', { name: 'Join requests', level: 1 })).toBeVisible();
  await page.goBack();
  await nodesLink.click();
  await expect(page).toHaveURL(new RegExp(`/nodes\\?pool=${poolId}`));
  await expect(page.getByRole('combobox', { name: 'Pool', exact: true })).toHaveValue(poolId);
});
