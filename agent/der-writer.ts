/** Encodes one DER element: identifier octet, minimal definite length, then the concatenated contents. */
export function derElement(tag: number, ...contents: Uint8Array[]): Buffer {
  const body = Buffer.concat(contents);
  const length = body.length;
  let header: Buffer;
  if (length < 0x80) header = Buffer.from([tag, length]);
  else if (length < 0x100) header = Buffer.from([tag, 0x81, length]);
  else if (length < 0x10000) header = Buffer.from([tag, 0x82, length >> 8, length & 0xff]);
  else throw new RangeError('DER element too large');
  return Buffer.concat([header, body]);
}
