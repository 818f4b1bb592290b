import type { Command } from 'commander';
import { readLinuxClaims } from '../../agent/claims-linux';
import { joinWithToken } from '../../agent/join';
import { doctorChecks, runRenewalLoop } from '../../agent/renew/loop';
import { runSessionLoop } from '../../agent/session/loop';
import { sessionCheck } from '../../agent/session/state-file';
import { setAgentLogDefault } from '../../agent/request-log';
import { PRODUCT_VERSION } from '../../server/config/config';
import { DomainError } from '../../protocol/errors';
import { exitWhenFlushed } from '../exit';
import { resolveJoinTrust } from '../../agent/join';
import { RENEWAL_EXIT } from '../../agent/renew/loop';
import { rejoinExpiredIdentity, runWithX509popRejoin } from '../../agent/x509pop';
import { pinnedFetch } from '../../agent/bcd/pinned-fetch';
import { readStoredIdentity } from '../../agent/bcd/read-identity';
import { joinWithTpm, TpmJoinRefused } from '../../agent/tpm/tpm-join-flow';
import { TrustStore } from '../../agent/trust/store';
import { trustCheck } from '../../agent/trust/doctor';
import type { InstallPins } from '../../agent/trust/trust-set';

const DEFAULT_IDENTITY_DIR = process.env.BETTER_COMPUTE_AGENT_DIR || '/var/lib/better-compute/agent';

interface GatewayOpts {
  identityDir: string;
  gatewayUrl?: string;
  servingCaPin?: string;
  gatewayServerName?: string;
}

/** The gateway and its pin, from the options or the environment; both are required to renew. */
function gatewayOptions(opts: GatewayOpts) {
  const gatewayUrl = opts.gatewayUrl ?? process.env.BETTER_COMPUTE_GATEWAY_URL;
  const servingCaPin = opts.servingCaPin ?? process.env.BETTER_COMPUTE_SERVING_CA_PIN;
  if (!gatewayUrl)
    throw new DomainError('INVALID_ARGUMENT', 'Name the gateway with --gateway-url or BETTER_COMPUTE_GATEWAY_URL', { field: 'gatewayUrl' });
  if (!servingCaPin)
    throw new DomainError('INVALID_ARGUMENT', 'Pin the serving CA with --serving-ca-pin or BETTER_COMPUTE_SERVING_CA_PIN', {
      field: 'servingCaPin',
    });
  return {
    identityDir: opts.identityDir,
    gatewayUrl,
    servingCaPin,
    gatewayServerName: opts.gatewayServerName ?? process.env.BETTER_COMPUTE_GATEWAY_SERVER_NAME,
  };
}

const withGateway = (command: Command) =>
  command
    .option('--identity-dir <dir>', 'where node.key, identity.json and trust.json (the trust set held) live', DEFAULT_IDENTITY_DIR)
    .option('--gateway-url <url>', 'the gateway, e.g. https://localhost:8443 (default: $BETTER_COMPUTE_GATEWAY_URL)')
    .option('--serving-ca-pin <pin>', "the serving CA's pin, sha256/… (default: $BETTER_COMPUTE_SERVING_CA_PIN)")
    .option('--gateway-server-name <name>', "the name the gateway's certificate must carry (default: the URL's host)");

interface AgentJoinOpts {
  identityDir: string;
  joinSigningKeyPin?: string;
  joinEncryptionKeyPin?: string;
  attestor: string;
  site?: string;
  pool?: string;
  tpm?: string;
  wait: boolean;
  reset?: boolean;
  yes?: boolean;
}

/**
 * `agent join --attestor tpm`: the same tokenless join as `bcd join --attestor tpm` (agent/tpm/tpm-join-flow.ts),
 * standard input unread. Waits for an operator unless --no-wait (then exit 3, and the next run resumes the same
 * request); the uniform refusal is ACCESS_DENIED.
 */
async function agentTpmJoin(opts: AgentJoinOpts, serverUrl: string, pins: { joinSigningKeyPin: string; joinEncryptionKeyPin: string }) {
  if (!opts.site) throw new DomainError('INVALID_ARGUMENT', 'A tpm join names its site: --site SITE', { field: 'site' });
  if (!opts.reset && (await readStoredIdentity(opts.identityDir).catch(() => true)))
    throw new DomainError('INVALID_STATE', `${opts.identityDir} already holds an identity; join again with --reset --yes`);
  // trust.json beside identity.json, as a token join keeps it: the answer's trust set is stored there.
  const store = await TrustStore.open({ dir: opts.identityDir, install: pins });
  const trust = await resolveJoinTrust({ serverUrl, pins, trust: store });
  const say = (line: string) => void process.stdout.write(`${line}\n`);
  let outcome: Awaited<ReturnType<typeof joinWithTpm>>;
  try {
    outcome = await joinWithTpm({
      serverUrl,
      trust,
      claims: await readLinuxClaims(),
      target: { siteId: opts.site, ...(opts.pool ? { poolId: opts.pool } : {}) },
      identityDir: opts.identityDir,
      tpmAddress: opts.tpm ?? process.env.BCD_TPM,
      reset: opts.reset,
      wait: opts.wait,
      onPending: (wait) =>
        say(
          `Waiting for approval (join request ${wait.requestId}); give an operator the EK hash ${wait.ekHash}` +
            (opts.wait ? `; retrying every ${wait.retryAfterSeconds}s` : '; run the same command again to resume it'),
        ),
      log: (line) => void process.stderr.write(`${line}\n`),
    });
  } catch (error) {
    if (error instanceof TpmJoinRefused)
      throw new DomainError('ACCESS_DENIED', `${error.message} (the server gives every refusal this answer)`);
    throw error;
  }
  if (outcome.status === 'pending') return exitWhenFlushed(3);
  // The answer verified under a trusted key: its trust set is stored as a trust event's would be.
  if (outcome.answer.trust !== undefined) await store.acceptAnswerTrust(outcome.answer.trust, outcome.answer, 'join answer');
  say(`Joined as node ${outcome.answer.nodeId} (site ${outcome.answer.siteId}, role ${outcome.answer.role}); its key is held by the TPM`);
}

