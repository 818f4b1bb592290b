import { randomUUID, X509Certificate } from 'node:crypto';
import type { Command } from 'commander';
import { DomainError } from '../../protocol/errors';
import { sendJoin, type JoinTrust } from '../../agent/join';
import { parseIdentity, type LoadedIdentity } from '../../agent/renew/identity';
import { keepRenewing } from '../../agent/sim/renew-sim';
import { keepSessions } from '../../agent/sim/session-sim';
import { setAgentLogDefault } from '../../agent/request-log';
import { PRODUCT_VERSION } from '../../server/config/config';
import type { IssuedAnswer } from '../../agent/verify-answer';
import { prepareAttempts, runJoins, summarize } from '../../agent/sim/simulate';
import { enc } from '../client';
import { clientFor } from '../context';
import { wholeNumber } from '../options';
import { printJson } from '../output';
import { progressBar } from '../progress';
import { simulatePxe, simulatePxeWithSiteAgent } from './dev-pxe';

const count = wholeNumber(1, 10_000);
const retrySeconds = wholeNumber(1, 3600);

/** `--retry-interval`, else BETTER_COMPUTE_SIM_RETRY_SECONDS, else none (the server's retryAfterSeconds). */
function simulatedRetryInterval(option: number | undefined): number | undefined {
  const fromEnv = process.env.BETTER_COMPUTE_SIM_RETRY_SECONDS;
  if (option !== undefined || !fromEnv) return option;
  try {
    return retrySeconds(fromEnv);
  } catch (error) {
    throw new DomainError('INVALID_ARGUMENT', `BETTER_COMPUTE_SIM_RETRY_SECONDS: ${(error as Error).message}`);
  }
}

/** The server's join keys from its well-known document, for a simulation only (trust on first use). */
async function simulationTrust(serverUrl: string): Promise<JoinTrust> {
  const response = await fetch(`${serverUrl}/api/compute/.well-known/better-compute`).catch((error: Error) => {
    throw new Error(`Cannot reach ${serverUrl}: ${error.message}`);
  });
  const doc = (await response.json()) as {
    join?: { encryptionJwk: JoinTrust['encryptionJwk']; signingCertificate: string; signingKeyPin: string };
  };
  if (!doc.join) throw new DomainError('INVALID_CONFIG', 'The server publishes no join keys (run better-compute pki init on it)');
  return {
    encryptionJwk: doc.join.encryptionJwk,
    signingCertificateDer: Buffer.from(doc.join.signingCertificate, 'base64'),
    signingKeyPin: doc.join.signingKeyPin,
  };
}

export function registerDevCommands(program: Command) {
  program
    .command('dev')
    .description('Development tools: --sim N joins N simulated machines against a running server')
    .requiredOption('--sim <n>', 'how many simulated machines join (1 to 10,000)', count)
    .option('--token <token>', 'a join token with enough uses (default: create one with --tenant and --pool)')
    .option('--tenant <tenant>', 'tenant id or name, to create the token')
    .option('--pool <poolId>', 'pool id, to create the token')
    .option('--concurrency <n>', 'joins in flight at once', count, 16)
    .option('--json', 'print the summary as JSON')
    .option(
      '--renew',
      'then keep the machines renewing through the gateway until interrupted (give the server a short BETTER_COMPUTE_CERT_TTL_SECONDS)',
    )
    .option('--sessions', 'then keep a session open for each machine (renewing on it) until interrupted, as agent run does')
    .option('--pxe', 'simulate PXE-booted machines joining through the discovery attestor (needs --tenant and --site)')
    .option('--site <siteId>', 'with --pxe: the site whose boot step mints the discovery tokens')
    .option(
      '--site-agent <url>',
      'with --pxe: tell a running bcd site of the leases at this URL (its --lease-listen) instead: it mints the tokens',
    )
    .option(
      '--retry-interval <seconds>',
      'with --pxe: machines retry a pending join after this many seconds, not the server’s retryAfterSeconds (default: $BETTER_COMPUTE_SIM_RETRY_SECONDS)',
      retrySeconds,
    )
    .action(
      async (
        opts: {
          sim: number;
          token?: string;
          tenant?: string;
          pool?: string;
          site?: string;
          siteAgent?: string;
          pxe?: boolean;
          concurrency: number;
          json?: boolean;
          renew?: boolean;
          retryInterval?: number;
          sessions?: boolean;
        },
        cmd: Command,
      ) => {
        // Thousands of simulated agents: their request lines only when BETTER_COMPUTE_LOG_LEVEL asks (5xx and failures at warn).
        setAgentLogDefault('warn');
        const client = clientFor(cmd);
        const serverUrl = client.baseUrl.replace(/\/api\/compute$/, '');
        if (opts.pxe && opts.siteAgent) {
          const trust = await simulationTrust(serverUrl);
          return simulatePxeWithSiteAgent({ leaseUrl: opts.siteAgent, serverUrl, trust, count: opts.sim, json: opts.json });
        }
        if (opts.pxe) {
          if (!opts.tenant || !opts.site) throw new DomainError('INVALID_ARGUMENT', '--pxe needs --tenant and --site');
          const retryAfterSeconds = simulatedRetryInterval(opts.retryInterval);
          process.stderr.write(
            'Simulation: trusting the server’s join keys from its well-known document (never do this for a real machine).\n',
          );
          const trust = await simulationTrust(serverUrl);
          return simulatePxe({
            client,
            serverUrl,
            trust,
            tenant: opts.tenant,
            site: opts.site,
            count: opts.sim,
            json: opts.json,
            retryAfterSeconds,
          });
        }
        let token = opts.token ?? process.env.BCD_JOIN_TOKEN;
        if (!token) {
          if (!opts.tenant || !opts.pool) throw new DomainError('INVALID_ARGUMENT', 'Pass --token, or --tenant and --pool to create one');
          const tenantId = await client.tenantId(opts.tenant);
          const created = await client.post('joinTokens.create', `/v1/tenants/${enc(tenantId)}/pools/${enc(opts.pool)}/join-tokens`, {
            ttlSeconds: 3600,
            maxUses: opts.sim,
            idempotencyKey: `dev-sim-${randomUUID()}`,
          });
          token = created.token!;
          process.stderr.write(`Created join token ${created.id} with ${opts.sim} uses.\n`);
        }
        process.stderr.write(
          'Simulation: trusting the server’s join keys from its well-known document (never do this for a real machine).\n',
        );
        const trust = await simulationTrust(serverUrl);
        const preparing = progressBar('preparing', opts.sim);
        const attempts = await prepareAttempts(token, opts.sim, trust, (n) => preparing.update(n));
        preparing.done();
        if (opts.renew || opts.sessions) return simulateRenewals(serverUrl, trust, attempts, opts.concurrency, opts.sessions === true);
        const joining = progressBar('joining', opts.sim);
        const result = await runJoins({ serverUrl, trust, attempts, concurrency: opts.concurrency, onProgress: (n) => joining.update(n) });
        joining.done();
        const summary = { ...summarize(result), reasons: result.reasons };
        if (opts.json) return printJson(summary);
        process.stdout.write(
          `admitted ${summary.admitted}, refused ${summary.refused}, failed ${summary.failed}; ` +
            `p50 ${summary.p50Ms} ms, p99 ${summary.p99Ms} ms; ${summary.joinsPerSecond} joins/s over ${summary.seconds} s\n`,
        );
        for (const [reason, n] of Object.entries(result.reasons)) process.stdout.write(`  ${n} × ${reason}\n`);
      },
    );
}

