import { randomUUID } from 'node:crypto';
import { expect, test } from '@playwright/test';
import { startCli } from '../support/cli';
import { uniqueName } from '../support/env';
import { joinMachine } from '../support/machine';
import { openConsole, trpc } from '../support/session';
import { roleState } from '../support/roles';
import { consolePages, followNav, openPage, seedConsole, type ConsoleSeed } from '../support/console-pages';
import { axeViolations, expectNoSeriousViolations } from '../support/axe';

// Signed in as the first admin by the setup project (e2e/support/roles.ts), not through the form.
test.use({ storageState: roleState('admin') });

/**
 * axe-core on every page of the console: no serious or critical violation (contrast, names, roles, ARIA).
 * Each page also leaves one full-page screenshot in test-results/console-pages/ (not committed), for a
 * person to look at.
 */
const SHOTS = 'test-results/console-pages';

const PAGES = [
  { name: 'overview', link: 'Overview', heading: 'Overview' },
  { name: 'pools', link: 'Pools', heading: 'Pools' },
  { name: 'join-tokens', link: 'Join tokens', heading: 'Join tokens' },
  { name: 'join-requests', link: 'Join requests', heading: 'Join requests' },
  { name: 'approval-rules', link: 'Approval rules', heading: 'Approval rules' },
  { name: 'expected-machines', link: 'Expected machines', heading: 'Expected machines' },
  { name: 'nodes', link: 'Nodes', heading: 'Nodes' },
  { name: 'refused-joins', link: 'Refused joins', heading: 'Refused joins' },
  { name: 'events', link: 'Events', heading: 'Events' },
  { name: 'audit', link: 'Audit', heading: 'Audit' },
] as const;

test.describe('signed out', () => {
  test.use({ storageState: { cookies: [], origins: [] } });
  test('the sign-in page', async ({ page }) => {
    test.setTimeout(60_000);
    await page.goto('/login?callbackUrl=%2Fevents&expired=1');
    await expect(page.getByText('Your session expired.')).toBeVisible();
    await expectNoSeriousViolations(page, 'login', { screenshots: SHOTS });
  });
});

test('every console page, with content in it', async ({ page }) => {
  // Seven full-page screenshots and axe passes: near two minutes when other runs share the two cores.
  test.setTimeout(180_000);
  await openConsole(page);
  // Something on every list: a live token, a joined node, a refusal (a revoked token's join).
  const { items: tenants } = await trpc<{ items: { id: string; isRoot: boolean }[] }>(page.request, 'query', 'tenants.list', {});
  const tenantId = tenants.find((t) => t.isRoot)!.id;
  const { items: pools } = await trpc<{ items: { id: string; name: string; agent: string }[] }>(page.request, 'query', 'pools.list', {
    tenantId,
  });
  const poolId = pools.find((p) => p.name === 'default' && p.agent === 'bcd')!.id;
  const mint = () =>
    trpc<{ id: string; token: string }>(page.request, 'mutation', 'joinTokens.create', {
      tenantId,
      poolId,
      ttlSeconds: 600,
      maxUses: 3,
      idempotencyKey: randomUUID(),
    });
  await joinMachine(page.request, (await mint()).token);
  const revoked = await mint();
  await trpc(page.request, 'mutation', 'joinTokens.revoke', { tenantId, poolId, tokenId: revoked.id });
  await joinMachine(page.request, revoked.token);

  for (const { name, link, heading } of PAGES) {
    await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: link, exact: true }).click();
    await expect(page.getByRole('heading', { name: heading, level: 1 })).toBeVisible();
    await expect(page.getByRole('status').filter({ hasText: /^Loading/ })).toHaveCount(0);
    await expectNoSeriousViolations(page, name, { screenshots: SHOTS });
  }
});

