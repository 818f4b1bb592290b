import { expect, test, type Page } from '@playwright/test';
import { roleAllows, type Action, type Role } from '../../protocol/api/permissions';
import { consolePages, openPage, seedConsole, type ConsoleSeed } from '../support/console-pages';
import { roleState } from '../support/roles';
import { signInNewOperator } from '../support/session';

test.use({ storageState: roleState('admin') });

/**
 * The action controls of each page and the server action each one calls (server/api/*: the procedure's
 * `requirePermission`). Whether a role is offered a control follows from the role matrix
 * (protocol/api/permissions.ts), which the server decides with: nothing here says what a role may do.
 */
const CONTROLS: Record<string, { role: 'button'; name: string | RegExp; action: Action }[]> = {
  '/pools': [
    { role: 'button', name: 'Create pool', action: 'compute:pools:manage' },
    { role: 'button', name: /^Archive pool /, action: 'compute:pools:manage' },
    { role: 'button', name: /^Download install script for pool /, action: 'compute:pools:read' },
    { role: 'button', name: /^(Require two approvals|Allow one approval) for join requests of site /, action: 'compute:sites:manage' },
  ],
  '/sites': [
    { role: 'button', name: 'Create site', action: 'compute:sites:manage' },
    { role: 'button', name: /^Settings of site /, action: 'compute:sites:manage' },
    { role: 'button', name: /^Archive site /, action: 'compute:sites:manage' },
  ],
  '/join-tokens': [
    { role: 'button', name: 'Create join token', action: 'compute:join-tokens:create' },
    { role: 'button', name: /^Revoke join token /, action: 'compute:join-tokens:revoke' },
  ],
  '/join-requests': [
    { role: 'button', name: /^Approve request /, action: 'compute:join-requests:decide' },
    { role: 'button', name: /^Reject request /, action: 'compute:join-requests:decide' },
  ],
  '/approval-rules': [
    { role: 'button', name: 'New rule', action: 'compute:sites:manage' },
    { role: 'button', name: /^Edit hold lab machines$/, action: 'compute:sites:manage' },
    { role: 'button', name: /^Delete hold lab machines$/, action: 'compute:sites:manage' },
    { role: 'button', name: /^Disable hold lab machines$/, action: 'compute:sites:manage' },
  ],
  '/expected-machines': [{ role: 'button', name: 'Import', action: 'compute:sites:manage' }],
  '/nodes/': [
    { role: 'button', name: /^Cordon node /, action: 'compute:nodes:manage' },
    { role: 'button', name: /^Revoke identity node /, action: 'compute:nodes:manage' },
  ],
  '/access/api-keys': [{ role: 'button', name: 'Create API key', action: 'compute:api-keys:manage' }],
  '/access/operators': [{ role: 'button', name: 'Invite operator', action: 'compute:operators:manage' }],
  '/webhooks': [{ role: 'button', name: 'Create webhook', action: 'compute:webhooks:manage' }],
};

const controlsOf = (path: string) => Object.entries(CONTROLS).find(([prefix]) => path.split('?')[0]!.startsWith(prefix))?.[1] ?? [];

let seed: ConsoleSeed;
test.beforeAll(async ({ browser }) => {
  test.setTimeout(120_000);
  const context = await browser.newContext({ storageState: roleState('admin'), baseURL: process.env.E2E_BASE_URL });
  seed = await seedConsole(context.request);
  await context.close();
});
test.afterAll(() => seed?.stop());

async function walk(page: Page, role: Role) {
  const wrong: string[] = [];
  for (const { path, heading } of consolePages(seed)) {
    // Tenants is the root admins' page only; the nav leaves it out for everyone else.
    if (path.startsWith('/access/tenants') && role !== 'admin') continue;
    await openPage(page, path, heading);
    for (const control of controlsOf(path)) {
      // Rendered counts, shown or not: the queue renders each row's own Approve and Reject, shown at phone width.
      const count = await page.getByRole(control.role, { name: control.name, includeHidden: true }).count();
      const offered = roleAllows(role, control.action);
      if (offered !== count > 0)
        wrong.push(`${path.split('?')[0]}: ${String(control.name)} is ${count > 0 ? 'offered' : 'missing'} (${control.action})`);
    }
  }
  expect(wrong, `controls of ${role}`).toEqual([]);
}

test('an admin is offered every action control', async ({ page }) => {
  test.setTimeout(180_000);
  await walk(page, 'admin');
});

for (const role of ['approver', 'viewer'] as const) {
  test(`the ${role} role is offered exactly the controls it may use`, async ({ page, browser, baseURL }) => {
    test.setTimeout(180_000);
    const signedIn = await signInNewOperator(browser, page.request, { baseURL: baseURL!, tenantId: seed.tenantId, role });
    try {
      await walk(signedIn.page, role);
    } finally {
      await signedIn.context.close();
    }
  });
}
