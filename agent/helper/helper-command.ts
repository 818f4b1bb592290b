import { readFile } from 'node:fs/promises';
import type { Server } from 'node:net';
import { parseConfigToml } from '../bcd/config-toml';
import type { CommandIo } from '../bcd/join-setup';
import { bcdPaths } from '../bcd/paths';
import { startHelperServer } from './server';
import { noTpmRefusal, tpmHelperOps } from './tpm-ops';
import { requireSystemUser } from './users';
import { AGENT_EXIT } from '../errors';

/**
 * `bcd helper`: as root, holds the TPM for `bcd node` (what bcd-helper.service runs). Listens on config.toml's
 * `[helper]` socket, which only the `[helper]` user can reach, until SIGTERM. Returns the exit code.
 */
export async function runHelper(args: { config?: string; tpm?: string }, io: CommandIo): Promise<number> {
  const configPath = args.config ?? bcdPaths(io.env).config;
  const config = parseConfigToml(await readFile(configPath, 'utf8'), configPath);
  if (!config.helper) {
    io.err(`bcd helper: ${configPath} has no [helper] table, so bcd node holds the TPM itself and needs no helper`);
    return AGENT_EXIT.CONFIG;
  }
  if (process.getuid?.() !== 0) {
    io.err('bcd helper: runs as root (it holds the TPM for bcd node); bcd-helper.service starts it');
    return AGENT_EXIT.USAGE;
  }
  const user = await requireSystemUser(config.helper.user);
  const tpm = args.tpm ?? (io.env ?? process.env).BCD_TPM;
  const server: Server = await startHelperServer({
    socketPath: config.helper.socket,
    owner: user,
    ops: tpmHelperOps(tpm),
    log: io.out,
  });
  const noTpm = noTpmRefusal(tpm);
  if (noTpm) io.out(`bcd helper: ${noTpm}; it refuses TPM requests until the TPM is there`);
  await new Promise<void>((resolve) => {
    for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => resolve());
  });
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return 0;
}
