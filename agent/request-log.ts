import { randomBytes } from 'node:crypto';

/**
 * The agent's request log: one JSON line on stderr per request it sends (join, the well-known document,
 * renew, the session's Hello and the calls on it), in the shape of the API's request lines. The id goes out
 * as `x-request-id`, so the gateway's and the API's lines of the same call can be found by it. A line holds
 * the method, the path (never the query string), the status and the latency: never a header, a body, a
 * token or a key.
 */

/** The header that carries a request's id (server/metrics/request-log.ts reads the same name). */
export const REQUEST_ID_HEADER = 'x-request-id';

const LEVELS = ['debug', 'info', 'warn', 'error', 'silent'] as const;
type AgentLogLevel = (typeof LEVELS)[number];

// `warn` unless an entry point says otherwise: a library caller (a test, `dev --sim` with thousands of
// simulated agents) stays quiet; bcd and `better-compute agent` choose `info`.
let defaultLevel: AgentLogLevel = 'warn';

/** The level used while BETTER_COMPUTE_LOG_LEVEL is unset (or not a level): set once by an entry point. */
export function setAgentLogDefault(level: AgentLogLevel): void {
  defaultLevel = level;
}

/** BETTER_COMPUTE_LOG_LEVEL, else the entry point's default; read on each call. */
export function agentLogLevel(): AgentLogLevel {
  const configured = (process.env.BETTER_COMPUTE_LOG_LEVEL ?? '').toLowerCase() as AgentLogLevel;
  return LEVELS.includes(configured) ? configured : defaultLevel;
}

const enabled = (level: Exclude<AgentLogLevel, 'silent'>) => LEVELS.indexOf(level) >= LEVELS.indexOf(agentLogLevel());

export const newAgentRequestId = () => `req_${randomBytes(12).toString('base64url')}`;

interface AgentRequestLine {
  requestId: string;
  method: string;
  /** A path or a URL: only its path is logged. */
  path: string;
  /** The answer's status; null when none came (a network error, a timeout, a gateway refused by its pin). */
  status: number | null;
  startedAt: number;
}

/**
 * Writes the line of one finished request: `info` for an answer below 500, `warn` for a 5xx or no answer
 * (which the agent retries, so an operator at `warn` sees the trouble and not the routine).
 */
export function logAgentRequest(line: AgentRequestLine, now = performance.now()): void {
  const level = line.status === null || line.status >= 500 ? 'warn' : 'info';
  if (!enabled(level)) return;
  const path = line.path.startsWith('/') ? line.path.split('?', 1)[0]! : URL.canParse(line.path) ? new URL(line.path).pathname : '-';
  const record = {
    level,
    time: new Date().toISOString(),
    message: 'agent request',
    requestId: line.requestId,
    method: line.method,
    path,
    status: line.status,
    ms: Math.round((now - line.startedAt) * 10) / 10,
  };
  process.stderr.write(`${JSON.stringify(record)}\n`);
}

/** A `fetch` that sends an `x-request-id` with every request and logs each one when its answer's head arrives. */
export function loggedFetch(inner: typeof fetch): typeof fetch {
  return (async (input: string | URL | Request, init: RequestInit = {}) => {
    const requestId = newAgentRequestId();
    const startedAt = performance.now();
    const method = init.method ?? (input instanceof Request ? input.method : 'GET');
    const path = input instanceof Request ? input.url : String(input);
    // A plain record, not a Headers object: the pinned fetch spreads what it is given.
    const headers = { ...Object.fromEntries(new Headers(init.headers).entries()), [REQUEST_ID_HEADER]: requestId };
    try {
      const response = await inner(input, { ...init, headers });
      logAgentRequest({ requestId, method, path, status: response.status, startedAt });
      return response;
    } catch (error) {
      logAgentRequest({ requestId, method, path, status: null, startedAt });
      throw error;
    }
  }) as typeof fetch;
}
