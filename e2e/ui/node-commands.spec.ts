import { rm } from 'node:fs/promises';
import { expect, test } from '@playwright/test';
import { loadIdentity } from '../../agent/renew/identity';
import { openCommandSession } from '../../test/command-session';
import { expectNoSeriousViolations } from '../support/axe';
import { layoutProblems } from '../support/layout-check';
import { joinAsAgent, rootPoolWithToken } from '../support/node-pool';
import { openConsole } from '../support/session';
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

for (const viewport of VIEWPORTS) {
  test(`the node page runs a command and shows its result (${viewport.name})`, async ({ page, baseURL }) => {
    test.setTimeout(120_000);
    await page.setViewportSize({ width: viewport.width, height: viewport.height });
    await openConsole(page);
    const { tenantId, token } = await rootPoolWithToken(page, 'cmd');
    const { nodeId, identityDir, gateway } = await joinAsAgent(page, baseURL!, token, 'e2e-cmd-');
    try {
      const session = await openCommandSession(gateway, await loadIdentity(identityDir), nodeId);
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
