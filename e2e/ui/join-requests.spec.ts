import { expect, test } from '@playwright/test';
import { startCli } from '../support/cli';
import { uniqueName } from '../support/env';
import { newScope, openQueue, requestRow, waitingRequests } from '../support/queue';
import { openConsole, signInNewOperator, trpc } from '../support/session';
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
    // A rejection is final, so it carries a reason: without one the dialog says so and sends nothing.
    const rejectCalls: string[] = [];
    page.on('request', (request) => {
      if (request.url().includes('joinRequests.reject')) rejectCalls.push(request.url());
    });
    await dialog.getByLabel('Reason').press('Enter');
    await expect(dialog.getByRole('alert')).toContainText('a rejection is final');
    await dialog.getByLabel('Reason').fill('   ');
    await dialog.getByRole('button', { name: 'Reject' }).click();
    await expect(dialog).toBeVisible();
    expect(rejectCalls).toEqual([]);
    await dialog.getByLabel('Reason').fill('not our hardware');
    await dialog.getByLabel('Reason').press('Enter');
    await expect(dialog).toBeHidden();
    for (const id of order.slice(0, 2)) await expect(row(page, id)).toHaveAttribute('data-state', 'rejected');
    // The count follows the decision, and the keyboard is back in the list, on the next row still waiting.
    await expect(page.getByTestId('queue-count')).toHaveText('1 pending request');
    await expect(row(page, order[2]!).getByRole('button', { name: order[2]! })).toBeFocused();
    await expect(page.getByText(`Current: ${order[2]}`)).toBeVisible();

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

test('a viewer sees the queue without decision controls, and its forged approve is refused', async ({
  page,
  browser,
  playwright,
  baseURL,
}) => {
  test.setTimeout(180_000);
  await openConsole(page);
  const scope = await newScope(page.request);
  const { key } = await trpc<{ key: string }>(page.request, 'mutation', 'apiKeys.create', {
    tenantId: scope.tenantId,
    role: 'viewer',
    name: uniqueName('jr-viewer'),
  });
  // A real viewer of the tenant, in a browser of its own: the queue is rendered on the server with its role.
  const viewer = await signInNewOperator(browser, page.request, { baseURL: baseURL!, tenantId: scope.tenantId, role: 'viewer' });
  const sim = startCli(['dev', '--sim', '1', '--pxe', '--tenant', scope.tenantId, '--site', scope.siteId], scope.apiKey);
  try {
    await openQueue(viewer.page, scope);
    const [id] = await waitingRequests(sim, 1);
    await expect(row(viewer.page, id!)).toBeVisible({ timeout: 15_000 });
    await expect(viewer.page.getByRole('button', { name: /^(Approve|Reject)/ })).toHaveCount(0);
    await viewer.page.keyboard.press('a');
    await expect(viewer.page.getByRole('dialog', { name: /^Approve/ })).toHaveCount(0);
    // A reload renders the row on the server, for the viewer, without the controls too.
    await viewer.page.reload();
    await expect(row(viewer.page, id!)).toBeVisible();
    await expect(viewer.page.getByRole('button', { name: /^(Approve|Reject)/ })).toHaveCount(0);

    const forgery = await playwright.request.newContext({ baseURL, extraHTTPHeaders: { authorization: `Bearer ${key}` } });
    const forged = await forgery.post('/api/trpc/joinRequests.approve', {
      data: { tenantId: scope.tenantId, poolId: scope.poolId, requestId: id },
    });
    expect(forged.status()).toBe(403);
    await forgery.dispose();
    await expect(row(viewer.page, id!)).toHaveAttribute('data-state', 'pending');
  } finally {
    sim.kill();
    await viewer.context.close();
  }
});

test("the queue's first page is in the server's HTML, and hydrates without a mismatch in another time zone", async ({
  browser,
  page,
  baseURL,
}) => {
  test.setTimeout(180_000);
  await openConsole(page);
  const scope = await newScope(page.request);
  const sim = startCli(['dev', '--sim', '2', '--pxe', '--tenant', scope.tenantId, '--site', scope.siteId], scope.apiKey);
  // A browser whose clock reads another zone and locale than the server's: what depends on them must wait for hydration.
  const context = await browser.newContext({
    baseURL,
    storageState: await page.context().storageState(),
    timezoneId: 'Pacific/Chatham',
    locale: 'de-DE',
  });
  try {
    const ids = await waitingRequests(sim, 2);
    const address = `/join-requests?pool=${scope.poolId}&tenant=${scope.tenantId}`;
    // The HTML itself, as the session's cookies fetch it: the rows are there before any script runs.
    const html = await (await page.request.get(address)).text();
    for (const id of ids) expect(html).toContain(`id="request-row-${id}"`);
    expect(html).toMatch(/data-testid="queue-count">2(<!-- -->)? (<!-- -->)?pending (<!-- -->)?requests</);

    const queue = await context.newPage();
    const problems: string[] = [];
    queue.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
    queue.on('console', (message) => {
      if (message.type() === 'error' || message.type() === 'warning') problems.push(`${message.type()}: ${message.text()}`);
    });
    const reads: string[] = [];
    queue.on('request', (request) => {
      const path = /\/api\/trpc\/([^?]+)/.exec(decodeURIComponent(request.url()))?.[1];
      if (path && request.method() === 'GET') reads.push(...path.split(','));
    });
    await queue.goto(address);
    for (const id of ids) await expect(row(queue, id)).toBeVisible();
    // Hydrated: the controls work and the ages, read from the browser's clock, are filled in.
    await expect(queue.getByRole('button', { name: 'Approve', exact: true })).toBeEnabled();
    await expect(row(queue, ids[0]!).locator('time')).toHaveText(/just now|\d+ min ago/);
    await expect(
      queue
        .getByRole('region', { name: /^Request / })
        .locator('time')
        .first(),
    ).toHaveText(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
    expect(problems.filter((text) => /hydrat|did not match|didn't match|#418|#423|#425/i.test(text))).toEqual([]);
    // The hydrated queries count as fresh: the browser reads neither the sites nor the pools again, and the list at
    // most once (when its live stream starts). The shell's tenant switcher may read the tenants for itself.
    expect(reads.filter((path) => path === 'sites.list' || path === 'pools.list')).toEqual([]);
    expect(reads.filter((path) => path === 'joinRequests.list').length).toBeLessThanOrEqual(1);
  } finally {
    sim.kill();
    await context.close();
  }
});
