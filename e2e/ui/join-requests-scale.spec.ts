import { expect, test, type Page } from '@playwright/test';
import { startCli } from '../support/cli';
import { newScope, openQueue, requestRow, type Scope } from '../support/queue';
import { openConsole, trpc } from '../support/session';
import { roleState } from '../support/roles';

// Signed in as the first admin by the setup project (e2e/support/roles.ts), not through the form.
test.use({ storageState: roleState('admin') });

/**
 * The queue at fleet scale: 200 PXE machines (`dev --sim 200 --pxe`, hostnames sim-0 … sim-199) wait; the
 * operator searches on the server, triages with the keyboard while the toolbar and detail panel stay in view,
 * and decides every request that matches the search (more than the page loaded) in one confirmation, which
 * the console sends as pages of 200. At 390 px the queue is cards with their own Approve and Reject.
 */

const pendingTotal = async (page: Page, scope: Scope, search?: string) =>
  (
    await trpc<{ total: number }>(page.request, 'query', 'joinRequests.list', {
      tenantId: scope.tenantId,
      poolId: scope.poolId,
      limit: 1,
      ...(search ? { search } : {}),
    })
  ).total;

/** Every trpc call the page makes to `procedure`, counted from now on. */
function countCalls(page: Page, procedure: string) {
  const calls: string[] = [];
  page.on('request', (request) => {
    if (request.url().includes(`/api/trpc/`) && request.url().includes(procedure)) calls.push(request.url());
  });
  return calls;
}

test('200 waiting machines: dense rows, server search, keyboard triage, select all matching, bulk reject in one call', async ({ page }) => {
  test.setTimeout(600_000);
  await openConsole(page);
  const scope = await newScope(page.request);
  await openQueue(page, scope);
  const sim = startCli(['dev', '--sim', '200', '--pxe', '--tenant', scope.tenantId, '--site', scope.siteId], scope.apiKey);
  try {
    await expect.poll(() => pendingTotal(page, scope), { timeout: 300_000, intervals: [1_000] }).toBe(200);
    await page.reload();
    // The server's count, not the loaded page's.
    await expect(page.getByTestId('queue-count')).toHaveText('200 pending requests (100 shown)');

    // Dense: one line per request, at most 44 px, and every column visible at 1280 px without scrolling sideways.
    const heights = await page
      .locator('tbody tr[id^="request-row-"]')
      .evaluateAll((rows) => rows.slice(0, 20).map((r) => r.getBoundingClientRect().height));
    expect(Math.max(...heights)).toBeLessThanOrEqual(44);
    await page.setViewportSize({ width: 1280, height: 900 });
    const overflow = await page.locator('.queue-layout .table-scroll').evaluate((el) => el.scrollWidth - el.clientWidth);
    expect(overflow).toBeLessThanOrEqual(0);
    for (const column of ['Claimed', 'Boot step (IP · by)', 'Hardware key', 'Asked', 'Expires'])
      await expect(page.getByRole('columnheader', { name: column, exact: true })).toBeInViewport();
    await page.setViewportSize({ width: 1440, height: 900 });

    // The search runs on the server and lives in the URL: sim-1, sim-10…19 and sim-100…199 match.
    await page.getByRole('searchbox', { name: /Search by MAC/ }).fill('sim-1');
    await expect(page).toHaveURL(/[?&]q=sim-1(&|$)/);
    await expect(page.getByTestId('queue-count')).toHaveText('111 pending requests matching (100 shown)');
    await page.reload();
    await expect(page.getByRole('searchbox', { name: /Search by MAC/ })).toHaveValue('sim-1');
    await expect(page.getByTestId('queue-count')).toHaveText('111 pending requests matching (100 shown)');

    // Keyboard triage far down the page: the toolbar and the detail panel stay on screen. The reloaded page
    // arrives rendered by the server; its controls (and the shortcuts) work once its scripts ran.
    await expect(page.getByRole('searchbox', { name: /Search by MAC/ })).toBeEnabled();
    await page.getByRole('searchbox', { name: /Search by MAC/ }).blur();
    for (let i = 0; i < 40; i++) await page.keyboard.press('j');
    const order = await page
      .locator('tbody tr[id^="request-row-"]')
      .evaluateAll((rows) => rows.map((r) => r.id.replace('request-row-', '')));
    await expect(page.getByText(`Current: ${order[40]}`)).toBeInViewport();
    await expect(page.getByRole('button', { name: 'Approve', exact: true })).toBeInViewport();
    await expect(page.getByRole('region', { name: `Request ${order[40]}` })).toBeInViewport();
    await page.keyboard.press('k');
    await expect(page.getByText(`Current: ${order[39]}`)).toBeVisible();

    // Select all matching: every one of the 111, though 100 are loaded, in one confirmation naming the count.
    const approveCalls = countCalls(page, 'joinRequests.approveMany');
    await page.getByRole('checkbox', { name: 'Select all requests on this page' }).check();
    await expect(page.getByText('100 selected')).toBeVisible();
    await page.getByRole('button', { name: 'Select all 111 matching' }).click();
    await expect(page.getByTestId('queue-selection')).toHaveText('All 111 matching selected');
    await page.keyboard.press('a');
    const dialog = page.getByRole('dialog', { name: 'Approve 111 requests' });
    await expect(dialog.getByTestId('decide-all-matching')).toContainText('all 111 pending requests that match');
    await dialog.getByRole('button', { name: 'Approve' }).click();
    await expect(dialog).toBeHidden({ timeout: 30_000 });
    await expect(page.getByRole('status').filter({ hasText: 'Approved 111 of 111 matching requests' })).toBeVisible();
    // The page's count follows: nothing that matched still waits.
    await expect(page.getByTestId('queue-count')).toHaveText('0 pending requests matching');
    expect(approveCalls.length).toBe(1);
    expect(await pendingTotal(page, scope)).toBe(89);
    expect(await pendingTotal(page, scope, 'sim-1')).toBe(0);

    // The rest by keyboard without a search: one rejectMany call for all 89, not one per request.
    await page.getByRole('searchbox', { name: /Search by MAC/ }).fill('');
    await expect(page).not.toHaveURL(/[?&]q=/);
    await expect(page.getByTestId('queue-count')).toHaveText('89 pending requests');
    const rejectCalls = countCalls(page, 'joinRequests.reject');
    // The checkbox keeps the focus; the shortcuts still apply.
    await page.getByRole('checkbox', { name: 'Select all requests on this page' }).check();
    await page.keyboard.press('r');
    const reject = page.getByRole('dialog', { name: 'Reject 89 requests' });
    await reject.getByLabel('Reason').fill('not in the intake list');
    await reject.getByRole('button', { name: 'Reject' }).click();
    await expect(reject).toBeHidden({ timeout: 30_000 });
    expect(rejectCalls.filter((url) => url.includes('rejectMany')).length).toBe(1);
    expect(rejectCalls.length).toBe(1);
    await expect.poll(() => pendingTotal(page, scope)).toBe(0);

    // The approved machines join on their next retry.
    await expect
      .poll(
        async () =>
          (
            await trpc<{ items: unknown[] }>(page.request, 'query', 'nodes.list', {
              tenantId: scope.tenantId,
              poolId: scope.poolId,
              limit: 200,
            })
          ).items.length,
        { timeout: 120_000 },
      )
      .toBe(111);

    // Continuity: a node shows what it joined as and links to the request that admitted it, which names the node.
    await page.goto(`/nodes?pool=${scope.poolId}&tenant=${scope.tenantId}`);
    const nodeRow = page.getByRole('row').filter({ hasText: 'admitted by' }).first();
    await expect(nodeRow).toContainText(/sim-1\d* · SIM-1/);
    const requestLink = nodeRow.getByRole('link', { name: /^jreq_/ });
    const admittedBy = (await requestLink.textContent())!;
    await expect(requestLink).toHaveAttribute('href', new RegExp(`/join-requests\\?.*request=${admittedBy}`));
    const nodeId = (await nodeRow.getByRole('link', { name: /^node_/ }).textContent())!;
    const admitted = await trpc<{ nodeId: string; state: string }>(page.request, 'query', 'joinRequests.get', {
      tenantId: scope.tenantId,
      poolId: scope.poolId,
      requestId: admittedBy,
    });
    expect(admitted).toMatchObject({ state: 'consumed', nodeId });
    await page.goto(`/nodes/${nodeId}?tenant=${scope.tenantId}`);
    await expect(page.getByText(`admitted by join request ${admittedBy}`)).toBeVisible();
  } finally {
    sim.kill();
  }
});

