import { readFile } from 'node:fs/promises';
import { doctorChecks, runRenewalLoop } from '../renew/loop';
import { runSessionLoop } from '../session/loop';
import { sessionCheck } from '../session/state-file';
import { bcdVersion } from './version';
import { parseConfigToml, type BcdConfig } from './config-toml';
import type { DoctorCheck } from '../renew/loop';
import type { CommandIo } from './join-command';
import { renewalOptionsFromConfig } from './node-options';
import { bcdPaths } from './paths';

/** What a revoked or expired identity tells the operator of a bcd machine. */
export const BCD_JOIN_AGAIN = 'join again as root: bcd join --reset --yes, then bcd join';

/**
 * `bcd node`: the session with config.toml's gateway and pin, renewing on it, until SIGTERM (what bcd.service
 * runs); `--once` renews once on a connection of its own and exits.
 */
export async function runNode(args: { config?: string; once?: boolean }, io: CommandIo): Promise<number> {
  const paths = bcdPaths(io.env);
  const configPath = args.config ?? paths.config;
  const config = parseConfigToml(await readFile(configPath, 'utf8'), configPath);
  const controller = new AbortController();
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => controller.abort());
  const options = { ...renewalOptionsFromConfig(config, paths.identityDir), joinAgain: BCD_JOIN_AGAIN, signal: controller.signal, log: io.out };
  if (args.once) return runRenewalLoop({ ...options, once: true });
  // The welcome is verified under the join-signing key that config.toml's pin names (protocol.md "Sessions").
  return runSessionLoop({ ...options, joinSigningKeyPin: config.joinSigningKeyPin, agentVersion: bcdVersion(), writeState: true });
}

/**
 * The gateway half of `bcd doctor`: the renewal loop's own gateway check (bcd checks the identity itself), and
 * the session `bcd node` keeps (connected, since, last heartbeat).
 */
export async function gatewayChecks(config: BcdConfig, identityDir: string): Promise<DoctorCheck[]> {
  const checks = await doctorChecks(renewalOptionsFromConfig(config, identityDir));
  return [...checks.filter((check) => check.name === 'gateway'), await sessionCheck(identityDir)];
}
