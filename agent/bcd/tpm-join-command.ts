import { readLinuxClaims } from '../claims-linux';
import { resolveJoinTrust } from '../join';
import { joinWithTpm, TpmJoinRefused } from '../tpm/tpm-join-flow';
import { AGENT_EXIT } from '../errors';
import { UsageError, writeBootstrapConfig, type CommandIo, type JoinArgs, type JoinSetup } from './join-setup';

/** `BCD_JOIN_RETRY_SECONDS` (tests and development): retry a pending join sooner than the server's 30 s. */
function retryOverride(env: NodeJS.ProcessEnv): number | undefined {
  const raw = env.BCD_JOIN_RETRY_SECONDS;
  if (raw === undefined || raw === '') return undefined;
  const seconds = Number(raw);
  if (!Number.isInteger(seconds) || seconds < 1 || seconds > 3600)
    throw new UsageError('BCD_JOIN_RETRY_SECONDS is a whole number from 1 to 3600');
  return seconds;
}

/**
 * `bcd join --attestor tpm`: no token. The TPM makes the node key and the AK, the AK certifies the key over
 * sha256(csr), and the server's credential challenge is activated with the EK (docs/tpm-attestation.md). Prints
 * `joined: …` (exit 0); `waiting for approval: …` with the request id and the EK hash an operator matches, then
 * waits and retries as the server asks until an operator decides (with `--no-wait`, exit 3 at once: the next
 * `bcd join --attestor tpm` resumes the same request); or `refused: Join refused` (exit 1), the uniform answer.
 */
export async function runTpmJoinCommand(args: JoinArgs, io: CommandIo, setup: JoinSetup): Promise<number> {
  const env = io.env ?? process.env;
  const retryAfterSeconds = retryOverride(env);
  const siteId = args.site ?? setup.existing!.site;
  const trust = await resolveJoinTrust({
    serverUrl: setup.serverUrl,
    pins: setup.pins,
    jwkPath: setup.jwkPath,
    refuseMismatchedKeyFile: true,
    fetch: setup.doFetch,
    trust: setup.trust,
  });
  let outcome: Awaited<ReturnType<typeof joinWithTpm>>;
  try {
    outcome = await joinWithTpm({
      serverUrl: setup.serverUrl,
      trust,
      claims: await readLinuxClaims(env.BCD_ROOT || '/'),
      target: { siteId, ...(args.pool ? { poolId: args.pool } : {}) },
      identityDir: setup.paths.identityDir,
      tpmAddress: args.tpm ?? env.BCD_TPM,
      reset: args.reset,
      wait: !args.noWait,
      retryAfterSeconds,
      fetch: setup.doFetch,
      onPending: (wait) =>
        io.out(
          `waiting for approval: join request ${wait.requestId}; give an operator the EK hash ${wait.ekHash}` +
            (args.noWait ? '; run bcd join --attestor tpm again to resume it' : `; retrying every ${wait.retryAfterSeconds}s`),
        ),
      log: (line) => io.err(`bcd: ${line}`),
    });
  } catch (error) {
    if (!(error instanceof TpmJoinRefused)) throw error;
    io.out(`refused: ${error.message} (${error.serverCode})${error.ekHash ? `; EK hash ${error.ekHash}` : ''}`);
    io.err('bcd: every refusal is this one answer; the reason is in the security.join.refused events an operator reads');
    return AGENT_EXIT[error.code];
  }
  if (outcome.status === 'pending') return 3;
  // The answer verified under a trusted key: its trust set is stored as a trust event's would be.
  if (outcome.answer.trust !== undefined) await setup.trust.acceptAnswerTrust(outcome.answer.trust, outcome.answer, 'join answer');
  await writeBootstrapConfig(setup, outcome.answer.siteId);
  io.out(
    `joined: node ${outcome.answer.nodeId} in site ${outcome.answer.siteId} (${setup.paths.identityDir}); its key is held by the TPM (EK hash ${outcome.ekHash})`,
  );
  return 0;
}