test('at 390 px the queue is cards with Approve and Reject on each; the theme follows a dark system setting', async ({ page }) => {
  test.setTimeout(180_000);
  await page.setViewportSize({ width: 390, height: 844 });
  await openConsole(page);
  const scope = await newScope(page.request);
  await openQueue(page, scope);
  const sim = startCli(['dev', '--sim', '3', '--pxe', '--tenant', scope.tenantId, '--site', scope.siteId], scope.apiKey);
  try {
    await expect.poll(() => pendingTotal(page, scope), { timeout: 60_000 }).toBe(3);
    const { items } = await trpc<{ items: { id: string; claims: { hostname: string } }[] }>(page.request, 'query', 'joinRequests.list', {
      tenantId: scope.tenantId,
      poolId: scope.poolId,
    });
    const [first, second] = items;
    const card = requestRow(page, first!.id);
    await expect(card).toBeVisible({ timeout: 15_000 });
    await expect(card).toContainText(first!.claims.hostname);
    // A card, not a cut-off table: the page does not scroll sideways and the buttons are on screen.
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await card.getByRole('button', { name: `Approve request ${first!.id}` }).click();
    const dialog = page.getByRole('dialog', { name: 'Approve request' });
    await dialog.getByRole('button', { name: 'Approve' }).click();
    await expect(dialog).toBeHidden();
    // The approval shows in place; the simulated machine polls, so it may already have joined on it (consumed).
    await expect(card).toHaveAttribute('data-state', /^(approved|consumed)$/);
    await requestRow(page, second!.id)
      .getByRole('button', { name: `Reject request ${second!.id}` })
      .click();
    const reject = page.getByRole('dialog', { name: 'Reject request' });
    // Not without a reason: the dialog stays, saying why, and the request stays pending.
    await reject.getByRole('button', { name: 'Reject' }).click();
    await expect(reject.getByRole('alert')).toContainText('a rejection is final');
    await expect(requestRow(page, second!.id)).toHaveAttribute('data-state', 'pending');
    await reject.getByLabel('Reason').fill('not ours');
    await reject.getByRole('button', { name: 'Reject' }).click();
    await expect(reject).toBeHidden();
    await expect(requestRow(page, second!.id)).toHaveAttribute('data-state', 'rejected');

    const background = () => page.evaluate(() => getComputedStyle(document.body).backgroundColor);
    const light = await background();
    await page.emulateMedia({ colorScheme: 'dark' });
    await expect.poll(background).not.toBe(light);
    expect(await background()).toBe('rgb(15, 20, 26)');
  } finally {
    sim.kill();
  }
});
