// `npm pack` (prepack): builds what the release ships and is missing, so the target needs no build step:
// the console (.next) and the compiled server, gateway and CLI (.build/server) when their sources changed
// (ensure-build.mjs), the compiled bundles again (esbuild, seconds: the CLI's sources are not in the stamp),
// and this version's bcd executables (dist/bcd/<version>, cached by content). package.json `files` lists
// what ships; deploy/systemd/ holds the units.
import { spawnSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, readFileSync, readdirSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureBuilt } from './ensure-build.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
process.chdir(root);
process.env.NEXT_TELEMETRY_DISABLED = '1';
if (!existsSync('server/db/generated/client.ts')) {
  const generated = spawnSync(process.execPath, ['scripts/prisma-generate.mjs'], { stdio: 'inherit' });
  if (generated.status !== 0) process.exit(generated.status || 1);
}
ensureBuilt();
const { buildServer } = await import('./build-server.mjs');
await buildServer();
shimNextExternals(path.join(root, '.next/node_modules'));
const bcd = spawnSync(process.execPath, ['scripts/build-bcd.mjs'], { stdio: 'inherit' });
if (bcd.status !== 0) process.exit(bcd.status || 1);
const { version } = JSON.parse(readFileSync('package.json', 'utf8'));
const sums = readFileSync(path.join('dist/bcd', version, 'SHA256SUMS'), 'utf8');
if (!/ linux-amd64$/m.test(sums)) {
  console.error(`dist/bcd/${version} has no linux-amd64 build`);
  process.exit(1);
}
if (!/ linux-arm64$/m.test(sums)) console.warn(`» dist/bcd/${version} has no linux-arm64 build: the release ships amd64 only`);

/**
 * The console's build reaches the server-external packages (next.config.ts) through aliases in
 * .next/node_modules (`pg-<hash>` and the like), which `next build` makes as symlinks into ./node_modules.
 * A tarball carries no symlinks, and the installed release's dependencies may sit one or more folders up:
 * each alias becomes a small package that re-exports, for each specifier the build uses (`alias` or
 * `alias/sub/path`), the real one, found by Node's usual lookup.
 */
function shimNextExternals(dir) {
  if (!existsSync(dir)) return;
  const used = usedSpecifiers(path.join(root, '.next/server'));
  for (const alias of aliasLinks(dir)) {
    const aliasName = path.relative(dir, alias).split(path.sep).join('/');
    const real = readlinkSync(alias).split('node_modules/').pop();
    const exports = {};
    const files = {};
    for (const [specifier, kind] of used) {
      if (specifier !== aliasName && !specifier.startsWith(`${aliasName}/`)) continue;
      const sub = specifier.slice(aliasName.length);
      const target = real + sub;
      const base = `shim${Object.keys(exports).length}`;
      files[`${base}.cjs`] = `module.exports = require('${target}');\n`;
      const entry = { require: `./${base}.cjs` };
      if (kind === 'import') {
        const withDefault = exportNames(target).includes('default') ? `export { default } from '${target}';\n` : '';
        files[`${base}.mjs`] = `export * from '${target}';\n${withDefault}`;
        entry.import = `./${base}.mjs`;
      }
      exports[`.${sub}`] = entry;
    }
    rmSync(alias);
    mkdirSync(alias);
    writeFileSync(path.join(alias, 'package.json'), `${JSON.stringify({ name: aliasName, private: true, exports }, null, 2)}\n`);
    for (const [name, text] of Object.entries(files)) writeFileSync(path.join(alias, name), text);
  }
}

/** The symlinks under .next/node_modules (scoped ones one folder down). */
function aliasLinks(dir) {
  return readdirSync(dir).flatMap((entry) => {
    const full = path.join(dir, entry);
    if (lstatSync(full).isSymbolicLink()) return [full];
    return entry.startsWith('@') ? aliasLinks(full) : [];
  });
}

/** Every `<alias>[/sub]` the server chunks load, and how: `e.y(...)` imports, `e.x(...)` requires. */
function usedSpecifiers(dir) {
  const used = new Map();
  const walk = (d) => {
    for (const entry of readdirSync(d, { withFileTypes: true })) {
      const full = path.join(d, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.name.endsWith('.js')) {
        for (const m of readFileSync(full, 'utf8').matchAll(/\be\.([xy])\("([^"]+-[0-9a-f]{16}(?:\/[^"]*)?)"/g)) {
          if (m[1] === 'y' || !used.has(m[2])) used.set(m[2], m[1] === 'y' ? 'import' : 'require');
        }
      }
    }
  };
  walk(dir);
  return used;
}

/** The names an ESM import of `name` (resolved from the project root) exports. */
function exportNames(name) {
  const probe = `import * as m from '${name}'; process.stdout.write(JSON.stringify(Object.keys(m)));`;
  const result = spawnSync(process.execPath, ['--input-type=module', '-e', probe], { encoding: 'utf8', cwd: root });
  if (result.status !== 0) throw new Error(`Cannot import ${name}: ${result.stderr}`);
  return JSON.parse(result.stdout);
}
