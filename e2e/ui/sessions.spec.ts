import { expect, test } from '@playwright/test';
import { startCli } from '../support/cli';
import { uniqueName } from '../support/env';
import { signInThroughForm, trpc } from '../support/session';
import { expectAccessible } from '../support/axe';

/** The page passes axe-core (no serious or critical violation). */
/**
 * Sessions in the console: a machine simulated by `better-compute dev --sim 1 --sessions` (the agent's own
 * session loop) joins a pool with acceptance checks and keeps its session through the server's gateway. The
 * nodes list shows it connected without a reload and the session filter finds it; its page shows since, the
 * last heartbeat, the gateway and each acceptance check's result; the pools page counts it connected; once
 * the agent stops, it shows disconnected after the grace (3 s in scripts/e2e.mjs).
 */
test('a simulated node connects live, its page shows the session and its checks, and it disconnects after the grace', async ({ page }) => {
  test.setTimeout(240_000);
  await signInThroughForm(page);
  const { items: tenants } = await trpc<{ items: { id: string; isRoot: boolean }[] }>(page.request, 'query', 'tenants.list', {});
  const tenantId = tenants.find((t) => t.isRoot)!.id;
  const site = await trpc<{ id: string }>(page.request, 'mutation', 'sites.create', { tenantId, name: uniqueName('sess-site') });
  // Two checks this machine is sure to pass and to fail: at least one CPU, and at least 1,024 GPUs.
  const poolName = uniqueName('sess-pool');
  const pool = await trpc<{ id: string }>(page.request, 'mutation', 'pools.create', {
    tenantId,
    siteId: site.id,
    name: poolName,
    agent: 'bcd',
    policy: {
      acceptance: [
        { check: 'min-cpus', min: 1 },
        { check: 'gpu-count', min: 1024 },
      ],
    },
  });
  const { key } = await trpc<{ key: string }>(page.request, 'mutation', 'apiKeys.create', {
    tenantId,
    role: 'admin',
    name: uniqueName('sess-cli'),
  });

  await page.goto(`/nodes?pool=${pool.id}&tenant=${tenantId}`);
  await expect(page.getByRole('heading', { name: 'Nodes', level: 1 })).toBeVisible();
  const rows = page.locator('tbody tr');
  await expect(rows).toHaveCount(0);

  const sim = startCli(['dev', '--sim', '1', '--sessions', '--tenant', tenantId, '--pool', pool.id], key);
  try {
    // The node appears and turns connected without a reload (the list follows node.connected live).
    const connectedRow = rows.filter({ hasText: 'connected' }).filter({ hasNotText: 'disconnected' });
    await expect(connectedRow, sim.stderr.join('\n')).toHaveCount(1, { timeout: 90_000 });
    const { items } = await trpc<{ items: { id: string }[] }>(page.request, 'query', 'nodes.list', { tenantId, poolId: pool.id });
    expect(items).toHaveLength(1);
    const nodeId = items[0]!.id;
    await expect(connectedRow.getByRole('link', { name: nodeId })).toBeVisible();
    await expect(connectedRow).toContainText(/since/);
    await expect(connectedRow).toContainText(/heartbeat/);

    // The session filter, in the URL: connected finds it, disconnected does not.
    const filter = page.getByLabel('Session');
    await filter.selectOption('true');
    await expect(page).toHaveURL(/connected=true/);
    await expect(page.getByRole('link', { name: nodeId })).toBeVisible();
    await filter.selectOption('false');
    await expect(page).toHaveURL(/connected=false/);
    await expect(page.getByRole('link', { name: nodeId })).toBeHidden();
    await filter.selectOption('true');
    await expect(page.getByRole('link', { name: nodeId })).toBeVisible();
    await expectAccessible(page);

    // The node's page: its session (since, last heartbeat, gateway) and the acceptance checks' results.
    await page.getByRole('link', { name: nodeId }).click();
    // The page is titled by the machine's hostname, with the node id beside it.
    await expect(page.getByTestId('node-id')).toHaveText(nodeId);
    const session = page.getByRole('region', { name: 'Session' });
    await expect(session.getByRole('definition').first()).toHaveText('connected');
    await expect(session).toContainText('Connected since');
    await expect(session).toContainText('Last heartbeat');
    await expect(session.locator('code')).toHaveText(/^gw_[0-9a-f]+$/);
    // The trust set version the agent holds (its Hello's, or the one its session was sent).
    await expect(session).toContainText('Trust set');
    await expect(session).toContainText(/version \d+ \(recorded /);
    const checks = page.getByRole('list', { name: 'Acceptance checks' });
    await expect(checks.getByRole('listitem').filter({ hasText: 'min-cpus' })).toContainText('passed', { timeout: 30_000 });
    await expect(checks.getByRole('listitem').filter({ hasText: 'gpu-count' })).toContainText('failed');
    await expect(checks.getByRole('listitem').filter({ hasText: 'gpu-count' })).toContainText('1024');
    await expectAccessible(page);

    // The pools page counts it connected, and the count links to the filtered list.
    await page.goto(`/pools?tenant=${tenantId}`);
    const connectedLink = page.getByRole('link', { name: `1 connected (connected nodes of pool ${poolName})` });
    await expect(connectedLink).toBeVisible();
    await expectAccessible(page);

    // Stop the agent: after the report and the grace, the open node page shows it disconnected, live.
    await page.goto(`/nodes/${nodeId}?tenant=${tenantId}`);
    await expect(session.getByRole('definition').first()).toHaveText('connected');
    sim.kill();
    await sim.done;
    await expect(session.getByRole('definition').first()).toHaveText('disconnected', { timeout: 30_000 });
    await expect(session).toContainText('Last seen');
    await expect(session.getByRole('definition').last()).toHaveText('none');
    // The page may turn before the event's transaction is read back: wait for it, then check the order.
    const sessionEvents = async () =>
      (await trpc<{ items: { type: string }[] }>(page.request, 'query', 'events.list', { tenantId, nodeId, limit: 100 })).items
        .map((e) => e.type)
        .filter((type) => /^node\.(connected|disconnected)$/.test(type));
    await expect.poll(sessionEvents, { timeout: 15_000 }).toEqual(['node.disconnected', 'node.connected']);

    await page.goto(`/nodes?pool=${pool.id}&tenant=${tenantId}&connected=false`);
    await expect(page.getByRole('link', { name: nodeId })).toBeVisible();
    await expect(page.getByRole('row').filter({ has: page.getByRole('link', { name: nodeId }) })).toContainText('disconnected');
  } finally {
    sim.kill();
  }
});
