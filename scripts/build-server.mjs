// `npm run build` (after `next build`): the server's TypeScript compiled to JavaScript, so production runs
// plain `node .build/server/main.mjs` instead of loading `tsx` (which transpiles at load and keeps esbuild
// service processes alive).
//
// Bundles of our own code, npm packages left external (they are installed beside it):
//   .build/server/main.mjs            from server/boot/main.ts (also what node:cluster workers run)
//   .build/server/prepare-worker.mjs  from server/join/prepare-worker.ts (the join preparation threads)
//   .build/server/gateway.mjs         from server/gateway/main.ts (the gateway process npm start runs)
//   .build/server/cli.mjs             from cli/main.ts (the CLI of an installed release, which has no sources)
// They sit two folders below the project root, like server/boot/main.ts, so every path the server resolves
// from `import.meta.url` (the migrations, the project root, the thread entry) resolves the same way.
import { build } from 'esbuild';
import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const SERVER_BUILD_DIR = path.join(root, '.build', 'server');

export async function buildServer() {
  const staging = `${SERVER_BUILD_DIR}.tmp-${process.pid}`;
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  try {
    await build({
      absWorkingDir: root,
      entryPoints: {
        main: 'server/boot/main.ts',
        'prepare-worker': 'server/join/prepare-worker.ts',
        gateway: 'server/gateway/main.ts',
        cli: 'cli/main.ts',
      },
      outdir: staging,
      outExtension: { '.js': '.mjs' },
      bundle: true,
      packages: 'external',
      platform: 'node',
      format: 'esm',
      target: 'node24',
      sourcemap: 'linked',
      logLevel: 'warning',
      tsconfig: path.join(root, 'tsconfig.json'),
    });
    writeFileSync(path.join(staging, 'package.json'), '{ "type": "module" }\n');
    // Replaced whole, so a failed build never leaves a mix of old and new files behind.
    rmSync(SERVER_BUILD_DIR, { recursive: true, force: true });
    renameSync(staging, SERVER_BUILD_DIR);
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await buildServer();
  process.stdout.write(`Built the server into ${path.relative(root, SERVER_BUILD_DIR)}/\n`);
}
