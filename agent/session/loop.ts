import type { KeyObject } from 'node:crypto';
import { JOIN_AGAIN, RENEWAL_EXIT, type RenewalOptions } from '../renew/loop';
import { loadNodeIdentity, replaceIdentity, type NodeLoadedIdentity } from '../renew/identity';
import { RenewRefusedError, renewIdentity } from '../renew/renew';
import { backoffMs, cancellableSleep, renewalDelayMs, sleep } from '../renew/schedule';
import { openSession, SessionRefusedError, type AgentSession } from './session-client';
import { sessionTrust } from './session-trust';
import type { TrustStore } from '../trust/store';
import { writeSessionState } from './state-file';
import { DEFAULT_BASE_PATH } from '../join';
import type { MachineProbe } from '../acceptance/measure';
import { reportAcceptance } from './acceptance-report';
import { startSessionCommands, type SessionCommandOptions } from '../commands/session-commands';

/** Refusals in a row (of Hellos or of renewals) after which the identity is taken as revoked. */
const REFUSALS_BEFORE_GIVING_UP = 3;
/**
 * The most a reconnect waits. A gateway restart drops every session at once: each agent waits a random part
 * of a doubling step (full jitter) so they come back spread out, and 30 s keeps a fleet back within a minute
 * or two of the gateway's return.
 */
export const RECONNECT_CAP_MS = 30_000;

/**
 * The most the first session waits, unless the options or BETTER_COMPUTE_SESSION_START_JITTER_SECONDS say
 * otherwise: agents that start together (a rack powered on, a fleet's agents restarted by one rollout, machines
 * that joined in one burst) would otherwise all make their TLS handshake and Hello in the same second.
 */
export const SESSION_START_JITTER_MS = 5_000;
const START_JITTER_ENV = 'BETTER_COMPUTE_SESSION_START_JITTER_SECONDS';

/**
 * The first session's jitter bound in ms from BETTER_COMPUTE_SESSION_START_JITTER_SECONDS (0 to 300; 0 opens it
 * at once, as tests do), {@link SESSION_START_JITTER_MS} when unset.
 *
 * @throws Error naming the variable when the value is not a whole number from 0 to 300.
 */
export function sessionStartJitterMs(env: Record<string, string | undefined> = process.env): number {
  const value = env[START_JITTER_ENV];
  if (value === undefined || value === '') return SESSION_START_JITTER_MS;
  if (!/^\d+$/.test(value) || Number(value) > 300)
    throw new Error(`${START_JITTER_ENV} must be a whole number from 0 to 300, not ${value}`);
  return Number(value) * 1000;
}

/** Full jitter: a random wait in [0, step), the step doubling from 1 s up to `capMs`. */
export function reconnectDelayMs(attempt: number, capMs = RECONNECT_CAP_MS, random: () => number = Math.random): number {
  return Math.floor(random() * Math.min(capMs, 1000 * 2 ** Math.min(Math.max(attempt, 0), 20)));
}

interface SessionLoopOptions extends RenewalOptions {
  signal?: AbortSignal;
  agentVersion: string;
  /** The join-signing key; when given, every welcome must verify under it. */
  signingKey?: KeyObject;
  /**
   * `join_signing_key_pin`: without `signingKey`, the key is read from the well-known document through the
   * gateway and kept only when it matches this pin; every welcome must then verify under it.
   */
  joinSigningKeyPin?: string;
  /**
   * The trust set held (trust.json beside the identity for agent run and bcd node). Without one, an in-memory
   * set of `servingCaPin` and the signing pin (`joinSigningKeyPin`, or `signingKey`'s) at version 0 is used.
   * `trust` events are applied to it, Hello reports its version, and every later chain and envelope is checked
   * against it.
   */
  trust?: TrustStore;
  /** Write `session.json` in the identity directory for `doctor` (true for agent run and bcd node). */
  writeState?: boolean;
  /** Called when the session opens (with it) or ends (null); `dev --sim` counts with it. */
  onSession?: (session: AgentSession | null) => void;
  /** Where the identity lives: `identityDir` on disk unless given (`dev --sim` keeps it in memory). */
  store?: { load(): Promise<NodeLoadedIdentity>; replace(identity: NodeLoadedIdentity): Promise<void> };
  /** What acceptance checks measure: this Linux machine unless given. */
  probe?: MachineProbe;
  /** When to renew a certificate (tests shorten it); about 60% of its lifetime by default. */
  renewalDelay?: typeof renewalDelayMs;
  /**
   * The first session opens after a random wait in [0, startJitterMs); {@link sessionStartJitterMs} (5 s
   * unless the environment says) when absent. Reconnects have their own backoff.
   */
  startJitterMs?: number;
  /**
   * Opens a session ({@link openSession} unless given): `bench:sessions` wraps it so that one client process
   * standing in for thousands of machines makes a bounded number of handshakes at once.
   */
  openSession?: typeof openSession;
  /** Run commands (protocol.md "Commands", agent/commands); without it Hello reports no kinds and none run. */
  commands?: SessionCommandOptions;
}

