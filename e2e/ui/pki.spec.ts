import { expect, test, type Page } from '@playwright/test';
import { layoutProblems, summarize } from '../support/layout-check';
import { roleState } from '../support/roles';
import { signInNewOperator, trpc } from '../support/session';
import { uniqueName } from '../support/env';
import { followNav } from '../support/console-pages';
import { expectNoSeriousViolations } from '../support/axe';

test.use({ storageState: roleState('admin') });

const LABELS = ['Serving CA', 'Join-signing key', 'Join-encryption key', 'Node CA', 'Command-signing key'];

async function openPki(page: Page) {
  await page.goto('/');
  await followNav(page, 'PKI');
  await expect(page.getByRole('heading', { name: 'PKI', level: 1 })).toBeVisible();
  await expect(page.getByRole('status').filter({ hasText: /^Loading/ })).toHaveCount(0, { timeout: 20_000 });
}

test('a root admin sees each key with its phase, pins, next step and readiness, and the step asks first', async ({ page }) => {
  test.setTimeout(90_000);
  await openPki(page);
  for (const label of LABELS) {
    const panel = page.getByRole('region', { name: label, exact: true });
    await expect(panel).toBeVisible();
    await expect(panel.getByText(/^(idle|prepared|active)$/)).toBeVisible();
    await expect(panel.getByRole('button', { name: `Copy ${label} pin in use`, exact: false })).toBeVisible();
    await expect(panel).toContainText(/\d+ of \d+ nodes hold the trust set the next step needs/);
    await expect(panel.getByRole('button', { name: new RegExp(`^(Prepare|Activate|Retire) ${label}$`) })).toBeVisible();
  }
  await expectNoSeriousViolations(page, 'pki');

  // The step's dialog says what it does and how many nodes are ready; Cancel takes no step (other specs share the PKI).
  const before = await trpc<{ trustVersion: number }>(page.request, 'query', 'pki.rotation.status', {});
  const step = page
    .getByRole('region', { name: 'Node CA', exact: true })
    .getByRole('button', { name: /^(Prepare|Activate|Retire) Node CA$/ });
  const stepName = (await step.textContent())!.trim();
  await step.click();
  const dialog = page.getByRole('dialog', { name: `${stepName} Node CA` });
  await expect(dialog).toBeVisible();
  await expect(dialog).toContainText(/nodes hold the trust set this step needs/);
  await expect(dialog.getByRole('button', { name: 'Cancel' })).toBeFocused();
  await expectNoSeriousViolations(page, 'pki step dialog');
  await dialog.getByRole('button', { name: 'Cancel' }).click();
  await expect(dialog).toBeHidden();
  const after = await trpc<{ trustVersion: number }>(page.request, 'query', 'pki.rotation.status', {});
  expect(after.trustVersion).toBe(before.trustVersion);

  for (const viewport of [
    { width: 1440, height: 900 },
    { width: 390, height: 844 },
  ]) {
    await page.setViewportSize(viewport);
    await expect(page.getByRole('region', { name: 'Node CA', exact: true })).toBeVisible();
    expect(summarize(await layoutProblems(page)), `layout at ${viewport.width} px`).toEqual([]);
  }
});

test('an operator who is not a root admin has no PKI in the nav, and the page says they lack access', async ({
  page,
  browser,
  baseURL,
}) => {
  test.setTimeout(90_000);
  const { items } = await trpc<{ items: { id: string; isRoot: boolean }[] }>(page.request, 'query', 'tenants.list', {});
  const rootId = items.find((t) => t.isRoot)!.id;
  const other = await trpc<{ id: string }>(page.request, 'mutation', 'tenants.create', { name: uniqueName('pki-tenant') });
  // A member of the root tenant below admin, and the admin of another tenant.
  for (const [tenantId, role] of [
    [rootId, 'operator'],
    [other.id, 'admin'],
  ] as const) {
    const { context, page: theirs } = await signInNewOperator(browser, page.request, { baseURL: baseURL!, tenantId, role });
    try {
      const nav = theirs.getByRole('navigation', { name: 'Console' });
      await expect(nav.getByRole('link', { name: 'Operators', exact: true })).toBeAttached();
      await expect(nav.getByRole('link', { name: 'PKI', exact: true })).toHaveCount(0);
      await theirs.goto('/pki');
      await expect(theirs.getByRole('heading', { name: 'PKI', level: 1 })).toBeVisible();
      await expect(theirs.getByText('You do not have access to the PKI')).toBeVisible();
      await expect(theirs.getByRole('region', { name: 'Node CA', exact: true })).toHaveCount(0);
      await expectNoSeriousViolations(theirs, `pki as ${role}`);
      const refused = await theirs.request.get(`/api/trpc/pki.rotation.status`);
      expect(refused.status()).toBe(403);
    } finally {
      await context.close();
    }
  }
});
