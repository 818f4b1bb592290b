import AxeBuilder from '@axe-core/playwright';
import { expect, test, type Page } from '@playwright/test';
import { uniqueName } from '../support/env';
import { layoutProblems } from '../support/layout-check';
import { openConsole, trpc } from '../support/session';
import { roleState } from '../support/roles';

// The pools page's stale-node dialog: the policy form (validated, saved, shown in the pool's row) and the dry
// run of what the policy would do now, at desktop and phone width. The steps themselves are tested against the
// database in server/pools/stale-policy.test.ts.

/** A pool of its own in the root tenant's first live site, so parallel specs never share it. */
async function newPool(page: Page) {
  const { items: tenants } = await trpc<{ items: { id: string; isRoot: boolean }[] }>(page.request, 'query', 'tenants.list', {});
  const tenantId = tenants.find((t) => t.isRoot)!.id;
  const { items: sites } = await trpc<{ items: { id: string; archivedAt: string | null }[] }>(page.request, 'query', 'sites.list', {
    tenantId,
  });
  const name = uniqueName('stale').toLowerCase();
  const pool = await trpc<{ id: string; name: string }>(page.request, 'mutation', 'pools.create', {
    tenantId,
    siteId: sites.find((s) => !s.archivedAt)!.id,
    name,
    agent: 'bcd',
  });
  return { tenantId, pool };
}

async function expectNoSeriousViolations(page: Page) {
  const results = await new AxeBuilder({ page }).include('dialog[open]').analyze();
  const serious = results.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id}: ${v.help}`);
  expect(serious).toEqual([]);
}

for (const viewport of [
  { width: 1440, height: 900 },
  { width: 390, height: 844 },
]) {
  test.describe(`${viewport.width}×${viewport.height}`, () => {
    test.use({ storageState: roleState('admin'), viewport });

    test('sets a pool’s stale-node policy with bounded days and shows the dry run', async ({ page }) => {
      test.setTimeout(90_000);
      const { tenantId, pool } = await newPool(page);
      await openConsole(page);
      await page.goto(`/pools?tenant=${tenantId}`);
      const row = page.getByRole('row').filter({ has: page.getByRole('rowheader', { name: new RegExp(`^${pool.name}`) }) });
      await row.getByRole('button', { name: `Stale-node policy of pool ${pool.name}` }).click();
      const dialog = page.getByRole('dialog', { name: `Stale nodes of pool ${pool.name}` });
      await expect(dialog).toBeVisible();
      await expect(dialog.getByText('No stale-node policy: nothing is cordoned')).toBeVisible();

      await dialog.getByRole('checkbox', { name: 'Cordon and retire stale nodes of this pool' }).check();
      const cordon = dialog.getByRole('spinbutton', { name: 'Cordon after (days disconnected)' });
      const retire = dialog.getByRole('spinbutton', { name: 'Retire after (more days, once cordoned)' });
      await cordon.fill('400');
      await retire.fill('0');
      await dialog.getByRole('button', { name: 'Save policy' }).click();
      await expect(dialog.getByText('cordonAfterDays is at most 365 days')).toBeVisible();
      await expect(dialog.getByText('retireAfterDays is at least 1 day')).toBeVisible();
      await expect(retire).toHaveAttribute('aria-invalid', 'true');
      expect(await layoutProblems(page)).toEqual([]);
      await expectNoSeriousViolations(page);

      await cordon.fill('10');
      await retire.fill('20');
      await dialog.getByRole('button', { name: 'Save policy' }).click();
      await expect(dialog.getByText('Saved.')).toBeVisible();
      // The dry run reads the new policy: this pool has no node, so nothing is due.
      await expect(dialog.getByText(/would retire 0 and cordon 0 nodes/)).toBeVisible();
      await expect(dialog.getByText('No node is due.')).toBeVisible();
      expect(await layoutProblems(page)).toEqual([]);
      await expectNoSeriousViolations(page);
      const saved = await trpc<{ policy: { staleNodes?: unknown } }>(page.request, 'query', 'pools.get', { tenantId, poolId: pool.id });
      expect(saved.policy.staleNodes).toEqual({ cordonAfterDays: 10, retireAfterDays: 20 });

      await dialog.getByRole('button', { name: 'Close', exact: true }).last().click();
      await expect(row.getByText('stale: cordon 10d · retire +20d')).toBeVisible();
      expect(await layoutProblems(page)).toEqual([]);

      // Archived, the pool's policy still applies to its nodes: it can be removed, not edited.
      await trpc(page.request, 'mutation', 'pools.archive', { tenantId, poolId: pool.id });
      await page.getByRole('checkbox', { name: 'Show archived' }).check();
      await row.getByRole('button', { name: `Stale-node policy of pool ${pool.name}` }).click();
      await expect(dialog.getByRole('spinbutton')).toHaveCount(0);
      await dialog.getByRole('button', { name: 'Remove policy' }).click();
      await expect(dialog.getByText('This pool has no stale-node policy.')).toBeVisible();
      await expect(dialog.getByText('No stale-node policy: nothing is cordoned')).toBeVisible();
    });
  });
}
