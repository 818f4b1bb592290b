/**
 * A minimal DER writer: just the ASN.1 types an X.509 certificate or a PKCS#10 request needs. Every function
 * returns the complete TLV, allocated once, so building a TBSCertificate costs a handful of small copies (the
 * node-certificate hot path and every simulated agent's CSR depend on that).
 */

import { TAG } from './tags';

/** One TLV with `tag` whose content is the concatenation of `parts`. */
export function tlv(tag: number, ...parts: Uint8Array[]): Buffer {
  let length = 0;
  for (const part of parts) length += part.length;
  const header = length < 0x80 ? 2 : length < 0x100 ? 3 : length < 0x10000 ? 4 : 5;
  if (length >= 0x1000000) throw new RangeError('DER value too long');
  const out = Buffer.allocUnsafe(header + length);
  out[0] = tag;
  if (header === 2) out[1] = length;
  else {
    out[1] = 0x80 | (header - 2);
    for (let i = header - 1, rest = length; i >= 2; i--, rest >>>= 8) out[i] = rest & 0xff;
  }
  let offset = header;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

/** SEQUENCE of the already-encoded `parts`. */
export const sequence = (...parts: Uint8Array[]): Buffer => tlv(TAG.sequence, ...parts);
/** SET of the already-encoded `parts` (callers pass one member, so DER's sort order never matters). */
export const set = (...parts: Uint8Array[]): Buffer => tlv(TAG.set, ...parts);
/** OCTET STRING. */
export const octetString = (bytes: Uint8Array): Buffer => tlv(TAG.octetString, bytes);
/** UTF8String. */
export const utf8String = (text: string): Buffer => tlv(TAG.utf8String, Buffer.from(text, 'utf8'));
/** BOOLEAN TRUE (DER: 0xff). FALSE is never written: where it is the default, DER omits it. */
export const booleanTrue = (): Buffer => Buffer.from([TAG.boolean, 1, 0xff]);

/** `[n] EXPLICIT` around `parts` (constructed context tag). */
export const explicit = (n: number, ...parts: Uint8Array[]): Buffer => tlv(0xa0 | n, ...parts);
/** `[n] IMPLICIT` primitive content (context tag, for example a GeneralName's dNSName or a key identifier). */
export const implicit = (n: number, bytes: Uint8Array): Buffer => tlv(0x80 | n, bytes);

/** A BIT STRING holding `bytes` with `unusedBits` padding bits at the end of the last byte. */
export function bitString(bytes: Uint8Array, unusedBits = 0): Buffer {
  return tlv(TAG.bitString, Uint8Array.of(unusedBits), bytes);
}

/**
 * A non-negative INTEGER from its big-endian magnitude: leading zero bytes are dropped and a 0x00 is prepended
 * when the high bit is set, so the encoding is minimal and the value positive.
 */
export function unsignedInteger(magnitude: Uint8Array): Buffer {
  let start = 0;
  while (start < magnitude.length - 1 && magnitude[start] === 0) start++;
  const trimmed = magnitude.subarray(start);
  if (trimmed.length === 0) return Buffer.from([TAG.integer, 1, 0]);
  return trimmed[0]! & 0x80 // non-empty: checked just above
    ? tlv(TAG.integer, Uint8Array.of(0), trimmed)
    : tlv(TAG.integer, trimmed);
}

/** A small non-negative INTEGER (a version or a path length). */
export function smallInteger(value: number): Buffer {
  if (!Number.isInteger(value) || value < 0 || value > 0xffffffff) throw new RangeError('smallInteger out of range');
  const bytes: number[] = [];
  for (let rest = value; bytes.length === 0 || rest > 0; rest = Math.floor(rest / 256)) bytes.unshift(rest % 256);
  return unsignedInteger(Uint8Array.from(bytes));
}

/** An OBJECT IDENTIFIER from its dotted form (`2.5.29.19`). */
export function oid(dotted: string): Buffer {
  const arcs = dotted.split('.').map((arc) => {
    if (!/^\d+$/.test(arc)) throw new RangeError(`bad OID arc in ${dotted}`);
    return BigInt(arc);
  });
  const [first, second, ...rest] = arcs;
  if (first === undefined || second === undefined || first > 2n) throw new RangeError(`bad OID ${dotted}`);
  const bytes: number[] = [];
  for (const arc of [first * 40n + second, ...rest]) {
    const base128: number[] = [Number(arc & 0x7fn)];
    for (let rest = arc >> 7n; rest > 0n; rest >>= 7n) base128.unshift(Number(rest & 0x7fn) | 0x80);
    bytes.push(...base128);
  }
  return tlv(TAG.oid, Uint8Array.from(bytes));
}

const pad2 = (n: number) => (n < 10 ? `0${n}` : `${n}`);

/**
 * A certificate time per RFC 5280 §4.1.2.5: UTCTime (`YYMMDDHHMMSSZ`) for 1950 through 2049, GeneralizedTime
 * (`YYYYMMDDHHMMSSZ`) otherwise. Sub-second precision is dropped (callers truncate first, so the value they
 * return is the value encoded).
 */
export function time(date: Date): Buffer {
  const year = date.getUTCFullYear();
  if (!Number.isFinite(year) || year < 0 || year > 9999) throw new RangeError('time out of range');
  const rest =
    pad2(date.getUTCMonth() + 1) +
    pad2(date.getUTCDate()) +
    pad2(date.getUTCHours()) +
    pad2(date.getUTCMinutes()) +
    pad2(date.getUTCSeconds()) +
    'Z';
  if (year >= 1950 && year < 2050) return tlv(TAG.utcTime, Buffer.from(pad2(year % 100) + rest, 'latin1'));
  return tlv(TAG.generalizedTime, Buffer.from(String(year).padStart(4, '0') + rest, 'latin1'));
}
