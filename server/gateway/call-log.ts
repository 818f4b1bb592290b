import { readLeafNames } from '../../protocol/certificate-names';

/** The peer's SPIFFE ID for the log (its first URI SAN), or '-' when none was presented or verified. */
export function peerName(raw: Buffer | undefined): string {
  if (!raw) return '-';
  try {
    return readLeafNames(raw).uris[0] ?? '-';
  } catch {
    return '-';
  }
}

/**
 * Log lines to stdout, written together once per turn of the event loop: one write for the calls that ended
 * together instead of one each.
 */
export function stdoutLines(): (line: string) => void {
  let pending = '';
  return (line) => {
    if (!pending)
      setImmediate(() => {
        process.stdout.write(pending);
        pending = '';
      });
    pending += line + '\n';
  };
}

/** The socket's peer as the API records it: IPv4-mapped IPv6 (`::ffff:10.0.0.1`) is the IPv4 address. */
export function callerAddressOf(remote: string | undefined): string | undefined {
  if (!remote) return undefined;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(remote);
  return (mapped ? mapped[1]! : remote).toLowerCase();
}
