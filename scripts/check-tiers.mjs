// Checks that vitest runs every `*.test.ts` of the tree in exactly one project (unit, integration, soak), so a
// test file that no tier includes (or two tiers both include) fails `npm test` instead of being skipped.
// The tree is walked here on its own, not through the tier rules in test/tiers.ts, so a rule that drops a file
// shows up. Run: node scripts/check-tiers.mjs
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Every `*.test.ts` and `*.test.tsx` under `root` (relative POSIX paths), anywhere but node_modules and dot-directories. */
export function walkTestFiles(dir = root, rel = '') {
  const found = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === 'node_modules' || entry.name.startsWith('.')) continue;
    const child = rel ? `${rel}/${entry.name}` : entry.name;
    if (entry.isDirectory()) found.push(...walkTestFiles(path.join(dir, entry.name), child));
    else if (/\.test\.tsx?$/.test(entry.name)) found.push(child);
  }
  return found.sort();
}

/**
 * The problems with a tier assignment: `files` are the test files of the tree, `runs` the (project, file) pairs
 * vitest would run. Each file must be run by exactly one project, and no project may run a file that is not
 * in the tree's list.
 * @param {string[]} files
 * @param {{ project: string, file: string }[]} runs
 */
export function tierProblems(files, runs) {
  const projectsOf = new Map(files.map((file) => [file, []]));
  const problems = [];
  for (const { project, file } of runs) {
    const projects = projectsOf.get(file);
    if (projects) projects.push(project);
    else problems.push(`${file}: run by ${project} but not a *.test.ts of the tree`);
  }
  for (const [file, projects] of projectsOf) {
    if (projects.length === 0) problems.push(`${file}: in no tier (vitest would never run it)`);
    if (projects.length > 1) problems.push(`${file}: in ${projects.length} tiers (${projects.join(', ')})`);
  }
  return problems;
}

/** The (project, file) pairs vitest itself resolves from vitest.config.ts, without running anything. */
export async function vitestRuns() {
  const { createVitest } = await import('vitest/node');
  const vitest = await createVitest('test', { watch: false, root });
  try {
    const specs = await vitest.globTestSpecifications();
    return specs.map((spec) => ({ project: spec.project.name, file: path.relative(root, spec.moduleId).split(path.sep).join('/') }));
  } finally {
    await vitest.close();
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const files = walkTestFiles();
  const runs = await vitestRuns();
  const problems = tierProblems(files, runs);
  if (problems.length > 0) {
    console.error(`Test tiers: ${problems.length} problem(s); the rules are in test/tiers.ts:\n  ${problems.join('\n  ')}`);
    process.exit(1);
  }
  const counts = new Map();
  for (const { project } of runs) counts.set(project, (counts.get(project) ?? 0) + 1);
  console.log(`Test tiers: ${files.length} files, each in one tier (${[...counts].map(([p, n]) => `${p} ${n}`).join(', ')})`);
}
