import { JOIN_FAILED, joinNotConfigured, type JoinAnswer } from '../../protocol/join-wire';
import { logError } from '../log';
import { newId } from '../ids';
import { signTrusted, trustStateOf, type TrustState } from '../pki/rotation/trust-state';
import type { LeafRow } from '../renew/renew-write';
import { vouchedPeer } from '../vouching/vouch';
import { recordSessionRefusal } from './refusals';
import { parseHello, parseRelayedHello } from './request';
import { OPEN_SESSIONS } from './session-sql';
import { SESSION_REFUSED, SESSION_UNAVAILABLE, type HelloAccepted } from '../../protocol/session-wire';
import { signedTrustSet } from './trust-delivery';
import type { SessionSettings } from './settings';
import { DELIVER_RUN_ON_HELLO, SUPERSEDE_OLD_RUNS } from '../acceptance/runs-sql';
import { newRunId } from '../acceptance/report';
import { GroupRunner } from '../renew/group';
import { HelloGate } from './hello-gate';
import { readPresentedLeaves } from './presented-leaves';
import { acceptanceCall, authorizeWatchCall, jsonAnswer, leaseCall, sweepSessions } from './gateway-calls';
import type { SessionCall, SessionServiceOptions } from './session-options';

export { HELLO_LAG_MS, MAX_HELLO_DECISIONS, MAX_HELLO_DECISIONS_LAGGING } from './hello-gate';

class Refused extends Error {
  constructor(
    readonly reason: string,
    readonly row: LeafRow | null,
  ) {
    super('Session refused');
  }
}

interface OpenRequest {
  sessionId: string;
  serial: string;
  nodeId: string;
  gatewayId: string;
  agentVersion: string;
  /** The trust set version the node holds once this Hello is answered. */
  trustVersion: number;
}
interface OpenOutcome {
  opened: boolean;
  gatewayLive: boolean;
  /** The node is adopting or has a pending acceptance run: the Hello asks for acceptance work. */
  acceptanceDue: boolean;
}

/**
 * Sessions (protocol.md "Sessions"): decides each Hello exactly as RenewService decides a renewal's
 * certificate, from the gateway's vouching (the peer is byte for byte a `node_certs` leaf, unrevoked, unexpired,
 * of the node's current generation, the node not retired, and the Hello's `nodeId` is the leaf's node), and
 * keeps the session state every instance shares: open sessions in `node_sessions`, believed only while their
 * gateway's lease is live (`gateway_leases`), and `node.connected` / `node.disconnected` on the node.
 */
export class SessionService {
  /**
   * Hellos that arrive together open their sessions in one transaction (a group commit, as renewals do): after
   * a gateway restart thousands arrive within seconds, and one durable commit per Hello held the database
   * (and the console's queries) for seconds. Two Hellos of one node never share a group.
   */
  private readonly opener = new GroupRunner<OpenRequest, OpenOutcome>(
    (hellos) => this.openGroup(hellos),
    128,
    (hello) => [hello.nodeId],
  );

  /**
   * The presented leaves of Hellos that arrive together are looked up in one statement (as a renewal group's
   * are): one round trip and one planning for the group instead of one per Hello.
   */
  private readonly leaves = new GroupRunner<Buffer, LeafRow | null>((peers) => readPresentedLeaves(this.options.pool, peers), 128);

  private readonly gate: HelloGate;

  constructor(private readonly options: SessionServiceOptions) {
    this.gate = new HelloGate(options.lagMs);
  }

  /** Groups run and Hellos they opened, for the benchmark. */
  get openStats() {
    return this.opener.stats;
  }

  private async openGroup(hellos: OpenRequest[]): Promise<OpenOutcome[]> {
    const client = await this.options.pool.connect();
    try {
      try {
        // The nodes' row locks first, in their own statement and in id order (two groups never deadlock), as a
        // renewal takes its node's: the statement after it then reads each certificate's standing after a
        // revokeIdentity or reclaim that held the lock. The ids come from node_certs rows.
        const ids = [...new Set(hellos.map((h) => h.nodeId))].sort().map((id) => client.escapeLiteral(id));
        await client.query(`BEGIN; SELECT 1 FROM nodes WHERE id IN (${ids.join(', ')}) ORDER BY id FOR UPDATE`);
        const rows = (
          await client.query<{ session_id: string; opened: boolean; gateway_live: boolean; acceptance_due: boolean }>({
            name: 'session-open',
            text: OPEN_SESSIONS,
            values: [
              hellos.map((h) => h.sessionId),
              hellos.map((h) => h.serial),
              hellos.map((h) => h.nodeId),
              hellos.map((h) => h.gatewayId),
              hellos.map((h) => h.agentVersion),
              this.options.settings.maxSessionsPerNode,
              hellos.map((h) => h.trustVersion),
            ],
          })
        ).rows;
        await client.query('COMMIT');
        const bySession = new Map(rows.map((r) => [r.session_id, r]));
        return hellos.map((h) => ({
          opened: bySession.get(h.sessionId)?.opened ?? false,
          gatewayLive: bySession.get(h.sessionId)?.gateway_live ?? false,
          acceptanceDue: bySession.get(h.sessionId)?.acceptance_due ?? false,
        }));
      } catch (error) {
        await client.query('ROLLBACK').catch(() => {});
        throw error;
      }
    } finally {
      client.release();
    }
  }

  get settings(): SessionSettings {
    return this.options.settings;
  }

  /** A Hello relayed by a gateway. Every refusal is {@link SESSION_REFUSED} and a `security.session.refused` event. */
  hello(call: SessionCall): Promise<JoinAnswer> {
    return this.gate.through(() => this.decide(call));
  }

