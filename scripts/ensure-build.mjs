// Installs dependencies and builds the console when needed: shared by `npm start`, the benchmark and the
// e2e harness. Only Node built-ins, since it runs before node_modules exists.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

function run(command, args, label) {
  console.log(`» ${label}`);
  const result = spawnSync(command, args, { stdio: 'inherit', env: process.env });
  if (result.status !== 0) {
    console.error(`${label} failed (exit ${result.status ?? result.signal}).`);
    process.exit(result.status || 1);
  }
}

/** `npm ci` when node_modules is missing or older than the lock file; the Prisma client when missing. */
export function ensureInstalled() {
  const installedLock = 'node_modules/.package-lock.json';
  if (!existsSync(installedLock) || statSync('package-lock.json').mtimeMs > statSync(installedLock).mtimeMs) {
    run(npm, ['ci', '--no-audit', '--no-fund'], 'Installing dependencies (npm ci)');
  }
  // The generated client follows the schema: regenerate it when the schema changed since it was made.
  const schemaStamp = createHash('sha256').update(readFileSync('prisma/schema.prisma')).digest('hex');
  const stampFile = 'server/db/generated/.schema-stamp';
  if (!existsSync('server/db/generated/client.ts') || !existsSync(stampFile) || readFileSync(stampFile, 'utf8') !== schemaStamp) {
    run(process.execPath, ['scripts/prisma-generate.mjs'], 'Generating the Prisma client');
    writeFileSync(stampFile, schemaStamp);
  }
}

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

/** Runs `npm run build` (the console and the compiled server) unless the last build was made from the same sources. */
export function ensureBuilt() {
  const hash = createHash('sha256');
  for (const dir of ['app', 'components', 'lib', 'server', 'public']) if (existsSync(dir)) hashTree(hash, dir);
  for (const file of ['next.config.ts', 'package-lock.json', 'tsconfig.json', 'prisma/schema.prisma', 'scripts/build-server.mjs'])
    if (existsSync(file)) hash.update(readFileSync(file));
  const stamp = hash.digest('hex');
  const stampFile = '.next/source-stamp';
  if (
    !existsSync('.next/BUILD_ID') ||
    !existsSync('.build/server/main.mjs') ||
    !existsSync(stampFile) ||
    readFileSync(stampFile, 'utf8') !== stamp
  ) {
    run(npm, ['run', 'build', '--silent'], 'Building the console and the server (next build, then the server to JavaScript)');
    writeFileSync(stampFile, stamp);
  }
}
