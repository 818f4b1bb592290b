import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import AxeBuilder from '@axe-core/playwright';
import { expect, test, type Page } from '@playwright/test';
import { joinWithToken } from '../../agent/join';
import { loadIdentity } from '../../agent/renew/identity';
import { openCommandSession } from '../../test/command-session';
import { layoutProblems } from '../support/layout-check';
import { uniqueName } from '../support/env';
import { machineClaims } from '../support/machine';
import { openConsole, trpc } from '../support/session';
import { roleState } from '../support/roles';

/**
 * The node page's Commands section at desktop and phone width: a connected machine (a session through the
 * server's gateway, answering as an agent would) is sent bcd.doctor from the "Run command" control; the list
 * shows it sent, then succeeded with its result (folded; unfolded, formatted JSON); the layout is whole and axe
 * finds no serious problem.
 */

test.use({ storageState: roleState('admin') });

const VIEWPORTS = [
  { name: 'desktop', width: 1440, height: 900 },
  { name: 'phone', width: 390, height: 844 },
] as const;

async function expectNoSeriousViolations(page: Page, name: string) {
  const results = await new AxeBuilder({ page }).analyze();
  const serious = results.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map(
      (v) =>
        `${v.id} (${v.impact}): ${v.help} — ${v.nodes
          .map((n) => n.target.join(' '))
          .slice(0, 3)
          .join(', ')}`,
    );
  expect(serious, `axe violations on ${name}`).toEqual([]);
}

for (const viewport of VIEWPORTS) {
  test(`the node page runs a command and shows its result (${viewport.name})`, async ({ page, baseURL }) => {
    test.setTimeout(120_000);
    await page.setViewportSize({ width: viewport.width, height: viewport.height });
    await openConsole(page);
    const { items: tenants } = await trpc<{ items: { id: string; isRoot: boolean }[] }>(page.request, 'query', 'tenants.list', {});
    const tenantId = tenants.find((t) => t.isRoot)!.id;
    const site = await trpc<{ id: string }>(page.request, 'mutation', 'sites.create', { tenantId, name: uniqueName('cmd-site') });
    const pool = await trpc<{ id: string }>(page.request, 'mutation', 'pools.create', {
      tenantId,
      siteId: site.id,
      name: uniqueName('cmd-pool'),
      agent: 'bcd',
    });
    const { token } = await trpc<{ token: string }>(page.request, 'mutation', 'joinTokens.create', {
      tenantId,
      poolId: pool.id,
      ttlSeconds: 600,
      idempotencyKey: randomUUID(),
    });
    const doc = await (await page.request.get('/api/compute/.well-known/better-compute')).json();
    expect(doc.gateway, 'the e2e server runs its gateway').toBeTruthy();
    const identityDir = await mkdtemp(path.join(tmpdir(), 'e2e-cmd-'));
    try {
      const answer = await joinWithToken({
        serverUrl: baseURL!,
        token,
        claims: machineClaims(),
        pins: { joinSigningKeyPin: doc.join.signingKeyPin, joinEncryptionKeyPin: doc.join.encryptionKeyPin },
        identityDir,
      });
      const nodeId = (answer as { nodeId: string }).nodeId;
      const target = { gatewayUrl: doc.gateway.url, servingCaPin: doc.gateway.servingCaPin, gatewayServerName: doc.gateway.serverName };
      const session = await openCommandSession(target, await loadIdentity(identityDir), nodeId);
      try {
        expect(session.status).toBe(200);

        await page.goto(`/nodes/${nodeId}?tenant=${tenantId}`);
        const region = page.getByRole('region', { name: 'Commands' });
        await expect(region).toContainText('No command was sent to this node.');
        await region.getByLabel('Command', { exact: true }).selectOption('bcd.doctor');
        await region.getByRole('button', { name: 'Run command' }).click();
        const row = region.getByRole('row').filter({ hasText: 'bcd.doctor' });
        await expect(row).toContainText(/queued|sent/);
        // The machine receives it on its session and answers on the same connection, as the agent does.
        await expect.poll(() => session.commands().length, { timeout: 15_000 }).toBe(1);
        const body = JSON.parse(Buffer.from(session.commands()[0]!.body, 'base64url').toString('utf8')) as { commandId: string };
        const posted = await session.postResult(
          body.commandId,
          JSON.stringify({ status: 'succeeded', output: { checks: [{ name: 'identity', ok: true }] } }),
        );
        expect(posted.status).toBe(204);
        await expect(row).toContainText('succeeded', { timeout: 10_000 });
        // The list as it first shows (each result folded): rows of ordinary height, nothing cut off.
        expect(await layoutProblems(page), `layout of the node page (${viewport.name})`).toEqual([]);
        await expectNoSeriousViolations(page, `the node page's commands (${viewport.name})`);
        // Unfolded, the result is the node's output as formatted JSON.
        await row.getByText('Result').click();
        await expect(row.locator('pre')).toContainText('"name": "identity"');
        await expectNoSeriousViolations(page, `a command's result (${viewport.name})`);
      } finally {
        session.close();
      }
    } finally {
      await rm(identityDir, { recursive: true, force: true });
    }
  });
}
