// `npm run bench:join`: builds the console if needed (the benchmark runs the production server), then runs
// bench/join.ts with the arguments given after `--`.
import { spawn } from 'node:child_process';
import { ensureBuilt, ensureInstalled } from './ensure-build.mjs';
import { usePinnedNode } from './runtime.mjs';

// The pinned Node.js (scripts/runtime.mjs), fetched once when this machine's is older.
await usePinnedNode();

process.env.NEXT_TELEMETRY_DISABLED = '1';
ensureInstalled();
ensureBuilt();
const child = spawn(process.execPath, ['--import', 'tsx', 'bench/join.ts', ...process.argv.slice(2)], { stdio: 'inherit' });
child.on('exit', (code) => process.exit(code ?? 1));
