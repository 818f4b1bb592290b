import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { Http2ServerResponse } from 'node:http2';
import {
  SESSION_LEASE_PATH,
  SESSION_PATH,
  SESSION_REPLACED,
  SESSION_UNAVAILABLE,
  SESSION_WATCH_PATH,
  sseEvent,
  type HelloAccepted,
  type LeaseAnswer,
} from '../../protocol/session-wire';
import { CommandFilter } from './command-filter';

/** A relayed call to the API with the gateway's vouching for `peer` (null: none); status and body bytes. */
type ApiPost = (pathname: string, body: Buffer, peer: Buffer | null) => Promise<{ status: number; body: Buffer }>;

/**
 * A long-lived call to the API with the gateway's vouching (for no peer), whose answer is a stream of events:
 * `onEvent` hears each event's type; `ended` settles when the stream or the connection ends, or it failed.
 */
export type ApiWatch = (pathname: string, body: Buffer, onEvent: (type: string) => void) => { ended: Promise<void>; close(): void };

type Response = ServerResponse | Http2ServerResponse;

interface Stream {
  res: Response;
  write(text: string): void;
  heartbeat: NodeJS.Timeout;
  expiry: NodeJS.Timeout;
  endedByApi: boolean; // the API ended it: it needs no report back
  allowedKinds: readonly string[] | null; // the command kinds its certificate allows (null: any)
}

const JSON_HEADERS = { 'content-type': 'application/json', 'cache-control': 'no-store' };
/**
 * Hellos relayed to the API at once. After a restart every agent says Hello within seconds; beyond this many
 * they wait here (a pending promise each) instead of queueing in the API, whose event loop and database pool
 * also serve the console: in bench:sessions an unbounded storm held a console list for seconds.
 */
export const MAX_HELLOS_IN_FLIGHT = 16;
/**
 * Hellos waiting for one of those slots. Past this many, a Hello is answered at once with the retryable 503
 * (SESSION_UNAVAILABLE), which the agent retries with its jittered backoff: a Hello that waits longer than
 * the agent's welcome timeout (15 s) is wasted work (its handshake included), and a queue that grows without
 * bound in a reconnect storm turns every Hello into one of those.
 */
export const MAX_HELLOS_WAITING = 1024;
const newGatewayId = () => `gw_${randomBytes(12).toString('hex')}`;
// setTimeout's ceiling (about 24.8 days); a certificate lives at most a day.
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * The gateway's half of sessions (protocol.md "Sessions"). It relays each Hello to the API with its vouching
 * and its own id, and for an accepted one holds the event stream: the signed `welcome`, then a `heartbeat`
 * every `heartbeatSeconds`, until the agent goes away, the certificate the session was opened with expires, or
 * the API says to end it. It keeps no session state of its own that anyone else believes: its lease in
 * PostgreSQL, renewed by {@link SessionHub.refresh} every few seconds, is what makes its sessions count, and the
 * same call reports the sessions that closed here and hears which to end (a revoked certificate, a reclaim, a
 * retired node) and which sessions to send a new trust set (a `trust` event; `more` in the answer: call again).
 */
export class SessionHub {
  private gatewayId = newGatewayId();
  private readonly streams = new Map<string, Stream>();
  private closed: string[] = [];
  private readonly commands = new CommandFilter();
  private timer: NodeJS.Timeout | null = null;
  private registered: Promise<void> | null = null;
  private stopped = false;
  private refreshMs = 2_000;
  private hellosInFlight = 0;
  private readonly waitingHellos: Array<() => void> = [];
  private refreshing: Promise<void> | null = null;
  private refreshAgain = false;
  private watching: { close(): void } | null = null;
  /**
   * Lease calls made, how many of them an announcement on the watch stream asked for, and Hellos answered
   * "retry" because {@link MAX_HELLOS_WAITING} were already waiting.
   */
  readonly stats = { leaseCalls: 0, announcedLeaseCalls: 0, watchesOpened: 0, hellosShed: 0 };

  constructor(
    private readonly post: ApiPost,
    private readonly basePath: string,
    /** Without it the gateway only polls (every `refreshMs`). */
    private readonly watch?: ApiWatch,
  ) {}

  /** Open streams (for tests and the benchmark). */
  get size() {
    return this.streams.size;
  }

  get id() {
    return this.gatewayId;
  }

