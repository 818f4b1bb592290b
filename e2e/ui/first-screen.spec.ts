import { randomUUID } from 'node:crypto';
import { expect, test, type Page } from '@playwright/test';
import { uniqueName } from '../support/env';
import { joinMachine } from '../support/machine';
import { roleState } from '../support/roles';
import { openConsole, trpc } from '../support/session';

// Signed in as the first admin by the setup project (e2e/support/roles.ts).
test.use({ storageState: roleState('admin') });

/**
 * Every console page renders its first view on the server: the HTML the session's cookie fetches holds the
 * page's first useful content (its rows, or its answer that there are none), with no "Loading…" left once the
 * server's stream has arrived, and a browser in another time zone and locale hydrates it without a mismatch.
 */

interface Fixture {
  tenantId: string;
  tenantName: string;
  siteId: string;
  siteName: string;
  poolId: string;
  poolName: string;
  tokenId: string;
  nodeId: string;
  serial: string;
  keyName: string;
  keyId: string;
}

async function fixture(page: Page): Promise<Fixture> {
  const { items } = await trpc<{ items: { id: string; name: string; isRoot: boolean }[] }>(page.request, 'query', 'tenants.list', {});
  const tenant = items.find((t) => t.isRoot)!;
  const siteName = uniqueName('fs-site');
  const poolName = uniqueName('fs-pool');
  const site = await trpc<{ id: string }>(page.request, 'mutation', 'sites.create', { tenantId: tenant.id, name: siteName });
  const pool = await trpc<{ id: string }>(page.request, 'mutation', 'pools.create', {
    tenantId: tenant.id,
    siteId: site.id,
    name: poolName,
    agent: 'bcd',
  });
  const created = await trpc<{ token: string; id: string }>(page.request, 'mutation', 'joinTokens.create', {
    tenantId: tenant.id,
    poolId: pool.id,
    ttlSeconds: 600,
    maxUses: 5,
    idempotencyKey: randomUUID(),
  });
  expect((await joinMachine(page.request, created.token)).response.status()).toBe(200);
  const nodes = await trpc<{ items: { id: string }[] }>(page.request, 'query', 'nodes.list', { tenantId: tenant.id, poolId: pool.id });
  const nodeId = nodes.items[0]!.id;
  const node = await trpc<{ certificates: { serial: string }[] }>(page.request, 'query', 'nodes.get', { tenantId: tenant.id, nodeId });
  const keyName = uniqueName('fs-key');
  const key = await trpc<{ id: string }>(page.request, 'mutation', 'apiKeys.create', {
    tenantId: tenant.id,
    role: 'viewer',
    name: keyName,
  });
  return {
    tenantId: tenant.id,
    tenantName: tenant.name,
    siteId: site.id,
    siteName,
    poolId: pool.id,
    poolName,
    tokenId: created.id,
    keyId: key.id,
    nodeId,
    serial: node.certificates[0]!.serial,
    keyName,
  };
}

/** Each page, and what its first view shows once its data is read (text that only the page's queries can give). */
function pages(f: Fixture): { path: string; shows: string }[] {
  const t = `tenant=${f.tenantId}`;
  return [
    { path: `/?${t}`, shows: f.siteName },
    { path: `/pools?${t}`, shows: f.poolName },
    { path: `/sites?${t}`, shows: f.siteName },
    { path: `/join-tokens?pool=${f.poolId}&${t}`, shows: f.tokenId },
    { path: `/join-requests?pool=${f.poolId}&${t}`, shows: 'No machine is waiting' },
    { path: `/nodes?pool=${f.poolId}&${t}`, shows: f.nodeId },
    { path: `/nodes/${f.nodeId}?${t}`, shows: f.serial },
    { path: `/refused-joins?reason=first-screen:none&${t}`, shows: 'No refused joins match these filters.' },
    { path: `/events?type=node.joined&${t}`, shows: f.nodeId },
    { path: `/audit?${t}`, shows: f.keyId },
    { path: `/approval-rules?site=${f.siteId}&${t}`, shows: 'This site has no approval rules' },
    { path: `/expected-machines?site=${f.siteId}&${t}`, shows: 'No expected machine is waiting in this site.' },
    { path: `/webhooks?${t}`, shows: 'Webhooks' },
    { path: `/access/operators?${t}`, shows: 'Members' },
    { path: `/access/api-keys?${t}`, shows: f.keyName },
    { path: `/access/tenants?${t}`, shows: f.tenantName },
    { path: `/account?${t}`, shows: 'Change password' },
  ];
}

/** Text the browser's own loading states show (the tenants, a page's lists). */
const LOADING = /Loading [^<]*…/;

test("every page's first view is in the server's HTML, and hydrates without a mismatch in another time zone", async ({
  page,
  browser,
  baseURL,
}) => {
  test.setTimeout(240_000);
  await openConsole(page);
  const f = await fixture(page);

  for (const { path, shows } of pages(f)) {
    // The HTML itself, as the session's cookie fetches it (the streamed rest of the page included).
    const html = await (await page.request.get(path)).text();
    expect(html, path).toContain(shows.replaceAll('&', '&amp;'));
  }

  // The same HTML in a browser that runs none of the page's scripts (the streamed parts still take their place):
  // what it shows is the server's alone, and no loading state is left on screen.
  const bare = await browser.newContext({ baseURL, storageState: await page.context().storageState() });
  try {
    const html = await bare.newPage();
    await html.route('**/_next/static/**/*.js', (route) => route.abort());
    for (const { path, shows } of pages(f)) {
      await html.goto(path);
      await expect(html.getByRole('main').getByText(shows).first(), path).toBeVisible();
      await expect(html.getByText(LOADING), path).toHaveCount(0);
    }
  } finally {
    await bare.close();
  }

  // A browser whose clock reads another zone and locale than the server's: what depends on them waits for hydration.
  const context = await browser.newContext({
    baseURL,
    storageState: await page.context().storageState(),
    timezoneId: 'Pacific/Chatham',
    locale: 'de-DE',
  });
  try {
    const other = await context.newPage();
    const problems: string[] = [];
    other.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
    other.on('console', (message) => {
      if (message.type() === 'error' || message.type() === 'warning') problems.push(`${message.type()}: ${message.text()}`);
    });
    for (const { path, shows } of pages(f)) {
      problems.length = 0;
      await other.goto(path);
      await expect(other.getByRole('main').getByText(shows).first(), path).toBeVisible();
      // Hydrated: the tenant switcher shows only then.
      await expect(other.locator('.tenant-current'), path).toBeVisible();
      expect(
        problems.filter((text) => /hydrat|did not match|didn't match|#418|#423|#425/i.test(text)),
        path,
      ).toEqual([]);
    }
  } finally {
    await context.close();
  }
});
