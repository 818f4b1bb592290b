import type { BcdConfig } from '../bcd/config-toml';
import type { CommandIo } from '../bcd/join-setup';
import { AGENT_EXIT } from '../errors';

/**
 * Who `bcd node` may run as. Under `[helper]` it is the unprivileged `[helper]` user and refuses root (exit 2):
 * a root node would hold the TPM and the keys itself, which is what the split takes away. Without `[helper]` a root
 * `bcd node` opens the TPM itself (/dev/tpmrm0), as before, with a warning that says how to split it.
 *
 * @returns the exit code to stop with, or null to go on.
 */
export function nodeUserCheck(config: BcdConfig, io: CommandIo, uid = process.getuid?.()): number | null {
  if (uid !== 0) return null;
  if (config.helper) {
    io.err(
      `bcd node: refusing to run as root under [helper]: run it as ${config.helper.user} (bcd.service does), beside bcd helper as root`,
    );
    return AGENT_EXIT.USAGE;
  }
  io.err('bcd node: warning: running as root; a [helper] table in config.toml runs it as an unprivileged user beside bcd helper');
  return null;
}
