import { createHash, type KeyObject } from 'node:crypto';
import type pg from 'pg';
import { JOIN_FAILED, joinNotConfigured, type JoinAnswer } from '../../protocol/join-wire';
import { logError } from '../log';
import { newId } from '../ids';
import type { JoinCrypto } from '../pki/issuance/join-crypto';
import { signTrusted, trustStateOf, type TrustState } from '../pki/rotation/trust-state';
import { SELECT_PRESENTED_LEAVES } from '../renew/renew-sql';
import type { LeafRow } from '../renew/renew-write';
import { vouchedPeer } from '../vouching/vouch';
import { recordSessionRefusal, type SessionRefusalLimit } from './refusals';
import { parseHello, parseLeaseCall, parseRelayedHello } from './request';
import { END_DEAD_GATEWAY_SESSIONS, END_SESSIONS, OPEN_SESSIONS, PRUNE_LEASES, PUBLISH_DISCONNECTED, RENEW_LEASE } from './session-sql';
import { SESSION_REFUSED, SESSION_UNAVAILABLE, type HelloAccepted, type LeaseAnswer } from '../../protocol/session-wire';
import { deliverTrust, signedTrustSet } from './trust-delivery';
import type { SessionSettings } from './settings';
import { DELIVER_RUN_ON_HELLO, DELIVER_RUNS_TO_GATEWAY, SUPERSEDE_OLD_RUNS } from '../acceptance/runs-sql';
import { acceptanceReport, newRunId, recordAcceptanceReport } from '../acceptance/report';
import { GroupRunner } from '../renew/group';
import { commandSignerOf } from '../commands/sign';
import { deliverCommands, refuseCommands } from '../commands/delivery';

interface SessionServiceOptions {
  pool: pg.Pool;
  /**
   * JoinService's keys (the welcome is signed with the join-signing key), the serving CA pin and the trust
   * state (trustStateOf): read on every call, since a rotation swaps the runtime.
   */
  loadRuntime: () => Promise<{ crypto: JoinCrypto; servingCaPin: string; trust?: TrustState; commandSigningKey?: KeyObject } | null>;
  loadRootTenantId: () => Promise<string | null>;
  settings: SessionSettings;
  refusalLimit?: SessionRefusalLimit;
  /**
   * This process's event-loop lag now, in ms ({@link eventLoopLag} unless given; tests inject one): above
   * {@link HELLO_LAG_MS}, at most {@link MAX_HELLO_DECISIONS_LAGGING} Hellos are decided at once.
   */
  lagMs?: () => number;
}

/** What the HTTP layer hands over, as for a renewal: the body, the gateway's headers and the path. */
interface SessionCall {
  body: Buffer | null;
  vouch: string | undefined;
  peer: string | undefined;
  path: string;
}

class Refused extends Error {
  constructor(
    readonly reason: string,
    readonly row: LeafRow | null,
  ) {
    super('Session refused');
  }
}

/** Hello decisions under way at once in one API process (each gateway also relays at most 16 at once). */
export const MAX_HELLO_DECISIONS = 32;
/**
 * Hello decisions under way at once while this process's event loop lags more than {@link HELLO_LAG_MS}: the
 * console's lists and the operators' calls share that event loop, and in a reconnect storm 32 Hellos at once
 * kept it tens to hundreds of milliseconds behind, which a list of a dozen queries paid at every step. The
 * Hellos wait their turn instead (the gateway answers the retryable 503 when too many wait there).
 */
export const MAX_HELLO_DECISIONS_LAGGING = 8;
export const HELLO_LAG_MS = 40;

/**
 * The event loop's lag: how late a 50 ms timer fired, the most over its last few firings (about 250 ms),
 * measured from the first call on; 0 until then. One probe per process, unref'd.
 */
function eventLoopLag(): number {
  if (!lagProbe) {
    const probe = { samples: [0, 0, 0, 0, 0], next: 0, expected: performance.now() + 50 };
    setInterval(() => {
      const now = performance.now();
      probe.samples[probe.next++ % probe.samples.length] = Math.max(0, now - probe.expected);
      probe.expected = now + 50;
    }, 50).unref();
    lagProbe = probe;
  }
  return Math.max(...lagProbe.samples);
}
let lagProbe: { samples: number[]; next: number; expected: number } | undefined;

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
}

