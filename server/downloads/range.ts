/** A byte range of a file, inclusive, as HTTP counts it. */
interface ByteRange {
  start: number;
  end: number;
}

/**
 * Parses a `Range` header against a file of `size` bytes (RFC 9110 §14.1.2): one range, `a-b`, `a-` or `-n`.
 * Returns null to serve the whole file (no header, another unit, several ranges, or syntax we do not
 * understand: the RFC lets a server ignore those), or 'unsatisfiable' for a range wholly past the end.
 */
export function parseRange(header: string | undefined, size: number): ByteRange | 'unsatisfiable' | null {
  if (!header) return null;
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!match || (match[1] === '' && match[2] === '')) return null;
  if (match[1] === '') {
    const suffix = Number(match[2]);
    if (suffix === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(match[1]);
  const end = match[2] === '' ? size - 1 : Math.min(Number(match[2]), size - 1);
  if (match[2] !== '' && Number(match[2]) < start) return null;
  if (start >= size) return 'unsatisfiable';
  return { start, end };
}
