import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The previous release, for the rolling-upgrade drill: the newest commit on HEAD's first-parent history (main's
 * own line, merges counted as one step) whose `prisma/migrations` differs from HEAD's. So the drill always crosses
 * at least one migration, whatever was committed since, and the commit is fixed by history alone. Built by
 * `git archive` into a temporary directory, with this checkout's node_modules linked in (allowed only when the
 * dependencies are identical) and its own Prisma client generated from its own schema.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const git = (...args: string[]) => execFileSync('git', args, { cwd: ROOT, encoding: 'utf8', maxBuffer: 64 << 20 }).trim();

interface PreviousRelease {
  commit: string;
  /** `<short hash> <date> <subject>` */
  describe: string;
  /** The migrations of this tree (working tree) that the previous release does not have, in order. */
  newMigrations: string[];
}

/**
 * What node_modules holds for a package.json and its lock: the declared dependencies and every locked package.
 * The package's own name, version, `private`, `engines` or scripts may differ between releases.
 */
function dependencies(packageJson: string, lockJson: string): string {
  const pkg = JSON.parse(packageJson) as Record<string, unknown>;
  const lock = JSON.parse(lockJson) as { packages?: Record<string, unknown> };
  const locked = Object.entries(lock.packages ?? {}).filter(([key]) => key !== '');
  return JSON.stringify([pkg.dependencies, pkg.devDependencies, pkg.optionalDependencies, pkg.overrides, locked]);
}

/** Finds the previous release, or says why it cannot be used here. */
export function findPreviousRelease(): PreviousRelease | { skip: string } {
  try {
    git('rev-parse', '--verify', 'HEAD');
  } catch {
    return { skip: 'not a git checkout with history: the previous release is built from git' };
  }
  if (git('rev-parse', '--is-shallow-repository') === 'true')
    return { skip: 'a shallow clone: the previous release is not in its history (git fetch --unshallow)' };
  const head = git('rev-parse', 'HEAD:prisma/migrations');
  const commit = git('rev-list', '--first-parent', 'HEAD')
    .split('\n')
    .find((c) => {
      try {
        return git('rev-parse', `${c}:prisma/migrations`) !== head;
      } catch {
        return true; // no migrations folder at all: older than every migration, still a different schema
      }
    });
  if (!commit) return { skip: 'no commit on the first-parent history has other migrations than HEAD' };
  try {
    git('rev-parse', `${commit}:prisma/migrations`);
    git('rev-parse', `${commit}:test/server-main.ts`);
  } catch {
    return { skip: `the previous release ${commit.slice(0, 12)} has no migrations or no test/server-main.ts to run` };
  }
  const theirs = dependencies(git('show', `${commit}:package.json`), git('show', `${commit}:package-lock.json`));
  const ours = dependencies(
    readFileSync(path.join(ROOT, 'package.json'), 'utf8'),
    readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8'),
  );
  if (theirs !== ours)
    return {
      skip: `the previous release ${commit.slice(0, 12)} has other dependencies (package.json or package-lock.json): this checkout's node_modules cannot run it`,
    };
  const old = new Set(git('ls-tree', '--name-only', `${commit}:prisma/migrations`).split('\n'));
  // This tree's migrations as `migrate()` reads them (uncommitted ones included).
  const current = readdirSync(path.join(ROOT, 'prisma/migrations'), { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort();
  return {
    commit,
    describe: git('log', '-1', '--format=%h %cI %s', commit),
    newMigrations: current.filter((name) => !old.has(name)),
  };
}

/**
 * Writes the previous release's tree into a new temporary directory, links node_modules, generates its Prisma
 * client and copies `extraFiles` (paths relative to the root) from this tree into it. Returns the directory.
 */
export function buildPreviousRelease(release: PreviousRelease, extraFiles: string[] = []): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'bc-previous-release-'));
  execFileSync('sh', ['-c', `git archive ${release.commit} | tar -x -C "${dir}"`], { cwd: ROOT });
  symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
  const generated = spawnSync(process.execPath, ['scripts/prisma-generate.mjs'], { cwd: dir, encoding: 'utf8' });
  if (generated.status !== 0 || !existsSync(path.join(dir, 'server/db/generated')))
    throw new Error(`generating the previous release's Prisma client failed: ${generated.stdout}${generated.stderr}`);
  for (const file of extraFiles) {
    mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    copyFileSync(path.join(ROOT, file), path.join(dir, file));
  }
  return dir;
}

export const removePreviousRelease = (dir: string) => rmSync(dir, { recursive: true, force: true });
