import { defineConfig } from '@playwright/test';

/**
 * End-to-end tests against a production build started by scripts/e2e.mjs (`npm run test:e2e`), which
 * provides E2E_BASE_URL, the first admin's credentials and E2E_STATE_DIR. `api` speaks HTTP only; `ui` drives the
 * console in Debian's Chromium (no browser download: the sandbox has no network) after `setup` has signed each
 * role in once; `sign-in` (which signs the admin out) runs last, as setup's teardown.
 */
const baseURL = process.env.E2E_BASE_URL;
if (!baseURL) {
  throw new Error(
    'E2E_BASE_URL is not set: run the end-to-end tests with `npm run test:e2e` (scripts/e2e.mjs), which starts a server for them.',
  );
}

const chromium = {
  browserName: 'chromium' as const,
  viewport: { width: 1440, height: 900 },
  launchOptions: {
    executablePath: process.env.E2E_CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'],
  },
};

export default defineConfig({
  testDir: './e2e',
  outputDir: './test-results',
  fullyParallel: true,
  workers: 2,
  forbidOnly: !!process.env.CI,
  retries: 0,
  timeout: 30_000,
  expect: { timeout: 10_000 },
  reporter: [['list']],
  use: {
    baseURL,
    // Traces record typed values, the admin's password among them: opt in with E2E_TRACE=1 (scripts/e2e.mjs
    // likewise keeps failure page snapshots, which show input values, off unless E2E_TRACE=1).
    trace: process.env.E2E_TRACE === '1' ? 'retain-on-failure' : 'off',
    screenshot: 'only-on-failure',
  },
  projects: [
    {
      name: 'api',
      testDir: './e2e/api',
    },
    // Signs each fixed-account role in once through the form and saves its state for the UI specs
    // (e2e/support/roles.ts), in E2E_STATE_DIR: the run's temporary directory, never the repository.
    {
      name: 'setup',
      testDir: './e2e/setup',
      testMatch: /.*\.setup\.ts$/,
      use: chromium,
      teardown: 'sign-in',
    },
    {
      name: 'ui',
      testDir: './e2e/ui',
      testIgnore: /sign-in\.spec\.ts$/,
      dependencies: ['setup'],
      use: chromium,
    },
    // Its last test signs the admin out, which ends every session of the admin, the saved one included: it
    // runs as the setup project's teardown, after every UI test that uses that state.
    {
      name: 'sign-in',
      testDir: './e2e/ui',
      testMatch: /sign-in\.spec\.ts$/,
      use: chromium,
    },
  ],
});
