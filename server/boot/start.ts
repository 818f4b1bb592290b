/**
 * The start of a server process, for `npm start` and `npm run dev` (server/boot/main.ts) and the tests'
 * server processes (test/server-main.ts) alike: starts the embedded PostgreSQL when DATABASE_URL is unset,
 * applies migrations, brings a fresh database to a usable state, then serves the console, the APIs and the
 * agent endpoints on PORT (3000 by default). SIGINT/SIGTERM stop the server and the database.
 */
import { startEmbeddedDatabase, type EmbeddedDatabase } from '../db/embedded';
import { migrate } from '../db/migrate';
import { createDb } from '../db/client';
import { bootstrapFirstStart } from './bootstrap';
import { dataDirectory, localSecret } from './data-dir';
import cluster from 'node:cluster';
import type { AddressInfo } from 'node:net';
import { startHttpServer, type NodeHandler } from './http-server';
import type { Services } from './services';
import { checkPortFree, runWorker, startWorkers, tellWorkersStopping, workerCount } from './workers';
import { checkSecret, checkStartupConfig } from './startup-config';
import { upgradeStoredPki } from '../pki/bundle/upgrade';
import { resealWebhookSecrets } from '../webhooks/reseal';
import { ensureDevGatewayCredentials, startGatewayProcess } from './dev-gateway';
import { markStopping } from '../log';

const say = (line: string) => process.stdout.write(line + '\n');

interface ServerProcessOptions {
  /** Next's development server instead of the production build (one process, never node:cluster workers). */
  dev?: boolean;
  /**
   * What serves the console's routes instead of Next (the tests' server processes, which have no build):
   * the rest (agent endpoints, refusals, headers, timeouts) is the boot server's as in production.
   */
  console?: (services: Services) => NodeHandler;
  /** PORT 0 takes a free port (the tests); production needs a real one. */
  allowAnyPort?: boolean;
  /** The trust domain of a PKI created on the first start. */
  defaultTrustDomain?: string;
  /** Where the embedded PostgreSQL's log and notices go (the tests read them); notices to stdout, the log nowhere, by default. */
  embeddedLog?: (line: string) => void;
  /** Called once the server listens, with the port it took. */
  onListening?: (port: number) => void;
}

/** Runs this process as the primary (the whole start) or, under node:cluster, as one of its server workers. */
export function runServerProcess(options: ServerProcessOptions = {}) {
  if (cluster.isWorker) void runWorker(options.console);
  else void main(options);
}

