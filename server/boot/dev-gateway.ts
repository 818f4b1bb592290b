import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Db } from '../db/client';
import { X509Certificate } from 'node:crypto';
import { issueGatewayCertificate } from '../pki/issuance/gateway';
import { loadPki } from '../pki/bundle/store';
import { servingCaChainOf } from '../pki/rotation/cross-certificate';
import { trustStateOf } from '../pki/rotation/trust-state';
import { PkiSource, type PkiRuntime } from '../join/join-runtime';
import { certificatesOf } from '../gateway/peer';
import { gatewayFilesCurrent, gatewayFilesIn, readGatewayFiles, writeGatewayFiles } from '../gateway/files';

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
 * certificate for localhost and 127.0.0.1 from the serving CA in use, and every trusted node CA), and again
 * when the serving CA in use changed (a rotation was activated), the certificate nears its end, or the
 * trusted node CAs changed. Only the main process, which opens the PKI anyway, does this; the running gateway
 * then follows rotations itself (server/gateway/credentials-follower.ts).
 *
 * @param loadRuntime the PKI at run time (its serving CA in use and trust state); the stored PKI's by default.
 */
export async function ensureDevGatewayCredentials(
  db: Db,
  secret: string,
  dataDir: string,
  loadRuntime: () => Promise<PkiRuntime | null> = () => openPkiRuntimeOnce(db, secret),
): Promise<string> {
  const dir = path.join(dataDir, 'gateway');
  const files = gatewayFilesIn(dir);
  const runtime = await loadRuntime();
  // The runtime names the serving CA in use once the PKI source tracks rotations; before, the bundle's is the one.
  const bundle = runtime?.servingCa ? null : await loadPki(db, secret);
  const servingCa = runtime?.servingCa ?? bundle!.servingCa;
  const nodeCaPem = runtime
    ? trustStateOf(runtime)
        .nodeCas.map((ca) => new X509Certificate(Buffer.from(ca.certificate, 'base64')).toString())
        .join('')
    : bundle!.nodeCa.certificatePem;
  // What follows the leaf: the serving CA, or while its rotation is active the cross-certificate and the old CA.
  const servingCaChain = runtime?.servingCaChain ?? servingCaChainOf({ servingCa, rotations: bundle?.rotations });
  const stored = await readGatewayFiles(files).catch(() => null);
  if (!(await gatewayFilesCurrent(files, servingCa.certificatePem))) {
    const cert = issueGatewayCertificate({ servingCa, servingCaChain }, { sans: ['localhost', '127.0.0.1'] });
    await writeGatewayFiles(files, { chainPem: cert.chainPem, keyPem: cert.privateKeyPem, nodeCaPem });
  } else if (stored) {
    const chainPem = certificatesOf(stored.servingChainPem)[0]!.toString() + servingCaChain.join('');
    if (!sameCertificates(stored.nodeCaPem, nodeCaPem) || !sameCertificates(stored.servingChainPem, chainPem))
      await writeGatewayFiles(files, { chainPem, keyPem: stored.servingKeyPem, nodeCaPem });
  }
  return dir;
}

/** The PKI at run time, opened once; a source that follows changes (LISTEN, polling) is closed again. */
async function openPkiRuntimeOnce(db: Db, secret: string): Promise<PkiRuntime | null> {
  const source = new PkiSource(db, () => secret);
  try {
    return await source.load();
  } finally {
    await (source as { close?: () => Promise<void> | void }).close?.();
  }
}

const sameCertificates = (a: string, b: string) =>
  certificatesOf(a)
    .map((c) => c.fingerprint256)
    .join() ===
  certificatesOf(b)
    .map((c) => c.fingerprint256)
    .join();

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
