/**
 * Resolves once everything written to `stream` so far has left the process. On POSIX a pipe is written
 * asynchronously: what did not fit into the pipe at once waits in the stream's queue, and `process.exit`
 * drops it (a `--json` answer piped into `jq` was cut at 128 KiB). Write callbacks run in order, so an
 * empty write's callback runs after every earlier write has been handed to the OS.
 */
function flushed(stream: NodeJS.WriteStream): Promise<void> {
  if (stream.destroyed || !stream.writable) return Promise.resolve();
  return new Promise((resolve) => {
    // A reader that went away (EPIPE) ends the wait too: there is nobody left to write to.
    stream.once('error', () => resolve());
    stream.write('', () => resolve());
  });
}

/** Exits with `code` after stdout and stderr are fully written. */
export async function exitWhenFlushed(code: number): Promise<never> {
  await Promise.all([flushed(process.stdout), flushed(process.stderr)]);
  process.exit(code);
}
