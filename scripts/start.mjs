// The quick start: `npm start` on a fresh clone installs dependencies, builds the console and starts the
// whole product (embedded PostgreSQL unless DATABASE_URL is set). Only Node built-ins are used here, since
// it runs before node_modules exists.
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
process.chdir(root);
process.env.NEXT_TELEMETRY_DISABLED = '1';
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

function run(command, args, label) {
  console.log(`» ${label}`);
  const result = spawnSync(command, args, { stdio: 'inherit', env: process.env });
  if (result.status !== 0) {
    console.error(`${label} failed (exit ${result.status ?? result.signal}).`);
    process.exit(result.status || 1);
  }
}

const installedLock = 'node_modules/.package-lock.json';
if (!existsSync(installedLock) || statSync('package-lock.json').mtimeMs > statSync(installedLock).mtimeMs) {
  run(npm, ['ci', '--no-audit', '--no-fund'], 'Installing dependencies (npm ci)');
}
if (!existsSync('server/db/generated/client.ts')) run(process.execPath, ['scripts/prisma-generate.mjs'], 'Generating the Prisma client');

// Rebuild only when a source file changed since the last build.
function hashTree(hash, dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== 'generated' && entry.name !== 'node_modules') hashTree(hash, full);
    } else if (/\.(tsx?|css|json|mjs)$/.test(entry.name)) {
      hash.update(full).update(readFileSync(full));
    }
  }
}
const hash = createHash('sha256');
for (const dir of ['app', 'components', 'server', 'public']) if (existsSync(dir)) hashTree(hash, dir);
for (const file of ['next.config.ts', 'package-lock.json', 'tsconfig.json']) if (existsSync(file)) hash.update(readFileSync(file));
const stamp = hash.digest('hex');
const stampFile = '.next/source-stamp';
if (!existsSync('.next/BUILD_ID') || !existsSync(stampFile) || readFileSync(stampFile, 'utf8') !== stamp) {
  run(npm, ['run', 'build', '--silent'], 'Building the console (next build)');
  writeFileSync(stampFile, stamp);
}

const child = spawn(process.execPath, ['--import', 'tsx', 'server/boot/main.ts'], { stdio: 'inherit', env: process.env });
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
