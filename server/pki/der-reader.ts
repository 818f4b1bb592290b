/** One TLV located in a buffer: `start` is the tag's offset, `contentStart..end` the content. */
export interface DerNode {
  tag: number;
  start: number;
  contentStart: number;
  end: number;
}

/**
 * Reads the TLV at `offset` (definite lengths only, single-byte tags, at most 4 length bytes), within `limit`.
 * Throws a plain `Error('malformed DER')`; callers turn it into a DomainError that says what was being read,
 * never the bytes.
 */
export function readNode(buf: Uint8Array, offset = 0, limit = buf.length): DerNode {
  if (offset + 2 > limit) throw new Error('malformed DER');
  const tag = buf[offset];
  if ((tag & 0x1f) === 0x1f) throw new Error('malformed DER');
  let length = buf[offset + 1];
  let contentStart = offset + 2;
  if (length & 0x80) {
    const count = length & 0x7f;
    if (count === 0 || count > 4 || contentStart + count > limit) throw new Error('malformed DER');
    length = 0;
    for (let i = 0; i < count; i++) length = length * 256 + buf[contentStart + i];
    contentStart += count;
  }
  const end = contentStart + length;
  if (end > limit) throw new Error('malformed DER');
  return { tag, start: offset, contentStart, end };
}

/** The TLVs directly inside a constructed `node`, in order. */
export function readChildren(buf: Uint8Array, node: DerNode): DerNode[] {
  const children: DerNode[] = [];
  for (let offset = node.contentStart; offset < node.end; ) {
    const child = readNode(buf, offset, node.end);
    children.push(child);
    offset = child.end;
  }
  return children;
}

/** Reads a whole buffer as exactly one TLV (no trailing bytes). */
export function readRoot(buf: Uint8Array): DerNode {
  const node = readNode(buf, 0, buf.length);
  if (node.end !== buf.length) throw new Error('malformed DER');
  return node;
}

/** The complete encoding (tag, length and content) of `node`. */
export const encodingOf = (buf: Buffer, node: DerNode): Buffer => buf.subarray(node.start, node.end);
/** The content octets of `node`. */
export const contentOf = (buf: Buffer, node: DerNode): Buffer => buf.subarray(node.contentStart, node.end);
