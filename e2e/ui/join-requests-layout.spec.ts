import { expect, test, type Locator, type Page } from '@playwright/test';
import { startCli } from '../support/cli';
import { newScope, openQueue, requestRow, waitingRequests, type Scope } from '../support/queue';
import { roleState } from '../support/roles';
import { openConsole, trpc } from '../support/session';

// Signed in as the first admin by the setup project (e2e/support/roles.ts).
test.use({ storageState: roleState('admin') });

/**
 * The queue's row and detail panel, measured: at 1440×900 and 390×844, light and dark, the detail panel's
 * values have room (no value squeezed to a few characters a line), the state badge lies whole inside the
 * panel, the row shows the MAC the boot step vouched for in full, Claimed and Boot step can be read whole
 * (title and detail), and the claims are labelled as the machine's unverified words.
 */

interface Request {
  id: string;
  mac: string;
  ip: string;
  vouchedBy: string;
  claims: { hostname: string; productSerial: string };
}

const box = async (locator: Locator) => (await locator.boundingBox())!;

/** The geometry a readable detail panel has: every value at least `minValueWidth` px wide, the badge inside. */
async function expectReadableDetail(page: Page, request: Request, minValueWidth: number) {
  const detail = page.getByRole('region', { name: `Request ${request.id}` });
  await expect(detail).toBeVisible();
  await detail.scrollIntoViewIfNeeded();
  const widths = await detail.locator('dl.details dd').evaluateAll((dds) => dds.map((dd) => dd.getBoundingClientRect().width));
  expect(widths.length).toBeGreaterThan(8);
  expect(Math.min(...widths), `value widths ${widths.join(', ')}`).toBeGreaterThanOrEqual(minValueWidth);
  // A short value (the IP) stays on one line.
  const ip = detail.locator('dd', { hasText: request.ip }).first();
  const lineHeight = await ip.evaluate((dd) => parseFloat(getComputedStyle(dd).lineHeight) || 20);
  expect((await box(ip)).height).toBeLessThan(lineHeight * 1.5);

  const [badge, panel, header] = [detail.getByTestId('detail-state'), await box(detail), await box(detail.locator('header'))];
  await expect(badge).toHaveText(/pending|approved|rejected|consumed|expired/);
  const b = await box(badge);
  for (const container of [panel, header]) {
    expect(b.x).toBeGreaterThanOrEqual(container.x);
    expect(b.y).toBeGreaterThanOrEqual(container.y);
    expect(b.x + b.width).toBeLessThanOrEqual(container.x + container.width);
    expect(b.y + b.height).toBeLessThanOrEqual(container.y + container.height);
  }
  expect(await badge.evaluate((el) => el.scrollWidth <= el.clientWidth)).toBe(true);

  // The claims are the machine's words: labelled so, and shown as text.
  await expect(detail.getByTestId('claims-unverified')).toHaveText('reported by the machine, unverified');
  for (const text of [request.claims.hostname, request.claims.productSerial, request.ip, request.vouchedBy, request.mac])
    await expect(detail).toContainText(text);
}

/** The row: the vouched MAC whole; Claimed and Boot step whole in their titles when cut. */
async function expectReadableRow(page: Page, request: Request) {
  const row = requestRow(page, request.id);
  const mac = row.getByTestId('vouched-mac');
  await expect(mac).toHaveText(request.mac);
  await expect(mac).toBeVisible();
  expect(await mac.evaluate((cell) => cell.scrollWidth <= cell.clientWidth + 1)).toBe(true);
  for (const [label, parts] of [
    ['Claimed', [request.claims.hostname, request.claims.productSerial]],
    ['Boot step', [request.ip, request.vouchedBy]],
  ] as const) {
    const cell = row.locator(`td[data-label="${label}"]`);
    const [isCut, title] = await cell.evaluate((el) => [el.scrollWidth > el.clientWidth, el.getAttribute('title') ?? ''] as const);
    for (const part of parts) expect(isCut ? title : ((await cell.textContent()) ?? '') + title).toContain(part);
    // Readable when shown beside the others: never squeezed below a few words.
    if (page.viewportSize()!.width > 640) expect((await box(cell)).width).toBeGreaterThanOrEqual(90);
  }
}

async function oneWaitingMachine(page: Page): Promise<{ scope: Scope; request: Request; stop: () => void }> {
  await openConsole(page);
  const scope = await newScope(page.request);
  await openQueue(page, scope);
  const sim = startCli(['dev', '--sim', '1', '--pxe', '--tenant', scope.tenantId, '--site', scope.siteId], scope.apiKey);
  const [id] = await waitingRequests(sim, 1);
  await expect(requestRow(page, id!)).toBeVisible({ timeout: 15_000 });
  const request = await trpc<Request>(page.request, 'query', 'joinRequests.get', {
    tenantId: scope.tenantId,
    poolId: scope.poolId,
    requestId: id,
  });
  return { scope, request, stop: () => sim.kill() };
}

for (const scheme of ['light', 'dark'] as const) {
  test.describe(`${scheme} colour scheme`, () => {
    test.use({ colorScheme: scheme });

    test(`at 1440×900 the detail panel's values and state badge have room; the row shows the vouched MAC (${scheme})`, async ({ page }) => {
      test.setTimeout(120_000);
      await page.setViewportSize({ width: 1440, height: 900 });
      const { request, stop } = await oneWaitingMachine(page);
      try {
        await requestRow(page, request.id).getByRole('button', { name: request.id, exact: true }).click();
        await expectReadableDetail(page, request, 280);
        await expectReadableRow(page, request);
        // The panel stays beside the list at this width, in view while triaging.
        const [list, panel] = [
          await box(page.locator('.queue-layout .table-scroll')),
          await box(page.getByRole('region', { name: `Request ${request.id}` })),
        ];
        expect(panel.x).toBeGreaterThanOrEqual(list.x + list.width);
        expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(1440);
        expect(await page.evaluate(() => matchMedia('(prefers-color-scheme: dark)').matches)).toBe(scheme === 'dark');
      } finally {
        stop();
      }
    });

    test(`at 390×844 the detail panel's values and state badge have room; the card shows the vouched MAC (${scheme})`, async ({ page }) => {
      test.setTimeout(120_000);
      await page.setViewportSize({ width: 390, height: 844 });
      const { request, stop } = await oneWaitingMachine(page);
      try {
        await requestRow(page, request.id).getByRole('button', { name: request.id, exact: true }).click();
        await expectReadableDetail(page, request, 240);
        await expectReadableRow(page, request);
        expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
      } finally {
        stop();
      }
    });
  });
}
