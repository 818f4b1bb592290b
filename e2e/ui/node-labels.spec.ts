import { expect, test } from '@playwright/test';
import { layoutProblems } from '../support/layout-check';
import { joinMachine } from '../support/machine';
import { newScope } from '../support/queue';
import { roleState } from '../support/roles';
import { trpc } from '../support/session';
import { expectNoSeriousViolations } from '../support/axe';

/**
 * Labels at desktop and phone width: given in the join token dialog, on the node that token admits, and
 * edited on the node page with the labels editor (add one, remove one), the layout whole and without
 * serious accessibility problems.
 */

test.use({ storageState: roleState('admin') });

const VIEWPORTS = [
  { name: 'desktop', width: 1440, height: 900 },
  { name: 'phone', width: 390, height: 844 },
] as const;

for (const viewport of VIEWPORTS) {
  test(`labels given in the token dialog reach the node, and the node page edits them (${viewport.name})`, async ({ page }) => {
    test.setTimeout(120_000);
    await page.setViewportSize({ width: viewport.width, height: viewport.height });
    const scope = await newScope(page.request);

    await page.goto(`/join-tokens?pool=${scope.poolId}&tenant=${scope.tenantId}`);
    await page.getByRole('button', { name: 'Create join token' }).click();
    const dialog = page.getByRole('dialog', { name: 'Create join token' });
    await expect(dialog).toBeVisible();
    const labels = dialog.getByRole('textbox', { name: /^Labels/ });
    await labels.fill('rack=c7, Bad Key=x');
    await dialog.getByRole('button', { name: 'Create token' }).click();
    await expect(dialog.getByRole('alert').filter({ hasText: '"Bad Key=x" is not a label' })).toBeVisible();
    expect(await layoutProblems(page), `layout of the token dialog (${viewport.name})`).toEqual([]);
    await expectNoSeriousViolations(page, `the token dialog (${viewport.name})`);
    await labels.fill('rack=c7, env=prod');
    await dialog.getByRole('button', { name: 'Create token' }).click();
    await expect(dialog).toBeHidden();
    const token = await page.getByRole('region', { name: 'New join token' }).getByLabel('Join token', { exact: true }).inputValue();

    const { response } = await joinMachine(page.request, token);
    expect(response.status()).toBe(200);
    const { items } = await trpc<{ items: { id: string; labels: Record<string, string> }[] }>(page.request, 'query', 'nodes.list', {
      tenantId: scope.tenantId,
      poolId: scope.poolId,
    });
    expect(items).toHaveLength(1);
    expect(items[0]!.labels).toEqual({ rack: 'c7', env: 'prod' });
    const nodeId = items[0]!.id;

    await page.goto(`/nodes/${nodeId}?tenant=${scope.tenantId}`);
    const editor = page.getByRole('region', { name: 'Labels' });
    const tags = editor.getByRole('list', { name: 'Node labels' });
    await expect(tags.getByRole('listitem')).toHaveText([/^env\s+prod/, /^rack\s+c7/]);
    await editor.getByLabel('Key', { exact: true }).fill('owner');
    await editor.getByLabel('Value', { exact: true }).fill('team-a');
    await editor.getByRole('button', { name: 'Add label' }).click();
    await expect(tags.getByRole('listitem')).toHaveText([/^env\s+prod/, /^owner\s+team-a/, /^rack\s+c7/]);
    await editor.getByRole('button', { name: 'Remove label env' }).click();
    await expect(tags.getByRole('listitem')).toHaveText([/^owner\s+team-a/, /^rack\s+c7/]);
    expect(await layoutProblems(page), `layout of the node page (${viewport.name})`).toEqual([]);
    await expectNoSeriousViolations(page, `the node page (${viewport.name})`);

    const node = await trpc<{ labels: Record<string, string> }>(page.request, 'query', 'nodes.get', { tenantId: scope.tenantId, nodeId });
    expect(node.labels).toEqual({ rack: 'c7', owner: 'team-a' });
  });
}
