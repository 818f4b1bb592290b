import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Db } from '../db/client';
import { issueGatewayCertificate } from '../pki/issuance/gateway';
import { loadPki } from '../pki/bundle/store';
import { gatewayFilesCurrent, gatewayFilesIn, writeGatewayFiles } from '../gateway/files';

const PROJECT_ROOT = fileURLToPath(new URL('../..', import.meta.url));
// The compiled server (.build/server, scripts/build-server.mjs) has the gateway compiled beside it; from the
// TypeScript sources it runs through tsx.
const COMPILED_GATEWAY = fileURLToPath(new URL('./gateway.mjs', import.meta.url));
const gatewayEntry = (): string[] =>
  import.meta.url.endsWith('.mjs') && existsSync(COMPILED_GATEWAY)
    ? [COMPILED_GATEWAY]
    : ['--import', 'tsx', path.join(PROJECT_ROOT, 'server/gateway/main.ts')];

/**
 * Makes the development gateway's credentials under `<dataDir>/gateway` on the first start (a serving
 * certificate for localhost and 127.0.0.1 from the development PKI), and again when the serving CA changed
 * or the certificate nears its end. Only the main process, which opens the PKI anyway, does this.
 */
export async function ensureDevGatewayCredentials(db: Db, secret: string, dataDir: string): Promise<string> {
  const dir = path.join(dataDir, 'gateway');
  const files = gatewayFilesIn(dir);
  const bundle = await loadPki(db, secret);
  if (!(await gatewayFilesCurrent(files, bundle.servingCa.certificatePem))) {
    const cert = issueGatewayCertificate(bundle, { sans: ['localhost', '127.0.0.1'] });
    await writeGatewayFiles(files, { chainPem: cert.chainPem, keyPem: cert.privateKeyPem, nodeCaPem: bundle.nodeCa.certificatePem });
  }
  return dir;
}

/** Starts the gateway as its own process; restarts it after a crash (a second later), until stopped. */
export function startGatewayProcess(options: {
  dir: string;
  port: number;
  apiUrl: string;
  say: (line: string) => void;
}): () => Promise<void> {
  let child: ChildProcess | undefined;
  let stopping = false;
  const start = () => {
    child = spawn(process.execPath, gatewayEntry(), {
      cwd: PROJECT_ROOT,
      // The IPC channel is how the gateway learns that this process died (even by SIGKILL): it closes, and the
      // gateway exits instead of holding its port against the next start.
      stdio: ['inherit', 'inherit', 'inherit', 'ipc'],
      env: {
        ...process.env,
        BETTER_COMPUTE_GATEWAY_DIR: options.dir,
        BETTER_COMPUTE_GATEWAY_PORT: String(options.port),
        BETTER_COMPUTE_GATEWAY_API_URL: options.apiUrl,
      },
    });
    child.on('exit', (code) => {
      if (stopping) return;
      options.say(`The gateway exited (${code}); restarting it`);
      setTimeout(start, 1000).unref();
    });
  };
  start();
  return async () => {
    stopping = true;
    if (!child || child.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      child!.once('exit', () => resolve());
      child!.kill('SIGTERM');
    });
  };
}
