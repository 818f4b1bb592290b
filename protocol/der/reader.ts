/**
 * A minimal, strict DER reader: single-byte tags, definite minimal lengths, no reading past the enclosing
 * element. It only walks structure; callers decide what each element must be. The one reader of the code
 * base: the CSR parser, the PKI (CA certificates, key identifiers) and the agent's certificate checks all read
 * bytes the same way, and all refuse BER.
 */

/** One tag-length-value element of a DER buffer. */
export interface DerElement {
  /** The identifier octet (for example 0x30 for SEQUENCE, 0xa0 for [0] constructed). */
  readonly tag: number;
  /** Offset of the identifier octet. */
  readonly start: number;
  /** Offset of the first content octet. */
  readonly contentStart: number;
  /** Offset just past the last content octet. */
  readonly end: number;
}

/** Thrown for any structural violation; callers translate it into their own error. */
export class DerError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DerError';
  }
}

/** The byte at `index`, or a DerError when the buffer ends first (a `limit` past the buffer's end included). */
function byteAt(buf: Uint8Array, index: number): number {
  const byte = buf[index];
  if (byte === undefined) throw new DerError('truncated element');
  return byte;
}

/**
 * Reads the element at `offset`, which must end at or before `limit`. Rejects high-tag-number form,
 * indefinite lengths, non-minimal length octets and lengths beyond 2^24.
 */
export function readElement(buf: Uint8Array, offset: number, limit: number = buf.length): DerElement {
  if (offset + 2 > limit) throw new DerError('truncated element');
  const tag = byteAt(buf, offset);
  if ((tag & 0x1f) === 0x1f) throw new DerError('high tag numbers are not supported');
  let length = byteAt(buf, offset + 1);
  let contentStart = offset + 2;
  if (length & 0x80) {
    const octets = length & 0x7f;
    if (octets === 0) throw new DerError('indefinite length');
    if (octets > 3) throw new DerError('length too large');
    if (contentStart + octets > limit) throw new DerError('truncated length');
    if (buf[contentStart] === 0) throw new DerError('non-minimal length');
    length = 0;
    for (let i = 0; i < octets; i++) length = (length << 8) | byteAt(buf, contentStart + i);
    if (length < 0x80) throw new DerError('non-minimal length');
    contentStart += octets;
  }
  const end = contentStart + length;
  if (end > limit) throw new DerError('element overruns its container');
  return { tag, start: offset, contentStart, end };
}

/** Reads a whole buffer as exactly one element: nothing may follow it. */
export function readRoot(buf: Uint8Array): DerElement {
  const element = readElement(buf, 0, buf.length);
  if (element.end !== buf.length) throw new DerError('trailing bytes after the element');
  return element;
}

/** Reads the element at `offset` and requires its tag. */
export function expectElement(buf: Uint8Array, offset: number, limit: number, tag: number, what: string): DerElement {
  const element = readElement(buf, offset, limit);
  if (element.tag !== tag) throw new DerError(`${what}: unexpected tag 0x${element.tag.toString(16)}`);
  return element;
}

/** Reads every direct child of a constructed element, in order. */
export function readChildren(buf: Uint8Array, parent: DerElement): DerElement[] {
  const children: DerElement[] = [];
  let offset = parent.contentStart;
  while (offset < parent.end) {
    const child = readElement(buf, offset, parent.end);
    children.push(child);
    offset = child.end;
  }
  return children;
}

/** The `index`th of an element's children, or a DerError naming what is missing. */
export function childAt(children: readonly DerElement[], index: number, what: string): DerElement {
  const child = children[index];
  if (!child) throw new DerError(`${what} is missing`);
  return child;
}

/** The content octets of an element, without copying. */
export function contentOf(buf: Buffer, element: DerElement): Buffer {
  return buf.subarray(element.contentStart, element.end);
}

/** The whole encoding (identifier, length and content) of an element, without copying. */
export function encodingOf(buf: Buffer, element: DerElement): Buffer {
  return buf.subarray(element.start, element.end);
}

/** How deeply {@link checkDerTree} follows constructed elements; a CSR or certificate nests about 7 deep. */
const MAX_DER_DEPTH = 16;

/**
 * Checks the whole tree under `element`, not only its outer layer: every constructed element's children are
 * read with the same strict rules (definite, minimal lengths, each child inside its parent, nothing left
 * over), at most `maxDepth` levels deep. A universal-class constructed element must be a SEQUENCE or a SET:
 * DER encodes strings primitive only (X.690 §10.2). Primitive contents (an OCTET STRING's bytes, a BIT
 * STRING's) are not walked: they are values, whatever they hold.
 *
 * @throws DerError for the first violation, BER's indefinite length anywhere in the tree included.
 */
export function checkDerTree(buf: Uint8Array, element: DerElement, maxDepth: number = MAX_DER_DEPTH): void {
  const walk = (node: DerElement, depth: number) => {
    if (!(node.tag & 0x20)) return;
    if ((node.tag & 0xc0) === 0 && node.tag !== 0x30 && node.tag !== 0x31) throw new DerError('constructed string encoding');
    if (depth >= maxDepth) throw new DerError('nested too deeply');
    for (const child of readChildren(buf, node)) walk(child, depth + 1);
  };
  walk(element, 0);
}
