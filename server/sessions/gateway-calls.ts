import { JOIN_FAILED, joinNotConfigured, type JoinAnswer } from '../../protocol/join-wire';
import { SESSION_REFUSED, type LeaseAnswer } from '../../protocol/session-wire';
import { acceptanceReport, recordAcceptanceReport } from '../acceptance/report';
import { DELIVER_RUNS_TO_GATEWAY } from '../acceptance/runs-sql';
import { commandSignerOf } from '../commands/sign';
import { deliverCommands, refuseCommands } from '../commands/delivery';
import { logError } from '../log';
import { trustStateOf } from '../pki/rotation/trust-state';
import { vouchedPeer } from '../vouching/vouch';
import { readPresentedLeaves } from './presented-leaves';
import { parseLeaseCall } from './request';
import { END_DEAD_GATEWAY_SESSIONS, END_SESSIONS, PRUNE_LEASES, PUBLISH_DISCONNECTED, RENEW_LEASE } from './session-sql';
import type { SessionCall, SessionServiceOptions } from './session-options';
import { deliverTrust } from './trust-delivery';

export const jsonAnswer = (value: unknown): JoinAnswer => ({ status: 200, body: Buffer.from(JSON.stringify(value)) });

/**
 * A gateway's lease call: extends its lease, ends the sessions it reports closed and answers those it must
 * end (certificate revoked, expired or superseded, node retired). Believed only with a valid vouching.
 */
export async function leaseCall(options: SessionServiceOptions, call: SessionCall): Promise<JoinAnswer> {
  try {
    const runtime = await options.loadRuntime();
    if (!runtime) return joinNotConfigured('JoinService has no keys configured');
    const body = call.body ?? Buffer.alloc(0);
    if (vouchedPeer({ vouch: call.vouch, peer: call.peer }, body, call.path, trustStateOf(runtime).servingCaPins) !== 'no-peer')
      return SESSION_REFUSED;
    const lease = parseLeaseCall(body);
    if (!lease) return SESSION_REFUSED;
    const { pool, settings } = options;
    const renewed = await pool.query({
      name: 'session-lease',
      text: RENEW_LEASE,
      values: [lease.gatewayId, `${settings.leaseSeconds} seconds`],
    });
    const ended = await pool.query<{ id: string; invalid: boolean; replaced: boolean }>({
      name: 'session-end',
      text: END_SESSIONS,
      values: [lease.gatewayId, lease.closed],
    });
    const runs = await pool.query<{ id: string; checks: unknown[]; session_id: string }>({
      name: 'session-runs',
      text: DELIVER_RUNS_TO_GATEWAY,
      values: [lease.gatewayId],
    });
    const live = renewed.rowCount === 1;
    // Commands the gateway dropped (a kind the session's certificate does not allow) end rejected.
    await refuseCommands(pool, lease.gatewayId, lease.refusedCommands ?? []);
    // After a change of the trust set, its sessions hear it in this answer and the next ones (`more`).
    const trust = live ? await deliverTrust(pool, lease.gatewayId, trustStateOf(runtime)) : { trust: [], more: false };
    // Queued commands of this gateway's sessions, each sent once.
    const commands = live ? await deliverCommands(pool, lease.gatewayId, commandSignerOf(runtime)) : null;
    const answer: LeaseAnswer = {
      live,
      end: ended.rows.filter((r) => r.invalid).map((r) => r.id),
      replaced: ended.rows.filter((r) => r.replaced).map((r) => r.id),
      refreshMs: settings.refreshMs,
      run: runs.rows.map((r) => ({ sessionId: r.session_id, acceptance: { runId: r.id, checks: r.checks } })),
      ...trust,
      ...(commands?.commands.length ? { commands: commands.commands } : {}),
      more: trust.more || (commands?.more ?? false),
    };
    return jsonAnswer(answer);
  } catch (error) {
    logError('session lease failed', error);
    return JOIN_FAILED;
  }
}

/**
 * A gateway's watch call (session-watch.ts): believed only with the gateway's vouching (for no peer),
 * as its lease call. Answers the gateway id to watch for, or null (the caller answers the uniform refusal).
 */
export async function authorizeWatchCall(options: SessionServiceOptions, call: SessionCall): Promise<string | null> {
  const runtime = await options.loadRuntime();
  if (!runtime) return null;
  const body = call.body ?? Buffer.alloc(0);
  if (vouchedPeer({ vouch: call.vouch, peer: call.peer }, body, call.path, trustStateOf(runtime).servingCaPins) !== 'no-peer') return null;
  return parseLeaseCall(body)?.gatewayId ?? null;
}

/**
 * bcd's report of an acceptance run, sent on its session's connection: believed for the node whose live
 * certificate the gateway vouched for, exactly as a Hello; the run must be that node's pending one.
 * Answers `{ state, results }`; a refusal is the uniform Session refused bytes.
 */
export async function acceptanceCall(options: SessionServiceOptions, call: SessionCall): Promise<JoinAnswer> {
  try {
    const runtime = await options.loadRuntime();
    if (!runtime) return joinNotConfigured('JoinService has no keys configured');
    const body = call.body ?? Buffer.alloc(0);
    const peer = vouchedPeer({ vouch: call.vouch, peer: call.peer }, body, call.path, trustStateOf(runtime).servingCaPins);
    if (!peer || peer === 'no-peer') return SESSION_REFUSED;
    const [row] = await readPresentedLeaves(options.pool, [peer]);
    if (!row || row.is_revoked || row.is_expired || row.cert_generation !== row.node_generation || row.state === 'retired')
      return SESSION_REFUSED;
    let report;
    try {
      report = acceptanceReport.safeParse(JSON.parse(body.toString('utf8')));
    } catch {
      return SESSION_REFUSED;
    }
    if (!report.success) return SESSION_REFUSED;
    const outcome = await recordAcceptanceReport(options.pool, row.node_id, report.data);
    if (outcome === 'unknown-run') return SESSION_REFUSED;
    return jsonAnswer(outcome);
  } catch (error) {
    logError('acceptance report failed', error);
    return JOIN_FAILED;
  }
}

/**
 * Ends the sessions of dead gateways and publishes `node.disconnected` for nodes gone longer than the grace.
 * Every API instance runs it on a timer (startSessionSweeper); running it twice publishes nothing twice.
 */
export async function sweepSessions(options: SessionServiceOptions): Promise<number> {
  const { pool, settings } = options;
  await pool.query({ name: 'session-dead-gateways', text: END_DEAD_GATEWAY_SESSIONS });
  const published = await pool.query({
    name: 'session-disconnected',
    text: PUBLISH_DISCONNECTED,
    values: [`${settings.graceSeconds} seconds`],
  });
  if (Math.random() < 0.01) await pool.query(PRUNE_LEASES);
  return published.rowCount ?? 0;
}
