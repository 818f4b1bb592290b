import path from 'node:path';

/**
 * Roles the `setup` project (e2e/setup/roles.setup.ts) signs in once per run, through the form, saving each
 * browser state (its session cookie) to a file in the run's temporary directory, which scripts/e2e.mjs removes
 * with the data directory. A UI spec that only needs "be signed in as X" uses it instead of the form:
 *
 *   test.use({ storageState: roleState('admin') });
 *   ...
 *   await openConsole(page); // where it signed in through the form, to be on the console's overview
 *
 * Only the `context` fixture (and so `page`) carries it; `browser.newContext()` still starts signed out.
 */
export const ROLES = ['admin'] as const;
type Role = (typeof ROLES)[number];

/** The storageState file of a role signed in by the setup project. Holds a session cookie: never log it. */
export function roleState(role: Role): string {
  const dir = process.env.E2E_STATE_DIR;
  if (!dir) throw new Error('E2E_STATE_DIR is not set: run the end-to-end tests with `npm run test:e2e` (scripts/e2e.mjs).');
  return path.join(dir, `${role}.json`);
}
