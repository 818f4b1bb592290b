/**
 * The gateway process (`better-compute gateway`, and the child `npm start` runs beside the API). It reads
 * only its own credentials: BETTER_COMPUTE_GATEWAY_DIR (chain.pem, key.pem, node-ca.pem), and relays to
 * BETTER_COMPUTE_GATEWAY_API_URL. It never opens the PKI bundle: it follows a trust rotation by asking the
 * API (credentials-follower.ts), serves what it gets from the next handshake on, and writes it back to its
 * directory.
 */
import { BASE_PATH } from '../config/config';
import { createGateway } from './gateway';
import { gatewayFilesIn, readGatewayFiles, writeGatewayFiles } from './files';
import { CredentialsFollower } from './credentials-follower';
import { gatewayLimitsFromEnv } from './limits';
import { requestLimitSettings } from '../http/request-limit-settings';

export async function runGateway(options: {
  dir: string;
  port: number;
  apiUrl: string;
  host?: string;
  /** How often it asks the API for its credentials (CREDENTIALS_POLL_MS). */
  credentialsPollMs?: number;
}): Promise<() => Promise<void>> {
  const limits = gatewayLimitsFromEnv();
  const files = gatewayFilesIn(options.dir);
  const credentials = await readGatewayFiles(files);
  const wellKnownPerAddress = requestLimitSettings().wellKnown.perAddress;
  const server = createGateway({ ...credentials, apiUrl: options.apiUrl, basePath: BASE_PATH, limits, wellKnownPerAddress });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    // BETTER_COMPUTE_GATEWAY_HOST: `::` for IPv6 and IPv4, `::1` for the IPv6 loopback; IPv4 only by default.
    server.listen(options.port, options.host ?? (process.env.BETTER_COMPUTE_GATEWAY_HOST || '0.0.0.0'), () => resolve());
  });
  process.stdout.write(`Gateway listening on https://localhost:${options.port}${BASE_PATH} (relaying to ${options.apiUrl})\n`);
  // Registers its lease before the first Hello, and renews it until stopped.
  void server.sessions.start();
  const follower = new CredentialsFollower({
    post: (pathname, body) => server.relay.call(pathname, body, null),
    basePath: BASE_PATH,
    current: () => server.credentials(),
    apply: (next) => server.updateCredentials(next),
    save: (next) => writeGatewayFiles(files, { chainPem: next.servingChainPem, keyPem: next.servingKeyPem, nodeCaPem: next.nodeCaPem }),
    log: (line) => process.stdout.write(`${line}\n`),
    pollMs: options.credentialsPollMs,
  });
  follower.start();
  // A client certificate of a node CA the gateway does not know yet: ask the API now rather than in 3 s.
  server.onUnknownNodeCa(() => follower.pollAgain());
  // Ends the sessions (their agents reconnect) and closes every connection: a held stream would keep close() waiting.
  return () => {
    follower.stop();
    return server.shutdown();
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const dir = process.env.BETTER_COMPUTE_GATEWAY_DIR;
  const apiUrl = process.env.BETTER_COMPUTE_GATEWAY_API_URL;
  if (!dir || !apiUrl) {
    process.stderr.write('Set BETTER_COMPUTE_GATEWAY_DIR and BETTER_COMPUTE_GATEWAY_API_URL\n');
    process.exit(2);
  }
  const port = Number(process.env.BETTER_COMPUTE_GATEWAY_PORT || 8443);
  runGateway({ dir, port, apiUrl }).then(
    (stop) => {
      for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => void stop().then(() => process.exit(0)));
      // Started by a server (npm start) over IPC: when that server dies, however, the channel closes; stop too.
      // Open connections (sessions) do not hold it up for long.
      if (process.send) {
        process.once('disconnect', () => {
          setTimeout(() => process.exit(0), 5000).unref();
          void stop().then(() => process.exit(0));
        });
      }
    },
    (error: Error) => {
      process.stderr.write(`The gateway could not start: ${error.message}\n`);
      process.exit(1);
    },
  );
}
