// `npm run dev`: the same start as `npm start` (embedded PostgreSQL unless DATABASE_URL is set, migrations,
// first-start bootstrap, the gateway, the agent endpoints on the fast path) with Next's development server
// in place of the production build, so a console change shows on reload without `next build`. The server's
// own TypeScript runs from source through tsx; nothing is compiled to .build/. Only Node built-ins here,
// since it runs before node_modules may exist.

import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureInstalled } from './ensure-build.mjs';
import { usePinnedNode } from './runtime.mjs';

// The pinned Node.js (scripts/runtime.mjs), fetched once when this machine's is older.
await usePinnedNode();

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
process.chdir(root);
process.env.NEXT_TELEMETRY_DISABLED = '1';
ensureInstalled();

const child = spawn(process.execPath, ['--import', 'tsx', 'server/boot/main.ts', '--dev'], { stdio: 'inherit', env: process.env });
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
