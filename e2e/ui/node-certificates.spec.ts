import { rm } from 'node:fs/promises';
import { expect, test } from '@playwright/test';
import { runRenewalLoop } from '../../agent/renew/loop';
import { uniqueName } from '../support/env';
import { expectAccessible } from '../support/axe';
import { joinMachine } from '../support/machine';
import { joinAsAgent, rootPoolWithToken } from '../support/node-pool';
import { openConsole, signInNewOperator, trpc } from '../support/session';
import { roleState } from '../support/roles';

// Signed in as the first admin by the setup project (e2e/support/roles.ts), not through the form.
test.use({ storageState: roleState('admin') });

/**
 * The node page's certificate history: a machine joins as the agent does and renews twice through the
 * server's gateway; the page lists three certificates newest first, the current one marked, with expiry in
 * words; after a confirmed revoke every row shows revoked.
 */
test("a node's page lists every certificate it was issued, and a revoke marks them all", async ({ page, baseURL }) => {
  test.setTimeout(120_000);
  await openConsole(page);
  const { tenantId, token } = await rootPoolWithToken(page, 'certs');
  const { answer, nodeId, identityDir, gateway } = await joinAsAgent(page, baseURL!, token, 'e2e-certs-');
  try {
    expect(answer.status).toBe('joined');
    const lines: string[] = [];
    const target = { identityDir, ...gateway, log: (l: string) => lines.push(l) };
    for (let i = 0; i < 2; i++) expect(await runRenewalLoop({ ...target, once: true }), lines.join('\n')).toBe(0);

    await page.goto(`/nodes/${nodeId}?tenant=${tenantId}`);
    // A token join proves nothing about where the key lives: the page says the node key is unattested.
    await expect(page.locator('dd.node-key')).toHaveText(/^unattested: nothing proved to the control plane where the key lives/);
    const region = page.getByRole('region', { name: 'Certificates' });
    const rows = region.getByRole('row').filter({ has: page.getByRole('rowheader') });
    await expect(rows).toHaveCount(3);
    const { certificates } = await trpc<{ certificates: { serial: string }[] }>(page.request, 'query', 'nodes.get', { tenantId, nodeId });
    // Newest first, as the API lists them; the serials are the rows' headers.
    await expect(region.getByRole('rowheader')).toHaveText(certificates.map((c) => c.serial));
    await expect(rows.nth(0)).toContainText('current');
    await expect(rows.nth(0)).toContainText('renewal');
    await expect(rows.nth(0)).toContainText(/expires in \d+ h/);
    await expect(rows.nth(1)).toContainText('superseded');
    await expect(rows.nth(2)).toContainText('join');
    await expect(rows.nth(2)).not.toContainText('current');
    await expect(region.getByText('current', { exact: true })).toHaveCount(1);
    await expect(region.getByText('revoked', { exact: true })).toHaveCount(0);
    await expectAccessible(page);

    await page.getByRole('button', { name: `Revoke identity node ${nodeId}` }).click();
    const dialog = page.getByRole('dialog', { name: 'Revoke node identity' });
    await expect(dialog).toContainText('This cannot be undone');
    await dialog.getByRole('button', { name: 'Revoke identity' }).click();
    await expect(dialog).toBeHidden();
    await expect(region.getByText('revoked', { exact: true })).toHaveCount(3);
    await expect(region.getByText('current', { exact: true })).toHaveCount(0);
    await expect(rows.filter({ hasText: 'identity revoked' })).toHaveCount(3);
    await expectAccessible(page);
    await expect(region).toContainText('No live certificate: the node must join again.');
  } finally {
    await rm(identityDir, { recursive: true, force: true });
  }
});

/** A viewer reads a node's page, certificates included, with no lifecycle action; the server refuses its forged call. */
test("a viewer sees a node's certificates but no lifecycle action, and its forged revoke is refused", async ({
  page,
  browser,
  playwright,
  baseURL,
}) => {
  test.setTimeout(90_000);
  await openConsole(page);
  const { tenantId, pool, token } = await rootPoolWithToken(page, 'certs');
  expect((await joinMachine(page.request, token)).response.status()).toBe(200);
  const { items } = await trpc<{ items: { id: string }[] }>(page.request, 'query', 'nodes.list', { tenantId, poolId: pool.id });
  const nodeId = items[0]!.id;
  const { key } = await trpc<{ key: string }>(page.request, 'mutation', 'apiKeys.create', {
    tenantId,
    role: 'viewer',
    name: uniqueName('node-viewer'),
  });
  // A real viewer of the tenant (the node page arrives rendered by the server with its role); the forged call
  // below checks the server.
  const viewerPage = await signInNewOperator(browser, page.request, { baseURL: baseURL!, tenantId, role: 'viewer' });
  try {
    await viewerPage.page.goto(`/nodes/${nodeId}?tenant=${tenantId}`);
    await expect(viewerPage.page.getByRole('region', { name: 'Certificates' }).getByRole('rowheader')).toHaveCount(1);
    await expect(viewerPage.page.getByRole('button', { name: new RegExp(`node ${nodeId}$`) })).toHaveCount(0);
  } finally {
    await viewerPage.context.close();
  }

  const viewer = await playwright.request.newContext({ baseURL, extraHTTPHeaders: { authorization: `Bearer ${key}` } });
  const forged = await viewer.post('/api/trpc/nodes.revokeIdentity', { data: { tenantId, nodeId } });
  expect(forged.status()).toBe(403);
  await viewer.dispose();
  const after = await trpc<{ certificates: { revokedAt: string | null }[] }>(page.request, 'query', 'nodes.get', { tenantId, nodeId });
  expect(after.certificates.map((c) => c.revokedAt)).toEqual([null]);
});
