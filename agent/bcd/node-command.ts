import { readFile } from 'node:fs/promises';
import { doctorChecks, runRenewalLoop } from '../renew/loop';
import { parseConfigToml, type BcdConfig } from './config-toml';
import type { DoctorCheck } from '../renew/loop';
import type { CommandIo } from './join-command';
import { renewalOptionsFromConfig } from './node-options';
import { bcdPaths } from './paths';

/** What a revoked or expired identity tells the operator of a bcd machine. */
export const BCD_JOIN_AGAIN = 'join again as root: bcd join --reset --yes, then bcd join';

/** `bcd node`: the renewal loop with config.toml's gateway and pin, until SIGTERM (what bcd.service runs). */
export async function runNode(args: { config?: string; once?: boolean }, io: CommandIo): Promise<number> {
  const paths = bcdPaths(io.env);
  const configPath = args.config ?? paths.config;
  const config = parseConfigToml(await readFile(configPath, 'utf8'), configPath);
  const controller = new AbortController();
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => controller.abort());
  return runRenewalLoop({ ...renewalOptionsFromConfig(config, paths.identityDir), joinAgain: BCD_JOIN_AGAIN, signal: controller.signal, once: args.once, log: io.out });
}

/** The gateway half of `bcd doctor`: the renewal loop's own gateway check (bcd checks the identity itself). */
export async function gatewayChecks(config: BcdConfig, identityDir: string): Promise<DoctorCheck[]> {
  const checks = await doctorChecks(renewalOptionsFromConfig(config, identityDir));
  return checks.filter((check) => check.name === 'gateway');
}
