/**
 * True for the errors a request raises when its client went away mid-body (a closed socket, a reset, an
 * aborted stream). Clients cause these at will and without credentials, so they are logged as one
 * rate-limited line (logLimited), never as an error per connection.
 */
export function isClientAbort(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as NodeJS.ErrnoException).code ?? (error as { cause?: NodeJS.ErrnoException }).cause?.code;
  return (
    error.name === 'AbortError' ||
    error.name === 'ResponseAborted' ||
    code === 'ECONNRESET' ||
    code === 'EPIPE' ||
    code === 'ERR_STREAM_PREMATURE_CLOSE' ||
    error.message === 'aborted' ||
    (error.message === 'terminated' && code === undefined)
  );
}
