import { ALERT, TlsAlertError } from './alerts';

/** Reads TLS presentation-language fields; any overrun is a decode_error. */
export class WireReader {
  private offset = 0;

  constructor(
    private readonly data: Buffer,
    private readonly what: string,
  ) {}

  private take(length: number): Buffer {
    if (this.offset + length > this.data.length) throw new TlsAlertError(ALERT.decodeError, `${this.what} is truncated`);
    const out = this.data.subarray(this.offset, this.offset + length);
    this.offset += length;
    return out;
  }

  u8 = () => this.take(1)[0]!;
  u16 = () => this.take(2).readUInt16BE(0);
  u24 = () => this.take(3).readUIntBE(0, 3);
  bytes = (length: number) => this.take(length);
  vector8 = () => this.take(this.u8());
  vector16 = () => this.take(this.u16());
  vector24 = () => this.take(this.u24());
  get remaining() {
    return this.data.length - this.offset;
  }
  end() {
    if (this.remaining !== 0) throw new TlsAlertError(ALERT.decodeError, `${this.what} has trailing bytes`);
  }
}

const lengthPrefix = (bytes: number, length: number) => {
  const out = Buffer.alloc(bytes);
  out.writeUIntBE(length, 0, bytes);
  return out;
};

export const vector8 = (...parts: Buffer[]) => {
  const body = Buffer.concat(parts);
  return Buffer.concat([lengthPrefix(1, body.length), body]);
};
export const vector16 = (...parts: Buffer[]) => {
  const body = Buffer.concat(parts);
  return Buffer.concat([lengthPrefix(2, body.length), body]);
};
export const vector24 = (...parts: Buffer[]) => {
  const body = Buffer.concat(parts);
  return Buffer.concat([lengthPrefix(3, body.length), body]);
};
export const u16 = (value: number) => lengthPrefix(2, value);

/** An extension: type and its opaque data. */
export const extension = (type: number, ...data: Buffer[]) => Buffer.concat([u16(type), vector16(...data)]);

/** Reads an extensions block into a map, refusing a type that appears twice (§4.2). */
export function readExtensions(data: Buffer, what: string): Map<number, Buffer> {
  const reader = new WireReader(data, what);
  const out = new Map<number, Buffer>();
  while (reader.remaining) {
    const type = reader.u16();
    const body = reader.vector16();
    if (out.has(type)) throw new TlsAlertError(ALERT.illegalParameter, `${what} repeats extension ${type}`);
    out.set(type, body);
  }
  return out;
}

/** A Handshake message: type, then its body with a 24-bit length (§4). */
export const handshakeMessage = (type: number, body: Buffer) => Buffer.concat([Buffer.from([type]), vector24(body)]);