/** `agent doctor`'s checks (and a `bcd.doctor` command's answer under `agent run`). */
async function agentDoctorChecks(gateway: ReturnType<typeof gatewayOptions>, install: InstallPins) {
  // The gateway is checked under the serving CA pins the agent holds (trust.json), as agent run connects.
  const trust = await TrustStore.open({ dir: gateway.identityDir, install, log: () => {} });
  return [
    ...(await doctorChecks({ ...gateway, trust })),
    await trustCheck(gateway.identityDir, install),
    await sessionCheck(gateway.identityDir),
  ];
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8').trim();
}

export function registerAgentCommands(program: Command) {
  const agent = program.command('agent').description('The agent: join this machine, keep its identity fresh, check it');
  // The agent's request lines at `info` unless BETTER_COMPUTE_LOG_LEVEL says otherwise (`dev --sim` keeps `warn`).
  agent.hook('preAction', () => setAgentLogDefault('info'));
  agent
    .command('join')
    .description('Join this machine with a join token read from standard input, or with --attestor tpm and no token')
    .option('--identity-dir <dir>', 'where node.key, identity.json and trust.json are written', DEFAULT_IDENTITY_DIR)
    .option('--join-signing-key-pin <pin>', 'join_signing_key_pin (default: $BETTER_COMPUTE_JOIN_SIGNING_KEY_PIN)')
    .option('--join-encryption-key-pin <pin>', 'join_encryption_key_pin (default: $BETTER_COMPUTE_JOIN_ENCRYPTION_KEY_PIN)')
    .option('--attestor <name>', 'join-token (the token on standard input) or tpm (no token: the TPM attests this machine)', 'join-token')
    .option('--site <site>', 'with --attestor tpm: the site to join')
    .option('--pool <pool>', 'with --attestor tpm: the pool to land in (else the operator who approves picks one)')
    .option('--tpm <address>', 'with --attestor tpm: the TPM, a device or swtpm:HOST:PORT (default: $BCD_TPM, else /dev/tpmrm0)')
    .option('--no-wait', 'with --attestor tpm: when the join must wait for approval, exit at once (3) instead of retrying')
    .option('--reset', 'move the existing identity aside (<name>.reset-<UTC time>) and join again')
    .option('--yes', 'confirm --reset')
    .action(async (opts: AgentJoinOpts, cmd: Command) => {
      if (opts.reset && !opts.yes)
        throw new DomainError('INVALID_ARGUMENT', "--reset replaces this machine's identity; confirm with --yes", { field: 'yes' });
      if (opts.attestor !== 'join-token' && opts.attestor !== 'tpm')
        throw new DomainError('INVALID_ARGUMENT', `--attestor is join-token or tpm, not ${opts.attestor}`, { field: 'attestor' });
      const serverUrl = (cmd.optsWithGlobals() as { server?: string }).server ?? process.env.BETTER_COMPUTE_URL;
      const joinSigningKeyPin = opts.joinSigningKeyPin ?? process.env.BETTER_COMPUTE_JOIN_SIGNING_KEY_PIN;
      const joinEncryptionKeyPin = opts.joinEncryptionKeyPin ?? process.env.BETTER_COMPUTE_JOIN_ENCRYPTION_KEY_PIN;
      if (!serverUrl) throw new DomainError('INVALID_ARGUMENT', 'Name the server with --server or BETTER_COMPUTE_URL', { field: 'server' });
      if (!joinSigningKeyPin || !joinEncryptionKeyPin)
        throw new DomainError('INVALID_ARGUMENT', 'Pass both join pins (better-compute pki show prints them)', { field: 'pins' });
      const server = serverUrl.replace(/\/+$/, '');
      if (opts.attestor === 'tpm') return agentTpmJoin(opts, server, { joinSigningKeyPin, joinEncryptionKeyPin });
      if (opts.site || opts.pool || opts.tpm || !opts.wait)
        throw new DomainError('INVALID_ARGUMENT', '--site, --pool, --tpm and --no-wait are for --attestor tpm; a token names its pool', {
          field: 'attestor',
        });
      const token = await readStdin();
      if (!token) throw new DomainError('INVALID_ARGUMENT', 'Pass the join token on standard input', { field: 'token' });
      const answer = await joinWithToken({
        serverUrl: server,
        token,
        claims: await readLinuxClaims(),
        pins: { joinSigningKeyPin, joinEncryptionKeyPin },
        identityDir: opts.identityDir,
        reset: opts.reset,
      });
      if (answer.status === 'pending')
        process.stdout.write(`Waiting for approval (join request ${answer.requestId}); run the same command again later\n`);
      else process.stdout.write(`Joined as node ${answer.nodeId} (site ${answer.siteId}, role ${answer.role})\n`);
    });
  withGateway(
    agent
      .command('run')
      .description("Keep this machine's session open and its identity fresh: renew on the session at about 60% of its lifetime"),
  )
    .option('--once', 'renew once now (on a connection of its own) and exit')
    .option(
      '--join-signing-key-pin <pin>',
      "join_signing_key_pin: verify every session's welcome under that key; with the encryption pin, re-join with x509pop when the certificate expired less than 7 days ago (default: $BETTER_COMPUTE_JOIN_SIGNING_KEY_PIN)",
    )
    .option(
      '--join-encryption-key-pin <pin>',
      'join_encryption_key_pin, for an x509pop re-join (default: $BETTER_COMPUTE_JOIN_ENCRYPTION_KEY_PIN)',
    )
    .action(async (opts: GatewayOpts & { once?: boolean; joinSigningKeyPin?: string; joinEncryptionKeyPin?: string }) => {
      const controller = new AbortController();
      for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => controller.abort());
      const log = (line: string) => void process.stderr.write(line + '\n');
      const joinSigningKeyPin = opts.joinSigningKeyPin ?? process.env.BETTER_COMPUTE_JOIN_SIGNING_KEY_PIN;
      const joinEncryptionKeyPin = opts.joinEncryptionKeyPin ?? process.env.BETTER_COMPUTE_JOIN_ENCRYPTION_KEY_PIN;
      const gateway = gatewayOptions(opts);
      // trust.json beside identity.json: the set of protocol.md "Trust rotation", or these pins at version 0.
      const install = { servingCaPin: gateway.servingCaPin, joinSigningKeyPin, joinEncryptionKeyPin };
      const trust = await TrustStore.open({ dir: opts.identityDir, install, log });
      const options = { ...gateway, trust, signal: controller.signal, log };
      const run = () =>
        opts.once
          ? runRenewalLoop({ ...options, once: true })
          : runSessionLoop({
              ...options,
              joinSigningKeyPin,
              agentVersion: PRODUCT_VERSION,
              writeState: true,
              // Every kind of protocol 1; bcd.doctor answers agent doctor's checks.
              commands: {
                doctor: async () => {
                  const checks = await agentDoctorChecks(gateway, install);
                  return { version: PRODUCT_VERSION, ok: checks.every((c) => c.ok), checks };
                },
              },
            });
      if (!joinSigningKeyPin || !joinEncryptionKeyPin) return exitWhenFlushed(await run());
      // With both join pins, an expired identity re-joins with x509pop through the pinned gateway first.
      const rejoin = async () => {
        const serverUrl = options.gatewayUrl.replace(/\/+$/, '');
        const doFetch = serverUrl.startsWith('https://') ? pinnedFetch({ servingCaPin: options.servingCaPin, trust }) : undefined;
        const keys = await resolveJoinTrust({ serverUrl, pins: { joinSigningKeyPin, joinEncryptionKeyPin }, fetch: doFetch, trust });
        const answer = await rejoinExpiredIdentity({
          serverUrl,
          trust: keys,
          identityDir: opts.identityDir,
          claims: await readLinuxClaims(),
          fetch: doFetch,
        });
        // Verified under a trusted key: its trust set is stored as a trust event's would be.
        if (answer?.trust !== undefined) await trust.acceptAnswerTrust(answer.trust, answer, 'x509pop re-join answer');
        return answer;
      };
      await exitWhenFlushed(
        await runWithX509popRejoin({ identityDir: opts.identityDir, run, rejoin, expiredExit: RENEWAL_EXIT.expired, log }),
      );
    });
  withGateway(
    agent.command('doctor').description('Check the identity, its expiry, the gateway and the session; one line per check'),
  ).action(async (opts: GatewayOpts) => {
    const gateway = gatewayOptions(opts);
    const checks = await agentDoctorChecks(gateway, {
      servingCaPin: gateway.servingCaPin,
      joinSigningKeyPin: process.env.BETTER_COMPUTE_JOIN_SIGNING_KEY_PIN,
      joinEncryptionKeyPin: process.env.BETTER_COMPUTE_JOIN_ENCRYPTION_KEY_PIN,
    });
    for (const check of checks) process.stdout.write(`${check.ok ? 'ok  ' : 'FAIL'} ${check.name.padEnd(9)} ${check.detail}\n`);
    await exitWhenFlushed(checks.every((c) => c.ok) ? 0 : 1);
  });
}
