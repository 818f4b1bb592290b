import { expect, test } from '@playwright/test';
import { startCli } from '../support/cli';
import { adminCredentials, uniqueName } from '../support/env';
import { newScope, openQueue, requestRow, waitingRequests } from '../support/queue';
import { signInThroughForm, trpc } from '../support/session';

/**
 * Two-person approval in the browser: an admin turns it on for a site on the Pools page; operator A approves
 * a PXE machine (`dev --sim 1 --pxe`) and the row shows "1 of 2" and A's name; operator B, signed in in
 * another browser, approves it and the machine joins.
 */
test('operator A approves (1 of 2, named), operator B approves, and the machine is admitted', async ({ page, browser, baseURL }) => {
  test.setTimeout(180_000);
  await signInThroughForm(page);
  const scope = await newScope(page.request);
  const operators = await trpc<{ items: { email: string; name: string }[] }>(page.request, 'query', 'operators.list', {
    tenantId: scope.tenantId,
  });
  const me = operators.items.find((o) => o.email === adminCredentials().email)!;
  const nameOfA = me.name.trim() || me.email;

  // Operator B: invited as an approver, accepts with a password, and signs in in a browser of their own.
  const emailOfB = `${uniqueName('second-approver')}@example.com`;
  const invitation = await trpc<{ token: string }>(page.request, 'mutation', 'invitations.create', {
    tenantId: scope.tenantId,
    email: emailOfB,
    role: 'approver',
  });
  const passwordOfB = `approver-${Math.random().toString(36).slice(2)}-pw`;
  await trpc(page.request, 'mutation', 'invitations.accept', { token: invitation.token, name: 'Bea Second', password: passwordOfB });

  // The admin requires two approvals for the site, where sites are shown (Pools).
  const { items: sites } = await trpc<{ items: { id: string; name: string }[] }>(page.request, 'query', 'sites.list', {
    tenantId: scope.tenantId,
  });
  const siteName = sites.find((s) => s.id === scope.siteId)!.name;
  await page.goto(`/pools?tenant=${scope.tenantId}`);
  const site = page.getByRole('region', { name: `Site ${siteName}` });
  await site.getByRole('button', { name: `Require two approvals for join requests of site ${siteName}` }).click();
  const confirm = page.getByRole('dialog', { name: `Two-person approval for site ${siteName}?` });
  await confirm.getByRole('button', { name: 'Require two approvals' }).click();
  await expect(confirm).toBeHidden();
  await expect(site.getByText('two-person approval')).toBeVisible();

  await openQueue(page, scope);
  const sim = startCli(['dev', '--sim', '1', '--pxe', '--tenant', scope.tenantId, '--site', scope.siteId], scope.apiKey);
  const other = await browser.newContext({ baseURL });
  try {
    const [id] = await waitingRequests(sim, 1);
    const row = requestRow(page, id!);
    await expect(row).toBeVisible({ timeout: 15_000 });
    await expect(row.getByTestId('approvals')).toHaveText('0 of 2');

    // A approves: recorded, still pending, 1 of 2 with A's name in the row and the detail panel.
    await row.getByRole('button', { name: id! }).click();
    await page.getByRole('button', { name: 'Approve', exact: true }).click();
    const dialog = page.getByRole('dialog', { name: 'Approve request' });
    await dialog.getByRole('button', { name: 'Approve' }).click();
    await expect(dialog).toBeHidden();
    await expect(page.getByRole('status').filter({ hasText: `Recorded your approval of request ${id} (1 of 2)` })).toBeVisible();
    // Told plainly that it is recorded, not yet effective, in words the server's answer backs (approvals so far).
    await expect(page.getByRole('status')).toContainText('not yet effective');
    await expect(page.getByRole('dialog')).toHaveCount(0);
    // A's own API key (the scope's key, minted in A's session) is A too: it cannot be the second approval.
    const own = startCli(['join-requests', 'approve', id!, '--tenant', scope.tenantId, '--pool', scope.poolId], scope.apiKey);
    expect(await own.done, own.stderr.join('\n')).toBe(0);
    expect(own.stdout.join('\n')).toContain(`Recorded your approval of ${id} (1 of 2), not yet effective`);
    await expect(row).toHaveAttribute('data-state', 'pending');
    await expect(row.getByTestId('approvals')).toHaveText(`1 of 2 · ${nameOfA}`);
    const detail = page.getByRole('region', { name: `Request ${id}` });
    await expect(detail).toContainText('1 of 2');
    await expect(detail).toContainText('recorded, not yet effective');
    await expect(detail).toContainText(`first by ${nameOfA}`);
    // Not admitted: the machine still waits.
    expect(sim.stdout.some((line) => /joined as node_/.test(line))).toBe(false);

    // B signs in, sees the same 1 of 2, and approves: the machine is admitted and joins.
    const pageOfB = await other.newPage();
    await pageOfB.goto('/login');
    await pageOfB.getByLabel('Email').fill(emailOfB);
    await pageOfB.getByLabel('Password').fill(passwordOfB);
    await pageOfB.getByRole('button', { name: 'Sign in' }).click();
    await expect(pageOfB).toHaveURL(/^[^?]*:\/\/[^/]+\/(\?|$)/);
    await pageOfB.goto(`/join-requests?pool=${scope.poolId}&tenant=${scope.tenantId}`);
    const rowOfB = requestRow(pageOfB, id!);
    await expect(rowOfB.getByTestId('approvals')).toHaveText(`1 of 2 · ${nameOfA}`);
    await rowOfB.getByRole('button', { name: id! }).click();
    await pageOfB.getByRole('button', { name: 'Approve', exact: true }).click();
    const dialogOfB = pageOfB.getByRole('dialog', { name: 'Approve request' });
    await dialogOfB.getByRole('button', { name: 'Approve' }).click();
    await expect(dialogOfB).toBeHidden();
    await expect(rowOfB).toHaveAttribute('data-state', /^(approved|consumed)$/);
    await expect.poll(() => sim.stdout.some((line) => /joined as node_/.test(line)), { timeout: 60_000 }).toBe(true);
    // A's open page follows live.
    await expect(row).toHaveAttribute('data-state', 'consumed', { timeout: 15_000 });
    const decided = await trpc<{ decidedByName: string; firstApproval: { byName: string } }>(page.request, 'query', 'joinRequests.get', {
      tenantId: scope.tenantId,
      poolId: scope.poolId,
      requestId: id,
    });
    expect(decided).toMatchObject({ decidedByName: 'Bea Second', firstApproval: { byName: nameOfA } });
  } finally {
    sim.kill();
    await other.close();
  }
});