  private async decide(call: SessionCall): Promise<JoinAnswer> {
    const runtime = await this.options.loadRuntime();
    if (!runtime) return joinNotConfigured('JoinService has no keys configured: run better-compute pki init and set BETTER_COMPUTE_SECRET');
    try {
      return await this.open(call, trustStateOf(runtime));
    } catch (error) {
      if (error instanceof Refused) {
        await this.publishRefusal(error);
        return SESSION_REFUSED;
      }
      logError('session hello failed', error);
      return JOIN_FAILED;
    }
  }

  private async open(call: SessionCall, trust: TrustState): Promise<JoinAnswer> {
    const body = call.body ?? Buffer.alloc(0);
    const peer = vouchedPeer({ vouch: call.vouch, peer: call.peer }, body, call.path, trust.servingCaPins);
    if (peer === 'no-peer') throw new Refused('no-client-certificate', null);
    if (!peer) throw new Refused('unvouched', null);
    const relayed = parseRelayedHello(body);
    if (!relayed) throw new Refused('malformed', null);
    const hello = parseHello(relayed.hello);
    const row = await this.leaves.run(peer);
    if (!row) throw new Refused('certificate-unknown', null);
    // The TLS handshake proved the leaf's key: from here on the node's owner hears of a refusal.
    if (row.is_revoked) throw new Refused('revoked', row);
    if (row.is_expired) throw new Refused('expired', row);
    if (row.cert_generation !== row.node_generation) throw new Refused('generation', row);
    if (row.state === 'retired') throw new Refused('node-retired', row);
    if (!hello) throw new Refused('malformed', row);
    if (hello.nodeId !== row.node_id) throw new Refused('peer-mismatch', row);

    const sessionId = newId('sess');
    // An agent that holds an older trust set hears the server's right after its welcome, and the node then
    // counts as holding it (so no lease call sends it again); a newer one (another instance already moved on)
    // is recorded as reported.
    const sendsTrust = hello.trustVersion < trust.version;
    const opened = await this.opener.run({
      sessionId,
      serial: row.serial,
      nodeId: row.node_id,
      gatewayId: relayed.gatewayId,
      agentVersion: hello.agentVersion,
      trustVersion: sendsTrust ? trust.version : hello.trustVersion,
    });
    if (!opened.gatewayLive) return SESSION_UNAVAILABLE;
    // Lost a race with revokeIdentity, a reclaim or a delete under the lock: refused like any other.
    if (!opened.opened) throw new Refused('standing-changed', row);
    // A pending acceptance run (or the first of this identity generation) is asked at once on the new session;
    // the Hello's statement says whether there can be one, so most Hellos skip both statements.
    const run = opened.acceptanceDue ? await this.acceptanceRun(row.node_id, sessionId) : undefined;
    const heartbeatSeconds = this.options.settings.heartbeatSeconds;
    const welcome = signTrusted(trust, {
      status: 'welcome',
      nodeId: row.node_id,
      sessionId,
      serverTime: Math.floor(row.now_seconds),
      heartbeatSeconds,
    });
    return jsonAnswer({
      sessionId,
      heartbeatSeconds,
      welcome,
      ...(sendsTrust ? { trust: signedTrustSet(trust, row.node_id) } : {}),
      ...(run ? { acceptance: { runId: run.id, checks: run.checks } } : {}),
      allowedKinds: row.allowed_kinds,
    } satisfies HelloAccepted);
  }

  private async acceptanceRun(nodeId: string, sessionId: string) {
    await this.options.pool.query({ name: 'session-supersede-runs', text: SUPERSEDE_OLD_RUNS, values: [nodeId] });
    const runs = await this.options.pool.query<{ id: string; checks: unknown[] }>({
      name: 'session-run-on-hello',
      text: DELIVER_RUN_ON_HELLO,
      values: [newRunId(), nodeId, sessionId],
    });
    return runs.rows[0];
  }

  /** A gateway's lease call (gateway-calls.ts leaseCall). */
  lease(call: SessionCall): Promise<JoinAnswer> {
    return leaseCall(this.options, call);
  }

  /** A gateway's watch call: the gateway id to watch for, or null (gateway-calls.ts authorizeWatchCall). */
  authorizeWatch(call: SessionCall): Promise<string | null> {
    return authorizeWatchCall(this.options, call);
  }

  /** bcd's report of an acceptance run (gateway-calls.ts acceptanceCall). */
  acceptance(call: SessionCall): Promise<JoinAnswer> {
    return acceptanceCall(this.options, call);
  }

  /** Ends dead gateways' sessions and publishes `node.disconnected` past the grace (gateway-calls.ts sweepSessions). */
  sweep(): Promise<number> {
    return sweepSessions(this.options);
  }

  private async publishRefusal(refused: Refused) {
    try {
      const tenantId = refused.row ? refused.row.tenant_id : await this.options.loadRootTenantId();
      if (!tenantId) return;
      await recordSessionRefusal(
        this.options.pool,
        tenantId,
        { reason: refused.reason, nodeId: refused.row?.node_id ?? null, serial: refused.row?.serial ?? null },
        this.options.refusalLimit,
      );
    } catch (error) {
      logError('could not record a session refusal', error);
    }
  }
}

/** Runs `service.sweep()` every `intervalMs` until the returned stop is called; failures are logged and retried. */
export function startSessionSweeper(service: SessionService, intervalMs = service.settings.sweepMs): () => void {
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    service
      .sweep()
      .catch((error) => logError('session sweep failed', error))
      .finally(() => (running = false));
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
