// `npm run setup`: installs the dependencies on the pinned Node.js (fetched once when this machine's is older,
// scripts/runtime.mjs) and generates the Prisma client; what `npm start` does before it builds. Only Node
// built-ins, since it runs before node_modules exists.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureInstalled } from './ensure-build.mjs';
import { usePinnedNode } from './runtime.mjs';

process.chdir(path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..'));
await usePinnedNode();
ensureInstalled();
