import { expect, test } from '@playwright/test';
import { startCli } from '../support/cli';
import { uniqueName } from '../support/env';
import { newScope, openQueue, requestRow, waitingRequests } from '../support/queue';
import { showConsoleAsViewer, openConsole, trpc } from '../support/session';
import { roleState } from '../support/roles';

// Signed in as the first admin by the setup project (e2e/support/roles.ts), not through the form.
test.use({ storageState: roleState('admin') });

/**
 * The join-requests queue in the browser: PXE machines simulated by `better-compute dev --sim 3 --pxe`
 * arrive without a reload (tRPC subscription over SSE), are decided with the mouse or the keyboard, and a
 * decision taken through the CLI meanwhile shows on the open page. Each test has its own site and pool.
 */

const row = requestRow;

test('PXE machines appear in the queue without a reload; one approved in the browser with a reason joins', async ({ page }) => {
  test.setTimeout(180_000);
  await openConsole(page);
  const scope = await newScope(page.request);
  await openQueue(page, scope);
  const sim = startCli(['dev', '--sim', '3', '--pxe', '--tenant', scope.tenantId, '--site', scope.siteId], scope.apiKey);
  try {
    const ids = await waitingRequests(sim, 3);
    // No reload, no polling: the subscription's announcement re-reads the list.
    for (const id of ids) await expect(row(page, id)).toBeVisible({ timeout: 15_000 });
    await expect(page.getByTestId('queue-count')).toHaveText('3 pending requests');

    await row(page, ids[0]!).getByRole('button', { name: ids[0]! }).click();
    await expect(page.getByRole('region', { name: `Request ${ids[0]}` })).toContainText('CSR SHA-256');
    await page.getByRole('button', { name: 'Approve', exact: true }).click();
    const dialog = page.getByRole('dialog', { name: 'Approve request' });
    await dialog.getByLabel('4 h', { exact: true }).check();
    await dialog.getByLabel('Reason').fill('rack 7 intake');
    await dialog.getByRole('button', { name: 'Approve' }).click();
    await expect(dialog).toBeHidden();
    // The decision shows at once, in place.
    await expect(row(page, ids[0]!)).toHaveAttribute('data-state', /^(approved|consumed)$/);
    await expect(page.getByRole('status').filter({ hasText: `Approved request ${ids[0]}` })).toBeVisible();
    const approved = await trpc<{ reason: string; state: string; expiresAt: string }>(page.request, 'query', 'joinRequests.get', {
      tenantId: scope.tenantId,
      poolId: scope.poolId,
      requestId: ids[0],
    });
    // The simulated machine retries every second (e2e/support/cli.ts), so it may have used the approval already.
    expect(approved.reason).toBe('rack 7 intake');
    expect(['approved', 'consumed']).toContain(approved.state);

    // The approved machine retries and joins; its agent prints the node it became.
    await expect.poll(() => sim.stdout.some((line) => /joined as node_/.test(line)), { timeout: 60_000 }).toBe(true);
    await expect(row(page, ids[0]!)).toHaveAttribute('data-state', 'consumed', { timeout: 15_000 });
  } finally {
    sim.kill();
  }
});

test('a bulk reject of two by keyboard; a request the CLI decides meanwhile updates the open page', async ({ page }) => {
  test.setTimeout(180_000);
  await openConsole(page);
  const scope = await newScope(page.request);
  await openQueue(page, scope);
  const sim = startCli(['dev', '--sim', '3', '--pxe', '--tenant', scope.tenantId, '--site', scope.siteId], scope.apiKey);
  try {
    const ids = await waitingRequests(sim, 3);
    for (const id of ids) await expect(row(page, id)).toBeVisible({ timeout: 15_000 });
    const order = await page
      .locator('tbody tr[id^="request-row-"]')
      .evaluateAll((rows) => rows.map((r) => r.id.replace('request-row-', '')));

    // ? lists the shortcuts.
    await page.keyboard.press('?');
    await expect(page.getByRole('dialog', { name: 'Keyboard shortcuts' })).toContainText('Reject the selection');
    await page.keyboard.press('Escape');

    // The cursor stays where it was as rows arrive; start it on the newest (top) row.
    await row(page, order[0]!).getByRole('button', { name: order[0]! }).click();
    // x selects the first, j moves, x selects the second, r rejects both.
    await page.keyboard.press('x');
    await page.keyboard.press('j');
    await page.keyboard.press('x');
    await expect(page.getByText('2 selected')).toBeVisible();
    await page.keyboard.press('r');
    const dialog = page.getByRole('dialog', { name: 'Reject 2 requests' });
    await dialog.getByLabel('Reason').fill('not our hardware');
    await dialog.getByLabel('Reason').press('Enter');
    await expect(dialog).toBeHidden();
    for (const id of order.slice(0, 2)) await expect(row(page, id)).toHaveAttribute('data-state', 'rejected');

    // Another operator, on the CLI, rejects the third: the open page shows it without a reload.
    const third = order[2]!;
    const cli = startCli(
      ['join-requests', 'reject', third, '--tenant', scope.tenantId, '--pool', scope.poolId, '--reason', 'decided on the CLI'],
      scope.apiKey,
    );
    expect(await cli.done, cli.stderr.join('\n')).toBe(0);
    await expect(row(page, third)).toHaveAttribute('data-state', 'rejected', { timeout: 15_000 });

    // Approving it now explains the conflict instead of failing silently.
    await row(page, third).getByRole('button', { name: third }).click();
    await page.keyboard.press('a');
    await expect(page.getByRole('status').filter({ hasText: `Request ${third} was already rejected` })).toContainText('decided on the CLI');
  } finally {
    sim.kill();
  }
});

test('a viewer sees the queue without decision controls, and its forged approve is refused', async ({ page, playwright, baseURL }) => {
  test.setTimeout(180_000);
  await openConsole(page);
  const scope = await newScope(page.request);
  const { key } = await trpc<{ key: string }>(page.request, 'mutation', 'apiKeys.create', {
    tenantId: scope.tenantId,
    role: 'viewer',
    name: uniqueName('jr-viewer'),
  });
  // This page is told viewer; the forged call below checks the server.
  await showConsoleAsViewer(page);
  await openQueue(page, scope);
  const sim = startCli(['dev', '--sim', '1', '--pxe', '--tenant', scope.tenantId, '--site', scope.siteId], scope.apiKey);
  try {
    const [id] = await waitingRequests(sim, 1);
    await expect(row(page, id!)).toBeVisible({ timeout: 15_000 });
    await expect(page.getByRole('button', { name: /^(Approve|Reject)/ })).toHaveCount(0);
    await page.keyboard.press('a');
    await expect(page.getByRole('dialog', { name: /^Approve/ })).toHaveCount(0);

    const viewer = await playwright.request.newContext({ baseURL, extraHTTPHeaders: { authorization: `Bearer ${key}` } });
    const forged = await viewer.post('/api/trpc/joinRequests.approve', {
      data: { tenantId: scope.tenantId, poolId: scope.poolId, requestId: id },
    });
    expect(forged.status()).toBe(403);
    await viewer.dispose();
    await expect(row(page, id!)).toHaveAttribute('data-state', 'pending');
  } finally {
    sim.kill();
  }
});
