import type pg from 'pg';
import { MAX_COMMANDS_PER_LEASE, type LeaseAnswer } from '../../protocol/session-wire';
import type { CommandBody } from '../../protocol/command-wire';
import { DELIVER_COMMANDS, REFUSE_COMMANDS } from './commands-sql';
import { signCommand, type CommandSigner } from './sign';

interface DeliveredRow {
  id: string;
  node_id: string;
  kind: string;
  args: Record<string, unknown>;
  not_after: string;
  session_id: string;
}

/**
 * The commands a gateway's lease answer carries: at most `limit` due commands of the sessions it holds, marked
 * sent in the same statement (DELIVER_COMMANDS: at most once per command across instances and gateways) and
 * signed with the command key in use. `more`: the limit was reached, the gateway calls again at once. Without a
 * command key (no PKI bundle: tests with a bare JoinCrypto) nothing is delivered.
 */
export async function deliverCommands(
  pool: pg.Pool,
  gatewayId: string,
  signer: CommandSigner | null,
  limit = MAX_COMMANDS_PER_LEASE,
): Promise<Required<Pick<LeaseAnswer, 'commands' | 'more'>>> {
  if (!signer) return { commands: [], more: false };
  const due = await pool.query<DeliveredRow>({ name: 'commands-deliver', text: DELIVER_COMMANDS, values: [gatewayId, limit] });
  const commands = due.rows.map((row) => {
    const body: CommandBody = {
      status: 'command',
      commandId: row.id,
      nodeId: row.node_id,
      kind: row.kind,
      args: row.args,
      notAfter: Number(row.not_after),
    };
    return { sessionId: row.session_id, event: signCommand(signer, body) };
  });
  return { commands, more: commands.length >= limit };
}

/**
 * The commands a gateway reports it dropped (their kind is not allowed by the session's certificate): each
 * ends `rejected` with `security.command.refused`. Only commands sent through that gateway count.
 */
export async function refuseCommands(pool: pg.Pool, gatewayId: string, commandIds: readonly string[]): Promise<number> {
  if (commandIds.length === 0) return 0;
  const result = await pool.query<{ refused: number }>({
    name: 'commands-refuse',
    text: REFUSE_COMMANDS,
    values: [gatewayId, [...new Set(commandIds)]],
  });
  return result.rows[0]?.refused ?? 0;
}
