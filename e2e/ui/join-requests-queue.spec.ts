import { expect, test } from '@playwright/test';
import { startCli } from '../support/cli';
import { uniqueName } from '../support/env';
import { newScope, openQueue, requestRow, waitingRequests } from '../support/queue';
import { openConsole, trpc } from '../support/session';
import { roleState } from '../support/roles';

// Signed in as the first admin by the setup project (e2e/support/roles.ts), not through the form.
test.use({ storageState: roleState('admin') });

interface Request {
  id: string;
  ip: string;
  vouchedBy: string;
  claims: { productUuid: string; productSerial: string; macs: string[]; hostname: string };
}

/**
 * What the queue shows of each request and how an operator works it with the mouse: the row's claims, IP,
 * voucher, key trust, age and time left in words; select all and shift-click ranges; the state filter kept in
 * the URL; an approval into another pool of the site, which the waiting machine then joins.
 */
test('rows show what the machine claims; select all, shift-click ranges, the state filter in the URL, approval into a chosen pool', async ({
  page,
}) => {
  test.setTimeout(180_000);
  await openConsole(page);
  const scope = await newScope(page.request);
  const other = await trpc<{ id: string }>(page.request, 'mutation', 'pools.create', {
    tenantId: scope.tenantId,
    siteId: scope.siteId,
    name: uniqueName('jr-other'),
    agent: 'bcd',
  });
  await openQueue(page, scope);
  const sim = startCli(['dev', '--sim', '3', '--pxe', '--tenant', scope.tenantId, '--site', scope.siteId], scope.apiKey);
  try {
    const ids = await waitingRequests(sim, 3);
    for (const id of ids) await expect(requestRow(page, id)).toBeVisible({ timeout: 15_000 });

    // A row: attestor, every claim, IP, who vouched, whether the key is trusted, age and time left in words.
    const [first] = ids;
    const request = await trpc<Request>(page.request, 'query', 'joinRequests.get', {
      tenantId: scope.tenantId,
      poolId: scope.poolId,
      requestId: first,
    });
    const row = requestRow(page, first!);
    for (const text of [
      'discovery',
      request.claims.hostname,
      request.claims.productUuid,
      request.claims.productSerial,
      request.claims.macs[0]!,
      request.ip,
      request.vouchedBy,
    ]) {
      await expect(row).toContainText(text);
    }
    await expect(row).toContainText('trusted key');
    await expect(row).toContainText(/expires in 2[34] h/);
    await expect(row).toContainText(/just now|\d+ min ago/);
    await expect(row).not.toContainText(/in less than a minute/);

    // Newest first: the page's order is the order of the requests' creation, newest on top.
    const order = await page
      .locator('tbody tr[id^="request-row-"]')
      .evaluateAll((rows) => rows.map((r) => r.id.replace('request-row-', '')));
    const listed = await trpc<{ items: { id: string; createdAt: string }[] }>(page.request, 'query', 'joinRequests.list', {
      tenantId: scope.tenantId,
      poolId: scope.poolId,
    });
    expect(order).toEqual(
      [...listed.items].sort((a, b) => b.createdAt.localeCompare(a.createdAt) || b.id.localeCompare(a.id)).map((r) => r.id),
    );

    // The detail panel holds the whole request: the CSR hash and every claim. k moves the cursor up.
    await requestRow(page, order[1]!).getByRole('button', { name: order[1]! }).click();
    await page.keyboard.press('k');
    await expect(page.getByText(`Current: ${order[0]}`)).toBeVisible();
    const detail = page.getByRole('region', { name: `Request ${order[0]}` });
    const shown = await trpc<Request & { csrSha256: string }>(page.request, 'query', 'joinRequests.get', {
      tenantId: scope.tenantId,
      poolId: scope.poolId,
      requestId: order[0],
    });
    await expect(detail.getByTitle(shown.csrSha256)).toBeVisible();
    for (const text of [shown.claims.hostname, shown.claims.productUuid, shown.claims.productSerial, shown.claims.macs[0]!, 'trusted'])
      await expect(detail).toContainText(text);

    // Select all on the page, and clear it.
    await page.getByRole('checkbox', { name: 'Select all requests on this page' }).check();
    await expect(page.getByText('3 selected')).toBeVisible();
    await expect(page.getByRole('button', { name: 'Approve 3' })).toBeVisible();
    await page.getByRole('checkbox', { name: 'Select all requests on this page' }).uncheck();
    await expect(page.getByText(/\d selected/)).toHaveCount(0);

    // A shift-click selects the range from the last clicked row.
    await page.getByRole('checkbox', { name: `Select request ${order[0]}` }).click();
    await page.getByRole('checkbox', { name: `Select request ${order[2]}` }).click({ modifiers: ['Shift'] });
    await expect(page.getByText('3 selected')).toBeVisible();
    for (const id of order) await expect(page.getByRole('checkbox', { name: `Select request ${id}` })).toBeChecked();
    // And a shift-click back to the middle clears the range from the anchor.
    await page.getByRole('checkbox', { name: `Select request ${order[2]}` }).click();
    await page.getByRole('checkbox', { name: `Select request ${order[1]}` }).click({ modifiers: ['Shift'] });
    await expect(page.getByText('1 selected')).toBeVisible();
    await expect(page.getByRole('checkbox', { name: `Select request ${order[0]}` })).toBeChecked();

    // Approve the selected one into the site's other pool, with a lifetime preset and a reason.
    await page.getByRole('button', { name: 'Approve', exact: true }).click();
    const dialog = page.getByRole('dialog', { name: 'Approve request' });
    await dialog.getByLabel('Pool').selectOption(other.id);
    await dialog.getByLabel('15 min', { exact: true }).check();
    await dialog.getByLabel('Reason').fill('into the other pool');
    await dialog.getByRole('button', { name: 'Approve' }).click();
    await expect(dialog).toBeHidden();
    await expect(requestRow(page, order[0]!)).toHaveAttribute('data-state', 'approved');
    const approved = await trpc<{ poolId: string; reason: string; expiresAt: string; decidedAt: string }>(
      page.request,
      'query',
      'joinRequests.get',
      {
        tenantId: scope.tenantId,
        poolId: other.id,
        requestId: order[0],
      },
    );
    expect(approved).toMatchObject({ poolId: other.id, reason: 'into the other pool' });
    expect(Date.parse(approved.expiresAt) - Date.parse(approved.decidedAt)).toBe(900_000);

    // The approved machine joins on its next retry (its agent verifies a ramdisk certificate), in the chosen pool.
    await expect.poll(() => sim.stdout.some((line) => /joined as node_/.test(line)), { timeout: 60_000 }).toBe(true);
    const { items: nodes } = await trpc<{ items: { id: string; poolId: string }[] }>(page.request, 'query', 'nodes.list', {
      tenantId: scope.tenantId,
      poolId: other.id,
    });
    expect(nodes).toHaveLength(1);
    // The state filter is kept in the URL, and a reload keeps it. The other pool's queue lists its request and
    // the site's unclaimed ones: the consumed request, then every one, then the pending ones.
    await page.goto(`/join-requests?pool=${other.id}&tenant=${scope.tenantId}`);
    await page.getByLabel('State').selectOption('consumed');
    await expect(page).toHaveURL(/[?&]state=consumed(&|$)/);
    await page.reload();
    await expect(page.getByLabel('State')).toHaveValue('consumed');
    await expect(page.locator('tbody tr[id^="request-row-"]')).toHaveCount(1);
    await expect(requestRow(page, order[0]!)).toHaveAttribute('data-state', 'consumed');
    await page.getByLabel('State').selectOption('all');
    await expect(page).toHaveURL(/[?&]state=all(&|$)/);
    await expect(page.locator('tbody tr[id^="request-row-"]')).toHaveCount(3);
    await page.getByLabel('State').selectOption('pending');
    await expect(page).not.toHaveURL(/[?&]state=/);
    await expect(page.locator('tbody tr[id^="request-row-"]')).toHaveCount(2);

    // The audit log names who approved which request, and the reason given.
    await page.goto(`/audit?tenant=${scope.tenantId}&action=join-request.approved`);
    const entry = page
      .getByRole('region', { name: 'Audit log' })
      .getByRole('row')
      .filter({ hasText: `compute-join-request/${order[0]}` });
    await expect(entry.getByRole('cell').nth(4)).toHaveText('into the other pool');

    // The approval's event links to the request: the queue opens on it, whatever its state now.
    await page.goto(`/events?tenant=${scope.tenantId}&type=security.join-request.approved`);
    const event = page.getByRole('region', { name: 'Events' }).locator('tr.event-row').filter({ hasText: order[0]! });
    await event.getByRole('button', { name: /Show details/ }).click();
    await event.locator('xpath=following-sibling::tr[1]').getByRole('link', { name: order[0]! }).click();
    await expect(page).toHaveURL(new RegExp(`/join-requests\\?.*request=${order[0]}`));
    await expect(page.getByRole('region', { name: `Request ${order[0]}` })).toContainText('into the other pool');
  } finally {
    sim.kill();
  }
});
