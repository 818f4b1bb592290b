// The quick start: `npm start` on a fresh clone installs dependencies, builds the console and starts the
// whole product (embedded PostgreSQL unless DATABASE_URL is set). Only Node built-ins are used here, since
// it runs before node_modules exists.

import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureBuilt, ensureInstalled } from './ensure-build.mjs';
import { usePinnedNode } from './runtime.mjs';

// The pinned Node.js (scripts/runtime.mjs), fetched once when this machine's is older.
await usePinnedNode();

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
process.chdir(root);
process.env.NEXT_TELEMETRY_DISABLED = '1';
ensureInstalled();
ensureBuilt();
ensureBcd();

/** Builds the bcd downloads once, when this version's are missing (the build prints its progress). */
function ensureBcd() {
  const { version } = JSON.parse(readFileSync('package.json', 'utf8'));
  const dir = process.env.BETTER_COMPUTE_DOWNLOADS_DIR || 'dist/bcd';
  if (existsSync(path.join(dir, version, 'SHA256SUMS'))) return;
  if (process.env.BETTER_COMPUTE_DOWNLOADS_DIR) {
    console.warn(`» No bcd ${version} in ${dir}: the install script's downloads will answer 404`);
    return;
  }
  console.log(`» Building bcd ${version} for the install script's downloads (once; npm run build:bcd)`);
  const result = spawnSync(process.execPath, ['scripts/build-bcd.mjs'], { stdio: 'inherit', env: process.env });
  // The console works without the downloads: a failed build is reported, not fatal.
  if (result.status !== 0) console.warn('» Building bcd failed; the downloads will answer 404 until npm run build:bcd succeeds');
}

// The compiled server (scripts/build-server.mjs, part of `npm run build`): no TypeScript loader at run time.
const child = spawn(process.execPath, ['.build/server/main.mjs'], { stdio: 'inherit', env: process.env });
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
