import { test as setup } from '@playwright/test';
import { ROLES, roleState } from '../support/roles';
import { signInThroughForm } from '../support/session';

// One form sign-in per role for the whole run; the UI specs reuse the saved state (e2e/support/roles.ts).
for (const role of ROLES) {
  setup(`sign in as ${role}`, async ({ page }) => {
    await signInThroughForm(page);
    await page.context().storageState({ path: roleState(role) });
  });
}
