/**
 * The server's log. Lines are single JSON objects on stderr. Callers pass ids and hashes, never secrets;
 * `redact` strips anything shaped like one of our bearer credentials as a last line of defence.
 */
const SECRET_SHAPES = [/bcjt_[A-Za-z0-9_.-]+/g, /bcak_[A-Za-z0-9_.-]+/g, /eyJ[A-Za-z0-9_-]{10,}(\.[A-Za-z0-9_-]*){2,4}/g];

export function redact(text: string): string {
  return SECRET_SHAPES.reduce((s, re) => s.replace(re, '[redacted]'), text);
}

export function logError(message: string, error?: unknown) {
  const detail = error instanceof Error ? `${error.name}: ${error.message}` : String(error ?? '');
  process.stderr.write(redact(JSON.stringify({ level: 'error', time: new Date().toISOString(), message, error: detail })) + '\n');
}
