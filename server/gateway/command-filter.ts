import { kindAllowed } from '../../protocol/command-wire';
import { MAX_REFUSED_COMMANDS_PER_LEASE } from '../../protocol/session-wire';

/**
 * The gateway's check of a `command` event before it writes it to a session (protocol.md "Commands"): it reads
 * the envelope's body (it verifies nothing: the agent does) and drops a command whose kind the session's
 * certificate does not allow, remembering its id for the next lease call (`refusedCommands`), where the API
 * ends it `rejected` and publishes `security.command.refused`.
 */
export class CommandFilter {
  private refused: string[] = [];

  /** Whether to write `event` to a session whose certificate allows `allowedKinds` (null: any kind). */
  admit(event: { body?: unknown }, allowedKinds: readonly string[] | null): boolean {
    const command = commandOf(event);
    if (command && kindAllowed(command.kind, allowedKinds)) return true;
    if (command && this.refused.length < MAX_REFUSED_COMMANDS_PER_LEASE * 16) this.refused.push(command.commandId);
    return false;
  }

  /** Whether refusals wait to be reported. */
  get pending() {
    return this.refused.length > 0;
  }

  /** The refusals for one lease call (bounded); {@link restore} puts them back when the call failed. */
  take(): string[] {
    return this.refused.splice(0, MAX_REFUSED_COMMANDS_PER_LEASE);
  }

  restore(ids: string[]) {
    this.refused.unshift(...ids);
  }
}

/** The command id and kind of a signed command envelope's body, or null when it is not one. */
function commandOf(event: { body?: unknown }): { commandId: string; kind: string } | null {
  if (typeof event?.body !== 'string') return null;
  try {
    const body = JSON.parse(Buffer.from(event.body, 'base64url').toString('utf8')) as Record<string, unknown>;
    return typeof body.commandId === 'string' && typeof body.kind === 'string' ? { commandId: body.commandId, kind: body.kind } : null;
  } catch {
    return null;
  }
}
