import { readFile } from 'node:fs/promises';
import { doctorChecks, runRenewalLoop } from '../renew/loop';
import { runSessionLoop } from '../session/loop';
import { sessionCheck } from '../session/state-file';
import { bcdVersion } from './version';
import { parseConfigToml, type BcdConfig } from './config-toml';
import type { DoctorCheck } from '../renew/loop';
import type { CommandIo } from './join-command';
import { renewalOptionsFromConfig } from './node-options';
import { bcdPaths, joinKeyPathFor } from './paths';
import { readLinuxClaims } from '../claims-linux';
import { resolveJoinTrust } from '../join';
import { RENEWAL_EXIT } from '../renew/loop';
import { rejoinExpiredIdentity, runWithX509popRejoin } from '../x509pop';
import { pinnedFetch } from './pinned-fetch';
import { TrustStore } from '../trust/store';
import { trustCheck } from '../trust/doctor';
import { nodeKeyTpmOf } from '../tpm/node-key';
import { nodeKeyHelper } from '../helper/client';
import { nodeUserCheck } from '../helper/node-user';
import { bcdCommandOptions } from './command-options';

/** The pins config.toml holds: the root of the trust set (version 0 until a set arrives). */
const installPinsOf = (config: BcdConfig) => ({
  servingCaPin: config.servingCaSpkiPin,
  joinSigningKeyPin: config.joinSigningKeyPin,
  joinEncryptionKeyPin: config.joinEncryptionKeyPin,
});

/** What a revoked or expired identity tells the operator of a bcd machine. */
const BCD_JOIN_AGAIN = 'join again as root: bcd join --reset --yes, then bcd join';

/**
 * `bcd node`: the session with config.toml's gateway and pin, renewing on it, until SIGTERM (what bcd.service
 * runs); `--once` renews once on a connection of its own and exits. A TPM-held node key (node.key holding a TPM key
 * blob) renews and holds its session through the TPM named by `--tpm` / `BCD_TPM`.
 */
export async function runNode(args: { config?: string; once?: boolean; tpm?: string }, io: CommandIo): Promise<number> {
  const paths = bcdPaths(io.env);
  const configPath = args.config ?? paths.config;
  const config = parseConfigToml(await readFile(configPath, 'utf8'), configPath);
  // Under [helper], bcd node is the unprivileged user and bcd helper (root) holds the TPM.
  const refused = nodeUserCheck(config, io);
  if (refused !== null) return refused;
  const helper = config.helper ? nodeKeyHelper(config.helper.socket) : undefined;
  // A software identity's next key moves into the TPM once one opens: under [helper] the helper's (once it reports
  // one), otherwise the TPM named, else /dev/tpmrm0 when present.
  const keyHolder = helper ? { helper } : { nodeKeyTpm: nodeKeyTpmOf(args.tpm, io.env ?? process.env) };
  const controller = new AbortController();
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => controller.abort());
  // trust.json beside identity.json: the set of protocol.md "Trust rotation", or config.toml's pins at version 0.
  const held = await TrustStore.open({ dir: paths.identityDir, install: installPinsOf(config), log: io.out });
  const options = {
    ...renewalOptionsFromConfig(config, paths.identityDir),
    trust: held,
    joinAgain: BCD_JOIN_AGAIN,
    // Used only when node.key holds a TPM key blob: that key's TPM (/dev/tpmrm0 unless named).
    tpm: args.tpm ?? (io.env ?? process.env).BCD_TPM,
    ...keyHolder,
    signal: controller.signal,
    log: io.out,
  };
  // An identity that expired while the machine was offline re-joins with x509pop (through the gateway, pinned
  // like the join) when it expired less than 7 days ago, before the operator is told to join again.
  const rejoin = async () => {
    const serverUrl = config.gatewayUrl.replace(/\/+$/, '');
    const doFetch =
      io.fetch ?? (serverUrl.startsWith('https://') ? pinnedFetch({ servingCaPin: config.servingCaSpkiPin, trust: held }) : undefined);
    const pins = { joinSigningKeyPin: config.joinSigningKeyPin, joinEncryptionKeyPin: config.joinEncryptionKeyPin };
    const trust = await resolveJoinTrust({
      serverUrl,
      pins,
      jwkPath: joinKeyPathFor(configPath),
      refuseMismatchedKeyFile: true,
      fetch: doFetch,
      trust: held,
    });
    const claims = await readLinuxClaims((io.env ?? process.env).BCD_ROOT || '/');
    // A TPM-held last key signs its proof, and makes the next key, in the same TPM as the renewals.
    const answer = await rejoinExpiredIdentity({
      serverUrl,
      trust,
      identityDir: paths.identityDir,
      claims,
      tpm: options.tpm,
      ...keyHolder,
      fetch: doFetch,
    });
    // Verified under a trusted key: its trust set is stored as a trust event's would be.
    if (answer?.trust !== undefined) await held.acceptAnswerTrust(answer.trust, answer, 'x509pop re-join answer');
    return answer;
  };
  // The welcome is verified under the join-signing key that config.toml's pin names (protocol.md "Sessions").
  const run = () =>
    args.once
      ? runRenewalLoop({ ...options, once: true })
      : runSessionLoop({
          ...options,
          joinSigningKeyPin: config.joinSigningKeyPin,
          agentVersion: bcdVersion(),
          writeState: true,
          commands: bcdCommandOptions(configPath, io),
        });
  return runWithX509popRejoin({ identityDir: paths.identityDir, run, rejoin, expiredExit: RENEWAL_EXIT.expired, log: io.out });
}

/**
 * The gateway half of `bcd doctor`: the renewal loop's own gateway check (bcd checks the identity itself), and
 * the session `bcd node` keeps (connected, since, last heartbeat).
 */
export async function gatewayChecks(config: BcdConfig, identityDir: string): Promise<DoctorCheck[]> {
  // The gateway is checked under the serving CA pins the agent holds (trust.json), as bcd node connects.
  const trust = await TrustStore.open({ dir: identityDir, install: installPinsOf(config), log: () => {} });
  const checks = await doctorChecks({ ...renewalOptionsFromConfig(config, identityDir), trust });
  return [
    await trustCheck(identityDir, installPinsOf(config)),
    ...checks.filter((check) => check.name === 'gateway'),
    await sessionCheck(identityDir),
  ];
}