test('the dialogs and the one-time token', async ({ page }) => {
  test.setTimeout(90_000);
  await openConsole(page);
  await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Join tokens' }).click();
  await page.getByRole('button', { name: 'Create join token' }).click();
  const dialog = page.getByRole('dialog', { name: 'Create join token' });
  await dialog.getByLabel('MAC', { exact: true }).fill('aa-bb');
  await dialog.getByRole('button', { name: 'Create token' }).click();
  await expect(dialog.getByLabel('MAC', { exact: true })).toHaveAttribute('aria-invalid', 'true');
  await expectNoSeriousViolations(page, 'create-join-token-errors', { screenshots: SHOTS });
  await dialog.getByLabel('MAC', { exact: true }).fill('');
  await dialog.getByRole('button', { name: 'Create token' }).click();
  await expect(page.getByRole('region', { name: 'New join token' })).toBeVisible();
  await expectNoSeriousViolations(page, 'one-time-token', { screenshots: SHOTS });
  await page.getByRole('button', { name: 'Done' }).click();
  await expect(page.getByRole('dialog', { name: 'Discard the join token?' })).toBeVisible();
  await expectNoSeriousViolations(page, 'discard-token-confirmation', { screenshots: SHOTS });
});

test.describe('phone', () => {
  test.use({ viewport: { width: 390, height: 844 } });
  test('pools and join tokens on a phone', async ({ page }) => {
    test.setTimeout(90_000);
    await openConsole(page);
    // Sign-in lands on the overview (overview.spec.ts checks it at this width); this test is about Pools.
    await followNav(page, 'Pools');
    await expect(page).toHaveURL(/\/pools(\?|$)/);
    await expect(page.getByRole('heading', { name: 'Pools', level: 1 })).toBeVisible();
    await expectNoSeriousViolations(page, 'phone-pools', { screenshots: SHOTS });
    await followNav(page, 'Join tokens');
    await expect(page.getByRole('heading', { name: 'Pool default', level: 2 })).toBeVisible();
    await expectNoSeriousViolations(page, 'phone-join-tokens', { screenshots: SHOTS });
  });
});

test('a node’s page', async ({ page }) => {
  test.setTimeout(90_000);
  await openConsole(page);
  const { items: tenants } = await trpc<{ items: { id: string; isRoot: boolean }[] }>(page.request, 'query', 'tenants.list', {});
  const tenantId = tenants.find((t) => t.isRoot)!.id;
  const { items: pools } = await trpc<{ items: { id: string; name: string; agent: string }[] }>(page.request, 'query', 'pools.list', {
    tenantId,
  });
  const poolId = pools.find((p) => p.name === 'default' && p.agent === 'bcd')!.id;
  const { token } = await trpc<{ token: string }>(page.request, 'mutation', 'joinTokens.create', {
    tenantId,
    poolId,
    ttlSeconds: 600,
    idempotencyKey: randomUUID(),
  });
  expect((await joinMachine(page.request, token)).response.status()).toBe(200);
  await page.goto(`/nodes?pool=${poolId}&tenant=${tenantId}`);
  const link = page.locator('a[href^="/nodes/node_"]').first();
  const nodeId = (await link.textContent())!.trim();
  await link.click();
  // The page is titled by the machine's hostname, with the node id beside it.
  await expect(page.getByTestId('node-id')).toHaveText(nodeId);
  await expect(page.getByRole('status').filter({ hasText: /^Loading/ })).toHaveCount(0);
  await expectNoSeriousViolations(page, 'node', { screenshots: SHOTS });
  await page.getByRole('button', { name: `Revoke identity node ${nodeId}` }).click();
  await expect(page.getByRole('dialog', { name: 'Revoke node identity' })).toContainText('cannot be undone');
  await expectNoSeriousViolations(page, 'node-revoke-confirmation', { screenshots: SHOTS });
});

