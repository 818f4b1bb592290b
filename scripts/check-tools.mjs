// The system tools the tests call, checked before `npm test`, `npm run test:soak` and `npm run test:system` run anything. Missing ones
// are installed when that is possible here (root, apt-get on the PATH: one `apt-get update`, one
// `apt-get install -y` of all of them); otherwise the run stops at once with the exact command to run, instead
// of failing halfway through the suite. Plain Node, no dependencies: it runs before anything is known to work.
import { spawnSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Each tool, the Debian package that brings it, and what needs it. `chromium` and tools with a `path` (outside
 * the PATH) are looked up by path.
 */
export const TOOLS = [
  { name: 'chromium', pkg: 'chromium', why: 'the Playwright UI tests' },
  { name: 'shellcheck', pkg: 'shellcheck', why: 'the generated install script' },
  { name: 'openssl', pkg: 'openssl', why: 'certificate checks' },
  { name: 'curl', pkg: 'curl', why: 'mutual TLS through the gateway' },
  { name: 'swtpm', pkg: 'swtpm', why: 'the TPM tests' },
  { name: 'swtpm_setup', pkg: 'swtpm-tools', why: 'the TPM tests' },
  { name: 'ss', pkg: 'iproute2', why: 'the gateway restart test' },
  { name: 'tar', pkg: 'tar', why: 'the arm64 bcd build' },
  { name: 'go', pkg: 'golang-go', why: 'the independent Go session client' },
  { name: 'patroni', pkg: 'patroni', why: 'the PostgreSQL failover drill' },
  { name: 'etcd', pkg: 'etcd-server', why: 'the PostgreSQL failover drill' },
  { name: 'haproxy', pkg: 'haproxy', why: 'the PostgreSQL failover drill' },
  { name: 'systemd-analyze', pkg: 'systemd', why: 'the release test (systemd-analyze verify of deploy/systemd)' },
  {
    name: 'postgres',
    path: '/usr/lib/postgresql/15/bin/postgres',
    pkg: 'postgresql-15',
    why: 'the failover and backup drills (PostgreSQL 15 clusters of their own)',
  },
];

/** Where Playwright looks for Chromium (playwright.config.ts) unless E2E_CHROMIUM names another. */
export const DEFAULT_CHROMIUM = '/usr/bin/chromium';

const isExecutable = (file) => {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
};

/** The first executable `name` on `env.PATH`, or undefined. */
export function which(name, env) {
  for (const dir of (env.PATH ?? '').split(path.delimiter)) {
    if (dir && isExecutable(path.join(dir, name))) return path.join(dir, name);
  }
  return undefined;
}

/** The tools of {@link TOOLS} that are not there. */
export function missingTools(env, { chromium = DEFAULT_CHROMIUM } = {}) {
  return TOOLS.filter((tool) =>
    tool.name === 'chromium' ? !isExecutable(env.E2E_CHROMIUM || chromium) : tool.path ? !isExecutable(tool.path) : !which(tool.name, env),
  );
}

/**
 * Checks the tools and installs what is missing when it can. `run(command, args, env)` runs one command and
 * answers its exit status; `say` and `fail` print a line. Answers the exit code: 0 when every tool is there.
 */
export function checkTools({
  env = process.env,
  uid = process.getuid?.(),
  chromium = DEFAULT_CHROMIUM,
  run = runQuietly,
  say = console.log,
  fail = console.error,
} = {}) {
  if (env.E2E_CHROMIUM && !isExecutable(env.E2E_CHROMIUM)) {
    fail(`E2E_CHROMIUM=${env.E2E_CHROMIUM} is not an executable: point it at Chromium, or unset it to use ${chromium}.`);
    return 1;
  }
  const missing = missingTools(env, { chromium });
  if (missing.length === 0) return 0;
  const packages = [...new Set(missing.map((tool) => tool.pkg))];
  const names = missing.map((tool) => `${tool.name} (${tool.why})`).join(', ');
  const aptGet = which('apt-get', env);
  if (uid !== 0 || !aptGet) {
    const sudo = uid === 0 ? '' : 'sudo ';
    fail(
      `The tests need system tools that are missing: ${names}. Install them with:\n  ${sudo}apt-get update && ${sudo}apt-get install -y ${packages.join(' ')}`,
    );
    return 1;
  }
  say(`Installing the system tools the tests need (apt-get): ${packages.join(' ')}`);
  const aptEnv = { ...env, DEBIAN_FRONTEND: 'noninteractive' };
  const failed = run(aptGet, ['update', '-qq'], aptEnv) !== 0 || run(aptGet, ['install', '-y', '-qq', ...packages], aptEnv) !== 0;
  const still = missingTools(env, { chromium });
  if (failed || still.length > 0) {
    const left = (still.length > 0 ? still : missing).map((tool) => tool.pkg);
    fail(
      `Installing ${packages.join(' ')} failed (see apt-get's output above). Run:\n  apt-get update && apt-get install -y ${[...new Set(left)].join(' ')}`,
    );
    return 1;
  }
  return 0;
}

/** apt-get with its chatter dropped: its errors still reach stderr. */
function runQuietly(command, args, env) {
  return spawnSync(command, args, { env, stdio: ['ignore', 'ignore', 'inherit'] }).status ?? 1;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exit(checkTools());
}
