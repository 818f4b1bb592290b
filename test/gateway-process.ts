import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ensureDevGatewayCredentials, startGatewayProcess } from '../server/boot/dev-gateway';
import type { Db } from '../server/db/client';

/** A free TCP port on 127.0.0.1, for a gateway whose URL the server must publish before the gateway starts. */
export const reservePort = () =>
  new Promise<number>((resolve) => {
    const probe = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
  });

async function waitForPort(port: number, timeoutMs = 60_000) {
  for (const start = Date.now(); Date.now() - start < timeoutMs; await new Promise((r) => setTimeout(r, 200))) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, '127.0.0.1', () => {
        socket.destroy();
        resolve(true);
      });
      socket.on('error', () => resolve(false));
    });
    if (open) return;
  }
  throw new Error(`the gateway did not listen on ${port} within ${timeoutMs / 1000} s`);
}

/**
 * The gateway as `npm start` runs it (server/boot/dev-gateway.ts): its own process, with a serving certificate
 * for localhost and 127.0.0.1 that the main process issued from the PKI in `db`, relaying to `apiUrl`.
 * Resolves once it accepts connections on `port`; `url` is https://127.0.0.1:<port>.
 */
export async function startTestGateway(options: { db: Db; secret: string; port: number; apiUrl: string }): Promise<{ url: string; stop(): Promise<void> }> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'bc-gateway-'));
  const dir = await ensureDevGatewayCredentials(options.db, options.secret, dataDir);
  const stop = startGatewayProcess({ dir, port: options.port, apiUrl: options.apiUrl, say: () => {} });
  await waitForPort(options.port);
  return {
    url: `https://127.0.0.1:${options.port}`,
    async stop() {
      await stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
