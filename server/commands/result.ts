import { createHash } from 'node:crypto';
import type pg from 'pg';
import { COMMAND_RESULT_ROUTE, parseCommandResult, RESULT_REFUSED } from '../../protocol/command-wire';
import type { JoinAnswer } from '../../protocol/join-wire';
import { REFUSAL_EVENT_LIMIT, REFUSAL_EVENT_WINDOW } from '../join/refusals';
import { logError } from '../log';
import { trustStateOf, type TrustState } from '../pki/rotation/trust-state';
import { SELECT_PRESENTED_LEAVES } from '../renew/renew-sql';
import type { LeafRow } from '../renew/renew-write';
import { vouchedPeer } from '../vouching/vouch';
import { SharedRateLimit, type RateLimitRule } from '../http/shared-rate-limit';
import type { JoinCrypto } from '../pki/issuance/join-crypto';
import { RECORD_RESULT } from './commands-sql';

/** Results one node may post per minute, across instances (a real agent posts one per command, 16 open at most). */
export const COMMAND_RESULT_RATE: RateLimitRule = { keyPrefix: 'command-result', limit: 120, windowSeconds: 60 };

/** A result call as the HTTP layer hands it over: the body, the gateway's headers and the path (under the base path). */
interface ResultCall {
  body: Buffer | null;
  vouch: string | undefined;
  peer: string | undefined;
  /** The full path the gateway's vouching binds (base path included). */
  path: string;
  /** The path under the base path: `/v1/commands/{commandId}/result`. */
  route: string;
}

interface ResultOptions {
  pool: pg.Pool;
  loadRuntime: () => Promise<{ crypto: JoinCrypto; servingCaPin: string; trust?: TrustState } | null>;
  rate?: RateLimitRule;
  /** The refusal events' rate limit per tenant and reason (the join's numbers unless given; tests isolate with a prefix). */
  refusalKeyPrefix?: string;
}

const NO_CONTENT: JoinAnswer = { status: 204, body: Buffer.alloc(0) };
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest();

const RECORD_REFUSAL = `
WITH hit AS (SELECT * FROM rate_limit_hit($2, $4, $5::interval))
INSERT INTO events (tenant_id, type, data)
SELECT $1, 'security.command.result-refused', $3::jsonb || jsonb_build_object('suppressed', hit.suppressed) FROM hit WHERE hit.allowed`;

class Refused extends Error {
  constructor(
    readonly reason: string,
    readonly row: LeafRow | null,
    readonly commandId: string | null,
  ) {
    super('Result refused');
  }
}

/**
 * A node's answer to a command (protocol.md "Commands"), relayed by the gateway with its vouching for the
 * session's certificate: `204` when the command was sent to exactly that certificate, which is still live (not
 * revoked, not expired, of the node's current identity generation), the command is still `sent` and
 * within its time limit, and the body is `{ status, output }` (parseCommandResult, output at most 64 KiB);
 * anything else is {@link RESULT_REFUSED} (the same bytes whatever the reason) with `security.command.result-refused`
 * naming the reason (rate-limited per tenant and reason). At most {@link COMMAND_RESULT_RATE} calls per node.
 * Two results for one command race on its row: one is stored, the other is refused.
 */
export class CommandResultService {
  private readonly limit: SharedRateLimit;

  constructor(private readonly options: ResultOptions) {
    this.limit = new SharedRateLimit(options.pool, options.rate ?? COMMAND_RESULT_RATE);
  }

  async answer(call: ResultCall): Promise<JoinAnswer> {
    try {
      await this.decide(call);
      return NO_CONTENT;
    } catch (error) {
      if (error instanceof Refused) {
        await this.publishRefusal(error);
        return RESULT_REFUSED;
      }
      logError('command result failed', error);
      return RESULT_REFUSED;
    }
  }

  private async decide(call: ResultCall): Promise<void> {
    const commandId = COMMAND_RESULT_ROUTE.exec(call.route)?.[1] ?? null;
    if (!commandId) throw new Refused('malformed', null, null);
    const runtime = await this.options.loadRuntime();
    if (!runtime) throw new Refused('not-configured', null, commandId);
    const body = call.body ?? Buffer.alloc(0);
    const peer = vouchedPeer({ vouch: call.vouch, peer: call.peer }, body, call.path, trustStateOf(runtime).servingCaPins);
    if (peer === 'no-peer') throw new Refused('no-client-certificate', null, commandId);
    if (!peer) throw new Refused('unvouched', null, commandId);
    const row = (
      await this.options.pool.query<LeafRow>({
        name: 'session-presented-leaf',
        text: SELECT_PRESENTED_LEAVES,
        values: [[sha256(peer)], [peer]],
      })
    ).rows[0];
    if (!row) throw new Refused('certificate-unknown', null, commandId);
    // A certificate that is no longer live answers nothing, whatever it was sent (as a renewal or a Hello refuses it).
    if (row.is_revoked) throw new Refused('revoked', row, commandId);
    if (row.is_expired) throw new Refused('expired', row, commandId);
    if (row.cert_generation !== row.node_generation) throw new Refused('generation', row, commandId);
    const verdict = await this.limit.hit(row.node_id);
    if (!verdict.allowed) throw new Refused('rate-limited', row, commandId);
    if (!call.body) throw new Refused('too-large', row, commandId);
    const result = parseCommandResult(call.body);
    if (!result) throw new Refused('malformed', row, commandId);
    const stored = await this.options.pool.query({
      name: 'commands-record-result',
      text: RECORD_RESULT,
      values: [commandId, row.serial, result.status, JSON.stringify(result.output)],
    });
    // Not sent to this certificate, not sent, already answered, or past its time limit.
    if (stored.rowCount !== 1) throw new Refused('not-sent-to-certificate', row, commandId);
  }

  private async publishRefusal(refused: Refused) {
    // Without a known certificate there is no tenant to tell (the gateway's own refusals are logged there).
    if (!refused.row) return;
    try {
      const tenantId = refused.row.tenant_id;
      const data = { reason: refused.reason, commandId: refused.commandId, nodeId: refused.row.node_id, serial: refused.row.serial };
      await this.options.pool.query(RECORD_REFUSAL, [
        tenantId,
        `${this.options.refusalKeyPrefix ?? 'command-result-refused'}:${tenantId}:${refused.reason}`,
        JSON.stringify(data),
        REFUSAL_EVENT_LIMIT,
        REFUSAL_EVENT_WINDOW,
      ]);
    } catch (error) {
      logError('could not record a command result refusal', error);
    }
  }
}
