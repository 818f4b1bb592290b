import { MAX_GRACE_SECONDS, MAX_HEARTBEAT_SECONDS, MAX_SESSIONS_PER_NODE } from '../../protocol/session-wire';

/**
 * How sessions are kept. `heartbeatSeconds` goes into every welcome (the gateway writes a heartbeat that
 * often); `graceSeconds` is how long a node whose last session ended may come back without
 * `node.disconnected`; a gateway's lease lasts `leaseSeconds` (never longer than the grace, so a dead gateway's
 * nodes are disconnected on time) and is renewed every `refreshMs`, which is also how soon a revoked
 * certificate's session ends. The sweep that publishes `node.disconnected` runs every `sweepMs`. A node holds at
 * most `maxSessionsPerNode` live sessions: a Hello beyond them ends the node's oldest session.
 */
export interface SessionSettings {
  heartbeatSeconds: number;
  graceSeconds: number;
  leaseSeconds: number;
  refreshMs: number;
  sweepMs: number;
  maxSessionsPerNode: number;
}

const DEFAULT_HEARTBEAT_SECONDS = 30;
const DEFAULT_GRACE_SECONDS = 30;
/**
 * Sessions a node holds at once. One is the agent's; a second covers the moment it moves its session to a
 * renewed certificate (the new one opens before the old one closes); a third leaves room for a reconnect
 * whose old connection the gateway has not noticed closing yet. Never fewer than two, so a move never ends the
 * session it is moving from.
 */
export const DEFAULT_MAX_SESSIONS_PER_NODE = 3;
const MIN_SESSIONS_PER_NODE = 2;

function wholeNumber(env: Record<string, string | undefined>, name: string, min: number, max: number, fallback: number): number {
  const value = env[name];
  if (value === undefined || value === '') return fallback;
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < min || n > max) throw new Error(`${name} must be a whole number from ${min} to ${max}, not ${value}`);
  return n;
}

/** Settings from the two seconds that matter; the lease and the timers follow from the grace. */
export function sessionSettings(
  heartbeatSeconds: number,
  graceSeconds: number,
  maxSessionsPerNode = DEFAULT_MAX_SESSIONS_PER_NODE,
): SessionSettings {
  const leaseSeconds = Math.min(10, graceSeconds);
  return {
    heartbeatSeconds,
    graceSeconds,
    leaseSeconds,
    refreshMs: Math.max(250, Math.floor((leaseSeconds * 1000) / 5)),
    sweepMs: Math.max(250, Math.min(5_000, Math.floor((graceSeconds * 1000) / 4))),
    maxSessionsPerNode,
  };
}

/**
 * BETTER_COMPUTE_SESSION_HEARTBEAT_SECONDS (1 to 60, default 30), BETTER_COMPUTE_SESSION_GRACE_SECONDS
 * (1 to 60, default 30) and BETTER_COMPUTE_SESSION_MAX_PER_NODE (2 to 4, default 3).
 *
 * @throws Error naming the variable when a value is out of range.
 */
export function sessionSettingsFromEnv(env: Record<string, string | undefined> = process.env): SessionSettings {
  return sessionSettings(
    wholeNumber(env, 'BETTER_COMPUTE_SESSION_HEARTBEAT_SECONDS', 1, MAX_HEARTBEAT_SECONDS, DEFAULT_HEARTBEAT_SECONDS),
    wholeNumber(env, 'BETTER_COMPUTE_SESSION_GRACE_SECONDS', 1, MAX_GRACE_SECONDS, DEFAULT_GRACE_SECONDS),
    wholeNumber(env, 'BETTER_COMPUTE_SESSION_MAX_PER_NODE', MIN_SESSIONS_PER_NODE, MAX_SESSIONS_PER_NODE, DEFAULT_MAX_SESSIONS_PER_NODE),
  );
}
