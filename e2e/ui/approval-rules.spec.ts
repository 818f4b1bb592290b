import { randomBytes } from 'node:crypto';
import { expect, test } from '@playwright/test';
import { startCli } from '../support/cli';
import { newScope, waitingRequests } from '../support/queue';
import { signInThroughForm, trpc } from '../support/session';
import { expectNoSeriousViolations } from '../support/axe';

/**
 * The approval-rules page (create with the form's errors and a dry run, and a simulated PXE machine
 * admitted by the saved rule) and the expected-machines page (a preview with a rejected row, the import,
 * the machine listed, then arrived). `dev --sim 1 --pxe` plays the machine: a Supermicro SYS-421GE-TNRT
 * (agent/sim/pxe.ts) whose lease is in 10.99.0.0/16.
 */

test('a rule made in the console, dry-run first, admits a waiting PXE machine at once', async ({ page }) => {
  test.setTimeout(180_000);
  await signInThroughForm(page);
  const scope = await newScope(page.request);
  const sim = startCli(['dev', '--sim', '1', '--pxe', '--tenant', scope.tenantId, '--site', scope.siteId], scope.apiKey);
  try {
    const [requestId] = await waitingRequests(sim, 1);
    await page.goto(`/approval-rules?site=${scope.siteId}&tenant=${scope.tenantId}`);
    await expect(page.getByRole('heading', { name: 'Approval rules', level: 1 })).toBeVisible();
    await expect(page.getByText('This site has no approval rules')).toBeVisible();
    await expectNoSeriousViolations(page, 'approval rules, empty');

    await page.getByRole('button', { name: 'New rule' }).click();
    const form = page.getByRole('form', { name: 'New rule' });
    // Sent empty: every problem under its field, in the form's style.
    await form.getByRole('button', { name: 'Create rule' }).click();
    await expect(form.getByText('Name the rule')).toBeVisible();
    await expect(form.getByText('Choose the pool an approved machine joins.')).toBeVisible();
    await expect(form.getByText('Name at least one condition')).toBeVisible();
    await form.getByLabel('Subnet (vouched)').fill('10.99');
    await form.getByRole('button', { name: 'Dry run' }).click();
    await expect(form.getByText('10.99 is not a CIDR block such as 10.20.0.0/16.')).toBeVisible();
    await expectNoSeriousViolations(page, 'approval rules, form errors');

    await form.getByLabel('Name', { exact: true }).fill('Supermicro intake');
    await form.getByLabel('Pool', { exact: true }).selectOption(scope.poolId);
    await form.getByLabel('Subnet (vouched)').fill('10.99.0.0/16');
    await form.getByLabel('Vendor (claimed)').fill('supermicro');
    await form.getByLabel('Model (claimed)').fill('SYS-421GE-*');
    await form.getByRole('button', { name: 'Dry run' }).click();
    const dry = form.getByRole('region', { name: 'Dry run' });
    await expect(dry).toContainText('Dry run: 1 of 1 requests');
    await expect(dry).toContainText("Vendor (the machine's own claim)");
    await expect(dry).toContainText('Subnet (vouched for by the boot step)');
    await expect(dry.getByRole('row').filter({ hasText: requestId! })).toContainText('approve');

    await form.getByRole('button', { name: 'Create rule' }).click();
    await expect(form).toBeHidden();
    const rules = page.getByRole('region', { name: 'Rules' });
    await expect(rules.getByRole('row').filter({ hasText: 'Supermicro intake' })).toContainText('enabled');

    // The waiting machine's next retry is admitted by the rule.
    await expect.poll(() => sim.stdout.some((line) => /joined as node_/.test(line)), { timeout: 60_000 }).toBe(true);
    const decided = await trpc<{ state: string; decidedByName: string | null; decidedBy: string }>(
      page.request,
      'query',
      'joinRequests.get',
      { tenantId: scope.tenantId, poolId: scope.poolId, requestId },
    );
    expect(decided).toMatchObject({
      state: 'consumed',
      decidedByName: 'rule Supermicro intake',
      decidedBy: expect.stringMatching(/^rule:rule_/),
    });
    const { items } = await trpc<{ items: { name: string; admissions: number }[] }>(page.request, 'query', 'approvalRules.list', {
      tenantId: scope.tenantId,
      siteId: scope.siteId,
    });
    expect(items).toEqual([expect.objectContaining({ name: 'Supermicro intake', admissions: 1 })]);
    await page.goto(`/join-requests?pool=${scope.poolId}&tenant=${scope.tenantId}&state=all`);
    await expect(page.locator(`#request-row-${requestId}`)).toContainText('by rule Supermicro intake');
  } finally {
    sim.kill();
  }
});