async function main(options: ServerProcessOptions) {
  const dev = options.dev ?? false;
  const dataDir = dataDirectory();
  const port = Number(process.env.PORT || 3000);
  if (!Number.isInteger(port) || port < (options.allowAnyPort ? 0 : 1) || port > 65535)
    throw new Error(`PORT must be a port number, not ${process.env.PORT}`);

  let embedded: Promise<EmbeddedDatabase> | undefined;
  let shuttingDown = false;
  let stopHttp: (() => Promise<void>) | undefined;
  let stopGateway: (() => Promise<void>) | undefined;
  const shutdown = async (code: number) => {
    if (shuttingDown) return;
    shuttingDown = true;
    markStopping();
    tellWorkersStopping();
    say('Stopping…');
    await stopGateway?.().catch(() => {});
    await stopHttp?.().catch(() => {});
    // A stop during start-up waits for PostgreSQL to be up, so it is never left running.
    await embedded?.then((db) => db.stop()).catch(() => {});
    process.exit(code);
  };
  process.on('SIGINT', () => void shutdown(0));
  process.on('SIGTERM', () => void shutdown(0));

  try {
    // Settings that would only fail on the first request fail here, before anything is created.
    checkStartupConfig();
    // A taken port fails before the first start creates the admin whose password is printed once.
    await checkPortFree(port);
    if (!process.env.DATABASE_URL) {
      say(`Starting the embedded PostgreSQL under ${dataDir}/postgres …`);
      embedded = startEmbeddedDatabase(dataDir, options.embeddedLog && { notice: options.embeddedLog, log: options.embeddedLog });
      process.env.DATABASE_URL = (await embedded).url;
    }
    const { applied } = await migrate(process.env.DATABASE_URL!, { log: (l) => say(l) });
    say(applied.length ? `Applied ${applied.length} migration(s).` : 'The database schema is up to date.');

    let secret = process.env.BETTER_COMPUTE_SECRET;
    if (!secret) {
      const local = await localSecret(dataDir, 'secret');
      secret = local.value;
      // Generated secrets always pass; one edited by hand may not (the error says how to move to a new one).
      checkSecret(secret, `The development secret in ${dataDir}/secret`);
      process.env.BETTER_COMPUTE_SECRET = secret;
      say(
        `WARNING: BETTER_COMPUTE_SECRET is not set; using the development secret kept in ${dataDir}/secret. Production must set its own.`,
      );
    }
    process.env.NEXTAUTH_SECRET ||= (await localSecret(dataDir, 'nextauth-secret')).value;
    // A free port taken at listen (the tests) is not known yet: the console's URL then stays unset.
    if (port !== 0) process.env.NEXTAUTH_URL ||= `http://localhost:${port}`;

    const db = createDb(process.env.DATABASE_URL!);
    const first = await bootstrapFirstStart(db, {
      secret,
      trustDomain: process.env.BETTER_COMPUTE_TRUST_DOMAIN || options.defaultTrustDomain || 'dev.better-compute.local',
    });
    if (first.createdPki) say('Created a development PKI (better-compute pki show prints its pins).');
    // A secret that cannot open the stored PKI would leave every join INVALID_CONFIG: refuse to start. A bundle
    // from an older release is brought up to date here, before any worker loads it (see upgradeStoredPki).
    const previousSecret = process.env.BETTER_COMPUTE_PREVIOUS_SECRET || undefined;
    const upgrade = await upgradeStoredPki(db, { secret, previousSecret });
    if (upgrade.rotatedSigningCertificate)
      say('Replaced the JoinService signing certificate with a self-signed one for the same key (the pins are unchanged).');
    if (upgrade.changedSecret) say('Re-sealed the PKI bundle under the new BETTER_COMPUTE_SECRET.');
    else if (upgrade.resealed) say('Re-sealed the PKI bundle with the current key derivation (scrypt N=2^17).');
    // Webhook signing secrets sealed under the previous secret move to the current one (same plaintext, so
    // receivers keep theirs); a failure stops the start, so a start that got this far left none behind.
    if (previousSecret && previousSecret !== secret) {
      const webhooks = await resealWebhookSecrets(db, { secret, previousSecret });
      say(
        `Webhook signing secrets: re-sealed ${webhooks.resealed} under the new BETTER_COMPUTE_SECRET, ${webhooks.current} already under it.`,
      );
      for (const id of webhooks.unreadable)
        say(
          `WARNING: webhook subscription ${id}: its signing secret opens under neither BETTER_COMPUTE_SECRET nor BETTER_COMPUTE_PREVIOUS_SECRET; left as is (its deliveries fail until \`better-compute webhooks update ${id} --rotate-secret\`).`,
        );
      say('BETTER_COMPUTE_PREVIOUS_SECRET is no longer needed: unset it (give every instance the new secret).');
    }

    // The gateway (BETTER_COMPUTE_GATEWAY_PORT, 8443; 0 turns it off) runs as its own process with only its
    // own credentials; the well-known document publishes it, so the URL is set before the workers start.
    const gatewayPort = Number(process.env.BETTER_COMPUTE_GATEWAY_PORT ?? 8443);
    if (!Number.isInteger(gatewayPort) || gatewayPort < 0 || gatewayPort > 65535 || (gatewayPort > 0 && gatewayPort === port)) {
      throw new Error(
        `BETTER_COMPUTE_GATEWAY_PORT must be a port number other than PORT, or 0 to turn the gateway off, not ${process.env.BETTER_COMPUTE_GATEWAY_PORT}`,
      );
    }
    const gatewayDir = gatewayPort > 0 ? await ensureDevGatewayCredentials(db, secret, dataDir) : null;
    if (gatewayDir) process.env.BETTER_COMPUTE_GATEWAY_URL ||= `https://localhost:${gatewayPort}`;

    const workers = dev ? 1 : workerCount();
    let listening = port;
    if (workers > 1) {
      stopHttp = await startWorkers(port, workers, say);
    } else {
      const started = await startHttpServer({ port, databaseUrl: process.env.DATABASE_URL!, db, dev, console: options.console });
      stopHttp = started.stop;
      listening = (started.server.address() as AddressInfo).port;
    }
    options.onListening?.(listening);
    if (gatewayDir) stopGateway = startGatewayProcess({ dir: gatewayDir, port: gatewayPort, apiUrl: `http://127.0.0.1:${port}`, say });
    say('');
    say(
      `Better Compute is running${dev ? ' (development server: pages compile on first visit)' : ''}: console at http://localhost:${port}/`,
    );
    say(`API at http://localhost:${port}/api/compute (OpenAPI: /api/compute/openapi.json, tRPC: /api/trpc)`);
    if (gatewayDir) say(`Gateway for agents (mutual TLS) at https://localhost:${gatewayPort}; its serving CA pin: better-compute pki show`);
    if (first.firstAdmin) {
      say(`Sign in as ${first.firstAdmin.email} with the one-time password: ${first.firstAdmin.password}`);
      say('It is shown only this once.');
    } else {
      say('Sign in with your operator account.');
    }
  } catch (error) {
    process.stderr.write(`Could not start: ${error instanceof Error ? error.message : String(error)}\n`);
    await shutdown(1);
  }
}
