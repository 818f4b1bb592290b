import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

/**
 * Which vitest project (tier) each `*.test.ts` (and component `*.test.tsx`) runs in. The rules, in order:
 *
 * - **soak**: the load, kill -9, two-instance and fuzz tests with their full counts, and the few that start the
 *   product's own processes for a minute or more (`npm run test:soak`, part of `npm run test:system`): the files
 *   in {@link SOAK_FILES} and any `*.soak.test.ts`.
 * - **integration**: a test whose imports reach (through relative or `@/` imports, transitively) a module in
 *   {@link INTEGRATION_MARKERS}: the test database (`test/db.ts`, the only reader of the database URL that
 *   the integration tier's global setup provides), the embedded PostgreSQL, or a harness that spawns
 *   processes (servers, the CLI, bcd builds).
 * - **unit**: everything else. The unit project starts no database, so a test that reaches PostgreSQL in
 *   another way fails there loudly instead of being skipped.
 *
 * A new ordinary test file lands in unit or integration by itself; only soak is a list. `test/tiers.test.ts`
 * checks that vitest runs every test file of the tree in exactly one project.
 */
type Tier = 'unit' | 'integration' | 'soak';

const SOAK_FILES = [
  'server/join/join-max-uses-load.test.ts',
  'server/join/join-overlap-exactness.test.ts',
  // Kills a server with SIGKILL and starts it twice more on the orphaned PostgreSQL's data directory.
  'server/db/stale-postmaster.test.ts',
  // `npm run dev`: Next's development server compiling routes on first request, on its own embedded PostgreSQL.
  'scripts/dev.test.ts',
  'test/reliability/fuzz.test.ts',
  'test/reliability/kill-restart.test.ts',
  'test/reliability/two-servers.test.ts',
];

const INTEGRATION_MARKERS = [
  'test/db.ts',
  'server/db/embedded.ts',
  'test/server-process.ts',
  'test/gateway-process.ts',
  'test/cli.ts',
  'test/bcd-build.ts',
  'test/swtpm.ts',
];

/** Directories never searched for test files (dependencies, build output, Playwright specs, data). */
const SKIPPED = new Set(['node_modules', '.git', '.next', '.data', '.build', '.cache', 'dist', 'e2e', 'test-results']);

/** Every `*.test.ts` and `*.test.tsx` under `root`, as POSIX paths relative to it, sorted. */
function findTestFiles(root: string, dir = ''): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(path.join(root, dir), { withFileTypes: true })) {
    const rel = dir ? `${dir}/${entry.name}` : entry.name;
    if (entry.isDirectory()) {
      if (!SKIPPED.has(entry.name) && !entry.name.startsWith('.')) found.push(...findTestFiles(root, rel));
    } else if (/\.test\.tsx?$/.test(entry.name)) {
      found.push(rel);
    }
  }
  return found.sort();
}

// Static imports and re-exports at the start of a line (multi-line ones too), and dynamic imports anywhere.
const SPECIFIER = /^\s*(?:import|export)\b[^;'"]*?(?:\bfrom\s*)?['"]([^'"]+)['"]|\bimport\s*\(\s*['"]([^'"]+)['"]/gm;
const EXTENSIONS = ['', '.ts', '.tsx', '.mts', '.js', '.mjs', '/index.ts', '/index.tsx'];

function resolveImport(root: string, from: string, specifier: string): string | undefined {
  let base: string;
  if (specifier.startsWith('@/')) base = specifier.slice(2);
  else if (specifier.startsWith('.')) base = path.posix.join(path.posix.dirname(from), specifier);
  else return undefined;
  // `./x.js` may be written for a `./x.ts` source.
  const candidates = [...EXTENSIONS.map((ext) => base + ext), base.replace(/\.js$/, '.ts')];
  const isFile = (file: string) => existsSync(path.join(root, file)) && statSync(path.join(root, file)).isFile();
  const found = candidates.find(isFile);
  return found === undefined ? undefined : path.posix.normalize(found);
}

/** Whether `file`'s local import closure reaches one of the integration markers. */
function reachesMarker(root: string, file: string, cache: Map<string, string[]>): boolean {
  const seen = new Set<string>();
  const stack = [file];
  while (stack.length > 0) {
    const current = stack.pop()!;
    if (seen.has(current)) continue;
    seen.add(current);
    if (INTEGRATION_MARKERS.includes(current)) return true;
    let imports = cache.get(current);
    if (!imports) {
      const source = readFileSync(path.join(root, current), 'utf8');
      imports = [...source.matchAll(SPECIFIER)].flatMap((m) => resolveImport(root, current, (m[1] ?? m[2])!) ?? []);
      cache.set(current, imports);
    }
    stack.push(...imports);
  }
  return false;
}

/** The tier of every test file under `root`. */
export function classifyTests(root: string): Record<Tier, string[]> {
  const tiers: Record<Tier, string[]> = { unit: [], integration: [], soak: [] };
  const cache = new Map<string, string[]>();
  for (const file of findTestFiles(root)) {
    if (SOAK_FILES.includes(file) || file.endsWith('.soak.test.ts')) tiers.soak.push(file);
    else if (reachesMarker(root, file, cache)) tiers.integration.push(file);
    else tiers.unit.push(file);
  }
  return tiers;
}
