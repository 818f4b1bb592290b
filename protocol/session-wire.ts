/**
 * The Sessions wire contract (protocol.md "Sessions") and the gateway's internal calls to the API. Pure: no
 * database and no keys, so the gateway and the agent import it too.
 */

/** The largest Hello body read; a real one is under 100 bytes. */
export const MAX_HELLO_BODY_BYTES = 4 * 1024;
/** The protocol's ceiling on `heartbeatSeconds` and on the disconnect grace. */
export const MAX_HEARTBEAT_SECONDS = 60;
export const MAX_GRACE_SECONDS = 60;
/**
 * The protocol's ceiling on a node's live sessions: a Hello beyond a node's limit ends its oldest session, so
 * moving to a new connection always works and a copied certificate cannot pile up streams.
 */
export const MAX_SESSIONS_PER_NODE = 4;
/** The data of the `end` event the gateway writes before it ends a session the control plane ended. */
interface SessionEnd {
  /** `replaced`: a newer Hello of the same node took its place (the node holds at most its limit of sessions). */
  reason: 'replaced';
  message: string;
}
export const SESSION_REPLACED: SessionEnd = {
  reason: 'replaced',
  message: 'A newer session of this node replaced this one (a node holds at most a few sessions at once)',
};

const json = (value: unknown) => Buffer.from(JSON.stringify(value));

/** Every refused Hello is these bytes, whatever the reason. */
export const SESSION_REFUSED = { status: 403, body: json({ code: 'ACCESS_DENIED', message: 'Session refused' }) } as const;
/** The gateway's lease is not live (it just started, or lost it): the gateway registers again; the agent retries. */
export const SESSION_UNAVAILABLE = {
  status: 503,
  body: json({ code: 'INVALID_STATE', message: 'The gateway is not ready; retry' }),
} as const;

/** Paths under the base path. `/v1/session` is the agent's; the gateway's lease call is internal. */
export const SESSION_PATH = '/v1/session';
export const SESSION_LEASE_PATH = '/v1/session/lease';
/** Where bcd reports an acceptance run, on its session's connection. */
export const SESSION_ACCEPTANCE_PATH = '/v1/session/acceptance';
/** The gateway's watch stream (internal): the API says when a lease call would end a session now. */
export const SESSION_WATCH_PATH = '/v1/session/watch';

/** An acceptance run the control plane asks of a node (the `acceptance` event's data). */
interface AcceptanceAsk {
  runId: string;
  checks: unknown[];
}

/**
 * What the gateway relays to the API for a Hello: its own id and the agent's body, as its vouching binds
 * them (the vouching signs the hash of these bytes, so the gateway id cannot be swapped on the way).
 */
export interface RelayedHello {
  gatewayId: string;
  hello: string;
}

/** A signed envelope as the gateway relays it (protocol.md "Answers"): it never reads inside. */
interface RelayedEnvelope {
  body: string;
  sig: string;
  sigs?: Array<{ pin: string; sig: string }>;
}

/** The largest `trustVersion` a Hello may report (PostgreSQL's integer). */
const MAX_TRUST_VERSION = 2 ** 31 - 1;
/** At most this many `commandKinds` in a Hello, each a short name (protocol.md "Commands"). */
const MAX_COMMAND_KINDS = 32;
const COMMAND_KIND = /^[a-z0-9][a-z0-9._-]{0,63}$/;

/**
 * The Hello's `trustVersion`: the version of the trust set the agent holds, 0 for none (also when absent);
 * null when it is not a whole number from 0 to {@link MAX_TRUST_VERSION}.
 */
export function parseTrustVersion(value: unknown): number | null {
  if (value === undefined) return 0;
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 && value <= MAX_TRUST_VERSION ? value : null;
}

/**
 * The Hello's `commandKinds` (absent: none): at most {@link MAX_COMMAND_KINDS} distinct kinds of at most 64
 * characters (lowercase letters, digits, `.`, `_`, `-`); null for anything else.
 */
export function parseCommandKinds(value: unknown): string[] | null {
  if (value === undefined) return [];
  if (!Array.isArray(value) || value.length > MAX_COMMAND_KINDS) return null;
  if (!value.every((kind): kind is string => typeof kind === 'string' && COMMAND_KIND.test(kind))) return null;
  return [...new Set(value)];
}

/** The API's answer to an accepted Hello, to the gateway (which writes the stream). */
export interface HelloAccepted {
  sessionId: string;
  heartbeatSeconds: number;
  /** The signed `welcome` envelope, written as the first event's data. */
  welcome: RelayedEnvelope;
  /** The signed trust set, written as the `trust` event right after the welcome (the Hello reported an older version). */
  trust?: RelayedEnvelope;
  /** A run to ask at once, as the event after the welcome. */
  acceptance?: AcceptanceAsk;
  /**
   * The command kinds the session's certificate allows (protocol.md "Commands"; null or absent: no
   * restriction): the gateway drops a `command` event of another kind and reports it in its next lease call.
   */
  allowedKinds?: string[] | null;
}

/** The gateway's lease call: the sessions that ended at the gateway since its last call. */
export interface LeaseCall {
  gatewayId: string;
  closed: string[];
  /** Commands the gateway dropped since its last call: their kind is not one the session's certificate allows. */
  refusedCommands?: string[];
}

/** The API's answer: the sessions the gateway must end now, and when to call again. */
export interface LeaseAnswer {
  /** False when the lease had expired: the gateway ends every session and starts over with a new id. */
  live: boolean;
  end: string[];
  /** Of `end`, those a newer session of their node replaced: the gateway says so on the stream before ending it. */
  replaced?: string[];
  refreshMs: number;
  /** Acceptance runs to ask on sessions this gateway holds. */
  run?: Array<{ sessionId: string; acceptance: AcceptanceAsk }>;
  /** Signed trust sets to write as `trust` events (at most {@link MAX_TRUST_SESSIONS_PER_LEASE} per answer). */
  trust?: Array<{ sessionId: string; event: RelayedEnvelope }>;
  /**
   * Signed commands to write as `command` events (at most {@link MAX_COMMANDS_PER_LEASE} per answer), each
   * sent once: the API marked it sent to that session when it put it here.
   */
  commands?: Array<{ sessionId: string; event: RelayedEnvelope }>;
  /** More trust sets or commands are due for this gateway's sessions: call again at once. */
  more?: boolean;
}

/** Commands one lease answer carries at most (each a signed envelope of well under 1 KB). */
export const MAX_COMMANDS_PER_LEASE = 512;
/** Refused command ids one lease call reports at most (the rest follow in the next call). */
export const MAX_REFUSED_COMMANDS_PER_LEASE = 1024;

/**
 * Sessions one lease answer carries a trust set to at most (each a signed envelope of a few KB): after a
 * change, a gateway holding thousands of sessions drains them in consecutive calls.
 */
export const MAX_TRUST_SESSIONS_PER_LEASE = 256;

/** One Server-Sent Event: `event:` and one `data:` line of JSON. */
export const sseEvent = (type: string, data: unknown) => `event: ${type}\ndata: ${JSON.stringify(data)}\n\n`;
