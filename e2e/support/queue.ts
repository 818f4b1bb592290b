import { expect, type APIRequestContext, type Page } from '@playwright/test';
import type { CliRun } from './cli';
import { uniqueName } from './env';
import { trpc } from './session';

/** A tenant's new site and bcd pool, and an admin API key for the CLI that plays the site's PXE machines. */
export interface Scope {
  tenantId: string;
  siteId: string;
  poolId: string;
  apiKey: string;
}

export async function newScope(request: APIRequestContext): Promise<Scope> {
  const { items: tenants } = await trpc<{ items: { id: string; isRoot: boolean }[] }>(request, 'query', 'tenants.list', {});
  const tenantId = tenants.find((t) => t.isRoot)!.id;
  const site = await trpc<{ id: string }>(request, 'mutation', 'sites.create', { tenantId, name: uniqueName('jr-site') });
  const pool = await trpc<{ id: string }>(request, 'mutation', 'pools.create', {
    tenantId,
    siteId: site.id,
    name: uniqueName('jr-pool'),
    agent: 'bcd',
  });
  const key = await trpc<{ key: string }>(request, 'mutation', 'apiKeys.create', { tenantId, role: 'admin', name: uniqueName('jr-cli') });
  return { tenantId, siteId: site.id, poolId: pool.id, apiKey: key.key };
}

/** The request ids the simulated machines print while they wait, once all `n` wait. */
export async function waitingRequests(run: CliRun, n: number): Promise<string[]> {
  const ids = () => [...new Set(run.stderr.flatMap((line) => /waiting: (jreq_\S+)/.exec(line)?.[1] ?? []))];
  await expect.poll(() => ids().length, { timeout: 60_000, message: run.stderr.join('\n') }).toBe(n);
  return ids();
}

export async function openQueue(page: Page, scope: Scope) {
  await page.goto(`/join-requests?pool=${scope.poolId}&tenant=${scope.tenantId}`);
  await expect(page.getByRole('heading', { name: 'Join requests', level: 1 })).toBeVisible();
  await expect(page.getByText('No machine is waiting')).toBeVisible();
}

export const requestRow = (page: Page, id: string) => page.locator(`#request-row-${id}`);
