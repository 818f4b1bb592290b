// Generates the Prisma client after install. The schema engine cannot be downloaded everywhere, and
// `prisma generate` only needs PRISMA_SCHEMA_ENGINE_BINARY to name an existing file, so point it at node.
// An installed release (npm pack) has the client compiled into .build/server and ships no schema: nothing to do.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';

if (!existsSync('prisma/schema.prisma')) process.exit(0);

const env = { ...process.env, PRISMA_HIDE_UPDATE_MESSAGE: '1', CHECKPOINT_DISABLE: '1' };
env.PRISMA_SCHEMA_ENGINE_BINARY ||= process.execPath;
// Generators named by their command (prisma-kysely) are found in node_modules/.bin, as under `npx prisma`.
env.PATH = `${path.resolve('node_modules/.bin')}${path.delimiter}${env.PATH ?? ''}`;
const result = spawnSync(process.execPath, ['node_modules/prisma/build/index.js', 'generate'], { stdio: 'inherit', env });
process.exit(result.status ?? 1);
