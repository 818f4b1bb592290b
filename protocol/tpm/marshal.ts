/**
 * Big-endian TPM 2.0 marshalling (Part 1 §9: every integer is big-endian, a TPM2B is a u16 size then that many
 * bytes), shared by bcd (commands to its TPM, their responses) and the server (the structures an attestation
 * carries). A small writer and a bounds-checked reader; a structure that runs short or carries a size beyond its
 * buffer throws rather than reading past the end.
 */

export class TpmWriter {
  private readonly parts: Buffer[] = [];

  u8(value: number): this {
    this.parts.push(Buffer.of(value & 0xff));
    return this;
  }

  u16(value: number): this {
    const out = Buffer.alloc(2);
    out.writeUInt16BE(value);
    this.parts.push(out);
    return this;
  }

  u32(value: number): this {
    const out = Buffer.alloc(4);
    out.writeUInt32BE(value >>> 0);
    this.parts.push(out);
    return this;
  }

  bytes(value: Uint8Array): this {
    this.parts.push(Buffer.from(value));
    return this;
  }

  /** A TPM2B: u16 size, then the bytes. */
  sized(value: Uint8Array): this {
    if (value.length > 0xffff) throw new RangeError('TPM2B larger than 65535 bytes');
    return this.u16(value.length).bytes(value);
  }

  toBuffer(): Buffer {
    return Buffer.concat(this.parts);
  }
}

/** A TPM structure that does not fit its buffer, or one the reader cannot use. */
export class TpmFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TpmFormatError';
  }
}

/** Why a structure does not fit its buffer: what a reader's `fail` turns into the error it throws. */
type TpmFormatProblem = { kind: 'truncated'; wanted: number; left: number } | { kind: 'trailing'; left: number; what: string };

const describeProblem = (problem: TpmFormatProblem): Error =>
  new TpmFormatError(
    problem.kind === 'truncated'
      ? `TPM structure truncated: ${problem.wanted} bytes wanted, ${problem.left} left`
      : `${problem.left} trailing bytes after ${problem.what}`,
  );

export class TpmReader {
  private offset = 0;

  /** `fail` makes the error a short or overlong structure throws (a TpmFormatError by default). */
  constructor(
    private readonly buffer: Buffer,
    private readonly fail: (problem: TpmFormatProblem) => Error = describeProblem,
  ) {}

  get remaining(): number {
    return this.buffer.length - this.offset;
  }

  private take(length: number): Buffer {
    if (length > this.remaining) throw this.fail({ kind: 'truncated', wanted: length, left: this.remaining });
    const out = this.buffer.subarray(this.offset, this.offset + length);
    this.offset += length;
    return out;
  }

  u8 = (): number => this.take(1).readUInt8();
  u16 = (): number => this.take(2).readUInt16BE();
  u32 = (): number => this.take(4).readUInt32BE();
  u64 = (): bigint => this.take(8).readBigUInt64BE();
  /** Copied, so the result never aliases the buffer read. */
  bytes = (length: number): Buffer => Buffer.from(this.take(length));
  /** A TPM2B's content (without its size). */
  sized = (): Buffer => this.bytes(this.u16());

  /** Throws unless every byte was read: TPM answers are exact. */
  end(what = 'the structure'): void {
    if (this.remaining !== 0) throw this.fail({ kind: 'trailing', left: this.remaining, what });
  }
}

/**
 * A reader for a structure named `what` that a peer sent: a short or overlong one is a TpmFormatError saying
 * `<what> is truncated` or `trailing bytes after <what>`.
 */
export const structureReader = (buffer: Buffer, what: string): TpmReader =>
  new TpmReader(
    buffer,
    (problem) => new TpmFormatError(problem.kind === 'truncated' ? `${what} is truncated` : `trailing bytes after ${what}`),
  );