  /** Registers the lease and keeps renewing it until {@link stop}; watches the API for sessions to end. */
  start(): Promise<void> {
    this.registered ??= this.refresh().then(() => {
      this.schedule();
      void this.watchLoop();
    });
    return this.registered;
  }

  /**
   * Keeps a watch stream to the API open: the API announces there, within moments of the transaction that
   * revoked, reclaimed, deleted or expired a certificate, that a session of this gateway must end, and the
   * gateway makes its lease call at once instead of at the next scheduled one. Each (re)opened stream is
   * followed by a lease call too, for what was announced while it was down. The schedule stays the fallback.
   */
  private async watchLoop() {
    if (!this.watch) return;
    let failures = 0;
    while (!this.stopped) {
      const gatewayId = this.gatewayId;
      let ready = false;
      const watch = this.watch(`${this.basePath}${SESSION_WATCH_PATH}`, Buffer.from(JSON.stringify({ gatewayId })), (type) => {
        if (type === 'ready') {
          ready = true;
          failures = 0;
          this.stats.watchesOpened += 1;
          if (this.stats.watchesOpened > 1) void this.refresh(true);
        } else if (type === 'refresh') {
          void this.refresh(true);
        }
      });
      this.watching = watch;
      await watch.ended;
      this.watching = null;
      if (this.stopped) return;
      // A lease lost and registered again under a new id reopens at once; a failing API is retried calmly.
      if (gatewayId !== this.gatewayId && ready) continue;
      failures += 1;
      await new Promise((resolve) => setTimeout(resolve, Math.min(10_000, 500 * 2 ** Math.min(failures, 5))).unref());
    }
  }