test('the join-requests queue with requests in it, and its dialogs', async ({ page }) => {
  test.setTimeout(120_000);
  await openConsole(page);
  const { items: tenants } = await trpc<{ items: { id: string; isRoot: boolean }[] }>(page.request, 'query', 'tenants.list', {});
  const tenantId = tenants.find((t) => t.isRoot)!.id;
  const site = await trpc<{ id: string }>(page.request, 'mutation', 'sites.create', { tenantId, name: uniqueName('axe-site') });
  const pool = await trpc<{ id: string }>(page.request, 'mutation', 'pools.create', {
    tenantId,
    siteId: site.id,
    name: uniqueName('axe-pool'),
    agent: 'bcd',
  });
  const { key } = await trpc<{ key: string }>(page.request, 'mutation', 'apiKeys.create', {
    tenantId,
    role: 'admin',
    name: uniqueName('axe-cli'),
  });
  const sim = startCli(['dev', '--sim', '2', '--pxe', '--tenant', tenantId, '--site', site.id], key);
  try {
    await page.goto(`/join-requests?pool=${pool.id}&tenant=${tenantId}`);
    await expect(page.locator('tbody tr[id^="request-row-"]')).toHaveCount(2, { timeout: 60_000 });
    await expectNoSeriousViolations(page, 'join-requests-queue', { screenshots: SHOTS });
    await page.getByRole('button', { name: 'Approve', exact: true }).click();
    await expect(page.getByRole('dialog', { name: 'Approve request' })).toBeVisible();
    await expectNoSeriousViolations(page, 'join-requests-approve', { screenshots: SHOTS });
    await page.keyboard.press('Escape');
    await page.keyboard.press('?');
    await expect(page.getByRole('dialog', { name: 'Keyboard shortcuts' })).toBeVisible();
    await expectNoSeriousViolations(page, 'join-requests-shortcuts', { screenshots: SHOTS });
  } finally {
    sim.kill();
  }
});

/** axe at moderate impact and worse (the `region` rule among them). */
const MODERATE_AND_WORSE = ['moderate', 'serious', 'critical'];

test.describe('every page, at moderate impact and worse', () => {
  let seed: ConsoleSeed;
  test.beforeAll(async ({ browser }) => {
    test.setTimeout(120_000);
    const context = await browser.newContext({ storageState: roleState('admin'), baseURL: process.env.E2E_BASE_URL });
    seed = await seedConsole(context.request);
    await context.close();
  });
  test.afterAll(() => seed?.stop());

  for (const viewport of [
    { width: 1440, height: 900 },
    { width: 390, height: 844 },
  ]) {
    test.describe(`${viewport.width}×${viewport.height}`, () => {
      test.use({ viewport });

      test('every console page', async ({ page }) => {
        test.setTimeout(300_000);
        const failures: Record<string, string[]> = {};
        for (const { path, heading } of consolePages(seed)) {
          await openPage(page, path, heading);
          const violations = await axeViolations(page, MODERATE_AND_WORSE);
          if (violations.length) failures[path.replace(/[?&]tenant=[^&]*/, '')] = violations;
        }
        expect(failures).toEqual({});
      });

      test('open dialogs are scanned too', async ({ page }) => {
        test.setTimeout(180_000);
        const failures: Record<string, string[]> = {};
        const scan = async (name: string) => {
          const violations = await axeViolations(page, MODERATE_AND_WORSE);
          if (violations.length) failures[name] = violations;
        };
        await openPage(page, `/pools?tenant=${seed.tenantId}`, 'Pools');
        await page.getByRole('button', { name: 'Create pool' }).click();
        await expect(page.getByRole('dialog', { name: 'Create pool' })).toBeVisible();
        await scan('create pool');
        await page.keyboard.press('Escape');

        await openPage(page, `/sites?tenant=${seed.tenantId}`, 'Sites');
        await page.getByRole('button', { name: 'Create site' }).click();
        await expect(page.getByRole('dialog', { name: 'Create site' })).toBeVisible();
        await scan('create site');
        await page.keyboard.press('Escape');
        await page
          .getByRole('button', { name: /^Settings of site walk-site-/ })
          .first()
          .click();
        await expect(page.getByRole('dialog', { name: /^Settings of site / })).toBeVisible();
        await scan('site settings');
        await page.keyboard.press('Escape');

        await openPage(page, `/join-tokens?pool=${seed.poolId}&tenant=${seed.tenantId}`, 'Join tokens');
        await page.getByRole('button', { name: 'Create join token' }).click();
        await expect(page.getByRole('dialog', { name: 'Create join token' })).toBeVisible();
        await scan('create join token');
        await page.keyboard.press('Escape');

        await openPage(page, `/nodes/${seed.nodeId}?tenant=${seed.tenantId}`, 'e2e-join');
        await page.getByRole('button', { name: `Cordon node ${seed.nodeId}` }).click();
        await expect(page.getByRole('dialog', { name: /Cordon/ })).toBeVisible();
        await scan('cordon node');
        expect(failures).toEqual({});
      });
    });
  }
});