const jsonAnswer = (value: unknown): JoinAnswer => ({ status: 200, body: Buffer.from(JSON.stringify(value)) });
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest();

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

  private decisions = 0;
  private readonly waiting: Array<() => void> = [];
  private readonly lagMs: () => number;
  private pumpTimer: NodeJS.Timeout | null = null;

  constructor(private readonly options: SessionServiceOptions) {
    this.lagMs = options.lagMs ?? eventLoopLag;
  }

  /** Hello decisions allowed at once now: fewer while the event loop lags. */
  private decisionLimit() {
    return this.lagMs() > HELLO_LAG_MS ? MAX_HELLO_DECISIONS_LAGGING : MAX_HELLO_DECISIONS;
  }

  /**
   * Starts waiting Hellos while the limit allows; while some still wait, looks again shortly (the limit
   * rises when the lag passes, with no decision finishing to notice it).
   */
  private pump() {
    while (this.waiting.length > 0 && this.decisions < this.decisionLimit()) {
      this.decisions++;
      this.waiting.shift()!();
    }
    if (this.waiting.length > 0 && !this.pumpTimer) {
      this.pumpTimer = setTimeout(() => {
        this.pumpTimer = null;
        this.pump();
      }, 50);
      this.pumpTimer.unref();
    }
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
          await client.query<{ session_id: string; opened: boolean; gateway_live: boolean }>({
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
  async hello(call: SessionCall): Promise<JoinAnswer> {
    // At most MAX_HELLO_DECISIONS at once (MAX_HELLO_DECISIONS_LAGGING while the event loop lags), whatever
    // the number of gateways: the rest wait their turn here, so a reconnect storm leaves the database pool and
    // the event loop to the console's queries too. A waiting Hello is started by pump(), which counts it.
    if (this.waiting.length > 0 || this.decisions >= this.decisionLimit()) {
      await new Promise<void>((resolve) => {
        this.waiting.push(resolve);
        this.pump();
      });
    } else {
      this.decisions++;
    }
    try {
      return await this.decide(call);
    } finally {
      this.decisions--;
      this.pump();
    }
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
    const found = await this.options.pool.query<LeafRow>({
      name: 'session-presented-leaf',
      text: SELECT_PRESENTED_LEAVES,
      values: [[sha256(peer)], [peer]],
    });
    const row = found.rows[0] ?? null;
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
    // A pending acceptance run (or the first of this identity generation) is asked at once on the new session.
    await this.options.pool.query({ name: 'session-supersede-runs', text: SUPERSEDE_OLD_RUNS, values: [row.node_id] });
    const run = (
      await this.options.pool.query<{ id: string; checks: unknown[] }>({
        name: 'session-run-on-hello',
        text: DELIVER_RUN_ON_HELLO,
        values: [newRunId(), row.node_id, sessionId],
      })
    ).rows[0];
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

  /**
   * A gateway's lease call: extends its lease, ends the sessions it reports closed and answers those it must
   * end (certificate revoked, expired or superseded, node retired). Believed only with a valid vouching.
   */
  async lease(call: SessionCall): Promise<JoinAnswer> {
    try {
      const runtime = await this.options.loadRuntime();
      if (!runtime) return joinNotConfigured('JoinService has no keys configured');
      const body = call.body ?? Buffer.alloc(0);
      if (vouchedPeer({ vouch: call.vouch, peer: call.peer }, body, call.path, trustStateOf(runtime).servingCaPins) !== 'no-peer')
        return SESSION_REFUSED;
      const lease = parseLeaseCall(body);
      if (!lease) return SESSION_REFUSED;
      const { leaseSeconds, refreshMs } = this.options.settings;
      const renewed = await this.options.pool.query({
        name: 'session-lease',
        text: RENEW_LEASE,
        values: [lease.gatewayId, `${leaseSeconds} seconds`],
      });
      const ended = await this.options.pool.query<{ id: string; invalid: boolean; replaced: boolean }>({
        name: 'session-end',
        text: END_SESSIONS,
        values: [lease.gatewayId, lease.closed],
      });
      const runs = await this.options.pool.query<{ id: string; checks: unknown[]; session_id: string }>({
        name: 'session-runs',
        text: DELIVER_RUNS_TO_GATEWAY,
        values: [lease.gatewayId],
      });
      const live = renewed.rowCount === 1;
      // Commands the gateway dropped (a kind the session's certificate does not allow) end rejected.
      await refuseCommands(this.options.pool, lease.gatewayId, lease.refusedCommands ?? []);
      // After a change of the trust set, its sessions hear it in this answer and the next ones (`more`).
      const trust = live ? await deliverTrust(this.options.pool, lease.gatewayId, trustStateOf(runtime)) : { trust: [], more: false };
      // Queued commands of this gateway's sessions, each sent once.
      const commands = live ? await deliverCommands(this.options.pool, lease.gatewayId, commandSignerOf(runtime)) : null;
      const answer: LeaseAnswer = {
        live,
        end: ended.rows.filter((r) => r.invalid).map((r) => r.id),
        replaced: ended.rows.filter((r) => r.replaced).map((r) => r.id),
        refreshMs,
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
  async authorizeWatch(call: SessionCall): Promise<string | null> {
    const runtime = await this.options.loadRuntime();
    if (!runtime) return null;
    const body = call.body ?? Buffer.alloc(0);
    if (vouchedPeer({ vouch: call.vouch, peer: call.peer }, body, call.path, trustStateOf(runtime).servingCaPins) !== 'no-peer')
      return null;
    return parseLeaseCall(body)?.gatewayId ?? null;
  }

  /**
   * bcd's report of an acceptance run, sent on its session's connection: believed for the node whose live
   * certificate the gateway vouched for, exactly as a Hello; the run must be that node's pending one.
   * Answers `{ state, results }`; a refusal is the uniform Session refused bytes.
   */
  async acceptance(call: SessionCall): Promise<JoinAnswer> {
    try {
      const runtime = await this.options.loadRuntime();
      if (!runtime) return joinNotConfigured('JoinService has no keys configured');
      const body = call.body ?? Buffer.alloc(0);
      const peer = vouchedPeer({ vouch: call.vouch, peer: call.peer }, body, call.path, trustStateOf(runtime).servingCaPins);
      if (!peer || peer === 'no-peer') return SESSION_REFUSED;
      const row = (
        await this.options.pool.query<LeafRow>({
          name: 'session-presented-leaf',
          text: SELECT_PRESENTED_LEAVES,
          values: [[sha256(peer)], [peer]],
        })
      ).rows[0];
      if (!row || row.is_revoked || row.is_expired || row.cert_generation !== row.node_generation || row.state === 'retired')
        return SESSION_REFUSED;
      let report;
      try {
        report = acceptanceReport.safeParse(JSON.parse(body.toString('utf8')));
      } catch {
        return SESSION_REFUSED;
      }
      if (!report.success) return SESSION_REFUSED;
      const outcome = await recordAcceptanceReport(this.options.pool, row.node_id, report.data);
      if (outcome === 'unknown-run') return SESSION_REFUSED;
      return jsonAnswer(outcome);
    } catch (error) {
      logError('acceptance report failed', error);
      return JOIN_FAILED;
    }
  }

  /**
   * Ends the sessions of dead gateways and publishes `node.disconnected` for nodes gone longer than the grace.
   * Every API instance runs it on a timer ({@link startSessionSweeper}); running it twice publishes nothing twice.
   */
  async sweep(): Promise<number> {
    await this.options.pool.query({ name: 'session-dead-gateways', text: END_DEAD_GATEWAY_SESSIONS });
    const published = await this.options.pool.query({
      name: 'session-disconnected',
      text: PUBLISH_DISCONNECTED,
      values: [`${this.options.settings.graceSeconds} seconds`],
    });
    if (Math.random() < 0.01) await this.options.pool.query(PRUNE_LEASES);
    return published.rowCount ?? 0;
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