  private schedule() {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.refresh().finally(() => this.schedule()), this.refreshMs);
    this.timer.unref();
  }

  /**
   * A lease call now: one at a time; asked for while one is under way, one more follows it (so a change
   * announced during a call is seen by the next).
   */
  refresh(announced = false): Promise<void> {
    if (announced) this.stats.announcedLeaseCalls += 1;
    if (this.refreshing) {
      this.refreshAgain = true;
      return this.refreshing;
    }
    this.refreshing = (async () => {
      try {
        do {
          this.refreshAgain = false;
          await this.leaseCall();
        } while (this.refreshAgain && !this.stopped);
      } finally {
        this.refreshing = null;
      }
    })();
    return this.refreshing;
  }

  /** One lease call: extends the lease, reports closed sessions, ends the ones the API names. */
  private async leaseCall(): Promise<void> {
    this.stats.leaseCalls += 1;
    // A bounded body (about 50 KB): after a mass disconnect the rest follows in the next calls, at once.
    const closed = this.closed.splice(0, 1500);
    const refusedCommands = this.commands.take();
    let answer: LeaseAnswer;
    try {
      const call = { gatewayId: this.gatewayId, closed, ...(refusedCommands.length ? { refusedCommands } : {}) };
      const reply = await this.post(`${this.basePath}${SESSION_LEASE_PATH}`, Buffer.from(JSON.stringify(call)), null);
      if (reply.status !== 200) throw new Error(`the API answered ${reply.status}`);
      answer = JSON.parse(reply.body.toString('utf8')) as LeaseAnswer;
    } catch {
      // The API is away: report these next time. The lease may run out meanwhile; the API then says so.
      this.closed.unshift(...closed);
      this.commands.restore(refusedCommands);
      this.refreshMs = 1_000;
      return;
    }
    this.refreshMs = answer.refreshMs;
    if (!answer.live) {
      // Our lease ran out (the API was unreachable, or this process stalled): every session of it was ended
      // by the API's sweep, so end the streams too; agents come back with a Hello under a new lease.
      this.endAll();
      this.gatewayId = newGatewayId();
      // The watch stream names the old id: reopen it under the new one.
      this.watching?.close();
      return this.leaseCall();
    }
    // A replaced session hears why before its stream ends (an `end` event, which an agent that does not know it ignores).
    for (const id of answer.replaced ?? []) this.streams.get(id)?.write(sseEvent('end', SESSION_REPLACED));
    for (const id of answer.end) this.end(id, true);
    for (const ask of answer.run ?? []) this.streams.get(ask.sessionId)?.write(sseEvent('acceptance', ask.acceptance));
    for (const set of answer.trust ?? []) this.streams.get(set.sessionId)?.write(sseEvent('trust', set.event));
    // A command of a kind the session's certificate does not allow is dropped here and reported at once.
    for (const { sessionId, event } of answer.commands ?? []) {
      const stream = this.streams.get(sessionId);
      if (stream && this.commands.admit(event, stream.allowedKinds)) stream.write(sseEvent('command', event));
    }
    // More trust sets or commands are due (a change reaches every session in consecutive calls), or more to report.
    if (answer.more || this.closed.length >= 1500 || this.commands.pending) return this.leaseCall();
  }

  private end(id: string, byApi: boolean) {
    const stream = this.streams.get(id);
    if (!stream) return;
    stream.endedByApi = byApi;
    stream.res.end();
  }

  private endAll() {
    for (const id of [...this.streams.keys()]) this.end(id, true);
  }

  /** Stops renewing the lease and ends every stream (the agents reconnect elsewhere or after a restart). */
  stop() {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.watching?.close();
    for (const id of [...this.streams.keys()]) this.end(id, false);
  }

  /** A Hello (its body read): relayed, and on acceptance the event stream held open on `res`. */
  async hello(res: Response, peer: Buffer | null, body: Buffer, certificateNotAfter: number | null): Promise<void> {
    try {
      await this.start();
    } catch {
      // start() never rejects (refresh swallows failures), but a lease not yet live is answered below.
    }
    const relayed = Buffer.from(JSON.stringify({ gatewayId: this.gatewayId, hello: body.toString('utf8') }));
    let reply: { status: number; body: Buffer };
    if (this.hellosInFlight >= MAX_HELLOS_IN_FLIGHT && this.waitingHellos.length >= MAX_HELLOS_WAITING) {
      this.stats.hellosShed += 1;
      if (!res.destroyed)
        (res as ServerResponse)
          .writeHead(SESSION_UNAVAILABLE.status, { ...JSON_HEADERS, 'content-length': SESSION_UNAVAILABLE.body.length })
          .end(SESSION_UNAVAILABLE.body);
      return;
    }
    // A released slot passes straight to the next waiting Hello, so the count never overshoots.
    if (this.hellosInFlight >= MAX_HELLOS_IN_FLIGHT) await new Promise<void>((resolve) => this.waitingHellos.push(resolve));
    else this.hellosInFlight++;
    try {
      reply = await this.post(`${this.basePath}${SESSION_PATH}`, relayed, peer);
    } catch {
      reply = SESSION_UNAVAILABLE;
    } finally {
      const next = this.waitingHellos.shift();
      if (next) next();
      else this.hellosInFlight--;
    }
    // The agent went away while the API decided (an HTTP/1.1 request is destroyed once its body is read, so
    // only the response tells).
    if (res.destroyed) return;
    if (reply.status !== 200) {
      // The refusal's bytes exactly as the API made them (the uniform 403), or a retryable 5xx.
      (res as ServerResponse).writeHead(reply.status, { ...JSON_HEADERS, 'content-length': reply.body.length }).end(reply.body);
      return;
    }
    const accepted = JSON.parse(reply.body.toString('utf8')) as HelloAccepted;
    (res as ServerResponse).writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store' });
    // Both response kinds write the same way; their write() overloads differ only in types.
    const write = (text: string) => (res as ServerResponse).write(text);
    write(sseEvent('welcome', accepted.welcome));
    // The agent holds an older trust set: the server's follows the welcome at once.
    if (accepted.trust) write(sseEvent('trust', accepted.trust));
    const stream: Stream = {
      res,
      write,
      endedByApi: false,
      allowedKinds: accepted.allowedKinds ?? null,
      heartbeat: setInterval(
        () => write(sseEvent('heartbeat', { serverTime: Math.floor(Date.now() / 1000) })),
        accepted.heartbeatSeconds * 1000,
      ),
      // The server ends a session when the certificate it was opened with expires (the API would refuse it).
      expiry: setTimeout(
        () => this.end(accepted.sessionId, false),
        Math.min(MAX_TIMER_MS, Math.max(0, (certificateNotAfter ?? Infinity) - Date.now())),
      ),
    };
    this.streams.set(accepted.sessionId, stream);
    if (accepted.acceptance) write(sseEvent('acceptance', accepted.acceptance));
    res.on('close', () => {
      clearInterval(stream.heartbeat);
      clearTimeout(stream.expiry);
      this.streams.delete(accepted.sessionId);
      if (!stream.endedByApi) this.closed.push(accepted.sessionId);
    });
  }
}
