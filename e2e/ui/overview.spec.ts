import { randomUUID } from 'node:crypto';
import { expect, test, type Page } from '@playwright/test';
import { startCli } from '../support/cli';
import { joinMachine } from '../support/machine';
import { newScope, waitingRequests, type Scope } from '../support/queue';
import { roleState } from '../support/roles';
import { openConsole, signInThroughForm, trpc } from '../support/session';
import { expectNoSeriousViolations } from '../support/axe';

/**
 * The overview, the console's landing page, over a history seeded through the product: three machines join a
 * new pool, one is refused (a revoked token), and two PXE machines of a new site wait in its queue, one of
 * which an operator rejects. Per-site and per-pool numbers are exact; tenant-wide charts count at least the
 * seeded joins (other specs join machines into the same tenant meanwhile). axe-clean in both colour schemes
 * and at phone width.
 */
const SHOTS = 'test-results/console-pages';

/** Seeds the history once per test: joins into the scope's pool, a refusal, two waiting PXE machines, one rejected. */
async function seed(page: Page): Promise<Scope> {
  const scope = await newScope(page.request);
  const mint = (maxUses: number) =>
    trpc<{ id: string; token: string }>(page.request, 'mutation', 'joinTokens.create', {
      tenantId: scope.tenantId,
      poolId: scope.poolId,
      ttlSeconds: 600,
      maxUses,
      idempotencyKey: randomUUID(),
    });
  const token = await mint(3);
  for (let i = 0; i < 3; i++) expect((await joinMachine(page.request, token.token)).response.status()).toBe(200);
  const revoked = await mint(1);
  await trpc(page.request, 'mutation', 'joinTokens.revoke', { tenantId: scope.tenantId, poolId: scope.poolId, tokenId: revoked.id });
  expect((await joinMachine(page.request, revoked.token)).response.status()).toBe(403);
  const sim = startCli(['dev', '--sim', '2', '--pxe', '--tenant', scope.tenantId, '--site', scope.siteId], scope.apiKey);
  try {
    const ids = await waitingRequests(sim, 2);
    await trpc(page.request, 'mutation', 'joinRequests.reject', {
      tenantId: scope.tenantId,
      poolId: scope.poolId,
      requestId: ids[0],
      reason: 'not ours',
    });
  } finally {
    sim.kill();
  }
  return scope;
}

const panel = (page: Page, name: string) => page.getByRole('region', { name });

async function openOverview(page: Page, scope: Scope) {
  await page.goto(`/?tenant=${scope.tenantId}`);
  await expect(page.getByRole('heading', { name: 'Overview', level: 1 })).toBeVisible();
  await expect(page.getByRole('status').filter({ hasText: /^Loading/ })).toHaveCount(0);
}

async function expectSeededCounts(page: Page, scope: Scope, poolName: string, siteName: string) {
  // The queue and time to decision of the new site: one still waits, one was decided.
  const queue = panel(page, 'Join request queue');
  const siteRow = queue.getByRole('row').filter({ has: page.getByRole('rowheader', { name: siteName }) });
  await expect(siteRow.getByRole('cell').first()).toHaveText('1');
  await expect(siteRow.getByRole('link', { name: siteName })).toHaveAttribute('href', new RegExp(`/join-requests\\?pool=${scope.poolId}`));
  const decided = panel(page, 'Time to decision, last 7 days')
    .getByRole('row')
    .filter({ has: page.getByRole('rowheader', { name: siteName }) });
  await expect(decided.getByRole('cell').first()).toHaveText('1');
  // The three joined nodes hold 24-hour certificates: within 24 h, not within 6 h.
  const poolRow = panel(page, 'Certificates expiring')
    .getByRole('row')
    .filter({ has: page.getByRole('rowheader', { name: poolName }) });
  await expect(poolRow.getByRole('cell')).toHaveText(['0', '0', '3']);
  // The joins chart: its table (for screen readers) counts at least the seeded joins.
  const joins = panel(page, 'Joins per hour');
  const table = joins.getByRole('table', { name: /Joins by outcome, per hour/ });
  const sums = [0, 0, 0];
  for (const row of await table.locator('tbody tr').all())
    (await row.getByRole('cell').allTextContents()).forEach((v, i) => (sums[i]! += Number(v)));
  const [admitted, pending, refused] = sums;
  expect(admitted).toBeGreaterThanOrEqual(3);
  expect(pending).toBeGreaterThanOrEqual(2);
  expect(refused).toBeGreaterThanOrEqual(1);
  await expect(joins.getByRole('link', { name: 'Refused' })).toHaveAttribute('href', /\/refused-joins\?range=24h/);
}

