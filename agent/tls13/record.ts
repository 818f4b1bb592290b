import { createCipheriv, createDecipheriv } from 'node:crypto';
import { trafficKeys } from './key-schedule';
import { ALERT, TlsAlertError } from './alerts';

/** ContentType (RFC 8446 §5.1). */
export const CONTENT = { changeCipherSpec: 20, alert: 21, handshake: 22, applicationData: 23 } as const;

/** The largest plaintext of one record (2^14), and the largest ciphertext (2^14 + 256, §5.2). */
export const MAX_PLAINTEXT = 16_384;
const MAX_CIPHERTEXT = MAX_PLAINTEXT + 256;
const TAG_LENGTH = 16;

export interface TlsRecord {
  type: number;
  fragment: Buffer;
}

/** Splits the bytes from the socket into records; refuses an oversized or malformed one. */
export class RecordSplitter {
  private pending: Buffer = Buffer.alloc(0);

  push(bytes: Buffer): TlsRecord[] {
    this.pending = this.pending.length ? Buffer.concat([this.pending, bytes]) : bytes;
    const records: TlsRecord[] = [];
    while (this.pending.length >= 5) {
      const type = this.pending[0]!;
      const length = this.pending.readUInt16BE(3);
      if (length > MAX_CIPHERTEXT) throw new TlsAlertError(ALERT.recordOverflow, `a record of ${length} bytes`);
      // legacy_record_version is 0x0301 or 0x0303; the top byte is always 3.
      if (this.pending[1] !== 3) throw new TlsAlertError(ALERT.decodeError, 'not a TLS record');
      if (this.pending.length < 5 + length) break;
      records.push({ type, fragment: this.pending.subarray(5, 5 + length) });
      this.pending = this.pending.subarray(5 + length);
    }
    return records;
  }
}

/** A plaintext record as sent before keys exist (the ClientHello, a change_cipher_spec, an early alert). */
export function plainRecord(type: number, fragment: Buffer): Buffer {
  const header = Buffer.from([type, 3, 3, fragment.length >> 8, fragment.length & 0xff]);
  return Buffer.concat([header, fragment]);
}

/** One direction's AEAD_AES_128_GCM state: key, IV and the record sequence number (§5.3). */
export class RecordCipher {
  private readonly key: Buffer;
  private readonly iv: Buffer;
  private sequence = 0n;

  constructor(trafficSecret: Buffer) {
    ({ key: this.key, iv: this.iv } = trafficKeys(trafficSecret));
  }

  private nonce(): Buffer {
    if (this.sequence >= 2n ** 64n - 1n) throw new TlsAlertError(ALERT.internalError, 'the record sequence number would wrap');
    const nonce = Buffer.from(this.iv);
    const seq = Buffer.alloc(8);
    seq.writeBigUInt64BE(this.sequence++);
    for (let i = 0; i < 8; i++) nonce[4 + i] = nonce[4 + i]! ^ seq[i]!;
    return nonce;
  }

  /** A TLSCiphertext record carrying `content` of `type` (no padding). */
  seal(type: number, content: Buffer): Buffer {
    if (content.length > MAX_PLAINTEXT) throw new Error('a record fragment over 2^14 bytes');
    const length = content.length + 1 + TAG_LENGTH;
    const header = Buffer.from([CONTENT.applicationData, 3, 3, length >> 8, length & 0xff]);
    const cipher = createCipheriv('aes-128-gcm', this.key, this.nonce());
    cipher.setAAD(header);
    const body = Buffer.concat([cipher.update(content), cipher.update(Buffer.from([type])), cipher.final(), cipher.getAuthTag()]);
    return Buffer.concat([header, body]);
  }

  /** The inner content type and content of a protected record; a record that fails to authenticate is fatal. */
  open(record: TlsRecord): TlsRecord {
    if (record.type !== CONTENT.applicationData) throw new TlsAlertError(ALERT.unexpectedMessage, 'a plaintext record after keys were set');
    if (record.fragment.length < TAG_LENGTH + 1) throw new TlsAlertError(ALERT.badRecordMac, 'a protected record too short');
    const header = Buffer.from([record.type, 3, 3, record.fragment.length >> 8, record.fragment.length & 0xff]);
    const decipher = createDecipheriv('aes-128-gcm', this.key, this.nonce());
    decipher.setAAD(header);
    decipher.setAuthTag(record.fragment.subarray(record.fragment.length - TAG_LENGTH));
    let inner: Buffer;
    try {
      inner = Buffer.concat([decipher.update(record.fragment.subarray(0, record.fragment.length - TAG_LENGTH)), decipher.final()]);
    } catch {
      throw new TlsAlertError(ALERT.badRecordMac, 'a record did not authenticate');
    }
    // TLSInnerPlaintext: content, the real type, then zero padding (§5.4).
    let end = inner.length - 1;
    while (end >= 0 && inner[end] === 0) end--;
    if (end < 0) throw new TlsAlertError(ALERT.unexpectedMessage, 'a protected record without a content type');
    if (end > MAX_PLAINTEXT) throw new TlsAlertError(ALERT.recordOverflow, 'a protected record over 2^14 bytes of plaintext');
    return { type: inner[end]!, fragment: inner.subarray(0, end) };
  }
}
