// The quick start: `npm start` on a fresh clone installs dependencies, builds the console and starts the
// whole product (embedded PostgreSQL unless DATABASE_URL is set). Only Node built-ins are used here, since
// it runs before node_modules exists.

import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureBuilt, ensureInstalled } from './ensure-build.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
process.chdir(root);
process.env.NEXT_TELEMETRY_DISABLED = '1';
ensureInstalled();
ensureBuilt();

// The compiled server (scripts/build-server.mjs, part of `npm run build`): no TypeScript loader at run time.
const child = spawn(process.execPath, ['.build/server/main.mjs'], { stdio: 'inherit', env: process.env });
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
