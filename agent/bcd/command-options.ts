import type { SessionCommandOptions } from '../commands/session-commands';
import { doctorReport } from './doctor-command';
import type { CommandIo } from './join-command';

/**
 * What a bcd process that holds a session gives its session loop to run commands (protocol.md "Commands"):
 * Hello reports every kind, `bcd.doctor` answers `bcd doctor --json`'s report for `configPath`, and the command
 * ids taken are kept in command-replay.json beside the identity. `bcd node` passes it to runSessionLoop; a
 * `bcd site` that holds a session passes the same.
 */
export function bcdCommandOptions(configPath: string, io: Pick<CommandIo, 'env'>): SessionCommandOptions {
  return { doctor: () => doctorReport({ config: configPath }, io) };
}