/**
 * `dev --sim N --renew`: joins the machines (keeping their keys in memory), then keeps them renewing; with
 * `--sessions`, keeps a session open for each (renewing on it).
 */
async function simulateRenewals(
  serverUrl: string,
  trust: JoinTrust,
  attempts: Awaited<ReturnType<typeof prepareAttempts>>,
  concurrency: number,
  sessions: boolean,
) {
  const response = await fetch(`${serverUrl}/api/compute/.well-known/better-compute`);
  const doc = (await response.json()) as { gateway?: { url: string; serverName: string; servingCaPin: string } };
  if (!doc.gateway)
    throw new DomainError('INVALID_CONFIG', 'The server publishes no gateway (start it with npm start, or set BETTER_COMPUTE_GATEWAY_URL)');
  const machines: LoadedIdentity[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < attempts.length) {
        const attempt = attempts[next++]!;
        const answer = (await sendJoin({ serverUrl, attempt, trust })) as IssuedAnswer;
        if (answer.status === 'joined') machines.push(parseIdentity(attempt.keys.privateKeyPem, answer));
      }
    }),
  );
  const ttl = machines[0] ? Math.round((machines[0].notAfter.getTime() - Date.now()) / 1000) : 0;
  const controller = new AbortController();
  process.once('SIGINT', () => controller.abort());
  process.once('SIGTERM', () => controller.abort());
  const target = { gatewayUrl: doc.gateway.url, gatewayServerName: doc.gateway.serverName, servingCaPin: doc.gateway.servingCaPin };
  if (sessions) {
    process.stderr.write(`Joined ${machines.length} machines; keeping their sessions through ${doc.gateway.url} until interrupted…\n`);
    let shown = -1;
    const result = await keepSessions({
      machines,
      target,
      agentVersion: PRODUCT_VERSION,
      signal: controller.signal,
      signingKey: new X509Certificate(trust.signingCertificateDer).publicKey,
      onChange: (s) => {
        // One line per tenth of the fleet (or when all are in), not one per session.
        const step = Math.max(1, Math.floor(machines.length / 10));
        if (Math.floor(s.connected / step) !== shown || s.connected === machines.length) {
          shown = Math.floor(s.connected / step);
          process.stderr.write(`connected ${s.connected}/${machines.length} (opened ${s.opened}, stopped ${s.stopped})\n`);
        }
      },
    });
    process.stdout.write(`opened ${result.opened} sessions, ${result.stopped} machines stopped\n`);
    return;
  }
  process.stderr.write(
    `Joined ${machines.length} machines (certificates for about ${ttl} s); renewing through ${doc.gateway.url} until interrupted…\n`,
  );
  const stats = await keepRenewing({
    machines,
    target,
    signal: controller.signal,
    onEvent: (event, machine, s) => {
      if (event !== 'renewed' || s.renewed % 10 === 0)
        process.stderr.write(`${event} ${machine.identity.nodeId} (renewed ${s.renewed}, refused ${s.refused}, failed ${s.failed})\n`);
    },
  });
  process.stdout.write(`renewed ${stats.renewed}, refused ${stats.refused}, failed ${stats.failed}\n`);
}
