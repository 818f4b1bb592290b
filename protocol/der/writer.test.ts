import { describe, expect, it } from 'vitest';
import { readRoot } from './reader';
import { bitString, oid, sequence, set, smallInteger, time, tlv, unsignedInteger, utf8String } from './writer';

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

describe('der writer', () => {
  it('writes short and long lengths, and reads them back', () => {
    for (const length of [0, 1, 127, 128, 255, 256, 65_535, 65_536]) {
      const encoded = tlv(0x04, Buffer.alloc(length, 7));
      const node = readRoot(encoded);
      expect(node.end - node.contentStart).toBe(length);
    }
    expect(hex(tlv(0x04, Buffer.alloc(128)).subarray(0, 3))).toBe('048180');
    expect(hex(tlv(0x04, Buffer.alloc(256)).subarray(0, 4))).toBe('04820100');
  });

  it('concatenates the parts of constructed types', () => {
    expect(hex(sequence())).toBe('3000');
    expect(hex(set(sequence(oid('2.5.4.3'), utf8String('ab'))))).toBe('310b300906035504030c026162');
    expect(hex(bitString(Buffer.from([0xab])))).toBe('030200ab');
  });

  it('encodes integers minimally and positive', () => {
    expect(hex(unsignedInteger(Buffer.from([0x00, 0x00, 0x7f])))).toBe('02017f');
    expect(hex(unsignedInteger(Buffer.from([0x80])))).toBe('02020080');
    expect(hex(unsignedInteger(Buffer.from([0x00])))).toBe('020100');
    expect(hex(smallInteger(2))).toBe('020102');
    expect(hex(smallInteger(256))).toBe('02020100');
  });

  it('encodes OIDs', () => {
    expect(hex(oid('1.2.840.10045.4.3.2'))).toBe('06082a8648ce3d040302');
    expect(hex(oid('2.5.29.19'))).toBe('0603551d13');
    expect(hex(oid('1.3.6.1.5.5.7.3.2'))).toBe('06082b06010505070302');
    expect(() => oid('1')).toThrow();
  });

  it('uses UTCTime before 2050 and GeneralizedTime from 2050', () => {
    expect(time(new Date('2026-03-01T12:34:56.789Z')).toString('latin1', 2)).toBe('260301123456Z');
    expect(time(new Date('1950-01-01T00:00:00Z'))[0]).toBe(0x17);
    expect(time(new Date('2050-01-01T00:00:00Z')).toString('latin1', 2)).toBe('20500101000000Z');
    expect(time(new Date('1949-12-31T23:59:59Z'))[0]).toBe(0x18);
  });
});
