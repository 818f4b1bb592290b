import { TpmCheckFailure } from './reasons';

/**
 * A bounds-checked big-endian reader for TPM 2.0 structures (Part 1 §9). Every read past the end, and every
 * byte left over where a structure must end, is `tpm:attestation`: the server parses only what a TPM makes.
 */
export class StructureReader {
  private offset = 0;

  constructor(
    private readonly buffer: Buffer,
    private readonly what: string,
  ) {}

  private take(length: number): Buffer {
    if (this.offset + length > this.buffer.length) throw new TpmCheckFailure('tpm:attestation', `${this.what} is truncated`);
    const out = this.buffer.subarray(this.offset, this.offset + length);
    this.offset += length;
    return out;
  }

  u8 = (): number => this.take(1).readUInt8();
  u16 = (): number => this.take(2).readUInt16BE();
  u32 = (): number => this.take(4).readUInt32BE();
  u64 = (): bigint => this.take(8).readBigUInt64BE();
  /** A TPM2B's content, copied so the result never aliases the request body. */
  sized = (): Buffer => Buffer.from(this.take(this.u16()));

  end(): void {
    if (this.offset !== this.buffer.length) throw new TpmCheckFailure('tpm:attestation', `trailing bytes after ${this.what}`);
  }
}
