import { defineConfig } from 'vitest/config';
import { fileURLToPath } from 'node:url';
import { classifyTests } from './test/tiers.ts';

const root = fileURLToPath(new URL('.', import.meta.url));
// The rules that put each test file in one tier are in test/tiers.ts.
const tiers = classifyTests(root);

export default defineConfig({
  resolve: { alias: { '@': root } },
  test: {
    exclude: ['node_modules/**', 'e2e/**', '.next/**', '.data/**'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Agents open their first session after a random wait of up to 5 s (agent/session/loop.ts); tests open
    // theirs at once, and so do the agent processes they start (which inherit this environment).
    env: { BETTER_COMPUTE_SESSION_START_JITTER_SECONDS: '0' },
    projects: [
      // No database: pure logic, parsers, crypto, a few short openssl/sh calls. The files share their worker
      // process (isolate: false): a fresh process per file cost about a second each on these machines, 79 s
      // against 30 s for the tier, and unit tests keep no process state between files (they restore env).
      { extends: true, test: { name: 'unit', include: tiers.unit, isolate: false, sequence: { groupOrder: 0 } } },
      // One embedded PostgreSQL for the run; each file creates its own tenants, so files run in parallel. Most
      // of a file's time is spent waiting (on PostgreSQL, on the server, gateway and bcd processes it starts,
      // on retries and timers), so three files at a time fill two cores where vitest's default (cores - 1 = 1)
      // left one idle; TEST_INTEGRATION_WORKERS sets another count.
      {
        extends: true,
        test: {
          name: 'integration',
          include: tiers.integration,
          globalSetup: ['./test/global-setup.ts'],
          fileParallelism: true,
          maxWorkers: Number(process.env.TEST_INTEGRATION_WORKERS) || 3,
          sequence: { groupOrder: 1 },
        },
      },
      // The full-count load, kill -9, two-instance and fuzz tests: `npm run test:soak`.
      {
        extends: true,
        test: {
          name: 'soak',
          include: tiers.soak,
          globalSetup: ['./test/global-setup.ts'],
          fileParallelism: true,
          sequence: { groupOrder: 2 },
        },
      },
    ],
  },
});
