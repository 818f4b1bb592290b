import { randomUUID } from 'node:crypto';
import { expect, test, type APIRequestContext, type Page } from '@playwright/test';
import { adminCredentials } from '../support/env';
import { joinMachine } from '../support/machine';
import { openConsole, trpc } from '../support/session';
import { roleState } from '../support/roles';

// Signed in as the first admin by the setup project (e2e/support/roles.ts), not through the form.
test.use({ storageState: roleState('admin') });

/** The refused joins, events and audit pages, against refusals and tokens made over the API. */

const nav = (page: Page) => page.getByRole('navigation', { name: 'Console' });

async function rootTenantAndPool(request: APIRequestContext) {
  const { items: tenants } = await trpc<{ items: { id: string; isRoot: boolean }[] }>(request, 'query', 'tenants.list', {});
  const tenantId = tenants.find((t) => t.isRoot)!.id;
  const { items: pools } = await trpc<{ items: { id: string; name: string; agent: string }[] }>(request, 'query', 'pools.list', {
    tenantId,
  });
  return { tenantId, poolId: pools.find((p) => p.name === 'default' && p.agent === 'bcd')!.id };
}

/** A token revoked at once: every join with it is refused as `join-token:revoked`. */
async function revokedToken(request: APIRequestContext) {
  const { tenantId, poolId } = await rootTenantAndPool(request);
  const minted = await trpc<{ id: string; token: string }>(request, 'mutation', 'joinTokens.create', {
    tenantId,
    poolId,
    ttlSeconds: 600,
    idempotencyKey: randomUUID(),
  });
  await trpc(request, 'mutation', 'joinTokens.revoke', { tenantId, poolId, tokenId: minted.id });
  return minted;
}

test.beforeEach(async ({ page }) => {
  await openConsole(page);
});

test('a refused join shows with its reason, what it means and what to do; filters stay in the URL; new ones arrive', async ({ page }) => {
  const token = await revokedToken(page.request);
  const first = await joinMachine(page.request, token.token);
  expect(first.response.status()).toBe(403);

  await nav(page).getByRole('link', { name: 'Refused joins' }).click();
  await expect(page.getByRole('heading', { name: 'Refused joins', level: 1 })).toBeVisible();
  const table = page.getByRole('region', { name: 'Refused joins' });
  const row = (csr: string) => table.getByRole('row').filter({ has: page.getByRole('button', { name: `Copy CSR hash ${csr}` }) });
  const firstRow = row(first.csrSha256);
  await expect(firstRow.getByText('join-token:revoked', { exact: true })).toBeVisible();
  await expect(firstRow.getByText('A real token that was revoked: it no longer admits anyone.')).toBeVisible();
  await expect(firstRow.getByText(/What to do: Create a new token/)).toBeVisible();
  // Shortened, the whole hash on hover, and seconds in the time.
  await expect(firstRow.getByTitle(first.csrSha256)).toHaveText(`${first.csrSha256.slice(0, 12)}…`);
  await expect(firstRow.locator('time')).toHaveText(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
  await expect(firstRow.locator('time')).toHaveAttribute('title', / UTC$/);

  await page.getByLabel('Reason').selectOption('join-token:revoked');
  await page.getByLabel('Time range').selectOption('1h');
  await expect(page).toHaveURL(/reason=join-token%3Arevoked/);
  await expect(page).toHaveURL(/range=1h/);
  await expect(firstRow).toBeVisible();
  await page.reload();
  await expect(page.getByLabel('Reason')).toHaveValue('join-token:revoked');
  await expect(firstRow).toBeVisible();

  // Another reason filters the row away.
  await page.getByLabel('Reason').selectOption('join:expect');
  await expect(page.getByText('No refused joins match these filters.')).toBeVisible();
  await page.getByLabel('Reason').selectOption('join-token:revoked');

  // A new refusal arrives without a reload or a focus change (events.onChange over SSE), on top (newest first).
  const second = await joinMachine(page.request, token.token);
  expect(second.response.status()).toBe(403);
  await expect(row(second.csrSha256)).toBeVisible();
  await expect(table.getByRole('row').nth(1)).toContainText(second.csrSha256.slice(0, 12));
});

test('events: a type filter in the URL, details as fields with links, naming who revoked a token', async ({ page }) => {
  const token = await revokedToken(page.request);
  await nav(page).getByRole('link', { name: 'Events' }).click();
  await page.getByLabel('Type').selectOption('security.join-token.revoked');
  await expect(page).toHaveURL(/type=security\.join-token\.revoked/);
  const row = page.getByRole('region', { name: 'Events' }).locator('tr.event-row').filter({ hasText: token.id });
  // One line per event; the data opens below the row, as fields with links.
  await row.getByRole('button', { name: /Show details/ }).click();
  const details = row.locator('xpath=following-sibling::tr[1]');
  await expect(details.getByRole('link', { name: token.id })).toHaveAttribute('href', /\/join-tokens\?pool=pool_/);
  // The operator by name (the first admin's), never by id.
  await expect(details.getByText('First admin', { exact: true })).toBeVisible();
  await expect(row.getByText(/operator:/)).toHaveCount(0);
  await expect(details.getByText(/^operator:/)).toHaveCount(0);
  await expect(details.getByText('{')).toHaveCount(0);
  await expect(row.locator('time')).toHaveText(/:\d\d:\d\d$/);
  // Only that type is listed.
  await expect(page.getByRole('region', { name: 'Events' }).locator('tr.event-row td:nth-child(2)')).toHaveText(
    Array(await page.getByRole('region', { name: 'Events' }).locator('tr.event-row').count()).fill('security.join-token.revoked'),
  );
});

test('audit: who did what to which resource, narrowed to one action and one actor', async ({ page }) => {
  const token = await revokedToken(page.request);
  await nav(page).getByRole('link', { name: 'Audit' }).click();
  await expect(page.getByRole('heading', { name: 'Audit', level: 1 })).toBeVisible();
  const log = page.getByRole('region', { name: 'Audit log' });
  const revokedRow = log
    .getByRole('row')
    .filter({ hasText: `compute-join-token/${token.id}` })
    .filter({ hasText: 'join-token.revoked' });
  await expect(revokedRow.getByText(adminCredentials().email)).toBeVisible();

  await page.getByLabel('Action').selectOption('join-token.revoked');
  await expect(page).toHaveURL(/action=join-token\.revoked/);
  await expect(revokedRow).toBeVisible();
  await expect(log.getByRole('row').filter({ hasText: 'join-token.created' })).toHaveCount(0);

  // The actor facet names the operator (name, else email) and filters on that operator's actor id.
  const actor = page.getByLabel('Actor');
  const admin = actor.locator('option').filter({ hasText: /^First admin \(\d+\)$/ });
  await actor.selectOption((await admin.getAttribute('value'))!);
  await expect(page).toHaveURL(/actor=operator%3Aop_/);
  await expect(revokedRow).toBeVisible();
  // A range in which nothing happened yet.
  await page.getByLabel('Time range').selectOption('custom');
  await page.getByLabel('From').fill('2099-01-01T00:00');
  await expect(page.getByText('No audit entries match these filters.')).toBeVisible();
});