/**
 * `agent run` / `bcd node`: keeps one session open with the current certificate, and the identity fresh.
 * Opens the session after a short random wait (`startJitterMs`, so agents started together spread out), reconnects with capped, jittered exponential backoff when it
 * ends, and at about 60% of the certificate's lifetime renews on the session's HTTP/2 connection (no new TLS
 * handshake), installs the new identity atomically, opens a session with the new certificate and only then
 * closes the old one.
 *
 * @returns the renewal loop's exit codes: 0 stopped, 2 no identity, 3 refused repeatedly (revoked or
 *   superseded), 4 the certificate expired.
 */
export async function runSessionLoop(options: SessionLoopOptions): Promise<number> {
  const log = options.log ?? ((line: string) => console.error(line));
  const joinAgain = options.joinAgain ?? JOIN_AGAIN;
  const store = options.store ?? {
    load: () => loadNodeIdentity(options.identityDir, { tpm: options.tpm, helper: options.helper }),
    replace: (identity: NodeLoadedIdentity) =>
      replaceIdentity(options.identityDir, { ...identity.identity, privateKeyPem: identity.identity.privateKeyPem }),
  };
  const startJitterMs = options.startJitterMs ?? sessionStartJitterMs();
  let current: NodeLoadedIdentity;
  try {
    current = await store.load();
  } catch (error) {
    log(`agent: no usable identity in ${options.identityDir} (${(error as Error).message}); join first: better-compute agent join`);
    return RENEWAL_EXIT.noIdentity;
  }
  // Unawaited calls are fire-and-forget on purpose: writeSessionState never rejects, and the writes are chained
  // so they land in order whoever awaits them.
  let written: Promise<void> = Promise.resolve();
  const state = (session: AgentSession | null, since: Date | null, heartbeat = false) => {
    if (!heartbeat) options.onSession?.(session);
    if (!options.writeState) return Promise.resolve();
    // Written in order: a heartbeat's record never lands after the record of the session's end.
    return (written = written.then(() =>
      writeSessionState(options.identityDir, {
        connected: session !== null,
        since: since?.toISOString() ?? null,
        lastHeartbeat: session ? session.lastHeartbeat.toISOString() : (since?.toISOString() ?? null),
        sessionId: session?.welcome.sessionId ?? null,
        gatewayUrl: options.gatewayUrl,
      }),
    ));
  };
  const { trust, target, refreshKeys, onTrust, trustApplied } = await sessionTrust(options, log, () => current.identity.nodeId);
  const basePath = options.basePath ?? DEFAULT_BASE_PATH;
  let session: AgentSession | null = null;
  const commands = options.commands
    ? await startSessionCommands(options.commands, {
        identityDir: options.identityDir,
        basePath,
        log,
        nodeId: () => current.identity.nodeId,
        commandTrustBundle: () => trust.set.commandTrustBundle,
        latestSession: () => session,
      })
    : null;
  const open = async (identity: NodeLoadedIdentity) => {
    const verify = trust.set.joinSigningKeyPins.length > 0;
    if (verify) await refreshKeys();
    return (options.openSession ?? openSession)(target, identity, {
      basePath: options.basePath,
      agentVersion: options.agentVersion,
      ...(verify ? { signingKeys: trust.signingKeys() } : {}),
      trustVersion: trust.version,
      ...(commands ? { commandKinds: commands.kinds } : {}),
      onEvent: (event, on) => {
        if (event.type === 'heartbeat' && on === session) void state(on, on.since, true);
        // The session it came on: the ask may arrive with the welcome, before the loop holds the session.
        if (event.type === 'acceptance')
          void reportAcceptance(on, event.data as { runId?: unknown; checks?: unknown }, { basePath, probe: options.probe, log });
        // A signed command (protocol.md "Commands"), checked under the trust set a `trust` event before it brought.
        if (event.type === 'command') void trustApplied().then(() => commands?.onEvent(event.data, on));
        // A new trust set (protocol.md "Trust rotation"): applied only when it checks out, else logged and ignored.
        if (event.type === 'trust') void onTrust(event.data);
        // The server says why it ends the session (a newer session of this node replaced it); the loop reconnects.
        if (event.type === 'end')
          log(`agent: the control plane ended session ${on.welcome.sessionId}: ${String((event.data as { message?: unknown })?.message)}`);
      },
    });
  };

  let helloRefusals = 0;
  let connectFailures = 0;
  let renewRefusals = 0;
  let renewFailures = 0;
  const renewalDelay = options.renewalDelay ?? renewalDelayMs;
  let renewAt = Date.now() + renewalDelay(current.notBefore, current.notAfter, Date.now());
  log(`agent: certificate valid until ${current.notAfter.toISOString()}; renewing in ${Math.round((renewAt - Date.now()) / 1000)} s`);
  const stop = async () => {
    session?.close();
    await state(null, new Date());
    return RENEWAL_EXIT.stopped;
  };

  // The first session waits a random part of the start jitter; reconnects wait by their own backoff below.
  const firstWaitMs = Math.floor(Math.random() * startJitterMs);
  if (firstWaitMs > 0 && !(await sleep(firstWaitMs, options.signal))) return stop();

  for (;;) {
    if (options.signal?.aborted) return stop();
    if (Date.now() >= current.notAfter.getTime()) {
      session?.close();
      log(`agent: the certificate expired at ${current.notAfter.toISOString()}; ${joinAgain}`);
      return RENEWAL_EXIT.expired;
    }
    if (!session) {
      try {
        session = await open(current);
        helloRefusals = 0;
        connectFailures = 0;
        log(
          `agent: session ${session.welcome.sessionId} open through ${options.gatewayUrl} (heartbeat every ${session.welcome.heartbeatSeconds} s)`,
        );
        void state(session, session.since);
      } catch (error) {
        if (error instanceof SessionRefusedError) {
          helloRefusals += 1;
          if (helloRefusals >= REFUSALS_BEFORE_GIVING_UP) {
            log(
              `agent: the control plane refused the session of ${current.spiffeId} ${helloRefusals} times (revoked, or replaced by a newer identity); ${joinAgain}`,
            );
            await state(null, new Date());
            return RENEWAL_EXIT.refused;
          }
        } else {
          connectFailures += 1;
        }
        log(`agent: could not open the session: ${(error as Error).message}`);
        if (!(await sleep(reconnectDelayMs(helloRefusals + connectFailures), options.signal))) return stop();
        continue;
      }
    }
    const open_ = session;
    // The wait until the renewal is called off when the session ends first: a node whose connection drops
    // often would otherwise keep one timer and one abort listener per reconnect until its renewal.
    const untilRenewal = cancellableSleep(Math.max(0, renewAt - Date.now()), options.signal);
    const outcome = await Promise.race([
      open_.ended.then(() => 'ended' as const),
      untilRenewal.slept.then((slept) => (slept ? ('renew' as const) : ('stopped' as const))),
      ...(commands ? [commands.actions.wait().then(() => 'asked' as const)] : []),
    ]);
    untilRenewal.cancel();
    if (outcome === 'stopped') return stop();
    // A command asked (bcd.renew: the renewal below, now; trust.refresh: a new session, whose Hello gets the set).
    const asked = outcome === 'asked' ? commands?.actions.take() : undefined;
    if (asked?.action === 'refresh') {
      try {
        const fresh = await open(current);
        // Answered on the old connection, where the command came, before it closes.
        await asked.finish({ output: {} });
        open_.close();
        session = fresh;
        void state(session, session.since);
      } catch (error) {
        await asked.finish({ error: `could not open a new session: ${(error as Error).message}` });
      }
      continue;
    }
    if (outcome === 'ended') {
      session = null;
      log('agent: the session ended; reconnecting');
      void state(null, new Date());
      // Spread out like any reconnect: after a gateway restart every agent lands here at the same moment.
      if (!(await sleep(reconnectDelayMs(connectFailures), options.signal))) return stop();
      continue;
    }
    try {
      const renewed = await renewIdentity(current, target, Date.now, undefined, (pathname, body) => open_.post(pathname, body));
      await store.replace(renewed);
      current = renewed;
      renewRefusals = 0;
      renewFailures = 0;
      renewAt = Date.now() + renewalDelay(current.notBefore, current.notAfter, Date.now());
      // The serial as the server writes it (lowercase hex), answered on the connection the command came on.
      await asked?.finish({ output: { serial: current.leaf.serialNumber.toLowerCase() } });
      log(
        `agent: renewed ${current.spiffeId} on the session's connection; valid until ${current.notAfter.toISOString()}, renewing in ${Math.round((renewAt - Date.now()) / 1000)} s`,
      );
      // Move the session to the new certificate: the new one first, so the node is never without one.
      try {
        session = await open(current);
        open_.close();
        void state(session, session.since);
      } catch (error) {
        // The old session lasts until its certificate expires; the loop reconnects with the new one when it ends.
        log(`agent: could not move the session to the new certificate yet: ${(error as Error).message}`);
      }
    } catch (error) {
      if (error instanceof RenewRefusedError) {
        renewRefusals += 1;
        if (renewRefusals >= REFUSALS_BEFORE_GIVING_UP) {
          session?.close();
          log(
            `agent: the control plane refused to renew ${current.spiffeId} ${renewRefusals} times (revoked, or replaced by a newer identity); ${joinAgain}`,
          );
          return RENEWAL_EXIT.refused;
        }
      } else {
        renewFailures += 1;
      }
      log(`agent: renewal failed: ${(error as Error).message}`);
      await asked?.finish({ error: `the renewal failed: ${(error as Error).message}` });
      const untilExpiry = current.notAfter.getTime() - Date.now();
      renewAt = Date.now() + Math.max(0, Math.min(backoffMs(renewRefusals + renewFailures - 1), untilExpiry));
    }
  }
}
