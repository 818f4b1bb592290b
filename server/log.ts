/**
 * The server's log. Lines are single JSON objects on stderr. Callers pass ids and hashes, never secrets;
 * `redact` strips anything shaped like one of our bearer credentials as a last line of defence.
 */
const SECRET_SHAPES = [
  /bcjt_[A-Za-z0-9_.-]+/g,
  /bcak_[A-Za-z0-9_.-]+/g,
  /bcinv_[A-Za-z0-9_.-]+/g,
  /eyJ[A-Za-z0-9_-]{10,}(\.[A-Za-z0-9_-]*){2,4}/g,
];

export function redact(text: string): string {
  return SECRET_SHAPES.reduce((s, re) => s.replace(re, '[redacted]'), text);
}

const LEVELS = ['debug', 'info', 'warn', 'error', 'silent'] as const;
type LogLevel = (typeof LEVELS)[number];

/**
 * BETTER_COMPUTE_LOG_LEVEL: the least severe level written (`debug`, `info`, `warn`, `error`, or `silent`);
 * `info` by default, which includes one line per request. Read on each call, so a test can change it.
 */
export function logLevelEnabled(level: Exclude<LogLevel, 'silent'>): boolean {
  const configured = (process.env.BETTER_COMPUTE_LOG_LEVEL || 'info').toLowerCase() as LogLevel;
  const threshold = LEVELS.includes(configured) ? LEVELS.indexOf(configured) : LEVELS.indexOf('info');
  return LEVELS.indexOf(level) >= threshold;
}

let stopping = false;

/**
 * The process is stopping (a signal arrived): the database may be going away with it (Ctrl-C reaches the
 * embedded PostgreSQL too), so connection failures from then on are expected and not logged as errors.
 */
export function markStopping() {
  stopping = true;
}

export function isStopping(): boolean {
  return stopping;
}

/** A warn line: `fields` follow the message; `now` (epoch ms) is the line's time, the current time by default. */
export function logWarn(message: string, fields: Record<string, unknown> = {}, now = Date.now()) {
  if (!logLevelEnabled('warn')) return;
  process.stderr.write(redact(JSON.stringify({ level: 'warn', time: new Date(now).toISOString(), message, ...fields })) + '\n');
}

/** A failure that only says the database connection went away (PostgreSQL's admin_shutdown, a closed socket). */
function isConnectionGone(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  return (error as { code?: unknown }).code === '57P01' || /Connection terminated|ECONNRESET|ECONNREFUSED/.test(error.message);
}

export function logError(message: string, error?: unknown) {
  if (!logLevelEnabled('error')) return;
  // Stopping takes the database down too (the embedded one gets the same Ctrl-C): not an error worth a line.
  if (stopping && isConnectionGone(error)) return;
  const detail = error instanceof Error ? `${error.name}: ${error.message}` : String(error ?? '');
  process.stderr.write(redact(JSON.stringify({ level: 'error', time: new Date().toISOString(), message, error: detail })) + '\n');
}

const LIMITED_WINDOW_MS = 60_000;
const limited = new Map<string, { until: number; suppressed: number }>();

/**
 * One short line (no stack) for something a client can cause without credentials (a bad session cookie,
 * an aborted upload): at most one line per `key` and minute in this process, naming how many were
 * suppressed since, so a flood of bad requests cannot flood the log.
 */
export function logLimited(key: string, message: string, now = Date.now()) {
  if (!logLevelEnabled('warn')) return;
  const entry = limited.get(key);
  if (entry && now < entry.until) {
    entry.suppressed += 1;
    return;
  }
  const suppressed = entry?.suppressed ?? 0;
  if (limited.size > 1000) limited.clear(); // keys are a small fixed set; this only bounds a mistake
  limited.set(key, { until: now + LIMITED_WINDOW_MS, suppressed: 0 });
  logWarn(message, suppressed ? { suppressed } : {}, now);
}