test('the overview charts a seeded history, links to the lists, and stacks refusals by reason', async ({ page }) => {
  test.setTimeout(180_000);
  await signInThroughForm(page);
  // Signing in lands on the overview.
  await expect(page.getByRole('heading', { name: 'Overview', level: 1 })).toBeVisible();
  await expect(page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Overview' })).toHaveAttribute(
    'aria-current',
    'page',
  );
  const scope = await seed(page);
  const pool = await trpc<{ name: string; siteId: string }>(page.request, 'query', 'pools.get', {
    tenantId: scope.tenantId,
    poolId: scope.poolId,
  });
  const { items: sites } = await trpc<{ items: { id: string; name: string }[] }>(page.request, 'query', 'sites.list', {
    tenantId: scope.tenantId,
  });
  const siteName = sites.find((s) => s.id === scope.siteId)!.name;
  await openOverview(page, scope);
  await expectSeededCounts(page, scope, pool.name, siteName);
  await expectNoSeriousViolations(page, 'overview', { screenshots: SHOTS });

  // By reason: each part links to the refused joins of that reason (other specs refuse joins in this tenant
  // too, so which reasons are largest is not fixed; the largest is first).
  await panel(page, 'Joins per hour').getByLabel('Refusal reason').check();
  await expect(page).toHaveURL(/[?&]stack=reason/);
  await page.getByRole('radio', { name: 'Last 7 days' }).check();
  await expect(page).toHaveURL(/[?&]range=7d/);
  await expect(panel(page, 'Joins per hour').getByRole('table', { name: /Refused joins by reason, per hour/ })).toBeAttached();
  const first = panel(page, 'Joins per hour').getByRole('listitem').getByRole('link').first();
  const reason = (await first.textContent())!;
  // The legend names each reason in words too (the refused-joins page's explanation), not only its code.
  const words = panel(page, 'Joins per hour').getByRole('listitem').first().locator('.chart-legend-description');
  await expect(words).toHaveText(/\w+ \w+ \w+/);
  await expect(words).not.toHaveText(/does not know/);
  await expect(first).toHaveAttribute('href', new RegExp(`/refused-joins\\?reason=${encodeURIComponent(reason)}&range=7d`));
  await first.click();
  await expect(page.getByRole('heading', { name: 'Refused joins', level: 1 })).toBeVisible();
  await expect(page).toHaveURL(new RegExp(`reason=${encodeURIComponent(reason)}`));
});

test.describe('dark colour scheme', () => {
  test.use({ storageState: roleState('admin'), colorScheme: 'dark' });
  test('the overview in the dark theme', async ({ page }) => {
    test.setTimeout(180_000);
    await openConsole(page);
    const scope = await seed(page);
    await openOverview(page, scope);
    const background = await page.locator('.overview').evaluate((el) => getComputedStyle(el).backgroundColor);
    expect(background).toBe('rgb(15, 20, 27)');
    await expectNoSeriousViolations(page, 'overview-dark', { screenshots: SHOTS });
  });
});

test.describe('phone', () => {
  test.use({ storageState: roleState('admin'), viewport: { width: 390, height: 844 } });
  test('the overview on a phone: nothing wider than the screen', async ({ page }) => {
    test.setTimeout(180_000);
    await openConsole(page);
    const scope = await seed(page);
    await openOverview(page, scope);
    await expect(panel(page, 'Joins per hour').locator('svg')).toBeVisible();
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await expectNoSeriousViolations(page, 'phone-overview', { screenshots: SHOTS });
  });
});
