import { randomUUID } from 'node:crypto';
import { expect, type APIRequestContext, type Page } from '@playwright/test';
import { startCli } from './cli';
import { uniqueName } from './env';
import { joinMachine } from './machine';
import { waitingRequests } from './queue';
import { trpc } from './session';

/** What the cross-page specs seed: something on every list of a new site of the root tenant. */
export interface ConsoleSeed {
  tenantId: string;
  siteId: string;
  poolId: string;
  nodeId: string;
  tokenId: string;
  requestId: string;
  /** Stops the simulated PXE machine that waits on the pending request. */
  stop: () => void;
}

/**
 * A new site and bcd pool of the root tenant with a live join token, a joined node, a refused join (a revoked
 * token's), an approval rule and a pending join request (a simulated PXE machine that keeps waiting until
 * `stop`), over the admin's request context.
 */
export async function seedConsole(request: APIRequestContext): Promise<ConsoleSeed> {
  const { items: tenants } = await trpc<{ items: { id: string; isRoot: boolean }[] }>(request, 'query', 'tenants.list', {});
  const tenantId = tenants.find((t) => t.isRoot)!.id;
  const site = await trpc<{ id: string }>(request, 'mutation', 'sites.create', { tenantId, name: uniqueName('walk-site') });
  const pool = await trpc<{ id: string }>(request, 'mutation', 'pools.create', {
    tenantId,
    siteId: site.id,
    name: uniqueName('walk-pool'),
    agent: 'bcd',
  });
  const mint = () =>
    trpc<{ id: string; token: string }>(request, 'mutation', 'joinTokens.create', {
      tenantId,
      poolId: pool.id,
      ttlSeconds: 3600,
      maxUses: 3,
      idempotencyKey: randomUUID(),
    });
  const live = await mint();
  const joined = await joinMachine(request, live.token);
  expect(joined.response.status()).toBe(200);
  const revoked = await mint();
  await trpc(request, 'mutation', 'joinTokens.revoke', { tenantId, poolId: pool.id, tokenId: revoked.id });
  await joinMachine(request, revoked.token);
  const { items: nodes } = await trpc<{ items: { id: string }[] }>(request, 'query', 'nodes.list', { tenantId, poolId: pool.id });
  await trpc(request, 'mutation', 'approvalRules.create', {
    tenantId,
    siteId: site.id,
    name: 'hold lab machines',
    match: { macPrefixes: ['00:00:5e'] },
    action: 'leave',
  });
  const { key } = await trpc<{ key: string }>(request, 'mutation', 'apiKeys.create', {
    tenantId,
    role: 'admin',
    name: uniqueName('walk-cli'),
  });
  const sim = startCli(['dev', '--sim', '1', '--pxe', '--tenant', tenantId, '--site', site.id], key);
  let requestId: string;
  try {
    [requestId] = (await waitingRequests(sim, 1)) as [string];
  } catch (error) {
    sim.kill();
    throw error;
  }
  return { tenantId, siteId: site.id, poolId: pool.id, nodeId: nodes[0]!.id, tokenId: live.id, requestId, stop: sim.kill };
}

/** Every page of the console, with the seeded site, pool and node where a page shows one at a time. */
export function consolePages(seed: ConsoleSeed): { path: string; heading: string | RegExp }[] {
  const t = `tenant=${seed.tenantId}`;
  return [
    { path: `/?${t}`, heading: 'Overview' },
    { path: `/pools?${t}`, heading: 'Pools' },
    { path: `/sites?${t}`, heading: 'Sites' },
    { path: `/join-tokens?pool=${seed.poolId}&${t}`, heading: 'Join tokens' },
    { path: `/join-requests?pool=${seed.poolId}&${t}`, heading: 'Join requests' },
    { path: `/approval-rules?site=${seed.siteId}&${t}`, heading: 'Approval rules' },
    { path: `/expected-machines?site=${seed.siteId}&${t}`, heading: 'Expected machines' },
    { path: `/nodes?pool=${seed.poolId}&${t}`, heading: 'Nodes' },
    // A node's page is titled by its machine's hostname (the seed joins with machineClaims: e2e-join).
    { path: `/nodes/${seed.nodeId}?${t}`, heading: 'e2e-join' },
    { path: `/refused-joins?${t}`, heading: 'Refused joins' },
    { path: `/events?${t}`, heading: 'Events' },
    { path: `/audit?${t}`, heading: 'Audit' },
    { path: `/access/operators?${t}`, heading: 'Operators' },
    { path: `/access/api-keys?${t}`, heading: 'API keys' },
    { path: `/webhooks?${t}`, heading: 'Webhooks' },
    { path: `/access/tenants?${t}`, heading: 'Tenants' },
    { path: `/pki?${t}`, heading: 'PKI' },
    { path: `/account?${t}`, heading: /Account/ },
  ];
}

/** Opens a console page and waits until its first view is in (the heading, and no list still loading). */
export async function openPage(page: Page, path: string, heading: string | RegExp) {
  await page.goto(path);
  await expect(page.getByRole('heading', { name: heading, level: 1 })).toBeVisible();
  await expect(page.getByRole('status').filter({ hasText: /^Loading/ })).toHaveCount(0, { timeout: 20_000 });
}

/** The console's nav; on a phone its links are behind the Menu button, which this opens first. */
export async function followNav(page: Page, name: string) {
  const nav = page.getByRole('navigation', { name: 'Console' });
  const menu = nav.getByRole('button', { name: 'Menu' });
  if ((await menu.isVisible()) && (await menu.getAttribute('aria-expanded')) !== 'true') await menu.click();
  await nav.getByRole('link', { name, exact: true }).click();
}