test('expected machines: a preview shows the rejected row, the import lists one machine waiting, and the PXE machine arrives', async ({
  page,
}) => {
  test.setTimeout(180_000);
  await signInThroughForm(page);
  const scope = await newScope(page.request);
  const sim = startCli(['dev', '--sim', '1', '--pxe', '--tenant', scope.tenantId, '--site', scope.siteId], scope.apiKey);
  try {
    const [requestId] = await waitingRequests(sim, 1);
    const { mac } = await trpc<{ mac: string }>(page.request, 'query', 'joinRequests.get', {
      tenantId: scope.tenantId,
      poolId: scope.poolId,
      requestId,
    });
    const absent = `3c:ec:ef:${randomBytes(3).toString('hex').match(/../g)!.join(':')}`;
    await page.goto(`/expected-machines?site=${scope.siteId}&tenant=${scope.tenantId}`);
    await expect(page.getByRole('heading', { name: 'Expected machines', level: 1 })).toBeVisible();
    await expect(page.getByText('No expected machine is waiting in this site.')).toBeVisible();
    await expectNoSeriousViolations(page, 'expected machines, empty');

    await page.getByRole('button', { name: 'Import', exact: true }).click();
    const panel = page.getByRole('region', { name: 'Import expected machines' });
    await panel.getByLabel('Default pool').selectOption(scope.poolId);
    await panel.getByLabel('List').fill(['mac,hostname', `${absent.toUpperCase()},not-yet-01`, 'ff:ff:ff:ff:ff:ff,broadcast'].join('\n'));
    await panel.getByRole('button', { name: 'Preview' }).click();
    await expect(panel).toContainText('Would import 1 machines');
    await expect(panel.getByRole('table', { name: 'Rejected rows' }).getByRole('row').filter({ hasText: '2' })).toContainText(
      'mac: not a permanent, globally administered MAC',
    );
    await expectNoSeriousViolations(page, 'expected machines, preview');
    await panel.getByRole('button', { name: 'Import 1 machines' }).click();
    await expect(panel).toContainText('Imported 1 machines');
    const waiting = page.getByRole('region', { name: 'Not arrived yet', exact: true });
    await expect(waiting).toContainText(absent);
    // The waiting PXE machine is unmatched until a list names it.
    await expect(page.getByRole('region', { name: 'Arrivals that matched nothing' })).toContainText(requestId!);

    await panel.getByLabel('List').fill(['mac,hostname', `${mac},sim-0`].join('\n'));
    await panel.getByRole('button', { name: 'Preview' }).click();
    await panel.getByRole('button', { name: 'Import 1 machines' }).click();
    await expect(panel).toContainText('Imported 1 machines');
    await expect.poll(() => sim.stdout.some((line) => /joined as node_/.test(line)), { timeout: 60_000 }).toBe(true);
    await page.reload();
    await expect(page.getByRole('region', { name: 'Arrived', exact: true })).toContainText(mac, { timeout: 15_000 });
    await expect(page.getByRole('region', { name: 'Not arrived yet', exact: true })).toContainText(absent);
    await expect(page.getByRole('region', { name: 'Not arrived yet', exact: true })).not.toContainText(mac);
  } finally {
    sim.kill();
  }
});
